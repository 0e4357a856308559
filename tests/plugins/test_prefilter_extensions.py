"""PreFilterExtensions (AddPod / RemovePod) of PodTopologySpread and InterPodAffinity.

Upstream ``TestPreFilterStateAddPod`` / ``TestPreFilterStateRemovePod`` (podtopologyspread
``filtering_test.go``, v1.34) as data; a property check that adding or removing one Pod on one
node gives the state a from-scratch PreFilter computes with that Pod really there (both
plugins); and the preemption dry-run and nominated-Pod cases that need the extensions
(upstream ``TestDryRunPreemption``: "pod with anti-affinity is preempted", "preemption to
resolve pod topology spread filter failure").
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import objects as api
from kubesched.framework.interface import CycleState, Handle
from kubesched.plugins import interpodaffinity as ipa
from kubesched.plugins import podtopologyspread as pts
from kubesched.plugins.defaultpreemption import dryrun, pdb
from kubesched.plugins.interpodaffinity.plugin import _PRE_FILTER_KEY as IPA_KEY
from kubesched.plugins.podtopologyspread.plugin import _PRE_FILTER_KEY as PTS_KEY
from kubesched.testing import make_cluster
from tests.plugins._defaultpreemption import HIGH, LOW, MID, SMALL, framework, prefiltered
from tests.plugins._defaultpreemption import pod as prio_pod
from tests.plugins._defaultpreemption import scheduler as make_scheduler
from tests.plugins.test_podtopologyspread_filtering import (
    BAR,
    FOO,
    node,
    placed,
    pod,
    tsc,
)

AB = [node("node-a", zone="zone1", node="node-a"), node("node-b", zone="zone1", node="node-b")]
AX = [node("node-a", zone="zone1", node="node-a"), node("node-x", zone="zone2", node="node-x")]
ABX = [*AB, node("node-x", zone="zone2", node="node-x")]
NOT_BAR = api.NodeAffinity(
    required=(api.NodeSelectorTerm((api.Requirement("foo", "NotIn", ("bar",)),)),)
)
AFFINITY_NODES = [
    node("node-a", zone="zone1", node="node-a", foo="bar"),
    node("node-b", zone="zone2", node="node-b", foo=""),
]


def _pts_state(p: api.Pod, nodes: list[api.Node], pods: list[api.Pod]) -> tuple[Any, Any, Any]:
    cluster = make_cluster(nodes, pods)
    plugin = pts.new(None, Handle(cluster))
    state = CycleState()
    _, status = plugin.pre_filter(state, p, cluster)
    assert status.is_success()
    return plugin, state, cluster


# (name, preemptor, added / removed Pod, existing Pods, nodes, counts per constraint, minimums)
ADD = [
    (
        "node a and b both impact current min match",
        pod({"foo": ""}, tsc(1, "node", FOO)),
        placed("p-a1@node-a", foo=""),
        [],
        AB,
        [{"node-a": 1, "node-b": 0}],
        [0],
    ),
    (
        "only node a impacts current min match",
        pod({"foo": ""}, tsc(1, "node", FOO)),
        placed("p-a1@node-a", foo=""),
        [placed("p-b1@node-b", foo="")],
        AB,
        [{"node-a": 1, "node-b": 1}],
        [1],
    ),
    (
        "add a pod in a different namespace doesn't change the counts",
        pod({"foo": ""}, tsc(1, "node", FOO)),
        placed("p-a1@node-a", "ns1", foo=""),
        [placed("p-b1@node-b", foo="")],
        AB,
        [{"node-a": 0, "node-b": 1}],
        [0],
    ),
    (
        "add pod on non-critical node",
        pod({"foo": ""}, tsc(1, "node", FOO)),
        placed("p-b2@node-b", foo=""),
        [placed("p-b1@node-b", foo="")],
        AB,
        [{"node-a": 0, "node-b": 2}],
        [0],
    ),
    (
        "node a and x both impact the minimum on zone and node",
        pod({"foo": ""}, tsc(1, "zone", FOO), tsc(1, "node", FOO)),
        placed("p-a1@node-a", foo=""),
        [],
        AX,
        [{"zone1": 1, "zone2": 0}, {"node-a": 1, "node-x": 0}],
        [0, 0],
    ),
    (
        "only node a impacts the minimum on zone and node",
        pod({"foo": ""}, tsc(1, "zone", FOO), tsc(1, "node", FOO)),
        placed("p-a1@node-a", foo=""),
        [placed("p-x1@node-x", foo="")],
        AX,
        [{"zone1": 1, "zone2": 1}, {"node-a": 1, "node-x": 1}],
        [1, 1],
    ),
    (
        "node a impacts the node minimum, node x the zone minimum",
        pod({"foo": ""}, tsc(1, "zone", FOO), tsc(1, "node", FOO)),
        placed("p-a1@node-a", foo=""),
        [
            placed("p-b1@node-b", foo=""),
            placed("p-b2@node-b", foo=""),
            placed("p-x1@node-x", foo=""),
        ],
        ABX,
        [{"zone1": 3, "zone2": 1}, {"node-a": 1, "node-b": 2, "node-x": 1}],
        [1, 1],
    ),
    (
        "constraints with different selectors, node a impacts the zone only",
        pod({"foo": "", "bar": ""}, tsc(1, "zone", FOO), tsc(1, "node", BAR)),
        placed("p-a1@node-a", foo=""),
        [
            placed("p-b1@node-b", foo="", bar=""),
            placed("p-x1@node-x", foo="", bar=""),
            placed("p-x2@node-x", bar=""),
        ],
        ABX,
        [{"zone1": 2, "zone2": 1}, {"node-a": 0, "node-b": 1, "node-x": 2}],
        [1, 0],
    ),
    (
        "constraints with different selectors, node a impacts both",
        pod({"foo": "", "bar": ""}, tsc(1, "zone", FOO), tsc(1, "node", BAR)),
        placed("p-a1@node-a", foo="", bar=""),
        [
            placed("p-b1@node-b", bar=""),
            placed("p-x1@node-x", foo="", bar=""),
            placed("p-x2@node-x", bar=""),
        ],
        ABX,
        [{"zone1": 1, "zone2": 1}, {"node-a": 1, "node-b": 1, "node-x": 2}],
        [1, 1],
    ),
    (
        "a pod added on a node the preemptor's node affinity excludes does not count",
        pod({"foo": ""}, tsc(1, "zone", FOO), node_affinity=NOT_BAR),
        placed("p-a1@node-a", foo="", zone="zone1"),
        [placed("p-a2@node-a", foo="", zone="zone1"), placed("p-b1@node-b", foo="", zone="zone2")],
        AFFINITY_NODES,
        [{"zone2": 1}],
        [1],
    ),
]

REMOVE = [
    (
        "the removed pod lowers its node's domain",
        pod({"foo": ""}, tsc(1, "zone", FOO)),
        placed("p-a1@node-a", foo=""),
        [
            placed("p-a1@node-a", foo=""),
            placed("p-a2@node-a", foo=""),
            placed("p-x1@node-x", foo=""),
        ],
        AX,
        [{"zone1": 1, "zone2": 1}],
        [1],
    ),
    (
        "removing the last pod of the minimum domain lowers the minimum",
        pod({"foo": ""}, tsc(1, "zone", FOO), tsc(1, "node", FOO)),
        placed("p-x1@node-x", foo=""),
        [
            placed("p-a1@node-a", foo=""),
            placed("p-b1@node-b", foo=""),
            placed("p-x1@node-x", foo=""),
        ],
        ABX,
        [{"zone1": 2, "zone2": 0}, {"node-a": 1, "node-b": 1, "node-x": 0}],
        [0, 0],
    ),
    (
        "a removed pod the selector does not match changes nothing",
        pod({"foo": ""}, tsc(1, "zone", FOO)),
        placed("p-a2@node-a", bar=""),
        [placed("p-a1@node-a", foo=""), placed("p-a2@node-a", bar="")],
        AX,
        [{"zone1": 1, "zone2": 0}],
        [0],
    ),
]


@pytest.mark.parametrize(
    ("op", "name", "preemptor", "other", "pods", "nodes", "counts", "minimums"),
    [("add", *c) for c in ADD] + [("remove", *c) for c in REMOVE],
    ids=[c[0] for c in ADD] + [c[0] for c in REMOVE],
)
def test_pts_state_add_and_remove(
    op: str,
    name: str,
    preemptor: api.Pod,
    other: api.Pod,
    pods: list[api.Pod],
    nodes: list[api.Node],
    counts: list[dict[str, int]],
    minimums: list[int],
) -> None:
    plugin, state, cluster = _pts_state(preemptor, nodes, pods)
    row = cluster.nodes.row_of[other.node_name]
    update = plugin.pre_filter_add_pod if op == "add" else plugin.pre_filter_remove_pod
    assert update(state, preemptor, other, row, cluster).is_success()
    pre = state[PTS_KEY]
    assert pre.match_nums(cluster) == counts
    assert [hc.min_match for hc in pre.constraints] == minimums


# ------------------------------------------------------------------ property: == recount
LABELS = st.fixed_dictionaries({}, optional={"foo": st.just(""), "bar": st.just("")})
NODES4 = [
    node("n0", zone="z0", node="n0"),
    node("n1", zone="z0", node="n1"),
    node("n2", zone="z1", node="n2"),
    node("n3", zone="z2", node="n3"),
]


def _anti(*keys: str) -> api.PodAffinity:
    return api.PodAffinity(
        required=tuple(
            api.PodAffinityTerm(
                k, api.LabelSelector(match_expressions=(api.Requirement("foo", "Exists"),))
            )
            for k in keys
        )
    )


@st.composite
def scenes(draw: st.DrawFn) -> tuple[list[api.Pod], api.Pod, int]:
    n = draw(st.integers(0, 6))
    pods = []
    for i in range(n + 1):
        anti = draw(st.sampled_from([None, _anti("zone"), _anti("node")]))
        pods.append(
            api.Pod(
                name=f"e{i}",
                uid=f"e{i}",
                namespace=draw(st.sampled_from(["default", "default", "other"])),
                labels=draw(LABELS),
                node_name=f"n{draw(st.integers(0, 3))}",
                pod_anti_affinity=anti,
            )
        )
    return pods[:-1], pods[-1], draw(st.integers(0, 1))


INCOMING_PTS = pod({"foo": "", "bar": ""}, tsc(1, "zone", FOO), tsc(2, "node", BAR))
INCOMING_IPA = api.Pod(
    name="p",
    uid="p",
    labels={"foo": ""},
    pod_affinity=api.PodAffinity(
        required=(
            api.PodAffinityTerm(
                "zone", api.LabelSelector(match_expressions=(api.Requirement("bar", "Exists"),))
            ),
        )
    ),
    pod_anti_affinity=_anti("node"),
)


def _fresh(plugin_mod: Any, p: api.Pod, pods: list[api.Pod], key: str) -> tuple[Any, Any, Any]:
    cluster = make_cluster(NODES4, pods)
    plugin = plugin_mod.new(None, Handle(cluster))
    state = CycleState()
    _, status = plugin.pre_filter(state, p, cluster)
    return plugin, state.get(key) if status.is_success() else None, cluster


def _verdicts(plugin: Any, p: api.Pod, pre: Any, key: str, cluster: Any) -> list[int]:
    state = CycleState()
    state[key] = pre
    rows = np.arange(len(NODES4), dtype=np.int64)
    return plugin.filter(state, p, cluster, rows).codes.tolist()  # type: ignore[no-any-return]


@settings(max_examples=60, deadline=None)
@given(scenes())
def test_extensions_equal_a_recount(scene: tuple[list[api.Pod], api.Pod, int]) -> None:
    """Adding ``other`` via AddPod gives the Filter verdicts of a cluster that has it; removing
    it via RemovePod from that cluster gives the verdicts of the cluster without it."""
    pods, other, _ = scene
    for mod, incoming, key in ((pts, INCOMING_PTS, PTS_KEY), (ipa, INCOMING_IPA, IPA_KEY)):
        plugin, without, cluster = _fresh(mod, incoming, pods, key)
        plugin2, with_, cluster2 = _fresh(mod, incoming, [*pods, other], key)
        if without is None or with_ is None:
            continue  # PreFilter skipped on one side: the extensions are not called
        row = cluster.nodes.row_of[other.node_name]
        state = CycleState()
        state[key] = without
        assert plugin.pre_filter_add_pod(state, incoming, other, row, cluster).is_success()
        assert _verdicts(plugin, incoming, state[key], key, cluster) == _verdicts(
            plugin2, incoming, with_, key, cluster2
        )
        state2 = CycleState()
        state2[key] = with_
        assert plugin2.pre_filter_remove_pod(state2, incoming, other, row, cluster2).is_success()
        assert _verdicts(plugin2, incoming, state2[key], key, cluster2) == _verdicts(
            plugin, incoming, without, key, cluster
        )


# ------------------------------------------------------------------ preemption and nominated
def _zone_node(name: str, zone: str) -> api.Node:
    n = node(name, zone=zone, hostname=name)
    return api.Node(name, labels=n.labels, allocatable={"cpu": 500, "memory": 500, "pods": 32})


def _dry_run(
    nodes: list[api.Node], pods: list[api.Pod], preemptor: api.Pod
) -> dict[str, list[str]]:
    s, _ = make_scheduler(nodes, pods)
    table = s.cluster.nodes
    rows = np.asarray(sorted(table.row_of.values(), key=lambda r: table.names[r]), np.int64)
    before = table.requested.copy()
    got, _, errors = dryrun.dry_run_preemption(
        framework(s),
        prefiltered(s, preemptor),
        preemptor,
        s.cluster,
        rows,
        pdb.load_budgets(s.cluster),
        0,
        10,
    )
    assert errors == []
    assert (table.requested == before).all()
    return {c.node: sorted(v.name for v in c.victims) for c in got}


def test_dry_run_preempts_the_pod_whose_anti_affinity_rejects_the_preemptor() -> None:
    """Upstream "pod with anti-affinity is preempted": only p1.1 (whose required
    anti-affinity matches the preemptor) has to go; p1.2 is reprieved."""
    p11 = prio_pod("p1.1", LOW, SMALL, "node1", labels={"foo": ""})
    p11.pod_anti_affinity = api.PodAffinity(
        required=(
            api.PodAffinityTerm(
                "hostname",
                api.LabelSelector(match_expressions=(api.Requirement("foo", "Exists"),)),
            ),
        )
    )
    pods = [
        p11,
        prio_pod("p1.2", MID, SMALL, "node1"),
        prio_pod("p1.3", HIGH, SMALL, "node1"),
        prio_pod("p2", HIGH, SMALL, "node2"),
    ]
    nodes = [_zone_node("node1", "z"), _zone_node("node2", "z")]
    preemptor = prio_pod("p", HIGH, SMALL, labels={"foo": ""})
    assert _dry_run(nodes, pods, preemptor) == {"node1": ["p1.1"]}


def test_dry_run_resolves_a_topology_spread_failure() -> None:
    """Upstream "preemption to resolve pod topology spread filter failure"."""
    nodes = [
        _zone_node("node-a", "zone1"),
        _zone_node("node-b", "zone1"),
        _zone_node("node-x", "zone2"),
    ]
    foo = {"foo": ""}
    pods = [
        prio_pod("pod-a1", MID, node="node-a", labels=foo),
        prio_pod("pod-a2", LOW, node="node-a", labels=foo),
        prio_pod("pod-b1", LOW, node="node-b", labels=foo),
        prio_pod("pod-x1", HIGH, node="node-x", labels=foo),
        prio_pod("pod-x2", HIGH, node="node-x", labels=foo),
    ]
    preemptor = prio_pod("p", HIGH, labels=foo)
    preemptor.topology_spread_constraints = (tsc(1, "zone", FOO), tsc(1, "hostname", FOO))
    assert _dry_run(nodes, pods, preemptor) == {"node-a": ["pod-a2"], "node-b": ["pod-b1"]}


def test_nominated_pod_counts_for_topology_spread_and_anti_affinity() -> None:
    """A Pod nominated to node-a (priority >= the incoming one's) counts in node-a's domains
    during Filter: with hostname maxSkew 1 (or anti-affinity on hostname) node-a is rejected
    while the nomination stands; a lower-priority nomination does not count."""
    nodes = [_zone_node("node-a", "z"), _zone_node("node-b", "z")]
    s, _ = make_scheduler(nodes, [prio_pod("b1", LOW, node="node-b", labels={"bar": ""})])
    fwk = framework(s)
    spread = prio_pod("p", MID, labels={"foo": ""})
    spread.topology_spread_constraints = (tsc(1, "hostname", FOO), tsc(1, "hostname", BAR))
    anti = prio_pod("q", MID, labels={"foo": ""})
    anti.pod_anti_affinity = _anti("hostname")
    rows = np.asarray([s.cluster.nodes.row_of[n] for n in ("node-a", "node-b")], np.int64)
    for incoming in (spread, anti):
        assert (
            fwk.run_filter_with_nominated(prefiltered(s, incoming), incoming, rows).feasible.size
            == 2
        )
    s.queue.nominator.add(prio_pod("low", LOW, labels={"foo": ""}), "node-a")
    for incoming in (spread, anti):
        assert (
            fwk.run_filter_with_nominated(prefiltered(s, incoming), incoming, rows).feasible.size
            == 2
        )
    s.queue.nominator.add(prio_pod("nom", HIGH, labels={"foo": ""}), "node-a")
    for incoming in (spread, anti):
        out = fwk.run_filter_with_nominated(prefiltered(s, incoming), incoming, rows)
        assert [s.cluster.nodes.names[r] for r in out.feasible.tolist()] == ["node-b"]
        assert [s.cluster.nodes.names[r] for r in out.failed.tolist()] == ["node-a"]
