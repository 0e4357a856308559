"""The scheduler cache: the node table plus a registry of the Pods placed on it.

Upstream keeps a cache of NodeInfos and hands each cycle a snapshot.  kubesched runs each
scheduling cycle on one thread, so the columns themselves are the snapshot: a cycle reads
them, and only ``assume`` / ``forget`` / informer events write them, between cycles.

Lifecycle of a placement (upstream ``cache.go``):

- ``assume_pod`` when the scheduling cycle picks a node (resources counted at once);
- ``finish_binding`` when the binding cycle is done (still assumed until confirmed);
- ``add_pod`` for a Pod the API server reports bound: confirms an assumed Pod (moving it if
  the API says another node), or adds a Pod someone else bound;
- ``forget_pod`` on any failure after assume: the exact inverse of ``assume_pod``;
- ``remove_pod`` when a bound Pod is deleted.

Each node's Pods are kept in the order upstream's ``NodeInfo.Pods`` has them
(:attr:`ClusterState.pods_on_node`), because preemption takes equally important victims in
that order (``kernels/gosort``): a Pod added is appended, a Pod removed is replaced by the
last one (``removeFromSlice``), and a Pod updated — an assumed Pod confirmed included — is
removed and appended again (``cache.updatePod``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from kubesched.api import objects as api
from kubesched.api.pods import has_pod_level_resources, skip_pod_level_resources
from kubesched.state.journal import ChangeJournal
from kubesched.state.nodes import IntArray, NodeTable
from kubesched.state.sparse import SparseRequest

STORAGE_KINDS = frozenset(
    (
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "CSIStorageCapacity",
        "VolumeAttachment",
    )
)
"""The kinds :class:`~kubesched.state.storage.Storage` reads (told of each change)."""


class ObjectChanges(Protocol):
    """What hears of every change of a storage object (:data:`STORAGE_KINDS`):
    :class:`kubesched.state.storage.Storage`."""

    def changed(self, kind: str, key: str) -> None:
        """The object ``(kind, key)`` of :attr:`ClusterState.objects` changed."""


STRUCTURAL = -1
"""Journal mark of a change that is not a Pod on a node (a node, a Namespace, a Service...)."""
JOURNAL_LENGTH = 8192
"""Changes the journal keeps at most (then the older half is dropped)."""
RESIZE_TOTALS_SINCE = "1.37"
"""The first release counting a resizing Pod as the largest of its totals
(:meth:`ClusterState.count_resize_totals`)."""
POD_LEVEL_RESIZE_GATE = "InPlacePodLevelResourcesVerticalScaling"
"""The gate under which a Pod's own ``status.resources`` count (alpha v1.35, beta on from
v1.36; :meth:`ClusterState.count_resize_totals`)."""


class CacheError(Exception):
    """A cache operation that contradicts the cache's state (a bug upstream would log)."""


@dataclass(slots=True)
class PodRecord:
    """A Pod accounted on a node row."""

    pod: api.Pod
    node: str
    row: int
    request: IntArray
    nonzero: tuple[int, int]
    assumed: bool = False
    binding_finished: bool = False
    sparse: SparseRequest = ()
    """Requests of resources the node table holds sparse (``NodeTable.split_request``)."""


class Observer(Protocol):
    """Something that keeps derived state (counts per node or domain) current incrementally.

    Plugins that need matching-Pod counts (topology spread, inter-pod affinity) register one
    with :meth:`ClusterState.observe`; it hears every accounted Pod and every node change.
    """

    def pod_added(self, rec: PodRecord) -> None:
        """``rec`` is now accounted on ``rec.row`` (assumed or bound)."""

    def pod_removed(self, rec: PodRecord) -> None:
        """``rec`` is no longer accounted (forgotten, deleted, or its node went away)."""

    def node_changed(self, row: int, old: api.Node | None, new: api.Node | None) -> None:
        """Node at ``row`` was added (old None), updated, or removed (new None)."""


@runtime_checkable
class BulkObserver(Protocol):
    """An :class:`Observer` with a bulk path (InterPodAffinity's index): ``pods_added(recs)``
    leaves the same state as ``pod_added`` for each of ``recs`` in order."""

    def pods_added(self, recs: list[PodRecord]) -> None:
        """Each of ``recs`` is now accounted, in order."""


def tell_added(observer: Observer, recs: list[PodRecord]) -> None:
    """``observer.pod_added`` for each of ``recs`` in order, or its ``pods_added(recs)`` when
    it is a :class:`BulkObserver`: a snapshot's or a LIST's Pods in one call."""
    if isinstance(observer, BulkObserver):
        observer.pods_added(recs)
    else:
        for rec in recs:
            observer.pod_added(rec)


class NamespaceLabels(dict[str, Mapping[str, str]]):
    """Namespace name -> its labels, counting its changes in ``generation``, so what is
    derived from every namespace's labels (a ``namespaceSelector`` resolved into namespace
    names) can be kept until one changes.  The labels are typed read-only (``Mapping``), so
    they are replaced through this mapping, never edited in place behind its counter."""

    generation: int = 0

    def __setitem__(self, key: str, value: Mapping[str, str]) -> None:
        super().__setitem__(key, value)
        self.generation += 1

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.generation += 1

    def update(self, *args: Any, **kwargs: Mapping[str, str]) -> None:
        super().update(*args, **kwargs)
        self.generation += 1

    def pop(self, *args: Any) -> Any:
        self.generation += 1
        return super().pop(*args)

    def popitem(self) -> tuple[str, Mapping[str, str]]:
        self.generation += 1
        return super().popitem()

    def setdefault(self, key: str, default: Any = None) -> Any:
        self.generation += 1
        return super().setdefault(key, default)

    def clear(self) -> None:
        super().clear()
        self.generation += 1


@dataclass(slots=True)
class Namespaces:
    """Namespace labels (for ``namespaceSelector``); a namespace never declared has none."""

    labels: NamespaceLabels = field(default_factory=NamespaceLabels)


class ClusterState:
    """Nodes as columns and the Pods placed on them.  ``version`` bumps on every change."""

    def __init__(self, capacity: int = 64) -> None:
        self.nodes = NodeTable(capacity)
        self.pods: dict[str, PodRecord] = {}
        self.assumed_count = 0
        """How many of :attr:`pods` are assumed (not yet confirmed), kept as they are
        assumed, forgotten, confirmed or removed (the ``assumed_pods`` gauge reads it once a
        second without a walk of every Pod)."""
        self.pods_on_node: dict[str, list[str]] = {}
        """Node name -> keys of the Pods accounted on it, in upstream's ``NodeInfo.Pods``
        order (the module docstring)."""
        self._slot: dict[str, int] = {}
        """Pod key -> where it was last put in its node's :attr:`pods_on_node` list: a hint
        that spares :func:`_swap_remove` a scan of a node holding thousands of Pods (checked
        before use, so a list replaced from outside only costs the scan)."""
        self.reorders: dict[int, int] = {}
        """Node row -> times a confirmed Pod moved in its ``NodeInfo`` order without the
        row's generation changing (kept caches of its Pods' order read it)."""
        self.reorder_events = 0
        """Moves counted in :attr:`reorders` so far (a kept copy of it is current while
        this is unchanged)."""
        self.ghosts: dict[str, dict[str, api.Pod]] = {}
        """Node name -> bound Pods whose Node the cache does not hold (not delivered yet, or
        deleted while its Pods still exist): upstream's cache keeps such Pods on a node-less
        entry, and so does this one, accounting them the moment the Node (re)appears, so a
        Node deleted and created again, or a Pod bound before its Node arrives, never lets
        the scheduler overcommit."""
        self._ghost_node: dict[str, str] = {}
        self.namespaces = Namespaces()
        self.services: dict[str, tuple[str, dict[str, str]]] = {}
        """Service ``ns/name`` to ``(namespace, spec.selector)`` (system default spreading)."""
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        """Other objects by ``(kind, ns/name)``: PodDisruptionBudgets, PodGroups, quotas, ..."""
        self.controlled: dict[str, dict[tuple[str, str], None]] = {}
        """Controller owner UID -> the keys of :attr:`objects` naming it as their controller
        (an owner reference with ``controller: true``), so the objects a controller owns
        are found without a scan of every object (DRAExtendedResource's claim for a Pod)."""
        self.observers: list[Observer] = []
        self.storage: ObjectChanges | None = None
        """The storage objects' lister and claim use (:func:`kubesched.state.storage.
        storage_of` makes it on first use)."""
        self._journal: ChangeJournal[int] = ChangeJournal(JOURNAL_LENGTH)
        """The row each change touched, in order (:data:`STRUCTURAL` for a node or another
        object)."""
        self.pod_level_resources = True
        """Whether a Pod's pod-level ``spec.resources`` count (the PodLevelResources gate; off,
        each Pod placed counts its containers' requests only:
        :meth:`skip_pod_level_resources`)."""
        self.resize_totals = False
        """Whether a resizing Pod counts the largest of its totals (v1.37 and later) rather
        than of each container's request (:func:`kubesched.api.objects.counted_requests`);
        set by :meth:`count_resize_totals` from the run's release."""
        self.pod_level_resize = False
        """Whether a Pod's own ``status.resources`` count (InPlacePodLevelResourcesVertical
        Scaling on: :attr:`kubesched.api.objects.Pod.pod_level_resize`); set by
        :meth:`count_resize_totals` from the run's gates."""

    @property
    def version(self) -> int:
        """Bumped on every change (readers keep what they derive from it)."""
        return self._journal.version

    def _bump(self, row: int) -> None:
        self._journal.add(row)

    def _bump_rows(self, rows: list[int]) -> None:
        """:meth:`_bump` for each of ``rows`` in order."""
        self._journal.extend(rows)

    def rows_changed_since(self, version: int) -> list[int] | None:
        """The node rows whose Pods changed after ``version`` (with repeats), when every
        change since was a Pod added to or removed from a node; None when a node or another
        object changed too, or the journal no longer reaches back to ``version``."""
        rows = self._journal.since(version)
        return None if rows is None or STRUCTURAL in rows else rows

    def observe(self, observer: Observer) -> None:
        """Register ``observer`` and replay the current nodes and Pods to it."""
        self.observers.append(observer)
        for row in self.nodes.row_of.values():
            observer.node_changed(row, None, self.nodes.nodes[row])
        tell_added(observer, list(self.pods.values()))

    # ------------------------------------------------------------------ other objects
    def knows_object(self, obj: dict[str, Any]) -> bool:
        """Whether an object of ``obj``'s kind, namespace and name is recorded (a change of
        it is an update, else an add)."""
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or "default")
        return (str(obj.get("kind", "")), f"{ns}/{meta.get('name', '')}") in self.objects

    def known_object(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """The recorded object of ``obj``'s kind, namespace and name (None when unknown): what
        a change of it replaces."""
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or "default")
        return self.objects.get((str(obj.get("kind", "")), f"{ns}/{meta.get('name', '')}"))

    def apply_object(self, obj: dict[str, Any], *, deleted: bool = False) -> str:
        """Record (or forget) a Namespace, Service or any other object; returns its kind."""
        kind = str(obj.get("kind", ""))
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        ns = str(meta.get("namespace") or "default")
        if kind == "Namespace":
            if deleted:
                self.namespaces.labels.pop(name, None)
            else:
                self.namespaces.labels[name] = dict(meta.get("labels") or {})
        elif kind == "Service":
            if deleted:
                self.services.pop(f"{ns}/{name}", None)
            else:
                selector = (obj.get("spec") or {}).get("selector") or {}
                self.services[f"{ns}/{name}"] = (ns, {str(k): str(v) for k, v in selector.items()})
        key = (kind, f"{ns}/{name}")
        old = self.objects.get(key)
        before = _controllers(old) if old is not None else ()
        after = () if deleted else _controllers(obj)
        for uid in before:
            owned = self.controlled.get(uid)
            if owned is not None and uid not in after:
                owned.pop(key, None)
                if not owned:
                    del self.controlled[uid]
        for uid in after:
            self.controlled.setdefault(uid, {})[key] = None
        if deleted:
            self.objects.pop(key, None)
        else:
            self.objects[key] = obj
        if self.storage is not None and kind in STORAGE_KINDS:
            self.storage.changed(kind, key[1])
        if kind != "ResourceClaim":  # DynamicResources follows claims itself (refresh_filter)
            self._bump(STRUCTURAL)
        return kind

    # ------------------------------------------------------------------ nodes
    def add_node(self, node: api.Node) -> None:
        """Add a node, or update it when its name exists; Pods waiting for it (bound to it
        before it arrived, or kept since it was deleted) are accounted on it now."""
        old = self.node(node.name)
        row = self.nodes.add_node(node)
        self.pods_on_node.setdefault(node.name, [])
        self._bump(STRUCTURAL)
        for o in self.observers:
            o.node_changed(row, old, node)
        for pod in self.ghosts.pop(node.name, {}).values():
            del self._ghost_node[pod.key]
            self._account(pod, node.name, assumed=False)

    def update_node(self, node: api.Node) -> None:
        """Replace a node's facts; its Pods stay."""
        if node.name not in self.nodes.row_of:
            self.add_node(node)
            return
        old = self.node(node.name)
        row = self.nodes.update_node(node)
        self._bump(STRUCTURAL)
        for o in self.observers:
            o.node_changed(row, old, node)

    def remove_node(self, name: str) -> list[api.Pod]:
        """Remove a node; the bound Pods accounted on it are kept as :attr:`ghosts` until
        they are removed themselves (or the node comes back); returns those Pods."""
        if name not in self.nodes.row_of:
            return []
        gone = [self.pods[k].pod for k in sorted(self.pods_on_node.get(name, ()))]
        for key in list(self.pods_on_node.get(name, ())):  # upstream keeps them in order
            rec = self._unaccount(key)
            if not rec.assumed:  # an assumed Pod's bind will fail: it is forgotten then
                self._wait_for_node(rec.pod, name)
        self.pods_on_node.pop(name, None)
        old = self.node(name)
        row = self.nodes.remove_node(name)
        self._bump(STRUCTURAL)
        for o in self.observers:
            o.node_changed(row, old, None)
        return gone

    def node(self, name: str) -> api.Node | None:
        """The Node object called ``name``, if present."""
        row = self.nodes.row_of.get(name)
        return None if row is None else self.nodes.nodes[row]

    # ------------------------------------------------------------------ pods
    def _account(self, pod: api.Pod, node_name: str, assumed: bool) -> PodRecord:
        row = self.nodes.row_of.get(node_name)
        if row is None:
            raise CacheError(f"pod {pod.key}: node {node_name!r} is not in the cache")
        if not self.pod_level_resources:
            skip_pod_level_resources(pod)
        requests, non0 = api.counted_requests(pod, self.resize_totals, self.pod_level_resize)
        req, sparse = self.nodes.split_request(requests)
        nonzero = (non0.get(api.CPU, 0), non0.get(api.MEMORY, 0))
        self.nodes.add_pod_usage(row, req, nonzero, pod.host_ports, sparse)
        rec = PodRecord(pod, node_name, row, req, nonzero, assumed=assumed, sparse=sparse)
        self.pods[pod.key] = rec
        if assumed:
            self.assumed_count += 1
        keys = self.pods_on_node.setdefault(node_name, [])
        self._slot[pod.key] = len(keys)
        keys.append(pod.key)
        self._bump(row)
        for o in self.observers:
            o.pod_added(rec)
        return rec

    def _unaccount(self, key: str) -> PodRecord:
        rec = self.pods.pop(key)
        if rec.assumed:
            self.assumed_count -= 1
        self.nodes.remove_pod_usage(
            rec.row, rec.request, rec.nonzero, rec.pod.host_ports, rec.sparse
        )
        keys = self.pods_on_node.get(rec.node)
        if keys is not None:
            _swap_remove(keys, key, self._slot)
        self._bump(rec.row)
        for o in self.observers:
            o.pod_removed(rec)
        return rec

    def add_bound_pods(self, pods: list[api.Pod]) -> list[api.Pod]:
        """:meth:`add_pod` for many bound Pods at once, none of them in the cache yet (an
        initial LIST, a snapshot): the same records, columns and observer calls, with the
        node table's columns summed once per column instead of once per Pod, and each
        observer told of all of them at once (:func:`tell_added`) after the columns are
        filled.  Returns the Pods whose node the cache lacks (kept in :attr:`ghosts` until it
        arrives).  Order matters as
        for :meth:`add_pod`: records are created (and each observer hears them) in ``pods``
        order."""
        table = self.nodes
        keys = [pod.key for pod in pods]
        if len(set(keys)) != len(keys) or not self.pods.keys().isdisjoint(keys):
            seen: set[str] = set()
            for key in keys:
                if key in self.pods or key in seen:
                    raise CacheError(f"pod {key} is already in the cache")
                seen.add(key)
        row_of = table.row_of
        found = [row_of.get(pod.node_name) for pod in pods]
        missing = [pod for pod, row in zip(pods, found, strict=True) if row is None]
        if missing:
            pods = [pod for pod, row in zip(pods, found, strict=True) if row is not None]
            keys = [pod.key for pod in pods]
            for pod in missing:  # counted as soon as their node arrives
                self._wait_for_node(pod, pod.node_name)
        rows_list = [row for row in found if row is not None]
        vector_of: dict[tuple[tuple[str, int], ...], int] = {}
        by_dict: dict[int, int] = {}  # id of a requests dict (Pods of a template share one)
        vectors: list[IntArray] = []  # the distinct request vectors (dense resources)
        sparse_of: list[SparseRequest] = []  # and their requests of sparse ones
        nonzero_of: dict[int, tuple[int, int]] = {}  # by id of a nonzero dict, likewise
        which: list[int] = []  # each record's index into ``vectors``
        recs: list[PodRecord] = []
        totals, pod_level = self.resize_totals, self.pod_level_resize
        for pod, row in zip(pods, rows_list, strict=True):
            if not self.pod_level_resources:
                skip_pod_level_resources(pod)
            requests = pod.requests
            nz = pod.nonzero_requests
            if pod.resize_totals is not None or pod.pod_level_resize is not None:
                requests, nz = api.counted_requests(pod, totals, pod_level)
            j = by_dict.get(id(requests))
            if j is None:
                sig = tuple(requests.items())
                j = vector_of.get(sig)
                if j is None:
                    j = vector_of[sig] = len(vectors)
                    vec, sparse = table.split_request(requests)
                    vectors.append(vec)
                    sparse_of.append(sparse)
                by_dict[id(requests)] = j
            pair = nonzero_of.get(id(nz))
            if pair is None:
                pair = nonzero_of[id(nz)] = (nz.get(api.CPU, 0), nz.get(api.MEMORY, 0))
            which.append(j)
            recs.append(
                PodRecord(pod, pod.node_name, row, vectors[j], pair, False, False, sparse_of[j])
            )
        self.pods.update(zip(keys, recs, strict=True))
        on_node, slot = self.pods_on_node, self._slot
        for pod, key in zip(pods, keys, strict=True):
            keys_here = on_node.get(pod.node_name)
            if keys_here is None:
                keys_here = on_node[pod.node_name] = []
            slot[key] = len(keys_here)
            keys_here.append(key)
        for rec in recs:
            if rec.pod.host_ports:  # rare: counted one by one, as add_pod_usage does
                for p in rec.pod.host_ports:
                    col = table.host_ports.get((p.host_ip, p.protocol, p.port))
                    if col is None:
                        col = np.zeros(table.capacity, dtype=np.int32)
                        table.host_ports[(p.host_ip, p.protocol, p.port)] = col
                    col[rec.row] += 1
            for name, amount in rec.sparse:  # rare too: resources few nodes have
                table.add_sparse_request(rec.row, name, amount)
        if recs:
            rows = np.asarray(rows_list, dtype=np.int64)
            distinct = np.zeros((len(vectors), table.requested.shape[1]), dtype=np.int64)
            for j, vec in enumerate(vectors):  # shorter vectors: resources added later are 0
                distinct[j, : vec.shape[0]] = vec
            np.add.at(table.requested, rows, distinct[np.asarray(which, dtype=np.int64)])
            nonzero = np.array([r.nonzero for r in recs], dtype=np.int64)
            np.add.at(table.nonzero_requested, rows, nonzero)
            counts = np.bincount(rows, minlength=table.capacity)
            table.pod_count += counts
            table.generation += counts
            table.moves.extend(rows_list)
            self._bump_rows(rows_list)
            for o in self.observers:
                tell_added(o, recs)
        return missing

    def assume_pod(self, pod: api.Pod, node_name: str) -> None:
        """Count ``pod`` on ``node_name`` before the bind is confirmed."""
        if pod.key in self.pods:
            raise CacheError(f"pod {pod.key} is already in the cache")
        self._account(pod, node_name, assumed=True)

    def finish_binding(self, pod: api.Pod) -> None:
        """The binding cycle finished for an assumed Pod."""
        rec = self.pods.get(pod.key)
        if rec is not None and rec.assumed:
            rec.binding_finished = True

    def forget_pod(self, pod: api.Pod) -> None:
        """Undo ``assume_pod`` exactly."""
        rec = self.pods.get(pod.key)
        if rec is None or not rec.assumed:
            raise CacheError(f"pod {pod.key} was not assumed")
        self._unaccount(pod.key)

    def add_pod(self, pod: api.Pod) -> None:
        """A bound Pod (``pod.node_name`` set) reported by the API server; one whose node the
        cache lacks waits for it (:attr:`ghosts`)."""
        self._forget_ghost(pod.key)
        rec = self.pods.get(pod.key)
        if rec is not None:
            if rec.assumed and rec.node == pod.node_name and rec.pod.labels == pod.labels:
                rec.assumed = False
                self.assumed_count -= 1
                rec.pod = pod
                keys = self.pods_on_node[rec.node]  # upstream's updatePod: removed, appended
                if keys[-1] != pod.key:
                    _swap_remove(keys, pod.key, self._slot)
                    self._slot[pod.key] = len(keys)
                    keys.append(pod.key)
                    self.reorders[rec.row] = self.reorders.get(rec.row, 0) + 1
                    self.reorder_events += 1
                return
            self._unaccount(pod.key)
        if pod.node_name not in self.nodes.row_of:
            self._wait_for_node(pod, pod.node_name)
            return
        self._account(pod, pod.node_name, assumed=False)

    def remove_pod(self, pod_key: str) -> PodRecord | None:
        """A Pod deleted (or moved away); returns its record if it was accounted."""
        self._forget_ghost(pod_key)
        if pod_key not in self.pods:
            return None
        return self._unaccount(pod_key)

    def skip_pod_level_resources(self) -> None:
        """PodLevelResources off: every Pod placed, now and later, counts its containers'
        requests only (upstream's sums skip ``spec.resources``); those already placed with
        pod-level resources are counted again."""
        if not self.pod_level_resources:
            return
        self.pod_level_resources = False
        again = [r for r in self.pods.values() if has_pod_level_resources(r.pod)]
        orders = {r.node: list(self.pods_on_node[r.node]) for r in again}
        for rec in again:
            self._unaccount(rec.pod.key)
            self._account(rec.pod, rec.node, rec.assumed)
        self.pods_on_node.update(orders)  # counted anew, not moved: upstream's order stays

    def count_resize_totals(self, on: bool, pod_level: bool = False) -> None:
        """Count a resizing Pod as the run's release does (``on``: v1.37 and later, the
        largest of its totals; :attr:`resize_totals`) and its gates (``pod_level``:
        InPlacePodLevelResourcesVerticalScaling, :attr:`pod_level_resize`); the Pods already
        placed that carry a resize status are counted again if the rule changes."""
        if on == self.resize_totals and pod_level == self.pod_level_resize:
            return
        self.resize_totals = on
        self.pod_level_resize = pod_level
        resizing = [
            r
            for r in self.pods.values()
            if r.pod.resize_totals is not None or r.pod.pod_level_resize is not None
        ]
        orders = {r.node: list(self.pods_on_node[r.node]) for r in resizing}
        for rec in resizing:
            self._unaccount(rec.pod.key)
            self._account(rec.pod, rec.node, rec.assumed)
        self.pods_on_node.update(orders)  # counted anew, not moved: upstream's order stays

    def has_pod(self, pod_key: str) -> bool:
        """Whether ``pod_key`` is in the cache: accounted on a node, or waiting for its node."""
        return pod_key in self.pods or pod_key in self._ghost_node

    def _wait_for_node(self, pod: api.Pod, node_name: str) -> None:
        self.ghosts.setdefault(node_name, {})[pod.key] = pod
        self._ghost_node[pod.key] = node_name

    def _forget_ghost(self, pod_key: str) -> None:
        node_name = self._ghost_node.pop(pod_key, None)
        if node_name is not None:
            waiting = self.ghosts[node_name]
            last = next(reversed(waiting))
            if last == pod_key or len(waiting) == 1:
                del waiting[pod_key]
            else:  # upstream removes from a node-less NodeInfo as removeFromSlice does
                items = list(waiting.items())
                at = next(i for i, (k, _) in enumerate(items) if k == pod_key)
                items[at] = items[-1]
                del items[-1]
                self.ghosts[node_name] = waiting = dict(items)
            if not waiting:
                del self.ghosts[node_name]

    def is_assumed(self, pod_key: str) -> bool:
        """Whether ``pod_key`` is assumed and not yet confirmed."""
        rec = self.pods.get(pod_key)
        return rec is not None and rec.assumed

    def overcommitted_nodes(self) -> list[str]:
        """Names of nodes whose requests exceed allocatable (must always be empty)."""
        t = self.nodes
        alive = t.alive
        over = (t.requested > t.allocatable).any(axis=1) | (t.pod_count > t.allowed_pods)
        return [t.names[int(r)] for r in np.flatnonzero(over & alive)]


def _swap_remove(keys: list[str], key: str, slot: dict[str, int]) -> None:
    """Take ``key`` out of ``keys`` as upstream's ``removeFromSlice`` does: the last key
    takes its place.  ``slot`` (:attr:`ClusterState._slot`) says where each key was put;
    a hint that does not hold (a list replaced from outside) falls back to the scan."""
    at = slot.pop(key, -1)
    if not (0 <= at < len(keys) and keys[at] == key):
        try:
            at = keys.index(key)
        except ValueError:
            return
    last = keys.pop()
    if at < len(keys):
        keys[at] = last
        slot[last] = at


def _controllers(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """The UIDs of ``obj``'s controller owner references."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return tuple(str(o.get("uid")) for o in refs if isinstance(o, Mapping) and o.get("controller"))
