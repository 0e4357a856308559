"""The cold-start path -- Pods parsed on the quick path, bound Pods loaded in bulk, plugin
indexes filled in one call -- gives the same cache, the same plugin state and the same
``explain`` answer as parsing every Pod the full way and adding it with ``add_pod``, on
small random clusters with every feature the bulk path treats on its own
(:mod:`tests.coldstart_gen`)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

import kubesched
from kubesched.api import podquick
from kubesched.api.parse import parse_objects, split_documents
from kubesched.plugins.interpodaffinity.index import AffinityIndex
from kubesched.plugins.podtopologyspread.constraints import Selector
from kubesched.plugins.podtopologyspread.counts import match_counts
from kubesched.state.cache import CacheError, ClusterState
from tests.coldstart_gen import incoming, snapshot

SEEDS = range(12)


def one_by_one(self: ClusterState, pods: list[Any]) -> list[Any]:
    """``add_bound_pods`` the slow way: ``add_pod`` per Pod."""
    missing = []
    for pod in pods:
        try:
            self.add_pod(pod)
        except CacheError:
            missing.append(pod)
    return missing


@pytest.fixture
def slow_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(podquick, "quick_pod", lambda *args: None)
    monkeypatch.setattr(ClusterState, "add_bound_pods", one_by_one)


def _answers(seed: int) -> list[dict[str, Any]]:
    snap = snapshot(seed)
    return [kubesched.explain(copy.deepcopy(snap), incoming(seed + k)) for k in range(3)]


@pytest.mark.parametrize("seed", SEEDS)
def test_explain_answers_are_the_same(seed: int, request: pytest.FixtureRequest) -> None:
    fast = _answers(seed)
    request.getfixturevalue("slow_path")
    assert _answers(seed) == fast


WEB = Selector((("app", "In", ("web",)),))


def _cluster(seed: int, bulk: bool) -> tuple[ClusterState, AffinityIndex]:
    parsed = parse_objects(split_documents([snapshot(seed)]))
    cluster = ClusterState()
    index = AffinityIndex(cluster)  # observing before the Pods arrive
    for node in parsed.nodes:
        cluster.add_node(node)
    match_counts(cluster).node_counts(cluster, "default", WEB)  # a spread counter kept current
    live = [p for p in parsed.pods if p.node_name and p.phase not in ("Succeeded", "Failed")]
    if bulk:
        cluster.add_bound_pods(live)
    else:
        one_by_one(cluster, live)
    return cluster, index


@pytest.mark.parametrize("seed", SEEDS)
def test_node_table_and_plugin_state_are_the_same(seed: int) -> None:
    (one, ione), (bulk, ibulk) = _cluster(seed, False), _cluster(seed, True)
    a, b = one.nodes, bulk.nodes
    assert a.resources == b.resources and a.sparse.keys() == b.sparse.keys()
    for name in ("requested", "nonzero_requested", "pod_count", "generation"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for name in a.sparse:
        np.testing.assert_array_equal(
            a.resource_values(name, np.arange(3))[1], b.resource_values(name, np.arange(3))[1]
        )
    assert {k: v.tolist() for k, v in a.host_ports.items()} == {
        k: v.tolist() for k, v in b.host_ports.items()
    }
    assert one.pods.keys() == bulk.pods.keys() and one.version == bulk.version
    assert [r.sparse for r in one.pods.values()] == [r.sparse for r in bulk.pods.values()]
    # InterPodAffinity's index: the same entries, term groups and counts.
    assert ione._pods == ibulk._pods and ione.pod_namespaces == ibulk.pod_namespaces
    for g1, g2 in zip(ione.groups, ibulk.groups, strict=True):
        assert {k: (c.rows, c.total) for k, c in g1.items()} == {
            k: (c.rows, c.total) for k, c in g2.items()
        }
    # PodTopologySpread's counts: one kept current through the load, one made after it.
    for ns in ("default", "team"):
        np.testing.assert_array_equal(
            match_counts(one).node_counts(one, ns, WEB),
            match_counts(bulk).node_counts(bulk, ns, WEB),
        )


def test_the_generated_clusters_have_every_feature() -> None:
    """The equivalence above means something only if the clusters have what it is about."""
    pods = [o for s in SEEDS for o in snapshot(s)["items"] if o["kind"] == "Pod"]
    spec_keys = {k for p in pods for k in p["spec"]}
    assert {"affinity", "topologySpreadConstraints", "volumes", "resourceClaims"} <= spec_keys
    assert {"initContainers", "hostNetwork", "tolerations"} <= spec_keys
    assert any("deletionTimestamp" in p["metadata"] for p in pods)
    assert {"Succeeded", "Failed", "Pending", "Running"} <= {p["status"]["phase"] for p in pods}
    assert any(p["spec"].get("nodeName") == "n6" for p in pods)  # a node the List lacks
    assert all(_cluster(s, True)[0].nodes.sparse for s in SEEDS)  # sparse columns
    quick = [podquick.quick_pod(p) for p in pods]
    assert 0 < sum(q is None for q in quick) < len(pods) // 2  # both paths taken
