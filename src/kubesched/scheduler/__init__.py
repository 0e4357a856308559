"""The serial scheduler: one scheduling cycle at a time, binding cycles handed off.

:class:`Scheduler` (``core``: the informer events and the cycle) reads like upstream
``schedule_one.go`` and owns its parts as objects: the search in stages (``search``), the
commit step (``commit``: assume, Reserve, Permit, hold or bind, and each undo; the parallel
shards, binder and live coordinator commit through it too), the Pods held at Permit
(``waiting``) and failure handling (``failures``: PostFilter, recorded reasons, requeue).
``options`` is the frozen :class:`SchedulerOptions` every kind of scheduler reads, ``types``
the results and ``FitError``.  The search's result reuse lives beside it: across equivalent
Pods (``batch``) and kept static failures (``verdicts``).  The configured HTTP extenders
(``extenders``: filter, prioritize, bind and preempt over a cycle's candidate nodes;
``extender``: one extender's wire format; ``extender_transport``: its connections) live here
too, as upstream keeps them in ``pkg/scheduler``; preemption reaches them through the
framework's ``PreemptionExtenders`` contract.

Imports the rooms below it (``queue``, ``plugins``, ``framework``, ``state``, ``config``,
``metrics``, ``api``, ...); never ``explainer`` or above.
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
