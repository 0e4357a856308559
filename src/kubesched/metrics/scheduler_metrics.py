"""``SchedulerMetrics``: one scheduler's metrics on its own registry (see
:mod:`kubesched.metrics` for what each value means)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from kubesched.metrics.catalog import (
    ATTEMPT_BUCKETS,
    EXTENSION_POINT_BUCKETS,
    OWN_BUCKETS,
    OWN_METRICS,
    PLUGIN_BUCKETS,
    POD_ATTEMPTS_BUCKETS,
    QUEUES,
    RESULTS,
    SLI_BUCKETS,
    STARTUP_BUCKETS,
    STARTUP_METRICS,
    STARTUP_SEGMENT_METRIC,
    STARTUP_SEGMENTS,
    STARTUP_TOTAL_METRIC,
    SUBSYSTEM,
    VICTIMS_BUCKETS,
    WORKLOAD_VICTIMS_BUCKETS,
)
from kubesched.metrics.component import (
    LeaderElectionMetrics,
    RestClientMetrics,
    register_process_collectors,
)
from kubesched.metrics.histogram import BufferedHistogram
from kubesched.metrics.readback import RegistryReader
from kubesched.metrics.recorders import (
    ExtensionPointObserver,
    LabelledObserver,
    PluginRecorder,
    code_label,
)
from kubesched.metrics.sync import PeriodicSync


class SchedulerMetrics(PeriodicSync, RegistryReader):
    """The scheduler's metrics in their own registry; see the module docstring."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry

        def counter(name: str, doc: str, labels: Iterable[str] = ()) -> Counter:
            return Counter(name, doc, list(labels), namespace=SUBSYSTEM, registry=r)

        def gauge(name: str, doc: str, labels: Iterable[str] = ()) -> Gauge:
            return Gauge(name, doc, list(labels), namespace=SUBSYSTEM, registry=r)

        def histogram(
            name: str, doc: str, labels: Iterable[str], buckets: tuple[float, ...]
        ) -> BufferedHistogram:
            return BufferedHistogram(f"{SUBSYSTEM}_{name}", doc, tuple(labels), buckets, r)

        self.schedule_attempts = counter(
            "schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ("result", "profile"),
        )
        self.attempt_duration = histogram(
            "scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ("result", "profile"),
            ATTEMPT_BUCKETS,
        )
        self.algorithm_duration = histogram(
            "scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            (),
            ATTEMPT_BUCKETS,
        )
        self.pending_pods = gauge(
            "pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number "
            "of pods in unschedulablePods that the scheduler attempted to schedule and failed; "
            "'gated' is the number of unschedulable pods that the scheduler never attempted to "
            "schedule because they are gated.",
            ("queue",),
        )
        self.extension_point_duration = histogram(
            "framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ("extension_point", "status", "profile"),
            EXTENSION_POINT_BUCKETS,
        )
        self.plugin_duration = histogram(
            "plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ("plugin", "extension_point", "status"),
            PLUGIN_BUCKETS,
        )
        self.sli_duration = histogram(
            "pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling "
            "queue and might involve multiple scheduling attempts.",
            ("attempts",),
            SLI_BUCKETS,
        )
        self.pod_scheduling_attempts = histogram(
            "pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            (),
            POD_ATTEMPTS_BUCKETS,
        )
        self.queue_incoming = counter(
            "queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            ("queue", "event"),
        )
        self.unschedulable_pods = gauge(
            "unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will increment "
            "the gauge for all plugins that caused it to not schedule and so this metric have "
            "meaning only when broken down by plugin.",
            ("plugin", "profile"),
        )
        self.preemption_attempts = counter(
            "preemption_attempts", "Total preemption attempts in the cluster till now"
        )
        self.preemption_victims = histogram(
            "preemption_victims", "Number of selected preemption victims", (), VICTIMS_BUCKETS
        )
        self.podgroup_attempts = counter(
            "podgroup_schedule_attempts",
            "Number of attempts to schedule pod group, by the result. 'unschedulable' means a "
            "pod group could not be scheduled, while 'error' means an internal scheduler "
            "problem.",
            ("result", "profile"),
        )
        self.podgroup_attempt_duration = histogram(
            "podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds",
            ("result", "profile"),
            ATTEMPT_BUCKETS,
        )
        self.podgroup_algorithm_duration = histogram(
            "podgroup_scheduling_algorithm_duration_seconds",
            "Pod group scheduling algorithm latency in seconds",
            (),
            ATTEMPT_BUCKETS,
        )
        self.queued_entities = gauge(
            "queued_entities",
            "Number of queued scheduling entities ('pod' or 'podgroup'; 'pod' stands for "
            "individual pods that are not members of any podgroup) by the queue type. 'active' "
            "means number of entities in activeQ; 'backoff' means number of entities in "
            "backoffQ; 'unschedulable' means number of entities in unschedulableEntities that "
            "the scheduler attempted to schedule and failed; 'gated' is the number of "
            "unschedulable entities that the scheduler never attempted to schedule because "
            "they are gated.",
            ("queue", "type"),
        )
        self.generated_placements = counter(
            "generated_placements",
            "Number of candidate placements generated when scheduling pod groups.",
            ("profile",),
        )
        self.placement_evaluations = counter(
            "placement_evaluations",
            "Number of candidate placements evaluated when scheduling pod groups, by result. "
            "'feasible' means the pod group fit into the placement, while 'infeasible' means "
            "it did not.",
            ("result", "profile"),
        )
        self.placement_evaluation_duration = histogram(
            "placement_evaluation_duration_seconds",
            "Latency in seconds of evaluating a single candidate placement when scheduling "
            "pod groups, by result. 'feasible' means the pod group fit into the placement, "
            "while 'infeasible' means it did not.",
            ("result", "profile"),
            ATTEMPT_BUCKETS,
        )
        self.workload_preemption_attempts = counter(
            "workload_preemption_attempts",
            "Total preemption attempts initiated by workload (including pod groups) in the "
            "cluster till now.",
            ("result",),
        )
        self.workload_preemption_victims = histogram(
            "workload_preemption_victims",
            "Number of pod preemption victims caused by workload preemption.",
            (),
            WORKLOAD_VICTIMS_BUCKETS,
        )
        self.preemption_workload_disruptions = histogram(
            "preemption_workload_disruptions",
            "Number of workload preemption units being preempted. A single preemption unit can "
            "be all pods in a pod group (in case of DisruptionMode=all), or a single pod (in "
            "case of DisruptionMode=single).",
            ("preemptor",),
            WORKLOAD_VICTIMS_BUCKETS,
        )
        self.cache_size = gauge(
            "cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ("type",),
        )
        self.plugin_evaluation = counter(
            "plugin_evaluation",
            "Number of attempts to schedule pods by each plugin and the extension point "
            "(available only in PreFilter, Filter, PreScore, and Score).",
            ("plugin", "extension_point", "profile"),
        )
        self.permit_wait = histogram(
            "permit_wait_duration_seconds",
            "Duration of waiting on permit.",
            ("result",),
            ATTEMPT_BUCKETS,
        )
        self.queueing_hint_duration = histogram(
            "queueing_hint_execution_duration_seconds",
            "Duration for running a queueing hint function of a plugin.",
            ("plugin", "event", "hint"),
            PLUGIN_BUCKETS,
        )
        self.event_handling = histogram(
            "event_handling_duration_seconds",
            "Event handling latency in seconds.",
            ("event",),
            EXTENSION_POINT_BUCKETS,
        )
        self.inflight_events = gauge(
            "inflight_events",
            "Number of events currently tracked in the scheduling queue.",
            ("event",),
        )
        self._inflight_seen: set[str] = set()
        self._entities_seen: set[tuple[str, str]] = set()
        """``(queue, type)`` of every ``queued_entities`` series shown (upstream creates one
        on the first entity of its type entering its queue; it stays, at 0 when empty)."""
        self._own(counter, gauge, histogram)
        self._attempt_children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._sli_children: dict[str, Any] = {}
        self._seen: dict[tuple[str, ...], int] = {}
        self._unschedulable_seen: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        for q in QUEUES:
            self.pending_pods.labels(queue=q).set(0)
        register_process_collectors(r)
        self.leader_election = LeaderElectionMetrics(r)
        self.rest_client = RestClientMetrics(r)

    def start_profiles(self, profiles: Iterable[str]) -> None:
        """``schedule_attempts_total`` at zero for every result of every profile."""
        for profile in profiles:
            for result in RESULTS:
                self.schedule_attempts.labels(result=result, profile=profile)

    def _own(self, counter: Any, gauge: Any, histogram: Any) -> None:
        """kubesched's own metrics, as :data:`OWN_METRICS` describes them."""
        made: dict[str, Any] = {}
        for full, (kind, labels, doc) in OWN_METRICS.items():
            name = full.removeprefix(SUBSYSTEM + "_")
            if kind == "counter":
                made[full] = counter(name.removesuffix("_total"), doc, labels)
            elif kind == "gauge":
                made[full] = gauge(name, doc, labels)
            else:
                made[full] = histogram(name, doc, labels, OWN_BUCKETS.get(full, SLI_BUCKETS))
        self.batch_attempts = made["scheduler_batch_attempts_total"]
        self.batch_flushes = made["scheduler_batch_cache_flushed_total"]
        self.binder_conflicts = made["scheduler_binder_conflicts_total"]
        self.own: dict[str, Any] = made
        """Every own metric by full name (for rooms that record several, e.g. parallel/)."""
        self.quota_admissions = made["scheduler_quota_admissions_total"]
        self.quota_used = made["scheduler_quota_used"]
        self.gang_attempts = made["scheduler_gang_attempts_total"]
        self.gangs_waiting = made["scheduler_gangs_waiting"]
        self.gang_wait_duration = made["scheduler_gang_wait_duration_seconds"]
        self.quota_limit = made["scheduler_quota_limit"]
        self.quota_borrowed = made["scheduler_quota_borrowed"]
        self.quota_reclaim_victims = made["scheduler_quota_reclaim_victims_total"]
        self.admission_wait = made["scheduler_admission_wait_duration_seconds"]
        self.admission_pending = made["scheduler_admission_pending_workloads"]
        self.gang_time_to_complete = made["scheduler_gang_time_to_complete_seconds"]
        self.extender_duration = made["scheduler_extender_duration_seconds"]
        self.extender_errors = made["scheduler_extender_errors_total"]
        r = self.registry
        seg_doc, total_doc = (
            STARTUP_METRICS[n][2] for n in (STARTUP_SEGMENT_METRIC, STARTUP_TOTAL_METRIC)
        )
        self.startup_segments = BufferedHistogram(
            STARTUP_SEGMENT_METRIC, seg_doc, ("segment",), STARTUP_BUCKETS, r
        )
        self._startup_children = {
            s: self.startup_segments.labels(segment=s) for s in STARTUP_SEGMENTS
        }
        self.startup_total = BufferedHistogram(
            STARTUP_TOTAL_METRIC, total_doc, (), STARTUP_BUCKETS, r
        )
        self.startup_total.labels()

    # ------------------------------------------------------------------ per-attempt recording
    def record_attempt(self, result: str, profile: str, seconds: float) -> None:
        """One scheduling attempt ended with ``result`` after ``seconds`` (children cached)."""
        children = self._attempt_children.get((result, profile))
        if children is None:
            children = (
                self.schedule_attempts.labels(result=result, profile=profile),
                self.attempt_duration.labels(result=result, profile=profile),
            )
            self._attempt_children[(result, profile)] = children
        children[0].inc()
        children[1].observe(seconds)

    def record_scheduled(self, attempts: int, sli_seconds: float) -> None:
        """A Pod was bound after ``attempts`` attempts, ``sli_seconds`` after it first queued."""
        label = "15+" if attempts >= 15 else str(attempts)
        child = self._sli_children.get(label)
        if child is None:
            child = self._sli_children[label] = self.sli_duration.labels(attempts=label)
        child.observe(max(0.0, sli_seconds))
        self.pod_scheduling_attempts.observe(attempts)

    def observe_extension_point(self, profile: str) -> ExtensionPointObserver:
        """A callable ``(point, status, seconds)`` bound to ``profile``."""
        return ExtensionPointObserver(self.extension_point_duration, profile)

    def plugin_recorder(self) -> PluginRecorder:
        """A callable ``(plugin, point, status, seconds)`` for sampled cycles."""
        return PluginRecorder(self.plugin_duration)

    def event_recorder(self) -> LabelledObserver:
        """A callable ``(seconds, event)`` for ``event_handling_duration_seconds``."""
        return LabelledObserver(self.event_handling)

    def hint_recorder(self) -> LabelledObserver:
        """A callable ``(seconds, plugin, event, hint)`` for
        ``queueing_hint_execution_duration_seconds``."""
        return LabelledObserver(self.queueing_hint_duration)

    def record_permit_wait(self, result: str, seconds: float) -> None:
        """A Pod held at Permit was allowed or rejected after ``seconds`` (upstream
        ``WaitOnPermit``; ``result`` is the status code, e.g. ``Success``)."""
        self.permit_wait.labels(result=code_label(result)).observe(max(0.0, seconds))

    # ------------------------------------------------------------------ hooks for other rooms
    def record_preemption(self, victims: int) -> None:
        """A PostFilter preemption attempt; ``victims`` > 0 when a candidate was chosen."""
        self.preemption_attempts.inc()
        if victims > 0:
            self.preemption_victims.observe(victims)

    def observe_preemption_victims(self, victims: int) -> None:
        """``preemption_victims`` alone, no attempt counted: v1.36's PodGroup preemption
        (its ``prepareCandidate`` observes the victims, nothing counts its attempts)."""
        self.preemption_victims.observe(victims)

    def record_pod_group_attempt(
        self, result: str, profile: str, seconds: float, algorithm_seconds: float
    ) -> None:
        """A PodGroup scheduling cycle ended with ``result`` (``scheduled``,
        ``unschedulable``, ``waiting_on_preemption``, ``error``; upstream
        ``observePodGroupScheduleAttemptAndLatency``), its algorithm taking
        ``algorithm_seconds``."""
        self.podgroup_algorithm_duration.observe(max(0.0, algorithm_seconds))
        self.podgroup_attempt_duration.labels(result=result, profile=profile).observe(
            max(0.0, seconds)
        )
        self.podgroup_attempts.labels(result=result, profile=profile).inc()

    def record_generated_placements(self, profile: str, count: int) -> None:
        """A PodGroup cycle's PlacementGenerate plugins offered ``count`` placements
        (upstream ``RecordGeneratedPlacements``, v1.37)."""
        self.generated_placements.labels(profile=profile).inc(count)

    def record_placement_evaluation(self, feasible: bool, profile: str, seconds: float) -> None:
        """One placement tried by the group algorithm, in ``seconds`` (upstream
        ``ObservePlacementEvaluation``, v1.37; an error ends the cycle unobserved)."""
        result = "feasible" if feasible else "infeasible"
        self.placement_evaluations.labels(result=result, profile=profile).inc()
        self.placement_evaluation_duration.labels(result=result, profile=profile).observe(
            max(0.0, seconds)
        )

    def record_workload_preemption_attempt(self, result: str) -> None:
        """A PodGroupPostFilter by DefaultPreemption ended with status code ``result``."""
        self.workload_preemption_attempts.labels(result=code_label(result)).inc()

    def record_workload_preemption(self, victims: int, disruptions: int, pdb: int) -> None:
        """A PodGroup preemption chose ``victims`` Pods in ``disruptions`` PodGroup units
        (upstream ``observeVictims`` for a PodGroup preemptor)."""
        self.workload_preemption_victims.observe(victims)
        if disruptions > 0:
            self.preemption_workload_disruptions.labels(preemptor="PodGroup").observe(disruptions)
        del pdb  # preemption_pdb_violations_total is not modelled (docs/fidelity.md)

    def record_binder_conflict(self, reason: str) -> None:
        """The binder refused a shard's placement."""
        self.binder_conflicts.labels(reason=reason).inc()

    def record_quota(self, quota: str, result: str, used: Mapping[str, int] | None = None) -> None:
        """A quota admission decision, and the quota's usage after it."""
        self.quota_admissions.labels(quota=quota, result=result).inc()
        for resource, value in (used or {}).items():
            self.quota_used.labels(quota=quota, resource=resource).set(value)

    def record_gang(self, profile: str, result: str, wait_seconds: float | None = None) -> None:
        """A gang finished with ``result``; scheduled gangs give their wait."""
        self.gang_attempts.labels(profile=profile, result=result).inc()
        if wait_seconds is not None:
            self.gang_wait_duration.observe(max(0.0, wait_seconds))

    def record_quota_limits(self, quota: str, resources: Mapping[str, Mapping[str, Any]]) -> None:
        """An elastic quota's ``min`` / ``max`` / ``runtime`` / ``used`` per resource."""
        for resource, row in resources.items():
            for limit in ("min", "max", "runtime"):
                if row.get(limit) is not None:
                    self.quota_limit.labels(quota=quota, resource=resource, limit=limit).set(
                        row[limit]
                    )
            borrowed = max(0, int(row.get("used", 0)) - int(row.get("min", 0)))
            self.quota_borrowed.labels(quota=quota, resource=resource).set(borrowed)

    def record_reclaim(self, quota: str, victims: int = 1) -> None:
        """``victims`` Pods of ``quota`` were preempted to give another quota its min back."""
        self.quota_reclaim_victims.labels(quota=quota).inc(victims)

    def record_admission(self, cluster_queue: str, wait_seconds: float) -> None:
        """A workload was admitted by ``cluster_queue`` after ``wait_seconds``."""
        self.admission_wait.labels(cluster_queue=cluster_queue).observe(max(0.0, wait_seconds))

    def set_admission_pending(self, pending: Mapping[str, int]) -> None:
        """Workloads waiting for admission, per ClusterQueue."""
        for cq, n in pending.items():
            self.admission_pending.labels(cluster_queue=cq).set(n)

    def record_gang_complete(self, seconds: float) -> None:
        """A gang had minMember members bound ``seconds`` after its first Pod was created."""
        self.gang_time_to_complete.observe(max(0.0, seconds))

    def record_extender(
        self, extender: str, verb: str, seconds: float, error: str | None, ignored: bool
    ) -> None:
        """One extender call took ``seconds``; ``error`` (``timeout`` / ``error``) when it
        failed, ``ignored`` when the failure was skipped."""
        self.extender_duration.labels(extender=extender, verb=verb).observe(seconds)
        if error is not None:
            self.extender_errors.labels(
                extender=extender, verb=verb, reason=error, ignored=str(ignored).lower()
            ).inc()

    def record_startup(self, segments: Mapping[str, float], total: float) -> None:
        """A Pod became Ready: seconds per startup segment (``admission``, ``scheduling``,
        ``binding``, ``node``; the ones known) and created-to-Ready ``total``; negative values
        (whole-second timestamps against a finer clock) count as 0."""
        for segment, seconds in segments.items():
            self._startup_children[segment].observe(max(0.0, seconds))
        self.startup_total.observe(max(0.0, total))
