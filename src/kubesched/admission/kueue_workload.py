"""A Kueue *Workload*: the Pods admitted together, its admission and its status conditions.

:class:`Workload` is the admitter's record of one workload (members, ClusterQueue, last
admission, eviction history, requeue state); :class:`Admission` is one admission decision.
Condition types and reasons are Kueue's (``QuotaReserved``, ``Evicted`` with ``Preempted``
or ``PodsReadyTimeout``, ``Preempted`` with the preemption reason).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubesched.admission import kueue_config as kc
from kubesched.admission import objects as o
from kubesched.api import objects as api

FlavorResource = tuple[str, str]

EVICTED = "Evicted"
PREEMPTED = "Preempted"
EVICTED_BY_PREEMPTION = "Preempted"
"""Kueue's ``WorkloadEvictedByPreemption``."""
EVICTED_BY_PODS_READY_TIMEOUT = "PodsReadyTimeout"
"""Kueue's ``WorkloadEvictedByPodsReadyTimeout``."""


@dataclass(frozen=True, slots=True)
class Condition:
    """A Workload status condition that is true: its reason, when it was set, a message."""

    reason: str
    time: float
    message: str = ""


@dataclass(slots=True)
class Workload:
    """Pods admitted together; ``needed`` of them must exist before admission."""

    key: str
    namespace: str
    queue: str
    created: float
    needed: int = 1
    pods: dict[str, api.Pod] = field(default_factory=dict)
    cluster_queue: str = ""
    admitted_at: float | None = None
    """The last admission (None while pending)."""
    assignment: dict[str, str] = field(default_factory=dict)
    """Resource -> flavor, once admitted."""
    admit_seq: int = 0
    admissions: int = 0
    evictions: int = 0
    evicted_by: str = ""
    """The last preemptor's key ("" when never preempted)."""
    evicted_at: float | None = None
    eviction_reason: str = ""
    """The last ``Evicted`` reason: ``Preempted`` or ``PodsReadyTimeout``."""
    preemption_reason: str = ""
    """The last ``Preempted`` reason (``InClusterQueue``, ...)."""
    conditions: dict[str, Condition] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    """One row per eviction: ``at``, ``reason``, ``preemptionReason``, ``by``."""
    requeue_at: float = 0.0
    """Not admitted again before this time (``requeueState.requeueAt``)."""
    requeue_count: int = 0
    """Requeues after a PodsReady timeout (``requeueState.count``)."""
    deactivated: bool = False
    """``backoffLimitCount`` was exceeded: the workload stays pending (``spec.active=false``)."""
    inadmissible: str = ""
    """Why Kueue can never admit it as things are (``QuotaReserved=False``, reason
    ``Inadmissible``): its LocalQueue or their ClusterQueue is missing ("" otherwise)."""

    @property
    def priority(self) -> int:
        """The highest priority among the members."""
        return max((p.priority for p in self.pods.values()), default=0)

    def request(self) -> dict[str, int]:
        """The members' requests summed."""
        total: dict[str, int] = {}
        for p in self.pods.values():
            for res, v in p.requests.items():
                total[res] = total.get(res, 0) + v
        return total

    def order_time(self, config: kc.KueueConfig) -> float:
        """Kueue's ``GetQueueOrderTimestamp``: the eviction time after a PodsReady timeout
        under ``requeuingStrategy.timestamp: Eviction``, else the creation time."""
        cond = self.conditions.get(EVICTED)
        if (
            config.requeuing_timestamp == kc.EVICTION_TIMESTAMP
            and cond is not None
            and cond.reason == EVICTED_BY_PODS_READY_TIMEOUT
        ):
            return cond.time
        return self.created


@dataclass(frozen=True, slots=True)
class Admission:
    """A decision: these Pods may be ungated, steered to these node labels."""

    workload: Workload
    pods: tuple[api.Pod, ...]
    node_labels: dict[str, str]
    evicted: tuple[Target, ...] = ()
    """Workloads evicted to make room for this one (their Pods must go)."""


def cluster_queue_report(adm: KueueView) -> dict[str, Any]:
    """Per ClusterQueue: nominal, used and available per flavor/resource; pending and
    evicted workloads; the weighted share with fair sharing."""
    out: dict[str, Any] = {}
    for cq, spec in sorted(adm.objs.cluster_queues.items()):
        rows: dict[str, Any] = {}
        for group in spec.resource_groups:
            for flavor, quotas in group.flavors:
                for res, q in quotas.items():
                    rows[f"{flavor}/{res}"] = {
                        "nominal": q.nominal,
                        "used": adm.usage[cq].get((flavor, res), 0),
                        "available": adm.available(cq, (flavor, res)),
                    }
        pending = sum(1 for w in adm.pending_workloads() if w.cluster_queue == cq)
        out[cq] = {
            "cohort": spec.cohort or None,
            "pendingWorkloads": pending,
            "resources": rows,
            "evictedWorkloads": adm.evictions.get(cq, 0),
            "evictedWorkloadsByReason": {
                r: n for (q, r), n in sorted(adm.evictions_by_reason.items()) if q == cq
            },
        }
        if adm.fair_sharing:
            out[cq]["weightedShare"] = adm.share(cq)
    return out


@dataclass(frozen=True, slots=True)
class Target:
    """One workload to evict, and why (Kueue's preemption reason)."""

    workload: Workload
    reason: str


class KueueView(Protocol):
    """What fair sharing, preemption and the report read of the admitter
    (:class:`kubesched.admission.kueue.Admitter` implements it): its objects, configuration,
    usage and quota arithmetic.  Declared here, below them all, so none imports the admitter."""

    objs: o.JobObjects
    config: kc.KueueConfig
    usage: dict[str, dict[FlavorResource, int]]
    """ClusterQueue -> (flavor, resource) -> what its admitted workloads use."""
    evictions: dict[str, int]
    evictions_by_reason: dict[tuple[str, str], int]

    @property
    def fair_sharing(self) -> bool:
        """``fairSharing.enable``."""
        ...

    def quota(self, cq: str, fr: FlavorResource) -> o.FlavorQuota | None:
        """The ClusterQueue's quota of one flavor and resource, None if it has none."""
        ...

    def cohort_members(self, cq: str) -> list[str]:
        """The ClusterQueues of ``cq``'s cohort (``[cq]`` without a cohort)."""
        ...

    def available(self, cq: str, fr: FlavorResource) -> int:
        """What ``cq`` may still take of one flavor and resource."""
        ...

    def share(self, cq: str) -> int:
        """The ClusterQueue's weighted dominant resource share now."""
        ...

    def workload_usage(self, wl: Workload) -> dict[FlavorResource, int]:
        """What an admitted workload uses, per flavor and resource."""
        ...

    def admitted_workloads(self, cq: str) -> list[Workload]:
        """The workloads admitted to ``cq``."""
        ...

    def pending_workloads(self) -> Iterable[Workload]:
        """Every pending workload."""
        ...
