"""The search: find the node for one Pod (upstream ``schedulePod``), stage by stage.

:meth:`Search.run` walks the stages in upstream's order:

1. **reuse** -- the previous equivalent Pod's results, while they provably still hold
   (:mod:`kubesched.scheduler.batch`); from v1.35 with OpportunisticBatching on, only for a
   Pod upstream does not sign;
2. **PreFilter**, then (v1.35+) upstream's **node hint**: the next node of the last cycle's
   list, tried as a nominated node is (:mod:`kubesched.scheduler.hints`);
3. **static rejections** -- a Pod every node rejects for static reasons takes its kept
   Filter outcome (:mod:`kubesched.scheduler.verdicts`);
4. **the nominated node** -- a Pod preemption made room for tries that node first (when it
   fails, its Filter status stays in the diagnosis, as upstream's does);
5. **Filter** over the round-robin window of ``percentageOfNodesToScore``, then the filter
   extenders;
6. **Score** -- PreScore, Score and the extenders' priorities, then the host is selected.

A scheduler that narrows or records the search (a parallel shard: its own partition first,
runner-up nodes for the binder; the coordinator: a signature it computed already) does so
through the three methods of :class:`SearchHost`, which :class:`~kubesched.scheduler.
Scheduler` implements with this module's defaults.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Container
from typing import Protocol

import numpy as np

from kubesched.api import objects as api
from kubesched.framework.interface import (
    Code,
    CycleState,
    ExtenderError,
    IntArray,
    PreFilterResult,
    Status,
)
from kubesched.framework.outcomes import with_nominated_failure
from kubesched.framework.runtime import FilterOutcome, Framework, PluginError, ScoreOutcome
from kubesched.kernels.draw import BoundedDraw
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler import batch, hints
from kubesched.scheduler.batch import BatchCache, BatchEntry
from kubesched.scheduler.extenders import EXTENDER_NAME, Extenders
from kubesched.scheduler.keptrows import KeptFailures
from kubesched.scheduler.types import (
    NO_NODES_AVAILABLE,
    Diagnosis,
    FitError,
    NoNodesError,
    ScheduleResult,
    num_feasible_nodes_to_find,
    reasons_text,
)
from kubesched.scheduler.verdicts import StaticFailure, StaticFailures
from kubesched.state.cache import ClusterState

log = logging.getLogger("kubesched.scheduler")

Signature = tuple[object, ...]
"""A Pod's result-reuse signature (:meth:`Framework.sign`)."""


class SearchHost(Protocol):
    """What the search asks the scheduler it runs for (see the module docstring)."""

    def candidate_rows(self) -> IntArray:
        """Rows (int64, ``[M]``) the search walks, in the table's node order."""
        ...

    def outside_placement(self, node: str) -> bool:
        """Whether ``node`` lies outside the PodGroup placement being tried (False when
        none is)."""
        ...

    @property
    def placement(self) -> IntArray | None:
        """The rows of the PodGroup placement being tried (None when none is); a new
        placement is a new array."""
        ...

    def select_host(
        self,
        total: IntArray | None,
        rows: IntArray,
        order: IntArray | None = None,
        ties: IntArray | list[int] | None = None,
    ) -> int:
        """Index into ``rows`` of the chosen node (:meth:`Search.pick`)."""
        ...

    def sign(self, fwk: Framework, pod: api.Pod) -> Signature | None:
        """The Pod's result-reuse signature (:meth:`Search.sign`)."""
        ...


class Search:
    """The search of one scheduler (see the module docstring)."""

    def __init__(
        self,
        host: SearchHost,
        *,
        cluster: ClusterState,
        queue: SchedulingQueue,
        extenders: Extenders | None,
        rng: np.random.Generator,
        batching: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.host = host
        self.cluster = cluster
        self.queue = queue
        self.extenders = extenders
        self.draw = BoundedDraw(rng)
        """Breaks ties among equally scored nodes: ``rng.integers(n)``, the same numbers,
        without numpy's per-call overhead."""
        self.batch = BatchCache(enabled=batching)
        """Reuse of results across equivalent Pods (see :mod:`kubesched.scheduler.batch`)."""
        self.hints = hints.NodeHints(clock, self.draw, extenders=bool(extenders))
        """Upstream's OpportunisticBatching, v1.35+ with the gate on (see
        :mod:`kubesched.scheduler.hints`)."""
        self._scored: tuple[IntArray, IntArray, dict[str, IntArray], int] | None = None
        """The last full cycle's feasible rows, totals, raw scores and pick (for
        :attr:`hints`)."""
        self._hinted = ""
        """The node hint of the current search ("" when none was given)."""
        self.static_failures = StaticFailures()
        """Kept Filter outcomes of Pods every node rejects for static reasons
        (:mod:`kubesched.scheduler.verdicts`)."""
        self.kept_failures = KeptFailures()
        """Per-node verdicts of the last pass every node failed, for row-local Filters
        (:mod:`kubesched.scheduler.keptrows`)."""
        self.next_start_node_index = 0
        """Where the next Filter pass starts (upstream's round robin)."""
        self.last_nodes = 0
        """Nodes in the last search (``candidate_rows`` of the last :meth:`run`)."""
        self.unheard: Container[str] = frozenset()
        """Keys of Pods whose nomination is on the nominator but not yet on the Pod
        (the scheduler's ``Failures.unheard``)."""
        self._rotated: tuple[IntArray, int, IntArray] | None = None
        """The last :meth:`rotation`: its candidates, start index and rotated rows."""
        self._doubled: tuple[IntArray, IntArray] | None = None
        """The read-only candidates :meth:`rotation` last rotated, and a read-only copy of
        them written twice over (each rotation is a view into it)."""
        self._walk: batch.Walk | None = None
        """The last Filter pass's walk (what a sampled reuse entry walks again)."""
        self._counted: tuple[FilterOutcome, Counter[str], set[str], str] | None = None
        """The last failed outcome with its reason counts, rejecting plugins and the
        counts' text."""

    def run(self, fwk: Framework, state: CycleState, pod: api.Pod) -> ScheduleResult:
        """Find the node for ``pod``; raises :class:`FitError` (or :class:`NoNodesError`,
        :class:`PluginError`, :class:`ExtenderError`)."""
        fwk.begin_search(pod)
        try:
            return self._run(fwk, state, pod)
        finally:
            fwk.end_search()

    def _run(self, fwk: Framework, state: CycleState, pod: api.Pod) -> ScheduleResult:
        if not hints.active(fwk):
            return self._search(fwk, state, pod, None)
        # Upstream's node hints (v1.35+): kubesched's own reuse serves only the Pods upstream
        # does not sign, whose cycles upstream never batches.
        signature = self.hints.signature(fwk, pod)
        self._scored = None
        result = self._search(fwk, state, pod, signature)
        hinted, scored = self._hinted, self._scored
        listed = None
        if signature is not None and scored is not None and result.node != hinted:
            names = self.cluster.nodes.names
            listed = ([names[int(r)] for r in scored[0]], *scored[1:])
        self.hints.store(
            fwk.profile_name, signature, hinted, result.node, self.queue.scheduling_cycle, listed
        )
        return result

    def _search(
        self,
        fwk: Framework,
        state: CycleState,
        pod: api.Pod,
        upstream: hints.SignatureT | None,
    ) -> ScheduleResult:
        """The search; ``upstream``: the Pod's upstream signature when node hints are on
        (:meth:`_run`)."""
        self._hinted = ""
        order = self.host.candidate_rows()
        n = int(order.size)
        self.last_nodes = n
        if n == 0:
            raise NoNodesError(NO_NODES_AVAILABLE)
        # A nominated Pod tries its nominated node first (below), so it never reuses results.
        # A nomination not yet heard on the Pod (``Failures.unheard``) is not tried first.
        nominated = pod.nominated_node_name or (
            "" if pod.key in self.unheard else self.queue.nominator.node_of(pod.key)
        )
        signature = None
        hinting = upstream is not None and self.hints.compatible(
            fwk, pod, upstream, self.queue.scheduling_cycle
        )
        if self.batch.enabled and not nominated and upstream is None:
            signature = self.host.sign(fwk, pod)
            reused = self.reuse(fwk, state, pod, signature)
            if reused is not None:
                return reused
        pre, rejectors = self.pre_filter(fwk, state, pod, n)
        first: FilterOutcome | None = None
        if hinting:
            self._hinted = hint = self.hints.hint(fwk, state, pod)
            if (
                hint
                and not nominated
                and hint in self.cluster.nodes.row_of
                and not self.host.outside_placement(hint)
            ):
                chosen = self.nominated_node(fwk, state, pod, hint)
                if isinstance(chosen, ScheduleResult):
                    return chosen
                first = chosen
        static_key = self.static_key(fwk, pod, pre, nominated, signature, n)
        if static_key is not None:
            self.static_rejection(fwk, static_key, n)
        # Upstream (v1.36+) skips a nominated node outside the placement being tried
        # (``GetNodeInPlacement`` fails; the Pod is searched over the placement alone).
        if (
            nominated
            and nominated in self.cluster.nodes.row_of
            and not self.host.outside_placement(nominated)
        ):
            chosen = self.nominated_node(fwk, state, pod, nominated)
            if isinstance(chosen, ScheduleResult):
                return chosen
            first = chosen
        outcome, rotated = self.filter(fwk, state, pod, order, pre, rejectors, static_key, first)
        return self.score(fwk, state, pod, outcome, rotated, signature, upstream is not None)

    # ------------------------------------------------------------------ 1. reuse
    def reuse(
        self, fwk: Framework, state: CycleState, pod: api.Pod, signature: Signature | None
    ) -> ScheduleResult | None:
        """The previous equivalent Pod's results, if they can serve; else None, with
        ``state`` as fresh for the full path."""
        nominator = self.queue.nominator
        cycle = self.queue.scheduling_cycle
        entry = self.batch.lookup(
            fwk.profile_name, signature, cycle, self.cluster, nominator.version
        )
        if entry is None:
            return None
        if entry.placement is not self.host.placement:
            # built over other candidate nodes (a PodGroup placement, or none): the full
            # path searches this placement's alone (v1.37 seed 22371 case 69)
            self.batch.invalidate("placement")
            return None
        if entry.walk is not None:
            order = self.host.candidate_rows()
            if order is not entry.walk.order and not np.array_equal(order, entry.walk.order):
                self.batch.invalidate("placement")  # another walk (a shard's partition)
                return None
        reused = self._from_entry(fwk, state, pod, entry)
        if reused is not None:
            return reused
        state.clear()
        state.skip_filter.clear()
        state.skip_score.clear()
        return None

    def _from_entry(
        self, fwk: Framework, state: CycleState, pod: api.Pod, entry: BatchEntry
    ) -> ScheduleResult | None:
        reason = batch.reuse(fwk, state, pod, entry)
        if reason:
            self.batch.invalidate(reason)
            return None
        if entry.walk is not None:
            return self._from_window(fwk, state, pod, entry)
        pick = self.host.select_host(entry.total, entry.rows, ties=entry.tied())
        entry.chosen = pick
        entry.uses += 1
        n = max(len(self.cluster.nodes), 1)
        self.next_start_node_index = (self.next_start_node_index + entry.processed) % n
        return ScheduleResult(
            self.cluster.nodes.names[int(entry.rows[pick])],
            entry.processed,
            int(entry.rows.size),
            entry,
        )

    def _from_window(
        self, fwk: Framework, state: CycleState, pod: api.Pod, entry: BatchEntry
    ) -> ScheduleResult:
        """A sampled entry's cycle: the window upstream's next walk filters, from the
        round-robin index the last cycle left, scored over its feasible nodes alone (the
        normalizing ``node_only`` plugins' scores found again over them when they differ)."""
        assert entry.walk is not None
        at, found, processed = batch.window(entry, self.next_start_node_index)
        top = None if found == 1 else batch.window_top(entry, at, found)
        if top is not None:  # the entry's ties within the window (indexes into its rows)
            chosen = self.host.select_host(entry.total, entry.rows, ties=top)
        elif found == 1:  # upstream scores nothing then
            chosen = at
        else:
            rows = batch.taken(entry.rows, at, found)
            if entry.renorm:
                raw = {k: batch.taken(v, at, found) for k, v in entry.raw.items()}
                total = fwk.totals_from_raw(state, pod, raw)
            else:
                total = batch.taken(entry.total, at, found)
            ties = batch.window_ties(entry, total, at)
            chosen = (at + self.host.select_host(total, rows, ties=ties)) % int(entry.rows.size)
        entry.chosen = chosen
        entry.uses += 1
        n = max(int(entry.walk.order.size), 1)
        self.next_start_node_index = (self.next_start_node_index + processed) % n
        name = self.cluster.nodes.names[int(entry.rows[chosen])]
        return ScheduleResult(name, processed, found, entry)

    # ------------------------------------------------------------------ 2. PreFilter
    def pre_filter(
        self, fwk: Framework, state: CycleState, pod: api.Pod, n: int
    ) -> tuple[PreFilterResult | None, set[str]]:
        """Run PreFilter: its result and the plugins that narrowed the nodes; a rejection
        raises :class:`FitError` over all ``n`` nodes, an error :class:`PluginError`."""
        pre, status, rejectors = fwk.run_pre_filter(state, pod)
        if not status.is_success():
            if not status.is_rejected():
                raise PluginError(status.plugin, status.message())
            raise FitError(
                Diagnosis(n, Counter(), rejectors, pre_filter_msg=status.message(), absent=status)
            )
        return pre, rejectors

    # ------------------------------------------------------------------ 3. static rejections
    def static_key(
        self,
        fwk: Framework,
        pod: api.Pod,
        pre: PreFilterResult | None,
        nominated: str | None,
        signature: Signature | None,
        n: int,
    ) -> Signature | None:
        """The key a static failure of ``pod`` is kept under, or None when a kept outcome
        cannot stand for this pass (nominated Pods, extenders, a narrowed search: kept
        outcomes cover every node, not a shard's partition)."""
        if (len(self.queue.nominator) or nominated or self.extenders is not None) or not (
            self.static_failures.enabled
            and (pre is None or pre.node_names is None)
            and n == len(self.cluster.nodes)
        ):
            return None
        return signature if signature is not None else fwk.sign(pod)

    def static_rejection(self, fwk: Framework, key: Signature, n: int) -> None:
        """Raise the kept static failure under ``key``, if there is one: the same
        diagnosis, round-robin index and evaluation counts as the full Filter pass."""
        kept = self.static_failures.lookup(fwk.profile_name, key, self.cluster)
        if kept is not None:
            raise FitError(self._static_diagnosis(fwk, kept, n))

    def _static_diagnosis(self, fwk: Framework, kept: StaticFailure, n: int) -> Diagnosis:
        start = time.perf_counter()
        ev = fwk.evaluations
        for key, count in kept.evaluations.items():
            ev[key] = ev.get(key, 0) + count
        self.next_start_node_index = (self.next_start_node_index + kept.outcome.processed) % n
        fwk.record_filter_duration(start)
        counts = Counter(kept.reason_counts)
        return Diagnosis(n, counts, set(kept.plugins), outcome=kept.outcome)

    # ------------------------------------------------------------------ 4. nominated node
    def nominated_node(
        self, fwk: Framework, state: CycleState, pod: api.Pod, node: str
    ) -> ScheduleResult | FilterOutcome:
        """Upstream ``evaluateNominatedNode``: the node preemption made room on, if it
        passes Filter (with nominated Pods) and the filter extenders; else the Filter pass
        over it, whose status the Filter stage keeps (upstream's diagnosis does)."""
        one = np.asarray([self.cluster.nodes.row_of[node]], dtype=np.int64)
        outcome = fwk.run_filter_with_nominated(state, pod, one)
        if outcome.feasible.size and self._nominated_passes_extenders(pod, outcome.feasible):
            return ScheduleResult(node, 1, 1)
        return outcome

    def _nominated_passes_extenders(self, pod: api.Pod, rows: IntArray) -> bool:
        """The nominated node must pass the filter extenders too; an extender error only
        skips the shortcut (upstream logs it)."""
        if self.extenders is None:
            return True
        try:
            return bool(self.extenders.filter(pod, self.cluster.nodes, rows).feasible.size)
        except ExtenderError as e:
            log.warning("evaluating nominated node of %s: %s", pod.key, e)
            return False

    # ------------------------------------------------------------------ 5. Filter
    def filter(
        self,
        fwk: Framework,
        state: CycleState,
        pod: api.Pod,
        order: IntArray,
        pre: PreFilterResult | None,
        rejectors: set[str],
        static_key: Signature | None,
        nominated: FilterOutcome | None = None,
    ) -> tuple[FilterOutcome, IntArray]:
        """Filter over the round-robin window of ``order`` (int64 rows, ``[N]``) or of the
        nodes PreFilter named, then the filter extenders: the outcome and the rotated rows
        (``[M]``, M <= N) the pass walked.  No feasible node raises :class:`FitError`
        (counting the nodes PreFilter excluded as UnschedulableAndUnresolvable).
        ``nominated``, the failed pass over the Pod's nominated node, joins the outcome
        when this pass did not look at that node (:func:`with_nominated_failure`)."""
        table = self.cluster.nodes
        n = int(order.size)
        candidates = order
        absent: Status | None = None
        if pre is not None and pre.node_names is not None:
            rows = [table.row_of[nm] for nm in sorted(pre.node_names) if nm in table.row_of]
            candidates = np.asarray(rows, dtype=np.int64)
            absent = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                (f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(rejectors))}]",),
            )
        m = int(candidates.size)
        to_find = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, m)
        if not fwk.has_score_plugins() and not self._extenders_filter_or_score():
            to_find = min(to_find, 1)
        start = self.next_start_node_index % max(m, 1)
        rotated = self.rotation(candidates, start)
        self._walk = batch.Walk(order, candidates, to_find)
        # Filter extenders may reject every feasible node: then all nodes' reasons are wanted.
        narrow = self.extenders is None
        before = dict(fwk.evaluations) if static_key is not None else {}
        kept_key = None
        if (
            self.kept_failures.enabled
            and static_key is None
            and narrow
            and absent is None
            and m == len(table)
            and not pod.nominated_node_name
            and not self.queue.nominator.node_of(pod.key)
        ):
            kept_key = fwk.row_local_key(state, pod)
        kept = None
        if kept_key is not None:
            begin = time.perf_counter()
            nominator = self.queue.nominator
            kept = self.kept_failures.outcome(fwk, state, kept_key, pod, rotated, table, nominator)
            if kept is not None:
                fwk.record_filter_duration(begin)
        if kept is not None:
            outcome = kept
        else:
            outcome = fwk.find_nodes_that_pass_filters(state, pod, rotated, to_find, narrow=narrow)
            if kept_key is not None:
                self.kept_failures.store(kept_key, outcome, rotated, table, self.queue.nominator)
        if nominated is not None:
            outcome = with_nominated_failure(outcome, nominated, rotated)
        self.next_start_node_index = (self.next_start_node_index + outcome.processed) % n
        if (
            static_key is not None
            and kept is None
            and outcome.feasible.size == 0
            and absent is None
        ):
            added = {k: c - before.get(k, 0) for k, c in fwk.evaluations.items()}
            evaluated = {k: c for k, c in added.items() if c}
            self.static_failures.store(fwk, state, pod, static_key, outcome, evaluated)
        removed = False
        if self.extenders is not None and outcome.feasible.size:
            outcome, removed = self._filter_by_extenders(pod, outcome)
        if outcome.feasible.size == 0:
            counts, rejecting, said = self._failure_counts(outcome)
            text: str | None = said
            if absent is not None and n > outcome.failed.size:
                counts = Counter(counts)
                counts[absent.reasons[0]] += n - int(outcome.failed.size)
                text = None
            plugins = rejectors | rejecting
            if removed:
                plugins.add(EXTENDER_NAME)
            diagnosis = Diagnosis(n, counts, plugins, outcome=outcome, absent=absent, reasons=text)
            raise FitError(diagnosis)
        return outcome, rotated

    def rotation(self, candidates: IntArray, start: int) -> IntArray:
        """``candidates`` (int64 ``[M]``) rotated to begin at ``start``, read-only; the
        same array again while ``candidates`` is the same array and ``start`` the same
        index (a failing pass over every node leaves the index where it was), so that a
        kept failed pass sees its rows unchanged by identity (:class:`KeptFailures`).
        A view into ``candidates`` written twice over, kept while ``candidates`` is the
        same array: no copy of the rows per search."""
        last = self._rotated
        if last is not None and last[0] is candidates and last[1] == start:
            return last[2]
        doubled = self._doubled
        if doubled is None or doubled[0] is not candidates:
            # a copy: a read-only view of a list someone may still write into (a placement's
            # rows) would let a kept failed pass match rows whose contents changed; such a
            # list is copied for each rotation, the node table's read-only order once
            twice = np.concatenate([candidates, candidates])
            twice.flags.writeable = False
            doubled = (candidates, twice)
            if not candidates.flags.writeable:
                self._doubled = doubled
        rotated = doubled[1][start : start + int(candidates.size)]
        self._rotated = (candidates, start, rotated)
        return rotated

    def _failure_counts(self, outcome: FilterOutcome) -> tuple[Counter[str], set[str], str]:
        """``outcome``'s reason counts, rejecting plugins and the counts' text
        (:func:`reasons_text`), made once for an outcome given again (:class:`KeptFailures`):
        shared, so not to be changed in place (a diagnosis never is)."""
        last = self._counted
        if last is None or last[0] is not outcome:
            counts = outcome.reason_counts()
            last = (outcome, counts, outcome.rejecting_plugins(), reasons_text(counts))
            self._counted = last
        return last[1], last[2], last[3]

    def _extenders_filter_or_score(self) -> bool:
        """Upstream ``hasExtenderFilters || hasScoring`` (the extender part)."""
        e = self.extenders
        return e is not None and (e.has_filters() or e.has_prioritizers())

    def _filter_by_extenders(
        self, pod: api.Pod, outcome: FilterOutcome
    ) -> tuple[FilterOutcome, bool]:
        """Run the filter extenders over the feasible nodes (upstream
        ``findNodesThatPassExtenders``); their rejections join the outcome's failures.
        Also whether extenders removed any node.  Raises :class:`ExtenderError`."""
        assert self.extenders is not None
        ext = self.extenders.filter(pod, self.cluster.nodes, outcome.feasible)
        if not ext.removed and ext.failed.size == 0:
            return outcome, False
        statuses = list(outcome.statuses)
        ids = {st: i for i, st in enumerate(statuses)}
        sid = [ids.setdefault(st, len(ids)) for st in ext.statuses]
        statuses.extend(list(ids)[len(statuses) :])
        merged = FilterOutcome(
            feasible=ext.feasible,
            failed=np.concatenate([outcome.failed, ext.failed]),
            failed_status=np.concatenate([outcome.failed_status, np.asarray(sid, np.int64)]),
            statuses=statuses,
            processed=outcome.processed,
        )
        return merged, ext.removed

    # ------------------------------------------------------------------ 6. Score
    def score(
        self,
        fwk: Framework,
        state: CycleState,
        pod: api.Pod,
        outcome: FilterOutcome,
        rotated: IntArray,
        signature: Signature | None,
        listed: bool = False,
    ) -> ScheduleResult:
        """PreScore, Score and the extenders' priorities over the feasible nodes, then the
        host; the result keeps what reuse needs for the next equivalent Pod (``signature``:
        kubesched's reuse entry; ``listed``: upstream's node hints list these scores, whose
        raw scores v1.37's rescoring reads)."""
        table = self.cluster.nodes
        feasible = outcome.feasible
        if feasible.size == 1:  # upstream scores nothing then; reuse keeps the one node
            entry = None
            if self.batch.enabled and signature is not None:
                looked_at = rotated[: outcome.processed]
                alone = ScoreOutcome(np.zeros(1, dtype=np.int64))
                entry = batch.build_entry(
                    fwk,
                    state,
                    signature,
                    feasible,
                    alone,
                    0,
                    looked_at,
                    self.host.placement,
                    pod,
                    self._walk,
                    self.extenders is not None,
                )
            return ScheduleResult(table.names[int(feasible[0])], outcome.processed, 1, entry)
        pre_status = fwk.run_pre_score(state, pod, feasible)
        if not pre_status.is_success():
            raise PluginError(pre_status.plugin, pre_status.message(), point="pre_score")
        if not fwk.has_score_plugins() and self.extenders is None:
            self._scored = (feasible, np.ones(feasible.size, dtype=np.int64), {}, 0)
            return ScheduleResult(
                table.names[int(feasible[0])], outcome.processed, int(feasible.size)
            )
        keep = self.batch.enabled and signature is not None  # what build_entry reads
        scored = fwk.run_score(state, pod, feasible, keep_raw=keep or listed)
        if self.extenders is not None:  # upstream prioritizeNodes: extender scores added
            scored.total = scored.total + self.extenders.prioritize(pod, table, feasible).total
        pick = self.host.select_host(scored.total, feasible)
        self._scored = (feasible, scored.total, scored.raw, pick)
        entry = None
        if keep:
            looked_at = rotated[: outcome.processed]
            entry = batch.build_entry(
                fwk,
                state,
                signature,
                feasible,
                scored,
                pick,
                looked_at,
                self.host.placement,
                pod,
                self._walk,
                self.extenders is not None,
            )
        return ScheduleResult(
            table.names[int(feasible[pick])], outcome.processed, int(feasible.size), entry
        )

    # ------------------------------------------------------------------ host defaults
    def sign(self, fwk: Framework, pod: api.Pod) -> Signature | None:
        """The Pod's result-reuse signature; None (unsignable) when an extender is
        interested in it, since an extender's answers are not known to be reusable."""
        if self.extenders is not None and self.extenders.interested(pod):
            return None
        return fwk.sign(pod)

    def pick(
        self,
        total: IntArray | None,
        rows: IntArray,
        order: IntArray | None = None,
        ties: IntArray | list[int] | None = None,
    ) -> int:
        """Index into ``rows`` (int64, ``[K]``) of the highest ``total`` score (``[K]``).

        Ties are broken uniformly at random by the seeded generator, over the tied nodes in
        row order, so the pick does not depend on where the round-robin search started.
        ``order`` (int64, ``argsort(rows)``), when the caller keeps it, saves sorting the
        ties; ``ties``, when the caller keeps them (a reuse entry's
        :meth:`~kubesched.scheduler.batch.BatchEntry.tied`), saves finding them.
        """
        if total is None:
            return 0
        if ties is not None:
            if len(ties) == 1:
                return int(ties[0])
            return int(ties[self.draw(len(ties))])
        top = total.max()
        if order is None:
            best = np.flatnonzero(total == top)
            if best.size == 1:
                return int(best[0])
            best = best[np.argsort(rows[best], kind="stable")]
        else:
            best = order[total[order] == top]
            if best.size == 1:
                return int(best[0])
        return int(best[self.draw(best.size)])
