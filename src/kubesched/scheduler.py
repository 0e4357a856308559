"""The serial scheduler: one scheduling cycle at a time, binding cycles handed off.

Reads like upstream ``schedule_one.go``: pop → PreFilter/Filter → PreScore/Score → select
host → assume → Reserve → Permit, then the binding cycle (PreBind → Bind → PostBind) through
``submit_binding`` (run at once, later in virtual time, or on a thread).  Every failure path
undoes what was done, next to its twin: Unreserve and ``forget`` after assume, requeue with
backoff through the queue.

Time and the outside world come in through small interfaces: ``clock()`` returns seconds,
``api`` binds and deletes, and informer-style ``on_*`` methods feed cluster events.  The same
code runs in the simulator, the benchmark and live mode.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.config import extenders as extender_config
from kubesched.config.fielderr import go_duration
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework import batch, events, sampling
from kubesched.framework.batch import BatchCache, BatchEntry
from kubesched.framework.extender import ExtenderError
from kubesched.framework.extenders import EXTENDER_NAME, Extenders
from kubesched.framework.interface import (
    PODS_TO_ACTIVATE_KEY,
    ActionType,
    ApiClient,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    IntArray,
    PluginFactory,
    QueuedPodInfo,
    Resource,
    Status,
    WaitingPod,
)
from kubesched.framework.runtime import FilterOutcome, Framework, PluginError, PostFilterResult
from kubesched.metrics import PLUGIN_SAMPLE_EVERY, SchedulerMetrics
from kubesched.plugins.registry import full_registry
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.state.cache import CacheError, ClusterState

log = logging.getLogger(__name__)

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
POD_REASON_UNSCHEDULABLE = "Unschedulable"
POD_REASON_SCHEDULER_ERROR = "SchedulerError"
NOTE_LENGTH_LIMIT = 1024
PREEMPTION_PLUGIN = "DefaultPreemption"
"""PostFilter plugin whose calls count in ``scheduler_preemption_attempts_total``."""


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """Upstream ``numFeasibleNodesToFind``: adaptive ``max(5, 50 - n/125)``%, at least 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num = num_all_nodes * pct // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(slots=True)
class Diagnosis:
    """Why a Pod fits nowhere (upstream ``framework.Diagnosis``)."""

    num_all_nodes: int
    reason_counts: Counter[str]
    unschedulable_plugins: set[str]
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    outcome: FilterOutcome | None = None
    absent: Status | None = None
    """Status of the nodes ``outcome`` does not cover (None: UnschedulableAndUnresolvable)."""

    def message(self) -> str:
        """Upstream ``FitError.Error()``: ``0/N nodes are available: 2 Insufficient cpu.``."""
        msg = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter_msg:
            msg += f" {self.pre_filter_msg}."
        else:
            parts = sorted(f"{c} {r}" for r, c in self.reason_counts.items())
            if parts:
                msg += " " + ", ".join(parts) + "."
        if self.post_filter_msg:
            msg += f" {self.post_filter_msg}."
        return msg


class FitError(Exception):
    """No node fits; carries the diagnosis."""

    def __init__(self, diagnosis: Diagnosis) -> None:
        super().__init__(diagnosis.message())
        self.diagnosis = diagnosis


@dataclass(slots=True)
class ScheduleResult:
    """The chosen node and how many nodes were evaluated / feasible; ``entry`` is what
    result reuse keeps for the next equivalent Pod (None when nothing can be reused)."""

    node: str
    evaluated: int
    feasible: int
    entry: BatchEntry | None = None


def truncate_message(message: str) -> str:
    """Upstream ``truncateMessage``: cap at the Event note length."""
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    return message[: NOTE_LENGTH_LIMIT - 4] + " ..."


class Scheduler:
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
        self.handle = Handle(self.cluster, api_client)
        self.handle.extras.update(clock=clock, metrics=self.metrics, rng=self.rng)
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
        self.preemptions: dict[str, tuple[str, tuple[str, ...]]] = {}
        """Preemptor key to (node, victim keys) of its last successful preemption."""
        self.preempted_by: dict[str, str] = {}
        """Victim key to the key of the Pod that preempted it."""
        self.next_start_node_index = 0
        self.attempts: Counter[str] = Counter()
        self.pod_attempts: Counter[str] = Counter()
        self.failures: dict[str, tuple[str, str]] = {}
        """Pod key to (reason, message) of its last failed attempt."""
        self.in_flight_bindings = 0
        self.batch = BatchCache(enabled=batching)
        """Reuse of results across equivalent Pods (see :mod:`kubesched.framework.batch`)."""

    # ------------------------------------------------------------------ informer events
    def responsible_for(self, pod: api.Pod) -> bool:
        """Whether one of our profiles schedules this Pod."""
        return pod.scheduler_name in self.profiles

    def on_node_add(self, node: api.Node) -> None:
        """A node appeared."""
        self.cluster.add_node(node)
        self.queue.move_all_to_active_or_backoff(events.NODE_ADD, None, node)

    def on_node_update(self, old: api.Node, new: api.Node) -> None:
        """A node changed; requeue by what changed."""
        self.cluster.update_node(new)
        for event in events.node_update_events(old, new):
            self.queue.move_all_to_active_or_backoff(event, old, new)

    def on_node_delete(self, node: api.Node) -> None:
        """A node went away with its Pods."""
        self.cluster.remove_node(node.name)
        self.queue.move_all_to_active_or_backoff(events.NODE_DELETE, node, None)

    def _tell(self, method: str, *args: Any) -> None:
        """Pass an informer event on to the plugins' event handlers."""
        for handler in self.handle.event_handlers:
            fn = getattr(handler, method, None)
            if fn is not None:
                fn(*args)

    def on_pod_add(self, pod: api.Pod) -> None:
        """A Pod appeared: bound ones go to the cache, ours to the queue."""
        self._tell("on_pod_add", pod)
        if pod.node_name:
            try:
                self.cluster.add_pod(pod)
            except CacheError as e:
                log.warning("ignoring bound pod %s: %s", pod.key, e)
                return
            self.queue.assigned_pod_added(pod)
        elif self.responsible_for(pod):
            self.queue.add(pod)

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        """A Pod changed (a bind confirmed, labels changed, gates removed, ...)."""
        self._tell("on_pod_update", old, new)
        if new.node_name:
            if not old.node_name:
                self.queue.delete(old)
                self.on_pod_add(new)
                return
            try:
                self.cluster.add_pod(new)
            except CacheError as e:
                log.warning("ignoring bound pod %s: %s", new.key, e)
                return
            self.queue.assigned_pod_updated(old, new)
        elif self.responsible_for(new):
            self.queue.update(old, new)

    def on_pod_delete(self, pod: api.Pod) -> None:
        """A Pod was deleted: free its resources or drop it from the queue."""
        self._tell("on_pod_delete", pod)
        if self.handle.reject_waiting_pod(pod.key):
            self._drain_waiting()
        if self.cluster.remove_pod(pod.key) is not None:
            self.queue.move_all_to_active_or_backoff(events.ASSIGNED_POD_DELETE, pod, None)
        else:
            self.queue.delete(pod)
        self.failures.pop(pod.key, None)

    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        """A Namespace, Service, PodDisruptionBudget or other object changed."""
        kind = self.cluster.apply_object(obj, deleted=deleted)
        self._tell("on_object", obj, deleted)
        event = events.object_event(kind, deleted)
        if event is not None:
            self.queue.move_all_to_active_or_backoff(event, None, obj)

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
        pod = qp.pod
        fwk = self.profiles.get(pod.scheduler_name)
        if fwk is None or self.cluster.is_assumed(pod.key):
            self.queue.done(pod)
            return True
        if self.queue.scheduling_cycle % PLUGIN_SAMPLE_EVERY == 0:
            fwk = self._sampled[pod.scheduler_name]
        self.pod_attempts[pod.key] += 1
        start = time.perf_counter()
        state = CycleState()
        cycle = self.queue.scheduling_cycle
        try:
            result = self.schedule_pod(fwk, state, pod)
        except FitError as fit:
            nominating = self._post_filter(fwk, state, pod, fit.diagnosis)
            if nominating is not None:
                self._nominate(qp, nominating)
            self._fail(fwk, qp, fit.diagnosis, cycle, start)
            return True
        except (PluginError, NoNodesError, ExtenderError) as e:
            self._fail(fwk, qp, Status(Code.ERROR, (str(e),)), cycle, start)
            return True
        except Exception as e:  # a faulty plugin must not stop the loop
            log.exception("plugin fault while scheduling %s", pod.key)
            self._fail(fwk, qp, Status(Code.ERROR, (f"{type(e).__name__}: {e}",)), cycle, start)
            return True
        self.metrics.algorithm_duration.observe(time.perf_counter() - start)
        assumed = pod.bound_to(result.node)
        self.cluster.assume_pod(assumed, result.node)
        self.queue.nominator.delete(pod.key)
        if result.entry is not None:
            result.entry.version = self.cluster.version
            result.entry.cycle = cycle
            self.batch.store(result.entry)
        status, waits = self._reserve_and_permit(fwk, state, assumed, result.node)
        if not status.is_success() and status.code != Code.WAIT:
            self.cluster.forget_pod(assumed)
            self._requeue_after_forget(assumed, status)
            self._fail(fwk, qp, status, cycle, start)
            return True
        self._activate(state)
        self.in_flight_bindings += 1
        if status.code == Code.WAIT:
            now = self.clock()
            deadlines = {name: now + t for name, t in waits.items()}
            self._waiting[assumed.key] = (fwk, state, qp, start, cycle, now)
            self.handle.waiting_pods.add(WaitingPod(assumed, deadlines, self._decided.append))
            return True
        self.submit_binding(lambda: self._binding_cycle(fwk, state, qp, assumed, start, cycle))
        return True

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
            fwk, state, qp, start, cycle, _since = ctx
            if wp.status.is_success():
                self._submit(fwk, state, qp, wp.pod, start, cycle)
                continue
            self.in_flight_bindings -= 1
            assumed = wp.pod
            fwk.run_unreserve(state, assumed, assumed.node_name)
            if self.cluster.is_assumed(assumed.key):
                self.cluster.forget_pod(assumed)
            self._requeue_after_forget(assumed, wp.status)
            self._fail(fwk, qp, wp.status, cycle, start)

    def _submit(
        self,
        fwk: Framework,
        state: CycleState,
        qp: QueuedPodInfo,
        assumed: api.Pod,
        start: float,
        cycle: int,
    ) -> None:
        self.submit_binding(lambda: self._binding_cycle(fwk, state, qp, assumed, start, cycle))

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

    def _requeue_after_forget(self, assumed: api.Pod, status: Status) -> None:
        """Resources of the assumed Pod are free again: tell the queue (upstream)."""
        if status.is_rejected():
            self.queue.move_all_to_active_or_backoff(
                events.ASSIGNED_POD_DELETE, assumed, None, lambda p: p.key != assumed.key
            )
        else:
            self.queue.move_all_to_active_or_backoff(events.ASSIGNED_POD_DELETE, assumed, None)

    # ------------------------------------------------------------------ algorithm
    def candidate_rows(self) -> IntArray:
        """Rows the search walks (every live node; a parallel shard narrows this to its
        partition first, see :mod:`kubesched.parallel.shard`)."""
        return self.cluster.nodes.order()

    def schedule_pod(self, fwk: Framework, state: CycleState, pod: api.Pod) -> ScheduleResult:
        """Find the node for ``pod`` (upstream ``schedulePod``); raises :class:`FitError`."""
        table = self.cluster.nodes
        order = self.candidate_rows()
        n = int(order.size)
        if n == 0:
            raise NoNodesError(NO_NODES_AVAILABLE)
        nominations = len(self.queue.nominator)
        if self.batch.enabled and not nominations:
            cycle = self.queue.scheduling_cycle
            entry = self.batch.lookup(
                fwk.profile_name, self._sign(fwk, pod), cycle, self.cluster.version
            )
            if entry is not None:
                reused = self._schedule_from_entry(fwk, state, pod, entry)
                if reused is not None:
                    return reused
                state.clear()
                state.skip_filter.clear()
                state.skip_score.clear()
        pre, status, rejectors = fwk.run_pre_filter(state, pod)
        if not status.is_success():
            if not status.is_rejected():
                raise PluginError(status.plugin, status.message())
            raise FitError(
                Diagnosis(n, Counter(), rejectors, pre_filter_msg=status.message(), absent=status)
            )
        nominated = pod.nominated_node_name or self.queue.nominator.node_of(pod.key)
        if nominated and nominated in table.row_of:
            # Upstream evaluateNominatedNode: the node preemption made room on is tried first.
            one = np.asarray([table.row_of[nominated]], dtype=np.int64)
            fits = fwk.run_filter_with_nominated(state, pod, one).feasible
            if fits.size and self._nominated_passes_extenders(pod, fits):
                return ScheduleResult(nominated, 1, 1)
        candidates = order
        absent: Status | None = None
        if pre is not None and pre.node_names is not None:
            rows = [table.row_of[nm] for nm in sorted(pre.node_names) if nm in table.row_of]
            candidates = np.asarray(rows, dtype=np.int64)
            absent = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                (f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(rejectors))}]",),
            )
        m = int(candidates.size)
        to_find = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, m)
        if not fwk.has_score_plugins() and not self._extenders_filter_or_score():
            to_find = min(to_find, 1)
        start = self.next_start_node_index % max(m, 1)
        rotated = np.concatenate([candidates[start:], candidates[:start]]) if start else candidates
        outcome = fwk.find_nodes_that_pass_filters(state, pod, rotated, to_find)
        self.next_start_node_index = (self.next_start_node_index + outcome.processed) % n
        feasible = outcome.feasible
        removed = False
        if self.extenders is not None and feasible.size:
            outcome, removed = self._filter_by_extenders(pod, outcome)
            feasible = outcome.feasible
        if feasible.size == 0:
            counts = outcome.reason_counts()
            if absent is not None and n > outcome.failed.size:
                counts[absent.reasons[0]] += n - int(outcome.failed.size)
            plugins = rejectors | outcome.rejecting_plugins()
            if removed:
                plugins.add(EXTENDER_NAME)
            raise FitError(Diagnosis(n, counts, plugins, outcome=outcome, absent=absent))
        if feasible.size == 1:
            return ScheduleResult(table.names[int(feasible[0])], outcome.processed, 1)
        pre_status = fwk.run_pre_score(state, pod, feasible)
        if not pre_status.is_success():
            raise PluginError(pre_status.plugin, pre_status.message())
        if not fwk.has_score_plugins() and self.extenders is None:
            return ScheduleResult(
                table.names[int(feasible[0])], outcome.processed, int(feasible.size)
            )
        scored = fwk.run_score(state, pod, feasible)
        if self.extenders is not None:  # upstream prioritizeNodes: extender scores added
            scored.total = scored.total + self.extenders.prioritize(pod, table, feasible).total
        pick = self.select_host(scored.total, feasible)
        entry = None
        if self.batch.enabled and absent is None and not nominations:
            signature = self._sign(fwk, pod)
            if signature is not None:
                entry = batch.build_entry(
                    fwk, state, signature, feasible, scored, pick, outcome.processed
                )
        return ScheduleResult(
            table.names[int(feasible[pick])], outcome.processed, int(feasible.size), entry
        )

    # ------------------------------------------------------------------ extenders
    def _sign(self, fwk: Framework, pod: api.Pod) -> tuple[object, ...] | None:
        """The Pod's result-reuse signature; None (unsignable) when an extender is
        interested in it, since an extender's answers are not known to be reusable."""
        if self.extenders is not None and self.extenders.interested(pod):
            return None
        return fwk.sign(pod)

    def _extenders_filter_or_score(self) -> bool:
        """Upstream ``hasExtenderFilters || hasScoring`` (the extender part)."""
        e = self.extenders
        return e is not None and (e.has_filters() or e.has_prioritizers())

    def _nominated_passes_extenders(self, pod: api.Pod, rows: IntArray) -> bool:
        """Upstream ``evaluateNominatedNode``: the nominated node must pass the filter
        extenders too; an extender error only skips the shortcut (upstream logs it)."""
        if self.extenders is None:
            return True
        try:
            return bool(self.extenders.filter(pod, self.cluster.nodes, rows).feasible.size)
        except ExtenderError as e:
            log.warning("evaluating nominated node of %s: %s", pod.key, e)
            return False

    def _filter_by_extenders(
        self, pod: api.Pod, outcome: FilterOutcome
    ) -> tuple[FilterOutcome, bool]:
        """Run the filter extenders over the feasible nodes (upstream
        ``findNodesThatPassExtenders``); their rejections join the outcome's failures.
        Also whether extenders removed any node.  Raises :class:`ExtenderError`."""
        assert self.extenders is not None
        ext = self.extenders.filter(pod, self.cluster.nodes, outcome.feasible)
        if not ext.removed and ext.failed.size == 0:
            return outcome, False
        statuses = list(outcome.statuses)
        ids = {st: i for i, st in enumerate(statuses)}
        sid = [ids.setdefault(st, len(ids)) for st in ext.statuses]
        statuses.extend(list(ids)[len(statuses) :])
        merged = FilterOutcome(
            feasible=ext.feasible,
            failed=np.concatenate([outcome.failed, ext.failed]),
            failed_status=np.concatenate([outcome.failed_status, np.asarray(sid, np.int64)]),
            statuses=statuses,
            processed=outcome.processed,
        )
        return merged, ext.removed

    def _bind(self, fwk: Framework, state: CycleState, pod: api.Pod, node: str) -> Status:
        """Upstream ``bind``: a binding extender first, else the Bind plugins."""
        if self.extenders is not None:
            status = self.extenders.bind(pod, node)
            if status is not None:
                return status
        return fwk.run_bind(state, pod, node)

    def _schedule_from_entry(
        self, fwk: Framework, state: CycleState, pod: api.Pod, entry: BatchEntry
    ) -> ScheduleResult | None:
        """Reuse the previous equivalent Pod's results (see :mod:`kubesched.framework.batch`);
        None when the entry cannot serve, and the full path runs instead."""
        if not batch.reuse(fwk, state, pod, entry):
            self.batch.invalidate("exhausted")
            return None
        pick = self.select_host(entry.total, entry.rows)
        entry.chosen = pick
        entry.uses += 1
        n = max(len(self.cluster.nodes), 1)
        self.next_start_node_index = (self.next_start_node_index + entry.processed) % n
        return ScheduleResult(
            self.cluster.nodes.names[int(entry.rows[pick])], 1, int(entry.rows.size), entry
        )

    def select_host(self, total: IntArray | None, rows: IntArray) -> int:
        """Index into ``rows`` of the highest total score.

        Ties are broken uniformly at random by the seeded generator, over the tied nodes in
        row order, so the pick does not depend on where the round-robin search started.
        """
        if total is None:
            return 0
        best = np.flatnonzero(total == total.max())
        if best.size == 1:
            return int(best[0])
        best = best[np.argsort(rows[best], kind="stable")]
        return int(best[int(self.rng.integers(best.size))])

    # ------------------------------------------------------------------ failures
    def _post_filter(
        self, fwk: Framework, state: CycleState, pod: api.Pod, diagnosis: Diagnosis
    ) -> PostFilterResult | None:
        """Run PostFilter (preemption); the result says how to change the nomination."""
        if not fwk.plugins["post_filter"]:
            return None
        result = None
        try:
            result, status = fwk.run_post_filter(state, pod, diagnosis)
        except Exception as e:  # PostFilter faults never lose the Pod
            log.exception("PostFilter fault for %s", pod.key)
            status = Status(Code.ERROR, (str(e),))
        if status.reasons:
            diagnosis.post_filter_msg = status.message()
        if any(p.name == PREEMPTION_PLUGIN for p in fwk.plugins["post_filter"]):
            victims = len(result.victims) if isinstance(result, PostFilterResult) else 0
            self.metrics.record_preemption(victims)
        return result if isinstance(result, PostFilterResult) else None

    def _nominate(self, qp: QueuedPodInfo, result: PostFilterResult) -> None:
        """Apply a PostFilter nomination (upstream ``AddNominatedPod`` + status patch); after a
        preemption, lower-priority Pods nominated to the same node lose their nomination
        (upstream ``prepareCandidate``)."""
        node, pod = result.nominated_node_name, qp.pod
        nominator = self.queue.nominator
        if node:
            for other in nominator.nominated_pods_for_node(node):
                if other.priority < pod.priority:
                    nominator.delete(other.key)
                    queued = self.queue.get(other.key)
                    if queued is not None and queued.pod.nominated_node_name:
                        queued.pod = dataclasses.replace(queued.pod, nominated_node_name="")
        if result.victims:
            keys = tuple(v.key for v in result.victims)
            self.preemptions[pod.key] = (node, keys)
            for k in keys:
                self.preempted_by[k] = pod.key
        if pod.nominated_node_name != node:
            qp.pod = dataclasses.replace(pod, nominated_node_name=node)
        nominator.add(qp.pod, node)

    def _fail(
        self,
        fwk: Framework,
        qp: QueuedPodInfo,
        why: Diagnosis | Status,
        cycle: int,
        start: float,
    ) -> None:
        """Upstream ``handleSchedulingFailure``: record, then requeue with backoff."""
        if isinstance(why, Diagnosis):
            reason, message = POD_REASON_UNSCHEDULABLE, why.message()
            qp.unschedulable_plugins = set(why.unschedulable_plugins)
            result = "unschedulable"
        elif why.is_rejected():
            reason, message = POD_REASON_UNSCHEDULABLE, why.message()
            qp.unschedulable_plugins = {why.plugin} if why.plugin else set()
            result = "unschedulable"
        else:
            reason, message = POD_REASON_SCHEDULER_ERROR, why.message()
            qp.unschedulable_plugins = set()
            result = "error"
        self._record(result, fwk, start)
        qp.message = message
        self.failures[qp.pod.key] = (reason, message)
        self.queue.add_unschedulable_if_not_present(qp, cycle)
        report = getattr(self.api, "pod_scheduling_failed", None)
        if report is not None:
            report(qp.pod, reason, truncate_message(message))

    def _record(self, result: str, fwk: Framework, start: float) -> None:
        self.attempts[result] += 1
        self.metrics.record_attempt(result, fwk.profile_name, time.perf_counter() - start)

    # ------------------------------------------------------------------ metrics
    def sync_metrics(self) -> None:
        """Bring gauges and queue counters up to date; the loops call this about once a
        (real or simulated) second, so nothing is paid per Pod (see :mod:`kubesched.metrics`)."""
        q = self.queue
        pods = self.cluster.pods
        self.metrics.sync(
            pending=q.pending_pods(),
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
        )
        for fwk in self.profiles.values():
            for plugin in fwk.instances.values():
                sync = getattr(plugin, "sync_metrics", None)
                if sync is not None:
                    sync()  # plugin-owned gauges (quota runtime / min / max)


class NoNodesError(Exception):
    """The cluster has no nodes (upstream ``ErrNoNodesAvailable``)."""
