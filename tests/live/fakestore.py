"""Storage of the test API server: objects, resourceVersions, watch history, selectors.

Semantics follow kube-apiserver where kubesched and kubectl can see them: one global
``resourceVersion`` counter, optimistic concurrency on update (409 when the given
resourceVersion is stale), 409 AlreadyExists on create, list items without ``kind``, watch
history that can be compacted (a watch or list from a compacted resourceVersion is 410 Gone),
the Pod ``binding`` subresource refusing a Pod that already has a node (409), and merge /
strategic-merge patches (a ``metadata.resourceVersion`` in the patch is a precondition; a
``null`` deletes a key, e.g. an annotation).
Not modelled: admission, defaulting beyond metadata, field-selector transitions on watches
(a selector is applied to the object in each event).
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import json
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

Obj = dict[str, Any]


@dataclass(frozen=True)
class Resource:
    """One REST resource the server serves."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def ident(self) -> str:
        return f"{self.group}/{self.plural}"

    @property
    def singular(self) -> str:
        return self.kind.lower()


RESOURCES = (
    Resource("", "v1", "pods", "Pod", True, ("po",)),
    Resource("", "v1", "nodes", "Node", False, ("no",)),
    Resource("", "v1", "namespaces", "Namespace", False, ("ns",)),
    Resource("", "v1", "services", "Service", True, ("svc",)),
    Resource("", "v1", "replicationcontrollers", "ReplicationController", True, ("rc",)),
    Resource("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",)),
    Resource("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",)),
    Resource("", "v1", "events", "Event", True, ("ev",)),
    Resource("events.k8s.io", "v1", "events", "Event", True, ("ev",)),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True),
    Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",)),
    Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",)),
    Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", True, ("pg",)),
    Resource("scheduling.x-k8s.io", "v1alpha1", "elasticquotas", "ElasticQuota", True, ("eq",)),
    Resource("", "v1", "persistentvolumes", "PersistentVolume", False, ("pv",)),
    Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",)),
    Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ("sc",)),
    Resource("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    Resource("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    Resource("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    Resource("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False),
)


class ApiStatusError(Exception):
    """An error the server answers with a ``Status`` object."""

    REASONS: ClassVar[dict[int, str]] = {
        400: "BadRequest",
        404: "NotFound",
        405: "MethodNotAllowed",
        409: "Conflict",
        410: "Expired",
        422: "Invalid",
        429: "TooManyRequests",
        500: "InternalError",
    }

    def __init__(self, code: int, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or self.REASONS.get(code, "Unknown")

    def status(self) -> Obj:
        return status_object(self.code, self.message, self.reason)


def status_object(code: int, message: str = "", reason: str = "") -> Obj:
    """A ``meta/v1 Status``."""
    ok = code < 400
    out: Obj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if ok else "Failure",
        "code": code,
    }
    if message:
        out["message"] = message
    if reason:
        out["reason"] = reason
    return out


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------- selectors
def _field(obj: Obj, path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    if cur is None and path == "metadata.namespace":
        return ""
    return "" if cur is None else str(cur)


def _terms(selector: str) -> list[tuple[str, str, str]]:
    out = []
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            out.append((k.strip(), "!=", v.strip()))
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            out.append((k.strip(), "=", v.strip()))
        elif term.startswith("!"):
            out.append((term[1:], "!", ""))
        else:
            out.append((term, "exists", ""))
    return out


def matches(obj: Obj, labels: str, fields: str) -> bool:
    """Equality-based label and field selectors (``a=b,c!=d,e,!f``)."""
    have = (obj.get("metadata") or {}).get("labels") or {}
    for k, op, v in _terms(labels):
        if op == "=" and have.get(k) != v:
            return False
        if op == "!=" and have.get(k) == v:
            return False
        if op == "exists" and k not in have:
            return False
        if op == "!" and k in have:
            return False
    for k, op, v in _terms(fields):
        value = _field(obj, k)
        if (op == "=" and value != v) or (op == "!=" and value == v):
            return False
    return True


# --------------------------------------------------------------------------- patches
MERGE_KEYS = {"conditions": "type", "containers": "name", "initContainers": "name"}


def merge_patch(target: Any, patch: Any, strategic: bool, key: str = "") -> Any:
    """JSON merge patch (RFC 7386); ``strategic`` merges known lists by their merge key."""
    if isinstance(patch, dict):  # RFC 7386: a non-object target becomes {} first
        out = dict(target) if isinstance(target, dict) else {}
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = merge_patch(out.get(k), v, strategic, k)
        return out
    if strategic and isinstance(patch, list) and isinstance(target, list) and key in MERGE_KEYS:
        mk = MERGE_KEYS[key]
        merged = [dict(x) for x in target]
        for item in patch:
            for i, old in enumerate(merged):
                if isinstance(item, dict) and old.get(mk) == item.get(mk):
                    merged[i] = merge_patch(old, item, strategic)
                    break
            else:
                merged.append(item)
        return merged
    return copy.deepcopy(patch)


# --------------------------------------------------------------------------- the store
@dataclass
class Stats:
    """What the server saw (for assertions)."""

    binds: list[tuple[float, str, str, str]] = field(default_factory=list)
    """(monotonic time, pod key, node, User-Agent) of each accepted binding."""
    bind_conflicts: int = 0
    binds_per_pod: Counter[str] = field(default_factory=Counter)
    requests: Counter[str] = field(default_factory=Counter)
    """``METHOD plural[/subresource]`` counts."""
    calls: Counter[tuple[str, str, str, str, str]] = field(default_factory=Counter)
    """``(User-Agent, RBAC verb, API group, plural[/subresource], name)`` counts: who
    needs which permission."""


class Store:
    """Objects by resource, a global resourceVersion and per-resource watch history."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.rv = 1
        self.objects: dict[str, dict[tuple[str, str], Obj]] = {r.ident: {} for r in RESOURCES}
        self.history: dict[str, list[tuple[int, str, Obj]]] = {r.ident: [] for r in RESOURCES}
        self.floor: dict[str, int] = {r.ident: 0 for r in RESOURCES}
        """Events with resourceVersion <= floor were compacted away."""
        self.stats = Stats()
        self.stopped = False
        self.drops = 0
        """Bumped by :meth:`drop_watches`; open watches end when it changes."""
        self._pages: dict[tuple[str, str, str, str], tuple[tuple[int, int], list[Any]]] = {}
        """A list's sorted, filtered keys, until its resource changes (:meth:`page_json`)."""
        self._wire: dict[tuple[str, tuple[str, str]], tuple[str, bytes]] = {}
        """Each object's list-item JSON and the resourceVersion it was encoded at
        (:meth:`page_json`)."""
        for ns in ("default", "kube-system", "kube-public"):
            self.create(
                by_plural("namespaces"), "", {"metadata": {"name": ns}, "spec": {}, "status": {}}
            )

    # ------------------------------------------------------------------ helpers
    def _stamp(self, res: Resource, obj: Obj) -> Obj:
        self.rv += 1
        obj["kind"] = res.kind
        obj["apiVersion"] = res.api_version
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return obj

    def _record(self, res: Resource, kind: str, obj: Obj) -> None:
        self.history[res.ident].append((self.rv, kind, copy.deepcopy(obj)))
        self.cond.notify_all()

    def _key(self, res: Resource, ns: str, name: str) -> tuple[str, str]:
        return (ns if res.namespaced else "", name)

    def get(self, res: Resource, ns: str, name: str) -> Obj:
        with self.cond:
            obj = self.objects[res.ident].get(self._key(res, ns, name))
            if obj is None:
                raise ApiStatusError(404, f'{res.plural} "{name}" not found', "NotFound")
            return copy.deepcopy(obj)

    # ------------------------------------------------------------------ writes
    def create(self, res: Resource, ns: str, body: Obj) -> Obj:
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        name = meta.get("name")
        if not name:
            raise ApiStatusError(422, f"{res.kind} is invalid: metadata.name: Required value")
        with self.cond:
            if res.namespaced:
                ns = ns or meta.get("namespace") or "default"
                if ("", ns) not in self.objects["/namespaces"]:
                    raise ApiStatusError(404, f'namespaces "{ns}" not found')
                meta["namespace"] = ns
            key = self._key(res, ns, name)
            if key in self.objects[res.ident]:
                raise ApiStatusError(409, f'{res.plural} "{name}" already exists', "AlreadyExists")
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            meta.pop("resourceVersion", None)
            if res.kind == "Pod":
                obj.setdefault("spec", {}).setdefault("schedulerName", "default-scheduler")
                obj.setdefault("status", {}).setdefault("phase", "Pending")
            self._stamp(res, obj)
            self.objects[res.ident][key] = obj
            self._record(res, "ADDED", obj)
            return copy.deepcopy(obj)

    def update(self, res: Resource, ns: str, name: str, body: Obj, status_only: bool) -> Obj:
        with self.cond:
            key = self._key(res, ns, name)
            old = self.objects[res.ident].get(key)
            if old is None:
                raise ApiStatusError(404, f'{res.plural} "{name}" not found', "NotFound")
            given = (body.get("metadata") or {}).get("resourceVersion")
            if given and given != old["metadata"]["resourceVersion"]:
                raise ApiStatusError(
                    409,
                    f'Operation cannot be fulfilled on {res.plural} "{name}": the object has '
                    "been modified; please apply your changes to the latest version and try "
                    "again",
                )
            new = copy.deepcopy(old)
            if status_only:
                new["status"] = copy.deepcopy(body.get("status") or {})
            else:
                status = new.get("status")
                new = copy.deepcopy(body)
                new.setdefault("metadata", {})
                for k in ("uid", "creationTimestamp", "namespace", "name"):
                    if k in old["metadata"]:
                        new["metadata"][k] = old["metadata"][k]
                if res.kind == "Pod" and status is not None:
                    new["status"] = status
            self._stamp(res, new)
            self.objects[res.ident][key] = new
            self._record(res, "MODIFIED", new)
            return copy.deepcopy(new)

    def patch(
        self, res: Resource, ns: str, name: str, patch: Obj, strategic: bool, status_only: bool
    ) -> Obj:
        """Merge ``patch`` into the object (only its ``status`` for the status subresource)."""
        with self.cond:
            current = self.get(res, ns, name)
            merged = merge_patch(current, patch, strategic)
            # A resourceVersion in the patch is a precondition (409 when stale), as upstream.
            given = (patch.get("metadata") or {}).get("resourceVersion")
            merged["metadata"]["resourceVersion"] = given or current["metadata"]["resourceVersion"]
            return self.update(res, ns, name, merged, status_only=status_only)

    def delete(self, res: Resource, ns: str, name: str) -> Obj:
        with self.cond:
            key = self._key(res, ns, name)
            obj = self.objects[res.ident].pop(key, None)
            self._wire.pop((res.ident, key), None)
            if obj is None:
                raise ApiStatusError(404, f'{res.plural} "{name}" not found', "NotFound")
            self._stamp(res, obj)
            self._record(res, "DELETED", obj)
            return copy.deepcopy(obj)

    def bind(self, ns: str, name: str, binding: Obj, agent: str, now: float) -> None:
        """``POST pods/NAME/binding``: 404 unknown Pod, 409 already bound or UID mismatch."""
        pods = by_plural("pods")
        with self.cond:
            pod = self.objects["/pods"].get((ns, name))
            if pod is None:
                raise ApiStatusError(404, f'pods "{name}" not found', "NotFound")
            uid = (binding.get("metadata") or {}).get("uid")
            if uid and uid != pod["metadata"]["uid"]:
                self.stats.bind_conflicts += 1
                raise ApiStatusError(409, f"Precondition failed: UID in precondition: {uid}")
            node = (binding.get("target") or {}).get("name", "")
            if not node:
                raise ApiStatusError(422, "Binding is invalid: target.name: Required value")
            current = pod["spec"].get("nodeName")
            if current:
                self.stats.bind_conflicts += 1
                raise ApiStatusError(
                    409,
                    f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is '
                    f'already assigned to node "{current}"',
                )
            new = copy.deepcopy(pod)
            new["spec"]["nodeName"] = node
            conds = [c for c in new["status"].get("conditions", []) if c["type"] != "PodScheduled"]
            conds.append(  # as kube-apiserver's binding: the transition time is the bind's
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": now_rfc3339()}
            )
            new["status"]["conditions"] = conds
            self._stamp(pods, new)
            self.objects["/pods"][(ns, name)] = new
            self._record(pods, "MODIFIED", new)
            self.stats.binds.append((now, f"{ns}/{name}", node, agent))
            self.stats.binds_per_pod[f"{ns}/{name}"] += 1

    # ------------------------------------------------------------------ reads
    def list(self, res: Resource, ns: str, labels: str, fields: str) -> tuple[list[Obj], int]:
        with self.cond:
            items = [
                copy.deepcopy(o)
                for (ons, _), o in sorted(self.objects[res.ident].items())
                if (not ns or ons == ns) and matches(o, labels, fields)
            ]
            return items, self.rv

    def _page_keys(
        self, res: Resource, ns: str, labels: str, fields: str, start: int, limit: int
    ) -> tuple[list[tuple[str, str]], int]:
        """Keys ``[start, start + limit)`` of the sorted, filtered list (to the end when
        ``limit`` is 0) and the number of keys in all; the caller holds the lock.  The sorted
        keys are kept until the resource changes: a list of 200,000 Pods in pages of 500
        costs one sort, not 400."""
        cache_key = (res.ident, ns, labels, fields)
        mark = (len(self.history[res.ident]), self.floor[res.ident])
        objs = self.objects[res.ident]
        hit = self._pages.get(cache_key)
        if hit is None or hit[0] != mark:
            keys = sorted(objs)
            if ns or labels or fields:
                keys = [
                    k for k in keys if (not ns or k[0] == ns) and matches(objs[k], labels, fields)
                ]
            hit = self._pages[cache_key] = (mark, keys)
        keys = hit[1]
        return (keys[start : start + limit] if limit else keys[start:]), len(keys)

    def page_json(
        self, res: Resource, ns: str, labels: str, fields: str, start: int, limit: int
    ) -> tuple[bytes, int, int]:
        """Items ``[start, start + limit)`` of :meth:`list` (to the end when ``limit`` is 0)
        as a JSON array, without ``kind`` and ``apiVersion`` (as kube-apiserver's list
        items); the resourceVersion; the number of items in all.  Each object is encoded
        once per resourceVersion, as kube-apiserver's watch cache keeps its objects'
        serializations: a 200,000-Pod list costs the server one encoding of each Pod, then
        joins of bytes."""
        with self.cond:
            chosen, total = self._page_keys(res, ns, labels, fields, start, limit)
            objs = self.objects[res.ident]
            parts = []
            for k in chosen:
                obj = objs[k]
                rv = obj["metadata"]["resourceVersion"]
                hit = self._wire.get((res.ident, k))
                if hit is None or hit[0] != rv:
                    item = {n: v for n, v in obj.items() if n not in ("kind", "apiVersion")}
                    hit = self._wire[(res.ident, k)] = (
                        rv,
                        json.dumps(item, separators=(",", ":")).encode(),
                    )
                parts.append(hit[1])
            return b"[" + b",".join(parts) + b"]", self.rv, total

    def events_since(self, res: Resource, rv: int) -> list[tuple[int, str, Obj]]:
        """Events after ``rv``; 410 Gone when history from there was compacted."""
        if rv < self.floor[res.ident]:
            raise ApiStatusError(
                410, f"too old resource version: {rv} ({self.floor[res.ident] + 1})", "Expired"
            )
        return [e for e in self.history[res.ident] if e[0] > rv]

    # ------------------------------------------------------------------ test controls
    def compact(self) -> None:
        """Forget all watch history (etcd compaction): older resourceVersions become 410."""
        with self.cond:
            for plural in self.history:
                self.history[plural] = []
                self.floor[plural] = self.rv

    def drop_watches(self) -> None:
        """End every open watch connection abruptly."""
        with self.cond:
            self.drops += 1
            self.cond.notify_all()

    @contextlib.contextmanager
    def outage(self) -> Iterator[None]:
        """An outage that loses watch history: open watches are cut, the block's changes
        are made, and history is compacted -- all under the store's lock, so no watch (an
        open one, or one resumed at once after the cut) can stream the block's changes as
        events: every watch gets 410 Gone and its informer must relist to see them.

        Calling :meth:`drop_watches`, the changes and :meth:`compact` one after another
        leaves windows in which a watch resumed after the cut (or opened just before it
        and never cut) streams the changes before the compaction: the informer then
        rightly sees them without a relist, and a test waiting for one times out (issue 31:
        a loaded machine)."""
        with self.cond:  # re-entrant: the block's own writes take it again
            self.drops += 1
            yield
            self.compact()
            self.cond.notify_all()

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()


def by_plural(plural: str, group: str | None = None) -> Resource:
    for r in RESOURCES:
        if r.plural == plural and (group is None or r.group == group):
            return r
    raise KeyError(plural)
