"""Pods held at Permit (gangs): timeouts, and the binding cycle (or undo) of Pods that
were allowed or rejected while they waited (upstream ``WaitOnPermit``, which also records
``scheduler_permit_wait_duration_seconds{result}``: here in the scheduler's clock, so
simulated seconds in the simulator)."""

from __future__ import annotations

import time

from kubesched.api import objects as api
from kubesched.config.fielderr import go_duration
from kubesched.framework.interface import (
    PODS_TO_ACTIVATE_KEY,
    CycleState,
    QueuedPodInfo,
)
from kubesched.framework.runtime import Framework
from kubesched.scheduler.base import SchedulerBase, resume
from kubesched.scheduler.types import rejected_on_node


class WaitingMixin(SchedulerBase):
    """Part of :class:`kubesched.scheduler.Scheduler`; see the module docstring."""

    def _activate(self, state: CycleState) -> None:
        """Move the Pods a plugin asked to activate (upstream ``PodsToActivate``) to activeQ."""
        pods = state.pop(PODS_TO_ACTIVATE_KEY, None)
        if pods:
            self.queue.activate(list(pods.values()))

    # ------------------------------------------------------------------ waiting pods
    def expire_waiting_pods(self) -> None:
        """Reject waiting Pods whose earliest Permit deadline passed (upstream: one timer per
        waiting Pod, on the scheduler's clock)."""
        if not len(self.handle.waiting_pods):
            return
        now = self.clock()
        for wp in self.handle.waiting_pods.all():
            if wp.status is None and wp.deadline() <= now:
                plugin = min(wp.pending, key=lambda name: wp.pending[name])
                ctx = self._waiting.get(wp.pod.key)
                waited = wp.pending[plugin] - (ctx[5] if ctx is not None else now)
                wp.reject(
                    plugin,
                    f"rejected due to timeout after waiting {go_duration(waited)} "
                    f"at plugin {plugin}",
                )
        self._drain_waiting()

    def next_waiting_deadline(self) -> float | None:
        """Earliest Permit deadline among waiting Pods (None: nobody waits)."""
        times = [wp.deadline() for wp in self.handle.waiting_pods.all() if wp.status is None]
        return min(times) if times else None

    def _drain_waiting(self) -> None:
        """Run the binding cycle of allowed waiting Pods; undo rejected ones (upstream
        ``WaitOnPermit`` returning in the binding goroutine)."""
        while self._decided:
            wp = self._decided.popleft()
            self.handle.waiting_pods.remove(wp.pod.key)
            ctx = self._waiting.pop(wp.pod.key, None)
            if ctx is None or wp.status is None:
                continue
            fwk, state, qp, spent, cycle, since = ctx
            self.metrics.record_permit_wait(wp.status.code.name, self.clock() - since)
            start = resume(spent)
            if wp.status.is_success():
                self._submit(fwk, state, qp, wp.pod, start, cycle)
                continue
            self.in_flight_bindings -= 1
            assumed = wp.pod
            fwk.run_unreserve(state, assumed, assumed.node_name)
            if self.cluster.is_assumed(assumed.key):
                self.cluster.forget_pod(assumed)
            self._requeue_after_forget(assumed, wp.status)
            self._fail(fwk, qp, rejected_on_node(wp.status), cycle, start)

    def _submit(
        self,
        fwk: Framework,
        state: CycleState,
        qp: QueuedPodInfo,
        assumed: api.Pod,
        start: float,
        cycle: int,
    ) -> None:
        spent = time.perf_counter() - start

        def binding_cycle() -> None:  # waiting for the binder does not count (see resume)
            self._binding_cycle(fwk, state, qp, assumed, resume(spent), cycle)

        self.submit_binding(binding_cycle)
