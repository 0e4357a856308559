"""NodeUnschedulable: filters cordoned nodes (``spec.unschedulable``).

Upstream ``nodeunschedulable/node_unschedulable.go`` (v1.34, QueueingHints enabled): a node
with ``spec.unschedulable: true`` fails with UnschedulableAndUnresolvable
``node(s) were unschedulable`` unless the Pod tolerates the
``node.kubernetes.io/unschedulable:NoSchedule`` taint.  Requeued by a Node add that is
schedulable, a Node update that un-cordons, or the Pod gaining that toleration.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework.contract import Locality
from kubesched.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    IntArray,
    QueueingHint,
    Resource,
    Status,
    Verdict,
)
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import BoolArray

NAME = names.NODE_UNSCHEDULABLE
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"

_UNSCHEDULABLE_TAINT = api.Taint(TAINT_NODE_UNSCHEDULABLE, "", api.NO_SCHEDULE)
_any = np.logical_or.reduce
"""Whether a bool array holds a True (``a.any()`` without its Python wrapper)."""
_STATUS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_UNSCHEDULABLE,))


class NodeUnschedulable:
    """Rejects cordoned nodes for Pods that don't tolerate the unschedulable taint."""

    name = NAME
    locality = Locality.NODE_LOCAL
    node_only = True
    """Answers depend on the node object only, not on the Pods placed on it."""

    def __init__(self, args: object | None, handle: Handle) -> None:
        self.handle = handle

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: the answer depends on the Pod's tolerations only."""
        return pod.tolerations

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """Fail rows whose ``unschedulable`` flag is set, unless the Pod tolerates it."""
        if tolerates_unschedulable(pod.tolerations):
            return Verdict.all_pass(rows.shape[0])
        if rows.shape[0] == 1 and not cluster.nodes.unschedulable[rows[0]]:
            return Verdict.all_pass(1)  # one schedulable node: no mask to make
        cordoned = cluster.nodes.unschedulable.take(rows)
        if not _any(cordoned):  # the common case: no codes to make
            return Verdict.all_pass(rows.shape[0])
        return Verdict.from_mask(cordoned, _STATUS)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Node/Add|UpdateNodeTaint and Pod/UpdatePodToleration, both hinted (v1.37+:
        TargetPod/UpdatePodToleration, the queued Pod's own update: no same-Pod check)."""
        if self.handle.feature_gates.at_least("1.37"):
            pods, pod_hint = Resource.TARGET_POD, is_schedulable_after_target_pod_toleration_change
        else:
            pods, pod_hint = Resource.POD, is_schedulable_after_pod_toleration_change
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(ClusterEvent(pods, ActionType.UPDATE_POD_TOLERATION), pod_hint),
        ]


# --------------------------------------------------------------------------- queueing hints
def is_schedulable_after_node_change(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when a schedulable node is added, or a node flips to schedulable."""
    if not isinstance(new, api.Node) or (old is not None and not isinstance(old, api.Node)):
        return QueueingHint.QUEUE
    if new.unschedulable:
        return QueueingHint.QUEUE_SKIP
    if old is None or old.unschedulable:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_pod_toleration_change(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when ``pod`` itself now tolerates the unschedulable taint."""
    if not isinstance(new, api.Pod):
        return QueueingHint.QUEUE
    if _same_pod(pod, new) and tolerates_unschedulable(new.tolerations):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_target_pod_toleration_change(
    pod: api.Pod, old: Any, new: Any
) -> QueueingHint:
    """v1.37+: Queue when the queued Pod now tolerates the unschedulable taint."""
    del pod, old
    if not isinstance(new, api.Pod):
        return QueueingHint.QUEUE
    if tolerates_unschedulable(new.tolerations):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _same_pod(a: api.Pod, b: api.Pod) -> bool:
    # Upstream compares UIDs; Pods built without one fall back to namespace/name.
    if a.uid or b.uid:
        return a.uid == b.uid
    return a.key == b.key


# --------------------------------------------------------------------------- kernel
def tolerates_unschedulable(tolerations: tuple[api.Toleration, ...]) -> bool:
    """Whether ``tolerations`` tolerate ``node.kubernetes.io/unschedulable:NoSchedule``."""
    return any(t.tolerates(_UNSCHEDULABLE_TAINT) for t in tolerations)


def unschedulable_mask(cluster: ClusterState, rows: IntArray) -> BoolArray:
    """bool array of shape ``(n,)``: True where the node at ``rows[i]`` is cordoned."""
    return np.asarray(cluster.nodes.unschedulable[rows], dtype=np.bool_)


def new(args: object | None, handle: Handle) -> NodeUnschedulable:
    """Factory; NodeUnschedulable has no args (anything given is ignored, as upstream)."""
    return NodeUnschedulable(args, handle)
