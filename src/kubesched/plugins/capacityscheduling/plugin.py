"""CapacityScheduling: elastic quota inside the scheduler (scheduler-plugins' semantics,
with Koordinator's quota tree).

Upstream ``sigs.k8s.io/scheduler-plugins/pkg/capacityscheduling``: every ``ElasticQuota``
gives a quota ``min`` (guaranteed) and ``max`` (ceiling) per resource; Pods are charged to
the quota of their namespace (or the one named by ``quota.scheduling.koordinator.sh/name``)
while they are assumed or bound.

- PreFilter: Unschedulable when the Pod would take its quota (or an ancestor) over ``max``,
  over its runtime quota, or all quotas together over the sum of the roots' ``min``
  (:meth:`kubesched.admission.quota.QuotaTree.check`).  Pods nominated by an earlier reclaim
  count as used: those of the same quota with priority at least the Pod's, and those of
  other quotas within their ``min`` (upstream's nominated-Pods rule).
- PostFilter: reclaim by preemption (upstream ``SelectVictimsOnNode``, :mod:`.reclaim`).  A
  Pod whose quota would stay within ``min`` takes back what others borrowed: victims are
  Pods of other quotas while those use more than their ``min`` on some resource; a Pod
  beyond its ``min`` may only preempt lower-priority Pods of its own quota; a Pod no quota
  governs, lower-priority Pods no quota governs.  The victims are deleted through the API
  and the Pod is nominated (its request reserved) until it is placed; while a Pod that frees
  room for it still terminates on its nominated node it does not reclaim again (upstream's
  ``PodEligibleToPreemptOthers``).

Deviations: the quota tree and water-filled runtime quotas are Koordinator's (see
:mod:`kubesched.admission.quota`); reclaim checks the victims' node by resources only
(upstream re-runs every Filter plugin on it, see :mod:`.reclaim`); nominations expire after
:data:`NOMINATION_SECONDS` instead of living in the Pod's status.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.admission import objects as o
from kubesched.admission import quota as qt
from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.config import names
from kubesched.framework import interface as fw
from kubesched.framework.contract import diagnosed
from kubesched.framework.outcomes import PostFilterResult
from kubesched.plugins.capacityscheduling import reclaim
from kubesched.state.cache import ClusterState, PodRecord

log = logging.getLogger(__name__)

NAME = names.CAPACITY_SCHEDULING
NOMINATION_SECONDS = 30.0
"""How long a reclaiming Pod's request stays reserved for it."""
_STATE_KEY = "PreFilter" + NAME


@dataclass(frozen=True, slots=True)
class _Nomination:
    quota: int
    vec: qt.IntArray
    priority: int
    until: float


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    quota: int | None
    vec: qt.IntArray
    used: qt.IntArray
    """Usage with the nominated Pods that count against this Pod."""


class CapacityScheduling:
    """Elastic quota admission at PreFilter, reclaim at PostFilter."""

    name = NAME

    def __init__(self, args: object | None, handle: fw.Handle) -> None:
        del args
        self.handle = handle
        self.clock: Callable[[], float] = handle.clock or (lambda: 0.0)
        self.metrics = handle.metrics
        self.specs: dict[str, o.ElasticQuotaSpec] = {}
        self.tree = qt.QuotaTree([])
        self.nominated: dict[str, _Nomination] = {}
        self.reclaimed: dict[str, int] = {}
        """Victims taken from each quota so far."""
        self.peak: dict[str, dict[str, int]] = {}
        """Highest usage each quota reached, per resource."""
        for (kind, _key), obj in list(handle.cluster.objects.items()):
            if kind == "ElasticQuota":
                self._apply(obj, False)
        self._rebuild()
        handle.add_event_handler(self)
        handle.cluster.observe(_Usage(self))

    # ------------------------------------------------------------------ informer side
    def _apply(self, obj: dict[str, Any], deleted: bool) -> bool:
        try:
            spec = o.parse_elastic_quota(obj)
        except InputError as e:
            log.warning("ignoring ElasticQuota: %s", e)
            return False
        if deleted:
            self.specs.pop(spec.name, None)
        else:
            self.specs[spec.name] = spec
        return True

    def _rebuild(self) -> None:
        try:
            tree = qt.QuotaTree(self.specs.values())
        except InputError as e:
            log.warning("keeping the previous quota tree: %s", e)
            return
        for key, rec in self.handle.cluster.pods.items():
            q = tree.quota_of(rec.pod)
            if q is not None:
                tree.add(key, q, tree.vector(rec.pod.requests))
        self.tree = tree

    def on_object(self, obj: dict[str, Any], deleted: bool) -> None:
        """An ElasticQuota changed: rebuild the tree, keeping every charged Pod."""
        if obj.get("kind") == "ElasticQuota" and self._apply(obj, deleted):
            self._rebuild()

    def on_pod_delete(self, pod: api.Pod) -> None:
        """A nominated Pod went away: drop its reservation."""
        self.nominated.pop(pod.key, None)

    def charge(self, pod: api.Pod) -> None:
        """``pod`` is accounted on a node: charge its quota."""
        self.nominated.pop(pod.key, None)
        q = self.tree.quota_of(pod)
        if q is not None and self.tree.add(pod.key, q, self.tree.vector(pod.requests)):
            for a in self.tree.path(q):
                peak = self.peak.setdefault(self.tree.names[a], {})
                for j, res in enumerate(self.tree.resources):
                    peak[res] = max(peak.get(res, 0), int(self.tree.used[a, j]))

    def release(self, pod: api.Pod) -> None:
        """``pod`` is no longer accounted: release its quota."""
        self.tree.remove(pod.key)

    # ------------------------------------------------------------------ PreFilter
    def _effective_used(self, pod: api.Pod, q: int) -> qt.IntArray:
        now = self.clock()
        used = self.tree.used
        for key, n in list(self.nominated.items()):
            if n.until <= now:
                del self.nominated[key]
                continue
            if key == pod.key:
                continue
            same = n.quota == q and n.priority >= pod.priority
            other = n.quota != q and not self.tree.over_min_with(n.quota, np_zero(n.vec))
            if same or other:
                if used is self.tree.used:
                    used = used.copy()
                used[self.tree.path(n.quota)] += n.vec
        return used

    def pre_filter(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[fw.PreFilterResult | None, fw.Status]:
        """Refuse a Pod its quota tree cannot take now."""
        q = self.tree.quota_of(pod)
        vec = self.tree.vector(pod.requests)
        if q is None:
            state[_STATE_KEY] = _PreFilterState(None, vec, self.tree.used)
            return None, fw.SUCCESS
        used = self._effective_used(pod, q)
        state[_STATE_KEY] = _PreFilterState(q, vec, used)
        why = self.tree.check(q, vec, used)
        if why is not None:
            self._record(q, "rejected")
            return None, fw.unschedulable(
                f"Pod {pod.namespace}/{pod.name} is rejected in PreFilter because {why}"
            )
        over = self.tree.over_min_with(q, vec, used)
        self._record(q, "borrowed" if over else "admitted")
        return None, fw.SUCCESS

    def _record(self, q: int, result: str) -> None:
        if self.metrics is not None:
            used = dict(zip(self.tree.resources, self.tree.used[q].tolist(), strict=True))
            self.metrics.record_quota(self.tree.names[q], result, used)

    # ------------------------------------------------------------------ PostFilter
    def post_filter(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, diagnosis: Any
    ) -> tuple[PostFilterResult | None, fw.Status]:
        """Reclaim borrowed quota (or preempt within the quota) to make room for ``pod``; on
        success the Pod is nominated to the victims' node."""
        pre = state.get(_STATE_KEY)
        if not isinstance(pre, _PreFilterState) or self.handle.api is None:
            return None, fw.unschedulable("no quota to reclaim for")
        if pod.preemption_policy == "Never":
            return None, fw.unschedulable("not eligible due to preemptionPolicy=Never.")
        skip = _unresolvable_rows(diagnosis, cluster.nodes.capacity)
        row = cluster.nodes.row_of.get(pod.nominated_node_name, -1)
        if (
            row >= 0
            and row not in skip
            and reclaim.terminating_blocks(self.tree, cluster, pod, pre.quota, pre.vec, pre.used)
        ):
            return None, fw.unschedulable(reclaim.TERMINATING)
        choice = reclaim.choose(self.tree, cluster, pod, pre.quota, pre.vec, pre.used, skip)
        if choice is None:
            return None, fw.unschedulable("no victims found to reclaim quota")
        node, victims = choice
        for rec in victims:
            if rec.pod.deletion_timestamp is not None:
                continue  # graceful deletion has started: no second API call (upstream)
            vq = self.tree.quota_of(rec.pod)
            name = self.tree.names[vq] if vq is not None else ""
            self.reclaimed[name] = self.reclaimed.get(name, 0) + 1
            if self.metrics is not None:
                self.metrics.record_reclaim(name)
            fw.preempt_pod(
                self.handle.api,
                rec.pod,
                pod,
                node,
                f"Preempted by {pod.key} on node {node}",
                waiting=self.handle,
                plugin=self.name,
            )
        if pre.quota is not None:
            self.nominated[pod.key] = _Nomination(
                pre.quota, pre.vec, pod.priority, self.clock() + NOMINATION_SECONDS
            )
        return PostFilterResult(node, tuple(rec.pod for rec in victims)), fw.SUCCESS

    # ------------------------------------------------------------------ Reserve
    def reserve(self, state: fw.CycleState, pod: api.Pod, node_name: str) -> fw.Status:
        """Charging happens when the Pod is assumed (cache observer); nothing more here."""
        return fw.SUCCESS

    def unreserve(self, state: fw.CycleState, pod: api.Pod, node_name: str) -> None:
        """Releasing happens when the Pod is forgotten (cache observer)."""

    # ------------------------------------------------------------------ queueing hints
    def events_to_register(self) -> list[fw.ClusterEventWithHint]:
        """Pod deletion (quota freed) and any ElasticQuota change (upstream)."""
        return [
            fw.ClusterEventWithHint(fw.ClusterEvent(fw.Resource.POD, fw.ActionType.DELETE)),
            fw.ClusterEventWithHint(fw.ClusterEvent(fw.Resource.ELASTIC_QUOTA, fw.ActionType.ALL)),
        ]

    def sign(self, pod: api.Pod) -> tuple[()] | None:
        """Pods no quota governs are all alike here; governed ones never share results."""
        return None if self.tree.quota_of(pod) is not None else ()

    # ------------------------------------------------------------------ reporting
    def report(self) -> dict[str, Any]:
        """The tree's usage and runtime per quota, with the peak usage per resource and the
        victims reclaimed from each."""
        out = self.tree.report()
        for name, row in out.items():
            row["reclaimedPods"] = self.reclaimed.get(name, 0)
            for res, cell in row["resources"].items():
                cell["peak"] = self.peak.get(name, {}).get(res, cell["used"])
        return out

    def sync_metrics(self) -> None:
        """Publish min / max / runtime / used per quota and resource (gauges)."""
        if self.metrics is None:
            return
        for name, row in self.tree.report().items():
            self.metrics.record_quota_limits(name, row["resources"])


def _unresolvable_rows(diagnosis: Any, capacity: int) -> set[int]:
    """Node rows where preemption cannot help: rejected as UnschedulableAndUnresolvable by a
    Filter plugin, or not covered by the Filter outcome while the ``absent`` status (PreFilter
    rejection, PreFilterResult) is (upstream ``nodesWherePreemptionMightHelp``)."""
    outcome, absent = diagnosed(diagnosis)
    if absent is None and outcome is None:
        return set()  # no diagnosis (a direct call): every node may help
    default = absent.code if absent is not None else fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    codes = np.full(capacity, int(default), dtype=np.int8)
    if outcome is not None and outcome.failed.size:
        by_status = np.asarray([int(st.code) for st in outcome.statuses], dtype=np.int8)
        codes[outcome.failed] = by_status[outcome.failed_status]
    if outcome is not None and outcome.feasible.size:
        codes[outcome.feasible] = int(fw.Code.SUCCESS)
    return set(np.flatnonzero(codes == fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE).tolist())


def np_zero(vec: qt.IntArray) -> qt.IntArray:
    """A zero vector shaped like ``vec``."""
    return vec * 0


class _Usage:
    """Cache observer charging and releasing quota as Pods are accounted."""

    def __init__(self, plugin: CapacityScheduling) -> None:
        self.plugin = plugin

    def pod_added(self, rec: PodRecord) -> None:
        self.plugin.charge(rec.pod)

    def pod_removed(self, rec: PodRecord) -> None:
        self.plugin.release(rec.pod)

    def node_changed(self, row: int, old: api.Node | None, new: api.Node | None) -> None:
        del row, old, new


def new(args: object | None, handle: fw.Handle) -> CapacityScheduling:
    """Factory; CapacityScheduling takes no args (upstream)."""
    return CapacityScheduling(args, handle)
