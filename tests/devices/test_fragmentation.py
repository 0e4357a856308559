"""The FGD fragmentation measure: the vectorised model equals a shape-by-shape port of the
reference ``frag.go`` on random nodes; what-ifs equal measuring the changed node."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.devices import fragmentation
from kubesched.devices.fragmentation import FragModel, Shape, target_workload

MODELS = ("G2", "T4")
SHAPES = {
    Shape(0, 0, 0): 2.0,  # CPU-only: every idle GPU is fragment
    Shape(4000, 500, 1): 3.0,
    Shape(2000, 250, 1, ("T4",)): 1.0,
    Shape(8000, 1000, 1): 4.0,
    Shape(16000, 1000, 2): 1.0,
    Shape(64000, 1000, 8): 0.5,
}
TW = target_workload(SHAPES, coverage=1.0)


def reference_frag(free: list[int], cpu_left: int, model: str) -> float:
    """Shape by shape, as ``NodeGpuShareFragAmountScore`` computes it."""
    total = float(sum(free))
    out = 0.0
    for shape, f in zip(TW.shapes, TW.freq, strict=True):
        if shape.milli == 0 or not shape.accepts(model):
            out += f * total
            continue
        fitting = sum(1 for x in free if x >= shape.milli)
        if fitting >= shape.num and cpu_left >= shape.cpu:
            out += f * sum(x for x in free if x < shape.milli)
        else:
            out += f * total
    return out


def test_target_workload_cut_and_order() -> None:
    counts = {Shape(1, 0, 0): 50, Shape(2, 1000, 1): 30, Shape(3, 500, 1): 15, Shape(4, 1, 1): 5}
    tw = target_workload(counts, coverage=0.95)
    assert tw.shapes == (Shape(1, 0, 0), Shape(2, 1000, 1), Shape(3, 500, 1))
    np.testing.assert_allclose(tw.freq, [50 / 95, 30 / 95, 15 / 95])
    # equal counts: the larger shape first (the reference's reverse sort)
    tie = target_workload({Shape(1, 0, 0): 1, Shape(2, 0, 0): 1}, coverage=1.0)
    assert tie.shapes == (Shape(2, 0, 0), Shape(1, 0, 0))


nodes = st.tuples(
    st.lists(st.sampled_from([0, 100, 250, 400, 500, 750, 1000]), min_size=8, max_size=8),
    st.integers(0, 70000),
    st.integers(0, 1),
    st.integers(1, 8),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(nodes, min_size=1, max_size=6))
def test_vectorised_frag_equals_reference(rows: list[tuple[list[int], int, int, int]]) -> None:
    fm = FragModel(TW, MODELS, 8)
    free = np.array([[x if i < n else 0 for i, x in enumerate(f)] for f, _, _, n in rows])
    cpu = np.array([c for _, c, _, _ in rows])
    model = np.array([m for _, _, m, _ in rows])
    got = fm.frag(free, cpu, model)
    want = [reference_frag(list(free[i]), int(cpu[i]), MODELS[model[i]]) for i in range(len(rows))]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(nodes, st.sampled_from([100, 250, 500, 750]), st.integers(0, 8000))
def test_share_what_if_equals_measuring_after(
    node: tuple[list[int], int, int, int], milli: int, cpu: int
) -> None:
    fm = FragModel(TW, MODELS, 8)
    f, cpu_left, m, n = node
    free = np.array([[x if i < n else 0 for i, x in enumerate(f)]])
    s, c = fm.stats(free)
    after = fm.frag_after_share(free, s, c, np.array([cpu_left]), np.array([m]), cpu, milli)
    for j in range(8):
        if free[0, j] < milli:
            assert np.isnan(after[0, j])
            continue
        changed = free.copy()
        changed[0, j] -= milli
        want = reference_frag(list(changed[0]), cpu_left - cpu, MODELS[m])
        assert after[0, j] == pytest.approx(want)


@pytest.mark.parametrize("num", [0, 1, 2])
def test_whole_what_if_equals_measuring_after(num: int) -> None:
    fm = FragModel(TW, MODELS, 8)
    free = np.array([[1000, 1000, 1000, 400, 1000, 0, 0, 0]])
    s, c = fm.stats(free)
    after = fm.frag_after_whole(free, s, c, np.array([30000]), np.array([0]), 12000, num)
    changed = free.copy()
    changed[0, np.flatnonzero(free[0] == 1000)[:num]] = 0
    assert after[0] == pytest.approx(reference_frag(list(changed[0]), 18000, "G2"))


def test_memory_dimension_counts_only_when_shapes_carry_memory() -> None:
    tw = target_workload({Shape(1000, 1000, 1, (), 64): 1.0, Shape(0, 0, 0): 1.0}, 1.0)
    fm = FragModel(tw, MODELS, 2)
    free = np.array([[1000, 1000]])
    s, c = fm.stats(free)
    total, cpu, model = np.array([2000]), np.array([4000]), np.array([0])
    roomy = fm.frag_from_stats(total, s, c, cpu, model, np.array([128]))
    tight = fm.frag_from_stats(total, s, c, cpu, model, np.array([32]))
    assert roomy[0] == pytest.approx(1000.0) and tight[0] == pytest.approx(2000.0)


@pytest.mark.parametrize(
    ("before", "after", "want"),
    [(1000.0, 1000.0, 50), (1000.0, 0.0, 73), (0.0, 1000.0, 26), (0.0, np.nan, -1)],
)
def test_sigmoid_scores(before: float, after: float, want: int) -> None:
    got = fragmentation.sigmoid_scores(np.array([before]), np.array([after]))
    assert got.tolist() == [want]
