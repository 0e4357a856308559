"""The wall-clock loop that drives the scheduler while a workload's ops run.

One thread does everything, in real time (``time.perf_counter``): :meth:`Loop.pump` completes
the API calls that are due (modelled binding mode), runs the API server's timers that are due
(its :class:`~kubesched.sim.engine.WallClock`), runs the background ops that are due
(churn ticks, ``deletePods`` at a rate), runs the scheduling queue's periodic work that is
due (:meth:`~kubesched.queue.scheduling_queue.SchedulingQueue.due`: backoffQ every second, the
unschedulable pool every 30 s, upstream's periods), syncs the scheduler's metric
gauges every second when asked to (``sync_metrics``: a served or written ``/metrics``), then
runs one
``Scheduler.schedule_one()``.  An op that waits (``createPods`` until its Pods are bound, a
``barrier``, a ``sleep``) calls :meth:`Loop.wait`, which pumps until its condition holds and
sleeps until the next timer when the scheduler has nothing to pop.

A wait fails with :class:`WorkloadError` after ``timeout`` seconds (upstream: 10 minutes), or
at once when it is *stalled*: nothing is left to pop, bind or run in the background, so no
Pod can change state any more (e.g. Pods that only preemption could place while
DefaultPreemption is not there).  Upstream would wait out its timeout.

A measured phase (:class:`Phase`) times every ``schedule_one`` that popped a Pod and feeds
binds to its :class:`~kubesched.bench.collect.ThroughputCollector`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kubesched.api import objects as api
from kubesched.bench.api import SchedulerClient
from kubesched.bench.collect import HistogramSnapshot, ThroughputCollector
from kubesched.scheduler import Scheduler
from kubesched.sim.apiserver import SimApiServer
from kubesched.sim.engine import WallClock

MAX_IDLE_SLEEP = 0.05
PROGRESS_PERIOD = 0.25
METRICS_SYNC_PERIOD = 1.0


class WorkloadError(Exception):
    """A workload that cannot finish (timeout, stall, a refused object)."""


class Background(Protocol):
    """An op that keeps running between scheduling cycles until the workload ends."""

    due: float
    """Wall time of the next tick."""

    def tick(self, now: float) -> bool:
        """Do one tick's work; False when finished."""


@dataclass(slots=True)
class Phase:
    """One measured phase: throughput samples, attempt times, histograms at its start."""

    name: str
    collector: ThroughputCollector
    before: HistogramSnapshot
    start: float
    attempts: list[float] = field(default_factory=list)
    """Seconds of every ``schedule_one`` that popped a Pod during the phase."""
    end: float = 0.0


class Loop:
    """The scheduler, its API server and client, and the timers around them."""

    def __init__(
        self,
        scheduler: Scheduler,
        api_server: SimApiServer,
        client: SchedulerClient,
        wall: WallClock,
        progress: Callable[[], None] | None = None,
        *,
        sync_metrics: bool = False,
    ) -> None:
        self.scheduler = scheduler
        self.api = api_server
        self.client = client
        self.wall = wall
        """The API server's clock: its time source is the loop's clock, its timers run here."""
        self.clock = clock = wall.source
        self.progress = progress
        self.background: list[Background] = []
        self.phase: Phase | None = None
        now = clock()
        scheduler.queue.start_periodic()
        self.next_progress = now
        self.next_timer = now
        self.next_metrics_sync: float | None = now if sync_metrics else None
        self.api.on_bound.append(self._bound)

    def _bound(self, pod: api.Pod) -> None:
        if self.phase is not None:
            self.phase.collector.pod_bound(pod, self.clock())

    # ------------------------------------------------------------------ one step
    def pump(self) -> bool:
        """Timers that are due, then one scheduling cycle; True if a Pod was popped."""
        if self.clock() >= self.next_timer:
            self._timers(self.clock())
        phase = self.phase
        if phase is None:
            return self.scheduler.schedule_one()
        t0 = time.perf_counter()
        ran = self.scheduler.schedule_one()
        t1 = time.perf_counter()
        if ran:
            phase.attempts.append(t1 - t0)
        phase.collector.tick(t1)
        return ran

    def _timers(self, now: float) -> None:
        if self.client.pending:
            self.client.run_due(now)
        self.wall.run_due(now)
        if self.background:
            still = []
            for task in self.background:
                if task.due > now or task.tick(now):
                    still.append(task)
            self.background = still
        self.scheduler.queue.due(now)
        if self.progress is not None and now >= self.next_progress:
            self.progress()
            self.next_progress = now + PROGRESS_PERIOD
        if self.next_metrics_sync is not None and now >= self.next_metrics_sync:
            self.scheduler.sync_metrics()
            self.next_metrics_sync = now + METRICS_SYNC_PERIOD
        self.next_timer = min(self._next_events(now))

    def _next_events(self, now: float) -> list[float]:
        times = [now + MAX_IDLE_SLEEP]
        wakeups = (self.scheduler.queue.next_wakeup(), self.client.next_due(), self.wall.next_due())
        for due in wakeups:
            if due is not None:
                times.append(due)
        times.extend(task.due for task in self.background)
        if self.progress is not None:
            times.append(self.next_progress)
        if self.next_metrics_sync is not None:
            times.append(self.next_metrics_sync)
        return times

    # ------------------------------------------------------------------ waiting
    def stalled(self) -> bool:
        """Nothing can change any more: no Pod to pop, no call, binding or API server timer in
        flight, no background op (only a 5-minute unschedulable flush could retry, and fail
        again)."""
        busy = self.client.pending or self.scheduler.in_flight_bindings or self.background
        if busy or self.wall.next_due() is not None:
            return False
        pending = self.scheduler.queue.pending_pods()
        return not pending.get("active", 0) and not pending.get("backoff", 0)

    def wait(
        self,
        done: Callable[[], bool],
        describe: Callable[[], str],
        *,
        timeout: float,
        stall_fails: bool = True,
    ) -> None:
        """Pump until ``done()``; :class:`WorkloadError` on timeout or stall."""
        deadline = self.clock() + timeout
        while not done():
            if self.pump():
                continue
            now = self.clock()
            if now >= deadline:
                raise WorkloadError(f"timed out after {timeout:g} s: {describe()}")
            if stall_fails and self.stalled() and not done():
                raise WorkloadError(f"{describe()}; nothing left to try{self._why()}")
            self._timers(now)
            until = min(self.next_timer, deadline)
            nap = until - self.clock()
            if nap > 0:
                time.sleep(min(nap, MAX_IDLE_SLEEP))

    def _why(self) -> str:
        failures = self.scheduler.failures
        if not failures:
            return ""
        key, (reason, message) = next(iter(failures.items()))
        return f" (pod {key}: {reason}: {message})"

    def run_for(self, seconds: float) -> None:
        """Keep scheduling for ``seconds`` of wall time (the ``sleep`` op)."""
        end = self.clock() + seconds
        self.wait(
            lambda: self.clock() >= end, lambda: "sleep", timeout=seconds + 1.0, stall_fails=False
        )
