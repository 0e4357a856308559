"""Wires the real scheduler to the simulated API server in virtual time.

The scheduler is one simulated process: each scheduling attempt costs ``cycle_seconds`` of
virtual time, or what upstream's kube-scheduler would take for it (``cost_model``), (a
deterministic cost either way, so the same seed gives the same placements), each
binding cycle completes ``bind_latency`` later (one the API server refuses at once, in
PreBind or Bind, ends during the next scheduling cycle; one whose volume bindings a declared
fault undoes ends at VolumeBinding's first poll, a second later), and the queue's periodic work
wakes it up (:meth:`~kubesched.queue.scheduling_queue.SchedulingQueue.due` at
:meth:`~kubesched.queue.scheduling_queue.SchedulingQueue.next_wakeup`: a Pod leaves backoffQ
the moment its backoff ends, the unschedulable pool is flushed every 30 s).  Wall-clock time
spent in the scheduler is measured separately, for the real throughput.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubesched.api import objects as api
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework.contract import PreBindTiming
from kubesched.metrics import SchedulerMetrics
from kubesched.parallel import factory
from kubesched.queue.core import ACTIVE, BACKOFF
from kubesched.scheduler.commit import Submission
from kubesched.sim.apiserver import SimApiServer
from kubesched.sim.costmodel import CostModel
from kubesched.sim.engine import EventLoop
from kubesched.sim.ephemeral import EphemeralVolumeController
from kubesched.sim.pvcontroller import POLL_SECONDS, PVController
from kubesched.sim.resourceclaims import ResourceClaimController

_AFTER_TICK = 2
"""Event priority after a scheduling cycle's (``wake``: 1) at the same virtual time."""


@dataclass(frozen=True, slots=True)
class SimTiming:
    """Virtual-time costs of the scheduler process."""

    cycle_seconds: float = 0.0005
    """Virtual seconds one scheduling attempt takes."""
    bind_latency: float = 0.005
    """Virtual seconds from the end of a cycle to the bind being accepted."""
    watch_delay: float = 0.0
    """Virtual seconds before watchers hear of a change."""
    client_qps: float = 0.0
    """The scheduler's client rate limit on binds (queries per second); 0: no limit."""
    client_burst: int = 0
    """Binds the client may send at once before ``client_qps`` applies (at least 1)."""
    cost_model: CostModel | None = None
    """When set (``timing.costModel: upstream``), each attempt takes what upstream's
    kube-scheduler would for the nodes it filtered and scored, its plugins and the
    configuration's ``parallelism`` (:mod:`kubesched.sim.costmodel`), not ``cycle_seconds``."""


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
        if not pod.node_name:
            self.sim.charge_create()
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
        shards: int = 1,
        pool_seed: int | None = None,
    ) -> None:
        self.timing = timing or SimTiming()
        self.loop = EventLoop()
        self.api = SimApiServer(self.loop, watch_delay=self.timing.watch_delay, seed=seed)
        self.scheduler = factory.make_scheduler(  # shards > 1: kubesched.parallel
            config,
            shards=shards,
            clock=self.loop.clock,
            api_client=self.api,
            seed=seed,
            submit_binding=self._submit_binding,
            metrics=metrics,
            pool_seed=pool_seed,
        )
        self.scheduler.record_work = self.timing.cost_model is not None
        self.wall_seconds = 0.0
        self._tick_at: float | None = None
        self._busy_until = 0.0
        self.api.watch(_Informer(self))
        group_claims = config.feature_gates.enabled("DRAWorkloadResourceClaims")
        self.api.watch(ResourceClaimController(self.api, group_claims=group_claims))
        self.api.watch(EphemeralVolumeController(self.api))
        self.scheduler.queue.start_periodic(backoff_period=0.0)
        self.seed = seed
        self.down = False
        """The scheduler process is dead (a fault drill): nothing is scheduled."""
        self._tokens = 0.0
        self._tokens_at: float | None = None
        self.scheduled_at: dict[str, float] = {}
        """Pod key to when the scheduling cycle that bound it handed it to its binding cycle
        (the end of the ``scheduling`` segment, :mod:`kubesched.sim.startup`)."""
        self._binding_since: float | None = None
        self.volumes: PVController | None = None
        """The PV controller, when the run has one (``simulate``: :meth:`start_volumes`)."""
        self._held_since: dict[str, float] = {}
        self._unchanged: tuple[tuple[int, ...], dict[str, int]] | None = None
        """What the API server had seen (binds, creates, deletes) when :meth:`retrying_unchanged`
        last saw it change, and each Pod's attempts then."""
        self.api.on_bound.append(self._bound)
        self.api.on_held.append(self._held)
        self._ticking = False
        """A scheduling cycle is running (:meth:`_tick`)."""
        self._refused: list[tuple[float, Callable[[], None]]] = []
        """Binding cycles refused at once (:meth:`_declared_timing`) submitted by the running
        scheduling cycle, each with its wait for the client's rate limiter."""

    def start_volumes(self, provisioning: dict[str, float], until: float) -> PVController:
        """Run a PV controller and provisioner (:mod:`kubesched.sim.pvcontroller`):
        VolumeBinding's PreBind then waits for it, as upstream's waits for a real one."""
        volumes = PVController(self.api, self.loop, provisioning, until=until)
        self.api.watch(volumes)
        self.api.volume_waiter = volumes.wait_for_volumes
        self.volumes = volumes
        return volumes

    def _held(self, pod: api.Pod) -> None:
        """A bind held while PreBind waited for volumes: its binding cycle began now."""
        since = self._binding_since
        self._held_since[pod.key] = self.loop.now if since is None else since

    def _bound(self, pod: api.Pod) -> None:
        since = self._held_since.pop(pod.key, self._binding_since)
        self.scheduled_at[pod.key] = self.loop.now if since is None else since

    def _submit_binding(self, fn: Callable[[], None]) -> None:
        submitted = self.loop.now  # the scheduling cycle is over (Permit passed)
        timing = self._declared_timing(self.scheduler.committer.submitting)
        refused = timing is PreBindTiming.FAILS

        def run() -> None:
            t0 = time.perf_counter()
            outer = self._binding_since  # a PreBind waiting for volumes runs others inside
            self._binding_since = submitted
            heard = self.api.notifications
            try:
                fn()
            finally:
                self._binding_since = outer
            self.wall_seconds += time.perf_counter() - t0
            # A binding cycle that failed without a write anyone hears (a PreBind or the
            # binding refused, or its writes undone) put the Pod in backoffQ: with no
            # wake-up due, the scheduler must wake for it.  When it moved Pods its forgotten
            # resources may help and the queue can give one now, the scheduler wakes at
            # once, as upstream's queue wakes its waiting Pop (with activeQ empty it pops a
            # rejected Pod from backoffQ early, SchedulerPopFromBackoffQ), not at a wake-up
            # due later (the next flush).  A cycle that wrote wakes it through the watch, at
            # the time the watch delivers.
            if self.api.notifications == heard and (
                self._tick_at is None or self.scheduler.queue.poppable()
            ):
                self.wake()

        wait = self._client_wait()
        if timing is PreBindTiming.FAILS_AT_POLL:
            # Its writes made and undone, the failure is found at the first poll, a second
            # later: the Pod stays assumed (its node and claims held) until then.
            self.loop.call_later(wait + POLL_SECONDS, run, priority=-1)
        elif not refused:
            self.loop.call_later(wait + self.timing.bind_latency, run, priority=-1)
        elif self._ticking:  # the next scheduling cycle is timed when this one ends
            self._refused.append((wait, run))
        else:
            self.loop.call_later(wait, run, priority=_AFTER_TICK)

    def _declared_timing(self, cycle: Submission | None) -> PreBindTiming | None:
        """How the binding cycle being submitted ends under the case's declared faults
        (None: no fault declared, it takes ``bind_latency``).  ``FAILS``: at once, its
        PreBind refused a write (the case's ``volumeFaults`` or ``claimFaults``) before any
        wait, or nothing in PreBind waits and the API server refuses the binding
        (``bindFaults``).  ``FAILS_AT_POLL``: VolumeBinding's writes are made and a declared
        fault undoes them (``failProvisioning``, ``resetClaimRef``), so upstream's PreBind
        fails at its first poll of the PV controller, a second after the writes
        (``BindPodVolumes``): kube-oracle v1.34's log of CI's storage schedule seed 1 case
        31 shows each such failure 1.00 s after the write, the Pod assumed meanwhile.

        ``bind_latency`` is an accepted bind's.  Upstream's binding cycle starts within
        microseconds of Permit and kube-oracle's fake API server refuses at once, while the
        scheduling loop pops the next Pod: that Pod's cycle still meets the refused Pod
        assumed (its snapshot, the claims in flight), and the refused Pod is unreserved and
        forgotten while it runs, the move that forgetting makes heard as an event in flight
        (kube-oracle v1.34: the other Pod's ``attempts``).  So such a cycle ends just after
        the next scheduling cycle (:meth:`_tick`), not ``bind_latency`` later.  Only
        declared faults are looked for (none in a simulation: nothing is asked there)."""
        api_ = self.api
        if cycle is None or not (api_.volume_faults or api_.claim_faults or api_.bind_faults):
            return None
        timing = cycle.pre_bind_timing()
        if timing is PreBindTiming.FAILS or timing is PreBindTiming.FAILS_AT_POLL:
            return timing
        if timing is PreBindTiming.PASSES and api_.refuses_binding(cycle.pod):
            return PreBindTiming.FAILS
        return None

    def _client_wait(self) -> float:
        """Seconds a bind waits for the client's token bucket (client-go's rate limiter)."""
        qps = self.timing.client_qps
        if qps <= 0:
            return 0.0
        now, burst = self.loop.now, float(max(1, self.timing.client_burst))
        if self._tokens_at is None:
            self._tokens = burst
        else:
            self._tokens = min(burst, self._tokens + (now - self._tokens_at) * qps)
        self._tokens_at = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / qps

    def charge_create(self) -> None:
        """A Pod was created: with the cost model, the API server's work for it on the
        scheduler's cores (``binding.apiSecondsPerCreate``) delays the scheduling loop."""
        model = self.timing.cost_model
        create = model.binding.get("apiSecondsPerCreate", 0.0) if model is not None else 0.0
        if create > 0:
            self._busy_until = max(self._busy_until, self.loop.now) + create

    def _attempt_seconds(self) -> float:
        """Virtual seconds of the attempt that just ran (see :class:`SimTiming`)."""
        model = self.timing.cost_model
        if model is None:
            return self.timing.cycle_seconds
        work = self.scheduler.last_work
        if work is None:  # popped but not searched (already assumed, no profile)
            return model.coefficients["fixed"]
        return model.seconds_of(work, int(self.scheduler.config.parallelism))

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
        if self.down:
            return
        if self.loop.now < self._busy_until:  # a Pod's creation was charged since
            self.wake()
            return
        q = self.scheduler.queue
        q.due(self.loop.now)
        t0 = time.perf_counter()
        self._ticking = True
        try:
            ran = self.scheduler.schedule_one()
        finally:
            self._ticking = False
        self.wall_seconds += time.perf_counter() - t0
        if ran:
            cycles = factory.step_weight(self.scheduler)  # a parallel step: shards side by side
            self._busy_until = self.loop.now + self._attempt_seconds() * cycles
            self.wake()
        # A binding cycle refused at once ends during the next scheduling cycle: at its
        # start, after it (``_AFTER_TICK``).
        for wait, fail in self._refused:
            at = max(self._busy_until, self.loop.now + wait)
            self.loop.call_at(at, fail, priority=_AFTER_TICK)
        self._refused.clear()
        if ran:
            return
        nxt = q.next_wakeup()
        permit = self.scheduler.next_waiting_deadline()
        if permit is not None:
            nxt = permit if nxt is None else min(nxt, permit)
        if nxt is not None:
            self.wake(max(nxt, self.loop.now + 1e-6))

    def run(self, until: float) -> None:
        """Run the world until virtual time ``until``."""
        self.loop.run(until=until)

    def quiet(self) -> bool:
        """No Pod is ready to schedule, being bound, or terminating (a victim's grace period
        still running: its preemptor is waiting for it), and no event is on its way to the
        scheduler (``Scheduler.unheard_events``)."""
        counts = self.scheduler.queue.pending_pods()
        return (
            counts.get("active", 0) == 0
            and counts.get("backoff", 0) == 0
            and self.scheduler.in_flight_bindings == 0
            and not self.api.terminating
            and not self.scheduler.unheard_events()
        )

    def spinning(self, attempts: int) -> bool:
        """Every Pod ready to schedule (activeQ or backoffQ) has been attempted at least
        ``attempts`` times and nothing is being bound: the scheduler is retrying without
        end.  v1.36 does that to a PodGroup whose quorum is met but some member does not
        fit: it requeues the group at once, without backoff, for ever."""
        s = self.scheduler
        if s.in_flight_bindings:
            return False
        ready = [
            qp.pod.key
            for qp in s.queue.pending_pod_infos()
            if s.queue.queue_of(qp.pod.key) in (ACTIVE, BACKOFF)
        ]
        return bool(ready) and all(s.pod_attempts.get(k, 0) >= attempts for k in ready)

    def retrying_unchanged(self, retries: int) -> bool:
        """A queue that requeues failed attempts after their backoff alone (v1.36 PodGroup
        members, ``SchedulingQueue``'s ``backoff_only``; v1.37 PodGroup entities) retries
        them for ever; the run has settled when every Pod ready to schedule has been
        attempted ``retries`` more times while nothing changed at the API server (no bind,
        create or delete), nothing is being bound or terminating and nobody waits at Permit:
        each retry repeats the one before."""
        s = self.scheduler
        if not s.queue.retries_after_backoff_alone:
            return False
        stats = self.api.stats
        seen = (stats.binds, stats.bind_errors, stats.creates, stats.deletes)
        if self._unchanged is None or self._unchanged[0] != seen:
            self._unchanged = (seen, dict(s.pod_attempts))
            return False
        if self.api.terminating:  # its end frees room: count the retries after it
            self._unchanged = (seen, dict(s.pod_attempts))
            return False
        if s.in_flight_bindings or s.next_waiting_deadline() is not None:
            return False
        marks = self._unchanged[1]
        ready = [
            qp.pod.key
            for qp in s.queue.pending_pod_infos()
            if s.queue.queue_of(qp.pod.key) in (ACTIVE, BACKOFF)
        ]
        return bool(ready) and all(
            s.pod_attempts.get(k, 0) >= marks.get(k, 0) + retries for k in ready
        )

    # ------------------------------------------------------------------ fault drills
    def kill_scheduler(self) -> None:
        """The scheduler process dies (:mod:`kubesched.sim.faults`): it hears nothing more and
        schedules nothing; binding requests it already sent still reach the API server."""
        self.api.watchers = [
            w for w in self.api.watchers if not (isinstance(w, _Informer) and w.sim is self)
        ]
        self.down = True

    def start_standby(self) -> None:
        """A standby takes over: a fresh scheduler of the same kind and configuration whose
        cache and queue are rebuilt from the API server (list, then watch).  The attempt
        counters are the run's, carried over (the dead leader's late binds still count)."""
        old = self.scheduler
        factory.close(old)
        new = factory.make_scheduler(
            old.config,
            shards=factory.shards_of(old),
            clock=self.loop.clock,
            api_client=self.api,
            seed=self.seed,
            submit_binding=self._submit_binding,
            metrics=old.metrics,
        )
        new.attempts = old.attempts
        new.pod_attempts = old.pod_attempts
        new.record_work = old.record_work
        new.queue.start_periodic(backoff_period=0.0)
        self.scheduler = new
        self.down = False
        self._busy_until = self.loop.now
        self.api.watch(_Informer(self))
        group_claims = old.config.feature_gates.enabled("DRAWorkloadResourceClaims")
        self.api.watch(ResourceClaimController(self.api, group_claims=group_claims))
        self.api.watch(EphemeralVolumeController(self.api))
        self.wake()
