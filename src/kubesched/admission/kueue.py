"""Kueue-style admission: whole workloads against ClusterQueue quota, before scheduling.

A *workload* is one gated Pod labelled ``kueue.x-k8s.io/queue-name``, or all such Pods of one
PodGroup (ready once ``minMember`` of them exist).  Its LocalQueue points at a ClusterQueue,
whose ``resourceGroups`` give a ``nominalQuota`` per flavor and resource.  A workload is
admitted when its whole request fits, flavor by flavor in the group's order; then its
usage is charged until its Pods go away.

Within a cohort a ClusterQueue may use, per flavor and resource (Kueue's formula)::

    available = max(0, guaranteed - used) + sum(lendable) - sum(max(0, used_m - guaranteed_m))
    available = min(available, nominal + borrowingLimit - used)      # if borrowingLimit set

where ``guaranteed = nominal - lendingLimit`` (0 without a lending limit) and
``lendable = lendingLimit`` (else ``nominal``), sums over the cohort's queues.

Order: each ClusterQueue's pending workloads by priority, then FIFO; across queues the same,
or, with fair sharing, the queue with the lowest dominant-resource share of borrowed
capacity (divided by its ``fairSharing.weight``) first.  ``BestEffortFIFO`` lets a later
workload pass one that does not fit; ``StrictFIFO`` blocks the queue behind its head.
Workloads are grouped by request, so a queue of ten thousand identical Pods costs one fit
test per admission round, not ten thousand.

Deviations: resources a ClusterQueue does not cover are not charged (Kueue refuses the
workload).

Preemption (:mod:`kubesched.admission.kueue_preemption`): a workload that does not fit
may evict admitted ones per its ClusterQueue's ``preemption`` policies; their quota is
released at once (:meth:`Admitter.evict`) and the preemptor is admitted in the same round.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubesched.admission import kueue_preemption as kp
from kubesched.admission import objects as o
from kubesched.api import objects as api

FlavorResource = tuple[str, str]


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
    assignment: dict[str, str] = field(default_factory=dict)
    """Resource -> flavor, once admitted."""
    admit_seq: int = 0
    evicted_by: str = ""
    """The preemptor's key, once evicted."""
    evicted_at: float | None = None
    eviction_reason: str = ""

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


@dataclass(frozen=True, slots=True)
class Admission:
    """A decision: these Pods may be ungated, steered to these node labels."""

    workload: Workload
    pods: tuple[api.Pod, ...]
    node_labels: dict[str, str]
    evicted: tuple[kp.Target, ...] = ()
    """Workloads evicted to make room for this one (their Pods must go)."""


class Admitter:
    """Pending and admitted workloads of every ClusterQueue, and their usage."""

    def __init__(self, objs: o.JobObjects, *, fair_sharing: bool = False) -> None:
        self.objs = objs
        self.fair_sharing = fair_sharing
        self.workloads: dict[str, Workload] = {}
        self.usage: dict[str, dict[FlavorResource, int]] = {n: {} for n in objs.cluster_queues}
        self._pending: dict[str, dict[tuple[Any, ...], list[tuple[int, float, int, str]]]] = {}
        self._charged: dict[str, tuple[str, dict[FlavorResource, int]]] = {}
        self._member_of: dict[str, str] = {}
        self._seq = 0
        self.evictions: dict[str, int] = dict.fromkeys(objs.cluster_queues, 0)
        """ClusterQueue -> workloads evicted from it by preemption."""

    # ------------------------------------------------------------------ quota arithmetic
    def _quota(self, cq: str, fr: FlavorResource) -> o.FlavorQuota | None:
        for group in self.objs.cluster_queues[cq].resource_groups:
            for flavor, quotas in group.flavors:
                if flavor == fr[0] and fr[1] in quotas:
                    return quotas[fr[1]]
        return None

    def _cohort(self, cq: str) -> list[str]:
        cohort = self.objs.cluster_queues[cq].cohort
        if not cohort:
            return [cq]
        return [n for n, s in self.objs.cluster_queues.items() if s.cohort == cohort]

    def available(self, cq: str, fr: FlavorResource) -> int:
        """What ``cq`` may still take of one flavor and resource (see the module docstring)."""
        q = self._quota(cq, fr)
        if q is None:
            return 0
        used = self.usage[cq].get(fr, 0)
        if not self.objs.cluster_queues[cq].cohort:
            return q.nominal - used
        lendable = 0
        borrowed = 0
        for m in self._cohort(cq):
            mq = self._quota(m, fr)
            if mq is None:
                continue
            guaranteed = mq.nominal - mq.lending_limit if mq.lending_limit is not None else 0
            lendable += mq.lending_limit if mq.lending_limit is not None else mq.nominal
            borrowed += max(0, self.usage[m].get(fr, 0) - guaranteed)
        guaranteed = q.nominal - q.lending_limit if q.lending_limit is not None else 0
        avail = max(0, guaranteed - used) + lendable - borrowed
        if q.borrowing_limit is not None:
            avail = min(avail, q.nominal + q.borrowing_limit - used)
        return avail

    def share(self, cq: str) -> float:
        """Dominant resource share of borrowed capacity, divided by the queue's weight."""
        best = 0.0
        for fr, used in self.usage[cq].items():
            q = self._quota(cq, fr)
            if q is None or used <= q.nominal:
                continue
            lendable = sum(
                (mq.lending_limit if mq.lending_limit is not None else mq.nominal)
                for m in self._cohort(cq)
                if (mq := self._quota(m, fr)) is not None
            )
            best = max(best, (used - q.nominal) / max(lendable, 1))
        return best / self.objs.cluster_queues[cq].weight

    def fit(self, cq: str, request: dict[str, int]) -> dict[str, str] | None:
        """Resource -> flavor if ``request`` fits ``cq`` now, else None."""
        assignment: dict[str, str] = {}
        for group in self.objs.cluster_queues[cq].resource_groups:
            wanted = {r: v for r, v in request.items() if r in group.covered and v > 0}
            if not wanted:
                continue
            for flavor, _quotas in group.flavors:
                if all(v <= self.available(cq, (flavor, r)) for r, v in wanted.items()):
                    assignment.update(dict.fromkeys(wanted, flavor))
                    break
            else:
                return None
        return assignment

    # ------------------------------------------------------------------ workloads
    def add_pod(self, pod: api.Pod, now: float) -> None:
        """A gated Pod with a queue-name label appeared."""
        queue = pod.labels.get(o.QUEUE_NAME_LABEL, "")
        group = o.pod_group_of(pod)
        key = f"{pod.namespace}/{group}" if group else pod.key
        wl = self.workloads.get(key)
        if wl is not None and wl.admitted_at is not None:
            key = f"{key}/{pod.name}"
            wl = None
        if wl is None:
            pg = self.objs.pod_groups.get(f"{pod.namespace}/{group}") if group else None
            lq = self.objs.local_queues.get(f"{pod.namespace}/{queue}")
            wl = Workload(key, pod.namespace, queue, now, pg.min_member if pg else 1)
            wl.cluster_queue = lq.cluster_queue if lq is not None else ""
            self.workloads[key] = wl
        was_ready = len(wl.pods) >= wl.needed
        wl.pods[pod.key] = pod
        self._member_of[pod.key] = key
        if not was_ready and len(wl.pods) >= wl.needed:
            self._enqueue(wl)

    def _enqueue(self, wl: Workload) -> None:
        if wl.cluster_queue not in self.objs.cluster_queues:
            return
        sig = tuple(sorted(wl.request().items()))
        self._seq += 1
        heap = self._pending.setdefault(wl.cluster_queue, {}).setdefault(sig, [])
        heapq.heappush(heap, (-wl.priority, wl.created, self._seq, wl.key))

    def remove_pod(self, pod_key: str) -> None:
        """A Pod went away: release what it was charged, or drop it from its workload."""
        charged = self._charged.pop(pod_key, None)
        if charged is not None:
            usage = self.usage[charged[0]]
            for fr, v in charged[1].items():
                usage[fr] = usage.get(fr, 0) - v
        key = self._member_of.pop(pod_key, None)
        wl = self.workloads.get(key or "")
        if wl is not None and wl.admitted_at is None:
            wl.pods.pop(pod_key, None)

    def is_charged(self, pod_key: str) -> bool:
        """Whether the Pod belongs to an admitted workload and is charged to its queue."""
        return pod_key in self._charged

    def admit(self, now: float) -> list[Admission]:
        """Admit every workload that fits now, in order (see the module docstring)."""
        out: list[Admission] = []
        blocked: set[tuple[str, tuple[Any, ...]]] = set()
        while True:
            best: tuple[Any, ...] | None = None
            for cq, groups in self._pending.items():
                strict = self.objs.cluster_queues[cq].queueing_strategy == "StrictFIFO"
                heads = [(h[0], sig) for sig, h in groups.items() if h]
                if strict:
                    heads = sorted(heads)[:1]
                for head, sig in heads:
                    if (cq, sig) in blocked or (strict and (cq, ()) in blocked):
                        continue
                    rank = (self.share(cq) if self.fair_sharing else 0.0, *head[:3])
                    if best is None or rank < best[0]:
                        best = (rank, cq, sig)
            if best is None:
                return out
            _rank, cq, sig = best
            heap = self._pending[cq][sig]
            wl = self.workloads.get(heap[0][3])
            if wl is None or wl.admitted_at is not None or len(wl.pods) < wl.needed:
                heapq.heappop(heap)
                continue
            request = wl.request()
            assignment = self.fit(cq, request)
            evicted: list[kp.Target] = []
            if assignment is None:
                evicted, _flavors = kp.get_targets(self, wl)
                for t in evicted:
                    self.evict(t, wl, now)
                if evicted:
                    assignment = self.fit(cq, request)
            if assignment is None:
                strict = self.objs.cluster_queues[cq].queueing_strategy == "StrictFIFO"
                blocked.add((cq, ()) if strict else (cq, sig))
                continue
            heapq.heappop(heap)
            out.append(self._charge(wl, cq, assignment, now, tuple(evicted)))

    # ------------------------------------------------------------------ preemption
    def admitted_workloads(self, cq: str) -> list[Workload]:
        """Admitted workloads of ``cq`` still charged for some Pod, in admission order."""
        out = [
            w
            for w in self.workloads.values()
            if w.cluster_queue == cq
            and w.admitted_at is not None
            and not w.evicted_by
            and any(k in self._charged for k in w.pods)
        ]
        return sorted(out, key=lambda w: w.admit_seq)

    def workload_usage(self, wl: Workload) -> dict[FlavorResource, int]:
        """What an admitted workload's Pods are charged now, per flavor and resource."""
        total: dict[FlavorResource, int] = {}
        for k in wl.pods:
            charged = self._charged.get(k)
            if charged is not None:
                for fr, v in charged[1].items():
                    total[fr] = total.get(fr, 0) + v
        return total

    def evict(self, target: kp.Target, by: Workload, now: float) -> None:
        """Evict an admitted workload: release its quota now and mark it (its Pods are
        deleted by the controller)."""
        victim = target.workload
        for k in victim.pods:
            if k in self._charged:
                self.remove_pod(k)
        victim.evicted_by = by.key
        victim.evicted_at = now
        victim.eviction_reason = target.reason
        self.evictions[victim.cluster_queue] = self.evictions.get(victim.cluster_queue, 0) + 1

    def _charge(
        self,
        wl: Workload,
        cq: str,
        assignment: dict[str, str],
        now: float,
        evicted: tuple[kp.Target, ...] = (),
    ) -> Admission:
        self._seq += 1
        wl.admit_seq = self._seq
        wl.admitted_at = now
        wl.assignment = assignment
        usage = self.usage[cq]
        labels: dict[str, str] = {}
        for flavor in sorted(set(assignment.values())):
            spec = self.objs.flavors.get(flavor)
            if spec is not None:
                labels.update(spec.node_labels)
        for pod in wl.pods.values():
            charge: dict[FlavorResource, int] = {}
            for res, flavor in assignment.items():
                v = pod.requests.get(res, 0)
                if v:
                    charge[(flavor, res)] = v
                    usage[(flavor, res)] = usage.get((flavor, res), 0) + v
            self._charged[pod.key] = (cq, charge)
        return Admission(wl, tuple(wl.pods.values()), labels, evicted)

    # ------------------------------------------------------------------ reporting
    def pending_workloads(self) -> Iterable[Workload]:
        """Workloads not admitted yet."""
        return (w for w in self.workloads.values() if w.admitted_at is None)

    def report(self) -> dict[str, Any]:
        """Per ClusterQueue: nominal, used and available per flavor/resource; pending count."""
        out: dict[str, Any] = {}
        for cq, spec in sorted(self.objs.cluster_queues.items()):
            rows: dict[str, Any] = {}
            for group in spec.resource_groups:
                for flavor, quotas in group.flavors:
                    for res, q in quotas.items():
                        rows[f"{flavor}/{res}"] = {
                            "nominal": q.nominal,
                            "used": self.usage[cq].get((flavor, res), 0),
                            "available": self.available(cq, (flavor, res)),
                        }
            pending = sum(1 for w in self.pending_workloads() if w.cluster_queue == cq)
            out[cq] = {
                "cohort": spec.cohort or None,
                "pendingWorkloads": pending,
                "resources": rows,
                "evictedWorkloads": self.evictions.get(cq, 0),
            }
        return out
