"""Sparse resource columns: the same filter codes, reasons and scores as dense-only columns.

The node table holds a resource few nodes have sparse (``kubesched.state.sparse``); these
tests build the same random cluster twice -- every resource dense, and every extended
resource sparse (promoted to a dense column at a random row count) -- and compare what
NodeResourcesFit and BalancedAllocation answer, and what the scheduler places.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import objects as api
from kubesched.config import args as cfg
from kubesched.config.load import load_config
from kubesched.framework import interface as fw
from kubesched.plugins import noderesources_balanced as balanced
from kubesched.plugins import noderesources_fit as fit
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import Scheduler
from kubesched.state.cache import ClusterState
from kubesched.testing import FakeApi, VirtualClock, drain

EXT = tuple(f"example.com/dev-{i}" for i in range(5))
DENSE = {"max_dense_extended": 1000, "promote_rows": 1000}

amounts = st.dictionaries(st.sampled_from(EXT), st.integers(0, 3), max_size=3)
nodes_st = st.lists(
    st.tuples(st.integers(500, 4000), st.integers(1, 4), amounts), min_size=1, max_size=12
)


def _cluster(layout: dict[str, int], nodes: list[Any], pods: list[Any]) -> ClusterState:
    c = ClusterState()
    c.nodes.max_dense_extended = layout["max_dense_extended"]
    c.nodes.promote_rows = layout["promote_rows"]
    for i, (cpu, slots, ext) in enumerate(nodes):
        alloc = {api.CPU: cpu, api.MEMORY: 8 << 30, api.PODS: slots, **ext}
        c.add_node(api.Node(name=f"n{i}", allocatable=alloc))
    for i, (where, cpu, ext) in enumerate(pods):
        node = f"n{where % len(nodes)}"
        reqs = {api.CPU: cpu, api.MEMORY: 1 << 30, **ext}
        c.add_pod(api.Pod(name=f"r{i}", uid=f"r{i}", node_name=node, requests=reqs))
    return c


def _answers(c: ClusterState, pod: api.Pod, scored: tuple[str, ...]) -> list[Any]:
    """Per row: the Fit status (code, reasons) or None, Fit's and BalancedAllocation's
    raw scores over the configured resources ``scored``, and Fit's candidate rows."""
    specs = tuple(cfg.ResourceSpec(n, 1) for n in scored)
    fit_args = cfg.NodeResourcesFitArgs(scoring_strategy=cfg.ScoringStrategy(resources=specs))
    pl = fit.new(fit_args, fw.Handle(c))
    ba = balanced.new(cfg.NodeResourcesBalancedAllocationArgs(resources=specs), fw.Handle(c))
    state = fw.CycleState()
    pl.pre_filter(state, pod, c)
    rows = c.nodes.order()
    verdict = pl.filter(state, pod, c, rows)
    statuses = [
        None if k == 0 else (verdict.table[k].code, verdict.table[k].reasons)
        for k in verdict.codes.tolist()
    ]
    singles = [pl.filter(state, pod, c, rows[i : i + 1]).codes[0] == 0 for i in range(len(rows))]
    pl.pre_score(state, pod, c, rows)
    ba_state = fw.CycleState()
    ba.pre_score(ba_state, pod, c, rows)
    narrowed = pl.candidate_rows(state, pod, c)
    feasible = [r for r, s in zip(rows.tolist(), statuses, strict=True) if s is None]
    if narrowed is not None:  # a superset of the feasible rows
        assert set(feasible) <= set(narrowed.tolist())
    return [
        statuses,
        singles,
        pl.score(state, pod, c, rows).tolist(),
        ba.score(ba_state, pod, c, rows).tolist(),
    ]


@settings(max_examples=150, deadline=None)
@given(
    nodes=nodes_st,
    pods=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 800), amounts), max_size=10),
    incoming=st.tuples(st.integers(0, 3000), amounts),
    scored=st.lists(st.sampled_from((api.CPU, api.MEMORY, *EXT)), min_size=1, max_size=4),
    promote=st.sampled_from([2, 3, 1000]),
)
def test_dense_and_sparse_layouts_answer_alike(
    nodes: list[Any], pods: list[Any], incoming: Any, scored: list[str], promote: int
) -> None:
    sparse = {"max_dense_extended": 0, "promote_rows": promote}
    cpu, ext = incoming
    pod = api.Pod(name="in", uid="in", requests={api.CPU: cpu, **ext})
    names = tuple(dict.fromkeys(scored))
    dense_c, sparse_c = _cluster(DENSE, nodes, pods), _cluster(sparse, nodes, pods)
    assert not dense_c.nodes.sparse
    assert _answers(dense_c, pod, names) == _answers(sparse_c, pod, names)
    for name in EXT:  # the same sums, wherever they live
        rows = dense_c.nodes.order()
        want = dense_c.nodes.resource_values(name, rows)
        got = sparse_c.nodes.resource_values(name, sparse_c.nodes.order())
        assert all(np.array_equal(a, b) for a, b in zip(want, got, strict=True))
    for key in list(sparse_c.pods):  # removing every Pod leaves nothing requested
        sparse_c.remove_pod(key)
    for sp in sparse_c.nodes.sparse.values():
        assert not sp.req[: len(sp)].any()


def _scheduler(layout: dict[str, int]) -> tuple[Scheduler, FakeApi]:
    fake = FakeApi()
    cfg_ = load_config(None, known_plugins=known_plugin_names())
    s = Scheduler(cfg_, clock=VirtualClock(), api_client=fake)
    s.cluster.nodes.max_dense_extended = layout["max_dense_extended"]
    s.cluster.nodes.promote_rows = layout["promote_rows"]
    return s, fake


def test_the_scheduler_places_alike_with_either_layout() -> None:
    """300 nodes, each with its own device, every tenth a shared one and most a wide one:
    Pods asking for one node's device, the shared or the wide one, or nothing place the
    same, fail with the same messages, and the search looks at as many nodes (the
    round-robin start moves alike), whether the shared and wide resources are promoted to
    dense columns (at 20 rows) or stay sparse (the search then walks their rows alone)."""
    runs = []
    for promote in (0, 20, 1000):
        layout = {"max_dense_extended": 0, "promote_rows": promote} if promote else DENSE
        s, fake = _scheduler(layout)
        for i in range(300):
            alloc = {api.CPU: 4000, api.MEMORY: 8 << 30, api.PODS: 10, f"example.com/d{i}": 1}
            if i % 10 == 0:
                alloc["example.com/shared"] = 2
            if i % 6:
                alloc["example.com/wide"] = 3
            s.on_node_add(api.Node(name=f"n{i:03d}", allocatable=alloc))
        for i in range(500):
            reqs: dict[str, int] = {api.CPU: 100}
            if i % 4 == 0:
                reqs[f"example.com/d{(i * 7) % 320}"] = 1  # some name no node has
            elif i % 4 == 1:
                reqs["example.com/shared"] = 1
            elif i % 4 == 2:
                reqs["example.com/wide"] = 1
            pod = api.Pod(name=f"p{i:03d}", uid=f"p{i}", requests=reqs, creation_timestamp=i)
            s.on_pod_add(pod)
        drain(s)
        runs.append((fake.binds, fake.failures, s.search.next_start_node_index))
        table = s.cluster.nodes
        if promote == 20:
            assert set(table.resources[3:]) == {"example.com/shared", "example.com/wide"}
        if promote == 1000:
            assert len(table.resources) == 3 and len(table.sparse) > 300
    assert runs[0] == runs[1] == runs[2]
    failures = runs[0][1]
    assert any("Insufficient example.com/d" in m for _, m in failures.values())


def test_node_updates_and_removals_keep_sparse_entries_exact() -> None:
    """A node that stops advertising a sparse resource reads 0 there; a removed node's
    entries go, and a node reusing its row starts clean; a Pod accounted while its resource
    was sparse is taken off the dense column it was promoted to."""
    c = _cluster({"max_dense_extended": 0, "promote_rows": 3}, [], [])
    t = c.nodes
    dev = "example.com/dev-0"
    c.add_node(api.Node(name="a", allocatable={api.CPU: 1000, api.PODS: 5, dev: 2}))
    c.add_node(api.Node(name="b", allocatable={api.CPU: 1000, api.PODS: 5, dev: 1}))
    c.add_pod(api.Pod(name="p", uid="p", node_name="a", requests={dev: 1}))
    rows = np.asarray([t.row_of["a"], t.row_of["b"]], dtype=np.int64)
    assert [v.tolist() for v in t.resource_values(dev, rows)] == [[2, 1], [1, 0]]
    c.update_node(api.Node(name="b", allocatable={api.CPU: 1000, api.PODS: 5}))
    assert t.resource_values(dev, rows)[0].tolist() == [2, 0]
    assert t.sparse[dev].rows_with().tolist() == [t.row_of["a"]]
    row_a = t.row_of["a"]
    c.remove_pod("default/p")
    c.remove_node("a")
    assert len(t.sparse[dev]) == 0
    c.add_node(api.Node(name="c", allocatable={api.CPU: 1000, api.PODS: 5}))
    assert t.row_of["c"] == row_a and t.resource_at(dev, row_a) == (0, 0)
    for name in ("d", "e", "f"):  # the third row with it promotes it to a dense column
        c.add_node(api.Node(name=name, allocatable={api.CPU: 1000, api.PODS: 5, dev: 1}))
        if name == "d":
            c.add_pod(api.Pod(name="q", uid="q", node_name="d", requests={dev: 1}))
    assert dev in t.resource_index and dev not in t.sparse
    assert t.resource_at(dev, t.row_of["d"]) == (1, 1)
    c.remove_pod("default/q")  # its record says sparse; the amount leaves the dense column
    assert t.resource_at(dev, t.row_of["d"]) == (1, 0)
