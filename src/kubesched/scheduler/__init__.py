"""The serial scheduler: one scheduling cycle at a time, binding cycles handed off.

:class:`Scheduler` reads like upstream ``schedule_one.go``; its parts live in small modules:
``core`` (the cycle and the parts it owns), ``handlers`` (informer events), ``algorithm``
(finding the node, result reuse), ``commit`` (assume, Reserve, Permit, hold or bind, and
each undo: the one commit step the parallel shards, binder and live coordinator use too),
``waiting`` (Pods held at Permit), ``failures`` (PostFilter, recorded reasons, requeue) and
``types`` (results and ``FitError``).
"""

from kubesched.scheduler.core import Scheduler
from kubesched.scheduler.options import SchedulerOptions
from kubesched.scheduler.types import (
    NO_NODES_AVAILABLE,
    NOTE_LENGTH_LIMIT,
    POD_REASON_SCHEDULER_ERROR,
    POD_REASON_UNSCHEDULABLE,
    Diagnosis,
    FitError,
    NoNodesError,
    ScheduleResult,
    num_feasible_nodes_to_find,
    rejected_on_node,
    truncate_message,
)

__all__ = [
    "NOTE_LENGTH_LIMIT",
    "NO_NODES_AVAILABLE",
    "POD_REASON_SCHEDULER_ERROR",
    "POD_REASON_UNSCHEDULABLE",
    "Diagnosis",
    "FitError",
    "NoNodesError",
    "ScheduleResult",
    "Scheduler",
    "SchedulerOptions",
    "num_feasible_nodes_to_find",
    "rejected_on_node",
    "truncate_message",
]
