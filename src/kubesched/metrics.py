"""Every Prometheus metric kubesched exports, with upstream kube-scheduler's names and buckets.

One :class:`SchedulerMetrics` per scheduler, each with its own ``CollectorRegistry`` so that
several schedulers (tests, sweeps) can live in one process.  This is the only module that
imports ``prometheus_client``.

Upstream sources: ``pkg/scheduler/metrics/metrics.go`` (v1.34).  Durations of attempts and
extension points are measured in wall-clock seconds of computation; the SLI duration uses the
scheduler's clock (virtual seconds in the simulator).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

SUBSYSTEM = "scheduler"

# Upstream: metrics.ExponentialBuckets(0.001, 2, 15)
ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))
# Upstream: metrics.ExponentialBuckets(0.0001, 2, 12)
EXTENSION_POINT_BUCKETS = tuple(0.0001 * 2**i for i in range(12))
# Upstream: metrics.ExponentialBuckets(0.00001, 1.5, 20)
PLUGIN_BUCKETS = tuple(0.00001 * 1.5**i for i in range(20))
# Upstream: metrics.ExponentialBuckets(0.01, 2, 20)
SLI_BUCKETS = tuple(0.01 * 2**i for i in range(20))

QUEUES = ("active", "backoff", "unschedulable", "gated")


class SchedulerMetrics:
    """The scheduler's metrics in their own registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.schedule_attempts = Counter(
            "schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            namespace=SUBSYSTEM,
            registry=r,
        )
        self.attempt_duration = Histogram(
            "scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            namespace=SUBSYSTEM,
            buckets=ATTEMPT_BUCKETS,
            registry=r,
        )
        self.pending_pods = Gauge(
            "pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number "
            "of pods in unschedulablePods that the scheduler attempted to schedule and failed; "
            "'gated' is the number of unschedulable pods that the scheduler never attempted to "
            "schedule because they are gated.",
            ["queue"],
            namespace=SUBSYSTEM,
            registry=r,
        )
        self.extension_point_duration = Histogram(
            "framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            namespace=SUBSYSTEM,
            buckets=EXTENSION_POINT_BUCKETS,
            registry=r,
        )
        self.sli_duration = Histogram(
            "pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling "
            "queue and might involve multiple scheduling attempts.",
            ["attempts"],
            namespace=SUBSYSTEM,
            buckets=SLI_BUCKETS,
            registry=r,
        )
        self.queue_incoming = Counter(
            "queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            namespace=SUBSYSTEM,
            registry=r,
        )
        self.unschedulable_pods = Gauge(
            "unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will increment "
            "the gauge for all plugins that caused it to not schedule and so this metric have "
            "meaning only when broken down by plugin.",
            ["plugin", "profile"],
            namespace=SUBSYSTEM,
            registry=r,
        )

    def observe_extension_point(self, profile: str) -> ExtensionPointObserver:
        """A callable ``(point, status, seconds)`` bound to ``profile``."""
        return ExtensionPointObserver(self, profile)

    def set_pending(self, counts: dict[str, int]) -> None:
        """Set ``scheduler_pending_pods`` for every queue."""
        for q in QUEUES:
            self.pending_pods.labels(queue=q).set(counts.get(q, 0))

    def exposition(self) -> bytes:
        """The text exposition format of every metric."""
        data: bytes = generate_latest(self.registry)
        return data


class ExtensionPointObserver:
    """Records ``scheduler_framework_extension_point_duration_seconds`` for one profile."""

    __slots__ = ("_children", "_metrics", "_profile")

    def __init__(self, metrics: SchedulerMetrics, profile: str) -> None:
        self._metrics = metrics
        self._profile = profile
        self._children: dict[tuple[str, str], Histogram] = {}

    def __call__(self, point: str, status: str, seconds: float) -> None:
        child = self._children.get((point, status))
        if child is None:
            child = self._metrics.extension_point_duration.labels(
                extension_point=point, status=status, profile=self._profile
            )
            self._children[(point, status)] = child
        child.observe(seconds)
