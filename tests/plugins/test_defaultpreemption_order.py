"""Victims ordered as upstream's ``sort.Slice`` orders them (``picking.order_victims``):
Go's own orders (``tests/data/gosort/fixture.json``) for Pods whose priorities are the
fixture's values and whose start times are equal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.kernels.gosort import MAX_INSERTION, sort_slice
from kubesched.plugins.defaultpreemption.picking import (
    _insertion_sorted_now,
    more_important_now,
    order_victims,
)
from kubesched.testing import make_pod

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "gosort" / "fixture.json"


@pytest.mark.parametrize("timed_at_listing", [False, True])
def test_equally_important_victims_come_out_in_gos_order(timed_at_listing: bool) -> None:
    cases = [
        c
        for c in json.loads(FIXTURE.read_text())["cases"]
        if c["pattern"] in ("random-2", "random-5", "random-n") and 12 < len(c["values"]) <= 129
    ]
    assert len(cases) > 100
    for c in cases:
        pods = []
        for i, v in enumerate(c["values"]):
            p = make_pod(f"p{i}").priority(-v).obj()
            p.start_time = 1000.0  # equal: only the priority orders them
            pods.append(p)
        got = order_victims(pods, timed_at_listing=timed_at_listing)
        assert [int(p.name[1:]) for p in got] == c["order"], (c["pattern"], len(pods))


def test_pods_without_a_start_time() -> None:
    """v1.34-v1.36: two such Pods are each more important than the other (``time.Now()``
    read per comparison), so Go's insertion sort reverses them; v1.37 keeps the listing."""
    pods = [make_pod(f"p{i}").obj() for i in range(5)]
    started = make_pod("s").obj()
    started.start_time = 5.0
    assert more_important_now(pods[0], pods[1]) and more_important_now(pods[1], pods[0])
    assert more_important_now(started, pods[0]) and not more_important_now(pods[0], started)
    names = [p.name for p in order_victims([*pods, started], timed_at_listing=False)]
    assert names == ["s", "p4", "p3", "p2", "p1", "p0"]
    names = [p.name for p in order_victims([*pods, started], timed_at_listing=True)]
    assert names == ["s", "p0", "p1", "p2", "p3", "p4"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.sampled_from([None, None, 1.0, 2.0])),
        max_size=MAX_INSERTION,
    )
)
def test_short_lists_by_key_as_gos_insertion_sort(shape: list[tuple[int, float | None]]) -> None:
    """Up to twelve Pods (Go's insertion sort), with ties of priority and start time and
    Pods without one: the keyed sort order_victims uses is the order Go's sort.Slice with
    MoreImportantPod gives (our port of it)."""
    pods = []
    for i, (prio, start) in enumerate(shape):
        p = make_pod(f"p{i}").priority(prio).obj()
        p.start_time = start
        pods.append(p)
    want = list(pods)
    sort_slice(want, more_important_now)
    assert [p.name for p in _insertion_sorted_now(pods)] == [p.name for p in want]
    assert [p.name for p in order_victims(pods, timed_at_listing=False)] == [p.name for p in want]
