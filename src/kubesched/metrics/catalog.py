"""Metric names, label names, bucket boundaries and help texts: upstream's and kubesched's own."""

from __future__ import annotations

import prometheus_client

# upstream exports no *_created series
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]


SUBSYSTEM = "scheduler"


CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST


PLUGIN_SAMPLE_EVERY = 10


"""One scheduling cycle in this many records per-plugin durations (upstream: 10 %)."""


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Upstream ``metrics.ExponentialBuckets``: ``start``, then each times ``factor``."""
    out = []
    for _ in range(count):
        out.append(start)
        start *= factor
    return tuple(out)


ATTEMPT_BUCKETS = exponential_buckets(0.001, 2, 15)


EXTENSION_POINT_BUCKETS = exponential_buckets(0.0001, 2, 12)


PLUGIN_BUCKETS = exponential_buckets(0.00001, 1.5, 20)


SLI_BUCKETS = exponential_buckets(0.01, 2, 20)


POD_ATTEMPTS_BUCKETS = exponential_buckets(1, 2, 5)


VICTIMS_BUCKETS = exponential_buckets(1, 2, 7)


WORKLOAD_VICTIMS_BUCKETS = exponential_buckets(1, 2, 11)
"""``workload_preemption_victims`` and ``preemption_workload_disruptions`` (v1.37)."""


QUEUES = ("active", "backoff", "unschedulable", "gated")

MEMBER_STORES = ("incomplete", "pending")
"""v1.37's two ``pending_pods`` queues of PodGroup members outside the queues
(``incompletePodGroupPods``, ``pendingPodGroupPods``)."""

ENTITY_TYPES = ("pod", "podgroup")
"""Upstream ``metrics.Pod`` / ``metrics.PodGroup``: the ``type`` label of queued entities."""

PLACEMENT_RESULTS = ("feasible", "infeasible")
"""Upstream ``FeasibleResult`` / ``InfeasibleResult``: a placement's evaluation."""


POD_POPPED_IN_FLIGHT_EVENT = "PodPopped"
"""Upstream ``metrics.PodPoppedInFlightEvent``: the ``inflight_events`` label of Pods in flight."""


QUEUEING_HINT_RESULTS = ("Queue", "QueueSkip", "Error")
"""Upstream ``QueueingHintResult*``: the ``hint`` label of queueing hint durations."""


RESULTS = ("scheduled", "unschedulable", "error")


CACHE_TYPES = ("nodes", "pods", "assumed_pods")


UPSTREAM_METRICS: dict[str, tuple[str, tuple[str, ...], tuple[float, ...] | None]] = {
    "scheduler_schedule_attempts_total": ("counter", ("result", "profile"), None),
    "scheduler_scheduling_attempt_duration_seconds": (
        "histogram",
        ("result", "profile"),
        ATTEMPT_BUCKETS,
    ),
    "scheduler_scheduling_algorithm_duration_seconds": ("histogram", (), ATTEMPT_BUCKETS),
    "scheduler_pending_pods": ("gauge", ("queue",), None),
    "scheduler_framework_extension_point_duration_seconds": (
        "histogram",
        ("extension_point", "status", "profile"),
        EXTENSION_POINT_BUCKETS,
    ),
    "scheduler_plugin_execution_duration_seconds": (
        "histogram",
        ("plugin", "extension_point", "status"),
        PLUGIN_BUCKETS,
    ),
    "scheduler_pod_scheduling_sli_duration_seconds": ("histogram", ("attempts",), SLI_BUCKETS),
    "scheduler_pod_scheduling_attempts": ("histogram", (), POD_ATTEMPTS_BUCKETS),
    "scheduler_queue_incoming_pods_total": ("counter", ("queue", "event"), None),
    "scheduler_unschedulable_pods": ("gauge", ("plugin", "profile"), None),
    "scheduler_preemption_attempts_total": ("counter", (), None),
    "scheduler_preemption_victims": ("histogram", (), VICTIMS_BUCKETS),
    "scheduler_podgroup_schedule_attempts_total": ("counter", ("result", "profile"), None),
    "scheduler_podgroup_scheduling_attempt_duration_seconds": (
        "histogram",
        ("result", "profile"),
        ATTEMPT_BUCKETS,
    ),
    "scheduler_podgroup_scheduling_algorithm_duration_seconds": (
        "histogram",
        (),
        ATTEMPT_BUCKETS,
    ),
    "scheduler_queued_entities": ("gauge", ("queue", "type"), None),
    "scheduler_generated_placements_total": ("counter", ("profile",), None),
    "scheduler_placement_evaluations_total": ("counter", ("result", "profile"), None),
    "scheduler_placement_evaluation_duration_seconds": (
        "histogram",
        ("result", "profile"),
        ATTEMPT_BUCKETS,
    ),
    "scheduler_workload_preemption_attempts_total": ("counter", ("result",), None),
    "scheduler_workload_preemption_victims": ("histogram", (), WORKLOAD_VICTIMS_BUCKETS),
    "scheduler_preemption_workload_disruptions": (
        "histogram",
        ("preemptor",),
        WORKLOAD_VICTIMS_BUCKETS,
    ),
    "scheduler_cache_size": ("gauge", ("type",), None),
    "scheduler_plugin_evaluation_total": (
        "counter",
        ("plugin", "extension_point", "profile"),
        None,
    ),
    "scheduler_permit_wait_duration_seconds": ("histogram", ("result",), ATTEMPT_BUCKETS),
    "scheduler_queueing_hint_execution_duration_seconds": (
        "histogram",
        ("plugin", "event", "hint"),
        PLUGIN_BUCKETS,
    ),
    "scheduler_event_handling_duration_seconds": (
        "histogram",
        ("event",),
        EXTENSION_POINT_BUCKETS,
    ),
    "scheduler_inflight_events": ("gauge", ("event",), None),
}


"""Upstream v1.34 metrics we export: full name -> (type, label names, buckets)."""


OWN_METRICS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "scheduler_batch_attempts_total": (
        "counter",
        ("profile", "result"),
        "Reuse of the previous equivalent Pod's filter and score results: result=hit "
        "(reused), miss (searched afresh), unsignable (a plugin cannot tell which Pods are "
        "equivalent). Named after the batching metric of upstream releases after v1.34.",
    ),
    "scheduler_batch_cache_flushed_total": (
        "counter",
        ("profile", "reason"),
        "Cached results dropped, by reason (signature, not_consecutive, nominations, "
        "cluster_changed, expired, exhausted, domain_widened, placement). The cache is shared "
        "by all profiles and counted under the first.",
    ),
    "scheduler_binder_conflicts_total": (
        "counter",
        ("reason",),
        "Placements proposed by a scheduler shard that the conflict-checking binder refused "
        "(reason: resources, node_gone, generation, ...); each sends its Pod back to the queue.",
    ),
    "scheduler_binder_proposals_total": (
        "counter",
        ("shard", "result"),
        "Results of the parallel scheduler's shards as the binder handled them (result: "
        "committed on the proposed node, alternative (committed on a runner-up node), refused "
        "(conflict, Pod requeued), unschedulable, error).",
    ),
    "scheduler_binder_duration_seconds": (
        "histogram",
        ("path",),
        "Seconds the binder spent re-validating and committing one proposal (path: fast "
        "(node unchanged since the shard decided), full (Filter plugins re-run), gang, refused).",
    ),
    "scheduler_dispatcher_retries_total": (
        "counter",
        ("reason",),
        "Pods the dispatcher handed out again: after a binder conflict, or because the shard "
        "holding them crashed (reason: conflict, shard_crash).",
    ),
    "scheduler_dispatcher_in_flight_pods": (
        "gauge",
        ("shard",),
        "Pods the dispatcher has handed to each shard and not yet had an answer for (the "
        "dispatcher's queue length per shard).",
    ),
    "scheduler_quota_admissions_total": (
        "counter",
        ("quota", "result"),
        "Admission decisions of the elastic quota tree (result: admitted, rejected, borrowed).",
    ),
    "scheduler_quota_used": (
        "gauge",
        ("quota", "resource"),
        "Admitted usage per quota and resource, in request units (CPU millicores, memory "
        "bytes, devices).",
    ),
    "scheduler_gang_attempts_total": (
        "counter",
        ("profile", "result"),
        "Gang (PodGroup) outcomes: scheduled (minMember bound), timeout (released at "
        "scheduleTimeoutSeconds), rejected (a member was rejected and the gang released).",
    ),
    "scheduler_gangs_waiting": (
        "gauge",
        (),
        "Gangs with members reserved and waiting at Permit.",
    ),
    "scheduler_gang_wait_duration_seconds": (
        "histogram",
        (),
        "Seconds from a gang's first reserved member to its last, for scheduled gangs.",
    ),
    "scheduler_quota_limit": (
        "gauge",
        ("quota", "resource", "limit"),
        "An elastic quota's min, max (absent when unlimited) and water-filled runtime quota, "
        "in request units.",
    ),
    "scheduler_quota_borrowed": (
        "gauge",
        ("quota", "resource"),
        "Usage above the quota's min, i.e. borrowed from idle min of other quotas.",
    ),
    "scheduler_quota_reclaim_victims_total": (
        "counter",
        ("quota",),
        "Pods preempted to give a quota back its min, by the quota they were charged to.",
    ),
    "scheduler_admission_wait_duration_seconds": (
        "histogram",
        ("cluster_queue",),
        "Seconds from a workload's first Pod's creation to its admission by its ClusterQueue.",
    ),
    "scheduler_admission_pending_workloads": (
        "gauge",
        ("cluster_queue",),
        "Workloads waiting for admission (their Pods held by the admission scheduling gate).",
    ),
    "scheduler_admission_evicted_workloads_total": (
        "counter",
        ("cluster_queue", "reason"),
        "Workloads evicted from their ClusterQueue and requeued (Kueue's "
        "kueue_evicted_workloads_total; reason: Preempted, PodsReadyTimeout).",
    ),
    "scheduler_admission_preempted_workloads_total": (
        "counter",
        ("preempting_cluster_queue", "reason"),
        "Workloads preempted, by the preemptor's ClusterQueue (Kueue's "
        "kueue_preempted_workloads_total; reason: InClusterQueue, InCohortReclamation, "
        "InCohortFairSharing, InCohortReclaimWhileBorrowing).",
    ),
    "scheduler_admission_cluster_queue_weighted_share": (
        "gauge",
        ("cluster_queue",),
        "A ClusterQueue's weighted dominant resource share under fair sharing (Kueue's "
        "kueue_cluster_queue_weighted_share; 0 when not borrowing).",
    ),
    "scheduler_gang_time_to_complete_seconds": (
        "histogram",
        (),
        "Seconds from a gang's first Pod's creation until minMember members were bound.",
    ),
    "scheduler_extender_duration_seconds": (
        "histogram",
        ("extender", "verb"),
        "Wall-clock seconds of one HTTP call to a scheduler extender (one call per scheduling "
        "cycle and verb), failed calls included; extender is its urlPrefix, verb one of "
        "filter, prioritize, bind. Buckets: the attempt-duration buckets.",
    ),
    "scheduler_extender_errors_total": (
        "counter",
        ("extender", "verb", "reason", "ignored"),
        "Failed extender calls (reason: timeout, error). ignored=true: the failure was "
        "skipped (an ignorable extender, or any prioritize failure, as upstream); "
        "ignored=false: it failed the scheduling attempt or the binding.",
    ),
    "scheduler_gpu_fragmentation_ratio": (
        "gauge",
        (),
        "Idle GPU capacity that the target workload's common task shapes cannot use (the FGD "
        "paper's fragmentation), as a share of all GPU capacity; set by the GpuDevices plugin.",
    ),
    "scheduler_gpu_idle_whole_nodes": (
        "gauge",
        (),
        "Nodes of 8 GPUs with every GPU idle (where an 8-GPU job can start).",
    ),
    "scheduler_gpu_pods_waiting_for_whole_node": (
        "gauge",
        (),
        "Pending multi-GPU Pods (tried by a profile with GpuDevices) that ask for more idle "
        "GPUs than any one node has now, whatever the free GPUs of the cluster in total.",
    ),
    "scheduler_gpu_cross_numa_pods": (
        "gauge",
        (),
        "Pods holding GPUs on more than one NUMA node (per the node's GPU topology).",
    ),
}


"""kubesched's own metrics: full name -> (type, label names, help); histograms use the
SLI buckets unless :data:`OWN_BUCKETS` names others."""


OWN_BUCKETS: dict[str, tuple[float, ...]] = {
    "scheduler_extender_duration_seconds": ATTEMPT_BUCKETS,
    "scheduler_binder_duration_seconds": PLUGIN_BUCKETS,
}


"""Buckets of own histograms that are not SLI-sized."""


STARTUP_SEGMENTS = ("admission", "scheduling", "binding", "node")
"""The ``segment`` label of :data:`STARTUP_SEGMENT_METRIC`, in order along a Pod's startup."""


STARTUP_BUCKETS = exponential_buckets(0.05, 2, 16)
"""50 ms to ~27 min: a Pod's startup, from a cached image to a long queue."""


STARTUP_SEGMENT_METRIC = "kubesched_pod_startup_segment_duration_seconds"
STARTUP_TOTAL_METRIC = "kubesched_pod_startup_duration_seconds"
STARTUP_METRICS: dict[str, tuple[str, tuple[str, ...], str]] = {
    STARTUP_SEGMENT_METRIC: (
        "histogram",
        ("segment",),
        "Seconds a Pod this scheduler scheduled spent in each segment of its startup: "
        "admission (creation to scheduling gates removed), scheduling (to the scheduling "
        "cycle's decision), binding (to the bind accepted by the API), node (to the Ready "
        "condition). Live mode only; kubesched's own name (upstream has no such metric).",
    ),
    STARTUP_TOTAL_METRIC: (
        "histogram",
        (),
        "Seconds from a Pod's creation to its Ready condition, for the Pods this scheduler "
        "scheduled (the four segments of kubesched_pod_startup_segment_duration_seconds "
        "together). Live mode only.",
    ),
}
"""kubesched's startup metrics, in its own ``kubesched_`` namespace so that no dashboard
mistakes them for a component's: full name -> (type, label names, help)."""
