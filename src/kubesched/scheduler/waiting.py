"""Pods held at Permit (gangs): their deadlines, and which of them were allowed or rejected.

Upstream ``waitingPodsMap`` plus the timer of each waiting Pod.  :class:`Waiting` keeps what
a held Pod's binding cycle (or its undo) needs once it is decided, and records
``scheduler_permit_wait_duration_seconds{result}`` (upstream ``WaitOnPermit``): here in the
scheduler's clock, so simulated seconds in the simulator.  Running or undoing the decided
Pods is the commit step's (:meth:`kubesched.scheduler.commit.Commit.drain_waiting`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import NamedTuple

from kubesched.api import objects as api
from kubesched.api.fielderr import go_duration
from kubesched.framework.interface import CycleState, Handle, QueuedPodInfo, WaitingPod, passed
from kubesched.framework.runtime import Framework
from kubesched.metrics import SchedulerMetrics


class Held(NamedTuple):
    """A Pod held at Permit: what its binding cycle (or undo) needs once it is decided."""

    fwk: Framework
    state: CycleState
    qp: QueuedPodInfo
    spent: float
    """Wall seconds its attempt had taken when it was held (the wait itself does not count:
    see :func:`kubesched.scheduler.commit.resume`)."""
    cycle: int
    since: float
    """When the wait began (scheduler clock)."""


class Waiting:
    """The Pods held at Permit (see the module docstring); ``handle.waiting_pods`` is the
    plugins' view of them."""

    def __init__(
        self, handle: Handle, clock: Callable[[], float], metrics: SchedulerMetrics
    ) -> None:
        self.handle = handle
        self.clock = clock
        self.metrics = metrics
        self.pods: dict[str, Held] = {}
        """Pods held at Permit, by key."""
        self.decided: deque[WaitingPod] = deque()
        """Held Pods allowed or rejected, whose binding cycle (or undo) is still to run."""

    def hold(
        self,
        assumed: api.Pod,
        waits: dict[str, float],
        fwk: Framework,
        state: CycleState,
        qp: QueuedPodInfo,
        spent: float,
        cycle: int,
    ) -> None:
        """Hold ``assumed`` until each plugin in ``waits`` allows it (each within its
        timeout, in seconds) or one rejects it."""
        now = self.clock()
        deadlines = {name: now + t for name, t in waits.items()}
        self.pods[assumed.key] = Held(fwk, state, qp, spent, cycle, now)
        self.handle.waiting_pods.add(WaitingPod(assumed, deadlines, self.decided.append))

    def next_decided(self) -> tuple[WaitingPod, Held] | None:
        """The next held Pod allowed or rejected (no longer held; its wait recorded), or None
        when none is left."""
        while self.decided:
            wp = self.decided.popleft()
            self.handle.waiting_pods.remove(wp.pod.key)
            held = self.pods.pop(wp.pod.key, None)
            if held is None or wp.status is None:
                continue
            self.metrics.record_permit_wait(wp.status.code.name, self.clock() - held.since)
            return wp, held
        return None

    def expire(self) -> None:
        """Reject held Pods whose earliest Permit deadline passed (upstream: one timer per
        waiting Pod, on the scheduler's clock), compared in whole nanoseconds
        (:func:`~kubesched.framework.interface.passed`): a deadline a whole number of
        cycles after a wait began must not be missed by 1e-13 s and end a cycle late
        (v1.35 seed 24354 case 140: ``group-2``'s wait ended after ``group-2-4``'s cycle,
        where upstream's ends before it and ``group-2-4`` takes the room ``plain-0`` got)."""
        if not len(self.handle.waiting_pods):
            return
        now = self.clock()
        for wp in self.handle.waiting_pods.all():
            if wp.status is None and passed(wp.deadline(), now):
                plugin = min(wp.pending, key=lambda name: wp.pending[name])
                held = self.pods.get(wp.pod.key)
                waited = wp.pending[plugin] - (held.since if held is not None else now)
                wp.reject(
                    plugin,
                    f"rejected due to timeout after waiting {go_duration(waited)} "
                    f"at plugin {plugin}",
                )

    def next_deadline(self) -> float | None:
        """Earliest Permit deadline among held Pods (None: nobody waits)."""
        times = [wp.deadline() for wp in self.handle.waiting_pods.all() if wp.status is None]
        return min(times) if times else None
