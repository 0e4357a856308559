"""NodeVolumeLimits: CSI attach limits from CSINode (upstream v1.34
``nodevolumelimits/csi.go``, the ``CSILimits`` plugin).

- PreFilter: Skip unless the Pod has a claim, an ephemeral volume or an inline in-tree
  volume upstream migrates to CSI.
- Filter: the Pod's new volumes per CSI driver (a claim's bound PV: its CSI driver and
  handle, or an in-tree PV translated where its migration is on; an unbound claim: its
  class's provisioner and a handle of its own; an inline GCE PD, AWS EBS, Azure Disk or
  Cinder volume translated) less those the node's Pods already use, added to those and to
  the CSI volumes the node's VolumeAttachments attach (each volume once; one the new Pod
  uses that only an attachment holds counts twice, as upstream's does), against the
  CSINode's ``allocatable.count`` of each driver: ``node(s) exceed max volume count`` when
  over.  A missing claim of the Pod is UnschedulableAndUnresolvable
  (``looking up PVC ns/name: persistentvolumeclaim "name" not found``); a node without a
  CSINode, or without limits, passes.
- Under VolumeLimitScaling (v1.35+; alpha, off, until v1.37's beta, on), before the
  limits: a node whose CSINode (or the lack of one) does not list a driver of the Pod's new
  volumes is ``DRIVER CSI driver is not installed on the node`` (Unschedulable) when that
  driver must be there: v1.35 asks it of every driver with a CSIDriver object, v1.36 and
  v1.37 only of one whose CSIDriver sets ``preventPodSchedulingIfMissing``
  (``checkCSIDriverOnNode``).  Upstream walks the new volumes in Go map order, so of two
  such drivers missing it may name either; kubesched names the one of the Pod's first such
  volume (:func:`_missing_driver`).
- PreFilterExtensions (kubesched's, for what upstream's NodeInfo copy does): Pods that
  preemption or nomination add to or remove from a node count there.

Queueing hints as upstream's: a deleted Pod (assigned from v1.37) with claims, ephemeral
or migratable inline volumes; an added claim the Pod names; a CSINode update that raised a
driver's ``allocatable.count``; a deleted VolumeAttachment when the Pod has a claim or an
inline volume translated to the attachment's driver (a CSINode's add is unhinted).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from kubesched.api import csimigration as csi_m
from kubesched.api import objects as api
from kubesched.api import storage as st
from kubesched.api.podvolumes import ephemeral_claim_name
from kubesched.config import names
from kubesched.framework.contract import Locality
from kubesched.framework.interface import (
    SKIP,
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    IntArray,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    Verdict,
)
from kubesched.state.cache import ClusterState
from kubesched.state.storage import Storage, storage_of

NAME = names.NODE_VOLUME_LIMITS
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
_KEY = "PreFilter" + NAME
_EXCEEDED = Status(Code.UNSCHEDULABLE, (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,))
VOLUME_ID_PREFIX = "kubesched"
"""Upstream prefixes an unbound claim's handle with 32 random letters, only to keep it apart
from real handles; a fixed prefix keeps runs reproducible."""


MEMO_MAX = 100_000
"""Pods whose attachable volumes are remembered before the memo starts again."""


class LookupError_(Exception):
    """A claim of the new Pod is missing (upstream's NotFound error: ``code``
    UnschedulableAndUnresolvable), an ephemeral claim is not the Pod's or an inline in-tree
    volume does not translate to CSI on a node with a CSINode (``code`` Error)."""

    def __init__(self, message: str, code: Code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class _Moved:
    """Pods moved on (``added`` by row) and off (``removed`` by key) nodes this cycle."""

    added: tuple[tuple[int, api.Pod], ...] = ()
    removed: frozenset[str] = field(default_factory=frozenset)


def attachable(
    storage: Storage,
    pod: api.Pod,
    csinode: st.CSINode | None,
    new_pod: bool,
    *,
    portworx_annotated: bool = True,
) -> dict[str, str]:
    """Upstream ``filterAttachableVolumes``: the Pod's attachable volumes, unique name to
    driver.  A missing claim raises :class:`LookupError_` for the new Pod, is passed over
    for a Pod already there."""
    out: dict[str, str] = {}
    for v in pod.volumes:
        if v.kind in (api.VOLUME_PVC, api.VOLUME_EPHEMERAL):
            name = v.claim if v.kind == api.VOLUME_PVC else ephemeral_claim_name(pod, v)
            claim = storage.pvc(pod.namespace, name)
            if claim is None:
                if new_pod:
                    raise LookupError_(
                        f"looking up PVC {pod.namespace}/{name}: "
                        f'persistentvolumeclaim "{name}" not found'
                    )
                continue
            if v.kind == api.VOLUME_EPHEMERAL and claim.controller_uid != pod.uid:
                raise LookupError_(
                    f"PVC {pod.namespace}/{name} was not created for pod "
                    f"{pod.namespace}/{pod.name} (pod is not owner)",
                    Code.ERROR,
                )
            driver, handle = _driver_info(storage, csinode, claim, portworx_annotated)
            if driver and handle:
                out[f"{driver}/{handle}"] = driver
            continue
        csi = csi_m.inline_csi(v)
        if csi is None or not csi_m.migration_on(
            csinode, csi[0], portworx_annotated=portworx_annotated
        ):
            continue
        refused = csi_m.inline_translation_error(v)
        if refused is not None:
            raise LookupError_(refused, Code.ERROR)
        out[f"{csi[1]}/{csi[2]}"] = csi[1]
    return out


def attachments(storage: Storage, node_name: str) -> dict[str, str]:
    """Upstream ``getNodeVolumeAttachmentInfo``: the CSI volumes the node's
    VolumeAttachments attach, unique name to driver (those without an attacher, without a PV,
    whose PV is missing or whose PV is not a CSI one are passed over)."""
    out: dict[str, str] = {}
    for va in storage.attachments_on(node_name):
        if not va.attacher or not va.pv_name:
            continue
        pv = storage.pv(va.pv_name)
        if pv is None or pv.source != "csi":
            continue
        out[f"{va.attacher}/{pv.handle}"] = va.attacher
    return out


def _driver_info(
    storage: Storage,
    csinode: st.CSINode | None,
    claim: st.PersistentVolumeClaim,
    portworx_annotated: bool,
) -> tuple[str, str]:
    """Upstream ``getCSIDriverInfo`` / ``getCSIDriverInfoFromSC``."""
    pv = storage.pv(claim.volume_name) if claim.volume_name else None
    if pv is not None:
        csi = csi_m.pv_csi(pv)
        if csi is None:
            return "", ""
        plugin, driver, handle = csi
        if plugin and not csi_m.migration_on(
            csinode, plugin, portworx_annotated=portworx_annotated
        ):
            return "", ""
        if plugin and not csi_m.pv_translates(pv):  # logged upstream, not counted
            return "", ""
        return driver, handle
    if not claim.storage_class:
        return "", ""
    klass = storage.storage_class(claim.storage_class)
    if klass is None:
        return "", ""
    handle = f"{VOLUME_ID_PREFIX}-{claim.namespace}/{claim.name}"
    migrated = csi_m.in_tree_driver(klass.provisioner)
    if migrated is not None:
        if not csi_m.migration_on(
            csinode, klass.provisioner, portworx_annotated=portworx_annotated
        ):
            return "", ""
        return migrated, handle
    return klass.provisioner, handle


class NodeVolumeLimits:
    """Rejects nodes whose CSI attach limits the Pod's new volumes would exceed."""

    name = NAME
    locality = Locality.CLAIMS

    def __init__(self, args: object | None, handle: Handle) -> None:
        del args
        self.handle = handle
        # v1.34 and v1.35 ask the CSINode's annotation whether Portworx migrated; v1.36 not
        self._portworx_annotated = not handle.feature_gates.at_least("1.36")
        gates = handle.feature_gates
        self._limit_scaling = gates.at_least("1.35") and gates.enabled("VolumeLimitScaling")
        # v1.36+ asks the driver's opt-in (preventPodSchedulingIfMissing); v1.35 not
        self._opt_in = gates.at_least("1.36")
        self._token: tuple[Storage | None, int] = (None, -1)
        self._memo: dict[int, tuple[api.Pod, dict[str, str]]] = {}

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: Pods without volumes are all alike here; others are not reused."""
        return None if pod.volumes else ()

    def pre_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[PreFilterResult | None, Status]:
        """Skip a Pod with nothing to attach (module docstring)."""
        if any(
            v.kind in (api.VOLUME_PVC, api.VOLUME_EPHEMERAL) or csi_m.inline_migratable(v)
            for v in pod.volumes
        ):
            state[_KEY] = _Moved()
            return None, SUCCESS
        return None, SKIP

    def _move(self, state: CycleState, other: api.Pod, row: int, n: int) -> Status:
        s = state.get(_KEY)
        if not isinstance(s, _Moved) or not other.volumes:
            return SUCCESS
        if n > 0:
            state[_KEY] = replace(s, added=(*s.added, (row, other)))
        else:
            kept = tuple(a for a in s.added if a[1].key != other.key)
            removed = s.removed if len(kept) < len(s.added) else s.removed | {other.key}
            state[_KEY] = replace(s, added=kept, removed=removed)
        return SUCCESS

    def pre_filter_add_pod(
        self, state: CycleState, pod: api.Pod, other: api.Pod, row: int, cluster: ClusterState
    ) -> Status:
        """``other`` counts on node ``row`` for this cycle."""
        return self._move(state, other, row, 1)

    def pre_filter_remove_pod(
        self, state: CycleState, pod: api.Pod, other: api.Pod, row: int, cluster: ClusterState
    ) -> Status:
        """``other`` no longer counts on its node for this cycle."""
        return self._move(state, other, row, -1)

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """Upstream ``Filter`` for each node of ``rows`` (module docstring).

        Most nodes pass in one comparison over the storage observer's columns
        (:meth:`~kubesched.state.storage.Storage.attach_bounds`): a node whose volumes
        attached (counted without de-duplication, any driver) plus the new Pod's volumes are
        at most the smallest limit of its CSINode cannot exceed any limit.  Only the others,
        and nodes this cycle's AddPod put Pods on, are looked at one by one.

        What a Pod attaches depends on the node only through whether it has a CSINode
        (:func:`~kubesched.api.csimigration.migration_on`), and the new Pod's lookup errors
        not at all: so the new Pod's volumes are found once per call, and each Pod already
        on a node has its volumes found once while the storage objects stay as they are
        (:meth:`_attached`)."""
        codes = np.zeros(rows.shape[0], dtype=np.int8)
        table: dict[int, Status] = {1: _EXCEEDED}
        if not pod.volumes:
            return Verdict(codes, table)
        storage = storage_of(cluster)
        moved = state.get(_KEY)
        nodes = cluster.nodes.nodes
        try:
            attachable(storage, pod, None, True)  # the node-independent lookup errors
        except LookupError_ as err:
            for i, row in enumerate(rows.tolist()):
                if nodes[row] is not None:
                    table[2] = Status(err.code, (str(err),))
                    codes[i] = 2
            return Verdict(codes, table)
        refused = next(filter(None, map(csi_m.inline_translation_error, pod.volumes)), None)
        if refused is not None:  # upstream's translation fails on every node with a CSINode
            for i, row in enumerate(rows.tolist()):
                node = nodes[row]
                if node is not None and storage.csinode(node.name) is not None:
                    table[2] = Status(Code.ERROR, (refused,))
                    codes[i] = 2
            return Verdict(codes, table)
        bounds = storage.attach_bounds(rows)
        check = bounds.bound + len(pod.volumes) > bounds.floor
        if isinstance(moved, _Moved) and moved.added:
            check |= np.isin(rows, np.array([r for r, _ in moved.added], dtype=np.int64))
        required = self._required_drivers(storage)
        if required:  # any node may lack one of them, whatever its limits
            check[:] = True
        # the new Pod's volumes on a node with a CSINode: one answer unless the Pod has a
        # Portworx volume, whose migration depends on the CSINode's annotation
        on_csinode: dict[bool, dict[str, str]] = {}
        without_csinode: dict[None, dict[str, str]] = {}  # the new Pod's volumes off CSINodes
        for i in np.flatnonzero(check).tolist():
            row = int(rows[i])
            node = nodes[row]
            if node is None:
                continue
            csinode = storage.csinode(node.name)
            if csinode is None:
                if required:
                    if None not in without_csinode:
                        without_csinode[None] = attachable(storage, pod, None, True)
                    missing = _missing_driver(without_csinode[None], required, None)
                    if missing is not None:
                        codes[i] = _code(table, _not_installed(missing))
                continue
            portworx = csinode.migrated(csi_m.PORTWORX)
            if portworx not in on_csinode:
                on_csinode[portworx] = attachable(
                    storage, pod, csinode, True, portworx_annotated=self._portworx_annotated
                )
            if not on_csinode[portworx]:
                continue
            if required:
                missing = _missing_driver(on_csinode[portworx], required, csinode)
                if missing is not None:
                    codes[i] = _code(table, _not_installed(missing))
                    continue
            limits = {d: c for d, c in csinode.drivers.items() if c is not None}
            if not limits:
                continue
            new_volumes = dict(on_csinode[portworx])
            try:
                attached: dict[str, str] = {}
                for other in _pods_on(storage, row, moved):
                    attached.update(self._attached(storage, other, csinode))
            except LookupError_ as err:
                codes[i] = _code(table, Status(err.code, (str(err),)))
                continue
            count: dict[str, int] = {}
            for unique, driver in attached.items():
                new_volumes.pop(unique, None)
                count[driver] = count.get(driver, 0) + 1
            for unique, driver in attachments(storage, node.name).items():
                if unique not in attached:  # not the new Pod's: upstream keeps those new
                    count[driver] = count.get(driver, 0) + 1
            wanted: dict[str, int] = {}
            for driver in new_volumes.values():
                wanted[driver] = wanted.get(driver, 0) + 1
            if any(
                driver in limits and count.get(driver, 0) + n > limits[driver]
                for driver, n in wanted.items()
            ):
                codes[i] = 1
        return Verdict(codes, table)

    def _required_drivers(self, storage: Storage) -> frozenset[str]:
        """VolumeLimitScaling's drivers that must be on a node to take a new volume of theirs
        (``checkCSIDriverOnNode``): v1.35 every driver with a CSIDriver object, v1.36 and
        v1.37 those whose CSIDriver sets ``preventPodSchedulingIfMissing``; none with the
        gate off."""
        if not self._limit_scaling:
            return frozenset()
        return frozenset(
            d.name
            for d in storage.csidrivers()
            if d.prevent_scheduling_if_missing or not self._opt_in
        )

    def _attached(self, storage: Storage, pod: api.Pod, csinode: st.CSINode) -> dict[str, str]:
        """:func:`attachable` of a Pod already on a node with a CSINode, remembered per Pod
        while ``storage`` has the same objects and assumes nothing (its ``version`` counts
        every change of a storage object; an assumed PV or claim is not counted there, so
        nothing is remembered while there is one).  Callers must not change the result."""
        if storage.assumed_pvs or storage.assumed_pvcs:
            return attachable(
                storage, pod, csinode, False, portworx_annotated=self._portworx_annotated
            )
        token = self._token
        if token[0] is not storage or token[1] != storage.version or len(self._memo) > MEMO_MAX:
            self._token = (storage, storage.version)
            self._memo = {}
        hit = self._memo.get(id(pod))
        if hit is not None and hit[0] is pod:
            return hit[1]
        found = attachable(
            storage, pod, csinode, False, portworx_annotated=self._portworx_annotated
        )
        self._memo[id(pod)] = (pod, found)
        return found

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """CSINode/Add, and hinted CSINode/Update, Pod/Delete (v1.37+ AssignedPod/Delete),
        PVC/Add and VolumeAttachment/Delete."""
        pods = Resource.ASSIGNED_POD if self.handle.feature_gates.at_least("1.37") else Resource.POD
        return [
            ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_NODE, ActionType.UPDATE),
                is_schedulable_after_csinode_update,
            ),
            ClusterEventWithHint(
                ClusterEvent(pods, ActionType.DELETE), is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                is_schedulable_after_claim_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.VOLUME_ATTACHMENT, ActionType.DELETE),
                is_schedulable_after_attachment_deleted,
            ),
        ]


def _code(table: dict[int, Status], status: Status) -> int:
    """The code of ``status`` in a verdict's ``table``, added when new."""
    code = next((c for c, s in table.items() if s == status), len(table) + 1)
    table[code] = status
    return code


def _not_installed(driver: str) -> Status:
    return Status(Code.UNSCHEDULABLE, (f"{driver} CSI driver is not installed on the node",))


def _missing_driver(
    new_volumes: dict[str, str], required: frozenset[str], csinode: st.CSINode | None
) -> str | None:
    """The first driver of ``new_volumes`` (in the Pod's volume order) that must be
    installed and that ``csinode`` does not list.  Upstream walks its Go map of them, an
    order Go does not fix; it named the Pod's first such volume's driver in each of 12
    asks of a case with two (v1.36 storage seed 1 case 23), so that is the answer taken."""
    listed = csinode.drivers if csinode is not None else {}
    for driver in new_volumes.values():
        if driver in required and driver not in listed:
            return driver
    return None


def _pods_on(storage: Storage, row: int, moved: Any) -> list[api.Pod]:
    pods = storage.pods_on(row)
    if isinstance(moved, _Moved):
        if moved.removed:
            pods = [p for p in pods if p.key not in moved.removed]
        pods.extend(p for r, p in moved.added if r == row)
    return pods


def is_schedulable_after_pod_deleted(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the deleted Pod was on a node (or nominated) with a claim, an ephemeral
    volume or a migratable inline volume."""
    del pod, new
    if not isinstance(old, api.Pod):
        return QueueingHint.QUEUE
    if not old.volumes or (not old.node_name and not old.nominated_node_name):
        return QueueingHint.QUEUE_SKIP
    if any(
        v.kind in (api.VOLUME_PVC, api.VOLUME_EPHEMERAL) or csi_m.inline_migratable(v)
        for v in old.volumes
    ):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_claim_added(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the added claim is one the Pod names (directly or as its ephemeral)."""
    del old
    if not isinstance(new, dict):
        return QueueingHint.QUEUE
    meta = new.get("metadata") or {}
    if (meta.get("namespace") or "default") != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    name = meta.get("name")
    for v in pod.volumes:
        if v.kind == api.VOLUME_PVC and v.claim == name:
            return QueueingHint.QUEUE
        if v.kind == api.VOLUME_EPHEMERAL and ephemeral_claim_name(pod, v) == name:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def new(args: object | None, handle: Handle) -> NodeVolumeLimits:
    """Factory; NodeVolumeLimits has no args."""
    return NodeVolumeLimits(args, handle)


def is_schedulable_after_csinode_update(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Upstream ``isSchedulableAfterCSINodeUpdated``: Queue when a driver's
    ``allocatable.count`` grew (an absent count or driver counts 0)."""
    del pod
    if not isinstance(old, dict) or not isinstance(new, dict):
        return QueueingHint.QUEUE
    before = {d: count or 0 for d, count in st.parse_csinode(old).drivers.items()}
    for driver, count in st.parse_csinode(new).drivers.items():
        if (count or 0) > before.get(driver, 0):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_attachment_deleted(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Upstream ``isSchedulableAfterVolumeAttachmentDeleted``: Queue when the Pod has a
    claim, or an inline in-tree volume (Azure File and vSphere included) whose CSI driver is
    the deleted attachment's attacher (a volume that does not translate is an error:
    Queue)."""
    del new
    if not isinstance(old, dict):
        return QueueingHint.QUEUE
    attacher = st.parse_attachment(old).attacher
    for v in pod.volumes:
        if v.kind == api.VOLUME_PVC:
            return QueueingHint.QUEUE
        if not csi_m.inline_migratable(v):
            continue
        translated = csi_m.inline_csi(v)
        if csi_m.inline_translation_error(v) is not None or translated is None:
            return QueueingHint.QUEUE
        if translated[1] == attacher:
            return QueueingHint.QUEUE
    # Upstream's translator also takes inline Azure File and vSphere volumes (which no
    # volume plugin counts, so the Pod's volumes keep neither): read as the Pod has them.
    drivers = {kind: csi_m.IN_TREE_PLUGINS[kind][1] for kind in _OTHER_INLINE}
    for volume in (pod.raw.get("spec") or {}).get("volumes") or []:
        for kind in _OTHER_INLINE:
            if isinstance(volume, dict) and kind in volume and drivers[kind] == attacher:
                return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


_OTHER_INLINE = ("azureFile", "vsphereVolume")
