"""VolumeRestrictions: in-tree disk conflicts and ReadWriteOncePod claims (upstream v1.34
``volumerestrictions/volume_restrictions.go``, queueing hints on).

- PreFilter: a claim the Pod names must exist (``persistentvolumeclaim "x" not found``,
  UnschedulableAndUnresolvable); counts the Pod's ReadWriteOncePod claims some accounted Pod
  already uses; Skip when that count is 0 and the Pod has no GCE PD, AWS EBS, RBD or iSCSI
  volume.
- PreFilterExtensions: AddPod / RemovePod move that count (preemption's victims and
  nominated Pods), and the Pods seen on the node (upstream's copy of the NodeInfo).
- Filter: ``node(s) had no available disk`` where a Pod on the node uses the same disk
  (GCE PD unless both read-only, EBS, iSCSI unless both read-only, RBD with an overlapping
  monitor, same pool and image unless both read-only); else, when the count is positive,
  ``node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode
  already in-use by another pod`` on every node.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.api import storage as st
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
    error,
)
from kubesched.state.cache import ClusterState
from kubesched.state.storage import storage_of

NAME = names.VOLUME_RESTRICTIONS
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)
_KEY = "PreFilter" + NAME
_CHECKED = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")
_DISK = Status(Code.UNSCHEDULABLE, (ERR_REASON_DISK_CONFLICT,))
_RWOP = Status(Code.UNSCHEDULABLE, (ERR_REASON_RWOP_CONFLICT,))


@dataclass(frozen=True, slots=True)
class _State:
    """The Pod's ReadWriteOncePod claim names, how many of them accounted Pods use, and
    the Pods AddPod / RemovePod moved (``added`` by row, ``removed`` by key)."""

    rwop: frozenset[str]
    conflicts: int
    added: tuple[tuple[int, api.Pod], ...] = ()
    removed: frozenset[str] = field(default_factory=frozenset)


class VolumeRestrictions:
    """Rejects nodes where a disk is in use, and Pods whose RWOP claim is in use."""

    name = NAME
    locality = Locality.CLAIMS

    def __init__(self, args: object | None, handle: Handle) -> None:
        del args
        self.handle = handle

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: Pods without volumes are all alike here; others are not reused."""
        return None if pod.volumes else ()

    # ------------------------------------------------------------------ PreFilter
    def pre_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[PreFilterResult | None, Status]:
        """Upstream ``PreFilter`` (module docstring)."""
        if not pod.volumes:  # nothing to check: upstream's answer, without the lister
            return None, SKIP
        storage = storage_of(cluster)
        needs_check = any(v.kind in _CHECKED for v in pod.volumes)
        rwop: set[str] = set()
        for v in pod.volumes:
            if v.kind != api.VOLUME_PVC:
                continue
            claim = storage.pvc(pod.namespace, v.claim)
            if claim is None:
                message = f'persistentvolumeclaim "{v.claim}" not found'
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))
            if st.RWOP in claim.access_modes:
                rwop.add(claim.name)
        users = storage.claim_users
        conflicts = sum(1 for name in rwop if f"{pod.namespace}/{name}" in users)
        if not needs_check and conflicts == 0:
            return None, SKIP
        state[_KEY] = _State(frozenset(rwop), conflicts)
        return None, SUCCESS

    def _update(self, state: CycleState, pod: api.Pod, other: api.Pod, row: int, n: int) -> Status:
        s = state.get(_KEY)
        if not isinstance(s, _State):
            return error(f'cannot read "{_KEY}" from cycleState')
        # Upstream counts the other Pod's claims by name alone, whatever its namespace.
        more = sum(1 for v in other.volumes if v.kind == api.VOLUME_PVC and v.claim in s.rwop)
        if n > 0:
            s = replace(s, conflicts=s.conflicts + more, added=(*s.added, (row, other)))
        else:
            kept = tuple(a for a in s.added if a[1].key != other.key)
            removed = s.removed if len(kept) < len(s.added) else s.removed | {other.key}
            s = replace(s, conflicts=s.conflicts - more, added=kept, removed=removed)
        state[_KEY] = s
        return SUCCESS

    def pre_filter_add_pod(
        self, state: CycleState, pod: api.Pod, other: api.Pod, row: int, cluster: ClusterState
    ) -> Status:
        """Upstream ``AddPod``."""
        return self._update(state, pod, other, row, 1)

    def pre_filter_remove_pod(
        self, state: CycleState, pod: api.Pod, other: api.Pod, row: int, cluster: ClusterState
    ) -> Status:
        """Upstream ``RemovePod``."""
        return self._update(state, pod, other, row, -1)

    # ------------------------------------------------------------------ Filter
    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """Disk conflicts first, then the ReadWriteOncePod count (module docstring)."""
        s = state.get(_KEY)
        codes = np.zeros(rows.shape[0], dtype=np.int8)
        wanted = [v for v in pod.volumes if v.kind in _CHECKED]
        if wanted:
            on_node = pods_by_row(cluster, s)
            bad = [row for row, pods in on_node.items() if not satisfies(wanted, pods)]
            if bad:
                codes[np.isin(rows, np.asarray(bad, dtype=np.int64))] = 1
        if not isinstance(s, _State):
            codes[codes == 0] = 3
            return Verdict(codes, {1: _DISK, 3: error(f'cannot read "{_KEY}" from cycleState')})
        if s.conflicts > 0:
            codes[codes == 0] = 2
        return Verdict(codes, {1: _DISK, 2: _RWOP})

    # ------------------------------------------------------------------ events
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pod/Delete (hinted; v1.37+ AssignedPod/Delete), Node/Add, PVC/Add (hinted)."""
        pods = Resource.ASSIGNED_POD if self.handle.feature_gates.at_least("1.37") else Resource.POD
        return [
            ClusterEventWithHint(
                ClusterEvent(pods, ActionType.DELETE), is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                is_schedulable_after_claim_added,
            ),
        ]


def pods_by_row(cluster: ClusterState, s: Any) -> dict[int, list[api.Pod]]:
    """The Pods with volumes per node row, as the cycle sees them: the accounted ones, less
    those RemovePod took off, plus those AddPod put on (``s``: the PreFilter state)."""
    storage = storage_of(cluster)
    out = {row: list(pods.values()) for row, pods in storage.volume_pods.items()}
    if isinstance(s, _State):
        if s.removed:
            out = {row: [p for p in pods if p.key not in s.removed] for row, pods in out.items()}
        for row, other in s.added:
            out.setdefault(row, []).append(other)
    return out


def is_conflict(volume: api.Volume, other: api.Pod) -> bool:
    """Upstream ``isVolumeConflict``: ``volume`` conflicts with a volume of ``other``."""
    for e in other.volumes:
        if e.kind != volume.kind:
            continue
        both_ro = volume.read_only and e.read_only
        if volume.kind == "gcePersistentDisk" and e.ident == volume.ident and not both_ro:
            return True
        if volume.kind == "awsElasticBlockStore" and e.ident == volume.ident:
            return True
        if volume.kind == "iscsi" and e.ident == volume.ident and not both_ro:
            return True
        if (
            volume.kind == "rbd"
            and set(volume.monitors) & set(e.monitors)
            and volume.pool == e.pool
            and volume.ident == e.ident
            and not both_ro
        ):
            return True
    return False


def satisfies(wanted: list[api.Volume], pods: list[api.Pod]) -> bool:
    """Upstream ``satisfyVolumeConflicts`` of the Pod's checked volumes against ``pods``."""
    return not any(is_conflict(v, other) for v in wanted for other in pods)


# --------------------------------------------------------------------------- queueing hints
def is_schedulable_after_claim_added(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the added claim is one the Pod names."""
    del old
    if not isinstance(new, dict):
        return QueueingHint.QUEUE
    meta = new.get("metadata") or {}
    if (meta.get("namespace") or "default") != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    name = meta.get("name")
    if any(v.kind == api.VOLUME_PVC and v.claim == name for v in pod.volumes):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_pod_deleted(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the deleted Pod held a disk or a claim this Pod wants."""
    del new
    if not isinstance(old, api.Pod):
        return QueueingHint.QUEUE
    if old.namespace != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    wanted = [v for v in pod.volumes if v.kind in _CHECKED]
    if not satisfies(wanted, [old]):
        return QueueingHint.QUEUE
    claims = {v.claim for v in pod.volumes if v.kind == api.VOLUME_PVC}
    if any(v.kind == api.VOLUME_PVC and v.claim in claims for v in old.volumes):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def new(args: object | None, handle: Handle) -> VolumeRestrictions:
    """Factory; VolumeRestrictions has no args."""
    return VolumeRestrictions(args, handle)
