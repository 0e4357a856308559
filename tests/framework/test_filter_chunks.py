"""The search's Filter passes: however :func:`next_chunk` sizes them, the outcome (feasible
nodes in walk order, the failures kept, ``processed``) is the default chunked walk's."""

from __future__ import annotations

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
