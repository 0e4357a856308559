"""The PreFilter and Filter phases of a profile's framework (upstream ``framework.go``'s
``RunPreFilterPlugins``, ``RunFilterPlugins``, ``RunFilterPluginsWithNominatedPods`` and
``RunPreFilterExtensionAddPod`` / ``RemovePod``), as a part of
:class:`kubesched.framework.runtime.Framework`.

Each Filter plugin answers for every still-feasible node at once: ``rows`` are int64 node-table
rows ``(n,)``; a plugin's :class:`~kubesched.framework.interface.Verdict` has one int8 code per
row.  Nominated Pods count as upstream's do (:meth:`FilterPhase.run_filter_with_nominated`).

A Filter plugin may also offer ``candidate_rows(state, pod, cluster)``: the rows outside
which it rejects the Pod for sure (NodeResourcesFit: the few nodes that have a rare resource
the Pod requests), or None.  The search then filters those rows alone and replays the
chunked round-robin walk over their positions, so the nodes found and the count of nodes
looked at are the full search's; when none passes, the full search runs, since then every
node's reason is wanted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from functools import partial
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.config.featuregates import RESIZE_PREEMPTION
from kubesched.config.names import RESIZE_DEFERRED_SKIPPED
from kubesched.framework import nominated
from kubesched.framework.contract import ProfileCapabilities
from kubesched.framework.interface import (
    SUCCESS,
    Code,
    CycleState,
    Handle,
    IntArray,
    PreFilterResult,
    Status,
    error,
)
from kubesched.framework.outcomes import (
    FilterOutcome,
    PluginError,
    merge_outcomes,
    truncate_outcome,
)

_SKIP, _OK = Code.SKIP, Code.SUCCESS
"""The two codes :meth:`FilterPhase.run_pre_filter` tells apart per plugin (module constants:
no enum attribute lookup per call)."""

_FIRST: IntArray = np.zeros(1, dtype=np.int64)
_FIRST.flags.writeable = False
"""The start of the one group of a one-row pass with nominated Pods (read-only)."""


def _no_node_left(narrowing: set[str]) -> str:
    """Upstream ``RunPreFilterPlugins``' reason when the merged PreFilterResults name no node:
    ``node(s) didn't satisfy plugin A`` for one plugin, else ``node(s) didn't satisfy
    plugin(s) [A B] simultaneously`` (Go's ``%v`` of the sorted names)."""
    names = sorted(narrowing)
    if len(names) == 1:
        return f"node(s) didn't satisfy plugin {names[0]}"
    return f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"


def default_walk(
    found_before: Callable[[int], int], n: int, num_to_find: int, walked: int | None = None
) -> tuple[int, int]:
    """The search's default chunked walk over ``n`` rows: chunks of ``num_to_find`` rows,
    then of at least twice the nodes still wanted, until ``num_to_find`` feasible ones are
    found or the rows run out.  ``(found, end)``: the feasible rows among the first ``end``
    it walked; ``found_before(end)``: how many of the first ``end`` rows pass.  When
    ``found > num_to_find`` the search keeps the first ``num_to_find`` and its ``processed``
    is the position of the last of them plus one (the caller's to find); else
    ``processed`` is ``end``.  With ``walked`` (only the first ``walked`` rows' verdicts
    known), the walk stops at the first chunk end past it, where it needs rows not
    filtered yet (``found`` then counts the rows before that chunk)."""
    end, chunk, found = 0, max(num_to_find, 1), 0
    while end < n and found < num_to_find:
        end = min(end + chunk, n)
        if walked is not None and end > walked:
            break
        found = found_before(end)
        chunk = max(chunk, (num_to_find - found) * 2)
    return found, end


def _before(fpos: IntArray, end: int) -> int:
    """How many of the ascending positions ``fpos`` (int64) are below ``end``: the feasible
    rows among a walk's first ``end`` (:func:`default_walk`'s ``found_before``)."""
    return int(np.searchsorted(fpos, end))


def next_chunk(chunk: int, walked: int, found: int, num_to_find: int) -> int:
    """How many rows the next Filter pass of a search takes, after ``walked`` rows gave
    ``found`` feasible ones of the ``num_to_find`` wanted: the default chunk
    (:func:`default_walk`), or more when the feasible share seen so far says it will
    not do (with a quarter to spare), so a search over mostly full nodes takes a few large
    passes rather than many small ones."""
    left = num_to_find - found
    out = max(chunk, left * 2)
    if found:
        out = max(out, -(-left * walked * 5 // (found * 4)))
    return out


def first_chunk(num_to_find: int, n: int, share: tuple[int, int] | None) -> int:
    """How many rows the first Filter pass of a search takes: the default chunk
    (``num_to_find``), or, when the last search's walk saw ``share = (rows filtered,
    feasible among them)`` with some rows failing, enough rows to find one node more than
    wanted at that share with an eighth to spare (at most twice the default chunk): the
    first pass then usually holds the search's answer whole (the rows past the wanted
    nodes change nothing, :meth:`FilterPhase._as_default_walk`), where the default chunk
    leaves a second pass for the few nodes full ones took the place of."""
    k = max(num_to_find, 1)
    if share is None or k >= n:
        return k
    walked, found = share
    if found >= walked or found == 0:
        return k
    return min(max(k, -(-(k + 1) * walked * 9 // (found * 8))), 2 * k, n)


def _narrow_pays(candidates: int, n: int, num_to_find: int) -> bool:
    """Whether filtering ``candidates`` rows at once (:meth:`FilterPhase._find_among`) is
    cheaper than the chunked walk over ``n``, which looks at about ``num_to_find * n /
    candidates`` rows when the candidates pass (the walk's passes cost a little more
    each, hence the factor 2).  Either way the feasible nodes and ``processed`` are the
    same."""
    return candidates * candidates <= 2 * max(num_to_find, 1) * n


class FilterPhase:
    """PreFilter, Filter (with nominated Pods) and PreFilterExtensions of one profile."""

    handle: Handle
    plugins: dict[str, list[Any]]
    filter_plugins: list[Any]
    candidate_filters: list[bool]
    candidate_at: list[int]
    """The positions in ``filter_plugins`` of those with ``candidate_rows``."""
    pre_filter_extensions: list[Any]
    nominator: nominated.PodNominator | None
    _usage: nominated.UsageCache
    capabilities: ProfileCapabilities
    profile_name: str
    _walk_share: tuple[int, int] | None = None
    """(rows filtered, feasible among them) of the last search's chunked walk: how
    :func:`first_chunk` sizes the next search's first pass."""
    _row_local_skips: dict[frozenset[str], bool]
    """:meth:`_row_local_with` by the set of skipped Filter plugins (a few sets recur)."""
    _row_key: tuple[CycleState, api.Pod, frozenset[str], Hashable | None] | None
    """The last :meth:`row_local_key` answer with its cycle state, Pod and skipped Filter
    plugins (the framework forgets it when a search begins)."""
    evaluations: dict[tuple[str, str], int]
    """``(plugin, extension point) -> evaluations`` so far, for
    ``scheduler_plugin_evaluation_total``: one per PreFilter / PreScore call that did not
    Skip, one per node a Filter / Score call answered for (upstream counts each per-node call).
    """

    def _timed(self, point: str, start: float, status: Status) -> None:
        """Record an extension point's duration (the framework provides it)."""
        raise NotImplementedError

    def sign(self, pod: api.Pod) -> tuple[object, ...] | None:
        """The Pod's result-reuse signature (the framework provides it)."""
        raise NotImplementedError

    def run_pre_filter(
        self, state: CycleState, pod: api.Pod
    ) -> tuple[PreFilterResult | None, Status, set[str]]:
        """Run PreFilter plugins: merged node narrowing, status, plugins that rejected."""
        start = time.perf_counter()
        result: PreFilterResult | None = None
        narrowing: set[str] = set()
        cluster = self.handle.cluster
        ev = self.evaluations
        deferred = pod.resize_deferred and self.handle.feature_gates.enabled(RESIZE_PREEMPTION)
        if deferred:
            # Upstream v1.37: these plugins' PreFilter Skips a resize-deferred Pod (their
            # Filter passes it too, whether or not they have a PreFilter).
            state.skip_filter.update(RESIZE_DEFERRED_SKIPPED)
        skipped = state.skip_filter.add
        for p in self.plugins["pre_filter"]:
            if deferred and p.name in RESIZE_DEFERRED_SKIPPED:
                continue
            r, s = p.pre_filter(state, pod, cluster)
            code = s.code
            if code == _SKIP:
                skipped(p.name)
                continue
            key = (p.name, "PreFilter")
            ev[key] = ev.get(key, 0) + 1
            if code != _OK:
                s = s.with_plugin(p.name)
                self._timed("PreFilter", start, s)
                if s.is_rejected():
                    return None, s, {p.name}
                return None, error(f'running PreFilter plugin "{p.name}": {s.message()}'), set()
            if r is not None and not r.all_nodes():
                narrowing.add(p.name)
                result = r if result is None else result.merge(r)
                assert result.node_names is not None
                if not result.node_names:
                    reason = _no_node_left(narrowing)
                    s = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,), p.name)
                    self._timed("PreFilter", start, s)
                    return None, s, narrowing
        self._timed("PreFilter", start, SUCCESS)
        return result, SUCCESS, narrowing

    def run_filter(
        self,
        state: CycleState,
        pod: api.Pod,
        rows: IntArray,
        interned: dict[Status, int] | None = None,
    ) -> FilterOutcome:
        """Run every Filter plugin over ``rows`` (first failure wins per node).

        ``interned`` maps statuses to ids; pass the same dict to outcomes you will merge.
        """
        cluster = self.handle.cluster
        interned = {} if interned is None else interned
        if rows.shape[0] == 0:  # no plugin runs (nor counts an evaluation) on no node
            empty = np.zeros(0, dtype=np.int64)
            return FilterOutcome(empty, empty, empty.copy(), list(interned), 0)
        alive = rows
        failed: list[IntArray] = []
        failed_status: list[IntArray] = []
        ev = self.evaluations
        for p in self.filter_plugins:
            if p.name in state.skip_filter or alive.size == 0:
                continue
            verdict = p.filter(state, pod, cluster, alive)
            key = (p.name, "Filter")
            ev[key] = ev.get(key, 0) + int(alive.size)
            if not verdict.table:  # no status to give: every node passed
                continue
            codes = verdict.codes
            if alive.shape[0] == 1:  # one node (re-filtered by reuse or preemption): ints
                code = int(codes[0])
                if code == 0:
                    continue
                sid = 0
                for k, st in verdict.table.items():  # every status interned, as below
                    if st.code == Code.ERROR and k == code:
                        raise PluginError(p.name, st.message(), point="filter")
                    at = interned.setdefault(st.with_plugin(p.name), len(interned))
                    if k == code:
                        sid = at
                failed.append(alive)
                failed_status.append(np.asarray([sid], dtype=np.int64))
                alive = alive[:0]
                continue
            bad = codes.nonzero()[0]  # positions, ascending
            if not bad.shape[0]:
                continue
            remap = np.zeros(max(verdict.table, default=0) + 1, dtype=np.int64)
            for k, st in verdict.table.items():
                if st.code == Code.ERROR and bool((codes == k).any()):
                    raise PluginError(p.name, st.message(), point="filter")
                st = st.with_plugin(p.name)
                remap[k] = interned.setdefault(st, len(interned))
            failed.append(alive.take(bad))
            failed_status.append(remap.take(codes.take(bad)))
            alive = alive[codes == 0]
        if len(failed) == 1:  # one plugin rejected nodes (every one-row failure): no copies
            return FilterOutcome(
                alive, failed[0], failed_status[0], list(interned), int(rows.shape[0])
            )
        empty = np.zeros(0, dtype=np.int64)
        return FilterOutcome(
            feasible=alive,
            failed=np.concatenate(failed) if failed else empty,
            failed_status=np.concatenate(failed_status) if failed_status else empty,
            statuses=list(interned),
            processed=int(rows.size),
        )

    def run_filter_with_nominated(
        self,
        state: CycleState,
        pod: api.Pod,
        rows: IntArray,
        interned: dict[Status, int] | None = None,
    ) -> FilterOutcome:
        """:meth:`run_filter`, counting nominated Pods (upstream
        ``RunFilterPluginsWithNominatedPods``).

        A node with nominated Pods of priority >= ``pod``'s (other than ``pod``) must pass
        both with them treated as running there and without them; its status is the first
        failing pass's, the with-nominated pass first, as upstream.  Those nodes are filtered
        first with their nominated Pods' usage added to their rows (at once, the usage
        removed again exactly); the pass without them then runs over every row except those
        that already failed, as upstream stops after a failing first pass.  When PreFilter
        plugins with PreFilterExtensions hold state this cycle (inter-pod affinity, topology
        spread), each such node is filtered on its own copy of the state with its nominated
        Pods added (upstream ``addNominatedPods``).
        """
        interned = {} if interned is None else interned
        nom = self.nominator
        if nom is None or len(nom) == 0 or rows.size == 0:
            return self.run_filter(state, pod, rows, interned)
        if rows.shape[0] == 1 and not self.active_extensions(state):
            return self._filter_one_with_nominated(state, pod, rows, interned, nom)
        nset = self._usage.nominated(nom, self.handle.cluster.nodes)
        idx = nset.select(pod, rows)
        if idx.size == 0:
            return self.run_filter(state, pod, rows, interned)
        if rows.shape[0] == 1:  # every selected Pod is on the one row
            starts, with_rows = _FIRST, rows
        else:
            at = nset.rows[idx]  # sorted
            first = np.ones(at.shape[0], dtype=np.bool_)
            first[1:] = at[1:] != at[:-1]
            starts = np.flatnonzero(first)
            with_rows = at[starts]
        nset.block.shift(idx, 1)
        try:
            if self.active_extensions(state):
                groups = np.split(idx, starts[1:])
                w = merge_outcomes(
                    [
                        self._filter_with_added(state, pod, row, nset.pods_at(g), interned)
                        for row, g in zip(with_rows.tolist(), groups, strict=True)
                    ],
                    list(interned),
                )
            else:
                w = self.run_filter(state, pod, with_rows, interned)
        finally:
            nset.block.shift(idx, -1)
        if w.failed.size == 0:
            return self.run_filter(state, pod, rows, interned)
        if w.failed.size == rows.size:  # every node failed with its nominated Pods
            empty = np.zeros(0, dtype=np.int64)
            return FilterOutcome(empty, w.failed, w.failed_status, list(interned), int(rows.size))
        # a node failing with its nominated Pods keeps that status and is not filtered again
        # without them (upstream returns after the first pass's failure); w.failed is a
        # subset of rows: marked over the rows' span (cheaper than np.isin's sort)
        lo = int(rows.min())
        marked = np.zeros(int(rows.max()) - lo + 1, dtype=np.bool_)
        marked[w.failed - lo] = True
        base = self.run_filter(state, pod, rows[~marked[rows - lo]], interned)
        return FilterOutcome(
            feasible=base.feasible,
            failed=np.concatenate([base.failed, w.failed]),
            failed_status=np.concatenate([base.failed_status, w.failed_status]),
            statuses=list(interned),
            processed=int(rows.size),
        )

    def _filter_one_with_nominated(
        self,
        state: CycleState,
        pod: api.Pod,
        rows: IntArray,
        interned: dict[Status, int],
        nom: nominated.PodNominator,
    ) -> FilterOutcome:
        """:meth:`run_filter_with_nominated` over one row without PreFilter extensions
        holding state (preemption's kept failed pass and re-filters, result reuse): the
        nominated Pods' usage, read from the nominator, is added to that row alone and
        taken off again, without bringing the whole :class:`~.nominated.NominatedSet` up
        to date.  Same passes and statuses as the general path."""
        table = self.handle.cluster.nodes
        row = int(rows[0])
        added = nominated.usage_on_row(nom, table, pod, row)
        if not added:
            return self.run_filter(state, pod, rows, interned)
        nominated.shift_row(table, row, added, 1)
        try:
            w = self.run_filter(state, pod, rows, interned)
        finally:
            nominated.shift_row(table, row, added, -1)
        if w.failed.size == 0:
            return self.run_filter(state, pod, rows, interned)
        return FilterOutcome(w.feasible, w.failed, w.failed_status, list(interned), 1)

    def _filter_with_added(
        self,
        state: CycleState,
        pod: api.Pod,
        row: int,
        added: list[api.Pod],
        interned: dict[Status, int],
    ) -> FilterOutcome:
        """Filter node ``row`` on a copy of ``state`` with ``added`` Pods counted there."""
        copy = state.clone()
        for other in added:
            s = self.run_pre_filter_extension(copy, pod, other, row, add=True)
            if not s.is_success():
                raise PluginError(s.plugin or "", s.message())
        return self.run_filter(copy, pod, np.asarray([row], dtype=np.int64), interned)

    def row_local_key(self, state: CycleState, pod: api.Pod) -> Hashable | None:
        """A key under which the per-node answers of this cycle's Filter plugins for ``pod``
        can be kept: equal keys, equal verdicts for a node whose Pods, Node and nominated
        Pods did not change.  None when a Filter plugin that runs is neither row-local nor
        node-only, PreFilter extensions hold state, or the Pod cannot be signed.  Asked
        again for the same cycle (the kept failed pass, then preemption's dry run), the
        key found first is given (until the next search begins)."""
        memo = self._row_key
        if (
            memo is not None
            and memo[0] is state
            and memo[1] is pod
            and memo[2] == state.skip_filter
        ):
            return memo[3]
        skip = frozenset(state.skip_filter)
        key = self._row_local_key(pod, skip)
        self._row_key = (state, pod, skip, key)
        return key

    def _row_local_key(self, pod: api.Pod, skip: frozenset[str]) -> Hashable | None:
        local = self._row_local_skips.get(skip)
        if local is None:
            local = self._row_local_with(skip)
            if len(self._row_local_skips) >= 64:
                self._row_local_skips.clear()
            self._row_local_skips[skip] = local
        if not local:
            return None
        signature = self.sign(pod)
        if signature is None:
            return None
        return (self.profile_name, signature, pod.priority, skip)

    def _row_local_with(self, skip: frozenset[str]) -> bool:
        """Whether, with the plugins in ``skip`` skipped, no PreFilter extension holds state
        and every Filter plugin that runs is row-local or node-only (by name: the profile's
        plugins and their capabilities do not change)."""
        if any(p.name not in skip for p in self.pre_filter_extensions):
            return False
        can = self.capabilities
        return all(
            p.name in skip or p.name in can.row_local or p.name in can.node_only
            for p in self.filter_plugins
        )

    def active_extensions(self, state: CycleState) -> list[Any]:
        """PreFilter plugins with PreFilterExtensions that did not Skip this cycle."""
        return [p for p in self.pre_filter_extensions if p.name not in state.skip_filter]

    def run_pre_filter_extension(
        self, state: CycleState, pod: api.Pod, other: api.Pod, row: int, *, add: bool
    ) -> Status:
        """Upstream ``RunPreFilterExtensionAddPod`` (``add``) / ``...RemovePod``: tell every
        PreFilter plugin that kept state this cycle that ``other`` is added to (removed from)
        node ``row``; they replace their entry of ``state``."""
        cluster = self.handle.cluster
        for p in self.active_extensions(state):
            fn = p.pre_filter_add_pod if add else p.pre_filter_remove_pod
            s: Status = fn(state, pod, other, row, cluster)
            if not s.is_success():
                what = "AddPod" if add else "RemovePod"
                msg = f'running {what} on PreFilter plugin "{p.name}": {s.message()}'
                return error(msg).with_plugin(p.name)
        return SUCCESS

    def record_filter_duration(self, start: float) -> None:
        """Record a Filter pass that began at ``start`` (``perf_counter``) and succeeded, as
        :meth:`find_nodes_that_pass_filters` does: for a pass answered from a kept outcome."""
        self._timed("Filter", start, SUCCESS)

    def find_nodes_that_pass_filters(
        self,
        state: CycleState,
        pod: api.Pod,
        ordered_rows: IntArray,
        num_to_find: int,
        *,
        narrow: bool = True,
    ) -> FilterOutcome:
        """Filter ``ordered_rows`` (already rotated to the start index) in chunks, stopping once
        ``num_to_find`` feasible nodes are found; ``processed`` counts nodes looked at up to and
        including the last feasible one kept (upstream's ``len(feasible) + len(statuses)``).

        With ``narrow``, the plugins' ``candidate_rows`` may spare the other rows (module
        docs); the outcome then lists no failed node, as it has feasible ones.
        """
        start = time.perf_counter()
        n = int(ordered_rows.size)
        if not self.filter_plugins:
            take = ordered_rows[:num_to_find]
            empty = np.zeros(0, dtype=np.int64)
            return FilterOutcome(take, empty, empty, [], int(take.size))
        candidates = self._candidate_rows(state, pod) if narrow else None
        if candidates is not None:
            narrowed = self._find_among(state, pod, ordered_rows, num_to_find, candidates)
            if narrowed is not None:
                self._timed("Filter", start, SUCCESS)
                return narrowed
        pos = 0
        chunk = first = first_chunk(num_to_find, n, self._walk_share)
        parts: list[FilterOutcome] = []
        interned: dict[Status, int] = {}
        found = 0
        while pos < n and found < num_to_find:
            part = self.run_filter_with_nominated(
                state, pod, ordered_rows[pos : pos + chunk], interned
            )
            parts.append(part)
            found += int(part.feasible.size)
            pos += chunk
            chunk = next_chunk(chunk, pos, found, num_to_find)
        outcome = merge_outcomes(parts, list(interned))
        self._walk_share = (min(pos, n), found)
        if len(parts) > 1 or first > max(num_to_find, 1):
            outcome = self._as_default_walk(
                state, pod, ordered_rows, num_to_find, outcome, min(pos, n), interned
            )
        if outcome.feasible.size > num_to_find:
            outcome = truncate_outcome(outcome, ordered_rows, num_to_find)
        self._timed("Filter", start, SUCCESS)
        return outcome

    def _as_default_walk(
        self,
        state: CycleState,
        pod: api.Pod,
        ordered_rows: IntArray,
        num_to_find: int,
        outcome: FilterOutcome,
        walked: int,
        interned: dict[Status, int],
    ) -> FilterOutcome:
        """``outcome`` of the passes :func:`next_chunk` sized over the first ``walked`` of
        ``ordered_rows``, cut (or extended) to the rows the default chunks would have walked
        (:func:`default_walk`): the same nodes, failures and ``processed`` (which moves
        the round-robin start) whatever the pass sizes.  When more than ``num_to_find``
        nodes passed among the rows filtered, the rows past them are not filtered even where
        the default walk would have: it keeps only the first ``num_to_find`` nodes and the
        failures before the last of them (:func:`truncate_outcome`), all among these rows."""
        n = int(ordered_rows.size)
        # positions of the rows filtered so far (the outcome's rows are all among them)
        position = np.empty(int(np.maximum.reduce(ordered_rows)) + 1, dtype=np.int64)
        position[ordered_rows[:walked]] = np.arange(walked, dtype=np.int64)
        while True:
            fpos = position[outcome.feasible]  # ascending: filtering keeps the rows' order
            _, end = default_walk(partial(_before, fpos), n, num_to_find, walked)
            if end <= walked:
                break
            if outcome.feasible.size > num_to_find:
                return outcome  # the caller's truncate_outcome gives the walk's answer
            more = self.run_filter_with_nominated(state, pod, ordered_rows[walked:end], interned)
            outcome = merge_outcomes([outcome, more], list(interned))
            position[ordered_rows[walked:end]] = np.arange(walked, end, dtype=np.int64)
            walked = end
        if end == walked:
            return outcome
        feasible = position[outcome.feasible] < end
        failed = position[outcome.failed] < end
        return FilterOutcome(
            outcome.feasible[feasible],
            outcome.failed[failed],
            outcome.failed_status[failed],
            list(interned),
            end,
        )

    def _candidate_rows(self, state: CycleState, pod: api.Pod) -> IntArray | None:
        """int64 rows outside which some Filter plugin rejects ``pod`` for sure, or None."""
        cluster = self.handle.cluster
        out: IntArray | None = None
        plugins, skip = self.filter_plugins, state.skip_filter
        for at in self.candidate_at:
            p = plugins[at]
            if p.name in skip:
                continue
            rows = p.candidate_rows(state, pod, cluster)
            if rows is not None:
                out = rows if out is None else np.intersect1d(out, rows)
        return out

    def _find_among(
        self,
        state: CycleState,
        pod: api.Pod,
        ordered_rows: IntArray,
        num_to_find: int,
        candidates: IntArray,
    ) -> FilterOutcome | None:
        """:meth:`find_nodes_that_pass_filters` when only ``candidates`` (int64 rows) can
        pass: the same feasible nodes and ``processed``; None when none passes, or when so
        many of ``ordered_rows`` are candidates that the chunked walk costs less."""
        n = int(ordered_rows.size)
        inside = np.zeros(self.handle.cluster.nodes.capacity, dtype=np.bool_)
        inside[candidates] = True
        pos = np.flatnonzero(inside[ordered_rows])
        if pos.size == 0 or not _narrow_pays(int(pos.size), n, num_to_find):
            return None
        rows = ordered_rows[pos]
        feasible = self.run_filter_with_nominated(state, pod, rows).feasible
        if feasible.size == 0:
            return None
        # Their positions, ascending (filtering keeps the order of the rows).
        fpos = pos if feasible.size == pos.size else pos[np.isin(rows, feasible)]
        found, processed = default_walk(partial(_before, fpos), n, num_to_find)
        if found > num_to_find:
            found, processed = num_to_find, int(fpos[num_to_find - 1]) + 1
        empty = np.zeros(0, dtype=np.int64)
        return FilterOutcome(feasible[:found], empty, empty.copy(), [], processed)
