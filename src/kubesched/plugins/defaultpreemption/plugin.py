"""The DefaultPreemption plugin class, its args and the factory (upstream
``default_preemption.go`` with ``preemption.Evaluator.Preempt``)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework.contract import (
    PodGroupPostFilterResult,
    PodGroupSchedulingFunc,
    diagnosed,
)
from kubesched.framework.interface import (
    Code,
    CodeArray,
    CycleState,
    ExtenderError,
    Handle,
    IntArray,
    Status,
    Victims,
    preempt_pod,
)
from kubesched.framework.outcomes import PostFilterResult
from kubesched.framework.podgroups import POD_GROUP_MANAGER
from kubesched.kernels.draw import BoundedDraw
from kubesched.plugins.defaultpreemption import dryrun, pdb
from kubesched.plugins.defaultpreemption import podgroup as wap
from kubesched.plugins.defaultpreemption import podgroup_v136 as wap136
from kubesched.plugins.defaultpreemption.picking import Candidate, pick_one_node
from kubesched.state.cache import ClusterState

NAME = names.DEFAULT_PREEMPTION
PREFIX = "preemption: "
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
NO_CANDIDATE = "no candidate node for preemption"
NO_FRAMEWORK = "preemption needs the framework to run Filter plugins"
NO_POD_GROUP = "pod group for pod not found"
PLACEMENT_LIMITED = "not eligible due to placement-based pod group scheduling limitation"
WORKLOAD_AWARE = "not eligible due to workload aware preemption enabled"
VICTIM_REASON = "PreemptionByScheduler"
"""Upstream ``v1.PodReasonPreemptionByScheduler``: the deletion reason given for victims."""

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs:
    """``DefaultPreemptionArgs`` (defaults 10 % and 100, as upstream)."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    @staticmethod
    def from_raw(raw: Mapping[str, Any] | None) -> DefaultPreemptionArgs:
        """From the profile's raw (already validated and defaulted) mapping."""
        raw = raw or {}
        return DefaultPreemptionArgs(
            int(raw.get("minCandidateNodesPercentage", 10)),
            int(raw.get("minCandidateNodesAbsolute", 100)),
        )


class DefaultPreemption:
    """PostFilter: evict lower-priority Pods so the Pod fits on one node next time."""

    name = NAME

    def __init__(self, args: DefaultPreemptionArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.draw = BoundedDraw(handle.rng if handle.rng is not None else np.random.default_rng(0))
        """The candidates' random offset: ``rng.integers(n)`` of the scheduler's seeded
        generator, the same numbers, without numpy's per-call overhead."""
        self.fwk: wap.GroupRunner | None = None
        self._says_placement = handle.feature_gates.at_least("1.37")
        """v1.37's ``Preempt`` succeeds with a message (``found a potential placement for
        pod on node N, preempting K victims``); before, with none."""
        gates = handle.feature_gates
        self._placement_limited = gates.version == "1.36" and gates.enabled(
            "TopologyAwareWorkloadScheduling"
        )
        """v1.36 under TopologyAwareWorkloadScheduling: a member of a PodGroup with
        scheduling constraints does not preempt (:meth:`pod_group_limitation`)."""
        self._workload_aware_v136 = gates.version == "1.36" and gates.enabled(
            "WorkloadAwarePreemption"
        )
        """v1.36 under WorkloadAwarePreemption: a PodGroup member never preempts alone (its
        group does, :meth:`pod_group_post_filter`), and the group's preemption is v1.36's
        (:mod:`.podgroup_v136`)."""
        self._timed_at_listing = handle.feature_gates.at_least("1.37")
        self._sees_units = handle.feature_gates.at_least("1.37") and gates.enabled(
            "GenericWorkload"
        )
        """v1.37 under GenericWorkload: an ordinary Pod's victims are units, a PodGroup
        member at its PodGroup's priority, a ``disruptionMode: all`` PodGroup whole
        (:class:`.podgroup.NodeUnits`)."""
        """v1.37's victims read a missing start time once, as the node's Pods are listed
        (``MoreImportantVictim``); before, at each comparison (:mod:`.picking`)."""
        self.victims: dryrun.VictimCache = {}
        """Potential victims per node row, kept across attempts (see :mod:`.dryrun`)."""
        self.kept: dryrun.KeptResults | None = dryrun.KeptResults()
        """Dry-run results per node row, kept across equivalent preemptors (:mod:`.dryrun`;
        None: every dry run checks every node it looks at)."""
        self._codes: tuple[Any, Status | None, int, IntArray, CodeArray, IntArray] | None = None
        """The last Filter outcome (with its ``absent`` status, the table's capacity and
        node order) and the per-row codes and potential rows made from it: a Pod every node
        rejects for static reasons brings the same kept outcome on each retry
        (``scheduler.verdicts``); rebuilding the codes over every row was 46 % of PostFilter
        in a 20,000-node scaled simulation."""

    def set_framework(self, fwk: wap.GroupRunner) -> None:
        """The framework whose Filter plugins the dry runs use (upstream ``fh``)."""
        self.fwk = fwk

    # ------------------------------------------------------------------ PostFilter
    def post_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, diagnosis: Any
    ) -> tuple[PostFilterResult | None, Status]:
        """Upstream ``PostFilter`` / ``Evaluator.Preempt``; ``diagnosis`` carries the Filter
        ``outcome`` and the ``absent`` status of nodes it does not cover."""
        if self.fwk is None:
            return None, Status(Code.ERROR, (PREFIX + NO_FRAMEWORK,))
        if self._placement_limited and pod.scheduling_group:
            limited = self.pod_group_limitation(pod)
            if limited:
                return None, Status(Code.UNSCHEDULABLE, (PREFIX + limited,))
        if self._workload_aware_v136 and pod.scheduling_group:
            return None, Status(Code.UNSCHEDULABLE, (PREFIX + WORKLOAD_AWARE,))
        table = cluster.nodes
        codes, potential = self._codes_of(diagnosis, table.capacity, table.order())
        eligible, why = self.pod_eligible_to_preempt_others(pod, cluster, codes)
        if not eligible:
            return None, Status(Code.UNSCHEDULABLE, (PREFIX + why,))
        candidates: list[Candidate] = []
        statuses: Mapping[int, Status] = {}
        if potential.size:
            offset, num = self.get_offset_and_num_candidates(int(potential.size))
            candidates, statuses, errors = dryrun.dry_run_preemption(
                self.fwk,
                state,
                pod,
                cluster,
                potential,
                pdb.load_budgets(cluster),
                offset,
                num,
                self.victims,
                self.kept,
                timed_at_listing=self._timed_at_listing,
                units=self._units(cluster),
            )
            if errors and not candidates:
                return None, Status(Code.ERROR, (PREFIX + _aggregate(errors),))
        if not candidates:
            msg = fit_error_message(len(table), statuses)
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, (PREFIX + msg,))
        candidates, status = self.call_extenders(pod, cluster, candidates)
        if not status.is_success():
            return None, status
        best = pick_one_node(candidates)
        if best < 0:
            return None, Status(Code.UNSCHEDULABLE, (PREFIX + NO_CANDIDATE,))
        chosen = dryrun.current_victims(cluster, candidates[best])
        self.prepare_candidate(pod, chosen)
        result = PostFilterResult(chosen.node, tuple(chosen.victims))
        if self._says_placement:
            msg = (
                f"found a potential placement for pod on node {chosen.node}, "
                f"preempting {len(chosen.victims)} victims"
            )
            return result, Status(Code.SUCCESS, (PREFIX + msg,))
        return result, Status()

    # ------------------------------------------------------------------ PodGroupPostFilter
    def pod_group_post_filter(
        self, key: str, members: Sequence[api.Pod], schedule: PodGroupSchedulingFunc
    ) -> tuple[PodGroupPostFilterResult | None, Status]:
        """Upstream ``PodGroupPostFilter`` / ``PodGroupEvaluator.Preempt`` (v1.37): make room
        for the whole group ``key`` (:mod:`.podgroup`), evicting the victims at once; every
        message is prefixed ``pod group preemption: ``.  v1.36 (WorkloadAwarePreemption):
        :meth:`_preempt_group_v136`, messages as they are, no metric of its own."""
        if self._workload_aware_v136:
            return self._preempt_group_v136(key, members, schedule)
        result, status = self._preempt_group(key, members, schedule)
        self._record_group_attempt(status)
        if status.reasons:
            return result, Status(status.code, (wap.PG_PREFIX + status.message(),))
        return result, status

    def _preempt_group(
        self, key: str, members: Sequence[api.Pod], schedule: PodGroupSchedulingFunc
    ) -> tuple[PodGroupPostFilterResult | None, Status]:
        manager = self.handle.services.get(POD_GROUP_MANAGER)
        if self.fwk is None or manager is None:
            return None, Status(Code.ERROR, (NO_FRAMEWORK,))
        gates = self.handle.feature_gates
        preemptor = wap.preemptor_of(
            manager, key, members, policy_gate=gates.enabled("PodGroupPreemptionPolicy")
        )
        if preemptor.policy == wap.PREEMPT_NEVER:
            return None, Status(Code.UNSCHEDULABLE, (NEVER,))
        cluster = self.handle.cluster
        if wap.ongoing(cluster, manager, preemptor, terminating_by_preemption):
            current = {m.key: m.nominated_node_name for m in members}
            return PodGroupPostFilterResult(current), Status(Code.SUCCESS, (wap.ONGOING,))
        victims = wap.domain_victims(cluster, manager)
        chosen, status = wap.select_victims(
            self.fwk, cluster, preemptor, victims, pdb.load_budgets(cluster), schedule
        )
        if chosen is None:
            return None, status
        self._observe_group_victims(chosen)
        self._evict(members[0], "cluster", chosen.victims)
        msg = f"found a placement for podgroup, preempting {len(chosen.victims)} victims"
        result = PodGroupPostFilterResult(chosen.nominations, chosen.victims)
        return result, Status(Code.SUCCESS, (msg,))

    def _preempt_group_v136(
        self, key: str, members: Sequence[api.Pod], schedule: PodGroupSchedulingFunc
    ) -> tuple[PodGroupPostFilterResult | None, Status]:
        """v1.36's ``PodGroupEvaluator.Preempt`` (:mod:`.podgroup_v136`): the group's
        priority, ``Never`` when a member says so, victims chosen by rerunning the whole
        algorithm, evicted at once (``PreemptionVictims`` observed); Success without a
        message and without nominations (the cycle nominates the members it placed before)."""
        manager = self.handle.services.get(POD_GROUP_MANAGER)
        if self.fwk is None or manager is None:
            return None, Status(Code.ERROR, (NO_FRAMEWORK,))
        preemptor = wap.preemptor_of(manager, key, members, policy_gate=False)
        if preemptor.policy == wap.PREEMPT_NEVER:
            return None, Status(Code.UNSCHEDULABLE, (NEVER,))
        cluster = self.handle.cluster
        victims = wap136.domain_victims(cluster, manager)
        budgets = pdb.load_budgets(cluster)
        chosen, status = wap136.select_victims(cluster, preemptor, victims, budgets, schedule)
        if chosen is None:
            return None, status
        metrics = self.handle.metrics
        if metrics is not None:
            metrics.observe_preemption_victims(len(chosen.victims))
        self._evict(members[0], "cluster", chosen.victims)
        return PodGroupPostFilterResult({}, chosen.victims), Status()

    def _record_group_attempt(self, status: Status) -> None:
        """``scheduler_workload_preemption_attempts_total{result}``."""
        metrics = self.handle.metrics
        if metrics is not None:
            metrics.record_workload_preemption_attempt(status.code.name)

    def _observe_group_victims(self, chosen: wap.Selection) -> None:
        """``observeVictims`` for a PodGroup preemptor: ``workload_preemption_victims``,
        ``preemption_workload_disruptions{preemptor="PodGroup"}`` (PodGroup units, when
        any) and ``preemption_pdb_violations_total`` (when any)."""
        metrics = self.handle.metrics
        if metrics is not None:
            metrics.record_workload_preemption(
                len(chosen.victims), chosen.group_disruptions, chosen.pdb_violations
            )

    # ------------------------------------------------------------------ steps
    def _units(self, cluster: ClusterState) -> wap.NodeUnits | None:
        """The unit view of victims (v1.37 under GenericWorkload, while some Pod belongs
        to a PodGroup), else None: every victim a Pod at its own priority."""
        if not self._sees_units:
            return None
        manager = self.handle.services.get(POD_GROUP_MANAGER)
        if manager is None or not manager.groups:
            return None
        return wap.NodeUnits(cluster, manager)

    def pod_group_limitation(self, pod: api.Pod) -> str:
        """v1.36's check before any other (TopologyAwareWorkloadScheduling on, ``pod`` a
        PodGroup member): its PodGroup missing, or one with scheduling constraints (upstream
        leaves their preemption to workload-aware preemption, so as not to preempt once per
        placement); "" when the Pod may go on."""
        manager = self.handle.services.get(POD_GROUP_MANAGER)
        if manager is None:
            return ""
        group = manager.pod_group(f"{pod.namespace}/{pod.scheduling_group}")
        if group is None:
            return NO_POD_GROUP
        return PLACEMENT_LIMITED if group.policy.topology_keys else ""

    def _codes_of(
        self, diagnosis: Any, capacity: int, order: IntArray
    ) -> tuple[CodeArray, IntArray]:
        """:func:`node_codes` and the rows in ``order`` where the code is Unschedulable
        (the dry run's candidates), the last answer again for the same outcome object."""
        outcome, absent = diagnosed(diagnosis)
        kept = self._codes
        if (
            kept is not None
            and outcome is not None
            and kept[0] is outcome
            and kept[1] == absent
            and kept[2] == capacity
            and kept[3] is order
        ):
            return kept[4], kept[5]
        codes = node_codes(diagnosis, capacity)
        potential = order[codes[order] == Code.UNSCHEDULABLE]
        self._codes = (outcome, absent, capacity, order, codes, potential)
        return codes, potential

    def pod_eligible_to_preempt_others(
        self, pod: api.Pod, cluster: ClusterState, codes: npt.NDArray[np.int8]
    ) -> tuple[bool, str]:
        """Upstream ``PodEligibleToPreemptOthers``: not with ``preemptionPolicy: Never``, and
        not again while lower-priority Pods on its nominated node are still terminating
        because of a preemption (unless that node is now UnschedulableAndUnresolvable)."""
        if pod.preemption_policy == "Never":
            return False, NEVER
        nominated = pod.nominated_node_name
        row = cluster.nodes.row_of.get(nominated) if nominated else None
        if not nominated:
            return True, ""
        code = codes[row] if row is not None else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        if code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE or row is None:
            return True, ""
        units = self._units(cluster)
        for key in cluster.pods_on_node.get(nominated, ()):
            other = cluster.pods[key].pod
            prio = wap.pod_priority(units.manager, other) if units else other.priority
            if prio < pod.priority and terminating_by_preemption(other):
                return False, TERMINATING
        return True, ""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random offset into the potential nodes (the scheduler's seeded generator) and
        how many candidates to find (upstream ``GetOffsetAndNumCandidates``)."""
        return self.draw(num_nodes), self.calculate_num_candidates(num_nodes)

    def calculate_num_candidates(self, num_nodes: int) -> int:
        """``max(nodes * percentage / 100, absolute)``, at most ``num_nodes``."""
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def call_extenders(
        self, pod: api.Pod, cluster: ClusterState, candidates: list[Candidate]
    ) -> tuple[list[Candidate], Status]:
        """Upstream ``callExtenders``: the scheduler's extenders with a preempt verb
        (``handle.extenders``) keep or drop candidates and may change victims.
        Surviving candidates keep their order, then any the extenders added, in their order."""
        exts = self.handle.extenders
        if exts is None or not exts.has_preemption(pod):
            return candidates, Status()
        table = cluster.nodes

        def pods_on(node: str) -> list[api.Pod] | None:
            if node not in table.row_of:
                return None
            return [cluster.pods[k].pod for k in sorted(cluster.pods_on_node.get(node, ()))]

        candidates = [dryrun.current_victims(cluster, c) for c in candidates]
        sent = {c.node: Victims(list(c.victims), c.num_pdb_violations) for c in candidates}
        try:
            kept = exts.process_preemption(pod, sent, pods_on)
        except ExtenderError as e:
            return [], Status(Code.ERROR, (PREFIX + str(e),))
        order = {c.node: i for i, c in enumerate(candidates)}
        names = sorted(kept, key=lambda n: order.get(n, len(order)))
        out = [
            Candidate(n, table.row_of[n], kept[n].pods, kept[n].num_pdb_violations) for n in names
        ]
        return out, Status()

    def prepare_candidate(self, pod: api.Pod, chosen: Candidate) -> None:
        """Delete the victims through the API server (those already terminating are left
        alone).  As upstream's asynchronous preemption, a failed deletion is logged and the
        Pod is still nominated; the scheduler clears lower-priority nominations there."""
        self._evict(pod, chosen.node, chosen.victims)

    def _evict(self, pod: api.Pod, node: str, victims: Sequence[api.Pod]) -> None:
        """Evict ``victims`` for ``pod`` (a PodGroup's first member for the group) on
        ``node`` (``cluster`` for a PodGroup)."""
        client = self.handle.api
        if client is None:
            return
        for victim in victims:
            if victim.deletion_timestamp is not None:
                continue
            try:
                preempt_pod(
                    client,
                    victim,
                    pod,
                    node,
                    VICTIM_REASON,
                    waiting=self.handle,
                    plugin=self.name,
                )
            except Exception:
                log.exception("could not preempt %s on %s", victim.key, node)


# ---------------------------------------------------------------------- helpers
def node_codes(diagnosis: Any, capacity: int) -> npt.NDArray[np.int8]:
    """Status code per node-table row from the Filter outcome (int8, shape ``(capacity,)``);
    rows the outcome does not cover get the ``absent`` status's code."""
    outcome, absent = diagnosed(diagnosis)
    default = absent.code if absent is not None else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    codes = np.full(capacity, int(default), dtype=np.int8)
    if outcome is not None and outcome.failed.size:
        by_status = np.asarray([int(s.code) for s in outcome.statuses], dtype=np.int8)
        codes[outcome.failed] = by_status[outcome.failed_status]
    if outcome is not None and outcome.feasible.size:
        codes[outcome.feasible] = Code.SUCCESS
    return codes


def fit_error_message(num_all_nodes: int, statuses: Mapping[int, Status]) -> str:
    """Upstream ``FitError.Error()`` for the dry run: nodes checked and rejected give their
    reasons, every other node "Preemption is not helpful for scheduling"."""
    counts: Counter[str] = Counter()
    for status in statuses.values():
        counts.update(status.reasons)
    if num_all_nodes > len(statuses):
        counts[NOT_HELPFUL] += num_all_nodes - len(statuses)
    msg = f"0/{num_all_nodes} nodes are available:"
    parts = sorted(f"{c} {r}" for r, c in counts.items())
    return msg + (" " + ", ".join(parts) + "." if parts else "")


def terminating_by_preemption(pod: api.Pod) -> bool:
    """Deleted (``deletionTimestamp`` set) with a ``DisruptionTarget`` condition of reason
    ``PreemptionByScheduler`` (upstream ``podTerminatingByPreemption``)."""
    if pod.deletion_timestamp is None:
        return False
    for cond in (pod.raw.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == "DisruptionTarget":
            return cond.get("status") == "True" and cond.get("reason") == VICTIM_REASON
    return False


def _aggregate(errors: list[str]) -> str:
    """Upstream ``utilerrors.NewAggregate(...).Error()``: one error as it is, more
    bracketed, each distinct message once."""
    distinct = list(dict.fromkeys(errors))
    return distinct[0] if len(distinct) == 1 else "[" + ", ".join(distinct) + "]"


def new(args: object | None, handle: Handle) -> DefaultPreemption:
    """Factory: ``args`` is the profile's raw DefaultPreemption mapping (or None)."""
    if args is not None and not isinstance(args, Mapping):
        raise TypeError(f"DefaultPreemption args must be a mapping, got {type(args).__name__}")
    return DefaultPreemption(DefaultPreemptionArgs.from_raw(args), handle)
