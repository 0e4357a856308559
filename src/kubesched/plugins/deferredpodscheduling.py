"""DeferredPodScheduling: a Pod whose in-place resize the kubelet deferred is checked only for
the resize, on its own node.

Upstream ``deferredpodscheduling/deferred_pod_scheduling.go`` (v1.37, alpha gate
``InPlacePodVerticalScalingSchedulerPreemption``, off by default; the default profile lists it
just before NodeResourcesFit under the gate: :mod:`kubesched.config.defaults`).  A Pod is
*resize-deferred* when its first ``PodResizePending`` condition has reason ``Deferred``
(:attr:`~kubesched.api.objects.Pod.resize_deferred`).  With the gate on, for such a Pod:

- PreFilter Skips every other Pod (and every Pod with the gate off);
- Filter refuses a node other than the Pod's ``spec.nodeName`` (``pod assigned to different
  node``) and a node whose ``spec.podPreemptionPolicy.disableResizePreemption`` names anyone
  (``node had resize preemption disabled``), both UnschedulableAndUnresolvable;
- Permit rejects the Pod (UnschedulableAndUnresolvable ``pod resize fits, waiting for Kubelet
  actuation``): it waits until the kubelet actuates the resize;
- requeued by its own node added without the policy, or its node's policy lifted
  (``Node/Add``, ``Node/UpdateNodePreemptionPolicy``, hinted).

The other upstream changes under the gate live where their plugins do: the filter plugins
that Skip such a Pod (:data:`kubesched.config.names.RESIZE_DEFERRED_SKIPPED`, applied by the
framework's PreFilter), VolumeBinding's PreScore and DynamicResources' Score (an Error: the
state of the PreFilter they Skipped is missing, as upstream's), DynamicResources' PostFilter
(Unschedulable at once).  Not modelled: upstream queues a *bound* resize-deferred Pod again
(its event handlers), where NodeResourcesFit counts only what the Pod asks beyond what its
node already counts for it and the failure handler keeps it queued without a condition;
kubesched never queues a bound Pod (``docs/fidelity.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.config.featuregates import RESIZE_PREEMPTION
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

NAME = names.DEFERRED_POD_SCHEDULING
GATE = RESIZE_PREEMPTION
ERR_REASON_OTHER_NODE = "pod assigned to different node"
ERR_REASON_DISABLED = "node had resize preemption disabled"
PERMIT_REASON = "pod resize fits, waiting for Kubelet actuation"

_OTHER_NODE = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_OTHER_NODE,))
_DISABLED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_DISABLED,))
_PERMIT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (PERMIT_REASON,))


class DeferredPodScheduling:
    """Checks a resize-deferred Pod against its own node only (module docstring)."""

    name = NAME
    locality = Locality.NODE_LOCAL
    node_only = True
    """Answers depend on the Pod's node name and the Node object only."""

    def __init__(self, args: object | None, handle: Handle) -> None:
        del args
        self.handle = handle
        self.enabled = handle.feature_gates.enabled(GATE)
        """The gate: off, every Pod is Skipped and passes (upstream's plugin does the same)."""

    def deferred(self, pod: api.Pod) -> bool:
        """Whether this plugin checks ``pod``: the gate on and its resize deferred."""
        return self.enabled and pod.resize_deferred

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: the answer depends on the deferral and ``spec.nodeName`` only (the
        framework reuses nothing for a resize-deferred Pod anyway)."""
        return (pod.node_name,) if self.deferred(pod) else ()

    def pre_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[PreFilterResult | None, Status]:
        """Skip every Pod but a resize-deferred one."""
        del state, cluster
        return None, (SUCCESS if self.deferred(pod) else SKIP)

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """A node other than the Pod's own, then a node with resize preemption disabled:
        UnschedulableAndUnresolvable (upstream's order)."""
        del state
        n = rows.shape[0]
        if not self.deferred(pod):
            return Verdict.all_pass(n)
        table = cluster.nodes
        codes = np.zeros(n, dtype=np.int8)
        for i, row in enumerate(rows.tolist()):
            name = table.names[row]
            if pod.node_name and pod.node_name != name:
                codes[i] = 1
                continue
            node = cluster.node(name)
            if node is not None and node.resize_preemption_disabled:
                codes[i] = 2
        return Verdict(codes, {1: _OTHER_NODE, 2: _DISABLED})

    def permit(self, state: CycleState, pod: api.Pod, node: str) -> tuple[Status, float | None]:
        """Reject a resize-deferred Pod that fits: the kubelet actuates its resize."""
        del state, node
        return (_PERMIT if self.deferred(pod) else SUCCESS), None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """``Node/UpdateNodePreemptionPolicy`` and ``Node/Add``, hinted."""
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_PREEMPTION_POLICY),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD), self.is_schedulable_after_node_add
            ),
        ]

    def is_schedulable_after_node_change(self, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
        """Queue a resize-deferred Pod when its own node's resize preemption was disabled and
        no longer is."""
        if not self.deferred(pod):
            return QueueingHint.QUEUE_SKIP
        if not isinstance(old, api.Node) or not isinstance(new, api.Node):
            return QueueingHint.QUEUE
        if pod.node_name != new.name:
            return QueueingHint.QUEUE_SKIP
        if old.resize_preemption_disabled and not new.resize_preemption_disabled:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_add(self, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
        """Queue a resize-deferred Pod when its own node is added with resize preemption
        allowed."""
        del old
        if not self.deferred(pod):
            return QueueingHint.QUEUE_SKIP
        if not isinstance(new, api.Node):
            return QueueingHint.QUEUE
        if pod.node_name != new.name or new.resize_preemption_disabled:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE


def new(args: object | None, handle: Handle) -> DeferredPodScheduling:
    """Factory; the plugin has no args (anything given is ignored, as upstream)."""
    return DeferredPodScheduling(args, handle)
