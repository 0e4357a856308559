"""Kueue's controller in the simulated world: gate queued Pods, admit whole workloads.

It plays three parts of Kueue: the *webhook* (:meth:`AdmissionController.gate`: a Pod
labelled ``kueue.x-k8s.io/queue-name`` is created with the ``kueue.x-k8s.io/admission``
scheduling gate, so the scheduler parks it without a single attempt), the *admission
scheduler* (an API watcher: whenever a queued Pod appears or a Pod goes away, it runs
:meth:`~kubesched.admission.kueue.Admitter.admit` at the same virtual instant and ungates
the admitted workloads' Pods through ``update_pod``, adding their flavor's node labels to
the node selector) and the *workload controller* (evictions and requeues).  Pods of one
workload are ungated together, so they enter the scheduler together.

Eviction: when admitting a workload evicts others (Kueue's ClusterQueue ``preemption``
policies, or fair sharing), or when an admitted workload's members are not all bound
``waitForPodsReady.timeout`` after its admission (reason ``PodsReadyTimeout``, with
``waitForPodsReady.enable``), the evicted workload's Pods are deleted through
``delete_pod`` and, as the owning Job controller would, recreated at once as new gated
Pods ``<name>-r<k>`` (the original's spec, without the flavor's node labels).  The
workload keeps its identity, goes back to its queue and is admitted again when it fits:
nothing is lost.  :meth:`AdmissionController.origin` maps a replacement to the Pod it
stands for.

It also keeps, per workload, the times the report needs: first Pod created, last admitted,
every current member bound, and its evictions (:meth:`AdmissionController.report`).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from kubesched.admission import kueue
from kubesched.admission import kueue_config as kc
from kubesched.admission import kueue_workload as kw
from kubesched.admission import objects as o
from kubesched.api import objects as api
from kubesched.sim.apiserver import SimApiServer
from kubesched.sim.engine import EventLoop

EVICTED_METRIC = "scheduler_admission_evicted_workloads_total"
PREEMPTED_METRIC = "scheduler_admission_preempted_workloads_total"
SHARE_METRIC = "scheduler_admission_cluster_queue_weighted_share"


class AdmissionMetrics(Protocol):
    """What the controller records (a :class:`kubesched.metrics.SchedulerMetrics`; its
    ``own`` metrics, when it has them, for evictions and shares)."""

    def record_admission(self, cluster_queue: str, wait_seconds: float) -> None: ...
    def set_admission_pending(self, pending: dict[str, int]) -> None: ...
    def record_reclaim(self, quota: str, victims: int = 1) -> None: ...


@runtime_checkable
class OwnMetrics(Protocol):
    """Metrics with kubesched's own families by name (``SchedulerMetrics.own``)."""

    own: dict[str, Any]


class AdmissionController:
    """Watches the API server and admits Kueue workloads (see the module docstring)."""

    def __init__(
        self,
        api_server: SimApiServer,
        loop: EventLoop,
        objs: o.JobObjects,
        *,
        fair_sharing: bool = False,
        config: kc.KueueConfig | None = None,
        metrics: AdmissionMetrics | None = None,
    ) -> None:
        self.api = api_server
        self.loop = loop
        self.admitter = kueue.Admitter(objs, fair_sharing=fair_sharing, config=config)
        self.config = self.admitter.config
        self.metrics = metrics
        self.bound_at: dict[str, float] = {}
        self.freed_at: dict[str, float] = {}
        """Workload key -> when the quota release that let it in happened."""
        self.origins: dict[str, str] = {}
        """Replacement Pod key -> the submitted Pod's key it stands for."""
        self.latest: dict[str, str] = {}
        """Submitted Pod key -> its latest replacement's key."""
        self._replacements: dict[str, int] = {}
        self._releases: deque[float] = deque()
        self._pending_run = False
        self._requeue_run: float | None = None
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

    def origin(self, pod_key: str) -> str:
        """The submitted Pod a (possibly recreated) Pod stands for."""
        return self.origins.get(pod_key, pod_key)

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
        """Admit what fits now, evict and recreate the victims, ungate the admitted Pods."""
        self._pending_run = False
        now = self.loop.now
        for adm in self.admitter.admit(now):
            wl = adm.workload
            if self._releases:
                self.freed_at[wl.key] = self._releases.popleft()
            for target in adm.evicted:
                self._evict_pods(target.workload, wl.cluster_queue)
            if self.metrics is not None:
                since = wl.evicted_at if wl.evicted_at is not None else wl.created
                self.metrics.record_admission(wl.cluster_queue, now - since)
            for pod in adm.pods:
                current = self.api.pods.get(pod.key)
                if current is None or o.KUEUE_GATE not in current.scheduling_gates:
                    continue
                gates = tuple(g for g in current.scheduling_gates if g != o.KUEUE_GATE)
                selector = {**current.node_selector, **adm.node_labels}
                self.api.update_pod(
                    dataclasses.replace(current, scheduling_gates=gates, node_selector=selector)
                )
            if self.config.wait_for_pods_ready:
                self.loop.call_later(self.config.pods_ready_timeout, self._ready_check(wl))
        self._schedule_requeue(now)
        self._record_gauges()

    def _schedule_requeue(self, now: float) -> None:
        """A run when the next evicted workload's backoff is over."""
        at = self.admitter.next_requeue_at()
        if at is None or at <= now or (self._requeue_run is not None and self._requeue_run <= at):
            return
        self._requeue_run = at

        def wake() -> None:
            self._requeue_run = None
            self._kick()

        self.loop.call_at(at, wake)

    def _ready_check(self, admitted: kw.Workload) -> Callable[[], None]:
        seq = admitted.admit_seq
        return lambda: self._check_ready(admitted, seq)

    def _check_ready(self, wl: kw.Workload, seq: int) -> None:
        """``waitForPodsReady``: evict the workload if it is still the same admission and
        fewer than ``needed`` members have been bound."""
        if wl.admitted_at is None or wl.admit_seq != seq:
            return
        if sum(1 for k in wl.pods if k in self.bound_at) >= wl.needed:
            return
        self.admitter.evict(
            kw.Target(wl, ""), None, self.loop.now, reason=kw.EVICTED_BY_PODS_READY_TIMEOUT
        )
        self._evict_pods(wl, "")
        self._kick()

    def _evict_pods(self, victim: kw.Workload, preempting_cq: str) -> None:
        """Delete the victim's Pods and recreate each as a new gated Pod of the workload."""
        deleted = 0
        now = self.loop.now
        for key, spec in list(victim.pods.items()):
            root = self.origin(key)
            k = self._replacements.get(root, 0) + 1
            self._replacements[root] = k
            base = self.api.pods.get(key) or spec
            orig_name = root.split("/", 1)[1]
            fresh = dataclasses.replace(
                spec,
                name=f"{orig_name}-r{k}",
                uid=f"{base.uid or root}-r{k}",
                labels=dict(spec.labels),
                node_name="",
                phase="Pending",
                nominated_node_name="",
                start_time=None,
                creation_timestamp=now,
            )
            fresh = self.gate(fresh)
            self.origins[fresh.key] = root
            self.latest[root] = fresh.key
            self.admitter.replace_pod(key, fresh)
            current = self.api.pods.get(key)
            if current is not None:
                self.api.delete_pod(current, reason=victim.eviction_reason, grace=0)
                deleted += 1
            self.api.create_pod(fresh)
        if self.metrics is None:
            return
        if deleted and preempting_cq:
            self.metrics.record_reclaim(victim.cluster_queue, deleted)
        own = self.metrics.own if isinstance(self.metrics, OwnMetrics) else {}
        if EVICTED_METRIC in own:
            own[EVICTED_METRIC].labels(
                cluster_queue=victim.cluster_queue, reason=victim.eviction_reason
            ).inc()
            if victim.preemption_reason:
                own[PREEMPTED_METRIC].labels(
                    preempting_cluster_queue=preempting_cq, reason=victim.preemption_reason
                ).inc()

    def _record_gauges(self) -> None:
        if self.metrics is None:
            return
        pending: dict[str, int] = dict.fromkeys(self.admitter.objs.cluster_queues, 0)
        for w in self.admitter.pending_workloads():
            if w.cluster_queue in pending:
                pending[w.cluster_queue] += 1
        self.metrics.set_admission_pending(pending)
        own = self.metrics.own if isinstance(self.metrics, OwnMetrics) else {}
        if self.admitter.fair_sharing and SHARE_METRIC in own:
            for cq in self.admitter.objs.cluster_queues:
                own[SHARE_METRIC].labels(cluster_queue=cq).set(self.admitter.share(cq))

    # ------------------------------------------------------------------ reporting
    def report(self) -> dict[str, Any]:
        """Per workload: ClusterQueue, members, created / last admitted / all-bound times,
        the waits between them, admissions and evictions; per ClusterQueue its usage."""
        workloads: dict[str, Any] = {}
        for key, wl in sorted(self.admitter.workloads.items()):
            binds = [self.bound_at[k] for k in wl.pods if k in self.bound_at]
            admitted = wl.admitted_at is not None
            all_bound = max(binds) if admitted and binds and len(binds) == len(wl.pods) else None
            row: dict[str, Any] = {
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
                "admissions": wl.admissions,
                "evictions": wl.evictions,
            }
            if wl.evictions:
                row["evictedBy"] = wl.evicted_by or None
                row["evictedAt"] = None if wl.evicted_at is None else round(wl.evicted_at, 6)
                row["evictionReason"] = wl.eviction_reason
                row["preemptionReason"] = wl.preemption_reason or None
                row["evictionHistory"] = [{**h, "at": round(float(h["at"]), 6)} for h in wl.history]
            if wl.deactivated:
                row["deactivated"] = True
            if wl.inadmissible:
                row["inadmissible"] = {"reason": "Inadmissible", "message": wl.inadmissible}
            freed = self.freed_at.get(key)
            if freed is not None:
                row["freedAt"] = round(freed, 6)
                row["freedToBoundSeconds"] = (
                    None if all_bound is None else round(float(all_bound) - freed, 6)
                )
            workloads[key] = row
        return {"workloads": workloads, "clusterQueues": self.admitter.report()}
