"""Every Prometheus metric kubesched exports, with upstream kube-scheduler's names and buckets.

One :class:`SchedulerMetrics` per scheduler, each with its own ``CollectorRegistry`` so that
several schedulers (tests, sweeps) can live in one process.  This is the only module that
imports ``prometheus_client``; :class:`MetricsServer` serves ``/metrics`` and ``/healthz``.

Upstream: ``pkg/scheduler/metrics/metrics.go`` (v1.34).  Names, label names, types, help
strings and bucket boundaries are upstream's, so dashboards written for kube-scheduler work
unchanged.  What the values mean here:

- attempt, algorithm, extension-point and plugin durations are wall-clock seconds of
  computation (in the simulator too: "is the scheduler slow?" is a question about real CPU);
  an attempt (``scheduling_attempt_duration_seconds``) is observed where upstream's
  ``schedule_one.go`` observes it (a bound Pod after its binding cycle, a failure in the
  failure handler) but counts only the attempt's own work: its scheduling cycle, its
  binding cycle, and the shard's share for a Pod handed to a shard, never the pauses in
  between (a Permit wait, the binder's queue, other Pods' cycles, virtual latencies,
  ``--pace`` sleeps; see :func:`kubesched.scheduler.commit.resume`);
- the SLI duration (``pod_scheduling_sli_duration_seconds``) uses the scheduler's clock, i.e.
  simulated seconds in ``simulate`` ("how long did the Pod wait?");
- gauges (``pending_pods``, ``unschedulable_pods``, ``cache_size``) and
  ``queue_incoming_pods_total`` are brought up to date by :meth:`SchedulerMetrics.sync`, which
  the loops call once per (real or simulated) second instead of on every queue move;
- ``plugin_execution_duration_seconds`` is sampled: one scheduling cycle in
  :data:`PLUGIN_SAMPLE_EVERY` (upstream: a random 10 %; a fixed stride keeps seeded runs
  deterministic).  One observation covers a plugin's call over a whole array of nodes, where
  upstream observes one call per node;
- ``plugin_evaluation_total{plugin, extension_point, profile}`` counts as upstream does, one
  per PreFilter / PreScore call that did not Skip and one per *node* a Filter / Score call
  answered for (Filter: the nodes still feasible when the plugin ran), but is summed per call
  in the framework and published by :meth:`SchedulerMetrics.sync`; Pods whose results are
  reused from an equivalent Pod evaluate no plugin and count nothing;
- ``permit_wait_duration_seconds{result}`` is the scheduler's clock from the hold at Permit to
  the decision (simulated seconds in the simulator), ``result`` the status code (``Success``,
  ``Unschedulable``);
- ``queueing_hint_execution_duration_seconds{plugin, event, hint}`` (wall clock) times every
  hint call (``hint``: ``Queue``, ``QueueSkip``, ``Error``), and
  ``event_handling_duration_seconds{event}`` every informer event the scheduler handles
  (``NodeAdd``, ``AssignedPodAdd``, ``UnschedulablePodUpdate``, ...) as upstream's event
  handlers do;
- ``inflight_events{event}`` is what the queue keeps for Pods in flight (``PodPopped``: the
  Pods; other labels: events that arrived meanwhile, held for their queueing hints), set at
  each sync.

Histograms and counters without labels (``scheduling_algorithm_duration_seconds``,
``preemption_victims``, ``preemption_attempts_total``, ``pod_scheduling_attempts``) are exported
at zero from the start, as client_golang exports them, so dashboards show 0 rather than "No
data"; :meth:`SchedulerMetrics.start_profiles` also starts ``schedule_attempts_total`` at zero
for every result of every profile (upstream creates those series at the first attempt).

The process, leader-election and API-client metrics every Kubernetes component exports are
on the same registry (:mod:`kubesched.metrics.component`).

kubesched's own metrics (upstream has none) use the same ``scheduler_`` prefix and are
documented where they are defined (:data:`OWN_METRICS`), except the startup split of live
mode, ``kubesched_pod_startup_segment_duration_seconds{segment}`` and
``kubesched_pod_startup_duration_seconds`` (:data:`STARTUP_METRICS`,
:mod:`kubesched.live.startup`), which describe Pods more than the scheduler and so carry
kubesched's own namespace; every ``segment`` series starts at zero."""

from __future__ import annotations

from kubesched.metrics.catalog import (
    ATTEMPT_BUCKETS,
    CACHE_TYPES,
    CONTENT_TYPE,
    EXTENSION_POINT_BUCKETS,
    OWN_BUCKETS,
    OWN_METRICS,
    PLUGIN_BUCKETS,
    PLUGIN_SAMPLE_EVERY,
    POD_ATTEMPTS_BUCKETS,
    POD_POPPED_IN_FLIGHT_EVENT,
    QUEUEING_HINT_RESULTS,
    QUEUES,
    RESULTS,
    SLI_BUCKETS,
    STARTUP_BUCKETS,
    STARTUP_METRICS,
    STARTUP_SEGMENT_METRIC,
    STARTUP_SEGMENTS,
    STARTUP_TOTAL_METRIC,
    SUBSYSTEM,
    UPSTREAM_METRICS,
    VICTIMS_BUCKETS,
    exponential_buckets,
)
from kubesched.metrics.component import (
    COMPONENT_METRICS,
    REST_CLIENT_BUCKETS,
    LeaderElectionMetrics,
    RestClientMetrics,
    host_label,
)
from kubesched.metrics.histogram import BufferedChild, BufferedHistogram, histogram_quantile
from kubesched.metrics.recorders import (
    ExtensionPointObserver,
    LabelledObserver,
    PluginRecorder,
    code_label,
)
from kubesched.metrics.scheduler_metrics import SchedulerMetrics
from kubesched.metrics.server import MetricsServer

__all__ = [
    "ATTEMPT_BUCKETS",
    "CACHE_TYPES",
    "COMPONENT_METRICS",
    "CONTENT_TYPE",
    "EXTENSION_POINT_BUCKETS",
    "OWN_BUCKETS",
    "OWN_METRICS",
    "PLUGIN_BUCKETS",
    "PLUGIN_SAMPLE_EVERY",
    "POD_ATTEMPTS_BUCKETS",
    "POD_POPPED_IN_FLIGHT_EVENT",
    "QUEUEING_HINT_RESULTS",
    "QUEUES",
    "REST_CLIENT_BUCKETS",
    "RESULTS",
    "SLI_BUCKETS",
    "STARTUP_BUCKETS",
    "STARTUP_METRICS",
    "STARTUP_SEGMENTS",
    "STARTUP_SEGMENT_METRIC",
    "STARTUP_TOTAL_METRIC",
    "SUBSYSTEM",
    "UPSTREAM_METRICS",
    "VICTIMS_BUCKETS",
    "BufferedChild",
    "BufferedHistogram",
    "ExtensionPointObserver",
    "LabelledObserver",
    "LeaderElectionMetrics",
    "MetricsServer",
    "PluginRecorder",
    "RestClientMetrics",
    "SchedulerMetrics",
    "code_label",
    "exponential_buckets",
    "histogram_quantile",
    "host_label",
]
