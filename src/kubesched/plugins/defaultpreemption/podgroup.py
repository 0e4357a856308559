"""Workload-aware preemption: a PodGroup preempts as one (upstream v1.37.2
``framework/preemption/podgrouppreemption.go`` and ``types.go``, DefaultPreemption's
``PodGroupPostFilter``).

The preemptor is the group: its priority and preemption policy are the PodGroup's
(:func:`preemptor_of`), the domain is the whole cluster, and a *victim* is the unit that
is evicted as one (:func:`domain_victims`): a Pod, or every scheduled Pod of a PodGroup whose
``disruptionMode`` is ``all``, at that PodGroup's priority.  :func:`select_victims` removes
every lower-priority victim from the cluster, reruns the group's whole algorithm once
(``schedule``), then tries to give back each victim, most important first (PDB-violating ones
before the others): a victim is reprieved when every placed member still passes Filter
(with nominated Pods) on its node with the victim back, the members before it assumed and
Reserved.  The cluster is restored exactly afterwards (:class:`Mutations`).  See
``docs/workload-api.md`` ("Workload-aware preemption") for the whole algorithm.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from kubesched.api import objects as api
from kubesched.framework.contract import PodGroupSchedulingFunc, ProposedAssignment
from kubesched.framework.interface import Code, CycleState, Status
from kubesched.framework.outcomes import PluginError
from kubesched.framework.podgroups import COMPOSITE, PodGroupManager
from kubesched.kernels import gosort
from kubesched.kernels.usage import UsageBlock
from kubesched.plugins.defaultpreemption import dryrun, pdb
from kubesched.state.cache import ClusterState, PodRecord

PG_PREFIX = "pod group preemption: "
NO_VICTIMS = "No preemption victims found for incoming preemptor"
ONGOING = "ongoing preemption on nominated nodes"
PREEMPT_NEVER = "Never"

RANK_POD, RANK_POD_GROUP, RANK_COMPOSITE = 1, 2, 3
"""``victimRank``: a CompositePodGroup unit outranks a PodGroup unit, which outranks a lone
Pod."""


class GroupRunner(dryrun.FilterRunner, Protocol):
    """What DefaultPreemption needs of the framework: the dry run's Filter calls, and for
    workload-aware preemption Reserve and Unreserve too."""

    def run_reserve(self, state: CycleState, pod: api.Pod, node: str) -> Status: ...

    def run_unreserve(self, state: CycleState, pod: api.Pod, node: str) -> None: ...


class _ExtensionError(Exception):
    """A PreFilterExtension's failure while victims move (its status message)."""


@dataclass(frozen=True, slots=True)
class Preemptor:
    """Upstream ``podGroupPreemptor``: the group, its priority and preemption policy."""

    key: str
    priority: int
    policy: str
    members: tuple[api.Pod, ...]


def preemptor_of(
    manager: PodGroupManager, key: str, members: Sequence[api.Pod], *, policy_gate: bool
) -> Preemptor:
    """``newPodGroupPreemptor``: the group's priority (``PodGroupPriority`` or, for a
    composite tree's root ``key``, ``CompositePodGroupPriority``: 0 when it has none); its
    ``preemptionPolicy`` under PodGroupPreemptionPolicy (default ``PreemptLowerPriority``;
    a CompositePodGroup's anything but ``PreemptLowerPriority`` is ``Never``), else
    ``Never`` when any member says so."""
    group = manager.group_policy(key)
    priority = (group.priority or 0) if group is not None else 0
    policy = "PreemptLowerPriority"
    if policy_gate:
        if group is not None and group.preemption_policy:
            policy = group.preemption_policy
            if key.startswith(COMPOSITE) and policy != "PreemptLowerPriority":
                policy = PREEMPT_NEVER
    elif any(m.preemption_policy == PREEMPT_NEVER for m in members):
        policy = PREEMPT_NEVER
    return Preemptor(key, priority, policy, tuple(members))


@dataclass(frozen=True, slots=True)
class Victim:
    """A unit evicted as one (upstream ``DomainVictim``): its Pods, priority, rank
    (:data:`RANK_POD`, :data:`RANK_POD_GROUP`: a Pod of a PodGroup counts as the
    latter even alone, or :data:`RANK_COMPOSITE`: a CompositePodGroup's whole subtree),
    earliest start (``+inf``: none started, upstream's "now") and its place in the listing
    (upstream's "now" is read as victims are listed, so of two units without a start the
    one listed first is the older)."""

    pods: tuple[api.Pod, ...]
    priority: int
    rank: int
    earliest: float
    listed: int

    @property
    def is_group(self) -> bool:
        """``IsGroup``: a PodGroup or CompositePodGroup unit (counted in
        ``preemption_workload_disruptions``)."""
        return self.rank >= RANK_POD_GROUP


def importance(v: Victim) -> tuple[float, ...]:
    """Sort key, more important first (``MoreImportantVictim``): higher priority, higher
    rank, more Pods, earlier start; upstream's ``sort.Slice`` of a few victims is an
    insertion sort, so equal ones keep their listing order."""
    return (-v.priority, -v.rank, -len(v.pods), v.earliest, v.listed)


def ordered(victims: Sequence[Victim]) -> list[Victim]:
    """``victims`` most important first as upstream's ``sort.Slice`` with
    ``MoreImportantVictim`` leaves them (:mod:`kubesched.kernels.gosort`): victims equal
    but for the listing order of a missing start time are ordered by it (upstream reads
    "now" as it lists them), other ties as Go's pdqsort leaves them (input order up to
    12).  For lone Pods this is :func:`.picking.order_victims` at v1.37."""
    return gosort.sorted_by_key(victims, _ordering_key)


def _ordering_key(v: Victim) -> tuple[float, ...]:
    """:func:`ordered`'s key (a missing start time ordered by listing, module docs)."""
    return (
        -v.priority,
        -v.rank,
        -len(v.pods),
        v.earliest,
        v.listed if math.isinf(v.earliest) else 0,
    )


def pod_priority(manager: PodGroupManager, pod: api.Pod) -> int:
    """``GetPodPriority``: for a member of an existing PodGroup the priority of the topmost
    group observed above it (the PodGroup's, or its composite tree's root's), else the
    Pod's own."""
    key = manager.group_key(pod)
    line = manager.lineage(key) if key is not None else []
    return (line[-1][1].priority or 0) if line else pod.priority


def highest_all(manager: PodGroupManager, key: str) -> str | None:
    """``getHighestAllAncestor``: the topmost group from PodGroup ``key`` upward whose
    ``disruptionMode`` is ``all`` (a ``composite:`` key for a CompositePodGroup), or None."""
    found = None
    for k, policy in manager.lineage(key):
        if policy.disruption_all:
            found = k
    return found


def _scheduled_under(cluster: ClusterState, manager: PodGroupManager, key: str) -> list[api.Pod]:
    """``searchCrossNodesVictimPods``' Pods: the scheduled Pods of PodGroup ``key`` or of
    every PodGroup under CompositePodGroup ``key``."""
    groups = [key]
    if key.startswith(COMPOSITE):
        groups = [leaf.key for leaf in manager.tree(key).leaves()]
    return [
        cluster.pods[k].pod
        for g in groups
        if g in manager.pod_groups
        for k in sorted(manager.state(g).scheduled())
        if k in cluster.pods
    ]


def domain_victims(
    cluster: ClusterState,
    manager: PodGroupManager,
    rows: Sequence[int] | None = None,
    memo: dict[str, tuple[tuple[api.Pod, ...], float]] | None = None,
) -> list[Victim]:
    """``newDomainForWorkloadPreemption`` / ``getCrossNodesVictims``: every Pod on the
    nodes (``rows``, default every node in ``NodeInfos().List()`` order; each node's Pods in
    ``NodeInfo`` order) as a victim of its own, except that a Pod of a PodGroup under a
    group with ``disruptionMode: all`` (the PodGroup or, in a composite tree, an ancestor:
    the topmost such, :func:`highest_all`) stands for all that group's scheduled Pods, on
    any node (one unit, listed where its first Pod is met; a CompositePodGroup's ranks
    :data:`RANK_COMPOSITE`), every victim at :func:`pod_priority`.  One row: upstream's
    ``GetVictimsOnNode``; ``memo`` keeps each such group's Pods and earliest start across
    calls while the cluster does not change (one dry run)."""
    out: list[Victim] = []
    seen: set[str] = set()
    table = cluster.nodes
    for row in table.order().tolist() if rows is None else rows:
        for pk in list(cluster.pods_on_node.get(table.names[row], ())):
            rec = cluster.pods.get(pk)
            if rec is None:
                continue
            pod = rec.pod
            key = manager.group_key(pod)
            unit = highest_all(manager, key) if key is not None else None
            rank = RANK_POD_GROUP if key is not None else RANK_POD
            if unit is not None:
                if "group:" + unit in seen:
                    continue
                seen.add("group:" + unit)
                hit = memo.get(unit) if memo is not None else None
                whole = True
                if hit is None:
                    members = _scheduled_under(cluster, manager, unit)
                    whole = bool(members)  # none found: the Pod alone (NewPodVictim)
                    pods = tuple(members) or (pod,)
                    hit = (pods, min(_start(p) for p in pods))
                    if memo is not None and members:
                        memo[unit] = hit
                pods, earliest = hit
                if whole and unit.startswith(COMPOSITE):
                    rank = RANK_COMPOSITE
            else:
                if pk in seen:
                    continue
                seen.add(pk)
                pods, earliest = (pod,), _start(pod)
            out.append(Victim(pods, pod_priority(manager, pod), rank, earliest, len(out)))
    return out


def _start(pod: api.Pod) -> float:
    return math.inf if pod.start_time is None else pod.start_time


@dataclass(slots=True)
class Mutations:
    """Victims taken off the cluster for the evaluation and given back exactly (upstream
    ``StartMutations`` / ``EndMutations`` of the snapshot): records, assumed state and each
    node's Pod order."""

    cluster: ClusterState
    removed: dict[str, PodRecord] = field(default_factory=dict)
    orders: dict[str, list[str]] = field(default_factory=dict)

    def remove(self, pod: api.Pod) -> int | None:
        """Take ``pod`` off its node; its node row (None: not in the cluster)."""
        rec = self.cluster.pods.get(pod.key)
        if rec is None:
            return None
        self.orders.setdefault(rec.node, list(self.cluster.pods_on_node.get(rec.node, ())))
        self.cluster.remove_pod(pod.key)
        self.removed[pod.key] = rec
        return rec.row

    def add(self, pod: api.Pod) -> int | None:
        """Give ``pod`` back; its node row (None: it was not taken)."""
        rec = self.removed.pop(pod.key, None)
        if rec is None:
            return None
        if rec.assumed:
            self.cluster.assume_pod(rec.pod, rec.node)
            self.cluster.pods[pod.key].binding_finished = rec.binding_finished
        else:
            self.cluster.add_pod(rec.pod)
        return rec.row

    def restore(self) -> None:
        """Everything given back, each node's Pods in their order from before."""
        for rec in list(self.removed.values()):
            self.add(rec.pod)
        for node, keys in self.orders.items():
            self.cluster.pods_on_node[node] = keys
        self.orders.clear()


@dataclass(frozen=True, slots=True)
class Selection:
    """``selectVictimsResult``: the Pods to evict (most important unit first), the PDB
    violations, how many PodGroup units, and each placed member's node."""

    victims: tuple[api.Pod, ...]
    pdb_violations: int
    group_disruptions: int
    nominations: dict[str, str]


def select_victims(
    fwk: GroupRunner,
    cluster: ClusterState,
    preemptor: Preemptor,
    victims: list[Victim],
    budgets: Sequence[pdb.Budget],
    schedule: PodGroupSchedulingFunc,
) -> tuple[Selection | None, Status]:
    """``selectVictimsOnDomain`` (see the module docstring)."""
    potential = [v for v in victims if v.priority < preemptor.priority]
    if not potential:
        return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,))
    mut = Mutations(cluster)
    try:
        for v in potential:
            for p in v.pods:
                mut.remove(p)
        proposal = schedule()
        if not proposal.status.is_success():
            return None, proposal.status
        potential.sort(key=importance)
        violating, fine = split_by_violation(potential, budgets)
        valid = [a for a in proposal.assignments if a.node]
        rows = {a.node: cluster.nodes.row_of[a.node] for a in valid}
        chosen: list[Victim] = []
        violations = 0
        for v, count in violating:
            if not _reprieve(fwk, cluster, mut, v, valid, rows):
                chosen.append(v)
                violations += count
        for v in fine:
            if not _reprieve(fwk, cluster, mut, v, valid, rows):
                chosen.append(v)
        chosen.sort(key=importance)
    except (PluginError, _ExtensionError) as e:
        return None, Status(Code.ERROR, (str(e),))
    finally:
        mut.restore()
    pods = tuple(p for v in chosen for p in v.pods)
    nominations = {a.pod.key: a.node for a in valid}
    return Selection(pods, violations, sum(v.is_group for v in chosen), nominations), Status()


def split_by_violation(
    victims: Sequence[Victim], budgets: Sequence[pdb.Budget]
) -> tuple[list[tuple[Victim, int]], list[Victim]]:
    """``FilterVictimsWithPDBViolation``: a unit violates when any of its Pods would take a
    budget below zero (counted in order); with how many of its Pods do."""
    if not budgets:
        return [], list(victims)
    left = [b.allowed for b in budgets]
    violating: list[tuple[Victim, int]] = []
    fine: list[Victim] = []
    for v in victims:
        count = sum(pdb.charge(pod, budgets, left, first_only=True) for pod in v.pods)
        if count:
            violating.append((v, count))
        else:
            fine.append(v)
    return violating, fine


def _extension(
    fwk: GroupRunner, valid: list[ProposedAssignment], victim: api.Pod, row: int, add: bool
) -> None:
    for a in valid:
        s = fwk.run_pre_filter_extension(a.state, a.pod, victim, row, add=add)
        if not s.is_success():
            raise _ExtensionError(s.message())


def _reprieve(
    fwk: GroupRunner,
    cluster: ClusterState,
    mut: Mutations,
    v: Victim,
    valid: list[ProposedAssignment],
    rows: dict[str, int],
) -> bool:
    """``reprieveVictim``: give ``v`` back; it stays (True) when every placed member, in
    order, passes Filter on its node with the members before it assumed and Reserved."""
    for p in v.pods:
        row = mut.add(p)
        if row is not None:
            _extension(fwk, valid, p, row, add=True)
    placed: list[tuple[ProposedAssignment, api.Pod]] = []
    try:
        for a in valid:
            try:
                out = fwk.run_filter_with_nominated(
                    a.state, a.pod, np.asarray([rows[a.node]], dtype=np.int64)
                )
                fits = not out.failed.size
            except PluginError:
                fits = False
            if not fits:
                for p in v.pods:
                    row = mut.remove(p)
                    if row is not None:
                        _extension(fwk, valid, p, row, add=False)
                return False
            assumed = a.pod.bound_to(a.node)
            cluster.assume_pod(assumed, a.node)
            placed.append((a, assumed))
            fwk.run_reserve(a.state, assumed, a.node)
        return True
    finally:
        for a, assumed in reversed(placed):
            fwk.run_unreserve(a.state, assumed, a.node)
            cluster.forget_pod(assumed)


def ongoing(
    cluster: ClusterState,
    manager: PodGroupManager,
    preemptor: Preemptor,
    terminating_by_preemption: Callable[[api.Pod], bool],
) -> bool:
    """``isOngoingPreemption``: a lower-priority Pod terminating because of a preemption on
    a node some member is nominated to."""
    nodes = {m.nominated_node_name for m in preemptor.members if m.nominated_node_name}
    for node in sorted(nodes):
        if node not in cluster.nodes.row_of:
            continue
        for pk in cluster.pods_on_node.get(node, ()):
            other = cluster.pods[pk].pod
            if pod_priority(manager, other) < preemptor.priority and terminating_by_preemption(
                other
            ):
                return True
    return False


@dataclass(frozen=True, slots=True)
class NodeUnits:
    """An ordinary Pod's preemption seeing PodGroup units (v1.37 under GenericWorkload:
    ``GetVictimsOnNode`` and DefaultPreemption's ``SelectVictimsOnNode``): on a node that
    hosts a Pod of some PodGroup, the potential victims are that node's units
    (:func:`domain_victims` of the one row) whose priority (the PodGroup's for a member of
    an existing PodGroup) is below the Pod's own.  A ``disruptionMode: all`` unit goes
    whole: its Pods on the node are taken off the node, those elsewhere only through the
    PreFilterExtensions (upstream mutates only the main node's NodeInfo), and Filter runs
    on the node alone.  Implements :class:`.dryrun.UnitVictims`."""

    cluster: ClusterState
    manager: PodGroupManager
    groups: dict[str, tuple[tuple[api.Pod, ...], float]] = field(default_factory=dict)
    """A ``disruptionMode: all`` group's Pods and earliest start, kept for this dry run
    (:func:`domain_victims`' ``memo``; the cluster is restored between rows)."""

    def applies(self, row: int) -> bool:
        """Whether ``row`` hosts a Pod of some PodGroup (elsewhere lone Pods at their own
        priority: the per-Pod dry run answers as upstream does)."""
        cluster, group_key = self.cluster, self.manager.group_key
        keys = cluster.pods_on_node.get(cluster.nodes.names[row], ())
        return any(group_key(cluster.pods[k].pod) is not None for k in keys)

    def potential(self, pod: api.Pod, row: int) -> list[Victim]:
        """``row``'s units of lower priority than ``pod`` (``isPreemptionAllowed``)."""
        units = domain_victims(self.cluster, self.manager, [row], self.groups)
        return [v for v in units if v.priority < pod.priority]

    def plan(self, pod: api.Pod, row: int, budgets: Sequence[pdb.Budget]) -> dryrun.UnitPlan | None:
        """The units of :meth:`potential` in reprieve order for the lock-step dry run
        (:class:`.dryrun.UnitPlan`); None when there is none."""
        potential = self.potential(pod, row)
        if not potential:
            return None
        violating, fine = split_by_violation(ordered(potential), budgets)
        plan = [*violating, *((v, 0) for v in fine)]
        recs = self.cluster.pods
        local = [
            [rec for p in v.pods if (rec := recs.get(p.key)) is not None and rec.row == row]
            for v, _ in plan
        ]
        keys = [_ordering_key(v) for v, _ in plan]
        return dryrun.UnitPlan(local, [list(v.pods) for v, _ in plan], [c for _, c in plan], keys)

    def select(
        self,
        fwk: dryrun.FilterRunner,
        state: CycleState,
        pod: api.Pod,
        row: int,
        budgets: Sequence[pdb.Budget],
    ) -> dryrun.NodeResult:
        """``SelectVictimsOnNode`` for ``pod`` on ``row`` with units: remove every
        potential unit, Filter, then give units back most important first (PDB-violating
        ones first, counted by their violating Pods), keeping out those without which the
        Pod no longer fits; victims' Pods most important unit first."""
        cluster = self.cluster
        potential = self.potential(pod, row)
        if not potential:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (dryrun.NO_VICTIMS,))
        copy = state.clone()
        local = [p for v in potential for p in v.pods if self._row(p) == row]
        at = {p.key: i for i, p in enumerate(local)}
        block = UsageBlock(cluster.nodes, [dryrun.usage_of(cluster.pods[p.key]) for p in local])
        off = np.zeros(len(local), dtype=bool)
        one = np.asarray([row], dtype=np.int64)

        def move(v: Victim, add: bool) -> Status:
            for p in v.pods:
                where = self._row(p)
                if where is None:
                    continue
                if where == row:
                    i = at[p.key]
                    block.shift(np.asarray([i], dtype=np.int64), 1 if add else -1)
                    off[i] = not add
                s = fwk.run_pre_filter_extension(copy, pod, p, where, add=add)
                if not s.is_success():
                    return s
            return Status()

        def filtered() -> Status:
            try:
                out = fwk.run_filter_with_nominated(copy, pod, one)
            except PluginError as e:
                return Status(Code.ERROR, (str(e),))
            return out.status_of(0) if out.failed.size else Status()

        try:
            for v in potential:
                if not (s := move(v, add=False)).is_success():
                    return [], 0, s
            if not (first := filtered()).is_success():
                return [], 0, first
            potential = ordered(potential)
            violating, fine = split_by_violation(potential, budgets)
            chosen: list[Victim] = []
            violations = 0
            plan = [*violating, *((v, 0) for v in fine)]
            for v, count in plan:
                if not (s := move(v, add=True)).is_success():
                    return [], 0, s
                if not filtered().is_success():
                    if not (s := move(v, add=False)).is_success():
                        return [], 0, s
                    chosen.append(v)
                    violations += count
            if violating and fine:  # both groups present: back to importance order
                chosen = ordered(chosen)
            return [p for v in chosen for p in v.pods], violations, Status()
        finally:
            block.shift(np.flatnonzero(off), 1)

    def _row(self, pod: api.Pod) -> int | None:
        rec = self.cluster.pods.get(pod.key)
        return None if rec is None else rec.row
