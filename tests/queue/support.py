"""Shared fixtures for the queue tests: a fake clock, PrioritySort, a SchedulingGates stand-in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kubesched.api import objects as api
from kubesched.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    QueuedPodInfo,
    QueueingHint,
    Resource,
    Status,
)
from kubesched.queue.scheduling_queue import SchedulingQueue

T0 = 1000.0
NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD)
POD_LABEL = ClusterEvent(Resource.POD, ActionType.UPDATE_POD_LABEL)
GATES_GONE = ClusterEvent(Resource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
FIT = "NodeResourcesFit"
GATES = "SchedulingGates"


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def prio_sort(qp: QueuedPodInfo) -> tuple[Any, ...]:
    return (-qp.pod.priority, qp.timestamp)


class GatesPlugin:
    name = GATES

    def pre_enqueue(self, pod: api.Pod) -> Status:
        if pod.scheduling_gates:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for gates",))
        return Status()


def hint(answer: QueueingHint) -> Callable[[Any, Any, Any], QueueingHint]:
    return lambda pod, old, new: answer


QUEUE, SKIP = hint(QueueingHint.QUEUE), hint(QueueingHint.QUEUE_SKIP)


def make_queue(
    clock: Clock,
    registered: dict[str, Sequence[tuple[ClusterEvent, Any]]] | None = None,
    **kw: Any,
) -> SchedulingQueue:
    reg = registered if registered is not None else {FIT: [(NODE_ADD, QUEUE)]}
    hints = {p: [ClusterEventWithHint(e, f) for e, f in r] for p, r in reg.items()}
    hints.setdefault(GATES, [ClusterEventWithHint(GATES_GONE, QUEUE)])
    return SchedulingQueue(
        clock=clock,
        sort_key=prio_sort,
        pre_enqueue={api.DEFAULT_SCHEDULER_NAME: [GatesPlugin()]},
        hints={api.DEFAULT_SCHEDULER_NAME: hints},
        **kw,
    )


def fail(q: SchedulingQueue, qp: QueuedPodInfo, *plugins: str, pending: bool = False) -> None:
    (qp.pending_plugins if pending else qp.unschedulable_plugins).update(plugins)
    q.add_unschedulable_if_not_present(qp, q.scheduling_cycle)


def names(q: SchedulingQueue) -> list[str]:
    out = []
    while (qp := q.pop()) is not None:
        out.append(qp.pod.name)
    return out


class QuotaGate:
    """A PreEnqueue plugin that keeps gating and reacts to any event (wildcard)."""

    name = "Quota"

    def pre_enqueue(self, pod: api.Pod) -> Status:
        return Status(Code.UNSCHEDULABLE, ("quota exhausted",))


def quota_gated_queue(clock: Clock) -> SchedulingQueue:
    """A queue whose only PreEnqueue plugin, :class:`QuotaGate`, gates every Pod."""
    wildcard = ClusterEvent(Resource.WILDCARD, ActionType.ALL)
    return SchedulingQueue(
        clock=clock,
        sort_key=prio_sort,
        pre_enqueue={api.DEFAULT_SCHEDULER_NAME: [QuotaGate()]},
        hints={api.DEFAULT_SCHEDULER_NAME: {"Quota": [ClusterEventWithHint(wildcard)]}},
    )
