"""Dry-run preemption over many candidate nodes at once (upstream ``DryRunPreemption`` and
``SelectVictimsOnNode``).

Upstream checks one node per goroutine: remove every lower-priority Pod from a copy of the
node, run the Filter plugins (with nominated Pods), then add the victims back one by one,
PDB-violating ones first and each group most important first, keeping out only those whose
return makes the Pod fit no more.  kubesched runs the same steps *in lock-step over a chunk
of nodes*: the victims' usage is taken off their rows of the real node table, one Filter call
answers for every node of the chunk, round ``i`` adds back the ``i``-th victim of every node
still reprieving, and at the end every row is restored exactly.  Filter plugins answer per
node from that node's row, so the outcome per node is the one the sequential algorithm gets.

A node's potential victims are its lower-priority Pods in ``NodeInfo`` order
(``ClusterState.pods_on_node``: upstream's loop over ``nodeInfo.GetPods()``), then sorted as
upstream's ``sort.Slice`` sorts them (:func:`.picking.order_victims`): which of several
equally important Pods are reprieved depends on both.

Nodes are taken in order from ``offset`` (wrapping), as upstream with parallelism 1 — the
deterministic reading of its parallel search: checking stops once ``num_candidates`` nodes
are candidates and at least one of them violates no PDB; later nodes are not reported.

**Kept results.**  When every Filter plugin that runs for the Pod is row-local or node-only
(its verdict for a node depends on the Pod, that node and the Pods on it:
:mod:`kubesched.framework.contract`), a node's result -- victims, PDB violations, status -- is
a function of the Pod's signature and priority, the skipped Filters, the budgets, the node's
row (its ``generation``, bumped whenever a Pod or the Node changes there) and the Pods
nominated to it (the nominator's stamp of that node).  :class:`KeptResults` keeps each row's
result under those, so the next equivalent preemptor selects victims again only on the rows
that changed since (in PreemptionBasic: the node the previous preemptor emptied), and reuses
each candidate with its picking rank.  A row the Pod itself is nominated to is never kept
(its own nomination is left out there).  Rows answered from kept results evaluate no Filter
plugin (``scheduler_plugin_evaluation_total``), as Pods reusing results do.

When PreFilter plugins with PreFilterExtensions hold state this cycle (inter-pod affinity,
topology spread: their counts span nodes), each node is instead checked on its own, exactly
as upstream: a copy of the cycle state, ``RemovePod`` for every potential victim, then
``AddPod`` for each one reprieved (and ``RemovePod`` again if it must go after all).
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.framework.interface import Code, CycleState, IntArray, Status
from kubesched.framework.nominated import PodNominator
from kubesched.framework.outcomes import PluginError
from kubesched.framework.runtime import FilterOutcome
from kubesched.kernels import gosort
from kubesched.kernels.usage import Usage, UsageBlock
from kubesched.plugins.defaultpreemption import pdb
from kubesched.plugins.defaultpreemption.picking import Candidate, order_victims
from kubesched.state.cache import ClusterState, PodRecord
from kubesched.state.nodes import NodeTable

NO_VICTIMS = "No preemption victims found for incoming pod"


class FilterRunner(Protocol):
    """What the dry run needs of the framework."""

    def run_filter_with_nominated(
        self, state: CycleState, pod: api.Pod, rows: IntArray
    ) -> FilterOutcome: ...

    def active_extensions(self, state: CycleState) -> list[object]: ...

    def run_pre_filter_extension(
        self, state: CycleState, pod: api.Pod, other: api.Pod, row: int, *, add: bool
    ) -> Status: ...

    def row_local_key(self, state: CycleState, pod: api.Pod) -> Hashable | None: ...

    @property
    def nominator(self) -> PodNominator | None: ...


NodeResult = tuple[list[api.Pod], int, Status]


@dataclass(frozen=True, slots=True)
class UnitPlan:
    """A node's potential victim units in reprieve order (PDB-violating ones first, each
    part most important first), for the lock-step dry run: per unit its Pods on the node
    (whose usage comes off the row), all its Pods (the victims if it stays out), how many
    of its Pods violate a budget (0: none), and its importance key (the victims' final
    order when both parts are present)."""

    local: list[list[PodRecord]]
    pods: list[list[api.Pod]]
    violations: list[int]
    keys: list[tuple[float, ...]]


class UnitVictims(Protocol):
    """Victims as units for an ordinary Pod (v1.37 under GenericWorkload: a PodGroup
    member's priority is its PodGroup's, a ``disruptionMode: all`` PodGroup goes whole;
    implemented by :class:`.podgroup.NodeUnits`).  Rows it :meth:`applies` to are
    selected by :meth:`select`, node by node, and their results never kept
    (:class:`KeptResults`): a unit's Pods elsewhere change without the row changing."""

    def applies(self, row: int) -> bool: ...

    def plan(self, pod: api.Pod, row: int, budgets: Sequence[pdb.Budget]) -> UnitPlan | None: ...

    def select(
        self,
        fwk: FilterRunner,
        state: CycleState,
        pod: api.Pod,
        row: int,
        budgets: Sequence[pdb.Budget],
    ) -> NodeResult: ...


"""``(victims most important first, PDB violations, status)`` of one node."""


VictimCache = dict[tuple[int, int, int, int], list[PodRecord]]
"""Potential victims by ``(row, row generation, row reorders, preemptor priority)``: a row's
generation changes whenever a Pod is placed on or removed from it, its reorders when a
confirmed Pod moves in its ``NodeInfo`` order (``ClusterState.reorders``)."""


@dataclass(slots=True)
class Entry:
    """One node's dry-run result, and its candidate once made (kept with its rank)."""

    result: NodeResult
    candidate: Candidate | None = None


@dataclass(slots=True)
class KeptResults:
    """Dry-run results per node row, kept across preemptors (module docs): for :attr:`key`,
    ``rows`` maps a row to its :class:`Entry`, found when the row's generation
    was ``generation[row]`` (int64 ``(capacity,)``, -1: nothing kept) and the nominator's
    version was :attr:`nominations` (rows whose nominations changed since are dropped)."""

    key: Hashable = None
    rows: dict[int, Entry] = field(default_factory=dict)
    generation: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    kind: npt.NDArray[np.int8] = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    """int8 ``(capacity,)``: the :func:`kind_of` of each row's kept result (valid where
    ``generation`` is)."""
    nominations: int = -1
    reorders: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """int64 ``(capacity,)``: ``ClusterState.reorders[row]`` when the row's result was kept."""
    current: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """int64 ``(capacity,)``: ``ClusterState.reorders`` as a column, as of
    :attr:`current_at` (``ClusterState.reorder_events``; -1: not made)."""
    current_at: int = -1
    cand: npt.NDArray[np.object_] = field(default_factory=lambda: np.empty(0, dtype=object))
    """object ``(capacity,)``: the :class:`Candidate` of each row whose kept result is a
    candidate (:data:`FINE` or :data:`VIOLATING`; valid where ``generation`` is), so the
    walk takes the candidates it keeps with one index instead of a loop over entries."""
    counts: list[int] = field(default_factory=lambda: [0] * 5)
    """How many rows :attr:`kind` gives each kind (index :data:`FINE` ... :data:`FAULT`;
    stale rows included), so the walk looks for PDB-violating candidates and faults only
    while some row has one."""

    def reorders_now(self, cluster: ClusterState) -> IntArray:
        """``cluster.reorders`` as a column (int64 ``(capacity,)``), remade only when a Pod
        moved since."""
        if self.current_at != cluster.reorder_events or self.current.shape != self.reorders.shape:
            col = np.zeros(self.reorders.shape[0], dtype=np.int64)
            moved = cluster.reorders
            if moved:
                rows = np.fromiter(moved.keys(), dtype=np.int64, count=len(moved))
                col[rows] = np.fromiter(moved.values(), dtype=np.int64, count=len(moved))
            self.current, self.current_at = col, cluster.reorder_events
        return self.current

    def reset(self, key: Hashable, table: NodeTable, nominator: PodNominator | None) -> None:
        """Keep results for ``key`` (over ``table``) from now on, dropping others and those
        of rows whose nominations changed."""
        if key != self.key or table.capacity != self.generation.shape[0]:
            self.key = key
            self.rows = {}
            self.reorders = np.zeros(table.capacity, dtype=np.int64)
            self.current_at = -1
            self.generation = np.full(table.capacity, -1, dtype=np.int64)
            self.kind = np.zeros(table.capacity, dtype=np.int8)
            self.cand = np.empty(table.capacity, dtype=object)
            self.counts = [0] * 5
        elif nominator is not None and nominator.version != self.nominations:
            changed = nominator.changed_since(self.nominations)
            if changed is None:
                self.rows = {}
                self.generation[:] = -1
            else:
                for name in changed:
                    row = table.row_of.get(name)
                    if row is not None:
                        self.generation[row] = -1
        self.nominations = nominator.version if nominator is not None else 0


FINE, VIOLATING, REJECTED, FAULT = 1, 2, 3, 4
"""A node's result as the candidate walk sees it (:func:`kind_of`): a candidate violating
no PDB, a candidate violating some, a node rejected, a node rejected with an Error status
(an error message of the dry run)."""


def kind_of(result: NodeResult) -> int:
    """:data:`FINE`, :data:`VIOLATING`, :data:`REJECTED` or :data:`FAULT` for ``result``
    (a success without victims is a fault, as upstream's ``expected at least one victim``)."""
    victims, n_bad, status = result
    if status.is_success():
        if not victims:
            return FAULT
        return FINE if n_bad == 0 else VIOLATING
    return FAULT if status.code == Code.ERROR else REJECTED


def rejection(result: NodeResult, node: str) -> Status:
    """The status a rejected node is reported with (:func:`kind_of` REJECTED or FAULT)."""
    status = result[2]
    if status.is_success():
        return Status(Code.ERROR, (f'expected at least one victim pod on node "{node}"',))
    return status


class RejectedNodes(Mapping[int, Status]):
    """The status of each node the dry run checked and rejected, by row, made only when read
    (a dry run that finds candidates rarely needs them): rows with the result each was
    rejected for."""

    def __init__(self, names: Sequence[str]) -> None:
        self._names = names
        self._parts: list[tuple[IntArray, Mapping[int, Entry]]] = []
        self._made: dict[int, Status] | None = None

    def add(self, rows: IntArray, entries: Mapping[int, Entry]) -> None:
        """Rows rejected (int64 ``(k,)``), each with its entry in ``entries``."""
        if rows.size:
            self._parts.append((rows, entries))
            self._made = None

    def _all(self) -> dict[int, Status]:
        if self._made is None:
            names = self._names
            self._made = {
                r: rejection(entries[r].result, names[r])
                for rows, entries in self._parts
                for r in rows.tolist()
            }
        return self._made

    def __getitem__(self, row: int) -> Status:
        return self._all()[row]

    def __iter__(self) -> Iterator[int]:
        return iter(self._all())

    def __len__(self) -> int:
        return sum(int(rows.size) for rows, _ in self._parts)


def potential_victims(
    cluster: ClusterState,
    pod: api.Pod,
    row: int,
    cache: VictimCache | None = None,
    *,
    timed_at_listing: bool = False,
) -> list[PodRecord]:
    """Pods on ``row`` with lower priority than ``pod`` (upstream ``isPreemptionAllowed``
    with the default ``IsEligiblePod``), most important first as upstream sorts them
    (``timed_at_listing``: v1.37 and later, :func:`.picking.order_victims`)."""
    if cache is None:
        return _potential_victims(cluster, pod, row, timed_at_listing)
    key = (row, int(cluster.nodes.generation[row]), cluster.reorders.get(row, 0), pod.priority)
    hit = cache.get(key)
    if hit is None:
        if len(cache) > 4 * max(len(cluster.nodes), 256):
            cache.clear()
        hit = cache[key] = _potential_victims(cluster, pod, row, timed_at_listing)
    return hit


def _potential_victims(
    cluster: ClusterState, pod: api.Pod, row: int, timed_at_listing: bool
) -> list[PodRecord]:
    keys = cluster.pods_on_node.get(cluster.nodes.names[row], ())
    if not keys:  # an emptied node (every victim of an earlier preemptor gone)
        return []
    recs = [cluster.pods[k] for k in keys]  # upstream's nodeInfo.GetPods() order
    listed = {r.pod.key: i for i, r in enumerate(recs)} if timed_at_listing else None
    recs = [r for r in recs if r.pod.priority < pod.priority]
    by_pod = {id(r.pod): r for r in recs}
    ordered = order_victims([r.pod for r in recs], timed_at_listing=timed_at_listing, listed=listed)
    return [by_pod[id(p)] for p in ordered]


def _reordered(
    cluster: ClusterState, row: int, victims: list[api.Pod], timed_at_listing: bool
) -> list[api.Pod]:
    """Upstream's sort of the victims once both PDB groups are reprieved: most important
    first again (the order of the answer, not which Pods)."""
    keys = cluster.pods_on_node.get(cluster.nodes.names[row], ())
    listed = {k: i for i, k in enumerate(keys)} if timed_at_listing else None
    return order_victims(victims, timed_at_listing=timed_at_listing, listed=listed)


def select_victims(
    fwk: FilterRunner,
    state: CycleState,
    pod: api.Pod,
    cluster: ClusterState,
    rows: IntArray,
    budgets: Sequence[pdb.Budget],
    cache: VictimCache | None = None,
    *,
    timed_at_listing: bool = False,
    units: UnitVictims | None = None,
) -> list[NodeResult]:
    """Upstream ``SelectVictimsOnNode`` for every row of ``rows`` (int64, shape ``(n,)``),
    vectorised as the module docstring says; one result per row, in order
    (``timed_at_listing``: v1.37 and later, :func:`.picking.order_victims`; ``units``:
    the rows it applies to are selected by it)."""
    no_victims = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,))
    results: list[NodeResult] = [([], 0, no_victims) for _ in range(rows.size)]
    pending: dict[int, list[PodRecord]] = {}
    unit_rows: list[int] = []
    for row in rows.tolist():
        if units is not None and units.applies(row):
            unit_rows.append(row)
            continue
        recs = potential_victims(cluster, pod, row, cache, timed_at_listing=timed_at_listing)
        if recs:
            pending[row] = recs
    index = {row: i for i, row in enumerate(rows.tolist())}
    if units is not None and unit_rows:
        _select_units(fwk, state, pod, cluster, units, unit_rows, index, results, budgets)
    if not pending:
        return results
    if not fwk.active_extensions(state):
        try:
            return _select_columns(
                fwk, state, pod, cluster, pending.copy(), index, results, budgets, timed_at_listing
            )
        except PluginError:
            pass  # a Filter error on some node: upstream's per-node walk says which and how
    for row, recs in pending.items():
        results[index[row]] = _select_on_node(
            fwk, state, pod, cluster, row, recs, budgets, timed_at_listing
        )
    return results


def _select_columns(
    fwk: FilterRunner,
    state: CycleState,
    pod: api.Pod,
    cluster: ClusterState,
    pending: dict[int, list[PodRecord]],
    index: dict[int, int],
    results: list[NodeResult],
    budgets: Sequence[pdb.Budget],
    timed_at_listing: bool,
) -> list[NodeResult]:
    """:func:`select_victims` over every row of ``pending`` at once, Filter running once per
    round over the rows still reprieving; raises :class:`PluginError` when a Filter plugin
    errs on some row (the caller then walks node by node, as upstream does)."""
    table = cluster.nodes
    flat = [rec for recs in pending.values() for rec in recs]
    block = UsageBlock(table, [usage_of(r) for r in flat])
    at: dict[int, int] = {id(r): i for i, r in enumerate(flat)}  # record -> block index
    off = np.zeros(len(flat), dtype=bool)  # usage lifted off its row

    def move(recs: list[PodRecord], sign: int) -> None:
        idx = np.fromiter((at[id(r)] for r in recs), dtype=np.int64, count=len(recs))
        block.shift(idx, sign)
        off[idx] = sign < 0

    try:
        block.shift(slice(None), -1)
        off[:] = True
        first = fwk.run_filter_with_nominated(state, pod, np.asarray(list(pending), np.int64))
        for j, row in enumerate(first.failed.tolist()):
            move(pending.pop(row), 1)
            results[index[row]] = ([], 0, first.status_of(j))
        plans = {row: _plan(recs, budgets, timed_at_listing) for row, recs in pending.items()}
        victims: dict[int, list[api.Pod]] = {row: [] for row in plans}
        violations = dict.fromkeys(plans, 0)
        rounds = max((len(p[0]) for p in plans.values()), default=0)
        for i in range(rounds):
            active = [row for row, (plan, _) in plans.items() if len(plan) > i]
            move([plans[row][0][i] for row in active], 1)
            out = fwk.run_filter_with_nominated(state, pod, np.asarray(active, np.int64))
            misfits = out.failed.tolist()
            move([plans[row][0][i] for row in misfits], -1)
            for row in misfits:
                victims[row].append(plans[row][0][i].pod)
                if i < plans[row][1]:
                    violations[row] += 1
        for row, (plan, n_bad) in plans.items():
            chosen = victims[row]
            if 0 < n_bad < len(plan):  # both groups present: back to importance order
                chosen = _reordered(cluster, row, chosen, timed_at_listing)
            results[index[row]] = (chosen, violations[row], Status())
    finally:
        block.shift(np.flatnonzero(off), 1)
    return results


def _select_units(
    fwk: FilterRunner,
    state: CycleState,
    pod: api.Pod,
    cluster: ClusterState,
    units: UnitVictims,
    rows: list[int],
    index: dict[int, int],
    results: list[NodeResult],
    budgets: Sequence[pdb.Budget],
) -> None:
    """``rows`` answered with units: without PreFilterExtensions in lock-step over the rows
    (only a unit's Pods on the row change what Filter says there), as
    :func:`_select_columns`; with them, or when Filter errs, node by node
    (:meth:`UnitVictims.select`)."""
    if fwk.active_extensions(state):
        for row in rows:
            results[index[row]] = units.select(fwk, state, pod, row, budgets)
        return
    no_victims = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,))
    plans: dict[int, UnitPlan] = {}
    for row in rows:
        plan = units.plan(pod, row, budgets)
        if plan is None:
            results[index[row]] = ([], 0, no_victims)
        else:
            plans[row] = plan
    if not plans:
        return
    try:
        _unit_columns(fwk, state, pod, cluster, plans, index, results)
    except PluginError:
        for row in plans:
            results[index[row]] = units.select(fwk, state, pod, row, budgets)


def _unit_columns(
    fwk: FilterRunner,
    state: CycleState,
    pod: api.Pod,
    cluster: ClusterState,
    plans: dict[int, UnitPlan],
    index: dict[int, int],
    results: list[NodeResult],
) -> None:
    """:func:`_select_columns` with units: every row's potential units off at once, one
    Filter call per round over the rows still reprieving, round ``i`` giving back the
    ``i``-th unit of each; raises :class:`PluginError` when a Filter plugin errs."""
    flat: list[PodRecord] = []
    spans: dict[int, list[tuple[int, int]]] = {}
    for row, plan in plans.items():
        spans[row] = []
        for local in plan.local:
            spans[row].append((len(flat), len(flat) + len(local)))
            flat.extend(local)
    block = UsageBlock(cluster.nodes, [usage_of(r) for r in flat])
    off = np.zeros(len(flat), dtype=bool)

    def move(units: list[tuple[int, int]], sign: int) -> None:
        idx = np.fromiter((i for a, b in units for i in range(a, b)), dtype=np.int64)
        if idx.size:
            block.shift(idx, sign)
            off[idx] = sign < 0

    try:
        block.shift(slice(None), -1)
        off[:] = True
        live = dict(plans)
        first = fwk.run_filter_with_nominated(state, pod, np.asarray(list(live), np.int64))
        for j, row in enumerate(first.failed.tolist()):
            move(spans[row], 1)
            del live[row]
            results[index[row]] = ([], 0, first.status_of(j))
        chosen: dict[int, list[int]] = {row: [] for row in live}
        rounds = max((len(p.local) for p in live.values()), default=0)
        for i in range(rounds):
            active = [row for row, p in live.items() if len(p.local) > i]
            move([spans[row][i] for row in active], 1)
            out = fwk.run_filter_with_nominated(state, pod, np.asarray(active, np.int64))
            misfits = out.failed.tolist()
            move([spans[row][i] for row in misfits], -1)
            for row in misfits:
                chosen[row].append(i)
        for row, plan in live.items():
            picked = chosen[row]
            bad = sum(1 for c in plan.violations if c)
            if 0 < bad < len(plan.local):  # both groups present: back to importance order
                picked = gosort.sorted_by_key(picked, plan.keys.__getitem__)
            pods = [p for k in picked for p in plan.pods[k]]
            results[index[row]] = (pods, sum(plan.violations[k] for k in picked), Status())
    finally:
        block.shift(np.flatnonzero(off), 1)


def _plan(
    recs: list[PodRecord], budgets: Sequence[pdb.Budget], v1_37: bool
) -> tuple[list[PodRecord], int]:
    """The order victims are reprieved in: PDB-violating ones first, each group most
    important first; and how many violate (``v1_37``: v1.37 and later, whose budget check
    stops at a Pod's first violated budget, :func:`.pdb.charge`; the flag that also orders
    victims by their listing time)."""
    if not budgets:
        return recs, 0
    by_pod = {id(r.pod): r for r in recs}
    bad, good = pdb.split_by_violation([r.pod for r in recs], budgets, first_only=v1_37)
    return [by_pod[id(p)] for p in (*bad, *good)], len(bad)


def _select_on_node(
    fwk: FilterRunner,
    state: CycleState,
    pod: api.Pod,
    cluster: ClusterState,
    row: int,
    recs: list[PodRecord],
    budgets: Sequence[pdb.Budget],
    timed_at_listing: bool,
) -> NodeResult:
    """Upstream ``SelectVictimsOnNode`` for one node, with PreFilterExtensions."""
    copy = state.clone()
    block = UsageBlock(cluster.nodes, [usage_of(r) for r in recs])
    off = np.zeros(len(recs), dtype=bool)
    one = np.asarray([row], dtype=np.int64)

    def filtered() -> Status:
        """``RunFilterPluginsWithNominatedPods`` on the node: a plugin's fault is an Error
        status here, as upstream's (the first check returns it, a reprieve counts it as not
        fitting)."""
        try:
            out = fwk.run_filter_with_nominated(copy, pod, one)
        except PluginError as e:
            return Status(Code.ERROR, (str(e),))
        return out.status_of(0) if out.failed.size else Status()

    def move(i: int, add: bool) -> Status:
        block.shift(np.asarray([i], dtype=np.int64), 1 if add else -1)
        off[i] = not add
        return fwk.run_pre_filter_extension(copy, pod, recs[i].pod, row, add=add)

    try:
        for i in range(len(recs)):
            if not (s := move(i, add=False)).is_success():
                return [], 0, s
        if not (first := filtered()).is_success():
            return [], 0, first
        plan, n_bad = _plan(recs, budgets, timed_at_listing)
        at = {id(r): i for i, r in enumerate(recs)}
        victims: list[api.Pod] = []
        violations = 0
        for k, rec in enumerate(plan):
            i = at[id(rec)]
            if not (s := move(i, add=True)).is_success():
                return [], 0, s
            if not filtered().is_success():
                if not (s := move(i, add=False)).is_success():
                    return [], 0, s
                victims.append(rec.pod)
                if k < n_bad:
                    violations += 1
        if 0 < n_bad < len(plan):  # both groups present: back to importance order
            victims = _reordered(cluster, row, victims, timed_at_listing)
        return victims, violations, Status()
    finally:
        block.shift(np.flatnonzero(off), 1)


def usage_of(rec: PodRecord) -> Usage:
    """The usage ``rec`` puts on its row (what a victim's removal takes off)."""
    return (rec.row, rec.request, rec.nonzero, rec.pod.host_ports, rec.sparse)


def dry_run_preemption(
    fwk: FilterRunner,
    state: CycleState,
    pod: api.Pod,
    cluster: ClusterState,
    potential: IntArray,
    budgets: Sequence[pdb.Budget],
    offset: int,
    num_candidates: int,
    cache: VictimCache | None = None,
    kept: KeptResults | None = None,
    *,
    timed_at_listing: bool = False,
    units: UnitVictims | None = None,
) -> tuple[list[Candidate], Mapping[int, Status], list[str]]:
    """Upstream ``DryRunPreemption``: candidates (those violating no PDB first), the status
    of each node checked and rejected (by row, made when read: :class:`RejectedNodes`), and
    error messages.  With ``kept``, rows whose kept result still holds are not checked again
    (module docs); ``timed_at_listing``: v1.37 and later, :func:`.picking.order_victims`;
    ``units``: :class:`UnitVictims`.

    The walk over a chunk of rows is array work: each row's :func:`kind_of`, the running
    counts of the two candidate lists (each holds at most ``num_candidates``), and the first
    row after which a PDB-clean candidate exists and the lists hold ``num_candidates``:
    checking stops there, as upstream's."""
    n = int(potential.size)
    ordered = np.concatenate((potential[offset:], potential[:offset])) if n else potential
    fine: list[Candidate] = []
    violating: list[Candidate] = []
    names = cluster.nodes.names
    statuses = RejectedNodes(names)
    errors: list[str] = []
    mine = -1
    if kept is not None:
        key = fwk.row_local_key(state, pod)
        if key is None:
            kept = None
        else:
            nominator = fwk.nominator
            kept.reset((key, tuple(budgets)), cluster.nodes, nominator)
            own = nominator.node_of(pod.key) if nominator is not None else ""
            mine = cluster.nodes.row_of.get(own, -1) if own else -1
    if kept is not None:
        return _walk_kept(
            fwk,
            state,
            pod,
            cluster,
            ordered,
            budgets,
            num_candidates,
            cache,
            kept,
            mine,
            timed_at_listing,
            units,
        )
    pos, chunk = 0, max(num_candidates, 1)
    while pos < n:
        rows = ordered[pos : pos + chunk]
        results = select_victims(
            fwk,
            state,
            pod,
            cluster,
            rows,
            budgets,
            cache,
            timed_at_listing=timed_at_listing,
            units=units,
        )
        entries = {r: Entry(res) for r, res in zip(rows.tolist(), results, strict=True)}
        kinds = np.fromiter((kind_of(res) for res in results), np.int8, len(results))
        is_fine, is_bad = kinds == FINE, kinds == VIOLATING
        held_fine = np.minimum(len(fine) + np.cumsum(is_fine), num_candidates)
        held_bad = np.minimum(len(violating) + np.cumsum(is_bad), num_candidates)
        done = (is_fine | is_bad) & (held_fine >= 1) & (held_fine + held_bad >= num_candidates)
        stop = int(np.argmax(done)) + 1 if bool(done.any()) else int(rows.size)
        walked, kinds = rows[:stop], kinds[:stop]
        for want, into in ((is_fine[:stop], fine), (is_bad[:stop], violating)):
            for row in walked[want][: num_candidates - len(into)].tolist():
                entry = entries[row]
                cand = entry.candidate
                if cand is None:
                    victims, n_bad, _ = entry.result
                    cand = entry.candidate = Candidate(names[row], row, victims, n_bad)
                into.append(cand)
        rejected = kinds >= REJECTED
        if rejected.any():
            statuses.add(walked[rejected], entries)
            if (kinds == FAULT).any():
                for row in walked[kinds == FAULT].tolist():
                    errors.append(rejection(entries[row].result, names[row]).message())
        if bool(done.any()):
            return fine + violating, statuses, errors
        pos += int(rows.size)
        chunk = next_chunk(pos, len(fine) + len(violating), num_candidates)
    return fine + violating, statuses, errors


def next_chunk(pos: int, found: int, num_candidates: int) -> int:
    """The size of the dry run's next chunk after ``pos`` rows gave ``found`` candidates:
    about enough nodes for the candidates still missing, at the rate found so far."""
    missing = max(num_candidates - found, 1)
    return max(32, -(-missing * pos // max(found, 1)))


def _walk_kept(
    fwk: FilterRunner,
    state: CycleState,
    pod: api.Pod,
    cluster: ClusterState,
    ordered: IntArray,
    budgets: Sequence[pdb.Budget],
    num_candidates: int,
    cache: VictimCache | None,
    kept: KeptResults,
    mine: int,
    timed_at_listing: bool,
    units: UnitVictims | None,
) -> tuple[list[Candidate], Mapping[int, Status], list[str]]:
    """:func:`dry_run_preemption`'s walk with kept results, over all of ``ordered`` (int64
    ``(n,)``) at once: every row's kept :func:`kind_of` and whether it is stale
    (:func:`_stale_rows`), the running counts of the two candidate lists as columns, and
    the chunk boundaries of the chunked walk replayed from them, so that exactly the stale
    rows of the chunks the chunked walk checks are checked (together per chunk, as there),
    and checking stops at the same row.

    Kinds no kept row has (:attr:`KeptResults.counts`) and no row checked now gave are not
    looked for: without PDB-violating candidates the count of clean ones alone decides,
    without faults no error message is sought (PreemptionBasic has neither)."""
    n = int(ordered.size)
    names = cluster.nodes.names
    stale_mask, unit_rows = _stale_rows(cluster, ordered, kept, mine, units)
    kinds = kept.kind[ordered]
    pending = np.flatnonzero(stale_mask)  # positions still to check, ascending
    kinds[pending] = 0
    at_list: list[int] = pending.tolist()
    counts = kept.counts
    seen = 0  # bit k: a row checked now gave kind k
    fresh: dict[int, Entry] = {}
    num = num_candidates
    stop = n
    pos, chunk, checked = 0, max(num, 1), 0
    held: IntArray | None = None
    total: IntArray | None = None
    while pos < n:
        end = min(pos + chunk, n)
        upto = bisect.bisect_left(at_list, end, checked)
        if upto > checked:
            todo = pending[checked:upto]
            checked = upto
            seen |= _check_stale(
                fwk,
                state,
                pod,
                cluster,
                ordered,
                todo,
                kinds,
                fresh,
                budgets,
                cache,
                kept,
                mine,
                unit_rows,
                timed_at_listing,
                units,
            )
            held = None
        if held is None:
            fine_n = (kinds == FINE).cumsum()
            bad = kinds == VIOLATING if counts[VIOLATING] or seen & (1 << VIOLATING) else None
            if bad is not None and bad.any():
                fine_n = np.minimum(fine_n, num)
                total = fine_n + np.minimum(bad.cumsum(), num)
                held = np.where(fine_n >= 1, total, 0)  # non-decreasing
            else:  # no PDB-violating candidate: the count of clean ones alone decides
                total = held = fine_n  # uncapped: capped where read
        at = int(held.searchsorted(num)) if num > 0 else n
        if at < end:
            stop = at + 1
            break
        if end >= n:
            break
        pos = end
        assert total is not None
        found = int(total[end - 1])
        chunk = next_chunk(pos, found if held is not total else min(found, num), num)
    walked, kinds = ordered[:stop], kinds[:stop]
    # Every candidate row's Candidate is in kept.cand (kept, or just checked and kept),
    # except the rows checked now and not kept (the Pod's own nominated node, unit rows):
    # those are put in place of the column's entry.
    own = [row for row, entry in fresh.items() if entry.candidate is not kept.cand[row]]
    lists: list[list[Candidate]] = []
    wanted = [FINE]
    if counts[VIOLATING] or seen & (1 << VIOLATING):
        wanted.append(VIOLATING)
    for kind in wanted:
        at_rows = walked[kinds == kind][:num]
        got: list[Candidate] = kept.cand[at_rows].tolist()
        for row in own:
            for i in np.flatnonzero(at_rows == row).tolist():
                cand = fresh[row].candidate
                assert cand is not None  # a FINE or VIOLATING entry has its candidate
                got[i] = cand
        lists.append(got)
    fine = lists[0]
    violating = lists[1] if len(lists) > 1 else []
    statuses = RejectedNodes(names)
    errors: list[str] = []
    rejected = walked[kinds >= REJECTED]
    if rejected.size:
        entries = _Entries(fresh, kept.rows)
        statuses.add(rejected, entries)
        if counts[FAULT] or seen & (1 << FAULT):
            for row in walked[kinds == FAULT].tolist():
                errors.append(rejection(entries[row].result, names[row]).message())
    return fine + violating, statuses, errors


class _Entries(Mapping[int, Entry]):
    """The entries of one chunk: those found now, else those kept."""

    def __init__(self, fresh: dict[int, Entry], kept: dict[int, Entry]) -> None:
        self._fresh = fresh
        self._kept = kept

    def __getitem__(self, row: int) -> Entry:
        got = self._fresh.get(row)
        return got if got is not None else self._kept[row]

    def __iter__(self) -> Iterator[int]:
        return iter({**self._kept, **self._fresh})

    def __len__(self) -> int:
        return len({**self._kept, **self._fresh})


def _stale_rows(
    cluster: ClusterState,
    rows: IntArray,
    kept: KeptResults,
    mine: int,
    units: UnitVictims | None,
) -> tuple[npt.NDArray[np.bool_], set[int]]:
    """Which of ``rows`` (int64 ``(n,)``) have no kept result that still holds (the row's
    generation or its Pods' order moved; row ``mine``, the Pod's own nominated node, or
    -1; rows ``units`` applies to): bool ``(n,)``, with the rows ``units`` applies to.
    Compared over the whole table's columns, then read in ``rows``' order (fewer index
    operations than gathering each column for ``rows``); the reorder stamps only once a
    Pod ever moved (until then every stamp, kept or current, is 0)."""
    everywhere = kept.generation != cluster.nodes.generation
    if cluster.reorder_events:
        everywhere |= kept.reorders != kept.reorders_now(cluster)
    stale = everywhere[rows]
    if mine >= 0:
        stale |= rows == mine
    unit_rows: set[int] = set()
    if units is not None:
        for i, r in enumerate(rows.tolist()):
            if units.applies(r):
                stale[i] = True
                unit_rows.add(r)
    return stale, unit_rows


def _check_stale(
    fwk: FilterRunner,
    state: CycleState,
    pod: api.Pod,
    cluster: ClusterState,
    rows: IntArray,
    todo: IntArray,
    kinds: npt.NDArray[np.int8],
    fresh: dict[int, Entry],
    budgets: Sequence[pdb.Budget],
    cache: VictimCache | None,
    kept: KeptResults,
    mine: int,
    unit_rows: set[int],
    timed_at_listing: bool,
    units: UnitVictims | None,
) -> int:
    """:func:`select_victims` over the rows at positions ``todo`` (int64, ascending) of
    ``rows``: each one's kind into ``kinds`` (int8, parallel to ``rows``), its entry into
    ``fresh`` and, unless it is row ``mine``, a unit row or an error, into ``kept``
    (with the row's generation and reorder stamp as they were when checked).  Returns the
    kinds found, as bits (``1 << kind``)."""
    sub = rows[todo]
    gens = cluster.nodes.generation[sub].tolist()
    moved = kept.reorders_now(cluster)[sub].tolist() if cluster.reorder_events else [0] * len(gens)
    found = select_victims(
        fwk,
        state,
        pod,
        cluster,
        sub,
        budgets,
        cache,
        timed_at_listing=timed_at_listing,
        units=units,
    )
    table = kept.rows
    counts = kept.counts
    columns = (todo.tolist(), sub.tolist(), gens, moved)
    names = cluster.nodes.names
    seen = 0
    for i, row, gen, at, result in zip(*columns, found, strict=True):
        entry = Entry(result)
        fresh[row] = entry
        kinds[i] = kind = kind_of(result)
        seen |= 1 << kind
        if kind in (FINE, VIOLATING):
            entry.candidate = Candidate(names[row], row, result[0], result[1])
        if row != mine and result[2].code != Code.ERROR and row not in unit_rows:
            table[row] = entry
            counts[int(kept.kind[row])] -= 1
            counts[kind] += 1
            kept.generation[row] = gen
            kept.kind[row] = kind
            kept.reorders[row] = at
            kept.cand[row] = entry.candidate
    return seen


def current_victims(cluster: ClusterState, candidate: Candidate) -> Candidate:
    """``candidate`` with each victim the cluster's Pod object of now (a kept result may
    hold an assumed Pod's copy that the API server's confirmation has since replaced)."""
    pods = cluster.pods
    fresh = [rec.pod if (rec := pods.get(v.key)) is not None else v for v in candidate.victims]
    if all(a is b for a, b in zip(fresh, candidate.victims, strict=True)):
        return candidate
    return Candidate(candidate.node, candidate.row, fresh, candidate.num_pdb_violations)
