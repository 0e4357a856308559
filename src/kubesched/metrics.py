"""Every Prometheus metric kubesched exports, with upstream kube-scheduler's names and buckets.

One :class:`SchedulerMetrics` per scheduler, each with its own ``CollectorRegistry`` so that
several schedulers (tests, sweeps) can live in one process.  This is the only module that
imports ``prometheus_client``; :class:`MetricsServer` serves ``/metrics`` and ``/healthz``.

Upstream: ``pkg/scheduler/metrics/metrics.go`` (v1.34).  Names, label names, types, help
strings and bucket boundaries are upstream's, so dashboards written for kube-scheduler work
unchanged.  What the values mean here:

- attempt, algorithm, extension-point and plugin durations are wall-clock seconds of
  computation (in the simulator too: "is the scheduler slow?" is a question about real CPU);
- the SLI duration (``pod_scheduling_sli_duration_seconds``) uses the scheduler's clock, i.e.
  simulated seconds in ``simulate`` ("how long did the Pod wait?");
- gauges (``pending_pods``, ``unschedulable_pods``, ``cache_size``) and
  ``queue_incoming_pods_total`` are brought up to date by :meth:`SchedulerMetrics.sync`, which
  the loops call once per (real or simulated) second instead of on every queue move;
- ``plugin_execution_duration_seconds`` is sampled: one scheduling cycle in
  :data:`PLUGIN_SAMPLE_EVERY` (upstream: a random 10 %; a fixed stride keeps seeded runs
  deterministic).  One observation covers a plugin's call over a whole array of nodes, where
  upstream observes one call per node.

kubesched's own metrics (upstream has none) use the same ``scheduler_`` prefix and are
documented where they are defined (:data:`OWN_METRICS`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

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

QUEUES = ("active", "backoff", "unschedulable", "gated")
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
    "scheduler_cache_size": ("gauge", ("type",), None),
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
        "Cached results dropped, by reason (signature, not_consecutive, cluster_changed, "
        "expired, exhausted). The cache is shared by all profiles and counted under the first.",
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
}
"""kubesched's own metrics: full name -> (type, label names, help); histograms use the
SLI buckets unless :data:`OWN_BUCKETS` names others."""

OWN_BUCKETS: dict[str, tuple[float, ...]] = {
    "scheduler_extender_duration_seconds": ATTEMPT_BUCKETS,
    "scheduler_binder_duration_seconds": PLUGIN_BUCKETS,
}
"""Buckets of own histograms that are not SLI-sized."""


class BufferedChild:
    """One label set of a :class:`BufferedHistogram`: ``observe`` only appends."""

    __slots__ = ("_lock", "buckets", "pending", "total")

    def __init__(self, n_buckets: int) -> None:
        self.pending: list[float] = []
        self.buckets = np.zeros(n_buckets, dtype=np.int64)
        self.total = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        """Record one observation (cheap: counted into buckets at collection)."""
        self.pending.append(value)

    def flush(self, bounds: np.ndarray[Any, np.dtype[np.float64]]) -> None:
        """Count pending observations into the buckets (``value <= le``, as Prometheus)."""
        with self._lock:
            values, self.pending = self.pending, []
        if values:
            arr = np.asarray(values, dtype=np.float64)
            idx = np.searchsorted(bounds, arr, side="left")
            self.buckets += np.bincount(idx, minlength=self.buckets.shape[0])
            self.total += float(arr.sum())


class BufferedHistogram:
    """A Prometheus histogram for the hot path: ``observe`` appends to a list, and the
    observations are bucketed with numpy when the registry is collected.  Exposes exactly
    what ``prometheus_client.Histogram`` would (``_bucket``/``_sum``/``_count`` series, Go
    float formatting of ``le``) at a fraction of the per-observation cost."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: tuple[str, ...],
        buckets: tuple[float, ...],
        registry: CollectorRegistry,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = labelnames
        self._bounds = np.asarray([*buckets, float("inf")], dtype=np.float64)
        self._le = [floatToGoString(b) for b in self._bounds.tolist()]  # type: ignore[no-untyped-call]
        self._children: dict[tuple[str, ...], BufferedChild] = {}
        self._lock = threading.Lock()
        registry.register(self)

    def labels(self, *values: str, **labels: str) -> BufferedChild:
        """The child for one label set (by position or by name)."""
        key = tuple(values) if values else tuple(str(labels[n]) for n in self.labelnames)
        child = self._children.get(key)
        if child is None:
            with self._lock:
                child = self._children.setdefault(key, BufferedChild(self._bounds.shape[0]))
        return child

    def observe(self, value: float) -> None:
        """Observe on the histogram without labels."""
        self.labels().observe(value)

    def describe(self) -> list[Metric]:
        """The family without samples (so registration does not collect)."""
        return [HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)]

    def collect(self) -> Iterator[Metric]:
        """Bucket what was observed since the last collection and yield the family."""
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for key, child in sorted(self._children.items()):
            child.flush(self._bounds)
            cumulative = np.cumsum(child.buckets).tolist()
            family.add_metric(
                list(key), list(zip(self._le, cumulative, strict=True)), sum_value=child.total
            )
        yield family


class SchedulerMetrics:
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
        self.cache_size = gauge(
            "cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ("type",),
        )
        self._own(counter, gauge, histogram)
        self._attempt_children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._sli_children: dict[str, Any] = {}
        self._seen: dict[tuple[str, ...], int] = {}
        self._unschedulable_seen: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        for q in QUEUES:
            self.pending_pods.labels(queue=q).set(0)

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

    # ------------------------------------------------------------------ hooks for other rooms
    def record_preemption(self, victims: int) -> None:
        """A PostFilter preemption attempt; ``victims`` > 0 when a candidate was chosen."""
        self.preemption_attempts.inc()
        if victims > 0:
            self.preemption_victims.observe(victims)

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

    # ------------------------------------------------------------------ periodic sync
    def sync(
        self,
        *,
        pending: Mapping[str, int],
        incoming: Mapping[tuple[str, str], int] | None = None,
        rejected: Iterable[tuple[str, Iterable[str]]] = (),
        cache: Mapping[str, int] | None = None,
        batch_profile: str = "",
        batch_attempts: Mapping[str, int] | None = None,
        batch_flushes: Mapping[str, int] | None = None,
    ) -> None:
        """Bring gauges and queue counters up to date (call about once a second).

        ``pending``: queue -> Pods (``SchedulingQueue.pending_pods()``); ``incoming``: the
        queue's cumulative ``(queue, event) -> n`` (counters grow by the difference since the
        last sync); ``rejected``: one ``(profile, plugins)`` per queued Pod whose last attempt
        (or PreEnqueue) was rejected by ``plugins``; ``cache``: type -> count;
        ``batch_attempts`` / ``batch_flushes``: cumulative result / reason counts of result
        reuse, exported under ``batch_profile``.
        """
        with self._lock:
            for q in QUEUES:
                self.pending_pods.labels(queue=q).set(pending.get(q, 0))
            for key, n in (incoming or {}).items():
                self._advance(
                    self.queue_incoming, ("incoming", *key), n, queue=key[0], event=key[1]
                )
            for result, n in (batch_attempts or {}).items():
                self._advance(
                    self.batch_attempts, ("batch", result), n, profile=batch_profile, result=result
                )
            for reason, n in (batch_flushes or {}).items():
                self._advance(
                    self.batch_flushes, ("flush", reason), n, profile=batch_profile, reason=reason
                )
            counts: dict[tuple[str, str], int] = {}
            for profile, plugins in rejected:
                for plugin in plugins:
                    counts[(plugin, profile)] = counts.get((plugin, profile), 0) + 1
            for key in self._unschedulable_seen - counts.keys():
                self.unschedulable_pods.labels(plugin=key[0], profile=key[1]).set(0)
            for key, n in counts.items():
                self.unschedulable_pods.labels(plugin=key[0], profile=key[1]).set(n)
            self._unschedulable_seen |= counts.keys()
            for kind, n in (cache or {}).items():
                self.cache_size.labels(type=kind).set(n)

    def _advance(self, metric: Counter, key: tuple[str, ...], total: int, **labels: str) -> None:
        """Grow a counter to the cumulative ``total`` kept elsewhere (never backwards)."""
        delta = total - self._seen.get(key, 0)
        if delta > 0:
            metric.labels(**labels).inc(delta)
            self._seen[key] = total

    # ------------------------------------------------------------------ reading back
    def exposition(self) -> bytes:
        """The text exposition format of every metric."""
        data: bytes = generate_latest(self.registry)
        return data

    def samples(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every sample: ``(name, sorted label pairs) -> value``."""
        out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        for family in self.registry.collect():
            for s in family.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = float(s.value)
        return out

    def histogram(self, name: str, by: str) -> dict[str, dict[str, float | None]]:
        """Per value of label ``by`` of histogram ``name`` (full name, no suffix): the
        observation count and the 0.5 / 0.99 quantiles estimated as Prometheus's
        ``histogram_quantile`` does, summed over the other labels."""
        buckets: dict[str, dict[float, float]] = {}
        for (sample, labels), value in self.samples().items():
            if sample != name + "_bucket":
                continue
            d = dict(labels)
            group = buckets.setdefault(d.get(by, ""), {})
            le = float(d["le"])
            group[le] = group.get(le, 0.0) + value
        out: dict[str, dict[str, float | None]] = {}
        for key, cum in sorted(buckets.items()):
            pairs = sorted(cum.items())
            out[key] = {
                "count": pairs[-1][1] if pairs else 0.0,
                "p50": histogram_quantile(0.5, pairs),
                "p99": histogram_quantile(0.99, pairs),
            }
        return out


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus's ``histogram_quantile`` over cumulative ``(le, count)`` pairs sorted by
    ``le`` (the last one ``+Inf``): linear interpolation inside the bucket holding the rank;
    a rank in the ``+Inf`` bucket gives the highest finite bound.  None with no observations."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    total = buckets[-1][1]
    rank = q * total
    prev_le, prev_count = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if le == float("inf"):
                return prev_le
            if count == prev_count:
                return le
            return prev_le + (le - prev_le) * (rank - prev_count) / (count - prev_count)
        prev_le, prev_count = le, count
    return prev_le


class ExtensionPointObserver:
    """Records ``scheduler_framework_extension_point_duration_seconds`` for one profile.

    ``status`` may be upstream's code string or an enum name (``UNSCHEDULABLE_AND_UNRESOLVABLE``
    or ``Unschedulable_And_Unresolvable``); it is exported as upstream's
    ``UnschedulableAndUnresolvable``.
    """

    __slots__ = ("_children", "_metric", "_profile")

    def __init__(self, metric: BufferedHistogram, profile: str) -> None:
        self._metric = metric
        self._profile = profile
        self._children: dict[tuple[str, str], Any] = {}

    def __call__(self, point: str, status: str, seconds: float) -> None:
        child = self._children.get((point, status))
        if child is None:
            child = self._metric.labels(
                extension_point=point, status=code_label(status), profile=self._profile
            )
            self._children[(point, status)] = child
        child.observe(seconds)


class PluginRecorder:
    """Records ``scheduler_plugin_execution_duration_seconds`` (children cached)."""

    __slots__ = ("_children", "_metric")

    def __init__(self, metric: BufferedHistogram) -> None:
        self._metric = metric
        self._children: dict[tuple[str, str, str], Any] = {}

    def __call__(self, plugin: str, point: str, status: str, seconds: float) -> None:
        key = (plugin, point, status)
        child = self._children.get(key)
        if child is None:
            child = self._metric.labels(
                plugin=plugin, extension_point=point, status=code_label(status)
            )
            self._children[key] = child
        child.observe(seconds)


def code_label(status: str) -> str:
    """Upstream ``Code.String()`` from an enum-style name (``UNSCHEDULABLE_AND_UNRESOLVABLE``)."""
    if "_" not in status and not status.isupper():
        return status
    return "".join(part.title() for part in status.split("_"))


class MetricsServer:
    """``/metrics`` (text exposition) and ``/healthz`` on a background thread.

    ``port`` 0 picks a free port (read it back from :attr:`port`).  Loopback by default.
    """

    def __init__(self, metrics: SchedulerMetrics, address: str = "127.0.0.1", port: int = 0):
        registry = metrics.registry

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    body, ctype, code = generate_latest(registry), CONTENT_TYPE, 200
                elif path in ("/healthz", "/livez", "/readyz"):
                    body, ctype, code = b"ok", "text/plain; charset=utf-8", 200
                else:
                    body, ctype, code = b"not found\n", "text/plain; charset=utf-8", 404
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                del format, args  # scrapes are not worth a log line

        self._server = ThreadingHTTPServer((address, port), Handler)
        self._server.daemon_threads = True
        self.address = address
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="kubesched-metrics", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """The ``/metrics`` URL."""
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
