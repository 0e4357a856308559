"""The cluster's storage objects as the volume plugins read them (upstream's PV, PVC,
StorageClass, CSINode, CSIDriver, CSIStorageCapacity and VolumeAttachment listers, with the
volume binder's assume caches), and the Pods' use of claims and disks per node.

Objects live in ``ClusterState.objects`` (snapshot, scenario, simulator, live informers) and
are parsed once per manifest (:mod:`kubesched.api.storage`).  Cluster-scoped kinds are keyed
``default/<name>`` there (as :meth:`~kubesched.state.cache.ClusterState.apply_object` keys an
object without a namespace).  Two overlays sit on top, as upstream's ``PVAssumeCache`` and
``PVCAssumeCache``: a PV or PVC written by VolumeBinding's Reserve (assumed) until the API
server's version of that object arrives, or Unreserve restores it.

As a cache observer, :class:`Storage` keeps, for the accounted Pods (bound and assumed):
how many use each claim (upstream's snapshot ``usedPVCSet``) and which Pods with volumes
run on each node row, so a Filter looks at those Pods only.  It also keeps two columns
indexed by node row for NodeVolumeLimits and VolumeBinding (:meth:`Storage.attach_bounds`):
an upper bound of the volumes attached there (the accounted Pods' volumes plus the node's
VolumeAttachments, without de-duplication) and the smallest attach limit of the node's
CSINode, so a Filter clears most nodes in one comparison.  A cluster gets one, made on
first use by :func:`storage_of`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.api import storage as st
from kubesched.api.errors import InputError
from kubesched.api.podvolumes import claim_names
from kubesched.state.cache import ClusterState, PodRecord
from kubesched.state.nodes import IntArray

PARSED_MAX = 100_000
"""Manifests kept parsed before the cache starts again."""
NO_LIMIT = 1 << 62
"""The attach-limit floor of a row whose node has no CSINode, or one without limits."""
UNBOUNDED = 1 << 40
"""What a Pod with an ephemeral volume adds to its row's attach bound: such a row is
always checked one by one (its claim may not be the Pod's: an error only that check finds)."""


class AttachBounds(NamedTuple):
    """:meth:`Storage.attach_bounds` for some rows, each int64 ``(len(rows),)``."""

    bound: IntArray
    """At least as many as the volumes attached on the node (any driver), plus
    :data:`UNBOUNDED` per Pod there with an ephemeral volume."""
    floor: IntArray
    """The smallest ``allocatable.count`` of the node's CSINode; :data:`NO_LIMIT` without a
    CSINode or a limit (and for a row without a node)."""
    csinode: npt.NDArray[np.bool_]
    """Whether the node has a CSINode."""


def attach_weight(pod: api.Pod) -> int:
    """What ``pod`` adds to its row's attach bound: each of its volumes attaches at most
    one volume; :data:`UNBOUNDED` more with an ephemeral volume."""
    ephemeral = any(v.kind == api.VOLUME_EPHEMERAL for v in pod.volumes)
    return len(pod.volumes) + (UNBOUNDED if ephemeral else 0)


def cluster_key(name: str) -> str:
    """The ``ClusterState.objects`` key of a cluster-scoped object."""
    return f"default/{name}"


@dataclass(slots=True)
class _Lists:
    """What :meth:`Storage._listed` makes once per ``version``: the PVs by class, the
    CSIStorageCapacities, the VolumeAttachments by node name and the CSIDrivers."""

    version: int
    by_class: dict[str, list[st.PersistentVolume]] = field(default_factory=dict)
    capacities: list[st.CSIStorageCapacity] = field(default_factory=list)
    attachments: dict[str, list[st.VolumeAttachment]] = field(default_factory=dict)
    drivers: list[st.CSIDriver] = field(default_factory=list)


class Storage:
    """Storage objects with the assume overlays, and claim use per node (module docstring)."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self._parsed: dict[int, tuple[Mapping[str, Any], Any]] = {}
        self.assumed_pvs: dict[str, st.PersistentVolume] = {}
        """PV name -> the version Reserve assumed."""
        self.assumed_pvcs: dict[str, st.PersistentVolumeClaim] = {}
        """Claim ``ns/name`` -> the version Reserve assumed."""
        self.claim_users: dict[str, int] = {}
        """Claim ``ns/name`` -> accounted Pods naming it in a ``persistentVolumeClaim``."""
        self.volume_pods: dict[int, dict[str, api.Pod]] = {}
        """Node row -> accounted Pods with volumes there, by key."""
        self.version = 0
        """Bumped when a storage object changes (the per-class lists are made again)."""
        self._lists: _Lists | None = None
        cap = cluster.nodes.capacity
        self._pod_volumes = np.zeros(cap, dtype=np.int64)
        """Node row -> the sum of :func:`attach_weight` of its accounted Pods."""
        self._attachments = np.zeros(cap, dtype=np.int64)
        """Node row -> VolumeAttachments naming the node (made again when ``_va_stale``)."""
        self._va_stale = True
        self._floor = np.full(cap, NO_LIMIT, dtype=np.int64)
        """Node row -> the smallest attach limit of its CSINode (:class:`AttachBounds`)."""
        self._has_csinode = np.zeros(cap, dtype=np.bool_)
        self._migrated = np.full(cap, -1, dtype=np.int32)
        """Node row -> the interned migrated-plugins annotation of its CSINode (-1: none)."""
        self._migrated_codes: dict[str, int] = {}
        cluster.observe(self)

    # ------------------------------------------------------------------ cache observer
    def pod_added(self, rec: PodRecord) -> None:
        """Count ``rec``'s claims and keep it on its row when it has volumes."""
        pod = rec.pod
        if not pod.volumes:
            return
        self.volume_pods.setdefault(rec.row, {})[pod.key] = pod
        self._fit(rec.row)
        self._pod_volumes[rec.row] += attach_weight(pod)
        for v in pod.volumes:
            if v.kind == api.VOLUME_PVC:
                key = f"{pod.namespace}/{v.claim}"
                self.claim_users[key] = self.claim_users.get(key, 0) + 1

    def pod_removed(self, rec: PodRecord) -> None:
        """The inverse of :meth:`pod_added`."""
        pod = rec.pod
        if not pod.volumes:
            return
        on_row = self.volume_pods.get(rec.row)
        if on_row is not None:
            on_row.pop(pod.key, None)
            if not on_row:
                del self.volume_pods[rec.row]
        self._fit(rec.row)
        self._pod_volumes[rec.row] -= attach_weight(pod)
        for v in pod.volumes:
            if v.kind == api.VOLUME_PVC:
                key = f"{pod.namespace}/{v.claim}"
                n = self.claim_users.get(key, 0) - 1
                if n > 0:
                    self.claim_users[key] = n
                else:
                    self.claim_users.pop(key, None)

    def node_changed(self, row: int, old: api.Node | None, new: api.Node | None) -> None:
        """The row's CSINode limits are read again (Pods leave a removed node through
        :meth:`pod_removed`)."""
        self._fit(row)
        self._csinode_row(row, None if new is None else new.name)
        if old is None or new is None or old.name != new.name:
            self._va_stale = True

    # ------------------------------------------------------------------ attach columns
    def _fit(self, row: int) -> None:
        """Grow the columns to hold ``row`` (and the node table's capacity)."""
        cap = max(row + 1, self.cluster.nodes.capacity)
        old = self._pod_volumes.shape[0]
        if cap <= old:
            return
        pad = cap - old
        self._pod_volumes = np.concatenate([self._pod_volumes, np.zeros(pad, dtype=np.int64)])
        self._attachments = np.concatenate([self._attachments, np.zeros(pad, dtype=np.int64)])
        self._floor = np.concatenate([self._floor, np.full(pad, NO_LIMIT, dtype=np.int64)])
        self._has_csinode = np.concatenate([self._has_csinode, np.zeros(pad, dtype=np.bool_)])
        self._migrated = np.concatenate([self._migrated, np.full(pad, -1, dtype=np.int32)])

    def _csinode_row(self, row: int, node_name: str | None) -> None:
        csinode = None if node_name is None else self.csinode(node_name)
        limits = [c for c in csinode.drivers.values() if c is not None] if csinode else []
        self._has_csinode[row] = csinode is not None
        self._floor[row] = min(limits) if limits else NO_LIMIT
        if csinode is None:
            self._migrated[row] = -1
        else:
            migrated = csinode.annotations.get(st.ANN_MIGRATED_PLUGINS, "")
            self._migrated[row] = self._migrated_codes.setdefault(
                migrated, len(self._migrated_codes)
            )

    def migrated_groups(self, rows: IntArray) -> npt.NDArray[np.int32]:
        """The node of each of ``rows`` (int64 ``(k,)``) by its CSINode's migrated-plugins
        annotation, int32 ``(k,)``: nodes with the same code have the same annotation; -1
        without a CSINode."""
        self._fit(int(rows.max()) if rows.shape[0] else 0)
        return self._migrated[rows]

    def attach_bounds(self, rows: IntArray) -> AttachBounds:
        """The attach columns (:class:`AttachBounds`) of node rows ``rows`` (int64
        ``(k,)``).  A node whose bound plus the new Pod's volume count is at most its
        floor passes NodeVolumeLimits without a look at its Pods."""
        self._fit(int(rows.max()) if rows.shape[0] else 0)
        if self._va_stale:
            self._attachments[:] = 0
            row_of = self.cluster.nodes.row_of
            for node_name, vas in self._listed().attachments.items():
                row = row_of.get(node_name)
                if row is not None:
                    self._attachments[row] += len(vas)
            self._va_stale = False
        return AttachBounds(
            self._pod_volumes[rows] + self._attachments[rows],
            self._floor[rows],
            self._has_csinode[rows],
        )

    def pods_on(self, row: int) -> list[api.Pod]:
        """The accounted Pods with volumes on node ``row``."""
        on_row = self.volume_pods.get(row)
        return list(on_row.values()) if on_row else []

    # ------------------------------------------------------------------ objects
    def changed(self, kind: str, key: str) -> None:
        """The cluster's object ``(kind, key)`` changed: its assumed version is dropped
        (the API server's is newer), the lists are made again."""
        self.version += 1
        if kind == "PersistentVolume":
            self.assumed_pvs.pop(key.partition("/")[2], None)
        elif kind == "PersistentVolumeClaim":
            self.assumed_pvcs.pop(key, None)
        elif kind == "CSINode":
            name = key.partition("/")[2]
            row = self.cluster.nodes.row_of.get(name)
            if row is not None:
                self._fit(row)
                self._csinode_row(row, name)
        elif kind == "VolumeAttachment":
            self._va_stale = True

    def _parse(self, obj: Mapping[str, Any]) -> Any:
        hit = self._parsed.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        if len(self._parsed) > PARSED_MAX:
            self._parsed.clear()
        try:
            parsed: Any = st.parse(obj)
        except InputError:
            parsed = None  # refused at input; one written later by a client is ignored
        self._parsed[id(obj)] = (obj, parsed)
        return parsed

    def _get(self, kind: str, key: str) -> Any:
        obj = self.cluster.objects.get((kind, key))
        return None if obj is None else self._parse(obj)

    def pvc(self, namespace: str, name: str) -> st.PersistentVolumeClaim | None:
        """The claim (its assumed version first), or None."""
        key = f"{namespace}/{name}"
        assumed = self.assumed_pvcs.get(key)
        if assumed is not None:
            return assumed
        found: st.PersistentVolumeClaim | None = self._get("PersistentVolumeClaim", key)
        return found

    def pv(self, name: str) -> st.PersistentVolume | None:
        """The volume (its assumed version first), or None."""
        assumed = self.assumed_pvs.get(name)
        if assumed is not None:
            return assumed
        found: st.PersistentVolume | None = self._get("PersistentVolume", cluster_key(name))
        return found

    def storage_class(self, name: str) -> st.StorageClass | None:
        """The StorageClass, or None."""
        found: st.StorageClass | None = self._get("StorageClass", cluster_key(name))
        return found

    def csinode(self, name: str) -> st.CSINode | None:
        """The node's CSINode, or None."""
        found: st.CSINode | None = self._get("CSINode", cluster_key(name))
        return found

    def csidriver(self, name: str) -> st.CSIDriver | None:
        """The CSIDriver, or None."""
        found: st.CSIDriver | None = self._get("CSIDriver", cluster_key(name))
        return found

    def csidrivers(self) -> list[st.CSIDriver]:
        """Every CSIDriver (callers must not change the list)."""
        return self._listed().drivers

    def _listed(self) -> _Lists:
        lists = self._lists
        if lists is None or lists.version != self.version:
            lists = _Lists(self.version)
            for (kind, _key), obj in self.cluster.objects.items():
                if kind == "PersistentVolume":
                    pv = self._parse(obj)
                    if pv is not None:
                        lists.by_class.setdefault(pv.storage_class, []).append(pv)
                elif kind == "CSIStorageCapacity":
                    cap = self._parse(obj)
                    if cap is not None:
                        lists.capacities.append(cap)
                elif kind == "VolumeAttachment":
                    va = self._parse(obj)
                    if va is not None:
                        lists.attachments.setdefault(va.node_name, []).append(va)
                elif kind == "CSIDriver":
                    driver = self._parse(obj)
                    if driver is not None:
                        lists.drivers.append(driver)
            self._lists = lists
        return lists

    def pvs_of_class(self, storage_class: str) -> list[st.PersistentVolume]:
        """Upstream ``PVAssumeCache.ListPVs(class)``: the volumes of a class, assumed
        versions in place of the informer's, in name order."""
        pvs = self._listed().by_class.get(storage_class, [])
        assumed = self.assumed_pvs
        out = [assumed.get(pv.name, pv) for pv in pvs] if assumed else list(pvs)
        return sorted(out, key=lambda pv: pv.name)

    def capacities(self) -> list[st.CSIStorageCapacity]:
        """Every CSIStorageCapacity."""
        return self._listed().capacities

    def attachments_on(self, node_name: str) -> list[st.VolumeAttachment]:
        """The VolumeAttachments naming ``node_name``."""
        return self._listed().attachments.get(node_name, [])

    # ------------------------------------------------------------------ claims of a Pod
    def pod_claims(self, pod: api.Pod) -> list[tuple[str, st.PersistentVolumeClaim | None, bool]]:
        """The claims ``pod`` names, in volume order: ``(name, claim or None, ephemeral)``."""
        return [(name, self.pvc(pod.namespace, name), eph) for name, eph in claim_names(pod)]


def storage_of(cluster: ClusterState) -> Storage:
    """The cluster's :class:`Storage`, made (and registered as an observer) on first use."""
    found = cluster.storage
    if isinstance(found, Storage):
        return found
    made = Storage(cluster)
    cluster.storage = made
    return made
