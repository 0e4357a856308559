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

import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework import batch, events
from kubesched.framework.batch import BatchCache, BatchEntry
from kubesched.framework.interface import (
    ApiClient,
    Code,
    CycleState,
    Handle,
    IntArray,
    PluginFactory,
    QueuedPodInfo,
    Status,
)
from kubesched.framework.runtime import FilterOutcome, Framework, PluginError
from kubesched.metrics import SchedulerMetrics
from kubesched.plugins.registry import in_tree_registry
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.state.cache import CacheError, ClusterState

log = logging.getLogger(__name__)

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
POD_REASON_UNSCHEDULABLE = "Unschedulable"
POD_REASON_SCHEDULER_ERROR = "SchedulerError"
NOTE_LENGTH_LIMIT = 1024


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
        reg = registry or in_tree_registry()
        self.profiles: dict[str, Framework] = {
            p.scheduler_name: Framework(
                p,
                reg,
                self.handle,
                percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
                observe=self.metrics.observe_extension_point(p.scheduler_name),
            )
            for p in config.profiles
        }
        first = next(iter(self.profiles.values()))
        self.queue = SchedulingQueue(
            clock=clock,
            sort_key=first.queue_sort_key(),
            pre_enqueue={n: f.plugins["pre_enqueue"] for n, f in self.profiles.items()},
            hints={n: f.events_to_register() for n, f in self.profiles.items()},
            initial_backoff=float(config.pod_initial_backoff_seconds),
            max_backoff=float(config.pod_max_backoff_seconds),
        )
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

    def on_pod_add(self, pod: api.Pod) -> None:
        """A Pod appeared: bound ones go to the cache, ours to the queue."""
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
        if self.cluster.remove_pod(pod.key) is not None:
            self.queue.move_all_to_active_or_backoff(events.ASSIGNED_POD_DELETE, pod, None)
        else:
            self.queue.delete(pod)
        self.failures.pop(pod.key, None)

    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        """A Namespace, Service, PodDisruptionBudget or other object changed."""
        kind = self.cluster.apply_object(obj, deleted=deleted)
        event = events.object_event(kind, deleted)
        if event is not None:
            self.queue.move_all_to_active_or_backoff(event, None, obj)

    # ------------------------------------------------------------------ the cycle
    def schedule_one(self) -> bool:
        """Run one scheduling cycle; False when no Pod was ready to pop."""
        qp = self.queue.pop()
        if qp is None:
            return False
        pod = qp.pod
        fwk = self.profiles.get(pod.scheduler_name)
        if fwk is None or self.cluster.is_assumed(pod.key):
            self.queue.done(pod)
            return True
        self.pod_attempts[pod.key] += 1
        start = time.perf_counter()
        state = CycleState()
        cycle = self.queue.scheduling_cycle
        try:
            result = self.schedule_pod(fwk, state, pod)
        except FitError as fit:
            self._post_filter(fwk, state, pod, fit.diagnosis)
            self._fail(fwk, qp, fit.diagnosis, cycle, start)
            return True
        except (PluginError, NoNodesError) as e:
            self._fail(fwk, qp, Status(Code.ERROR, (str(e),)), cycle, start)
            return True
        except Exception as e:  # a faulty plugin must not stop the loop
            log.exception("plugin fault while scheduling %s", pod.key)
            self._fail(fwk, qp, Status(Code.ERROR, (f"{type(e).__name__}: {e}",)), cycle, start)
            return True
        assumed = pod.bound_to(result.node)
        self.cluster.assume_pod(assumed, result.node)
        if result.entry is not None:
            result.entry.version = self.cluster.version
            result.entry.cycle = cycle
            self.batch.store(result.entry)
        status = self._reserve_and_permit(fwk, state, assumed, result.node)
        if not status.is_success():
            self.cluster.forget_pod(assumed)
            self._requeue_after_forget(assumed, status)
            self._fail(fwk, qp, status, cycle, start)
            return True
        self.in_flight_bindings += 1
        self.submit_binding(lambda: self._binding_cycle(fwk, state, qp, assumed, start, cycle))
        return True

    def _reserve_and_permit(
        self, fwk: Framework, state: CycleState, assumed: api.Pod, node: str
    ) -> Status:
        try:
            status = fwk.run_reserve(state, assumed, node)
            if status.is_success():
                status = fwk.run_permit(state, assumed, node)
                if status.code == Code.WAIT:
                    status = Status()  # waiting pods come with gangs (job layer)
        except Exception as e:
            status = Status(Code.ERROR, (f"{type(e).__name__}: {e}",))
        if not status.is_success():
            fwk.run_unreserve(state, assumed, node)
        return status

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
                status = fwk.run_bind(state, assumed, node)
        except Exception as e:
            status = Status(Code.ERROR, (f"{type(e).__name__}: {e}",))
        self.cluster.finish_binding(assumed)
        if not status.is_success():
            fwk.run_unreserve(state, assumed, node)
            if self.cluster.is_assumed(assumed.key):
                self.cluster.forget_pod(assumed)
            self._requeue_after_forget(assumed, status)
            self._fail(fwk, qp, status, cycle, start)
            return
        fwk.run_post_bind(state, assumed, node)
        self._record("scheduled", fwk, start)
        now = self.clock()
        first = qp.initial_attempt_timestamp if qp.initial_attempt_timestamp is not None else now
        attempts = "15+" if qp.attempts >= 15 else str(qp.attempts)
        self.metrics.sli_duration.labels(attempts=attempts).observe(max(0.0, now - first))
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
    def schedule_pod(self, fwk: Framework, state: CycleState, pod: api.Pod) -> ScheduleResult:
        """Find the node for ``pod`` (upstream ``schedulePod``); raises :class:`FitError`."""
        table = self.cluster.nodes
        order = table.order()
        n = int(order.size)
        if n == 0:
            raise NoNodesError(NO_NODES_AVAILABLE)
        if self.batch.enabled:
            cycle = self.queue.scheduling_cycle
            entry = self.batch.lookup(fwk.profile_name, fwk.sign(pod), cycle, self.cluster.version)
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
            raise FitError(Diagnosis(n, Counter(), rejectors, pre_filter_msg=status.message()))
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
        if not fwk.has_score_plugins():
            to_find = min(to_find, 1)
        start = self.next_start_node_index % max(m, 1)
        rotated = np.concatenate([candidates[start:], candidates[:start]]) if start else candidates
        outcome = fwk.find_nodes_that_pass_filters(state, pod, rotated, to_find)
        self.next_start_node_index = (self.next_start_node_index + outcome.processed) % n
        feasible = outcome.feasible
        if feasible.size == 0:
            counts = outcome.reason_counts()
            if absent is not None and n > outcome.failed.size:
                counts[absent.reasons[0]] += n - int(outcome.failed.size)
            plugins = rejectors | outcome.rejecting_plugins()
            raise FitError(Diagnosis(n, counts, plugins, outcome=outcome))
        if feasible.size == 1:
            return ScheduleResult(table.names[int(feasible[0])], outcome.processed, 1)
        pre_status = fwk.run_pre_score(state, pod, feasible)
        if not pre_status.is_success():
            raise PluginError(pre_status.plugin, pre_status.message())
        if not fwk.has_score_plugins():
            return ScheduleResult(
                table.names[int(feasible[0])], outcome.processed, int(feasible.size)
            )
        scored = fwk.run_score(state, pod, feasible)
        pick = self.select_host(scored.total, feasible)
        entry = None
        if self.batch.enabled and absent is None:
            signature = fwk.sign(pod)
            if signature is not None:
                entry = batch.build_entry(
                    fwk, state, signature, feasible, scored, pick, outcome.processed
                )
        return ScheduleResult(
            table.names[int(feasible[pick])], outcome.processed, int(feasible.size), entry
        )

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
    ) -> None:
        if not fwk.plugins["post_filter"]:
            return
        try:
            _result, status = fwk.run_post_filter(state, pod, diagnosis)
        except Exception as e:  # PostFilter faults never lose the Pod
            log.exception("PostFilter fault for %s", pod.key)
            status = Status(Code.ERROR, (str(e),))
        if status.reasons:
            diagnosis.post_filter_msg = status.message()

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
        self.metrics.schedule_attempts.labels(result=result, profile=fwk.profile_name).inc()
        self.metrics.attempt_duration.labels(result=result, profile=fwk.profile_name).observe(
            time.perf_counter() - start
        )


class NoNodesError(Exception):
    """The cluster has no nodes (upstream ``ErrNoNodesAvailable``)."""
