"""InterPodAffinity's ``candidate_rows``: the rows outside which a required anti-affinity
(the Pod's or an existing Pod's) rejects the Pod, so the search filters the others alone.

Generated clusters (hostname / zone keys, some nodes without a zone) with Pods carrying
required affinity and anti-affinity: every node Filter passes is a candidate, every node
left out fails Filter with an anti-affinity code, also once nominated Pods are counted on
it (PreFilterExtensions ``AddPod``, as ``run_filter_with_nominated`` does)."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.framework.interface import Code, CycleState
from kubesched.plugins.interpodaffinity import filtering
from kubesched.testing import In, drain, new_scheduler
from tests.plugins._interpodaffinity import N, P, T, cluster_of, plugin

COLORS = ("green", "blue")


def _cluster(rng: np.random.Generator) -> tuple[list[api.Node], list[api.Pod]]:
    nodes = []
    for i in range(int(rng.integers(4, 30))):
        labels = {"hostname": f"n{i}"}
        if rng.random() < 0.8:
            labels["zone"] = f"z{int(rng.integers(0, 4))}"
        nodes.append(N(f"n{i}", **labels))
    pods = []
    for i in range(int(rng.integers(0, 40))):
        color = COLORS[int(rng.integers(0, 2))]
        anti = [T("hostname", In("color", color))] if rng.random() < 0.5 else []
        node = nodes[int(rng.integers(0, len(nodes)))].name
        pods.append(P(f"e{i}", labels={"color": color}, node=node, anti=anti))
    return nodes, pods


def _incoming(rng: np.random.Generator) -> api.Pod:
    color = COLORS[int(rng.integers(0, 2))]
    key = "hostname" if rng.random() < 0.6 else "zone"
    anti = [T(key, In("color", color))] if rng.random() < 0.8 else []
    aff = [T("zone", In("color", COLORS[1]))] if rng.random() < 0.3 else []
    return P("in", labels={"color": color}, anti=anti, aff=aff)


@pytest.mark.parametrize("seed", range(40))
def test_candidates_keep_every_node_that_may_pass(seed: int) -> None:
    rng = np.random.default_rng(seed)
    nodes, pods = _cluster(rng)
    c = cluster_of(nodes, pods, {"default": {}})
    pl = plugin(c)
    pod = _incoming(rng)
    state = CycleState()
    _, pre = pl.pre_filter(state, pod, c)
    if pre.code != Code.SUCCESS:
        assert pl.candidate_rows(state, pod, c) is None
        return
    rows = c.nodes.order()
    codes = pl.filter(state, pod, c, rows).codes
    cand = pl.candidate_rows(state, pod, c)
    if cand is None:  # no anti-affinity check fails anywhere
        assert not bool((codes >= filtering.ANTI_AFFINITY_CODE).any())
        return
    assert cand is not None and cand.dtype == np.int64
    assert np.all(np.diff(cand) > 0)
    inside = np.isin(rows, cand)
    assert not bool((~inside & (codes == 0)).any())  # every passing node is a candidate
    assert bool((codes[~inside] != 0).all())
    # A node left out still fails with a nominated Pod counted on it.
    for row in rows[~inside].tolist():
        other = P("nom", labels={"color": COLORS[int(rng.integers(0, 2))]})
        again = state.clone()
        assert pl.pre_filter_add_pod(again, pod, other, row, c).is_success()
        one = np.asarray([row], dtype=np.int64)
        assert int(pl.filter(again, pod, c, one).codes[0]) != 0


def test_the_last_free_nodes_of_an_anti_affine_group() -> None:
    """The v1.37 ``SchedulingRequiredPodAntiAffinityWithNSSelector`` shape: one Pod per
    node repels the next, so only the empty nodes are candidates."""
    nodes = [N(f"n{i}", hostname=f"n{i}") for i in range(8)]
    pods = [
        P(
            f"e{i}",
            labels={"color": "green"},
            node=f"n{i}",
            anti=[T("hostname", In("color", "green"))],
        )
        for i in (0, 2, 3, 5, 6)
    ]
    c = cluster_of(nodes, pods, {"default": {}})
    pl = plugin(c)
    pod = P("in", labels={"color": "green"}, anti=[T("hostname", In("color", "green"))])
    state = CycleState()
    pl.pre_filter(state, pod, c)
    cand = pl.candidate_rows(state, pod, c)
    assert cand is not None
    live = np.intersect1d(cand, c.nodes.order())  # candidates span the table's capacity
    assert [c.nodes.names[r] for r in live.tolist()] == ["n1", "n4", "n7"]


def _anti_affine_run(narrow: bool) -> tuple[object, object, int]:
    """200 nodes in 8 zones; 260 Pods of two colours, each repelling its colour per node
    (some also per zone), and plain Pods in between: more than fit, so the last searches
    walk every node for the few free ones, and some Pods fail."""
    s, fake, _ = new_scheduler()
    if not narrow:
        for fwk in s.profiles.values():
            fwk.candidate_filters[:] = [False] * len(fwk.candidate_filters)
            fwk.candidate_at.clear()
    for i in range(200):
        s.on_node_add(N(f"n{i:03d}", hostname=f"n{i:03d}", zone=f"z{i % 8}"))
    for i in range(260):
        color = COLORS[i % 2]
        key = "zone" if i % 37 == 0 else "hostname"
        anti = [] if i % 5 == 4 else [T(key, In("color", color))]
        pod = P(f"p{i:03d}", labels={"color": color}, anti=anti)
        pod.creation_timestamp = i
        s.on_pod_add(pod)
    drain(s)
    return fake.binds, fake.failures, s.search.next_start_node_index


def test_the_search_places_alike_with_or_without_candidates() -> None:
    narrowed = _anti_affine_run(True)
    assert narrowed == _anti_affine_run(False)
    assert narrowed[1]  # some Pods found no node
