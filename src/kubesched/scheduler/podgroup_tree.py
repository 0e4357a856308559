"""A composite tree's PodGroup cycle (upstream v1.37.2, gate CompositePodGroup).

Under CompositePodGroup a PodGroup may name a parent CompositePodGroup
(``spec.parentCompositePodGroupName``), which may name another (``MAX_TREE_DEPTH``).  What the
tree changes, as upstream's ``schedule_one_podgroup.go`` does it:

- **the queue entity** is the root (``workloadForest``): every member of every PodGroup under
  one root CompositePodGroup is queued, popped and requeued as one entity, at the root's
  priority (``CompositePodGroupPriority``: ``spec.priority``, 0 without)
  (:func:`kubesched.framework.podgroups.queue_entity`);
- **PreEnqueue** and **Permit** (GangScheduling) count the tree: a member waits until at
  least ``minGroupCount`` children of each CompositePodGroup are ready (a PodGroup ready
  with ``minCount`` members known, or scheduled at Permit; 1 for ``basic``): ``waiting for
  composite pod group "ROOT" tree to meet quorum``;
- **validation** (``validatePodGroup``) holds every member and every scheduled Pod of the
  tree to the root's priority and preemption policy;
- **the algorithm** (``podGroupSchedulingRecursiveAlgorithm``) walks the tree: a
  CompositePodGroup asks PlacementFeasible with ``minGroupCount`` against its children
  (scheduled + remaining) before the first child and after each one, stopping early when it
  can no longer make it; a PodGroup runs its own placement algorithm (TopologyAware...
  is required by the gate) and, when feasible, stays assumed for its later siblings
  (``assumeSubtreeWithRevert``).  A CompositePodGroup has placements of its own
  (``compositePodGroupSchedulingPlacementAlgorithm``): one per domain of its
  ``schedulingConstraints.topology`` key within its parent's placement
  (TopologyPlacementGenerator; pinned to the domain of the members already scheduled under
  it), else its parent's one; its children are tried inside each in turn (a child's own
  placements generated from it), the best feasible subtree by the PlacementScore plugins
  (PodGroupPodsCount counting the whole subtree's members) is assumed again, and when none
  is feasible its failure reads ``0/N placements are available, first placement status:
  ...`` with the first placement's subtree.  A root that succeeds with nothing placed
  is Unschedulable;
- **results** (``completeCompositePodGroupAlgorithmResult``): a failed CompositePodGroup's
  status replaces its feasible (or untried) descendants', whose members fail with it; a
  PodGroup that failed on its own keeps its own results.  After an Unschedulable root the
  PodGroupPostFilter plugins run for the root (:meth:`TreeCycle.tree_post_filter`:
  DefaultPreemption preempts for the whole tree at the root's priority, rerunning the
  tree's algorithm; DynamicResources says nothing for a tree), and their answer is appended
  to every group's status; a preemption leaves every PodGroup waiting on it, its members
  nominated where the rerun placed them;
- **submit** runs per PodGroup (its condition, its members bound or failed), then the root
  entity is requeued with the root's status.

:meth:`TreeCycle.decide_tree` is the cycle up to the submit, which ``explain`` runs as a
dry run for a member of a tree (:mod:`kubesched.explainer.podgroup`).

Upstream walks a CompositePodGroup's children in a Go set's order (and submits the
PodGroups in a Go map's); kubesched walks them in :meth:`PodGroupManager.tree`'s order.
Upstream tries a group's placements in a Go map's order and breaks a tie of their scores at
random; kubesched tries them in the domains' name order and takes the first of equal scores
(``docs/fidelity.md``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from kubesched.api import objects as api
from kubesched.framework import contract
from kubesched.framework.interface import (
    SUCCESS,
    Code,
    CycleState,
    IntArray,
    QueuedPodInfo,
    Status,
)
from kubesched.framework.podgroups import COMPOSITE, TreeNode
from kubesched.framework.runtime import Framework
from kubesched.scheduler.podgroup import (
    POD_GROUP_UNSCHEDULABLE,
    PREEMPT_LOWER,
    MemberResult,
    PodGroupCycle,
    attempt_outcome,
    run_pod_group_post_filters,
    with_reason,
)

__all__ = ["NodeResult", "TreeCycle", "TreeDecision"]

Undo = list[tuple[CycleState, api.Pod]]


@dataclass(slots=True)
class NodeResult:
    """One group's outcome in the tree's algorithm (upstream ``podGroupAlgorithmResult``):
    ``results`` a PodGroup's member results (in its members' order, fewer when it stopped
    early); ``inherited`` when the status is a failed ancestor's, ``superseded`` then the
    results its own algorithm had (where its members were placed, for ``explain``)."""

    node: TreeNode
    status: Status
    results: list[MemberResult] = field(default_factory=list)
    any_scheduled: bool = False
    inherited: bool = False
    superseded: list[MemberResult] = field(default_factory=list)
    placement: str = ""
    """A feasible CompositePodGroup's chosen placement (its topology domain; "" without a
    constraint)."""


@dataclass(slots=True)
class TreeDecision:
    """What one tree's cycle decided (:meth:`TreeCycle.decide_tree`): every group's
    algorithm ``results`` (by key, the failures propagated; empty when validation refused
    the tree), the root's status before (``decided``) and after (``final``) the
    PodGroupPostFilter plugins, each group's status as its members fail with it
    (``groups``: the plugins' answer appended, or their Error), the preemption the tree now
    waits on (None: none), and the algorithm's seconds."""

    results: dict[str, NodeResult]
    decided: Status
    final: Status
    groups: dict[str, Status]
    preemption: contract.PodGroupPostFilterResult | None
    seconds: float


class TreeCycle(PodGroupCycle):
    """:class:`PodGroupCycle` that schedules a composite tree popped as one entity (see the
    module docstring); any other group as its parent class does."""

    def run(self, fwk: Framework, qp: QueuedPodInfo, cycle: int) -> list[QueuedPodInfo]:
        key = self.manager.group_key(qp.pod)
        root = self.manager.root(key) if key is not None and self.manager.trees() else None
        entity = self.queue.group_members(qp)
        if root is None or not root.startswith(COMPOSITE) or entity is None:
            return super().run(fwk, qp, cycle)
        return self.run_tree(fwk, root, list(entity), cycle)

    def run_tree(
        self, fwk: Framework, root: str, popped: list[QueuedPodInfo], cycle: int
    ) -> list[QueuedPodInfo]:
        """The tree's cycle: skip, validate, the algorithm, PodGroupPostFilter, submit per
        PodGroup, requeue the root's entity (``scheduleOnePodGroup`` for a tree)."""
        start = time.perf_counter()
        kept = []
        for m in popped:
            if m.pod.deletion_timestamp is not None or self.cluster.is_assumed(m.pod.key):
                self.queue.done(m.pod)  # skipPodSchedule
            else:
                kept.append(m)
        if not kept:
            self.queue.add_attempted_pod_group(root, "success")
            return []
        tree = self.manager.tree(root)
        by_leaf = self.by_leaf(kept)
        members = [m for leaf in tree.leaves() for m in by_leaf.get(leaf.key, [])]
        held = self._hold_nominations(members)
        decision = self.decide_tree(fwk, tree, by_leaf)
        self._release_nominations(held)
        preemption = decision.preemption
        victims = preemption.victims if preemption is not None else ()
        for leaf in tree.leaves():
            queued = by_leaf.get(leaf.key, [])
            if not queued:
                continue
            res = decision.results.get(leaf.key)
            mine = preemption
            if preemption is not None:  # the victims recorded once, by the first nominated
                mine = contract.PodGroupPostFilterResult(preemption.nominations, victims)
                if any(m.pod.key in preemption.nominations for m in queued):
                    victims = ()
            group = decision.groups[leaf.key]
            done = res.results if res is not None else []
            untried = res.status if res is not None else None
            self.submit(fwk, queued, done, group, leaf.key, cycle, start, untried, mine)
        if decision.results:  # not a tree refused before its algorithm
            self._observe(fwk, decision.final, preemption, start, decision.seconds)
        self.queue.add_attempted_pod_group(root, attempt_outcome(decision.decided))
        return members

    def by_leaf(self, members: list[QueuedPodInfo]) -> dict[str, list[QueuedPodInfo]]:
        """The tree's members by their PodGroup, each group's in the release's order."""
        out: dict[str, list[QueuedPodInfo]] = {}
        for m in members:
            of = self.manager.group_key(m.pod)
            assert of is not None
            out.setdefault(of, []).append(m)
        return {k: self.order(v) for k, v in out.items()}

    def decide_tree(
        self, fwk: Framework, tree: TreeNode, by_leaf: dict[str, list[QueuedPodInfo]]
    ) -> TreeDecision:
        """Validate, run the tree's algorithm and, for an Unschedulable root, its
        PodGroupPostFilter plugins (nothing stays assumed; a preemption evicts its
        victims): every group's outcome (``podGroupCycle`` before the submit)."""
        start = time.perf_counter()
        leaves = tree.leaves()
        members = [m for leaf in leaves for m in by_leaf.get(leaf.key, [])]
        problem = self.validate_tree(members, tree.key, leaves)
        if problem:
            error = Status(Code.ERROR, (problem,))
            failed = dict.fromkeys((leaf.key for leaf in leaves), error)
            return TreeDecision({}, error, error, failed, None, 0.0)
        results = self.tree_algorithm(fwk, tree, by_leaf)
        seconds = time.perf_counter() - start
        decided = results[tree.key].status
        after: Status | None = None
        preemption: contract.PodGroupPostFilterResult | None = None
        if decided.code == Code.UNSCHEDULABLE:
            after, preemption = self.tree_post_filter(fwk, tree, by_leaf, members)
        groups: dict[str, Status] = {}
        for key, res in results.items():
            group = res.status
            if after is not None and after.code == Code.ERROR:
                group = after
            elif after is not None and not res.inherited:
                group = with_reason(group, after.message())
            groups[key] = group
        final = decided
        if after is not None:
            final = after if after.code == Code.ERROR else with_reason(decided, after.message())
        return TreeDecision(results, decided, final, groups, preemption, seconds)

    def tree_post_filter(
        self,
        fwk: Framework,
        tree: TreeNode,
        members: dict[str, list[QueuedPodInfo]],
        popped: list[QueuedPodInfo],
    ) -> tuple[Status, contract.PodGroupPostFilterResult | None]:
        """The PodGroupPostFilter plugins for an Unschedulable root (``podGroupCycle``):
        DynamicResources says nothing for a CompositePodGroup; DefaultPreemption preempts
        for the whole tree at the root's priority and policy, rerunning the tree's
        algorithm (``runRootSchedulingAlgorithm``: every PodGroup's placed members,
        before the failures are propagated, as upstream's ``pgSchedulingFunc`` proposes
        them).  The plugins' outcome and the nominations when the tree now waits on its
        preemption."""

        def schedule() -> contract.PodGroupAssignments:
            results = self.tree_algorithm(fwk, tree, members, propagate=False)
            placed = tuple(
                contract.ProposedAssignment(r.qp.pod, r.node, r.state)
                for leaf in tree.leaves()
                if leaf.key in results
                for r in results[leaf.key].results
                if r.status.is_success() and r.node
            )
            return contract.PodGroupAssignments(placed, results[tree.key].status)

        pods = [m.pod for m in popped]
        return run_pod_group_post_filters(fwk, tree.key, pods, schedule, claims=None)

    def validate_tree(self, members: list[QueuedPodInfo], root: str, leaves: list[TreeNode]) -> str:
        """``validatePodGroup`` for a tree: the root's priority and preemption policy."""
        cpg = self.manager.composite[root.removeprefix(COMPOSITE)]
        policy = ""
        if self.manager.gates.enabled("PodGroupPreemptionPolicy"):
            policy = cpg.policy.preemption_policy or PREEMPT_LOWER
        scheduled = [
            p
            for leaf in leaves
            for p in self.manager.pods(sorted(self.manager.state(leaf.key).scheduled()))
        ]
        return self.validate_pods(
            [m.pod for m in members] + scheduled, cpg.policy.priority or 0, policy
        )

    # ------------------------------------------------------------------ the algorithm
    def tree_algorithm(
        self,
        fwk: Framework,
        tree: TreeNode,
        members: dict[str, list[QueuedPodInfo]],
        *,
        propagate: bool = True,
    ) -> dict[str, NodeResult]:
        """Every group's result (``runRootSchedulingAlgorithm`` and, with ``propagate``, the
        completion: the failures propagated down); nothing stays assumed."""
        out: dict[str, NodeResult] = {}
        undo: Undo = []
        try:
            status, any_scheduled = self._composite(fwk, tree, members, out, undo)
            if status.is_success() and not any_scheduled:
                out[tree.key].status = Status(Code.UNSCHEDULABLE, (POD_GROUP_UNSCHEDULABLE,))
        finally:
            self._revert(fwk, undo)
        if propagate:
            self._propagate(tree, out, SUCCESS)
        return out

    def _feasible(self, fwk: Framework, node: TreeNode, scheduled: int, remaining: int) -> Status:
        for plugin in fwk.placement_feasible:
            status = plugin.placement_feasible(node.min_count, scheduled, remaining)
            if not status.is_success():
                return status
        return SUCCESS

    def _composite(
        self,
        fwk: Framework,
        node: TreeNode,
        members: dict[str, list[QueuedPodInfo]],
        out: dict[str, NodeResult],
        undo: Undo,
    ) -> tuple[Status, bool]:
        """``compositePodGroupSchedulingPlacementAlgorithm``: the CompositePodGroup's
        placements (its topology constraint's domains within the placement being tried, or
        that one placement), its children tried inside each in turn (everything undone
        after each), the best feasible subtree by the PlacementScore plugins assumed
        again.  None feasible: the first placement's subtree, its status ``0/N placements
        are available, first placement status: ...``; an Error: the CompositePodGroup's
        alone (its descendants fail with it)."""
        placements, status = self.generate_placements(fwk, node.key)
        if not status.is_success():
            out[node.key] = NodeResult(node, status)
            return status, False
        first: dict[str, NodeResult] | None = None
        feasible: list[tuple[dict[str, NodeResult], bool, str]] = []
        feasible_rows: list[IntArray] = []
        parent = self.scope
        try:
            for placement in placements:
                self.assume_placement(placement.rows)
                sub: dict[str, NodeResult] = {}
                mine: Undo = []
                status, any_scheduled = self._default(fwk, node, members, sub, mine)
                self._revert(fwk, mine)  # placementRevertFns
                if status.code == Code.ERROR:
                    out[node.key] = sub[node.key]
                    return status, False
                if first is None:
                    first = sub
                if status.is_success():
                    feasible.append((sub, any_scheduled, placement.name))
                    feasible_rows.append(placement.rows)
        finally:
            self.assume_placement(parent)
        if not feasible:
            assert first is not None
            failed = first[node.key].status
            said = (
                POD_GROUP_UNSCHEDULABLE
                if failed.reasons[:1] == (POD_GROUP_UNSCHEDULABLE,)
                else failed.message()
            )
            status = Status(
                Code.UNSCHEDULABLE,
                (
                    POD_GROUP_UNSCHEDULABLE,
                    f"0/{len(placements)} placements are available, first placement status: "
                    + said,
                ),
            )
            first[node.key].status = status
            out.update(first)
            return status, False
        placed = [
            [
                r.qp.pod
                for leaf in _successful_leaves(node, sub)
                for r in leaf.results
                if r.status.is_success() and r.node
            ]
            for sub, _, _ in feasible
        ]
        best = self.best_placement(fwk, node.key, feasible_rows, placed)
        if isinstance(best, Status):
            out[node.key] = NodeResult(node, best)
            return best, False
        sub, any_scheduled, name = feasible[best]
        sub[node.key].placement = name
        for leaf in _successful_leaves(node, sub):  # assumeSubtreeWithRevert
            self._assume_again(fwk, leaf.results, undo)
        out.update(sub)
        return sub[node.key].status, any_scheduled

    def _default(
        self,
        fwk: Framework,
        node: TreeNode,
        members: dict[str, list[QueuedPodInfo]],
        sub: dict[str, NodeResult],
        undo: Undo,
    ) -> tuple[Status, bool]:
        """``compositePodGroupSchedulingDefaultAlgorithm``: the children in turn under
        PlacementFeasible's ``minGroupCount``; on failure everything under it undone."""
        remaining, scheduled = len(node.children), 0
        status = self._feasible(fwk, node, scheduled, remaining)
        any_scheduled = False
        if status.code not in (Code.UNSCHEDULABLE, Code.ERROR):
            for child in node.children:
                if child.composite:
                    child_status, child_any = self._composite(fwk, child, members, sub, undo)
                else:
                    child_status, child_any = self._leaf(fwk, child, members, sub, undo)
                if child_status.code == Code.ERROR:
                    why = "composite pod group evaluation failed due to child error: "
                    status = Status(Code.ERROR, (why + child_status.message(),))
                    break
                any_scheduled = any_scheduled or child_any
                remaining -= 1
                if child_status.is_success():
                    scheduled += 1
                status = self._feasible(fwk, node, scheduled, remaining)
                if status.code in (Code.UNSCHEDULABLE, Code.ERROR):
                    break
        if status.code == Code.WAIT:
            status = Status(Code.UNSCHEDULABLE, (POD_GROUP_UNSCHEDULABLE, *status.reasons))
        if not status.is_success():
            self._revert(fwk, undo)
            any_scheduled = False
        sub[node.key] = NodeResult(node, status, any_scheduled=any_scheduled)
        return status, any_scheduled

    def _leaf(
        self,
        fwk: Framework,
        node: TreeNode,
        members: dict[str, list[QueuedPodInfo]],
        sub: dict[str, NodeResult],
        undo: Undo,
    ) -> tuple[Status, bool]:
        """A PodGroup's ``podGroupSchedulingAlgorithm``; feasible, its placed members stay
        assumed for the siblings after it."""
        policy = self.manager.policy(node.key)
        assert policy is not None  # the tree holds only the PodGroups observed
        self.in_tree = True
        try:
            results, status = self.group_algorithm(fwk, members.get(node.key, []), node.key, policy)
        finally:
            self.in_tree = False
        placed = status.is_success() and any(r.status.is_success() for r in results)
        if status.is_success():
            self._assume_again(fwk, results, undo)
        sub[node.key] = NodeResult(node, status, list(results), placed)
        return status, placed

    def _assume_again(self, fwk: Framework, results: list[MemberResult], undo: Undo) -> None:
        """A feasible PodGroup's placed members assumed and Reserved again where its
        algorithm placed them (its own undo ran already)."""
        for r in results:
            if r.status.is_success() and r.node:
                self._assume(fwk, r.qp, r.state, r.node, undo)

    def _propagate(self, node: TreeNode, out: dict[str, NodeResult], parent: Status) -> None:
        """``completeCompositePodGroupAlgorithmResultMap``: a failed group's status replaces
        its feasible or untried descendants'."""
        res = out.get(node.key)
        if res is None or (not parent.is_success() and res.status.is_success()):
            had = res.results if res is not None else []
            res = NodeResult(node, parent, inherited=True, superseded=had)
            out[node.key] = res
        for child in node.children:
            self._propagate(child, out, res.status)


def _successful_leaves(node: TreeNode, results: dict[str, NodeResult]) -> list[NodeResult]:
    """``successfulLeafResults``: the PodGroups whose result and every ancestor's (under
    ``node``) succeeded."""
    res = results.get(node.key)
    if res is None or not res.status.is_success():
        return []
    if not node.composite:
        return [res] if res.results else []
    return [leaf for child in node.children for leaf in _successful_leaves(child, results)]
