"""VolumeZone: a Pod's bound volumes' zone and region labels must match the node's (upstream
v1.34 ``volumezone/volume_zone.go``, queueing hints on).

- PreFilter: for each ``persistentVolumeClaim`` of the Pod: the claim must exist; an unbound
  one needs a class (``PersistentVolumeClaim had no pv name and storageClass name``) that
  exists, and is passed over when the class is ``WaitForFirstConsumer`` (else
  ``PersistentVolume had no name``); a bound one's PV must exist.  Every failure is
  UnschedulableAndUnresolvable (NotFound errors read ``persistentvolumeclaim "x" not found``,
  ``storageclass.storage.k8s.io "x" not found``, ``persistentvolume "x" not found``).  The PVs'
  topology labels (``failure-domain.beta.kubernetes.io/zone|region``,
  ``topology.kubernetes.io/zone|region``; values split on ``__``, a value with an empty zone
  ignored) are kept; none: Skip.
- Filter: a node with none of those labels passes; else each kept label must be on the node
  (the beta key or its GA twin) with one of the values, or ``node(s) had no available
  volume zone`` (UnschedulableAndUnresolvable).
- Queueing hints: a claim the Pod names added or updated, a ``WaitForFirstConsumer`` class
  added, a PersistentVolume added or its topology labels changed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

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
)
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import NodeTable
from kubesched.state.storage import Storage, storage_of

NAME = names.VOLUME_ZONE
ERR_REASON_CONFLICT = "node(s) had no available volume zone"
_KEY = "PreFilter" + NAME
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_REGION: REGION, BETA_ZONE: ZONE}
_CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,))

BoolArray = npt.NDArray[np.bool_]
Topology = tuple[str, str, frozenset[str]]
"""``(pv name, label key, values)`` of one PV label."""


def pv_topologies(pv: st.PersistentVolume) -> list[Topology]:
    """Upstream ``getPVTopologies``: the PV's topology labels, values split on ``__``."""
    out = []
    for key in TOPOLOGY_LABELS:
        value = pv.labels.get(key)
        if value is not None:
            zones = [z.strip() for z in value.split("__")]
            if "" in zones:  # upstream's LabelZonesToSet fails on an empty zone: ignored
                continue
            out.append((pv.name, key, frozenset(zones)))
    return out


def _unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))


def pod_topologies(storage: Storage, pod: api.Pod) -> tuple[list[Topology], Status]:
    """Upstream ``getPVbyPod`` (module docstring)."""
    out: list[Topology] = []
    for v in pod.volumes:
        if v.kind != api.VOLUME_PVC:
            continue
        if not v.claim:
            return [], _unresolvable("PersistentVolumeClaim had no name")
        claim = storage.pvc(pod.namespace, v.claim)
        if claim is None:
            return [], _unresolvable(f'persistentvolumeclaim "{v.claim}" not found')
        if not claim.volume_name:
            if not claim.storage_class:
                return [], _unresolvable(
                    "PersistentVolumeClaim had no pv name and storageClass name"
                )
            klass = storage.storage_class(claim.storage_class)
            if klass is None:
                message = f'storageclass.storage.k8s.io "{claim.storage_class}" not found'
                return [], _unresolvable(message)
            if klass.binding_mode == st.WAIT_FOR_FIRST_CONSUMER:
                continue
            return [], _unresolvable("PersistentVolume had no name")
        pv = storage.pv(claim.volume_name)
        if pv is None:
            return [], _unresolvable(f'persistentvolume "{claim.volume_name}" not found')
        out.extend(pv_topologies(pv))
    return out, SUCCESS


def zones_admit(table: NodeTable, topologies: list[Topology], rows: IntArray) -> BoolArray:
    """Whether each node of ``rows`` (int64 ``(k,)``) admits the PV ``topologies``, bool
    ``(k,)``, from the node table's interned label columns: a row without a node or without
    any topology label does; else each topology's key must be on the node (its beta key's
    GA twin where the beta one is missing) with one of the values."""
    alive = table.alive[rows]
    labelled = np.zeros(rows.shape[0], dtype=np.bool_)
    for key in TOPOLOGY_LABELS:
        labelled |= table.label_column(key)[rows] >= 0
    ok = np.ones(rows.shape[0], dtype=np.bool_)
    for _pv, key, values in topologies:
        col = table.label_column(key)[rows]
        this = np.isin(col, [table.label_code(key, v) for v in values])
        twin = _GA.get(key, key)
        if twin != key:
            on_twin = table.label_column(twin)[rows]
            this |= (col < 0) & np.isin(on_twin, [table.label_code(twin, v) for v in values])
        ok &= this
    result: BoolArray = ~alive | ~labelled | ok
    return result


class VolumeZone:
    """Rejects nodes outside the zones and regions of the Pod's bound volumes."""

    name = NAME
    locality = Locality.CLAIMS

    def __init__(self, args: object | None, handle: Handle) -> None:
        del args
        self.handle = handle

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: Pods without volumes are all alike here; others are not reused."""
        return None if pod.volumes else ()

    def pre_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[PreFilterResult | None, Status]:
        """Keep the PVs' topologies, or Skip (module docstring)."""
        if not pod.volumes:
            return None, SKIP
        topologies, status = pod_topologies(storage_of(cluster), pod)
        if not status.is_success():
            return None, status
        if not topologies:
            return None, SKIP
        state[_KEY] = topologies
        return None, SUCCESS

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """Each node of ``rows`` against the kept topologies (module docstring)."""
        codes = np.zeros(rows.shape[0], dtype=np.int8)
        table: dict[int, Status] = {1: _CONFLICT}
        if not pod.volumes:
            return Verdict(codes, table)
        topologies = state.get(_KEY)
        if topologies is None:
            topologies, status = pod_topologies(storage_of(cluster), pod)
            if not status.is_success():
                codes[:] = 2
                return Verdict(codes, {2: status})
        if topologies:
            codes[~zones_admit(cluster.nodes, topologies, rows)] = 1
        return Verdict(codes, table)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """StorageClass/Add, Node/Add|UpdateNodeLabel, PVC/Add|Update and PV/Add|Update
        (all but the Node's hinted)."""
        update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.STORAGE_CLASS, ActionType.ADD), is_schedulable_after_class
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, update), is_schedulable_after_claim
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME, update), is_schedulable_after_volume_change
            ),
        ]


def is_schedulable_after_claim(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the claim is one the Pod names."""
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


def is_schedulable_after_class(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the added class is ``WaitForFirstConsumer``."""
    del pod, old
    if not isinstance(new, dict):
        return QueueingHint.QUEUE
    if new.get("volumeBindingMode") == st.WAIT_FOR_FIRST_CONSUMER:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_volume_change(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Upstream ``isSchedulableAfterPersistentVolumeChange``: a new PersistentVolume may
    help; an updated one when its topology labels (:func:`pv_topologies`) changed."""
    del pod
    if not isinstance(old, dict) or not isinstance(new, dict):
        return QueueingHint.QUEUE
    if pv_topologies(st.parse_pv(old)) != pv_topologies(st.parse_pv(new)):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def new(args: object | None, handle: Handle) -> VolumeZone:
    """Factory; VolumeZone has no args."""
    return VolumeZone(args, handle)
