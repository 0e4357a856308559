"""The search's Filter passes: however :func:`next_chunk` sizes them, the outcome (feasible
nodes in walk order, the failures kept, ``processed``) is the default chunked walk's."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.framework.filterphase import FilterPhase
from kubesched.framework.interface import CycleState, IntArray, Status, unschedulable
from kubesched.framework.outcomes import FilterOutcome, merge_outcomes, truncate_outcome

FULL = unschedulable("node full")


class _Walk(FilterPhase):
    """A Filter phase whose one plugin passes exactly the rows in ``feasible``."""

    def __init__(self, feasible: set[int]) -> None:
        self.feasible = feasible
        self.filter_plugins = [object()]
        self.passes: list[int] = []

    def _timed(self, point: str, start: float, status: Status) -> None:
        pass

    def run_filter_with_nominated(
        self,
        state: CycleState,
        pod: api.Pod,
        rows: IntArray,
        interned: dict[Status, int] | None = None,
    ) -> FilterOutcome:
        interned = {} if interned is None else interned
        self.passes.append(int(rows.size))
        ok = np.asarray([int(r) in self.feasible for r in rows], dtype=np.bool_)
        failed = rows[~ok]
        sid = interned.setdefault(FULL, len(interned)) if failed.size else 0
        return FilterOutcome(
            rows[ok], failed, np.full(failed.size, sid, dtype=np.int64), list(interned), rows.size
        )


def _default_walk(walk: _Walk, rows: IntArray, k: int) -> FilterOutcome:
    """The search before pass sizing: chunks of ``k``, then twice the nodes still wanted."""
    parts, pos, chunk, found, interned = [], 0, max(k, 1), 0, {}
    while pos < rows.size and found < k:
        part = walk.run_filter_with_nominated(
            CycleState(), api.Pod("p"), rows[pos : pos + chunk], interned
        )
        parts.append(part)
        found += int(part.feasible.size)
        pos += chunk
        chunk = max(chunk, (k - found) * 2)
    out = merge_outcomes(parts, list(interned))
    return truncate_outcome(out, rows, k) if out.feasible.size > k else out


@pytest.mark.parametrize("share", [0.02, 0.1, 0.3, 0.6, 1.0])
@pytest.mark.parametrize("seed", range(6))
def test_pass_sizes_do_not_change_the_outcome(share: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(150, 2000))
    k = int(rng.integers(1, 400))
    rows = np.roll(rng.permutation(n).astype(np.int64), int(rng.integers(0, n)))
    feasible = {int(r) for r in rows if rng.random() < share}
    walk = _Walk(feasible)
    got = walk.find_nodes_that_pass_filters(CycleState(), api.Pod("p"), rows, k, narrow=False)
    want = _default_walk(_Walk(feasible), rows, k)
    assert got.feasible.tolist() == want.feasible.tolist()
    assert sorted(got.failed.tolist()) == sorted(want.failed.tolist())
    assert got.processed == want.processed
    assert all(got.statuses[s] == FULL for s in got.failed_status.tolist())


def test_a_sparse_walk_takes_few_passes() -> None:
    rows = np.arange(6000, dtype=np.int64)
    walk = _Walk(set(range(0, 6000, 60)))  # 100 feasible nodes, 300 wanted
    out = walk.find_nodes_that_pass_filters(CycleState(), api.Pod("p"), rows, 300, narrow=False)
    assert out.feasible.size == 100 and out.processed == 6000
    assert len(walk.passes) <= 3


class _Narrowed(_Walk):
    """A walk whose plugin also names its candidate rows (all feasible rows among them)."""

    def __init__(self, feasible: set[int], candidates: IntArray, capacity: int) -> None:
        super().__init__(feasible)
        self.candidates = candidates
        self.handle = SimpleNamespace(
            cluster=SimpleNamespace(nodes=SimpleNamespace(capacity=capacity))
        )  # type: ignore[assignment]

    def _candidate_rows(self, state: CycleState, pod: api.Pod) -> IntArray | None:
        return self.candidates


@pytest.mark.parametrize("candidates", [40, 1500, 5900])
def test_few_candidates_are_filtered_alone_and_many_walked(candidates: int) -> None:
    """Few candidate rows (the last free nodes of an anti-affine group) are filtered in one
    pass of their own; when most rows are candidates the chunked walk (which looks at about
    ``num_to_find`` of them) runs instead.  The feasible nodes and ``processed`` agree."""
    rows = np.arange(6000, dtype=np.int64)
    cand = np.arange(0, 6000, 6000 // candidates, dtype=np.int64)[:candidates]
    feasible = {int(r) for r in cand[::2]}
    walk = _Narrowed(feasible, cand, 6000)
    got = walk.find_nodes_that_pass_filters(CycleState(), api.Pod("p"), rows, 300)
    want = _default_walk(_Walk(feasible), rows, 300)
    assert got.feasible.tolist() == want.feasible.tolist()
    assert got.processed == want.processed
    if candidates * candidates <= 2 * 300 * 6000:
        assert walk.passes == [candidates]
    else:
        assert walk.passes[0] == 300 and sum(walk.passes) < candidates


@pytest.mark.parametrize("hint", [(10, 1), (100, 50), (1000, 970), (500, 499), (3, 2)])
@pytest.mark.parametrize("share", [0.02, 0.3, 0.97, 1.0])
@pytest.mark.parametrize("seed", range(4))
def test_a_first_pass_sized_by_the_last_search_does_not_change_the_outcome(
    hint: tuple[int, int], share: float, seed: int
) -> None:
    """Whatever share of feasible rows the last search saw (the first pass then takes up
    to twice the default chunk), the outcome is the default walk's, also where exactly
    ``k`` nodes pass within the default walk's rows and ``processed`` is its end."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(150, 2000))
    k = int(rng.integers(1, 400))
    rows = np.roll(rng.permutation(n).astype(np.int64), int(rng.integers(0, n)))
    feasible = {int(r) for r in rows if rng.random() < share}
    if seed == 3:  # exactly k feasible among the first 2k rows: the walk's end counts
        feasible = {int(r) for r in rows[: 2 * k : 2][:k]}
    walk = _Walk(feasible)
    walk._walk_share = hint
    got = walk.find_nodes_that_pass_filters(CycleState(), api.Pod("p"), rows, k, narrow=False)
    want = _default_walk(_Walk(feasible), rows, k)
    assert got.feasible.tolist() == want.feasible.tolist()
    assert sorted(got.failed.tolist()) == sorted(want.failed.tolist())
    assert got.processed == want.processed


def test_a_walk_over_a_few_full_nodes_takes_one_pass_once_it_knows_their_share() -> None:
    """A few full nodes in every chunk (2.5 % of the rows): the default chunk finds fewer
    nodes than wanted and a second pass of ``k`` rows follows; the next search's first pass,
    sized by that share, holds its answer (and it is the default walk's)."""
    rows = np.arange(5000, dtype=np.int64)
    feasible = {r for r in range(5000) if r % 40 != 7}
    walk = _Walk(feasible)
    first = walk.find_nodes_that_pass_filters(CycleState(), api.Pod("p"), rows, 500, narrow=False)
    assert walk.passes == [500, 500]
    walk.passes.clear()
    rotated = np.roll(rows, -first.processed)
    got = walk.find_nodes_that_pass_filters(CycleState(), api.Pod("p"), rotated, 500, narrow=False)
    assert len(walk.passes) == 1 and walk.passes[0] < 600
    want = _default_walk(_Walk(feasible), rotated, 500)
    assert got.feasible.tolist() == want.feasible.tolist()
    assert sorted(got.failed.tolist()) == sorted(want.failed.tolist())
    assert got.processed == want.processed
