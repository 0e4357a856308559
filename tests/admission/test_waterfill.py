"""Weighted water-filling: tables and invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.admission.waterfill import UNLIMITED, fill, waterfill


def arr(*v: int) -> np.ndarray:
    return np.asarray(v, dtype=np.int64)


@pytest.mark.parametrize(
    ("amount", "caps", "weights", "want"),
    [
        (10, (5, 5), (1, 1), (5, 5)),
        (10, (3, 100), (1, 1), (3, 7)),
        (9, (100, 100), (1, 2), (3, 6)),
        (10, (100, 100), (1, 2), (3, 7)),  # remainder unit to the heavier child
        (1, (5, 5), (1, 1), (1, 0)),  # ties: lower index
        (0, (5, 5), (1, 1), (0, 0)),
        (100, (5, 0), (1, 1), (5, 0)),
        (UNLIMITED, (7, 9), (3, 1), (7, 9)),
    ],
)
def test_fill(
    amount: int, caps: tuple[int, ...], weights: tuple[int, ...], want: tuple[int, ...]
) -> None:
    assert fill(amount, arr(*caps), arr(*weights)).tolist() == list(want)


@pytest.mark.parametrize(
    ("total", "demand", "minimum", "maximum", "want"),
    [
        # idle min of B is lent to A
        (16, (16, 0), (8, 8), (16, 16), (16, 0)),
        # B asks for its min back: A keeps what is left
        (16, (16, 8), (8, 8), (16, 16), (8, 8)),
        # A borrowing, B asks a little: the guarantee first
        (16, (16, 1), (8, 8), (16, 16), (15, 1)),
        # max caps a child
        (16, (16, 0), (8, 8), (10, 16), (10, 0)),
        # guarantees oversubscribed (parent runtime below the sum of min): shared by weight
        (8, (8, 8), (8, 8), (16, 16), (4, 4)),
        # extra shared by weight among children still wanting
        (12, (12, 12), (2, 2), (12, 12), (6, 6)),
    ],
)
def test_waterfill(
    total: int,
    demand: tuple[int, ...],
    minimum: tuple[int, ...],
    maximum: tuple[int, ...],
    want: tuple[int, ...],
) -> None:
    got = waterfill(total, arr(*demand), arr(*minimum), arr(*maximum), arr(1, 1))
    assert got.tolist() == list(want)


@settings(max_examples=200, deadline=None)
@given(
    total=st.integers(0, 200),
    rows=st.lists(
        st.tuples(st.integers(0, 80), st.integers(0, 40), st.integers(0, 80), st.integers(1, 4)),
        min_size=1,
        max_size=6,
    ),
)
def test_waterfill_invariants(total: int, rows: list[tuple[int, int, int, int]]) -> None:
    demand, lo, hi, w = (arr(*col) for col in zip(*rows, strict=True))
    got = waterfill(total, demand, lo, hi, w)
    cap = np.minimum(demand, hi)
    assert (got >= 0).all()
    assert (got <= cap).all()
    assert int(got.sum()) == min(total, int(cap.sum()))
    base = np.minimum(cap, lo)
    if int(base.sum()) <= total:
        assert (got >= base).all()  # every guarantee served when the parent can
