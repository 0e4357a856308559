"""The serial scheduler: one scheduling cycle at a time, binding cycles handed off.

Reads like upstream ``schedule_one.go``: pop → PreFilter/Filter → PreScore/Score → select
host → assume → Reserve → Permit, then the binding cycle (PreBind → Bind → PostBind) through
``submit_binding`` (run at once, later in virtual time, or on a thread).  Every failure path
undoes what was done, next to its twin: Unreserve and ``forget`` after assume, requeue with
backoff through the queue.

Time and the outside world come in through small interfaces: ``clock()`` returns seconds,
``api`` binds and deletes, and informer-style ``on_*`` methods feed cluster events.  The same
code runs in the simulator, the benchmark and live mode."""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping

import numpy as np

from kubesched.api import objects as api
from kubesched.config import extenders as extender_config
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework import sampling
from kubesched.framework.batch import BatchCache
from kubesched.framework.extender import ExtenderError
from kubesched.framework.extenders import EXTENDER_NAME, Extenders
from kubesched.framework.interface import (
    ActionType,
    ApiClient,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    PluginFactory,
    QueuedPodInfo,
    Resource,
    Status,
    WaitingPod,
)
from kubesched.framework.runtime import Framework, PluginError
from kubesched.framework.verdicts import StaticFailures
from kubesched.metrics import PLUGIN_SAMPLE_EVERY, SchedulerMetrics
from kubesched.plugins.registry import full_registry
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.algorithm import AlgorithmMixin
from kubesched.scheduler.failures import FailureMixin
from kubesched.scheduler.handlers import EventsMixin
from kubesched.scheduler.types import (
    PREEMPTION_PLUGIN,
    AttemptWork,
    FitError,
    NoNodesError,
    costly_plugins,
    rejected_on_node,
)
from kubesched.scheduler.waiting import WaitingMixin
from kubesched.state.cache import ClusterState

log = logging.getLogger("kubesched.scheduler")


class Scheduler(EventsMixin, AlgorithmMixin, WaitingMixin, FailureMixin):
    """The scheduling loop over one cache, one queue and one framework per profile."""

    def __init__(
        self,
        config: KubeSchedulerConfiguration,
        *,
        clock: Callable[[], float],
        api_client: ApiClient | None = None,
        cluster: ClusterState | None = None,
        registry: Mapping[str, PluginFactory] | None = None,
        seed: int = 0,
        submit_binding: Callable[[Callable[[], None]], None] | None = None,
        metrics: SchedulerMetrics | None = None,
        batching: bool = True,
    ) -> None:
        self.config = config
        self.clock = clock
        self.api = api_client
        self.cluster = cluster or ClusterState()
        self.metrics = metrics or SchedulerMetrics()
        self.rng = np.random.default_rng(seed)
        self.submit_binding = submit_binding or (lambda fn: fn())
        self.handle = Handle(
            self.cluster, api_client, clock=clock, metrics=self.metrics, rng=self.rng
        )
        self._waiting: dict[
            str, tuple[Framework, CycleState, QueuedPodInfo, float, int, float]
        ] = {}
        """Pods held at Permit: their profile, cycle state, queue info, start, cycle, wait start."""
        self._decided: deque[WaitingPod] = deque()
        """Waiting Pods allowed or rejected, whose binding cycle (or undo) is still to run."""
        reg = registry or full_registry()
        ext_configs = extender_config.parse_extenders(config.extenders)
        self.extenders = (
            Extenders(ext_configs, self.metrics.record_extender) if ext_configs else None
        )
        """The configured extenders (:mod:`kubesched.framework.extenders`), or None."""
        if self.extenders is not None:  # DefaultPreemption calls the preempt verbs
            self.handle.extenders = self.extenders
        self.profiles: dict[str, Framework] = {
            p.scheduler_name: Framework(
                p,
                reg,
                self.handle,
                percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
                observe=self.metrics.observe_extension_point(p.scheduler_name),
            )
            for p in extender_config.apply_ignored_resources(config.profiles, ext_configs)
        }
        self.metrics.start_profiles(self.profiles)
        recorder = self.metrics.plugin_recorder()
        self._sampled = {n: sampling.sampled_twin(f, recorder) for n, f in self.profiles.items()}
        """Profile twins that time each plugin call (every PLUGIN_SAMPLE_EVERY-th cycle)."""
        first = next(iter(self.profiles.values()))
        hints = {n: f.events_to_register() for n, f in self.profiles.items()}
        if self.extenders is not None:  # upstream: extender rejections requeue on any event
            for per_plugin in hints.values():
                any_event = ClusterEvent(Resource.WILDCARD, ActionType.ALL)
                per_plugin[EXTENDER_NAME] = [ClusterEventWithHint(any_event)]
        self.queue = SchedulingQueue(
            clock=clock,
            sort_key=first.queue_sort_key(),
            pre_enqueue={n: f.plugins["pre_enqueue"] for n, f in self.profiles.items()},
            hints=hints,
            initial_backoff=float(config.pod_initial_backoff_seconds),
            max_backoff=float(config.pod_max_backoff_seconds),
        )
        for f in (*self.profiles.values(), *self._sampled.values()):
            f.nominator = self.queue.nominator
        self.queue.set_hint_recorder(self.metrics.hint_recorder())
        self._event_timer = self.metrics.event_recorder()
        """``scheduler_event_handling_duration_seconds``: ``(seconds, event label)``."""
        self.preemptions: dict[str, tuple[str, tuple[str, ...]]] = {}
        """Preemptor key to (node, victim keys) of its last successful preemption."""
        self.preempted_by: dict[str, str] = {}
        """Victim key to the key of the Pod that preempted it."""
        self.next_start_node_index = 0
        self.last_search_nodes = 0
        self.record_work = False
        """Whether to keep ``last_work`` (the simulator sets it for its cost model of
        upstream's speed; off, an attempt pays nothing for it)."""
        self.last_work: AttemptWork | None = None
        """What the last scheduling attempt did (None when it did not search or
        ``record_work`` is off)."""
        self.attempts: Counter[str] = Counter()
        self.pod_attempts: Counter[str] = Counter()
        self.unreadable: dict[str, str] = {}
        """Pending Pods for this scheduler that the informer holds but that could not be read
        (live mode): key to why.  Counted as unschedulable in ``scheduler_pending_pods``."""
        self.failures: dict[str, tuple[str, str]] = {}
        """Pod key to (reason, message) of its last failed attempt."""
        self.in_flight_bindings = 0
        self.batch = BatchCache(enabled=batching)
        """Reuse of results across equivalent Pods (see :mod:`kubesched.framework.batch`)."""
        self.static_failures = StaticFailures()
        """Kept Filter outcomes of Pods every node rejects for static reasons
        (:mod:`kubesched.framework.verdicts`)."""

    # ------------------------------------------------------------------ the cycle
    def schedule_one(self) -> bool:
        """Run one scheduling cycle; False when no Pod was ready to pop.  Waiting Pods whose
        Permit timed out are rejected first; Pods allowed or rejected during the cycle then
        start (or undo) their binding cycle."""
        self.expire_waiting_pods()
        ran = self._schedule_one()
        self._drain_waiting()
        return ran

    def _schedule_one(self) -> bool:
        qp = self.queue.pop()
        if qp is None:
            return False
        self._schedule_popped(qp)
        return True

    def _schedule_popped(self, qp: QueuedPodInfo) -> None:
        """The scheduling cycle of a Pod just popped from the queue (the parallel
        coordinator runs it for the Pods it schedules itself)."""
        pod = qp.pod
        self.last_work = None
        fwk = self.profiles.get(pod.scheduler_name)
        if fwk is None or self.cluster.is_assumed(pod.key):
            self.queue.done(pod)
            return
        if self.queue.scheduling_cycle % PLUGIN_SAMPLE_EVERY == 0:
            fwk = self._sampled[pod.scheduler_name]
        self.pod_attempts[pod.key] += 1
        start = time.perf_counter()
        state = CycleState()
        cycle = self.queue.scheduling_cycle
        try:
            result = self.schedule_pod(fwk, state, pod)
        except FitError as fit:
            if self.record_work:
                outcome = fit.diagnosis.outcome
                self.last_work = AttemptWork(
                    fit.diagnosis.num_all_nodes,
                    outcome.processed if outcome is not None else 0,
                    0,
                    costly_plugins(pod),
                    any(p.name == PREEMPTION_PLUGIN for p in fwk.plugins["post_filter"]),
                )
            nominating = self._post_filter(fwk, state, pod, fit.diagnosis)
            if nominating is not None:
                self._nominate(qp, nominating)
            self.metrics.algorithm_duration.observe(time.perf_counter() - start)  # upstream
            self._fail(fwk, qp, fit.diagnosis, cycle, start)  # defers it past PostFilter
            return
        except (PluginError, NoNodesError, ExtenderError) as e:
            self.metrics.algorithm_duration.observe(time.perf_counter() - start)
            self._fail(fwk, qp, Status(Code.ERROR, (str(e),)), cycle, start)
            return
        except Exception as e:  # a faulty plugin must not stop the loop
            log.exception("plugin fault while scheduling %s", pod.key)
            self._fail(fwk, qp, Status(Code.ERROR, (f"{type(e).__name__}: {e}",)), cycle, start)
            return
        self.metrics.algorithm_duration.observe(time.perf_counter() - start)
        if self.record_work:
            scored = result.feasible if result.feasible > 1 else 0
            self.last_work = AttemptWork(
                self.last_search_nodes, result.evaluated, scored, costly_plugins(pod), bound=True
            )
        assumed = pod.bound_to(result.node)
        self.cluster.assume_pod(assumed, result.node)
        self.queue.nominator.delete(pod.key)
        if result.entry is not None:
            result.entry.version = self.cluster.version
            result.entry.nominations = self.queue.nominator.version
            result.entry.cycle = cycle
            self.batch.store(result.entry)
        status, waits = self._reserve_and_permit(fwk, state, assumed, result.node)
        if not status.is_success() and status.code != Code.WAIT:
            self.cluster.forget_pod(assumed)
            self._requeue_after_forget(assumed, status)
            self._fail(fwk, qp, rejected_on_node(status), cycle, start)
            return
        self._hold_or_bind(fwk, state, qp, assumed, status, waits, start, cycle)

    def _hold_or_bind(
        self,
        fwk: Framework,
        state: CycleState,
        qp: QueuedPodInfo,
        assumed: api.Pod,
        status: Status,
        waits: dict[str, float],
        start: float,
        cycle: int,
    ) -> None:
        """After Reserve and Permit passed: activate the Pods the cycle asked for, count the
        binding in flight, then hold the Pod at Permit (Wait, each plugin's timeout in
        ``waits``) or start its binding cycle."""
        self._activate(state)
        self.in_flight_bindings += 1
        if status.code == Code.WAIT:
            now = self.clock()
            deadlines = {name: now + t for name, t in waits.items()}
            spent = time.perf_counter() - start  # the wait at Permit is not the attempt's work
            self._waiting[assumed.key] = (fwk, state, qp, spent, cycle, now)
            self.handle.waiting_pods.add(WaitingPod(assumed, deadlines, self._decided.append))
            return
        self._submit(fwk, state, qp, assumed, start, cycle)

    def _reserve_and_permit(
        self, fwk: Framework, state: CycleState, assumed: api.Pod, node: str
    ) -> tuple[Status, dict[str, float]]:
        """Reserve then Permit; a Wait comes with each waiting plugin's timeout."""
        waits: dict[str, float] = {}
        try:
            status = fwk.run_reserve(state, assumed, node)
            if status.is_success():
                status, waits = fwk.run_permit_plugins(state, assumed, node)
        except Exception as e:
            status = Status(Code.ERROR, (f"{type(e).__name__}: {e}",))
        if not status.is_success() and status.code != Code.WAIT:
            fwk.run_unreserve(state, assumed, node)
        return status, waits

    def _binding_cycle(
        self,
        fwk: Framework,
        state: CycleState,
        qp: QueuedPodInfo,
        assumed: api.Pod,
        start: float,
        cycle: int,
    ) -> None:
        self.in_flight_bindings -= 1
        node = assumed.node_name
        try:
            status = fwk.run_pre_bind(state, assumed, node)
            if status.is_success():
                status = self._bind(fwk, state, assumed, node)
        except Exception as e:
            status = Status(Code.ERROR, (f"{type(e).__name__}: {e}",))
        self.cluster.finish_binding(assumed)
        if not status.is_success():
            fwk.run_unreserve(state, assumed, node)
            if self.cluster.is_assumed(assumed.key):
                self.cluster.forget_pod(assumed)
            self._requeue_after_forget(assumed, status)
            self._fail(fwk, qp, status, cycle, start)
            self._drain_waiting()
            return
        fwk.run_post_bind(state, assumed, node)
        self._record("scheduled", fwk, start)
        now = self.clock()
        first = qp.initial_attempt_timestamp if qp.initial_attempt_timestamp is not None else now
        self.metrics.record_scheduled(qp.attempts, now - first)
        self.failures.pop(assumed.key, None)
        self.queue.done(assumed)

    def _bind(self, fwk: Framework, state: CycleState, pod: api.Pod, node: str) -> Status:
        """Upstream ``bind``: a binding extender first, else the Bind plugins."""
        if self.extenders is not None:
            status = self.extenders.bind(pod, node)
            if status is not None:
                return status
        return fwk.run_bind(state, pod, node)

    # ------------------------------------------------------------------ metrics
    def sync_metrics(self) -> None:
        """Bring gauges and queue counters up to date; the loops call this about once a
        (real or simulated) second, so nothing is paid per Pod (see :mod:`kubesched.metrics`)."""
        q = self.queue
        pods = self.cluster.pods
        pending = q.pending_pods()
        if self.unreadable:
            pending = {
                **pending,
                "unschedulable": pending.get("unschedulable", 0) + len(self.unreadable),
            }
        self.metrics.sync(
            pending=pending,
            incoming=q.incoming_counts,
            rejected=(
                (qp.pod.scheduler_name, qp.unschedulable_plugins | qp.pending_plugins)
                for qp in q.pending_pod_infos()
            ),
            cache={
                "nodes": len(self.cluster.nodes),
                "pods": len(pods),
                "assumed_pods": sum(1 for r in pods.values() if r.assumed),
            },
            batch_profile=next(iter(self.profiles)),
            batch_attempts=self.batch.attempts,
            batch_flushes=self.batch.flushes,
            evaluations={
                (plugin, point, name): n
                for name, fwk in self.profiles.items()
                for (plugin, point), n in fwk.evaluations.items()
            },
            inflight=q.inflight_events(),
        )
        for fwk in self.profiles.values():
            for plugin in fwk.metrics_syncers:
                plugin.sync_metrics()  # plugin-owned gauges (quota runtime / min / max)
