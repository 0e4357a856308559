"""The GPU device table: kept current through the cache observer hooks, never oversubscribed."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import gpu as g
from kubesched.api import objects as api
from kubesched.state import gpus
from kubesched.state.cache import ClusterState
from kubesched.testing import make_node, make_pod


def gpu_node(name: str, count: int = 4, model: str = "A100", topo: dict | None = None) -> api.Node:
    b = make_node(name).cap(cpu="64", memory="256Gi", pods=110)
    b = b.res({g.GPU_RESOURCE: count, g.GPU_MILLI_RESOURCE: count * 1000})
    node = b.labels(**{g.GPU_PRODUCT_LABEL: model}).obj()
    if topo:
        node.annotations[g.GPU_TOPOLOGY_ANNOTATION] = json.dumps(topo)
    return node


def gpu_pod(name: str, node: str = "", whole: int = 0, milli: int = 0, index: str = "") -> api.Pod:
    res = {g.GPU_RESOURCE: whole} if whole else {g.GPU_MILLI_RESOURCE: milli} if milli else {}
    pod = make_pod(name).req(cpu="1").res(res).obj()
    pod.node_name = node
    if index:
        pod.annotations[g.GPU_INDEX_ANNOTATION] = index
    return pod


def test_table_follows_nodes_and_pods() -> None:
    cl = ClusterState()
    cl.add_node(gpu_node("a", 4, topo={"numa": [0, 0, 1, 1]}))
    t = gpus.table_for(cl)
    assert gpus.table_for(cl) is t  # one table per cluster
    row = cl.nodes.row_of["a"]
    assert t.count[row] == 4 and t.models[t.model[row]] == "A100"
    assert t.numa[row, :4].tolist() == [0, 0, 1, 1]
    cl.add_pod(gpu_pod("w", "a", whole=2, index="2,3"))  # annotation honoured
    cl.add_pod(gpu_pod("s", "a", milli=300))  # provisional: tightest GPU
    assert t.free[row, :4].tolist() == [700, 1000, 0, 0]
    assert t.indices_of("default/w") == (2, 3)
    assert t.tags[row, 0] == 1 and t.tags[row, 2] == 1
    cl.add_node(gpu_node("b", 2))  # a node added after the table sees it too
    assert t.count[cl.nodes.row_of["b"]] == 2
    cl.remove_pod("default/w")
    assert t.free[row, :4].tolist() == [700, 1000, 1000, 1000]
    cl.update_node(gpu_node("a", 4, model="H100"))  # update keeps the assignments
    assert t.free[row, :4].tolist() == [700, 1000, 1000, 1000]
    assert t.models[t.model[row]] == "H100"


def test_annotation_that_does_not_fit_is_replaced() -> None:
    cl = ClusterState()
    cl.add_node(gpu_node("a", 2))
    t = gpus.table_for(cl)
    cl.add_pod(gpu_pod("x", "a", whole=1, index="0"))
    cl.add_pod(gpu_pod("y", "a", whole=1, index="0"))  # GPU 0 taken: gets GPU 1
    assert t.indices_of("default/y") == (1,)
    cl.add_pod(gpu_pod("z", "a", whole=1))  # no GPU left: holds nothing
    assert "default/z" in t.unplaced and t.indices_of("default/z") is None
    assert (t.free >= 0).all()


def test_reassign_refuses_what_does_not_fit() -> None:
    cl = ClusterState()
    cl.add_node(gpu_node("a", 2))
    t = gpus.table_for(cl)
    req = g.GpuRequest(1, 600)
    assert t.reassign("p", 0, (0,), req) and t.free[0, :2].tolist() == [400, 1000]
    assert not t.reassign("q", 0, (0,), req)  # 400 left on GPU 0
    assert not t.reassign("p", 0, (5,), req)  # no such GPU: p keeps GPU 0
    assert t.indices_of("p") == (0,)
    assert t.reassign("p", 0, (1,), req) and t.free[0, :2].tolist() == [1000, 400]
    assert t.reassign("p", 0, None, req) and t.free[0, :2].tolist() == [1000, 1000]


ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "remove", "reassign"]),
        st.integers(0, 5),  # pod id
        st.integers(0, 1),  # node
        st.sampled_from([(1, 250), (1, 600), (1, 1000), (2, 1000), (3, 1000)]),
        st.lists(st.integers(0, 3), min_size=1, max_size=3),
    ),
    max_size=30,
)


@settings(max_examples=80, deadline=None)
@given(ops)
def test_never_oversubscribes(seq: list[tuple[str, int, int, tuple[int, int], list[int]]]) -> None:
    cl = ClusterState()
    cl.add_node(gpu_node("n0", 4))
    cl.add_node(gpu_node("n1", 2))
    t = gpus.table_for(cl)
    for op, pid, node, (count, milli), idx in seq:
        key = f"default/p{pid}"
        if op == "add" and key not in cl.pods:
            whole, share = (count, 0) if milli == 1000 else (0, milli)
            index = ",".join(map(str, idx))
            cl.add_pod(gpu_pod(f"p{pid}", f"n{node}", whole=whole, milli=share, index=index))
        elif op == "remove":
            cl.remove_pod(key)
        elif op == "reassign" and key in t.assigned:
            a = t.assigned[key]
            req = g.GpuRequest(len(a.indices), a.milli)
            t.reassign(key, a.row, tuple(idx[: len(a.indices)]), req)
        assert (t.free >= 0).all() and (t.free <= 1000).all()
        # free equals capacity minus what the assignments hold
        want = np.where(np.arange(t.width) < t.count[:, None], 1000, 0)
        for a in t.assigned.values():
            for i in a.indices:
                want[a.row, i] -= a.milli
        assert (t.free == want).all()
