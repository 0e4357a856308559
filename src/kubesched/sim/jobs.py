"""The job layer of one simulated run (``simulate`` and ``schedule``): admission, gangs,
quotas.

:class:`JobLayer` checks the run's job-layer objects (:mod:`kubesched.admission.references`:
bad ones raise, missing referenced ones are warned about once), starts the Kueue
:class:`~kubesched.sim.admission_controller.AdmissionController` when ClusterQueues are
declared or a Pod names a queue (unless admission is switched off; a Pod whose LocalQueue is
missing is then gated with its workload inadmissible, as Kueue does), gates queued Pods as they are
created (:meth:`JobLayer.prepare`), and adds to the run's result (:meth:`JobLayer.report`):

- ``workloads``: per Kueue workload, its (last) admission time, the time until every member
  was bound, its admissions and evictions (evicted workloads are requeued and their Pods
  recreated, see :mod:`kubesched.sim.admission_controller`); ``clusterQueues``: quota usage
  and evictions per ClusterQueue, and its weighted share under fair sharing;
- ``gangs``: per PodGroup, when its first Pod was created and when ``minMember`` members had
  been bound (``completeSeconds``), members running now, phase, and the longest time it held
  resources with fewer than ``minMember`` members (``longestIncompleteHoldSeconds``);
- ``podGroups`` (only when a Pod joins a Workload API group, v1.35+ with GenericWorkload):
  the same per ``scheduling.k8s.io`` group (``minMember`` its ``minCount``; a ``basic``
  group is complete when all its members are bound), with the PodGroup's scheduling
  ``condition`` as the PodGroup cycle last wrote it;
- each row of both also has ``allBoundSeconds`` and ``allReadySeconds`` (first member
  created to every member bound / Ready), and ``gangCompletion`` sums them up per kind
  (``coscheduling``, ``workloadApi``: gangs, how many had every member bound and Ready,
  p50 / p99 over gangs);
- :meth:`JobLayer.held_past_timeout` is the invariant (every run with a gang plugin)
  ``gangsHeldIncompletePastTimeout``: no gang of either kind held resources with some but
  fewer than ``minMember`` members assigned for longer than its Permit timeout (its own
  ``scheduleTimeoutSeconds`` or Coscheduling's ``permitWaitingTimeSeconds``;
  GangScheduling's 5 minutes) plus :data:`HOLD_SLACK`;
- ``namespaces``: per namespace (tenant), Pods, bound, attempts and failed attempts, success
  ratio and queueing seconds;
- ``quotas``: per ElasticQuota (when CapacityScheduling runs), min / max / used / runtime per
  resource and the Pods reclaimed from it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from kubesched.admission import gang, references
from kubesched.admission import kueue_config as kc
from kubesched.admission import objects as o
from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework.contract import Reporter
from kubesched.framework.podgroups import PodGroupManager
from kubesched.plugins.coscheduling.plugin import Coscheduling
from kubesched.plugins.gangscheduling.plugin import PERMIT_TIMEOUT_SECONDS
from kubesched.sim.admission_controller import AdmissionController
from kubesched.sim.driver import SimCluster
from kubesched.state.cache import PodRecord

HOLD_SLACK = 1.0
"""Seconds a gang may exceed its timeout by: the expiry is noticed on the next cycle."""
OTHER_GANG_PLUGIN_TIMEOUT = 60.0
"""The timeout assumed for a plugin other than Coscheduling registered under its name."""


def gang_plugin_timeout(sim: SimCluster) -> float | None:
    """Coscheduling's default Permit timeout (``permitWaitingTimeSeconds``) in the run's
    profiles; None when no profile runs it."""
    for fwk in sim.scheduler.profiles.values():
        plugin = fwk.instances.get(names.COSCHEDULING)
        if isinstance(plugin, Coscheduling):
            return float(plugin.args.permit_waiting_time_seconds)
        if plugin is not None:
            return OTHER_GANG_PLUGIN_TIMEOUT
    return None


class JobLayer:
    """Admission controller and job-layer reporting for one :class:`SimCluster`."""

    def __init__(
        self,
        sim: SimCluster,
        objects: list[dict[str, Any]],
        pods: Iterable[api.Pod],
        *,
        admission: bool | None = None,
        fair_sharing: bool = False,
        kueue: kc.KueueConfig | None = None,
        all_pods_known: bool = False,
        warn: bool = True,
    ) -> None:
        self.sim = sim
        pods = list(pods)
        self.objs = references.check(objects, pods, all_pods_known=all_pods_known, warn=warn)
        queued = any(p.labels.get(o.QUEUE_NAME_LABEL) for p in pods)
        enabled = (self.objs.admission_enabled() or queued) if admission is None else admission
        self.holds = GangHolds(sim.loop.clock, self._min_member)
        sim.scheduler.cluster.observe(self.holds)
        self.workload_holds: GangHolds | None = None
        manager = sim.scheduler.pod_group_manager
        if manager is not None:
            self.workload_holds = GangHolds(sim.loop.clock, _min_count(manager), manager.group_key)
            sim.scheduler.cluster.observe(self.workload_holds)
        self.controller: AdmissionController | None = None
        if enabled and (self.objs.cluster_queues or queued):
            self.controller = AdmissionController(
                sim.api,
                sim.loop,
                self.objs,
                fair_sharing=fair_sharing,
                config=kueue,
                metrics=sim.scheduler.metrics,
            )

    def _min_member(self, key: str) -> int | None:
        spec = self.objs.pod_groups.get(key)
        return spec.min_member if spec is not None else None

    def prepare(self, pod: api.Pod) -> api.Pod:
        """The Pod as it is created: gated for admission when it names a queue."""
        return self.controller.gate(pod) if self.controller is not None else pod

    def origin(self, pod_key: str) -> str:
        """The submitted Pod a Pod stands for (itself, unless an eviction recreated it)."""
        return self.controller.origin(pod_key) if self.controller is not None else pod_key

    def current(self, pod_key: str) -> str:
        """The Pod that stands for a submitted Pod now (its latest replacement, if any)."""
        if self.controller is None:
            return pod_key
        latest = self.controller.latest.get(pod_key)
        return latest if latest is not None else pod_key

    def busy(self) -> bool:
        """Whether an admission round is due at the current instant."""
        return self.controller is not None and self.controller._pending_run

    def report(self, submitted: Iterable[api.Pod]) -> dict[str, Any]:
        """``workloads``, ``clusterQueues``, ``gangs``, ``quotas`` and ``namespaces`` (see
        the module docstring); each is ``{}`` when the run has none."""
        out: dict[str, Any] = {"workloads": {}, "clusterQueues": {}, "gangs": {}, "quotas": {}}
        if self.controller is not None:
            out.update(self.controller.report())
        pods = list(submitted)
        stats = self.sim.api.stats
        out["namespaces"] = namespace_report(pods, stats.created_at, stats.bound_at, self.sim)
        if self.objs.pod_groups or any(o.pod_group_of(p) for p in pods):
            out["gangs"] = gang.gang_report(
                self.objs.pod_groups,
                pods,
                stats.created_at,
                stats.bound_at,
                self.sim.api.pods,
                ready_at=stats.ready_at,
            )
            metrics = self.sim.scheduler.metrics
            longest = self.holds.longest(self.sim.loop.now)
            for key, row in out["gangs"].items():
                row["longestIncompleteHoldSeconds"] = round(longest.get(key, 0.0), 6)
                if row["completeSeconds"] is not None:
                    metrics.record_gang_complete(row["completeSeconds"])
        manager = self.sim.scheduler.pod_group_manager
        if manager is not None and any(manager.group_key(p) for p in pods):
            out["podGroups"] = self._pod_groups(manager, pods)
        kinds = (("coscheduling", out["gangs"]), ("workloadApi", out.get("podGroups") or {}))
        completion = {kind: gang.completion(rows) for kind, rows in kinds if rows}
        if completion:
            out["gangCompletion"] = completion
        for fwk in self.sim.scheduler.profiles.values():
            plugin = fwk.instances.get(names.CAPACITY_SCHEDULING)
            if isinstance(plugin, Reporter):
                out["quotas"] = plugin.report()
                break
        return out

    def _pod_groups(self, manager: PodGroupManager, pods: list[api.Pod]) -> dict[str, Any]:
        """``podGroups``: the Workload API gangs (``scheduling.k8s.io``) as whole units, as
        ``gangs`` reports Coscheduling's: first member created, ``minCount`` members bound
        (``completeSeconds``), members bound now; with the PodGroup's condition from the
        scheduler's PodGroup cycle (v1.36+)."""
        stats = self.sim.api.stats
        needs: dict[str, gang.MinMember] = {}
        for p in pods:
            key = manager.group_key(p)
            policy = manager.policy(key) if key is not None else None
            if key is not None and policy is not None and policy.gang:
                needs[key] = gang.Need(policy.min_count)
        rows = gang.gang_report(
            needs,
            pods,
            stats.created_at,
            stats.bound_at,
            self.sim.api.pods,
            manager.group_key,
            ready_at=stats.ready_at,
        )
        cycle = self.sim.scheduler.pod_group_cycle
        longest = self.workload_holds.longest(self.sim.loop.now) if self.workload_holds else {}
        for key, row in rows.items():
            row["longestIncompleteHoldSeconds"] = round(longest.get(key, 0.0), 6)
            cond = cycle.conditions.get(key) if cycle is not None else None
            if cond is not None:
                row["condition"] = {"type": cond.type, "status": cond.status}
                row["condition"].update(reason=cond.reason, message=cond.message)
        return rows

    def held_past_timeout(self) -> list[str] | None:
        """Gangs of either kind that held resources incomplete (some but fewer than
        ``minMember`` members assigned) longer than their Permit timeout plus
        :data:`HOLD_SLACK`: a partial group must give its resources back by then.  None
        when the run has no gang plugin (Coscheduling, or the Workload API's gates off):
        then nothing promises gangs and the invariant is left out."""
        now = self.sim.loop.now
        held: list[str] = []
        default = gang_plugin_timeout(self.sim)
        if default is None and self.workload_holds is None:
            return None
        if default is not None:
            for key, seconds in self.holds.longest(now).items():
                spec = self.objs.pod_groups.get(key)
                own = spec.schedule_timeout_seconds if spec is not None else None
                if seconds > (own or default) + HOLD_SLACK:
                    held.append(key)
        if self.workload_holds is not None:
            for key, seconds in self.workload_holds.longest(now).items():
                if seconds > PERMIT_TIMEOUT_SECONDS + HOLD_SLACK:
                    held.append(key)
        return sorted(held)


def _min_count(manager: PodGroupManager) -> Callable[[str], int | None]:
    """A Workload API gang's ``minCount`` by group key (None: not a ``gang`` group, or its
    PodGroup is unknown)."""

    def need(key: str) -> int | None:
        policy = manager.policy(key)
        return policy.min_count if policy is not None and policy.gang else None

    return need


def namespace_report(
    pods: list[api.Pod],
    created_at: Mapping[str, float],
    bound_at: Mapping[str, float],
    sim: SimCluster,
) -> dict[str, Any]:
    """Per namespace (tenant): Pods, bound, scheduling attempts and the failed ones among
    them (attempts that did not bind), success ratio, queueing seconds (created to bound)."""
    attempts = sim.scheduler.pod_attempts
    rows: dict[str, dict[str, Any]] = {}
    waits: dict[str, list[float]] = {}
    for p in pods:
        row = rows.setdefault(p.namespace, {"pods": 0, "bound": 0, "attempts": 0})
        row["pods"] += 1
        row["attempts"] += attempts.get(p.key, 0)
        if p.key in bound_at:
            row["bound"] += 1
            if p.key in created_at:
                waits.setdefault(p.namespace, []).append(bound_at[p.key] - created_at[p.key])
    for ns, row in rows.items():
        row["failedAttempts"] = max(0, row["attempts"] - row["bound"])
        row["successRatio"] = round(row["bound"] / max(1, row["attempts"]), 4)
        w = np.asarray(waits.get(ns, []), dtype=np.float64)
        row["queueingSeconds"] = {
            "p50": round(float(np.percentile(w, 50)), 4) if w.size else None,
            "p99": round(float(np.percentile(w, 99)), 4) if w.size else None,
            "max": round(float(w.max()), 4) if w.size else None,
        }
    return dict(sorted(rows.items()))


class GangHolds:
    """Cache observer: for each gang, the longest stretch during which it had some but
    fewer than ``minMember`` members assigned (reserved, waiting or bound) before it first
    became complete; with Coscheduling this never exceeds the gang's Permit timeout.
    ``key_of`` names a Pod's gang (Coscheduling's label by default; the Workload API
    group's key for those gangs)."""

    def __init__(
        self,
        clock: Callable[[], float],
        min_member: Callable[[str], int | None],
        key_of: Callable[[api.Pod], str | None] = gang.group_key,
    ) -> None:
        self.clock = clock
        self.min_member = min_member
        self.key_of = key_of
        self.assigned: dict[str, set[str]] = {}
        self.since: dict[str, float] = {}
        self.complete: set[str] = set()
        self._longest: dict[str, float] = {}

    def _update(self, key: str) -> None:
        need = self.min_member(key)
        if need is None or key in self.complete:
            return
        n = len(self.assigned.get(key, ()))
        now = self.clock()
        if n >= need:
            self.complete.add(key)
        if 0 < n < need:
            self.since.setdefault(key, now)
        elif key in self.since:
            held = now - self.since.pop(key)
            self._longest[key] = max(self._longest.get(key, 0.0), held)

    def pod_added(self, rec: PodRecord) -> None:
        key = self.key_of(rec.pod)
        if key:
            self.assigned.setdefault(key, set()).add(rec.pod.key)
            self._update(key)

    def pod_removed(self, rec: PodRecord) -> None:
        key = self.key_of(rec.pod)
        if key:
            self.assigned.get(key, set()).discard(rec.pod.key)
            self._update(key)

    def node_changed(self, row: int, old: api.Node | None, new: api.Node | None) -> None:
        del row, old, new

    def longest(self, now: float) -> dict[str, float]:
        """Longest incomplete hold per gang, counting a hold still open at ``now``."""
        out = dict(self._longest)
        for key, since in self.since.items():
            out[key] = max(out.get(key, 0.0), now - since)
        return out
