"""Kueue's controller in the simulated world: gate queued Pods, admit whole workloads.

It plays two parts of Kueue: the *webhook* (:meth:`AdmissionController.gate`: a Pod
labelled ``kueue.x-k8s.io/queue-name`` is created with the ``kueue.x-k8s.io/admission``
scheduling gate, so the scheduler parks it without a single attempt) and the *admission
scheduler* (an API watcher: whenever a queued Pod appears or a Pod goes away, it runs
:meth:`~kubesched.admission.kueue.Admitter.admit` at the same virtual instant and ungates
the admitted workloads' Pods through ``update_pod``, adding their flavor's node labels to
the node selector).  Pods of one workload are ungated together, so they enter the
scheduler together.

Preemption: when admitting a workload evicts others (Kueue's ClusterQueue ``preemption``
policies), the evicted workloads' Pods are deleted through ``delete_pod`` before the
preemptor's Pods are ungated, as Kueue's Pod integration stops an evicted plain Pod or
PodGroup by deleting it (a bound Pod cannot be gated again).  They are not recreated.

It also keeps, per workload, the times the report needs: first Pod created, admitted, and
every member bound (:meth:`AdmissionController.report`).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from typing import Any, Protocol

from kubesched.admission import kueue
from kubesched.admission import objects as o
from kubesched.api import objects as api
from kubesched.sim.apiserver import SimApiServer
from kubesched.sim.engine import EventLoop


class AdmissionMetrics(Protocol):
    """What the controller records (a :class:`kubesched.metrics.SchedulerMetrics`)."""

    def record_admission(self, cluster_queue: str, wait_seconds: float) -> None: ...
    def set_admission_pending(self, pending: dict[str, int]) -> None: ...
    def record_reclaim(self, quota: str, victims: int = 1) -> None: ...


class AdmissionController:
    """Watches the API server and admits Kueue workloads (see the module docstring)."""

    def __init__(
        self,
        api_server: SimApiServer,
        loop: EventLoop,
        objs: o.JobObjects,
        *,
        fair_sharing: bool = False,
        metrics: AdmissionMetrics | None = None,
    ) -> None:
        self.api = api_server
        self.loop = loop
        self.admitter = kueue.Admitter(objs, fair_sharing=fair_sharing)
        self.metrics = metrics
        self.bound_at: dict[str, float] = {}
        self.freed_at: dict[str, float] = {}
        """Workload key -> when the quota release that let it in happened."""
        self._releases: deque[float] = deque()
        self._pending_run = False
        api_server.watch(self)
        api_server.on_bound.append(self._bound)

    # ------------------------------------------------------------------ webhook
    @staticmethod
    def gate(pod: api.Pod) -> api.Pod:
        """The Pod as Kueue's webhook lets it be created: gated when it names a queue."""
        if not pod.labels.get(o.QUEUE_NAME_LABEL) or pod.node_name:
            return pod
        if o.KUEUE_GATE in pod.scheduling_gates:
            return pod
        return dataclasses.replace(pod, scheduling_gates=(*pod.scheduling_gates, o.KUEUE_GATE))

    # ------------------------------------------------------------------ watcher
    def on_node_add(self, node: api.Node) -> None:
        """Nodes do not change quota."""

    def on_node_update(self, old: api.Node, new: api.Node) -> None:
        """Nodes do not change quota."""

    def on_node_delete(self, node: api.Node) -> None:
        """Nodes do not change quota."""

    def on_pod_add(self, pod: api.Pod) -> None:
        """A queued (gated) Pod joins its workload."""
        if o.KUEUE_GATE in pod.scheduling_gates and not pod.node_name:
            self.admitter.add_pod(pod, self.loop.now)
            self._kick()

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        """Nothing: admission state changes only on add and delete."""

    def on_pod_delete(self, pod: api.Pod) -> None:
        """A Pod went away: its quota is free again."""
        if self.admitter.is_charged(pod.key) and any(
            True for _ in self.admitter.pending_workloads()
        ):
            self._releases.append(self.loop.now)
        self.admitter.remove_pod(pod.key)
        self._kick()

    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        """Queue objects are fixed for a run (declared in the scenario or snapshot)."""

    def _bound(self, pod: api.Pod) -> None:
        self.bound_at.setdefault(pod.key, self.loop.now)

    # ------------------------------------------------------------------ admission
    def _kick(self) -> None:
        if not self._pending_run:
            self._pending_run = True
            self.loop.call_later(0.0, self.run, priority=0)

    def run(self) -> None:
        """Admit what fits now and ungate the admitted Pods."""
        self._pending_run = False
        now = self.loop.now
        for adm in self.admitter.admit(now):
            wl = adm.workload
            if self._releases:
                self.freed_at[wl.key] = self._releases.popleft()
            for target in adm.evicted:
                self._evict_pods(target.workload)
            if self.metrics is not None:
                self.metrics.record_admission(wl.cluster_queue, now - wl.created)
            for pod in adm.pods:
                current = self.api.pods.get(pod.key)
                if current is None or o.KUEUE_GATE not in current.scheduling_gates:
                    continue
                gates = tuple(g for g in current.scheduling_gates if g != o.KUEUE_GATE)
                selector = {**current.node_selector, **adm.node_labels}
                self.api.update_pod(
                    dataclasses.replace(current, scheduling_gates=gates, node_selector=selector)
                )
        if self.metrics is not None:
            pending: dict[str, int] = dict.fromkeys(self.admitter.objs.cluster_queues, 0)
            for w in self.admitter.pending_workloads():
                if w.cluster_queue in pending:
                    pending[w.cluster_queue] += 1
            self.metrics.set_admission_pending(pending)

    def _evict_pods(self, victim: kueue.Workload) -> None:
        deleted = 0
        for key in victim.pods:
            current = self.api.pods.get(key)
            if current is not None:
                self.api.delete_pod(current, reason="Preempted")
                deleted += 1
        if self.metrics is not None and deleted:
            self.metrics.record_reclaim(victim.cluster_queue, deleted)

    # ------------------------------------------------------------------ reporting
    def report(self) -> dict[str, Any]:
        """Per workload: ClusterQueue, members, created / admitted / all-bound times and the
        waits between them; and per ClusterQueue its usage."""
        workloads: dict[str, Any] = {}
        for key, wl in sorted(self.admitter.workloads.items()):
            binds = [self.bound_at[k] for k in wl.pods if k in self.bound_at]
            all_bound = max(binds) if binds and len(binds) == len(wl.pods) else None
            workloads[key] = {
                "clusterQueue": wl.cluster_queue or None,
                "members": len(wl.pods),
                "createdAt": round(wl.created, 6),
                "admittedAt": None if wl.admitted_at is None else round(wl.admitted_at, 6),
                "allBoundAt": None if all_bound is None else round(float(all_bound), 6),
                "admissionWaitSeconds": None
                if wl.admitted_at is None
                else round(wl.admitted_at - wl.created, 6),
                "timeToAllBoundSeconds": None
                if all_bound is None
                else round(float(all_bound) - wl.created, 6),
                "flavors": dict(sorted(wl.assignment.items())),
            }
            if wl.evicted_by:
                row = workloads[key]
                row["evictedBy"] = wl.evicted_by
                row["evictedAt"] = None if wl.evicted_at is None else round(wl.evicted_at, 6)
                row["evictionReason"] = wl.eviction_reason
            freed = self.freed_at.get(key)
            if freed is not None:
                row = workloads[key]
                row["freedAt"] = round(freed, 6)
                row["freedToBoundSeconds"] = (
                    None if all_bound is None else round(float(all_bound) - freed, 6)
                )
        return {"workloads": workloads, "clusterQueues": self.admitter.report()}
