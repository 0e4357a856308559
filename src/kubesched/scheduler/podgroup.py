"""The PodGroup scheduling cycle: a Workload API group placed all-or-nothing in one cycle.

Upstream ``schedule_one_podgroup.go`` (v1.36.3, v1.37.2), with GenericWorkload on.  v1.37
pops the group whole, as one queue entity (:mod:`kubesched.queue.podgroups`:
:meth:`SchedulingQueue.group_members`); v1.36 pops one member and takes the group's other
queued members out of the queue with it (:meth:`SchedulingQueue.take`, upstream's
``PopSpecificPod``).  One cycle runs for all:

1. **order**: v1.37 ``PodGroupMemberPodsOrderingFunc`` (priority descending, attempts
   descending, timestamp ascending, name); v1.36 priority, then first-attempt time;
2. **validate** (v1.37 ``validatePodGroup``): one scheduler name, every member's priority
   that of the PodGroup (when it carries one), one preemption policy; otherwise every member
   fails with the error (``SchedulerError``);
3. **the algorithm** over one view of the cluster: each member in order is searched as a
   lone Pod (v1.37: no PostFilter; v1.36 runs the member's PostFilter plugins when it fits
   nowhere, and a member its own preemption nominated counts as placed there), and a member
   that fits is assumed and Reserved so the next ones see it.  v1.37 asks the profile's
   PlacementFeasible plugins (GangScheduling: ``minCount`` against scheduled + remaining)
   before the first member and after each one, and stops early when the group can no
   longer make it; v1.36 tries every member and runs Permit on each placed one in the
   cycle (GangScheduling's Wait until the quorum), the group feasible from the first
   member whose Permit succeeds.  Everything assumed is undone afterwards (upstream's
   ``revertFns``);
4. **submit**: a feasible group's placed members go through the one commit path
   (:class:`~kubesched.scheduler.commit.Commit`: assume, Reserve, Permit, where
   GangScheduling holds the first ones until the quorum is scheduled, then bind); the
   members that did not fit fail with their own diagnosis.  An infeasible group's placed
   members fail with ``pod group is unschedulable, <the group's message>`` (v1.36: their
   own Permit message), the members not tried with the group's status, the others with
   their own diagnosis; an error fails all.

The PodGroup's ``PodGroupInitiallyScheduled`` (v1.36 ``PodGroupScheduled``) condition is
kept in :attr:`PodGroupCycle.conditions` as upstream writes it (``Scheduled`` /
``Unschedulable`` / ``SchedulerError``, never regressing from True).  Afterwards v1.37's
members that failed wait for their group, which is requeued as one entity
(``AddAttemptedPodGroupIfNeeded``: :meth:`SchedulingQueue.add_attempted_pod_group`, with the
algorithm's status); v1.36's are requeued one by one through the usual failure path.
Deviations: ``docs/fidelity.md``.

After an Unschedulable algorithm the group may preempt as one (workload-aware preemption:
v1.37's PodGroupPostFilter, :meth:`GroupAlgorithm.post_filter_result`; v1.36's under
WorkloadAwarePreemption, :meth:`GroupAlgorithm.workload_aware_preemption_v136`, where a
member that fits nowhere also runs its own PostFilter plugins for their message).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api import objects as api
from kubesched.api import workload
from kubesched.config import names
from kubesched.framework import contract
from kubesched.framework.interface import (
    PODS_TO_ACTIVATE_KEY,
    SUCCESS,
    Code,
    CycleState,
    ExtenderError,
    IntArray,
    PodGroupStatusWriter,
    QueuedPodInfo,
    Status,
)
from kubesched.framework.outcomes import PostFilterResult
from kubesched.framework.podgroups import Placement, PodGroupManager
from kubesched.framework.runtime import Framework, PluginError
from kubesched.queue.nominator import Nominator
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.commit import Commit
from kubesched.scheduler.failures import Failures
from kubesched.scheduler.types import (
    Diagnosis,
    FitError,
    NoNodesError,
    ScheduleResult,
    rejected_on_node,
)
from kubesched.state.cache import ClusterState

POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
"""``errPodGroupUnschedulable``."""
PREEMPT_LOWER = "PreemptLowerPriority"
WAP_NOT_REGISTERED = (
    "default preemption plugin is not registered, workload aware preemption is disabled"
)
"""v1.36 ``runWorkloadAwarePreemption`` without DefaultPreemption in the profile."""
WAP_CONSTRAINED = (
    "workload aware preemption is not supported for pod groups with scheduling constraints"
)
"""v1.36 ``runWorkloadAwarePreemption`` for a PodGroup with a topology constraint."""

SchedulePod = Callable[[Framework, CycleState, api.Pod], ScheduleResult]
Restrict = Callable[[IntArray | None], None]
"""Narrows the search to a placement's rows (None: every node again)."""
MemberPostFilter = Callable[[Framework, CycleState, api.Pod, Diagnosis], PostFilterResult | None]
"""Runs a member's PostFilter plugins after it fit nowhere, leaving their message in the
diagnosis; their nomination, if any (:meth:`kubesched.scheduler.failures.Failures.post_filter`)."""
WAITING_FOR_PREEMPTION = "pod group is waiting for preemption to complete"
"""v1.36: the group's reason when a member's own preemption made it feasible."""


def _member_error(res: MemberResult) -> Status | None:
    """The group's Error when a member's attempt erred (neither placed nor rejected):
    upstream stops the cycle there."""
    if res.status.is_success() or res.status.is_rejected():
        return None
    return Status(
        Code.ERROR,
        (f"failed to schedule other pod from a pod group: {res.status.message()}",),
    )


def with_reason(group: Status, reason: str) -> Status:
    """``AppendReason``: ``group`` with one more reason."""
    return Status(group.code, (*group.reasons, reason), group.plugin)


def run_pod_group_post_filters(
    fwk: Framework,
    key: str,
    pods: list[api.Pod],
    schedule: contract.PodGroupSchedulingFunc | None,
    claims: Mapping[str, CycleState] | None,
) -> tuple[Status, contract.PodGroupPostFilterResult | None]:
    """``RunPodGroupPostFilterPlugins`` for group ``key`` (a ``composite:`` key for a
    tree's root) and its unscheduled members ``pods``, in the profile's PostFilter order:
    DynamicResources frees the claims that kept the members off their nodes when given
    ``claims``, the cycle states of the members the algorithm tried (by Pod key), and says
    nothing without (:class:`~kubesched.framework.contract.PodGroupClaimsPostFilterPlugin`);
    a PodGroupPostFilter plugin (DefaultPreemption) preempts for the group when it has a
    ``schedule`` (its whole algorithm).  The first Success or UnschedulableAndUnresolvable
    answer ends the run (with its nominations on Success); Unschedulable reasons are joined
    (an empty message when none says anything); an Error is ``error in "NAME"
    PodGroupPostFilter plugins: ...``."""
    reasons: list[str] = []
    for plugin in fwk.plugins["post_filter"]:
        result: contract.PodGroupPostFilterResult | None = None
        if isinstance(plugin, contract.PodGroupClaimsPostFilterPlugin):
            if claims is None:
                continue
            status = plugin.pod_group_post_filter_claims(pods, claims)
        elif isinstance(plugin, contract.PodGroupPostFilterPlugin) and schedule is not None:
            result, status = plugin.pod_group_post_filter(key, pods, schedule)
        else:
            continue
        if status.is_success():
            return Status(Code.SUCCESS, (status.message(),)), result
        if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return Status(status.code, (status.message(),)), None
        if status.code != Code.UNSCHEDULABLE:
            msg = f'error in "{plugin.name}" PodGroupPostFilter plugins: {status.message()}'
            return Status(Code.ERROR, (msg,), plugin.name), None
        reasons.extend(status.reasons)
    return Status(Code.UNSCHEDULABLE, (", ".join(reasons),)), None


def attempt_outcome(decided: Status) -> str:
    """The outcome ``AddAttemptedPodGroupIfNeeded`` records for a group (or tree) whose
    algorithm decided ``decided``: success, rejected or error."""
    if decided.is_success():
        return "success"
    return "rejected" if decided.is_rejected() else "error"


def _waiting(group: Status) -> bool:
    """v1.36 ``waitingOnPreemption``: the group's status when a member's own preemption made
    it feasible."""
    return group.code == Code.UNSCHEDULABLE and group.reasons[1:] == (WAITING_FOR_PREEMPTION,)


def _feasibility_error(status: Status) -> Status:
    """A PlacementFeasible plugin's error as the cycle reports it."""
    return Status(Code.ERROR, (f"failed to evaluate placement feasibility: {status.message()}",))


HoldDeletions = Callable[[bool], None]
"""``hold(True)``: the Pods deleted from now on stay in the scheduler's view (its cache and
queue hear of them later); ``hold(False)``: they are applied, in order.  Upstream v1.36's
PodGroup cycle reads the snapshot taken at its start, so the victims a member's own
preemption deletes in the cycle are still on their nodes for the members after it (its
informer's deletions reach the cache, not the cycle's snapshot)."""


@dataclass(slots=True)
class MemberResult:
    """One member's outcome in the algorithm (upstream ``algorithmResult``)."""

    qp: QueuedPodInfo
    state: CycleState
    status: Status
    node: str = ""
    diagnosis: Diagnosis | None = None
    """The FitError's diagnosis when no node fits (or v1.36's Permit rejected it)."""
    permit: Status = SUCCESS
    """v1.36: the member's Permit status in the cycle (Wait before the quorum)."""
    nominating: PostFilterResult | None = None
    """v1.36: what the member's own PostFilter answered (its nomination, "" to clear it)."""
    preempting: bool = False
    """v1.36 ``requiresPreemption``: the member fit nowhere, but its own preemption nominated
    ``node``, where it is assumed for the members after it."""


@dataclass(frozen=True, slots=True)
class Condition:
    """A PodGroup's scheduling condition as upstream patches it."""

    type: str
    status: str
    reason: str
    message: str


class GroupAlgorithm:
    """The part of the cycle that decides, without committing anything: the members'
    order, the validation and the algorithm over the cluster (what ``explain`` runs as a dry
    run for a member's group, :mod:`kubesched.explainer.podgroup`).  ``activate`` is where
    v1.36's in-cycle Permit sends the members it activates."""

    def __init__(
        self,
        *,
        manager: PodGroupManager,
        cluster: ClusterState,
        schedule_pod: SchedulePod,
        activate: Callable[[list[api.Pod]], None],
        restrict: Restrict | None = None,
        nominator: Nominator | None = None,
        member_post_filter: MemberPostFilter | None = None,
    ) -> None:
        self.manager = manager
        gates = manager.gates
        self.member_post_filter = member_post_filter if gates.version == "1.36" else None
        """v1.36 runs a member's PostFilter plugins when it fits nowhere
        (``runAllPostFilters``): under WorkloadAwarePreemption for their message
        (``preemption: not eligible due to workload aware preemption enabled``); without it
        DefaultPreemption preempts for the member alone, which is then assumed on the node
        it nominated (``requiresPreemption``, :meth:`algorithm_v136`)."""
        self._member_post_filters = True
        """False while workload-aware preemption reruns the algorithm
        (``runWithoutPostFilters``)."""
        self.nominator = nominator
        """The queue's nominations: a member assumed in the cycle loses its own until it is
        undone (upstream's ``assume`` / ``unreserveAndForget`` in a PodGroup cycle)."""
        self._unnominated: dict[str, tuple[api.Pod, str]] = {}
        self.version = manager.gates.version
        self.cluster = cluster
        self.schedule_pod = schedule_pod
        self.activate = activate
        self.restrict = restrict
        self.placements = restrict is not None and gates.enabled("TopologyAwareWorkloadScheduling")
        """v1.36+ with TopologyAwareWorkloadScheduling: the placement algorithm."""
        self.scope: IntArray | None = None
        """The rows of the placement being tried (upstream's snapshot after
        ``AssumePlacement``; None: every node): a group's placements are generated from its
        parent's (a composite tree's CompositePodGroup with a topology constraint)."""
        self.in_tree = False
        """True while a composite tree's PodGroup is tried
        (:mod:`kubesched.scheduler.podgroup_tree`): a feasible PodGroup with nothing placed
        stays feasible (upstream makes only the root Unschedulable then)."""

    def handles(self, pod: api.Pod) -> bool:
        """Whether ``pod`` is scheduled by a PodGroup cycle (v1.36+, a PodGroup member)."""
        return self.version != "1.35" and self.manager.group_key(pod) is not None

    def decide(
        self, fwk: Framework, members: list[QueuedPodInfo], key: str
    ) -> tuple[list[MemberResult], Status]:
        """Validate and run the release's algorithm for ``members`` (already ordered)."""
        policy = self.manager.policy(key)
        problem = self.validate(fwk, members, key)
        if problem:
            return [], Status(Code.ERROR, (problem,))
        if self.version == "1.36" and not self.placements and policy is None:
            # v1.36's default algorithm never reads the PodGroup: without GangScheduling to
            # hold them, members of a group whose object is missing are placed all the same.
            return self.algorithm_v136(fwk, members)
        if policy is None:
            return [], Status(Code.ERROR, (f'podgroups "{key}" not found',))
        return self.group_algorithm(fwk, members, key, policy)

    def group_algorithm(
        self,
        fwk: Framework,
        members: list[QueuedPodInfo],
        key: str,
        policy: workload.GroupTemplate,
    ) -> tuple[list[MemberResult], Status]:
        """Upstream ``podGroupSchedulingAlgorithm``: the placement algorithm under
        TopologyAwareWorkloadScheduling, else the default one."""
        if self.placements:
            return self.placement_algorithm(fwk, members, key, policy)
        return self.default_algorithm(fwk, members, key, policy)

    def default_algorithm(
        self,
        fwk: Framework,
        members: list[QueuedPodInfo],
        key: str,
        policy: workload.GroupTemplate,
    ) -> tuple[list[MemberResult], Status]:
        """The release's ``podGroupSchedulingDefaultAlgorithm`` on the current nodes."""
        if self.version == "1.36":
            return self.algorithm_v136(fwk, members)
        return self.algorithm(fwk, members, key, policy)

    def placements_generated(self, fwk: Framework, count: int) -> None:
        """The placement algorithm has ``count`` placements to try (a dry run: nothing)."""
        del fwk, count

    def placement_evaluated(self, fwk: Framework, feasible: bool, seconds: float) -> None:
        """The placement algorithm tried one placement (a dry run: nothing)."""
        del fwk, feasible, seconds

    def placement_algorithm(
        self,
        fwk: Framework,
        members: list[QueuedPodInfo],
        key: str,
        policy: workload.GroupTemplate,
    ) -> tuple[list[MemberResult], Status]:
        """Upstream ``podGroupSchedulingPlacementAlgorithm`` (v1.36+ TAS): the first
        PlacementGenerate plugin's placements, the default algorithm on each in turn (the
        search narrowed to its nodes), the best feasible one by the PlacementScore plugins
        (ties: the first); none feasible: ``0/N placements are available, first placement
        status: ...`` with the first placement's member results."""
        placements, status = self.generate_placements(fwk, key)
        if not status.is_success():
            return [], status
        self.placements_generated(fwk, len(placements))
        first: tuple[list[MemberResult], Status] | None = None
        feasible: list[tuple[list[MemberResult], Status]] = []
        feasible_rows: list[IntArray] = []
        parent = self.scope
        try:
            for placement in placements:
                started = time.perf_counter()
                self.assume_placement(placement.rows)
                results, status = self.default_algorithm(fwk, members, key, policy)
                if status.code == Code.ERROR:
                    return results, status
                if first is None:
                    first = (results, status)
                fits = status.is_success() or _waiting(status)  # v1.36: waitingOnPreemption
                if fits:
                    feasible.append((results, status))
                    feasible_rows.append(placement.rows)
                self.placement_evaluated(fwk, status.is_success(), time.perf_counter() - started)
        finally:
            self.assume_placement(parent)
        if not feasible:
            assert first is not None
            results, status = first
            err = (
                POD_GROUP_UNSCHEDULABLE
                if status.reasons[:1] == (POD_GROUP_UNSCHEDULABLE,)
                else status.message()
            )
            said = f"0/{len(placements)} placements are available, first placement status: {err}"
            if self.version == "1.36":  # v1.37 adds errPodGroupUnschedulable in front
                return results, Status(Code.UNSCHEDULABLE, (said,))
            return results, Status(Code.UNSCHEDULABLE, (POD_GROUP_UNSCHEDULABLE, said))
        placed = [[r.qp.pod for r in res if r.status.is_success()] for res, _ in feasible]
        best = self.best_placement(fwk, key, feasible_rows, placed)
        if isinstance(best, Status):
            return [], best
        return feasible[best]

    def generate_placements(self, fwk: Framework, key: str) -> tuple[list[Placement], Status]:
        """``RunPlacementGeneratePlugins`` for group ``key`` (a PodGroup's or a
        ``composite:`` key) over the placement being tried (:attr:`scope`): the first
        PlacementGenerate plugin's placements, that one placement without a plugin; the
        plugin's failure, or Unschedulable when it found none."""
        everything = self.scope if self.scope is not None else self.cluster.nodes.order()
        if not fwk.placement_generators:
            return [Placement("", everything)], SUCCESS
        generator = fwk.placement_generators[0]
        placements, status = generator.generate_placements(key, everything)
        if not status.is_success():
            return [], status.with_plugin(generator.name)
        if not placements:  # members requeued as the group would be: no rejector
            return [], Status(Code.UNSCHEDULABLE, ("no feasible placements found",))
        return placements, SUCCESS

    def assume_placement(self, rows: IntArray | None) -> None:
        """Search only ``rows`` from now on (upstream ``AssumePlacement``; None: every node
        again)."""
        assert self.restrict is not None
        self.scope = rows
        self.restrict(rows)

    def best_placement(
        self, fwk: Framework, key: str, rows: list[IntArray], placed: list[list[api.Pod]]
    ) -> int | Status:
        """``findBestPlacement`` among feasible placements (their ``rows`` and the Pods
        each placed): the index of the highest total of the PlacementScore plugins (ties:
        the first; upstream: at random), or their Error.  One placement is not scored."""
        if len(rows) == 1 or not fwk.placement_scorers:
            return 0
        totals = [0] * len(rows)
        for scorer, weight in fwk.placement_scorers:
            scores = [
                scorer.score_placement(key, nodes, pods)
                for nodes, pods in zip(rows, placed, strict=True)
            ]
            status = scorer.normalize_placement_scores(scores)
            if not status.is_success():
                msg = f'plugin "{scorer.name}" failed with: {status.message()}'
                return Status(
                    Code.ERROR,
                    (f"running NormalizePlacementScore on PlacementScore plugins: {msg}",),
                )
            totals = [t + s * weight for t, s in zip(totals, scores, strict=True)]
        return max(range(len(rows)), key=lambda i: (totals[i], -i))

    def post_filter(
        self,
        fwk: Framework,
        key: str,
        members: list[QueuedPodInfo],
        group: Status,
        results: Sequence[MemberResult],
    ) -> Status:
        """The group's status after :meth:`post_filter_result`."""
        return self.post_filter_result(fwk, key, members, group, results)[0]

    def _scheduling_func(
        self,
        fwk: Framework,
        members: list[QueuedPodInfo],
        key: str,
        policy: workload.GroupTemplate,
    ) -> contract.PodGroupSchedulingFunc:
        """The group's whole algorithm as a preemption reruns it (upstream
        ``podGroupSchedulingFunc``): its placed members and status, nothing kept."""

        def schedule() -> contract.PodGroupAssignments:
            results, status = self.group_algorithm(fwk, members, key, policy)
            placed = tuple(
                contract.ProposedAssignment(r.qp.pod, r.node, r.state)
                for r in results
                if r.status.is_success() and r.node
            )
            return contract.PodGroupAssignments(placed, status)

        return schedule

    def post_filter_result(
        self,
        fwk: Framework,
        key: str,
        members: list[QueuedPodInfo],
        group: Status,
        results: Sequence[MemberResult] = (),
    ) -> tuple[Status, contract.PodGroupPostFilterResult | None]:
        """v1.36: :meth:`workload_aware_preemption_v136` (``results``: the algorithm's).
        v1.37's PodGroupPostFilter after an Unschedulable algorithm
        (``RunPodGroupPostFilterPlugins``, ``applyPodGroupPostFilterResult``): the group's
        status with the plugins' outcome as one more reason, and the nominations when the
        group now waits on a preemption (None otherwise).  The plugins run in the profile's
        PostFilter order: DynamicResources says ``deallocation and deletion of
        ResourceClaims completed`` (nothing for a topology-constrained group under
        TopologyAwareWorkloadScheduling); DefaultPreemption preempts for the whole group
        (:mod:`kubesched.plugins.defaultpreemption.podgroup`).  The first Success or
        UnschedulableAndUnresolvable answer ends the run; Unschedulable reasons are joined
        (an empty reason when none says anything); an Error fails the group."""
        if self.version == "1.36" and group.code == Code.UNSCHEDULABLE:
            return self.workload_aware_preemption_v136(fwk, key, members, group, results)
        if self.version != "1.37" or group.code != Code.UNSCHEDULABLE:
            return group, None
        gates = self.manager.gates
        policy = self.manager.policy(key)
        constrained = policy is not None and bool(policy.topology_keys)
        claims = (
            None
            if gates.enabled("TopologyAwareWorkloadScheduling") and constrained
            else {r.qp.pod.key: r.state for r in results}
        )
        pods = [m.pod for m in members]
        schedule = None if policy is None else self._scheduling_func(fwk, members, key, policy)
        status, result = run_pod_group_post_filters(fwk, key, pods, schedule, claims)
        if status.code == Code.ERROR:
            return status, None
        return with_reason(group, status.message()), result

    def workload_aware_preemption_v136(
        self,
        fwk: Framework,
        key: str,
        members: list[QueuedPodInfo],
        group: Status,
        results: Sequence[MemberResult],
    ) -> tuple[Status, contract.PodGroupPostFilterResult | None]:
        """v1.36's ``runWorkloadAwarePreemption`` after an Unschedulable algorithm, under
        WorkloadAwarePreemption: DefaultPreemption's PodGroupPostFilter (the profile's only
        one; its absence is ``Unschedulable``), not for a PodGroup that is missing (an
        Error) or has topology constraints, rerunning the group's algorithm without the
        members' PostFilters (:mod:`kubesched.plugins.defaultpreemption.podgroup_v136`).
        Success leaves the group's status as it is and waits on the preemption, each member
        ``results`` placed nominated to its node there; an Error replaces the status; any
        other answer is appended to it (``status.String()``: its message)."""
        if not self.manager.gates.enabled("WorkloadAwarePreemption"):
            return group, None
        plugin = next(
            (
                p
                for p in fwk.plugins["post_filter"]
                if p.name == names.DEFAULT_PREEMPTION
                and isinstance(p, contract.PodGroupPostFilterPlugin)
            ),
            None,
        )
        pg = self.manager.pod_group(key)
        result: contract.PodGroupPostFilterResult | None = None
        if plugin is None:
            status = Status(Code.UNSCHEDULABLE, (WAP_NOT_REGISTERED,))
        elif pg is None:  # the PodGroup lister's error
            name = key.split("/", 1)[1]
            why = f'failed to get pod group object: podgroup.scheduling.k8s.io "{name}" not found'
            return Status(Code.ERROR, (why,)), None
        elif pg.policy.topology_keys:
            status = Status(Code.UNSCHEDULABLE, (WAP_CONSTRAINED,))
        else:
            schedule = self._scheduling_func(fwk, members, key, pg.policy)
            pods = [m.pod for m in members]
            self._member_post_filters = False  # runWithoutPostFilters
            try:
                result, status = plugin.pod_group_post_filter(key, pods, schedule)
            finally:
                self._member_post_filters = True
        if status.is_success():
            placed = {r.qp.pod.key: r.node for r in results if r.status.is_success() and r.node}
            victims = result.victims if result is not None else ()
            return group, contract.PodGroupPostFilterResult(placed, victims)
        if status.code == Code.ERROR:
            return status, None
        return with_reason(group, status.message()), None

    def member_failure(
        self,
        res: MemberResult | None,
        group: Status,
        untried: Status | None = None,
        *,
        waiting: bool = False,
    ) -> Diagnosis | Status | None:
        """Why a member fails after the cycle (``submitPodGroupAlgorithmResult``), None when
        it goes on to its binding cycle: ``res`` is its result (None: not tried, failing
        with ``untried``, the group's status before PodGroupPostFilter, default ``group``).
        A placed member of a group ``waiting`` on its preemption fails with the group's
        status as it is; a v1.36 member its own preemption placed (``preempting``) with its
        own diagnosis when the group waits, else as a placed one."""
        if group.code == Code.ERROR:
            return res.status if res is not None and res.status.code == Code.ERROR else group
        if res is None:
            return untried or group
        if res.preempting and not waiting:
            return Status(Code.UNSCHEDULABLE, (POD_GROUP_UNSCHEDULABLE, res.permit.message()))
        if not res.status.is_success():
            return res.diagnosis or res.status
        if group.is_success():
            return None
        if waiting:
            return group
        said = res.permit.message() if self.version == "1.36" else group.message()
        return Status(Code.UNSCHEDULABLE, (POD_GROUP_UNSCHEDULABLE, said))

    def order(self, members: list[QueuedPodInfo]) -> list[QueuedPodInfo]:
        """The members in the release's order (see the module docstring)."""
        # Upstream's timestamps (a real clock) differ in the order members first entered
        # activeQ (a member whose add completes the quorum enters before the members its add
        # event moves); the virtual clock's may tie, so the queue's count of those entries
        # stands in for them.
        if self.version == "1.36":
            return sorted(
                members,
                key=lambda m: (
                    -m.pod.priority,
                    m.initial_attempt_timestamp or 0.0,
                    m.initial_attempt_seq,
                ),
            )
        return sorted(
            members,
            key=lambda m: (
                -m.pod.priority,
                -m.attempts,
                m.timestamp,
                m.seq,
                m.pod.name,
            ),
        )

    def validate(self, fwk: Framework, members: list[QueuedPodInfo], key: str) -> str:
        """v1.37 ``validatePodGroup`` (v1.36: one scheduler name); "" when valid."""
        del fwk
        pg = self.manager.pod_group(key)
        priority = (pg.policy.priority or 0) if pg is not None else 0  # PodGroupPriority
        v137 = self.version != "1.36"
        group_policy = ""
        if self.manager.gates.enabled("PodGroupPreemptionPolicy") and pg is not None:
            group_policy = pg.policy.preemption_policy or PREEMPT_LOWER
        pods = [m.pod for m in members]
        if v137:
            state = self.manager.state(key)
            pods += self.manager.pods(sorted(state.scheduled()))
        return self.validate_pods(pods, priority, group_policy)

    def validate_pods(self, pods: list[api.Pod], priority: int, group_policy: str) -> str:
        """``validatePodGroup``'s check of ``pods`` (the queued members first, then the
        scheduled ones) against the first one's scheduler name and (v1.37) the group's
        ``priority`` and preemption policy (``group_policy``: "" without
        PodGroupPreemptionPolicy, where the first member's is the rule); "" when valid."""
        name = pods[0].scheduler_name
        v137 = self.version != "1.36"
        gated_policy = self.manager.gates.enabled("PodGroupPreemptionPolicy")
        for pod in pods:
            if pod.scheduler_name != name:
                return (
                    "all pods in a single pod group should have the same .spec.schedulerName "
                    f'set, got: "{pod.scheduler_name}" and "{name}"'
                )
            if not v137:
                continue
            if pod.priority != priority:
                return (
                    "all pods in a single pod group should have the same priority as the pod "
                    f"group's priority, got {pod.priority} and {priority}"
                )
            mine = pod.preemption_policy or PREEMPT_LOWER
            if gated_policy and mine != group_policy:
                return (
                    "all pods in a single pod group should have the same preemption policy as "
                    f"the pod group's preemption policy, got {mine} and {group_policy}"
                )
            if not gated_policy:
                if not group_policy:
                    group_policy = mine
                elif mine != group_policy:
                    return (
                        "all pods in a single pod group should have the same preemption "
                        f"policy, got {mine} and {group_policy}"
                    )
        return ""

    # ------------------------------------------------------------------ the algorithm
    def algorithm(
        self,
        fwk: Framework,
        members: list[QueuedPodInfo],
        key: str,
        policy: workload.GroupTemplate,
    ) -> tuple[list[MemberResult], Status]:
        """Upstream ``podGroupSchedulingDefaultAlgorithm``: the members' results (fewer than
        the members when it stopped early) and the group's status; nothing stays assumed."""
        feasible = fwk.placement_feasible
        min_count = policy.min_count or 1
        scheduled = self.manager.state(key).scheduled_count()
        remaining = len(members)

        def check() -> Status:
            for p in feasible:
                status = p.placement_feasible(min_count, scheduled, remaining)
                if not status.is_success():
                    return status
            return SUCCESS

        results: list[MemberResult] = []
        undo: list[tuple[CycleState, api.Pod]] = []
        group = Status(Code.UNSCHEDULABLE, (POD_GROUP_UNSCHEDULABLE,))
        try:
            group = check()
            if group.code == Code.ERROR:
                return results, _feasibility_error(group)
            if group.code == Code.UNSCHEDULABLE:
                return results, Status(
                    Code.UNSCHEDULABLE, (POD_GROUP_UNSCHEDULABLE, *group.reasons)
                )
            any_scheduled = False
            for m in members:
                res = self._member(fwk, m, undo)
                results.append(res)
                if (failed := _member_error(res)) is not None:
                    group = failed
                    break
                remaining -= 1
                if res.status.is_success():
                    scheduled += 1
                group = check()
                if group.code == Code.ERROR:
                    group = _feasibility_error(group)
                    break
                if group.code == Code.UNSCHEDULABLE:
                    break
                any_scheduled = any_scheduled or res.status.is_success()
            if group.code == Code.WAIT:
                group = Status(Code.UNSCHEDULABLE, (POD_GROUP_UNSCHEDULABLE, *group.reasons))
            if group.is_success() and not any_scheduled and not self.in_tree:
                group = Status(Code.UNSCHEDULABLE, (POD_GROUP_UNSCHEDULABLE,))
            return results, group
        finally:
            self._revert(fwk, undo)

    def algorithm_v136(
        self, fwk: Framework, members: list[QueuedPodInfo]
    ) -> tuple[list[MemberResult], Status]:
        """v1.36's ``podGroupSchedulingDefaultAlgorithm``: every member is tried; a placed
        member also runs Permit in the cycle (GangScheduling waits until ``minCount``
        members are scheduled), and the group is feasible from the first member whose
        Permit succeeds.  A member Permit rejects is undone and fails as rejected on its
        node."""
        results: list[MemberResult] = []
        undo: list[tuple[CycleState, api.Pod]] = []
        group = Status(Code.UNSCHEDULABLE, (POD_GROUP_UNSCHEDULABLE,))
        preempting = False
        try:
            for m in members:
                res = self._member(fwk, m, undo)
                if res.status.is_success() or res.preempting:
                    state, assumed = undo[-1]
                    permit, _ = fwk.run_permit_plugins(state, assumed, res.node)
                    pods = state.pop(PODS_TO_ACTIVATE_KEY, None)
                    if pods:
                        self.activate(list(pods.values()))
                    if permit.code != Code.WAIT and not permit.is_success():
                        self._revert(fwk, [undo.pop()])
                        why = rejected_on_node(permit)
                        clear = PostFilterResult("") if res.preempting else None
                        if isinstance(why, Diagnosis):
                            res = MemberResult(
                                m, state, Status(permit.code), diagnosis=why, nominating=clear
                            )
                        else:
                            res = MemberResult(m, state, why, nominating=clear)
                    else:
                        res.permit = permit
                results.append(res)
                if (failed := _member_error(res)) is not None:
                    group = failed
                    break
                placed = res.status.is_success() or res.preempting
                preempting = preempting or res.preempting
                if placed and res.permit.is_success():
                    group = SUCCESS
                    if preempting:  # the whole group waits on the members' preemption
                        waits = (POD_GROUP_UNSCHEDULABLE, WAITING_FOR_PREEMPTION)
                        group = Status(Code.UNSCHEDULABLE, waits)
            return results, group
        finally:
            self._revert(fwk, undo)

    def _revert(self, fwk: Framework, undo: list[tuple[CycleState, api.Pod]]) -> None:
        """Undo the members assumed in the cycle, last first (upstream's ``revertFns``)."""
        for state, assumed in reversed(undo):
            fwk.run_unreserve(state, assumed, assumed.node_name)
            if self.cluster.is_assumed(assumed.key):
                self.cluster.forget_pod(assumed)
            was = self._unnominated.pop(assumed.key, None)
            if was is not None and self.nominator is not None:
                self.nominator.add(*was)
        undo.clear()

    def _member(
        self, fwk: Framework, m: QueuedPodInfo, undo: list[tuple[CycleState, api.Pod]]
    ) -> MemberResult:
        """``podGroupPodSchedulingAlgorithm``: search, then assume and Reserve in the view."""
        state = CycleState()
        pod = m.pod
        try:
            node = self.schedule_pod(fwk, state, pod).node
        except FitError as fit:
            nominating = None
            if self.member_post_filter is not None and self._member_post_filters:
                nominating = self.member_post_filter(fwk, state, pod, fit.diagnosis)
            unschedulable = MemberResult(
                m, state, Status(Code.UNSCHEDULABLE), diagnosis=fit.diagnosis, nominating=nominating
            )
            if nominating is None or not nominating.nominated_node_name:
                return unschedulable
            # requiresPreemption: assumed on its nominated node for the members after it
            placed = self._assume(fwk, m, state, nominating.nominated_node_name, undo)
            if not placed.status.is_success():
                return placed
            unschedulable.node, unschedulable.preempting = placed.node, True
            return unschedulable
        except NoNodesError as e:
            return MemberResult(m, state, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(e),)))
        except (PluginError, ExtenderError) as e:
            return MemberResult(m, state, Status(Code.ERROR, (str(e),)))
        return self._assume(fwk, m, state, node, undo)

    def _assume(
        self,
        fwk: Framework,
        m: QueuedPodInfo,
        state: CycleState,
        node: str,
        undo: list[tuple[CycleState, api.Pod]],
    ) -> MemberResult:
        """``assumeAndReserve`` in the cycle's view: ``m`` on ``node``, undone with the
        others afterwards (``undo``)."""
        pod = m.pod
        assumed = pod.bound_to(node)
        self.cluster.assume_pod(assumed, node)
        nominated = self.nominator.node_of(pod.key) if self.nominator is not None else ""
        if nominated and self.nominator is not None:
            # what the nominator answers for it (in a cycle, the bare Pod of
            # :meth:`PodGroupCycle._hold_nominations`): upstream's revert adds the
            # nomination back as a reference, which still resolves to that bare Pod
            held = next(
                (p for p in self.nominator.nominated_pods_for_node(nominated) if p.key == pod.key),
                pod,
            )
            self.nominator.delete(pod.key)
            self._unnominated[pod.key] = (held, nominated)
        status = fwk.run_reserve(state, assumed, node)
        if not status.is_success():
            fwk.run_unreserve(state, assumed, node)
            self.cluster.forget_pod(assumed)
            was = self._unnominated.pop(pod.key, None)
            if was is not None and self.nominator is not None:
                self.nominator.add(*was)
            return MemberResult(m, state, status)
        undo.append((state, assumed))
        return MemberResult(m, state, SUCCESS, node)


class PodGroupCycle(GroupAlgorithm):
    """The PodGroup scheduling cycle of one scheduler (see the module docstring)."""

    def __init__(
        self,
        *,
        manager: PodGroupManager,
        cluster: ClusterState,
        queue: SchedulingQueue,
        committer: Commit,
        failures: Failures,
        schedule_pod: SchedulePod,
        restrict: Restrict | None = None,
        hold_deletions: HoldDeletions | None = None,
    ) -> None:
        super().__init__(
            manager=manager,
            cluster=cluster,
            schedule_pod=schedule_pod,
            activate=lambda pods: committer.activate(pods),
            restrict=restrict,
            nominator=queue.nominator,
            member_post_filter=failures.post_filter,
        )
        self.queue = queue
        self.committer = committer
        self.failures = failures
        self.hold_deletions = hold_deletions if self.version == "1.36" else None
        """v1.36: holds the Pods deleted during the cycle out of its view until
        PodGroupPostFilter has run (see :data:`HoldDeletions`)."""
        self.conditions: dict[str, Condition] = {}
        """PodGroup ``namespace/name`` to its ``PodGroupInitiallyScheduled`` condition."""

    def placements_generated(self, fwk: Framework, count: int) -> None:
        """v1.37's ``scheduler_generated_placements_total`` (v1.36 has no such metric)."""
        if self.version != "1.36":
            self.failures.metrics.record_generated_placements(fwk.profile_name, count)

    def placement_evaluated(self, fwk: Framework, feasible: bool, seconds: float) -> None:
        """v1.37's ``scheduler_placement_evaluations_total`` and
        ``placement_evaluation_duration_seconds``: ``feasible`` only for a placement the
        group fits (upstream's ``FeasibleResult`` is a success; a group waiting on its
        preemption counts as infeasible)."""
        if self.version != "1.36":
            self.failures.metrics.record_placement_evaluation(feasible, fwk.profile_name, seconds)

    # ------------------------------------------------------------------ the cycle
    def run(self, fwk: Framework, qp: QueuedPodInfo, cycle: int) -> list[QueuedPodInfo]:
        """Schedule ``qp``'s group (``qp`` just popped); the members attempted (each one's
        attempt counts, as upstream's ``QueuedPodGroupInfo.IncAttempts``)."""
        start = time.perf_counter()
        key = self.manager.group_key(qp.pod)
        assert key is not None
        entity = self.queue.group_members(qp)  # v1.37: the group popped as one entity
        members = list(entity) if entity is not None else [qp]
        if entity is None:  # v1.36 (or a member queued alone): PopSpecificPod of the others
            counted = self.version == "1.36"  # each one a cycle of the queue's count
            for pod in self.manager.state(key).unscheduled():
                if pod.key == qp.pod.key:
                    continue
                if (taken := self.queue.take(pod.key, counted=counted)) is not None:
                    members.append(taken)
        kept = []
        for m in members:
            if m.pod.deletion_timestamp is not None or self.cluster.is_assumed(m.pod.key):
                # upstream skipPodSchedule: being deleted, or assumed already
                self.queue.done(m.pod)
            else:
                kept.append(m)
        if not kept:
            if entity is not None:
                self.queue.add_attempted_pod_group(key, "success")
            return []
        members = self.order(kept)
        self.failures.slow_step()  # long enough for the informer (``Failures.unheard``)
        held = self._hold_nominations(members)
        hold = self.hold_deletions
        if hold is not None:
            hold(True)
        try:
            results, decided = self.decide(fwk, members, key)
            algorithm = time.perf_counter() - start
            group, preemption = self.post_filter_result(fwk, key, members, decided, results)
        finally:
            if hold is not None:
                hold(False)
        if preemption is None and _waiting(decided):
            # v1.36 waitingOnPreemption: the placed members nominated where they were placed
            # (the members that preempted, to their own nomination)
            placed = {r.qp.pod.key: r.node for r in results if r.status.is_success() and r.node}
            preemption = contract.PodGroupPostFilterResult(placed, ())
        self._release_nominations(held)
        self.submit(fwk, members, results, group, key, cycle, start, decided, preemption)
        if results or decided.code != Code.ERROR:  # not a group refused before its algorithm
            self._observe(fwk, group, preemption, start, algorithm)
        if entity is not None:
            # AddAttemptedPodGroupIfNeeded with the algorithm's status (before
            # PodGroupPostFilter): the members failed above wait aside and make the group's
            # entity again (kubesched.queue.podgroups).
            self.queue.add_attempted_pod_group(key, attempt_outcome(decided))
        return members

    def _hold_nominations(self, members: list[QueuedPodInfo]) -> dict[str, tuple[api.Pod, str]]:
        """While the group's cycle runs (its algorithm and PodGroupPostFilter), a member's
        nomination stands for a bare Pod, and the nominations so replaced (key to the Pod
        nominated and its node).  Upstream's queue answers ``NominatedPodsForNode`` with the
        queued ``PodInfo`` of each nominated Pod, and for one it does not hold — the
        members, taken out of it for their cycle — with the nominator's ``podRef`` made a Pod:
        its name and UID (v1.37: and scheduling group), no containers, priority 0.  So a
        member's Filter adds a sibling's nomination only for a Pod of priority 0 or less, as
        one more Pod that requests nothing."""
        held: dict[str, tuple[api.Pod, str]] = {}
        nominator = self.nominator
        if nominator is None:
            return held
        for m in members:
            node = nominator.node_of(m.pod.key)
            if not node:
                continue
            pod = next(p for p in nominator.nominated_pods_for_node(node) if p.key == m.pod.key)
            held[m.pod.key] = (pod, node)
            bare = api.Pod(
                name=pod.name,
                namespace=pod.namespace,
                uid=pod.uid,
                scheduling_group=pod.scheduling_group if self.version != "1.36" else None,
            )
            nominator.add(bare, node)
        return held

    def _release_nominations(self, held: dict[str, tuple[api.Pod, str]]) -> None:
        """Give the members nominated still to the same node their own Pod back there (the
        members return to the queue: :meth:`_hold_nominations`)."""
        nominator = self.nominator
        if nominator is None:
            return
        for key, (pod, node) in held.items():
            if nominator.node_of(key) == node:
                nominator.add(pod, node)

    def _observe(
        self,
        fwk: Framework,
        group: Status,
        preemption: contract.PodGroupPostFilterResult | None,
        start: float,
        algorithm: float,
    ) -> None:
        """The PodGroup metrics (``scheduler_podgroup_*``, v1.36.3 and v1.37.2 alike) for
        this cycle."""
        metrics = self.failures.metrics
        if group.is_success():
            result = "scheduled"
        elif group.is_rejected():
            result = "waiting_on_preemption" if preemption is not None else "unschedulable"
        else:
            result = "error"
        seconds = time.perf_counter() - start
        metrics.record_pod_group_attempt(result, fwk.profile_name, seconds, algorithm)

    # ------------------------------------------------------------------ submit
    def submit(
        self,
        fwk: Framework,
        members: list[QueuedPodInfo],
        results: list[MemberResult],
        group: Status,
        key: str,
        cycle: int,
        start: float,
        untried: Status | None = None,
        preemption: contract.PodGroupPostFilterResult | None = None,
    ) -> None:
        """``submitPodGroupAlgorithmResult``: bind a feasible group's placed members, fail
        the others (see the module docstring).  A group waiting on its preemption
        (``preemption``) fails every member, each nominated to the node the preemption
        found for it; the victims are recorded against its first nominated member."""
        victims = preemption.victims if preemption is not None else ()
        # v1.36: a member's nomination is on its Pod once its status patch is heard, during
        # a later slow cycle (``Failures.unheard``)
        later = self.version == "1.36"
        for i, m in enumerate(members):
            res = results[i] if i < len(results) else None
            why = self.member_failure(res, group, untried, waiting=preemption is not None)
            if why is None and res is not None:
                assumed = self.committer.assume(m.pod, res.node)
                self.committer.commit(fwk, res.state, m, assumed, start, cycle)
                continue
            if why is None:
                continue
            if res is not None and res.preempting and res.nominating is not None:
                # v1.36: the member's own PostFilter evicted its victims in the cycle; they
                # stay evicted whatever its nomination becomes below
                self.failures.record_victims(m.pod.key, res.node, res.nominating.victims)
            if preemption is not None and m.pod.key in preemption.nominations:
                node = preemption.nominations[m.pod.key]
                self.failures.nominate(
                    m, PostFilterResult(node, victims), clear_lower=False, heard_later=later
                )
                victims = ()
            elif (
                preemption is None
                and res is not None
                and (res.status.is_success() or res.preempting)
            ):
                # placed, but its group failed: upstream fails it with clearNominatedNode
                self.failures.nominate(m, PostFilterResult(""), clear_lower=False)
            elif res is not None and res.nominating is not None and group.code != Code.ERROR:
                # v1.36: a member that fit nowhere keeps what its own PostFilter answered
                self.failures.nominate(m, res.nominating, heard_later=later)
            if later:
                self.failures.hear_patched_before(m.pod.key)
            self.failures.fail(fwk, m, why, cycle, start)
        if victims and members:  # v1.36: a preemption that nominated no member
            self.failures.record_victims(members[0].pod.key, "", victims)
        self._condition(key, group)

    def _condition(self, key: str, group: Status) -> None:
        """Upstream ``updatePodGroupCondition`` (never back from True to False)."""
        kind = "PodGroupScheduled" if self.version == "1.36" else "PodGroupInitiallyScheduled"
        if group.is_success():
            new = Condition(kind, "True", "Scheduled", group.message())
        elif group.is_rejected():
            new = Condition(kind, "False", "Unschedulable", group.message())
        else:
            new = Condition(kind, "False", "SchedulerError", group.message())
        old = self.conditions.get(key)
        if old is not None and old.status == "True" and new.status != "True":
            return
        self.conditions[key] = new
        self._write_condition(key, new)

    def _write_condition(self, key: str, new: Condition) -> None:
        """Write ``new`` on the PodGroup object through a client that can
        (:class:`~kubesched.framework.interface.PodGroupStatusWriter`: live mode), as
        upstream's ``updatePodGroupCondition`` against the object its informer holds: never
        from True back to False, ``observedGeneration`` the object's generation, nothing
        written when the object's condition says the same (``SetStatusCondition`` reports no
        change), ``lastTransitionTime`` kept unless the status changes."""
        writer = self.failures.api
        if not isinstance(writer, PodGroupStatusWriter):
            return
        obj = self.manager.manifest(key)
        if obj is None:
            return
        status = obj.get("status")
        conditions = status.get("conditions") if isinstance(status, dict) else None
        existing = next(
            (c for c in conditions or [] if isinstance(c, dict) and c.get("type") == new.type),
            None,
        )
        if existing is not None and existing.get("status") == "True" and new.status != "True":
            return
        meta = obj.get("metadata")
        generation = int((meta.get("generation") if isinstance(meta, dict) else None) or 0)
        condition: dict[str, Any] = {
            "type": new.type,
            "status": new.status,
            "reason": new.reason,
            "message": new.message,
            "observedGeneration": generation,
        }
        if existing is not None and all(existing.get(k) == v for k, v in condition.items()):
            return
        if existing is not None and existing.get("status") == new.status:
            condition["lastTransitionTime"] = existing.get("lastTransitionTime")
        else:
            condition["lastTransitionTime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        writer.pod_group_condition(obj, condition)
