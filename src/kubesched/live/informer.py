"""Informers: list, then watch from the list's resourceVersion, and keep a local store.

Like client-go's reflector: a paged list (``limit`` / ``continue``) replaces the store and
emits the difference as deltas (new keys ADDED, changed resourceVersions MODIFIED, vanished
keys DELETED); a watch from the list's resourceVersion with bookmarks follows; when it ends
(server timeout, dropped connection) the watch resumes from the last resourceVersion seen;
a 410 Gone (an HTTP answer or an ``ERROR`` event) relists; other errors back off
exponentially (0.8 s doubling to 30 s, client-go's defaults) or as ``Retry-After`` says.
A kind whose API is not installed (404 on an optional custom resource) counts as synced and
empty: that is said once (INFO), and the kind is listed again quietly at the longest backoff
(30 s), so a CRD installed later is picked up within that -- a periodic list instead of a
watch on CustomResourceDefinitions, which would need cluster-wide read access to CRDs.
A kind served in one of several versions or not at all (the Workload API's PodGroups and
Workloads, :func:`workload_kinds`) asks the server's discovery before each list which of its
versions serves it, and is absent in the same way when none does.

The first list asks for ``resourceVersion=0`` (any version), as client-go's initial list
does: kube-apiserver answers it from its watch cache in one response, ``limit`` ignored --
one request for a 200,000-Pod cluster instead of 400 pages, each paced by the client's QPS
limit.  Later lists, and one after a 410, are consistent reads (no ``resourceVersion``, paged
by the server); client-go relists from its last resourceVersion instead, which would let a
leader's fresh relist come from a lagging cache.

Deltas go to one ``sink`` shared by every informer (the scheduling loop's queue), so the
scheduler sees them in order, on one thread.  With ``batch_lists`` a list into an empty
store (the first one) is one delta carrying every object (``Delta.listed``), which the
scheduler loads in bulk.  A list is delivered whole or not at all: a page that fails
throws the list's pages away, and the list starts over.  List items come without ``kind``;
the informer sets ``kind`` and ``apiVersion`` on every object it hands on.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import Any

from kubesched.api import workload
from kubesched.api.source import bulk_allocation
from kubesched.live.client import ApiError, KubeClient, ObjectText

log = logging.getLogger(__name__)

Obj = dict[str, Any]

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


@dataclass(frozen=True, slots=True)
class Kind:
    """A resource kubesched watches."""

    kind: str
    api_version: str
    path: str
    """Cluster-wide collection path, e.g. ``/api/v1/pods``."""
    optional: bool = False
    """A custom resource that may not be installed (404 is not an error)."""
    versions: tuple[str, ...] = ()
    """For a kind an API server serves in one of several versions, or not at all (the
    Workload API's, :func:`workload_kinds`): the versions kubesched can read, most preferred
    first.  Before each list the informer asks the server's discovery which of them serve
    the resource (:meth:`Informer.discover`) and lists and watches the first; none: the kind
    is absent, as a missing optional CRD.  ``api_version`` and ``path`` name the first."""

    def at(self, version: str) -> Kind:
        """This kind in API ``version`` of its group."""
        group = self.api_version.rsplit("/", 1)[0]
        plural = self.path.rsplit("/", 1)[-1]
        return replace(
            self, api_version=f"{group}/{version}", path=f"/apis/{group}/{version}/{plural}"
        )


KINDS = (
    Kind("Namespace", "v1", "/api/v1/namespaces"),
    Kind("Node", "v1", "/api/v1/nodes"),
    Kind("Service", "v1", "/api/v1/services"),
    Kind("ReplicationController", "v1", "/api/v1/replicationcontrollers"),
    Kind("ReplicaSet", "apps/v1", "/apis/apps/v1/replicasets"),
    Kind("StatefulSet", "apps/v1", "/apis/apps/v1/statefulsets"),
    Kind("PodDisruptionBudget", "policy/v1", "/apis/policy/v1/poddisruptionbudgets"),
    Kind(
        "PodGroup",
        "scheduling.x-k8s.io/v1alpha1",
        "/apis/scheduling.x-k8s.io/v1alpha1/podgroups",
        optional=True,
    ),
    Kind(
        "ElasticQuota",
        "scheduling.x-k8s.io/v1alpha1",
        "/apis/scheduling.x-k8s.io/v1alpha1/elasticquotas",
        optional=True,
    ),
    Kind("Pod", "v1", "/api/v1/pods"),
)
"""What ``kubesched run`` and ``kubesched record`` watch beside :data:`STORAGE_KINDS` (with
them: :data:`SCHEDULER_KINDS`); Pods last so a first sync sees nodes before their Pods."""

STORAGE_KINDS = (
    Kind("PersistentVolume", "v1", "/api/v1/persistentvolumes", optional=True),
    Kind("PersistentVolumeClaim", "v1", "/api/v1/persistentvolumeclaims", optional=True),
    Kind("StorageClass", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/storageclasses", True),
    Kind("CSINode", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/csinodes", optional=True),
    Kind("CSIDriver", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/csidrivers", optional=True),
    Kind(
        "CSIStorageCapacity",
        "storage.k8s.io/v1",
        "/apis/storage.k8s.io/v1/csistoragecapacities",
        optional=True,
    ),
    Kind(
        "VolumeAttachment",
        "storage.k8s.io/v1",
        "/apis/storage.k8s.io/v1/volumeattachments",
        optional=True,
    ),
)
"""The storage objects the volume plugins read (upstream's scheduler lists and watches them;
``deploy/rbac.yaml`` allows it; NodeVolumeLimits counts the VolumeAttachments).  Optional so
that an API server not serving one (a test's fake) counts it as empty; a real one always
does."""

SCHEDULER_KINDS = (*KINDS[:-1], *STORAGE_KINDS, KINDS[-1])
"""What a scheduling replica watches and ``kubesched record`` records: :data:`KINDS` and
:data:`STORAGE_KINDS`, Pods last."""

WORKLOAD_API_WATCHED = {"1.35": "Workload", "1.36": "PodGroup", "1.37": "PodGroup"}
"""The Workload API kind upstream's scheduler of each release watches (v1.35's
GangScheduling reads Workloads, v1.36+ reads PodGroups: ``eventhandlers.go``), which is what
:class:`~kubesched.framework.podgroups.PodGroupManager` reads in that release."""


def workload_kinds(gates: workload.Gates) -> tuple[Kind, ...]:
    """The Workload API informer of ``gates``' release (none without GenericWorkload or
    before v1.35): the kind that release's scheduler watches, in every version the release
    serves it (:data:`kubesched.api.workload.SERVED`; v1.37: ``v1beta1``, the one upstream's
    informer uses, then ``v1alpha3``), chosen at run time from what the API server serves."""
    kind = WORKLOAD_API_WATCHED.get(gates.version)
    if kind is None or not gates.enabled("GenericWorkload"):
        return ()
    versions = tuple(v for v, kinds in workload.SERVED[gates.version].items() if kind in kinds)
    plural = f"{kind.lower()}s"
    first = versions[0]
    return (
        Kind(
            kind,
            f"{workload.GROUP}/{first}",
            f"/apis/{workload.GROUP}/{first}/{plural}",
            optional=True,
            versions=versions,
        ),
    )


def scheduler_kinds(
    gates: workload.Gates, base: tuple[Kind, ...] = SCHEDULER_KINDS
) -> tuple[Kind, ...]:
    """``base`` (Pods last) with the Workload API informer of ``gates``' release
    (:func:`workload_kinds`) before the Pods: what a scheduling replica of that release
    watches."""
    return (*base[:-1], *workload_kinds(gates), base[-1])


@dataclass(frozen=True, slots=True)
class Delta:
    """One change: ``type`` ADDED / MODIFIED / DELETED, ``old`` None for ADDED."""

    kind: str
    type: str
    old: Obj | None
    new: Obj
    listed: tuple[Obj, ...] = ()
    """With ``batch_lists``: a first list's objects at once, each what an ``ADDED`` delta
    would bring, in order (``new`` is then empty); see :meth:`Delta.split`."""
    text: ObjectText | None = None
    """With ``texts``: a watched object's JSON text as received (``new`` decoded), which a
    parser may read instead of ``new``; None for a listed object."""

    def split(self) -> list[Delta]:
        """The one-object deltas this delta stands for."""
        if not self.listed:
            return [self]
        return [Delta(self.kind, ADDED, None, obj) for obj in self.listed]


@dataclass(frozen=True, slots=True)
class Timing:
    """Informer timing, seconds."""

    backoff_initial: float = 0.8
    backoff_max: float = 30.0
    watch_timeout: float = 300.0
    """Server-side watch timeout; each watch asks for a random value in [t, 2t] (client-go)."""
    page_size: int = 500


def object_key(obj: Obj) -> str:
    """``namespace/name`` (``name`` for cluster-scoped objects)."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))


def _rv(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))


def _no_texts(
    events: Generator[Obj, None, None],
) -> Generator[tuple[Obj, ObjectText | None], None, None]:
    with contextlib.closing(events):
        for event in events:
            yield event, None


class _Relist(Exception):
    """Start over with a list."""


class Informer:
    """List + watch of one kind, on its own thread (:meth:`run`)."""

    def __init__(
        self,
        client: KubeClient,
        kind: Kind,
        sink: Callable[[Delta], None],
        stop: threading.Event,
        timing: Timing | None = None,
        *,
        batch_lists: bool = False,
        texts: bool = False,
        trim_managed_fields: bool = False,
    ) -> None:
        self.client = client
        self.trim_managed_fields = trim_managed_fields
        """Drop each object's ``metadata.managedFields`` as it is decoded, as upstream's
        scheduler does for its Pod informer (``newPodInformer``'s transform): no parser reads
        them, and a Pod's are most of the containers of its decoded manifest (12 of 20 for
        a Pod of one container), which the cyclic collector would walk while they live.
        The object's JSON text (``Delta.text``) keeps them."""
        self.batch_lists = batch_lists
        """Hand a list into an empty store on as one delta (``Delta.listed``), so a large
        cluster's first LIST can be loaded in bulk."""
        self.texts = texts
        """Hand each watched object on with its JSON text (``Delta.text``)."""
        self.kind = kind
        """The kind as listed and watched now (for a kind of several ``versions``, the one
        :meth:`discover` chose last)."""
        self.wanted = kind
        self.sink = sink
        self.stop = stop
        self.timing = timing or Timing()
        self.store: dict[str, Obj] = {}
        self.lock = threading.Lock()
        self.synced = threading.Event()
        self.lists = 0
        """Completed lists (the runner waits for this to grow after :meth:`request_relist`)."""
        self.absent = False
        self._list_from = "0"
        """``resourceVersion`` of the next list: "0" until one succeeds or is refused 410,
        then "" (a consistent read)."""
        self._relist = threading.Event()
        self._delay = self.timing.backoff_initial

    # ------------------------------------------------------------------ the thread
    def run(self) -> None:
        """List and watch until ``stop`` is set."""
        while not self.stop.is_set():
            try:
                rv = self._list()
                self._delay = self.timing.backoff_initial
                while not self.stop.is_set():
                    rv = self._watch(rv)
            except _Relist:
                continue
            except ApiError as e:
                if self.stop.is_set():
                    return
                if e.gone:
                    log.info("%s: resourceVersion too old, relisting", self.kind.kind)
                    continue
                self._backoff(e)

    def request_relist(self) -> None:
        """Make the informer list again (its open watch is cut by the caller)."""
        self._relist.set()

    def snapshot(self) -> list[Obj]:
        """The store's objects (for resync)."""
        with self.lock:
            return list(self.store.values())

    # ------------------------------------------------------------------ list
    def _list(self) -> str:
        """List every page and replace the store, the garbage collector paused meanwhile
        (:func:`~kubesched.api.source.bulk_allocation`: a large cluster's pages are millions
        of new containers, which it would walk again and again)."""
        self._relist.clear()
        with bulk_allocation():
            return self._list_pages()

    def _list_pages(self) -> str:
        fresh: dict[str, Obj] = {}
        query: dict[str, Any] = {"limit": self.timing.page_size}
        if self._list_from:
            query["resourceVersion"] = self._list_from
        start = time.monotonic()
        if self.wanted.versions:
            try:
                self.kind = self.discover()
            except ApiError as e:
                if e.code == 404:
                    self._absent()
                raise
        while True:
            try:
                page = self.client.request("GET", self.kind.path, query=query)
            except ApiError as e:
                if e.code == 404 and self.kind.optional:
                    self._absent()
                if e.gone:
                    self._list_from = ""
                raise
            for obj in page.get("items") or []:
                fresh[object_key(obj)] = self._stamp(obj)
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                break
            query = {"limit": self.timing.page_size, "continue": meta["continue"]}
        log.info(
            "%s: listed %d objects in %.1f s", self.kind.kind, len(fresh), time.monotonic() - start
        )
        self._replace(fresh)
        self._list_from = ""
        if self.absent:
            log.info("%s is served now: listed and watched", self.kind.kind)
        self.absent = False
        self.lists += 1
        self.synced.set()
        return str(meta.get("resourceVersion", ""))

    def discover(self) -> Kind:
        """The first of :attr:`Kind.versions` whose discovery document
        (``GET /apis/GROUP/VERSION``) lists the kind's resource; ApiError 404 when none
        does (the group version not served: a 404 or a list without the resource)."""
        wanted = self.wanted
        group = wanted.api_version.rsplit("/", 1)[0]
        plural = wanted.path.rsplit("/", 1)[-1]
        for version in wanted.versions:
            try:
                listing = self.client.request("GET", f"/apis/{group}/{version}")
            except ApiError as e:
                if e.code == 404:
                    continue
                raise
            names = {r.get("name") for r in listing.get("resources") or [] if isinstance(r, dict)}
            if plural in names:
                chosen = wanted.at(version)
                if chosen != self.kind or self.lists == 0:
                    log.info(
                        "%s: served as %s; listing and watching it", wanted.kind, chosen.api_version
                    )
                return chosen
        raise ApiError(
            404, f"{group} serves {plural} in none of {', '.join(wanted.versions)}", "NotFound"
        )

    def _absent(self) -> None:
        if not self.absent:
            why = (
                f"in none of {', '.join(self.wanted.versions)} (the API server's feature gates "
                "and --runtime-config)"
                if self.wanted.versions
                else "(its CustomResourceDefinition is not installed)"
            )
            log.info(
                "%s (%s) is not served by this API server %s; treating it as empty and "
                "checking again every %.0f s",
                self.kind.kind,
                self.wanted.api_version.rsplit("/", 1)[0]
                if self.wanted.versions
                else self.kind.api_version,
                why,
                self.timing.backoff_max,
            )
        self.absent = True
        self._replace({})
        self.lists += 1
        self.synced.set()

    def _stamp(self, obj: Obj) -> Obj:
        obj["kind"] = self.kind.kind
        obj["apiVersion"] = self.kind.api_version
        if self.trim_managed_fields:
            meta = obj.get("metadata")
            if type(meta) is dict:
                meta.pop("managedFields", None)
        return obj

    def _replace(self, fresh: dict[str, Obj]) -> None:
        """The listed objects (stamped, by key) become the store; deltas go to the sink."""
        with self.lock:
            old_store, self.store = self.store, fresh
        if self.batch_lists and not old_store and fresh:
            self.sink(Delta(self.kind.kind, ADDED, None, {}, tuple(fresh.values())))
            return
        for key, obj in fresh.items():
            old = old_store.get(key)
            if old is None:
                self.sink(Delta(self.kind.kind, ADDED, None, obj))
            elif _rv(old) != _rv(obj):
                self.sink(Delta(self.kind.kind, MODIFIED, old, obj))
        for key, old in old_store.items():
            if key not in fresh:
                self.sink(Delta(self.kind.kind, DELETED, old, old))

    # ------------------------------------------------------------------ watch
    def _watch(self, rv: str) -> str:
        timeout = int(self.timing.watch_timeout * (1 + random.random()))
        query = {"resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": timeout}
        if self.texts:
            stream: Generator[tuple[Obj, ObjectText | None], None, None] = self.client.watch_texts(
                self.kind.path, query, read_timeout=timeout + 30
            )
        else:
            stream = _no_texts(self.client.watch(self.kind.path, query, read_timeout=timeout + 30))
        try:
            for event, text in stream:
                if self.stop.is_set() or self._relist.is_set():
                    raise _Relist
                rv = self._apply(event, rv, text)
        except ApiError as e:
            if self._relist.is_set() or self.stop.is_set():
                raise _Relist from e
            if e.code == 0:  # a dropped connection: resume from the last version seen
                log.info("%s watch dropped (%s); resuming at %s", self.kind.kind, e, rv)
                return rv
            raise
        finally:
            stream.close()
        if self._relist.is_set():
            raise _Relist
        return rv

    def _apply(self, event: Obj, rv: str, text: ObjectText | None = None) -> str:
        etype = str(event.get("type", ""))
        obj = event.get("object") or {}
        if etype == "ERROR":
            code = int(obj.get("code") or 0)
            raise ApiError(code or 500, str(obj.get("message", "")), str(obj.get("reason", "")))
        new_rv = _rv(obj) or rv
        if etype == "BOOKMARK":
            return new_rv
        key = object_key(obj)
        obj = self._stamp(obj)
        with self.lock:
            old = self.store.pop(key, None) if etype == DELETED else self.store.get(key)
            if etype != DELETED:
                self.store[key] = obj
        if etype == DELETED:
            self.sink(Delta(self.kind.kind, DELETED, old, obj))
        elif etype in (ADDED, MODIFIED):
            etype = ADDED if old is None else MODIFIED
            self.sink(Delta(self.kind.kind, etype, old, obj, text=text))
        return new_rv

    def _backoff(self, e: ApiError) -> None:
        delay = self._delay if e.retry_after is None else max(e.retry_after, 0.0)
        if self.absent and e.code == 404:  # said once, in _absent: the re-checks are quiet
            delay = self.timing.backoff_max
            log.debug("%s: still not served; checking again in %.1f s", self.kind.kind, delay)
        else:
            if self.absent:
                delay = self.timing.backoff_max
            log.warning("%s: %s; retrying in %.1f s", self.kind.kind, e, delay)
        self._delay = min(self._delay * 2, self.timing.backoff_max)
        self.stop.wait(delay * (1 + 0.1 * random.random()))
