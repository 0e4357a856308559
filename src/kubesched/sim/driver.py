"""Wires the real scheduler to the simulated API server in virtual time.

The scheduler is one simulated process: each scheduling attempt costs ``cycle_seconds`` of
virtual time (a deterministic cost model, so the same seed gives the same placements), each
binding cycle completes ``bind_latency`` later, and queue timers (backoff expiry, the
unschedulable flush every 30 s) wake it up.  Wall-clock time spent in the scheduler is
measured separately, for the real throughput.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubesched.api import objects as api
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.metrics import SchedulerMetrics
from kubesched.scheduler import Scheduler
from kubesched.sim.apiserver import SimApiServer
from kubesched.sim.engine import EventLoop

UNSCHEDULABLE_FLUSH_PERIOD = 30.0
BACKOFF_FLUSH_PERIOD = 1.0


@dataclass(frozen=True, slots=True)
class SimTiming:
    """Virtual-time costs of the scheduler process."""

    cycle_seconds: float = 0.0005
    """Virtual seconds one scheduling attempt takes."""
    bind_latency: float = 0.005
    """Virtual seconds from the end of a cycle to the bind being accepted."""
    watch_delay: float = 0.0
    """Virtual seconds before watchers hear of a change."""


class _Informer:
    """Forwards API events to the scheduler and wakes the scheduling process."""

    def __init__(self, sim: SimCluster) -> None:
        self.sim = sim
        self.s = sim.scheduler

    def on_node_add(self, node: api.Node) -> None:
        self.s.on_node_add(node)
        self.sim.wake()

    def on_node_update(self, old: api.Node, new: api.Node) -> None:
        self.s.on_node_update(old, new)
        self.sim.wake()

    def on_node_delete(self, node: api.Node) -> None:
        self.s.on_node_delete(node)
        self.sim.wake()

    def on_pod_add(self, pod: api.Pod) -> None:
        self.s.on_pod_add(pod)
        self.sim.wake()

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        self.s.on_pod_update(old, new)
        self.sim.wake()

    def on_pod_delete(self, pod: api.Pod) -> None:
        self.s.on_pod_delete(pod)
        self.sim.wake()

    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        self.s.on_object(obj, deleted=deleted)
        self.sim.wake()


class SimCluster:
    """A virtual-time world: event loop, API server and one scheduler."""

    def __init__(
        self,
        config: KubeSchedulerConfiguration,
        *,
        seed: int = 0,
        timing: SimTiming | None = None,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self.timing = timing or SimTiming()
        self.loop = EventLoop()
        self.api = SimApiServer(self.loop, watch_delay=self.timing.watch_delay, seed=seed)
        self.scheduler = Scheduler(
            config,
            clock=self.loop.clock,
            api_client=self.api,
            seed=seed,
            submit_binding=self._submit_binding,
            metrics=metrics,
        )
        self.wall_seconds = 0.0
        self._tick_at: float | None = None
        self._busy_until = 0.0
        self.api.watch(_Informer(self))
        self._next_unschedulable_flush = UNSCHEDULABLE_FLUSH_PERIOD
        self.on_progress: Callable[[], None] | None = None

    def _submit_binding(self, fn: Callable[[], None]) -> None:
        def run() -> None:
            t0 = time.perf_counter()
            fn()
            self.wall_seconds += time.perf_counter() - t0

        self.loop.call_later(self.timing.bind_latency, run, priority=-1)

    def wake(self, at: float | None = None) -> None:
        """Make sure the scheduling process runs at ``at`` (default: as soon as it is free)."""
        when = max(self._busy_until, self.loop.now if at is None else at)
        if self._tick_at is not None and self._tick_at <= when:
            return
        self._tick_at = when
        self.loop.call_at(when, self._tick, priority=1)

    def _tick(self) -> None:
        if self._tick_at is None or self.loop.now < self._tick_at:
            return  # superseded by an earlier wake-up that already ran
        self._tick_at = None
        q = self.scheduler.queue
        if self.loop.now >= self._next_unschedulable_flush:
            q.flush_unschedulable_left_over()
            self._next_unschedulable_flush = self.loop.now + UNSCHEDULABLE_FLUSH_PERIOD
        q.flush_backoff_completed()
        t0 = time.perf_counter()
        ran = self.scheduler.schedule_one()
        self.wall_seconds += time.perf_counter() - t0
        if ran:
            self._busy_until = self.loop.now + self.timing.cycle_seconds
            self.wake()
            if self.on_progress is not None:
                self.on_progress()
            return
        nxt = q.next_wakeup()
        permit = self.scheduler.next_waiting_deadline()
        if permit is not None:
            nxt = permit if nxt is None else min(nxt, permit)
        if nxt is not None:
            if q.pending_pods().get("unschedulable", 0):
                nxt = min(nxt, self._next_unschedulable_flush)
            self.wake(max(nxt, self.loop.now + 1e-6))

    def run(self, until: float) -> None:
        """Run the world until virtual time ``until``."""
        self.loop.run(until=until)

    def quiet(self) -> bool:
        """No Pod is ready to schedule or being bound."""
        counts = self.scheduler.queue.pending_pods()
        return (
            counts.get("active", 0) == 0
            and counts.get("backoff", 0) == 0
            and self.scheduler.in_flight_bindings == 0
        )
