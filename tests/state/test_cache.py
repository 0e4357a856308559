"""The columnar cache: accounting, assume/forget symmetry, and recount equality."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import objects as api
from kubesched.state.cache import CacheError, ClusterState
from kubesched.testing import make_node, make_pod


def _cluster(n: int = 3) -> ClusterState:
    c = ClusterState(capacity=2)  # force growth
    for i in range(n):
        c.add_node(make_node(f"n{i}").cap(cpu="4", memory="8Gi", pods=10).obj())
    return c


def test_assume_then_forget_restores_every_column() -> None:
    c = _cluster()
    before = (c.nodes.requested.copy(), c.nodes.nonzero_requested.copy(), c.nodes.pod_count.copy())
    pod = make_pod("a").req(cpu="1500m", memory="1Gi").host_port(8080).obj()
    c.assume_pod(pod, "n1")
    row = c.nodes.row_of["n1"]
    assert c.nodes.requested[row, 0] == 1500
    assert c.nodes.pod_count[row] == 1
    assert c.nodes.host_ports[("0.0.0.0", "TCP", 8080)][row] == 1
    assert c.is_assumed(pod.key)
    c.forget_pod(pod)
    assert np.array_equal(c.nodes.requested, before[0])
    assert np.array_equal(c.nodes.nonzero_requested, before[1])
    assert np.array_equal(c.nodes.pod_count, before[2])
    assert c.nodes.host_ports[("0.0.0.0", "TCP", 8080)][row] == 0


def test_add_pod_confirms_an_assumed_pod_without_double_counting() -> None:
    c = _cluster()
    pod = make_pod("a").req(cpu="1").obj()
    c.assume_pod(pod, "n0")
    pod.node_name = "n0"
    c.add_pod(pod)
    assert not c.is_assumed(pod.key)
    assert c.nodes.requested[c.nodes.row_of["n0"], 0] == 1000


def test_add_pod_moves_an_assumed_pod_bound_elsewhere() -> None:
    c = _cluster()
    pod = make_pod("a").req(cpu="1").obj()
    c.assume_pod(pod, "n0")
    pod.node_name = "n2"
    c.add_pod(pod)
    assert c.nodes.requested[c.nodes.row_of["n0"], 0] == 0
    assert c.nodes.requested[c.nodes.row_of["n2"], 0] == 1000


def test_errors_for_unknown_node_and_double_assume() -> None:
    c = _cluster()
    pod = make_pod("a").obj()
    with pytest.raises(CacheError):
        c.assume_pod(pod, "missing")
    c.assume_pod(pod, "n0")
    with pytest.raises(CacheError):
        c.assume_pod(pod, "n1")
    with pytest.raises(CacheError):
        c.forget_pod(make_pod("never").obj())


def test_remove_node_drops_its_pods_and_row_is_reused() -> None:
    c = _cluster()
    c.add_pod(make_pod("a").req(cpu="1").node("n1").obj())
    gone = c.remove_node("n1")
    assert [p.name for p in gone] == ["a"]
    assert "default/a" not in c.pods
    assert [c.nodes.names[r] for r in c.nodes.order()] == ["n0", "n2"]
    c.add_node(make_node("n9").cap(cpu="1").labels(zone="z").obj())
    row = c.nodes.row_of["n9"]
    assert c.nodes.requested[row].sum() == 0 and c.nodes.pod_count[row] == 0
    assert [c.nodes.names[r] for r in c.nodes.order()] == ["n0", "n2", "n9"]


def test_extended_resources_grow_columns() -> None:
    c = _cluster(1)
    c.add_node(make_node("g").res({"cpu": "8", "nvidia.com/gpu": 8}).obj())
    c.add_pod(make_pod("t").res({"nvidia.com/gpu": 3}).node("g").obj())
    col = c.nodes.resource_index["nvidia.com/gpu"]
    row = c.nodes.row_of["g"]
    assert c.nodes.allocatable[row, col] == 8
    assert c.nodes.requested[row, col] == 3


def test_labels_interned_and_cleared_on_update() -> None:
    c = _cluster(1)
    node = make_node("x").labels(zone="a").obj()
    c.add_node(node)
    row = c.nodes.row_of["x"]
    assert c.nodes.label_column("zone")[row] == c.nodes.label_code("zone", "a")
    c.update_node(make_node("x").obj())
    assert c.nodes.label_column("zone")[row] == -1


OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "assume", "forget", "delete", "node_del", "node_add"]),
        st.integers(0, 5),
        st.integers(0, 4),
        st.integers(0, 3000),
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(OPS)
def test_columns_always_equal_a_recount(ops: list[tuple[str, int, int, int]]) -> None:
    """After any sequence of adds, assumes, forgets and deletes the columns equal a recount."""
    c = ClusterState(capacity=1)
    nodes = [f"n{i}" for i in range(5)]
    for n in nodes:
        c.add_node(make_node(n).cap(cpu="100", memory="100Gi", pods=1000).obj())
    for op, p, n, cpu in ops:
        key = f"default/p{p}"
        node = nodes[n]
        if op in ("add", "assume") and key not in c.pods and node in c.nodes.row_of:
            pod = make_pod(f"p{p}").req(cpu=f"{cpu}m").obj()
            if op == "add":
                pod.node_name = node
                c.add_pod(pod)
            else:
                c.assume_pod(pod, node)
        elif op == "forget" and c.is_assumed(key):
            c.forget_pod(c.pods[key].pod)
        elif op == "delete":
            c.remove_pod(key)
        elif op == "node_del" and node in c.nodes.row_of:
            c.remove_node(node)
        elif op == "node_add" and node not in c.nodes.row_of:
            c.add_node(make_node(node).cap(cpu="100", memory="100Gi", pods=1000).obj())
    for name, row in c.nodes.row_of.items():
        recs = [r for r in c.pods.values() if r.node == name]
        assert c.nodes.pod_count[row] == len(recs)
        assert c.nodes.requested[row, 0] == sum(r.pod.requests.get(api.CPU, 0) for r in recs)
        assert c.nodes.nonzero_requested[row, 0] == sum(r.nonzero[0] for r in recs)
    assert c.overcommitted_nodes() == []


def _owned(name: str, *owners: tuple[str, bool]) -> dict[str, object]:
    refs = [{"kind": "Pod", "name": uid, "uid": uid, "controller": ctl} for uid, ctl in owners]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"namespace": "ns", "name": name, "ownerReferences": refs},
    }


def test_objects_are_indexed_by_their_controller_owner_through_updates_and_deletes() -> None:
    c = ClusterState()
    c.apply_object(_owned("a", ("p1", True)))
    c.apply_object(_owned("b", ("p1", True), ("p2", False)))
    c.apply_object(_owned("c", ("p2", True)))
    assert list(c.controlled["p1"]) == [("ResourceClaim", "ns/a"), ("ResourceClaim", "ns/b")]
    assert list(c.controlled["p2"]) == [("ResourceClaim", "ns/c")]
    c.apply_object(_owned("a", ("p2", True)))  # the controller changes
    assert list(c.controlled["p1"]) == [("ResourceClaim", "ns/b")]
    assert set(c.controlled["p2"]) == {("ResourceClaim", "ns/a"), ("ResourceClaim", "ns/c")}
    c.apply_object(_owned("b"), deleted=True)
    c.apply_object(_owned("c", ("p2", True)))  # an update keeps the entry
    assert "p1" not in c.controlled
    c.apply_object(_owned("a"), deleted=True)
    c.apply_object(_owned("c"), deleted=True)
    assert c.controlled == {}


COUNT_OPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["add", "assume", "forget", "confirm", "finish", "delete", "node_del", "node_add"]
        ),
        st.integers(0, 7),
        st.integers(0, 3),
    ),
    max_size=80,
)


@settings(max_examples=80, deadline=None)
@given(COUNT_OPS)
def test_the_assumed_count_equals_a_walk_of_the_pods(ops: list[tuple[str, int, int]]) -> None:
    """``assumed_count`` (the ``assumed_pods`` gauge, kept as Pods are assumed, forgotten,
    confirmed by the watch, moved, deleted or dropped with their node) equals a count of the
    cached Pods marked assumed after every step."""
    c = ClusterState(capacity=1)
    nodes = [f"n{i}" for i in range(4)]
    for n in nodes:
        c.add_node(make_node(n).cap(cpu="100", memory="100Gi", pods=1000).obj())
    for op, p, n in ops:
        key = f"default/p{p}"
        node = nodes[n]
        if op == "assume" and key not in c.pods and node in c.nodes.row_of:
            c.assume_pod(make_pod(f"p{p}").req(cpu="100m").obj(), node)
        elif op in ("add", "confirm") and node in c.nodes.row_of:
            rec = c.pods.get(key)
            if op == "confirm" and rec is not None:
                node = rec.node  # the watch's bound Pod confirms the assumed copy
            pod = make_pod(f"p{p}").req(cpu="100m").obj()
            pod.node_name = node  # "add" of an assumed Pod on another node moves it
            c.add_pod(pod)
        elif op == "forget" and c.is_assumed(key):
            c.forget_pod(c.pods[key].pod)
        elif op == "finish" and key in c.pods:
            c.finish_binding(c.pods[key].pod)
        elif op == "delete":
            c.remove_pod(key)
        elif op == "node_del" and node in c.nodes.row_of:
            c.remove_node(node)
        elif op == "node_add" and node not in c.nodes.row_of:
            c.add_node(make_node(node).cap(cpu="100", memory="100Gi", pods=1000).obj())
        assert c.assumed_count == sum(1 for r in c.pods.values() if r.assumed), (op, p, n)
