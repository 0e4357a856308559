"""The state every part of :class:`kubesched.scheduler.Scheduler` shares, declared once.

The scheduler is one class assembled from small modules (informer events, the algorithm,
waiting Pods, failure handling); this base names the attributes they use and the methods
one part calls on another, so each module type-checks on its own.  ``Scheduler.__init__``
sets them all.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

import numpy as np

from kubesched.api import objects
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework.batch import BatchCache
from kubesched.framework.extenders import Extenders
from kubesched.framework.interface import (
    ApiClient,
    CycleState,
    Handle,
    QueuedPodInfo,
    Status,
    WaitingPod,
)
from kubesched.framework.runtime import Framework
from kubesched.framework.verdicts import StaticFailures
from kubesched.metrics import SchedulerMetrics
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.state.cache import ClusterState

Waiting = tuple[Framework, CycleState, QueuedPodInfo, float, int, float]
"""A Pod held at Permit: its profile, cycle state, queue info, the wall seconds its attempt
has taken so far (the wait itself does not count, see :func:`resume`), cycle, wait start
(scheduler clock)."""


def resume(spent: float) -> float:
    """A ``start`` for an attempt that resumes now after ``spent`` wall seconds of its own
    work: ``time.perf_counter() - start`` then counts that work and what follows, not the
    pause between (other Pods' cycles, the simulator's virtual latencies and ``--pace``
    sleeps, the queue of the binding thread)."""
    return time.perf_counter() - spent


class SchedulerBase:
    """Attributes and cross-part methods of the scheduler (see the module docstring)."""

    config: KubeSchedulerConfiguration
    clock: Callable[[], float]
    api: ApiClient | None
    cluster: ClusterState
    metrics: SchedulerMetrics
    rng: np.random.Generator
    submit_binding: Callable[[Callable[[], None]], None]
    handle: Handle
    extenders: Extenders | None
    profiles: dict[str, Framework]
    queue: SchedulingQueue
    batch: BatchCache
    static_failures: StaticFailures
    next_start_node_index: int
    last_search_nodes: int
    attempts: Counter[str]
    pod_attempts: Counter[str]
    unreadable: dict[str, str]
    failures: dict[str, tuple[str, str]]
    preemptions: dict[str, tuple[str, tuple[str, ...]]]
    preempted_by: dict[str, str]
    in_flight_bindings: int
    _waiting: dict[str, Waiting]
    _decided: deque[WaitingPod]
    _sampled: dict[str, Framework]
    _event_timer: Callable[[float, str], None]

    def responsible_for(self, pod: objects.Pod) -> bool:
        raise NotImplementedError

    def _drain_waiting(self) -> None:
        raise NotImplementedError

    def _fail(self, fwk: Framework, qp: QueuedPodInfo, why: Any, cycle: int, start: float) -> None:
        raise NotImplementedError

    def _requeue_after_forget(self, assumed: objects.Pod, status: Status) -> None:
        raise NotImplementedError

    def _binding_cycle(
        self,
        fwk: Framework,
        state: CycleState,
        qp: QueuedPodInfo,
        assumed: objects.Pod,
        start: float,
        cycle: int,
    ) -> None:
        raise NotImplementedError
