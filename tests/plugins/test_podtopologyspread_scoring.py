"""PodTopologySpread PreScore / Score / NormalizeScore, from upstream ``scoring_test.go``
(v1.34: TestPodTopologySpreadScore, TestPreScoreStateEmptyNodes weights, TestPreScoreSkip)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.framework.interface import CycleState, Handle
from kubesched.plugins import podtopologyspread as pts
from kubesched.testing import make_cluster
from tests.plugins.test_podtopologyspread_filtering import (
    BAR,
    FOO,
    TAINT,
    foo_pods,
    node,
    placed,
    pod,
    tsc,
)

SA = "ScheduleAnyway"
HOST = "kubernetes.io/hostname"


def hn(name: str, **labels: str) -> api.Node:
    return node(name, **{HOST: name}, **labels)


def hz(name: str, zone: str) -> api.Node:
    return hn(name, zone=zone)


def run_score(
    p: api.Pod,
    nodes: list[api.Node],
    failed: list[api.Node],
    pods: list[api.Pod],
    args: Any = None,
    services: Any = None,
) -> tuple[Any, dict[str, int], CycleState]:
    cluster = make_cluster([*nodes, *failed], pods)
    if services is not None:
        cluster.services = services  # type: ignore[attr-defined]
    plugin = pts.new(args, Handle(cluster))
    rows = np.asarray([cluster.nodes.row_of[n.name] for n in nodes], dtype=np.int64)
    state = CycleState()
    status = plugin.pre_score(state, p, cluster, rows)
    if not status.is_success():
        return status, {}, state
    scores = plugin.score(state, p, cluster, rows)
    plugin.normalize_score(state, p, scores)
    return status, dict(zip([n.name for n in nodes], scores.tolist(), strict=True)), state


HOST_FOO = pod({"foo": ""}, tsc(1, HOST, FOO, SA))
P2103 = foo_pods(
    "p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-d1@node-d", "p-d2@node-d", "p-d3@node-d"
)
P4321 = foo_pods(
    "p-a1@node-a",
    "p-a2@node-a",
    "p-a3@node-a",
    "p-a4@node-a",
    "p-b1@node-b",
    "p-b2@node-b",
    "p-b3@node-b",
    "p-c1@node-c",
    "p-c2@node-c",
    "p-d1@node-d",
)
P4213 = foo_pods(
    "p-a1@node-a",
    "p-a2@node-a",
    "p-a3@node-a",
    "p-a4@node-a",
    "p-b1@node-b",
    "p-b2@node-b",
    "p-x1@node-x",
    "p-y1@node-y",
    "p-y2@node-y",
    "p-y3@node-y",
)
ABCD = [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")]
NODE_ABC = [
    node("node-a", node="node-a", foo=""),
    node("node-b", node="node-b", foo=""),
    node("node-c", node="node-c"),
]
P_ABC = foo_pods("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-c1@node-c")
SEL_AFF = api.NodeAffinity(required=(api.NodeSelectorTerm((api.Requirement("foo", "In", ("",)),)),))
MIXED = [
    placed("p-a1@node-a", foo=""),
    placed("p-b1@node-b", foo="", bar=""),
    placed("p-y1@node-y", foo=""),
    placed("p-y2@node-y", bar=""),
]
ZONES4 = [
    hz("node-a", "zone1"),
    hz("node-b", "zone1"),
    hz("node-x", "zone2"),
    hz("node-y", "zone2"),
]

CASES = [
    (
        "one constraint on node, no existing pods",
        HOST_FOO,
        [hn("node-a"), hn("node-b")],
        [],
        [],
        {"node-a": 100, "node-b": 100},
    ),
    (
        "one constraint on node, only one node is candidate",
        HOST_FOO,
        [hn("node-a")],
        [hn("node-b")],
        foo_pods("p-a1@node-a", "p-a2@node-a", "p-b1@node-b"),
        {"node-a": 100},
    ),
    (
        "one constraint on node, all nodes have the same number of matching pods",
        HOST_FOO,
        [hn("node-a"), hn("node-b")],
        [],
        foo_pods("p-a1@node-a", "p-b1@node-b"),
        {"node-a": 100, "node-b": 100},
    ),
    (
        "one constraint on node, all 4 nodes are candidates",
        HOST_FOO,
        ABCD,
        [],
        P2103,
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
    ),
    (
        "one constraint on node, null selector",
        pod({"foo": ""}, tsc(1, HOST, None, SA)),
        ABCD,
        [],
        P2103,
        {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        pod({"foo": ""}, tsc(2, HOST, FOO, SA)),
        ABCD,
        [],
        P2103,
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        pod({"foo": ""}, tsc(3, HOST, FOO, SA)),
        ABCD,
        [],
        P4321,
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates",
        HOST_FOO,
        [hn("node-a"), hn("node-b"), hn("node-x")],
        [hn("node-y")],
        P4213,
        {"node-a": 33, "node-b": 83, "node-x": 100},
    ),
    (
        "one constraint on node, 3 out of 4 candidates, one node doesn't match topology key",
        HOST_FOO,
        [hn("node-a"), node("node-b", n="node-b"), hn("node-x")],
        [hn("node-y")],
        P4213,
        {"node-a": 16, "node-b": 0, "node-x": 100},
    ),
    (
        "one constraint on zone, 3 out of 4 nodes are candidates",
        pod({"foo": ""}, tsc(1, "zone", FOO, SA)),
        ZONES4[:3],
        ZONES4[3:],
        P4213,
        {"node-a": 75, "node-b": 75, "node-x": 100},
    ),
    (
        "two Constraints on zone and node, 2 out of 4 nodes are candidates",
        pod({"foo": ""}, tsc(1, "zone", FOO, SA), tsc(1, HOST, FOO, SA)),
        [ZONES4[0], ZONES4[2]],
        [ZONES4[1], ZONES4[3]],
        foo_pods(
            "p-a1@node-a",
            "p-a2@node-a",
            "p-b1@node-b",
            "p-x1@node-x",
            "p-x2@node-x",
            "p-y1@node-y",
            "p-y2@node-y",
            "p-y3@node-y",
            "p-y4@node-y",
        ),
        {"node-a": 100, "node-x": 63},
    ),
    (
        "two Constraints on zone and node, with different labelSelectors",
        pod({"foo": "", "bar": ""}, tsc(1, "zone", FOO, SA), tsc(1, HOST, BAR, SA)),
        ZONES4,
        [],
        MIXED,
        {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
    ),
    (
        "two Constraints with different labelSelectors, some nodes have 0 pods",
        pod({"foo": "", "bar": ""}, tsc(1, "zone", FOO, SA), tsc(1, HOST, BAR, SA)),
        ZONES4,
        [],
        [
            placed("p-b1@node-b", bar=""),
            placed("p-x1@node-x", foo=""),
            placed("p-y1@node-y", foo="", bar=""),
        ],
        {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
    ),
    (
        "two Constraints with different labelSelectors, 3 out of 4 nodes are candidates",
        pod({"foo": "", "bar": ""}, tsc(1, "zone", FOO, SA), tsc(1, HOST, BAR, SA)),
        ZONES4[:3],
        ZONES4[3:],
        MIXED,
        {"node-a": 50, "node-b": 25, "node-x": 100},
    ),
    (
        "existing pods in a different namespace do not count",
        HOST_FOO,
        [hn("node-a"), hn("node-b")],
        [],
        [
            placed("p-a1@node-a", "ns1", foo=""),
            *foo_pods("p-a2@node-a", "p-b1@node-b", "p-b2@node-b"),
        ],
        {"node-a": 100, "node-b": 33},
    ),
    (
        "minDomains has no effect when ScheduleAnyway",
        pod({"foo": ""}, tsc(2, "node", FOO, SA, min_domains=10)),
        [
            node("node-a", node="node-a"),
            node("node-b", node="node-b"),
            node("node-c", node="node-c"),
        ],
        [],
        foo_pods("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-b2@node-b", "p-c1@node-c"),
        {"node-a": 75, "node-b": 75, "node-c": 100},
    ),
    (
        "NodeAffinityPolicy honored with labelSelectors",
        pod({"foo": ""}, tsc(1, "node", FOO, SA), node_selector={"foo": ""}),
        NODE_ABC,
        [],
        P_ABC,
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        pod(
            {"foo": ""},
            tsc(1, "node", FOO, SA, node_affinity_policy="Ignore"),
            node_selector={"foo": ""},
        ),
        NODE_ABC,
        [],
        P_ABC,
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    (
        "NodeAffinityPolicy honored with nodeAffinity",
        pod({"foo": ""}, tsc(1, "node", FOO, SA), node_affinity=SEL_AFF),
        NODE_ABC,
        [],
        P_ABC,
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    (
        "NodeAffinityPolicy ignored with nodeAffinity",
        pod(
            {"foo": ""},
            tsc(1, "node", FOO, SA, node_affinity_policy="Ignore"),
            node_affinity=SEL_AFF,
        ),
        NODE_ABC,
        [],
        P_ABC,
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    (
        "NodeTaintsPolicy honored",
        pod({"foo": ""}, tsc(1, "node", FOO, SA, node_taints_policy="Honor")),
        [
            node("node-a", node="node-a"),
            node("node-b", node="node-b"),
            node("node-c", (TAINT,), node="node-c"),
        ],
        [],
        P_ABC,
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    (
        "NodeTaintsPolicy ignored",
        pod({"foo": ""}, tsc(1, "node", FOO, SA)),
        [
            node("node-a", node="node-a"),
            node("node-b", node="node-b"),
            node("node-c", (TAINT,), node="node-c"),
        ],
        [],
        P_ABC,
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        pod(
            {"foo": "", "bar": ""},
            tsc(1, "zone", api.LabelSelector(), SA, match_label_keys=("foo",)),
            tsc(1, HOST, api.LabelSelector(), SA, match_label_keys=("bar",)),
        ),
        [
            hz("node-a", "zone1"),
            hz("node-b", "zone1"),
            hz("node-c", "zone2"),
            hz("node-d", "zone2"),
        ],
        [],
        [
            placed("p-a1@node-a", foo=""),
            placed("p-b1@node-b", foo="", bar=""),
            placed("p-y1@node-c", foo=""),
            placed("p-y2@node-c", bar=""),
        ],
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        pod(
            {"foo": "", "bar": "", "baz": ""},
            tsc(1, "zone", FOO, SA),
            tsc(1, HOST, BAR, SA, match_label_keys=("baz",)),
        ),
        [
            hz("node-a", "zone1"),
            hz("node-b", "zone1"),
            hz("node-c", "zone2"),
            hz("node-d", "zone2"),
        ],
        [],
        [
            placed("p-a1@node-a", foo=""),
            placed("p-b1@node-b", foo="", bar="", baz=""),
            placed("p-c1@node-c", foo=""),
            placed("p-c2@node-c", bar=""),
            placed("p-d3@node-c", bar="", baz=""),
        ],
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    ),
]


@pytest.mark.parametrize(
    ("p", "nodes", "failed", "pods", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_score(p: api.Pod, nodes: Any, failed: Any, pods: Any, want: dict[str, int]) -> None:
    status, got, _ = run_score(p, nodes, failed, pods)
    assert status.is_success()
    assert got == want
