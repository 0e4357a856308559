"""Result reuse under sampling (``percentageOfNodesToScore`` below 100 % of more than 100
nodes): a reused cycle walks the window upstream's next cycle filters, from the round-robin
index the last one left, and normalizes over that window's feasible nodes, so its placements
are the full path's; and a node dropped from an entry normalizes NodeAffinity's and
TaintToleration's scores again over the nodes left, as a fresh cycle does."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import objects as api
from kubesched.scheduler import Scheduler, batch
from kubesched.testing import FakeApi, drain, make_node, make_pod
from tests.scheduler.test_batch import _entry, scheduler

PREFERRED = api.NodeAffinity(
    preferred=(
        api.PreferredSchedulingTerm(5, api.NodeSelectorTerm((api.Requirement("ssd", "Exists"),))),
        api.PreferredSchedulingTerm(
            3, api.NodeSelectorTerm((api.Requirement("zone", "In", ("z1",)),))
        ),
    )
)


def _config(pct: int | None) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
    }
    if pct is not None:
        cfg["percentageOfNodesToScore"] = pct
    return cfg


def _cluster(s: Scheduler, nodes: int, pods_per_node: int) -> None:
    for i in range(nodes):
        b = make_node(f"n{i:04d}").cap(cpu="4" if i % 3 else "8", memory="16Gi")
        b = b.cap(pods=pods_per_node if i % 4 else 2 * pods_per_node)
        labels = {"zone": f"z{i % 3}"}
        if i % 7 == 0:
            labels["ssd"] = "true"
        b = b.label_map(labels)
        if i % 5 == 0:
            b = b.taint("soft", effect=api.PREFER_NO_SCHEDULE)
        s.on_node_add(b.obj())


def _run(
    batching: bool, pct: int | None, nodes: int, pods: int, per_node: int, preferred: bool
) -> tuple[FakeApi, Scheduler]:
    s, fake = scheduler(batching, _config(pct))
    _cluster(s, nodes, per_node)
    for i in range(pods):
        b = make_pod(f"p{i:04d}").req(cpu="100m", memory="100Mi").created(float(i))
        if preferred and i % 50 < 40:  # a run of other Pods in between
            b = b.affinity(PREFERRED)
        s.on_pod_add(b.obj())
    drain(s)
    return fake, s


@pytest.mark.parametrize(
    ("pct", "nodes", "preferred"),
    [(None, 300, False), (None, 300, True), (10, 150, True), (30, 400, True), (None, 1300, True)],
)
def test_sampled_reuse_places_as_the_full_path(
    pct: int | None, nodes: int, preferred: bool
) -> None:
    per_node = max(1, 700 // nodes)  # nodes fill up: entries drop them
    (full, s_full), (batched, s) = (
        _run(b, pct, nodes, 700, per_node, preferred) for b in (False, True)
    )
    assert full.binds == batched.binds
    assert s_full.search.next_start_node_index == s.search.next_start_node_index
    assert s.batch.attempts["hit"] > 400


def test_a_dropped_node_normalizes_node_only_scores_again() -> None:
    """Three nodes, all evaluated: the ssd node (NodeAffinity's raw 50) takes one Pod; the
    next Pod's NodeAffinity scores are normalized over the two left (a fresh cycle's: the
    busy z1 node's 3 becomes 100 and outweighs the empty node's free resources), where the
    entry kept them normalized over all three (6)."""
    preferred = api.NodeAffinity(
        preferred=(
            api.PreferredSchedulingTerm(
                50, api.NodeSelectorTerm((api.Requirement("ssd", "Exists"),))
            ),
            api.PreferredSchedulingTerm(
                3, api.NodeSelectorTerm((api.Requirement("zone", "In", ("z1",)),))
            ),
        )
    )
    runs = []
    for batching in (False, True):
        s, fake = scheduler(batching, _config(None))
        s.on_node_add(make_node("a").cap(cpu="4", memory="8Gi", pods=1).labels(ssd="1").obj())
        s.on_node_add(make_node("b").cap(cpu="4", memory="8Gi", pods=10).labels(zone="z1").obj())
        s.on_node_add(make_node("c").cap(cpu="4", memory="8Gi", pods=10).obj())
        s.on_pod_add(make_pod("busy").req(cpu="3500m", memory="7Gi").node("b").obj())
        for i in range(2):
            pod = make_pod(f"p{i}").req(cpu="100m").created(float(i)).affinity(preferred)
            s.on_pod_add(pod.obj())
        drain(s)
        runs.append((fake.binds, s))
    (full, _), (batched, s) = runs
    assert full == {"default/p0": "a", "default/p1": "b"}
    assert batched == full
    assert s.batch.attempts["hit"] == 1


def _sampled(s: Scheduler) -> batch.BatchEntry:
    entry = s.batch.entry
    assert entry is not None and entry.walk is not None and entry.positions is not None
    return entry


def test_the_window_is_the_next_walk() -> None:
    """Every node feasible: each window is the next ``to_find`` candidates from the index,
    wrapping around, and the index moves by as many."""
    s, _ = scheduler(True, _config(40))
    _cluster(s, 300, 30)
    for i in range(4):
        s.on_pod_add(make_pod(f"p{i}").req(cpu="100m").created(float(i)).obj())
    s.schedule_one()
    entry = _sampled(s)
    assert entry.walk is not None and entry.walk.to_find == 120
    assert entry.rows.size == 300 and (np.diff(entry.positions) > 0).all()
    at, found, processed = batch.window(entry, 250)
    assert (found, processed) == (120, 120)
    taken = batch.taken(entry.positions, at, found)
    assert taken.tolist() == [*range(250, 300), *range(70)]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_window_ties_are_the_picks_ties(data: st.DataObject) -> None:
    """The tied nodes of a window, wrapped or not, in the order the full path's pick
    draws over (increasing rows)."""
    f = data.draw(st.integers(1, 12))
    ascending = data.draw(st.booleans())
    rows = np.arange(f, dtype=np.int64) * 3
    if not ascending:
        rows = np.asarray(data.draw(st.permutations(rows.tolist())), dtype=np.int64)
    entry = _entry(rows.tolist(), [0] * f)
    entry.ascending = bool((np.diff(rows) > 0).all())
    at = data.draw(st.integers(0, f - 1))
    found = data.draw(st.integers(1, f))
    total = np.asarray(data.draw(st.lists(st.integers(0, 2), min_size=found, max_size=found)))
    window_rows = batch.taken(entry.rows, at, found)
    best = np.flatnonzero(total == total.max())
    expected = best[np.argsort(window_rows[best], kind="stable")]
    assert batch.window_ties(entry, total, at).tolist() == expected.tolist()
