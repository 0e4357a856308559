"""Kueue-style admission: whole workloads against ClusterQueue quota, before scheduling.

A *workload* is one gated Pod labelled ``kueue.x-k8s.io/queue-name``, or all such Pods of one
PodGroup (ready once ``minMember`` of them exist).  Its LocalQueue points at a ClusterQueue,
whose ``resourceGroups`` give a ``nominalQuota`` per flavor and resource.  A workload is
admitted when its whole request fits, flavor by flavor in the group's order; then its
usage is charged until its Pods go away.  Within a cohort a ClusterQueue may use, per
flavor and resource (Kueue's formula)::

    available = max(0, guaranteed - used) + sum(lendable) - sum(max(0, used_m - guaranteed_m))
    available = min(available, nominal + borrowingLimit - used)      # if borrowingLimit set

where ``guaranteed = nominal - lendingLimit`` (0 without a lending limit) and
``lendable = lendingLimit`` (else ``nominal``), sums over the cohort's queues.

Order: per ClusterQueue by priority, then FIFO on the queue-order timestamp
(:meth:`~kubesched.admission.kueue_workload.Workload.order_time`); across queues the same,
or with fair sharing (:mod:`kubesched.admission.fair_sharing`) lowest share after admission
first.  ``BestEffortFIFO`` lets a later workload pass one that does not fit; ``StrictFIFO``
blocks the queue behind its head.  Workloads are grouped by request, so ten thousand
identical Pods cost one fit test per admission round, not ten thousand.

Eviction (:meth:`Admitter.evict`, after preemption by
:mod:`kubesched.admission.kueue_preemption` or a PodsReady timeout): Kueue's ``Evicted``
condition (``Preempted`` / ``PodsReadyTimeout``; a preempted one also ``Preempted`` with
the preemption reason), quota released, admission cleared, and back to its queue from the
next admission round on (after its backoff for a PodsReady timeout, see
:mod:`kubesched.admission.kueue_config`).  Its members stay; whoever recreates their Pods
swaps them in with :meth:`Admitter.replace_pod`.

Deviations: resources a ClusterQueue does not cover are not charged (Kueue refuses the
workload); without fair sharing, Kueue also puts heads that fit within nominal quota before
borrowing ones across queues, we order by priority and time only; the preemptor is
admitted in the same round as its victims are evicted (Kueue waits for them to be gone).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from kubesched.admission import fair_sharing as fs
from kubesched.admission import kueue_config as kc
from kubesched.admission import kueue_preemption as kp
from kubesched.admission import kueue_workload as kw
from kubesched.admission import objects as o
from kubesched.admission import references
from kubesched.admission.kueue_workload import (
    EVICTED,
    EVICTED_BY_PODS_READY_TIMEOUT,
    EVICTED_BY_PREEMPTION,
    PREEMPTED,
    Admission,
    Condition,
    Workload,
)
from kubesched.api import objects as api

FlavorResource = tuple[str, str]


class Admitter:
    """Pending and admitted workloads of every ClusterQueue, and their usage."""

    def __init__(
        self,
        objs: o.JobObjects,
        *,
        fair_sharing: bool = False,
        config: kc.KueueConfig | None = None,
    ) -> None:
        self.objs = objs
        self.config = config or kc.KueueConfig()
        if fair_sharing and not self.config.fair_sharing:
            self.config = replace(self.config, fair_sharing=True)
        self.workloads: dict[str, Workload] = {}
        self.usage: dict[str, dict[FlavorResource, int]] = {n: {} for n in objs.cluster_queues}
        self._pending: dict[str, dict[tuple[Any, ...], list[tuple[int, float, int, str]]]] = {}
        self._charged: dict[str, tuple[str, dict[FlavorResource, int]]] = {}
        self._member_of: dict[str, str] = {}
        self._parked: dict[str, Workload] = {}
        self._seq = 0
        self.evictions: dict[str, int] = dict.fromkeys(objs.cluster_queues, 0)
        """ClusterQueue -> workloads evicted from it."""
        self.evictions_by_reason: dict[tuple[str, str], int] = {}
        """(ClusterQueue, Evicted reason) -> count (``kueue_evicted_workloads_total``)."""
        self.preemptions: dict[tuple[str, str], int] = {}
        """(preempting ClusterQueue, preemption reason) -> victims."""

    @property
    def fair_sharing(self) -> bool:
        """``fairSharing.enable``."""
        return self.config.fair_sharing

    # ------------------------------------------------------------------ quota arithmetic
    def quota(self, cq: str, fr: FlavorResource) -> o.FlavorQuota | None:
        """The ClusterQueue's quota of one flavor and resource, None if it has none."""
        for group in self.objs.cluster_queues[cq].resource_groups:
            for flavor, quotas in group.flavors:
                if flavor == fr[0] and fr[1] in quotas:
                    return quotas[fr[1]]
        return None

    def cohort_members(self, cq: str) -> list[str]:
        """The ClusterQueues of ``cq``'s cohort (``[cq]`` without a cohort)."""
        cohort = self.objs.cluster_queues[cq].cohort
        if not cohort:
            return [cq]
        return [n for n, s in self.objs.cluster_queues.items() if s.cohort == cohort]

    def available(self, cq: str, fr: FlavorResource) -> int:
        """What ``cq`` may still take of one flavor and resource (see the module docstring)."""
        q = self.quota(cq, fr)
        if q is None:
            return 0
        used = self.usage[cq].get(fr, 0)
        if not self.objs.cluster_queues[cq].cohort:
            return q.nominal - used
        lendable = 0
        borrowed = 0
        for m in self.cohort_members(cq):
            mq = self.quota(m, fr)
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

    def share(self, cq: str) -> int:
        """The ClusterQueue's weighted dominant resource share now (Kueue's integer)."""
        return fs.dominant_resource_share(self, cq)[0]

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
        known = self._member_of.get(pod.key)
        if known is not None and pod.key in self.workloads[known].pods:
            self.workloads[known].pods[pod.key] = pod  # a replacement announced by replace_pod
            return
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
            wl.inadmissible = references.inadmissible_message(self.objs, pod.namespace, queue)
            self.workloads[key] = wl
        was_ready = len(wl.pods) >= wl.needed
        wl.pods[pod.key] = pod
        self._member_of[pod.key] = key
        if not was_ready and len(wl.pods) >= wl.needed and key not in self._parked:
            self._enqueue(wl)

    def replace_pod(self, old_key: str, new: api.Pod) -> None:
        """A member's Pod is recreated as ``new`` (another name): ``new`` takes its place."""
        key = self._member_of.pop(old_key, None)
        wl = self.workloads.get(key or "")
        if wl is None:
            return
        self._uncharge(old_key)
        wl.pods.pop(old_key, None)
        wl.pods[new.key] = new
        self._member_of[new.key] = wl.key

    def _enqueue(self, wl: Workload) -> None:
        if wl.cluster_queue not in self.objs.cluster_queues or wl.deactivated:
            return
        sig = tuple(sorted(wl.request().items()))
        self._seq += 1
        heap = self._pending.setdefault(wl.cluster_queue, {}).setdefault(sig, [])
        heapq.heappush(heap, (-wl.priority, wl.order_time(self.config), self._seq, wl.key))

    def _uncharge(self, pod_key: str) -> None:
        charged = self._charged.pop(pod_key, None)
        if charged is not None:
            usage = self.usage[charged[0]]
            for fr, v in charged[1].items():
                usage[fr] = usage.get(fr, 0) - v

    def remove_pod(self, pod_key: str) -> None:
        """A Pod went away: release what it was charged, or drop it from its workload."""
        self._uncharge(pod_key)
        key = self._member_of.pop(pod_key, None)
        wl = self.workloads.get(key or "")
        if wl is not None and wl.admitted_at is None:
            wl.pods.pop(pod_key, None)

    def is_charged(self, pod_key: str) -> bool:
        """Whether the Pod belongs to an admitted workload and is charged to its queue."""
        return pod_key in self._charged

    def next_requeue_at(self) -> float | None:
        """When the next evicted workload waiting out its backoff may go back to its queue."""
        return min((w.requeue_at for w in self._parked.values()), default=None)

    def _requeue(self, now: float) -> None:
        """Evicted workloads whose backoff is over go back to their queues."""
        due = [w for w in self._parked.values() if w.requeue_at <= now]
        for wl in due:
            del self._parked[wl.key]
            if wl.admitted_at is None and len(wl.pods) >= wl.needed:
                self._enqueue(wl)

    def _rank(self, cq: str, head: tuple[int, float, int, str]) -> tuple[Any, ...]:
        if not self.fair_sharing:
            return head[:3]
        wl = self.workloads.get(head[3])
        share = 0
        if wl is not None and wl.admitted_at is None:
            request = wl.request()
            found = kp.preempt_assignment(self, cq, request)
            if found is not None:
                share = fs.dominant_resource_share(
                    self, cq, fs.request_by_flavor(request, found[0])
                )[0]
        return (share, *head[:3])

    def admit(self, now: float) -> list[Admission]:
        """Admit every workload that fits now, in order (see the module docstring)."""
        self._requeue(now)
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
                    rank = self._rank(cq, head)
                    if best is None or rank < best[0]:
                        best = (rank, cq, sig)
            if best is None:
                return out
            _rank, cq, sig = best
            heap = self._pending[cq][sig]
            wl = self.workloads.get(heap[0][3])
            if (
                wl is None
                or wl.admitted_at is not None
                or len(wl.pods) < wl.needed
                or wl.key in self._parked
            ):
                heapq.heappop(heap)
                continue
            request = wl.request()
            assignment = self.fit(cq, request)
            evicted: list[kw.Target] = []
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

    # ------------------------------------------------------------------ eviction
    def admitted_workloads(self, cq: str) -> list[Workload]:
        """Admitted workloads of ``cq`` still charged for some Pod, in admission order."""
        out = [
            w
            for w in self.workloads.values()
            if w.cluster_queue == cq
            and w.admitted_at is not None
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

    def evict(
        self,
        target: kw.Target,
        by: Workload | None,
        now: float,
        reason: str = EVICTED_BY_PREEMPTION,
    ) -> None:
        """Evict an admitted workload: set its ``Evicted`` (and ``Preempted``) condition,
        release its quota, clear its admission and park it until it may be requeued."""
        victim = target.workload
        for k in victim.pods:
            self._uncharge(k)
        cq = victim.cluster_queue
        victim.admitted_at = None
        victim.assignment = {}
        victim.evictions += 1
        victim.evicted_at = now
        victim.eviction_reason = reason
        victim.preemption_reason = target.reason
        victim.evicted_by = by.key if by is not None else ""
        victim.conditions.pop("QuotaReserved", None)
        victim.conditions[EVICTED] = Condition(reason, now, f"evicted by {victim.evicted_by}")
        if target.reason:
            victim.conditions[PREEMPTED] = Condition(target.reason, now)
            pcq = by.cluster_queue if by is not None else cq
            self.preemptions[(pcq, target.reason)] = (
                self.preemptions.get((pcq, target.reason), 0) + 1
            )
        victim.history.append(
            {
                "at": now,
                "reason": reason,
                "preemptionReason": target.reason or None,
                "by": victim.evicted_by or None,
            }
        )
        self.evictions[cq] = self.evictions.get(cq, 0) + 1
        self.evictions_by_reason[(cq, reason)] = self.evictions_by_reason.get((cq, reason), 0) + 1
        victim.requeue_at = now
        if reason == EVICTED_BY_PODS_READY_TIMEOUT:
            limit = self.config.backoff_limit_count
            if limit is not None and victim.requeue_count >= limit:
                victim.deactivated = True
                return
            victim.requeue_count += 1
            victim.requeue_at = now + self.config.backoff_seconds(victim.requeue_count)
        self._parked[victim.key] = victim

    def _charge(
        self,
        wl: Workload,
        cq: str,
        assignment: dict[str, str],
        now: float,
        evicted: tuple[kw.Target, ...] = (),
    ) -> Admission:
        self._seq += 1
        wl.admit_seq = self._seq
        wl.admitted_at = now
        wl.admissions += 1
        wl.assignment = assignment
        wl.conditions["QuotaReserved"] = Condition("QuotaReserved", now)
        wl.conditions.pop(EVICTED, None)
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
        """Workloads not admitted now (never admitted, or evicted and requeued)."""
        return (w for w in self.workloads.values() if w.admitted_at is None)

    def report(self) -> dict[str, Any]:
        """Per ClusterQueue: nominal, used and available per flavor/resource; pending and
        evicted workloads; the weighted share with fair sharing."""
        return kw.cluster_queue_report(self)
