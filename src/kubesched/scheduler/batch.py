"""Reuse of scheduling results across equivalent Pods (upstream: opportunistic batching).

Consecutive Pods with the same *signature* (every Filter and Score plugin of the profile says
which Pod fields its answer depends on, through ``sign(pod)``; one that cannot, or a plugin
without ``sign``, makes the Pod unsignable) see the same cluster, except for the node the
previous Pod was just assumed on.  So instead of filtering and scoring every candidate node
again, kubesched keeps the previous cycle's feasible nodes with each Score plugin's *raw*
scores, re-filters and re-scores only that one node, normalizes the cached raw scores again
and picks the best node as the full path would.

A cycle that found one feasible node (upstream scores nothing then) keeps that node alone,
so DaemonSet-style Pods pinned by NodeAffinity's PreFilterResult reuse it until it is full.

Validity (a miss flushes the entry, counted by reason):

- ``signature``: the Pod's signature differs (or it is unsignable);
- ``not_consecutive``: another scheduling cycle ran in between;
- ``nominations``: a nomination was added or removed (the entry's nodes were filtered with
  the nominated Pods of that moment counted, as upstream's ``RunFilterPluginsWithNominatedPods``);
- ``cluster_changed``: anything but our own assume changed the cluster (``ClusterState.version``)
  -- except, for an entry whose Filters and Scores are all *row-local* (below), Pods added
  to or removed from nodes the full path did not look at (``ClusterState.rows_changed_since``);
- ``expired``: the entry has served ``max_uses`` Pods (then it is rebuilt in full);
- ``exhausted``: no cached node is feasible any more;
- ``placement``: the Pod is searched in another PodGroup placement (or in none) than the
  entry's nodes were, or a sampled entry's over other candidate nodes (``Search.reuse``);
- ``domain_widened``: a Filter whose answers span nodes (see below) may now accept a node it
  rejected when the entry was built, which the cache therefore does not hold.

Filters whose answers span nodes (PodTopologySpread's hard constraints: an assume changes the
counts of a whole domain) take part through ``refresh_filter(state, pod, cluster)``: on every
reuse it recomputes the plugin's PreFilter state and returns False if a node it rejected
before may now pass; otherwise its Filter runs again over all cached nodes (one gather) and
those it now rejects are dropped.  So the cache always holds exactly the nodes the full path
would find feasible among those it looked at.

A plugin is *row-local* (class attribute ``row_local = True``) when its Filter verdict and
raw Score for a node depend only on the Pod, that node and the Pods on it (NodeResourcesFit,
BalancedAllocation, NodePorts); ``node_only`` plugins depend on the node alone.  An entry
whose remaining Filters and Scores are all such keeps the mask of the rows the full path
looked at (``window``): a Pod bound elsewhere cannot change any cached answer, so the entry
stays valid.  This matters where other schedulers place Pods on the same cluster -- a
parallel shard's replica hears the other shards' binds in every message -- and on a live
cluster with churn.  A sampled entry (below) looked at every candidate (every node, a
shard's partition, or the nodes PreFilter named), since its later windows walk them all.

The one node is re-checked through a plugin's optional ``filter_one(state, pod, cluster,
row)`` (True: it passes; None: not known, so ``filter`` answers) and ``score_one(state, pod,
cluster, row)`` (the raw score as an int, or None: ``score`` answers), Python-int versions of
the one-row case that spare an array per call; NodeResourcesFit and BalancedAllocation have
them.  A plugin wrapped to time its calls (a sampled cycle's) keeps its timed methods.

Sampling: when the full cycle's Filter walk may stop before its last candidate
(``percentageOfNodesToScore`` below 100 % of more than 100 nodes: upstream
``numFeasibleNodesToFind``), the entry is *sampled* (:attr:`BatchEntry.walk`): built, it
filters and scores every candidate the walk did not reach too (uncounted), so it holds every
feasible candidate in walk order.  Each reuse then takes the window upstream's next cycle
filters (:func:`window`): from the round-robin index the last cycle left, the same count of
feasible nodes to find, the same chunked walk and wrap-around, the index moving on by the
nodes examined, failures included; the totals of that window's feasible nodes are the
entry's, or, when a ``node_only`` plugin normalizing over the feasible nodes (NodeAffinity,
TaintToleration) has raw scores that differ between nodes (:attr:`BatchEntry.renorm`),
normalized again over the window alone, as the full path's Score is.  A Score plugin whose
PreScore or normalization depends on the other feasible nodes beyond that (PodTopologySpread,
InterPodAffinity, DynamicResources' scoring: a ``normalizing`` plugin not ``node_only``), or
an extender, makes no sampled entry: those Pods search in full under sampling.

Beyond upstream: upstream v1.34 has no batching; from v1.35 (OpportunisticBatching) it hands
the next Pod the next node of the previous sorted list and only filters it, which kubesched
models apart (:mod:`kubesched.scheduler.hints`; this reuse then serves only the Pods upstream
does not sign).  Here kubesched rescores the one changed node and keeps the cache, so the
choice is the one the full path would make: batched and non-batched placements are
identical, with sampling or without (``tests/scheduler/test_batch_sampled.py``).  A node
dropped from an entry normalizes NodeAffinity's and TaintToleration's cached scores again
over the nodes left, as a fresh cycle does.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.framework.filterphase import default_walk
from kubesched.framework.interface import CycleState, IntArray

if TYPE_CHECKING:
    from kubesched.framework.runtime import Framework, ScoreOutcome
    from kubesched.state.cache import ClusterState

DEFAULT_MAX_USES = 1024

HIT = "hit"
MISS = "miss"
UNSIGNABLE = "unsignable"


@dataclass(slots=True)
class Walk:
    """The round-robin Filter walk of a full cycle (upstream ``findNodesThatFitPod``)."""

    order: IntArray
    """The search's candidate rows (``SearchHost.candidate_rows``); a sampled entry serves
    only a search over the same ones."""
    candidates: IntArray
    """The rows walked: the nodes PreFilter named, or ``order``."""
    to_find: int
    """``numFeasibleNodesToFind`` over ``candidates`` (1 without scoring)."""

    @property
    def sampled(self) -> bool:
        """Whether the walk may stop before the last candidate (``percentageOfNodesToScore``
        below 100 % of more than 100 nodes): then a reuse walks the next window."""
        return self.to_find < int(self.candidates.size)


@dataclass(slots=True)
class BatchEntry:
    """What one full cycle found, kept for the next equivalent Pod.

    ``rows``: int64 ``(n,)`` feasible rows; ``total``: int64 ``(n,)`` weighted totals;
    ``raw[plugin]``: int64 ``(n,)`` raw scores of the plugins whose answer depends on the
    Pods on a node; ``chosen``: index into ``rows`` of the node the last Pod was assumed on;
    ``state``: the PreFilter / PreScore results, identical for every Pod of this signature.
    """

    profile: str
    signature: Hashable
    rows: IntArray
    total: IntArray
    raw: dict[str, IntArray]
    chosen: int
    processed: int
    state: dict[str, Any]
    skip_filter: frozenset[str]
    skip_score: frozenset[str]
    filters: list[Any]
    scores: list[tuple[Any, int]]
    incremental: bool
    cycle: int = -1
    version: int = -1
    nominations: int = -1
    """The nominator's version when the entry was last used (see ``nominations`` above)."""
    uses: int = 0
    placement: IntArray | None = None
    """The PodGroup placement the entry's nodes were searched in (None: every node); the
    entry serves only a Pod searched in that same placement."""
    refreshers: list[Any] = field(default_factory=list)
    """The Filters of ``filters`` whose answers span nodes (``refresh_filter``)."""
    filter_ones: list[Any] = field(default_factory=list)
    """Each of ``filters``' ``filter_one`` (module docs), or None."""
    score_ones: list[Any] = field(default_factory=list)
    """Each of ``scores``' ``score_one`` (module docs), or None."""
    window: npt.NDArray[np.bool_] | None = None
    """bool ``(capacity,)``: the rows the full path looked at, when every Filter and Score of
    the entry is row-local (module docs); None: any change to the cluster flushes."""
    order: IntArray | None = None
    """``argsort(rows)``, kept until ``rows`` changes (see :meth:`row_order`)."""
    ties: IntArray | list[int] | None = None
    """Indexes into ``rows`` whose ``total`` is the highest (``top``), in increasing row
    order: the nodes ``select_host`` draws from.  An int64 array as :meth:`tied` finds
    them, a list once a reuse that changes only ``total[chosen]`` keeps them
    (:meth:`total_changed`); None when to be found again."""
    tie_rows: list[int] | None = None
    """``rows[ties]`` (ascending) while ``ties`` is a list, to find an index's place in it
    by bisection."""
    top: int = 0
    walk: Walk | None = None
    """Set for a *sampled* entry (module docs): it holds every feasible candidate, ``rows``
    in increasing ``positions``, and each reuse takes the window of the next walk."""
    positions: IntArray | None = None
    """int64 ``(n,)``, ascending: each of ``rows``' index into ``walk.candidates``."""
    ascending: bool = False
    """A sampled entry's ``rows`` increase with ``positions`` (the candidates are in row
    order): a window's ties are in row order without a sort, once unwrapped."""
    renorm: bool = False
    """A ``node_only`` plugin that normalizes over the feasible nodes has raw scores that
    differ between them: its normalized scores change when the set does (a node dropped,
    another window), so ``raw`` keeps every plugin's and the totals are found again."""

    def row_order(self) -> IntArray:
        """int64 ``(n,)``: indexes into ``rows`` in increasing row order."""
        if self.order is None:
            self.order = np.argsort(self.rows, kind="stable")
        return self.order

    def tied(self) -> IntArray | list[int]:
        """:attr:`ties`, found again from ``total`` if they are not known."""
        if self.ties is None:
            order = self.row_order()
            top = self.total.max()
            self.top, self.ties, self.tie_rows = int(top), order[self.total[order] == top], None
        return self.ties

    def total_changed(self, i: int) -> None:
        """``total[i]`` changed and no other total did: bring :attr:`ties` up to date (a
        few Python operations instead of a pass over every cached node)."""
        if self.ties is None:
            return
        ties, tie_rows = self.ties, self.tie_rows
        if not isinstance(ties, list) or tie_rows is None:  # kept the first time: as lists
            tie_rows = self.tie_rows = self.rows[ties].tolist()
            ties = self.ties = np.asarray(ties).tolist()
        new, row = int(self.total[i]), int(self.rows[i])
        at = bisect.bisect_left(tie_rows, row)
        tied = at < len(ties) and tie_rows[at] == row
        if new > self.top:
            self.top, self.ties, self.tie_rows = new, [i], [row]
        elif new == self.top and not tied:
            ties.insert(at, i)
            tie_rows.insert(at, row)
        elif new < self.top and tied:
            del ties[at], tie_rows[at]
            if not ties:
                self.ties = None


@dataclass(slots=True)
class BatchCache:
    """The single cached entry and its hit / miss / flush statistics."""

    enabled: bool = True
    max_uses: int = DEFAULT_MAX_USES
    entry: BatchEntry | None = None
    attempts: Counter[str] = field(default_factory=Counter)
    """``hit`` / ``miss`` / ``unsignable`` counts (``scheduler_batch_attempts_total``)."""
    flushes: Counter[str] = field(default_factory=Counter)
    """Flush reasons (``scheduler_batch_cache_flushed_total``)."""

    def lookup(
        self,
        profile: str,
        signature: Hashable | None,
        cycle: int,
        cluster: ClusterState,
        nominations: int = -1,
    ) -> BatchEntry | None:
        """The entry usable for this cycle, or None (flushing a stale one); ``nominations``
        is the nominator's version now."""
        if not self.enabled:
            return None
        if signature is None:
            self.attempts[UNSIGNABLE] += 1
            self._flush("signature")
            return None
        e = self.entry
        reason = ""
        if e is None:
            reason = "empty"
        elif e.profile != profile or e.signature != signature:
            reason = "signature"
        elif e.cycle != cycle - 1:
            reason = "not_consecutive"
        elif e.nominations != nominations:
            reason = "nominations"
        elif e.version != cluster.version:
            if e.window is None or _touches(e.window, cluster.rows_changed_since(e.version)):
                reason = "cluster_changed"
            else:
                e.version = cluster.version
        elif e.uses >= self.max_uses:
            reason = "expired"
        if reason:
            self.attempts[MISS] += 1
            if reason != "empty":
                self._flush(reason)
            return None
        self.attempts[HIT] += 1
        return e

    def store(self, entry: BatchEntry) -> None:
        """Keep ``entry`` for the next cycle."""
        if self.enabled:
            self.entry = entry

    def invalidate(self, reason: str) -> None:
        """Drop the entry (e.g. ``exhausted``)."""
        self._flush(reason)

    def _flush(self, reason: str) -> None:
        if self.entry is not None:
            self.flushes[reason] += 1
            self.entry = None


def _touches(window: npt.NDArray[np.bool_], rows: list[int] | None) -> bool:
    """Whether ``rows`` (None: unknown changes) include one of ``window``."""
    return rows is None or bool(window[np.asarray(rows, dtype=np.int64)].any())


def build_entry(
    fwk: Framework,
    state: CycleState,
    signature: Hashable,
    feasible: IntArray,
    scored: ScoreOutcome,
    pick: int,
    looked_at: IntArray,
    placement: IntArray | None,
    pod: api.Pod | None = None,
    walk: Walk | None = None,
    extenders: bool = False,
) -> BatchEntry | None:
    """An entry from a full cycle's results (call before Reserve touches ``state``);
    ``looked_at``: int64 ``(k,)``, the rows the Filters ran on, in order; ``placement``:
    the PodGroup placement those were searched in (:attr:`BatchEntry.placement`).

    A ``walk`` that sampled (:attr:`Walk.sampled`) makes a sampled entry: the candidates the
    walk did not reach are filtered and scored too (uncounted: upstream's cycle did not look
    at them), for ``pod``.  None when it cannot serve (module docs: a Score plugin normalizing
    over nodes whose scores span nodes, or ``extenders``): every such Pod searches in full."""
    can = fwk.capabilities
    checked = [
        p
        for p in fwk.filter_plugins
        if p.name not in can.node_only and p.name not in state.skip_filter
    ]
    refreshers = [p for p in checked if p.name in can.refreshing]
    filters = [p for p in checked if p.name not in can.refreshing]
    scores = [
        (p, w)
        for p, w in zip(fwk.plugins["score"], fwk.score_weights, strict=True)
        if p.name in scored.raw and p.name not in can.node_only
    ]
    incremental = not any(p.name in can.normalizing for p, _ in scores)
    processed = int(looked_at.shape[0])
    raw, total, positions = scored.raw, scored.total, None
    if walk is not None and walk.sampled:
        if not incremental or extenders or pod is None:
            return None
        feasible, raw, positions, pick = _complete(fwk, state, pod, walk, feasible, raw, pick)
        looked_at = walk.candidates
        total = fwk.totals_from_raw(state, pod, raw) if raw else np.zeros_like(feasible)
    else:
        walk = None
    renorm = any(
        name in can.node_only and name in can.normalizing and v.size and v.min() != v.max()
        for name, v in raw.items()
    )
    window = None
    plugins = [*filters, *(p for p, _ in scores)]
    if not refreshers and all(p.name in can.row_local for p in plugins):
        window = np.zeros(fwk.handle.cluster.nodes.capacity, dtype=np.bool_)
        window[looked_at] = True
    kept = [p.name for p, _ in scores] if incremental and not renorm else list(raw)
    return BatchEntry(
        profile=fwk.profile_name,
        signature=signature,
        rows=feasible,
        total=total.copy(),
        raw={name: raw[name].copy() for name in kept},
        chosen=pick,
        processed=processed,
        state=dict(state),
        skip_filter=frozenset(state.skip_filter),
        skip_score=frozenset(state.skip_score),
        filters=filters,
        scores=scores,
        incremental=incremental,
        refreshers=refreshers,
        window=window,
        filter_ones=[
            p.filter_one if p.name in can.filter_one and _bare(fwk, p) else None for p in filters
        ],
        score_ones=[
            p.score_one if p.name in can.score_one and _bare(fwk, p) else None for p, _ in scores
        ],
        placement=placement,
        walk=walk,
        positions=positions,
        ascending=bool(walk is not None and (np.diff(feasible) > 0).all()),
        renorm=renorm,
    )


def _complete(
    fwk: Framework,
    state: CycleState,
    pod: api.Pod,
    walk: Walk,
    feasible: IntArray,
    raw: dict[str, IntArray],
    pick: int,
) -> tuple[IntArray, dict[str, IntArray], IntArray, int]:
    """A sampled walk's feasible rows and raw scores completed with the candidates it did
    not reach, all in increasing position in ``walk.candidates``: the rows, the raw scores,
    the positions and ``pick``'s index among them.  The evaluations upstream's cycle did
    not make are not counted."""
    m = int(walk.candidates.size)
    where = np.empty(int(np.maximum.reduce(walk.candidates)) + 1, dtype=np.int64)
    where[walk.candidates] = np.arange(m, dtype=np.int64)
    known = np.zeros(m, dtype=np.bool_)
    known[where[feasible]] = True
    chosen = int(feasible[pick])
    evaluations = dict(fwk.evaluations)
    try:
        rest = walk.candidates[~known]  # the window's failures fail again: the same state
        more = fwk.run_filter_with_nominated(state, pod, rest).feasible if rest.size else rest
        extra = fwk.raw_scores(state, pod, more, set(raw)) if more.size and raw else {}
    finally:
        fwk.evaluations.clear()
        fwk.evaluations.update(evaluations)
    rows = np.concatenate([feasible, more])
    at = where[rows]
    order = np.argsort(at, kind="stable")
    raws = {
        k: np.concatenate([v, extra[k]])[order] if more.size else v[order] for k, v in raw.items()
    }
    rows = rows[order]
    positions = at[order]
    return rows, raws, positions, int(np.flatnonzero(rows == chosen)[0])


def window(entry: BatchEntry, start: int) -> tuple[int, int, int]:
    """The window of a sampled entry's next walk from ``start`` (the round-robin index):
    ``(at, found, processed)``, the feasible nodes it keeps being ``entry.rows[at : at +
    found]`` wrapping around past the end (in the walk's order), and the nodes it processed
    (upstream ``findNodesThatPassFilters``' count, failures included, by which the index
    moves on), as :meth:`FilterPhase.find_nodes_that_pass_filters` walks with every verdict
    known."""
    walk, pos = entry.walk, entry.positions
    assert walk is not None and pos is not None
    m, f, k = int(walk.candidates.size), int(pos.size), walk.to_find
    s = start % m
    if f == m:  # every candidate feasible: the next min(k, m) of them
        return s, min(k, m), min(k, m)
    at = int(np.searchsorted(pos, s))

    def found_before(end: int) -> int:
        stop = s + end
        if stop <= m:
            return int(np.searchsorted(pos, stop)) - at
        return f - at + int(np.searchsorted(pos, stop - m))

    found, processed = default_walk(found_before, m, k)
    if found > k:
        found, processed = k, (int(pos[(at + k - 1) % f]) - s) % m + 1
    return at % f, found, processed


def window_top(entry: BatchEntry, at: int, found: int) -> IntArray | list[int] | None:
    """A window's ties (:func:`window`) as indexes into ``entry.rows``, in increasing row
    order, when the window holds one of the entry's highest totals (:meth:`BatchEntry.tied`,
    kept across reuses): then its ties are the entry's within it.  None when it holds none,
    or when the entry's rows are not in row order (``ascending``) or ``renorm``."""
    if entry.renorm or not entry.ascending:
        return None
    ties = entry.tied()
    f, end = int(entry.rows.shape[0]), at + found
    if isinstance(ties, list):
        lo = bisect.bisect_left(ties, at)
        if end <= f:
            out: IntArray | list[int] = ties[lo : bisect.bisect_left(ties, end)]
        else:
            out = ties[: bisect.bisect_left(ties, end - f)] + ties[lo:]
    else:
        lo = int(np.searchsorted(ties, at))
        if end <= f:
            out = ties[lo : int(np.searchsorted(ties, end))]
        else:
            out = np.concatenate([ties[: int(np.searchsorted(ties, end - f))], ties[lo:]])
    return out if len(out) else None


def window_ties(entry: BatchEntry, total: IntArray, at: int) -> IntArray:
    """Indexes into a window's ``total`` (:func:`taken` from ``at``) of its highest scores,
    in increasing row order (:meth:`Search.pick`'s draw over them)."""
    best = np.flatnonzero(total == total.max())
    if best.size == 1:
        return best
    if not entry.ascending:
        return best[np.argsort(taken(entry.rows, at, int(total.size))[best], kind="stable")]
    wrapped = int(entry.rows.shape[0]) - at  # the first index past the wrap: lower rows
    if wrapped >= total.size or best[-1] < wrapped or best[0] >= wrapped:
        return best
    cut = int(np.searchsorted(best, wrapped))
    return np.concatenate([best[cut:], best[:cut]])


def taken(values: IntArray, at: int, found: int) -> IntArray:
    """``values[at : at + found]``, wrapping around past the end (a view when it does not)."""
    end = at + found
    if end <= values.shape[0]:
        return values[at:end]
    return np.concatenate([values[at:], values[: end - values.shape[0]]])


def _bare(fwk: Framework, plugin: Any) -> bool:
    """Whether ``plugin`` is the profile's instance itself, not a wrapper timing its calls
    (whose one-node methods would go untimed)."""
    return fwk.instances.get(plugin.name) is plugin


def reuse(fwk: Framework, state: CycleState, pod: api.Pod, entry: BatchEntry) -> str:
    """Bring ``entry`` up to date for ``pod``: refresh the Filters spanning nodes, then
    re-filter and re-score only the node the previous Pod was assumed on, with ``state``
    restored from the entry.  Returns "" when the entry serves, else the flush reason
    (``exhausted``: no cached node is feasible any more; ``domain_widened``; ``nominations``).

    While Pods are nominated, the one node is re-filtered as the full path filters it, with
    the nominated Pods counted (``run_filter_with_nominated``); an entry with Filters spanning
    nodes is then not reused, since their refresh does not count nominated Pods."""
    nominated = fwk.nominator is not None and len(fwk.nominator) > 0
    if nominated and entry.refreshers:
        return "nominations"
    state.update(entry.state)
    state.skip_filter.update(entry.skip_filter)
    state.skip_score.update(entry.skip_score)
    cluster = fwk.handle.cluster
    keep: npt.NDArray[np.bool_] | None = None
    if entry.refreshers:
        keep = np.ones(entry.rows.shape[0], dtype=np.bool_)
        for p in entry.refreshers:
            if not p.refresh_filter(state, pod, cluster):
                return "domain_widened"
            keep &= p.filter(state, pod, cluster, entry.rows).codes == 0
        entry.state = dict(state)
    i = entry.chosen
    row = entry.rows[i : i + 1]
    r = int(row[0])
    fits = keep is None or bool(keep[i])
    if fits and nominated:
        fits = fwk.run_filter_with_nominated(state, pod, row).feasible.size > 0
    elif fits:
        for p, one in zip(entry.filters, entry.filter_ones, strict=True):
            if one is not None and one(state, pod, cluster, r):
                continue
            if p.filter(state, pod, cluster, row).codes[0]:
                fits = False
                break
    if fits:
        for (p, weight), one in zip(entry.scores, entry.score_ones, strict=True):
            new = one(state, pod, cluster, r) if one is not None else None
            if new is None:
                new = int(p.score(state, pod, cluster, row)[0])
            raw = entry.raw[p.name]
            if entry.incremental:
                entry.total[i] += weight * (new - int(raw[i]))
            raw[i] = new
    elif keep is None:
        keep = np.ones(entry.rows.shape[0], dtype=np.bool_)
    if keep is not None:
        keep[i] &= fits
    dropped = keep is not None and not keep.all()
    if dropped:
        entry.rows = entry.rows[keep]
        entry.order = entry.ties = None
        entry.total = entry.total[keep]
        entry.raw = {k: v[keep] for k, v in entry.raw.items()}
        if entry.positions is not None:
            entry.positions = entry.positions[keep]
        if entry.rows.shape[0] == 0:
            return "exhausted"
    elif fits and entry.incremental:
        entry.total_changed(i)
    if entry.walk is not None:  # totals over each window (Search)
        return ""
    if (not entry.incremental and (fits or dropped)) or (dropped and entry.renorm):
        # a plugin normalizes over all nodes
        entry.total = fwk.totals_from_raw(state, pod, entry.raw)
        entry.ties = None
    return ""
