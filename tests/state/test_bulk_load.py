"""``ClusterState.add_bound_pods`` (one pass, columns summed once) leaves the cache exactly
as ``add_pod`` one Pod at a time does, on random clusters."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import objects as api
from kubesched.state.cache import JOURNAL_LENGTH, CacheError, ClusterState, PodRecord
from kubesched.testing import make_node, make_pod

RESOURCES = ("cpu", "memory", "example.com/foo", "example.com/bar")


class _Recorder:
    """An observer that writes down what it hears."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, int]] = []

    def pod_added(self, rec: PodRecord) -> None:
        self.heard.append((rec.pod.key, rec.row))

    def pod_removed(self, rec: PodRecord) -> None:
        self.heard.append((f"-{rec.pod.key}", rec.row))

    def node_changed(self, row: int, old: api.Node | None, new: api.Node | None) -> None:
        pass


@st.composite
def clusters(draw: Any) -> tuple[list[api.Node], list[api.Pod]]:
    n_nodes = draw(st.integers(1, 8))
    nodes: list[api.Node] = []
    for i in range(n_nodes):
        nb = make_node(f"n{i}").cap(cpu="8", memory="16Gi", pods=110)
        if draw(st.booleans()):
            nb.res({"example.com/foo": draw(st.integers(0, 4))})
        nodes.append(nb.obj())
    pods: list[api.Pod] = []
    for j in range(draw(st.integers(0, 30))):
        pb = make_pod(f"p{j}", draw(st.sampled_from(("a", "b"))))
        for name in draw(st.lists(st.sampled_from(RESOURCES), unique=True, max_size=3)):
            pb.res({name: draw(st.integers(0, 3))})
        if draw(st.integers(0, 5)) == 0:
            pb.host_port(draw(st.sampled_from((80, 443))))
        # a node the cluster lacks now and then: left out by both ways
        pb.node(f"n{draw(st.integers(0, n_nodes))}")
        pods.append(pb.obj())
    return nodes, pods


def _build(nodes: list[api.Node], pods: list[api.Pod], bulk: bool) -> tuple[ClusterState, Any]:
    cluster = ClusterState()
    rec = _Recorder()
    cluster.observe(rec)
    for node in nodes:
        cluster.add_node(node)
    if bulk:
        missing = cluster.add_bound_pods(pods)
    else:
        for pod in pods:
            cluster.add_pod(pod)  # a Pod whose node is missing waits for it
        missing = [p for p in pods if p.key in cluster.ghosts.get(p.node_name, {})]
    return cluster, (rec.heard, [p.key for p in missing])


@settings(max_examples=150, deadline=None)
@given(clusters())
def test_bulk_equals_one_by_one(cluster: tuple[list[api.Node], list[api.Pod]]) -> None:
    nodes, pods = cluster
    one, heard_one = _build(nodes, pods, bulk=False)
    bulk, heard_bulk = _build(nodes, pods, bulk=True)
    assert heard_bulk == heard_one
    a, b = one.nodes, bulk.nodes
    assert a.resources == b.resources
    for name in ("requested", "allocatable", "nonzero_requested", "pod_count", "generation"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.host_ports.keys() == b.host_ports.keys()
    for port, counts in a.host_ports.items():
        np.testing.assert_array_equal(counts, b.host_ports[port])
    assert one.pods_on_node == bulk.pods_on_node
    assert one.ghosts == bulk.ghosts
    assert one.pods.keys() == bulk.pods.keys()
    for key, rec in one.pods.items():
        other = bulk.pods[key]
        assert (rec.node, rec.row, rec.nonzero, rec.assumed) == (
            other.node,
            other.row,
            other.nonzero,
            other.assumed,
        )
        width = len(a.resources)  # a vector may be shorter than R (zeros beyond it)
        np.testing.assert_array_equal(_padded(rec.request, width), _padded(other.request, width))
    assert one.version == bulk.version
    assert one.rows_changed_since(len(nodes)) == bulk.rows_changed_since(len(nodes))
    assert one.overcommitted_nodes() == bulk.overcommitted_nodes()


def _padded(vec: np.ndarray[Any, Any], width: int) -> np.ndarray[Any, Any]:
    out = np.zeros(width, dtype=np.int64)
    out[: vec.shape[0]] = vec
    return out


def test_bulk_refuses_a_pod_twice() -> None:
    cluster = ClusterState()
    cluster.add_node(make_node("n0").cap(cpu="1").obj())
    pod = make_pod("p").node("n0").obj()
    with pytest.raises(CacheError, match="already in the cache"):
        cluster.add_bound_pods([pod, pod])
    cluster.add_bound_pods([pod])
    with pytest.raises(CacheError, match="already in the cache"):
        cluster.add_bound_pods([pod])


@pytest.mark.parametrize("count", [JOURNAL_LENGTH - 3, 2 * JOURNAL_LENGTH + 7])
def test_bulk_keeps_the_journal_as_one_by_one_over_its_length(count: int) -> None:
    """The journal is bumped in slices: past its length it drops its older half at the same
    points as Pod-by-Pod bumps do."""
    nodes = [make_node(f"n{i}").cap(cpu="1000", pods=100_000).obj() for i in range(3)]
    pods = [make_pod(f"p{j}").node(f"n{j % 3}").obj() for j in range(count)]
    one, _ = _build(nodes, pods, bulk=False)
    bulk, _ = _build(nodes, pods, bulk=True)
    assert (one.version, one._journal._base, one._journal._entries) == (
        bulk.version,
        bulk._journal._base,
        bulk._journal._entries,
    )
    for since in (0, 3, one.version - 5, one.version - JOURNAL_LENGTH // 2 - 1):
        assert one.rows_changed_since(since) == bulk.rows_changed_since(since)
