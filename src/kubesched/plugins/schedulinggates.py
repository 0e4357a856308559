"""SchedulingGates: the PreEnqueue plugin that holds Pods with ``spec.schedulingGates``.

Upstream ``schedulinggates/scheduling_gates.go`` (v1.34, QueueingHints enabled): a Pod with
gates is refused entry to the activeQ with UnschedulableAndUnresolvable and the message
``waiting for scheduling gates: [a b]`` (Go's ``%v`` of a string slice); an update of that
same Pod which removes gates requeues it.
"""

from __future__ import annotations

from typing import Any

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework.interface import (
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    Handle,
    QueueingHint,
    Resource,
    Status,
)

NAME = names.SCHEDULING_GATES
REASON_PREFIX = "waiting for scheduling gates: "


class SchedulingGates:
    """Keeps gated Pods out of the activeQ until their gates are removed."""

    name = NAME

    def __init__(self, args: object | None, handle: Handle) -> None:
        self.handle = handle

    def pre_enqueue(self, pod: api.Pod) -> Status:
        """Success without gates; UnschedulableAndUnresolvable listing them otherwise."""
        if not pod.scheduling_gates:
            return SUCCESS
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (gates_message(pod.scheduling_gates),))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pod/UpdatePodSchedulingGatesEliminated, hinted to the gated Pod itself (v1.37+:
        TargetPod/UpdatePodSchedulingGatesEliminated, only the Pod's own update: Queue)."""
        if self.handle.feature_gates.at_least("1.37"):
            target = ClusterEvent(
                Resource.TARGET_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
            )
            return [ClusterEventWithHint(target)]
        event = ClusterEvent(Resource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
        return [ClusterEventWithHint(event, is_schedulable_after_gates_eliminated)]


# --------------------------------------------------------------------------- queueing hints
def is_schedulable_after_gates_eliminated(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue only when the updated Pod is ``pod`` itself (upstream compares UIDs)."""
    if not isinstance(new, api.Pod):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE if _same_pod(pod, new) else QueueingHint.QUEUE_SKIP


def _same_pod(a: api.Pod, b: api.Pod) -> bool:
    # Upstream compares UIDs; Pods built without one fall back to namespace/name.
    if a.uid or b.uid:
        return a.uid == b.uid
    return a.key == b.key


# --------------------------------------------------------------------------- kernel
def gates_message(gates: tuple[str, ...] | list[str]) -> str:
    """``waiting for scheduling gates: [g1 g2]``, byte-identical to upstream."""
    return f"{REASON_PREFIX}[{' '.join(gates)}]"


def new(args: object | None, handle: Handle) -> SchedulingGates:
    """Factory; SchedulingGates has no args (anything given is ignored, as upstream)."""
    return SchedulingGates(args, handle)
