"""PodTopologySpread Filter verdicts, from upstream ``TestSingleConstraint`` and
``TestMultipleConstraints`` (v1.34), plus minDomains, inclusion policies and reasons."""

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
    FOUR,
    TAINT,
    UU,
    S,
    U,
    foo_pods,
    node,
    placed,
    pod,
    run,
    tsc,
    zn,
)

ABXY = ("node-a", "node-b", "node-x", "node-y")


def codes(*cs: Any, names: tuple[str, ...] = ABXY) -> dict[str, Any]:
    return dict(zip(names, cs, strict=True))


SPREAD_2103 = foo_pods(
    "p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-y1@node-y", "p-y2@node-y", "p-y3@node-y"
)


def _terminating(spec: str) -> api.Pod:
    p = placed(spec, foo="")
    p.deletion_timestamp = 1.0
    return p


SINGLE = [
    ("no existing pods", pod({"foo": ""}, tsc(1, "zone", FOO)), FOUR, [], codes(S, S, S, S)),
    (
        "terminating Pods should be excluded",
        pod({"foo": ""}, tsc(1, "node", FOO)),
        [node("node-a", node="node-a"), node("node-b", node="node-b")],
        [_terminating("p-a@node-a"), placed("p-b@node-b", foo="")],
        codes(S, U, names=("node-a", "node-b")),
    ),
    (
        "no existing pods, incoming pod doesn't match itself",
        pod({"foo": ""}, tsc(1, "zone", BAR)),
        FOUR,
        [],
        codes(S, S, S, S),
    ),
    (
        "existing pods in a different namespace do not count",
        pod({"foo": ""}, tsc(1, "zone", FOO)),
        FOUR,
        [
            placed("p-a1@node-a", "ns1", foo=""),
            placed("p-b1@node-a", "ns2", foo=""),
            placed("p-x1@node-x", foo=""),
            placed("p-y1@node-y", foo=""),
        ],
        codes(S, S, U, U),
    ),
    (
        "pods spread across zones as 3/3, all nodes fit",
        pod({"foo": ""}, tsc(1, "zone", FOO)),
        FOUR,
        SPREAD_2103,
        codes(S, S, S, S),
    ),
    (
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        pod({"foo": ""}, tsc(1, "zone", FOO)),
        [
            zn("node-a", "zone1"),
            node("node-b", zon="zone1", node="node-b"),
            zn("node-x", "zone2"),
            zn("node-y", "zone2"),
        ],
        foo_pods("p-a1@node-a", "p-b1@node-b", "p-x1@node-x", "p-y1@node-y"),
        codes(S, UU, U, U),
    ),
    (
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        pod({"foo": ""}, tsc(1, "rack", FOO)),
        [zn("node-a", "zone1"), zn("node-x", "zone2")],
        [],
        codes(UU, UU, names=("node-a", "node-x")),
    ),
    (
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        pod({"foo": ""}, tsc(1, "node", FOO)),
        FOUR,
        SPREAD_2103,
        codes(U, U, S, U),
    ),
    (
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        pod({"foo": ""}, tsc(2, "node", FOO)),
        FOUR,
        SPREAD_2103,
        codes(U, S, S, U),
    ),
    (
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        pod({"bar": ""}, tsc(1, "node", FOO)),
        FOUR,
        SPREAD_2103,
        codes(U, S, S, U),
    ),
    (
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        pod(
            {"foo": ""},
            tsc(1, "node", FOO),
            node_affinity=api.NodeAffinity(
                required=(
                    api.NodeSelectorTerm((api.Requirement("node", "In", ("node-a", "node-y")),)),
                )
            ),
        ),
        FOUR,
        SPREAD_2103,
        codes(S, S, S, U),
    ),
    # minDomains (upstream's minDomains cases in TestSingleConstraint)
    (
        "2 domains < minDomains 3: global minimum is 0, zone1 (2 pods) rejected at maxSkew 2",
        pod({"foo": ""}, tsc(2, "zone", FOO, min_domains=3)),
        FOUR,
        foo_pods("p-a1@node-a", "p-b1@node-b", "p-x1@node-x"),
        codes(U, U, S, S),
    ),
    (
        "3 domains == minDomains 3: global minimum is the real minimum",
        pod({"foo": ""}, tsc(1, "zone", FOO, min_domains=3)),
        [*FOUR, zn("node-o", "zone3")],
        foo_pods("p-a1@node-a", "p-x1@node-x", "p-o1@node-o"),
        codes(S, S, S, S, S, names=(*ABXY, "node-o")),
    ),
    (
        "minDomains larger than domains with maxSkew 1 rejects every non-empty domain",
        pod({"foo": ""}, tsc(1, "node", FOO, min_domains=5)),
        FOUR,
        foo_pods("p-a1@node-a", "p-b1@node-b", "p-x1@node-x", "p-y1@node-y"),
        codes(U, U, U, U),
    ),
    (
        "minDomains counts only domains with eligible nodes (nodeAffinity honoured)",
        pod({"foo": ""}, tsc(1, "zone", FOO, min_domains=2), node_selector={"zone": "zone1"}),
        FOUR,
        foo_pods("p-a1@node-a"),
        codes(U, U, S, S),
    ),
    (
        "NodeTaintsPolicy honored: the tainted zone is not a domain, minimum is zone1's",
        pod({"foo": ""}, tsc(1, "zone", FOO, node_taints_policy="Honor")),
        [zn("node-a", "zone1"), node("node-x", (TAINT,), zone="zone2", node="node-x")],
        foo_pods("p-a1@node-a", "p-a2@node-a"),
        codes(S, S, names=("node-a", "node-x")),
    ),
    (
        "NodeTaintsPolicy ignored: the tainted empty zone is the global minimum",
        pod({"foo": ""}, tsc(1, "zone", FOO)),
        [zn("node-a", "zone1"), node("node-x", (TAINT,), zone="zone2", node="node-x")],
        foo_pods("p-a1@node-a", "p-a2@node-a"),
        codes(U, S, names=("node-a", "node-x")),
    ),
    (
        "labelSelector {} counts nobody but the pod matches itself",
        pod({"foo": ""}, tsc(1, "zone", api.LabelSelector())),
        FOUR,
        SPREAD_2103,
        codes(S, S, S, S),
    ),
]

MULTIPLE = [
    (
        "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        pod({"foo": ""}, tsc(1, "zone", FOO), tsc(1, "node", FOO)),
        FOUR,
        SPREAD_2103,
        codes(U, U, S, U),
    ),
    (
        "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        pod({"foo": ""}, tsc(1, "zone", FOO), tsc(1, "node", FOO)),
        FOUR,
        [*SPREAD_2103, *foo_pods("p-y4@node-y")],
        codes(U, U, U, U),
    ),
    (
        "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        pod({"foo": "", "bar": ""}, tsc(1, "zone", FOO), tsc(1, "node", BAR)),
        FOUR,
        [placed("p-a1@node-a", foo=""), placed("p-y1@node-y", bar="")],
        codes(U, U, S, U),
    ),
    (
        "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        pod({"foo": "", "bar": ""}, tsc(1, "zone", FOO), tsc(1, "node", BAR)),
        FOUR,
        [
            placed("p-a1@node-a", foo=""),
            placed("p-x1@node-x", bar=""),
            placed("p-y1@node-y", bar=""),
        ],
        codes(U, U, U, U),
    ),
    (
        "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        pod({"foo": "", "bar": ""}, tsc(1, "zone", FOO), tsc(1, "node", BAR)),
        FOUR,
        [
            placed("p-a1@node-a", foo=""),
            placed("p-a2@node-a", foo="", bar=""),
            placed("p-y1@node-y", foo=""),
            placed("p-y2@node-y", foo="", bar=""),
            placed("p-y3@node-y", foo=""),
        ],
        codes(U, S, U, U),
    ),
    (
        "Constraints hold different labelSelectors but pod doesn't match itself on 'zone'",
        pod({"bar": ""}, tsc(1, "zone", FOO), tsc(1, "node", BAR)),
        FOUR,
        [
            placed("p-a1@node-a", foo=""),
            placed("p-x1@node-x", bar=""),
            placed("p-y1@node-y", bar=""),
        ],
        codes(S, S, U, U),
    ),
    (
        "two Constraints on zone and node, absence of label 'node' on node-x",
        pod({"foo": ""}, tsc(1, "zone", FOO), tsc(1, "node", FOO)),
        [
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            node("node-x", zone="zone2"),
            zn("node-y", "zone2"),
        ],
        foo_pods("p-a1@node-a", "p-y3@node-y"),
        codes(U, S, UU, U),
    ),
]


@pytest.mark.parametrize(
    ("p", "nodes", "pods", "want"),
    [c[1:] for c in SINGLE + MULTIPLE],
    ids=[c[0] for c in SINGLE + MULTIPLE],
)
def test_filter(p: api.Pod, nodes: list[api.Node], pods: list[api.Pod], want: Any) -> None:
    status, got, _, _ = run(p, nodes, pods)
    assert status.is_success()
    assert got == want


def test_reasons_and_first_failing_constraint_wins() -> None:
    # node-x lacks 'node' (2nd constraint), node-a fails the 1st constraint's skew first.
    p = pod({"foo": ""}, tsc(1, "zone", FOO), tsc(1, "node", FOO))
    nodes = [zn("node-a", "zone1"), zn("node-b", "zone2"), node("node-x", zone="zone2")]
    cluster_pods = foo_pods("p-a1@node-a", "p-a2@node-a")
    cluster = make_cluster(nodes, cluster_pods)
    plugin = pts.new(None, Handle(cluster))
    state = CycleState()
    plugin.pre_filter(state, p, cluster)
    rows = cluster.nodes.order()[[0, 2]]
    verdict = plugin.filter(state, p, cluster, rows)
    reasons = [verdict.table[c].reasons for c in verdict.codes.tolist()]
    assert reasons == [
        (pts.ERR_REASON_CONSTRAINTS_NOT_MATCH,),
        (pts.ERR_REASON_NODE_LABEL_NOT_MATCH,),
    ]
    assert [verdict.table[c].code for c in verdict.codes.tolist()] == [U, UU]
    assert pts.ERR_REASON_NODE_LABEL_NOT_MATCH == (
        "node(s) didn't match pod topology spread constraints (missing required label)"
    )


def test_filter_on_a_subset_of_rows_matches_the_full_answer() -> None:
    p = pod({"foo": ""}, tsc(1, "node", FOO))
    _, full, _, _ = run(p, FOUR, SPREAD_2103)
    cluster = make_cluster(FOUR, SPREAD_2103)
    plugin = pts.new(None, Handle(cluster))
    state = CycleState()
    plugin.pre_filter(state, p, cluster)
    for name in ABXY:
        row = cluster.nodes.row_of[name]
        verdict = plugin.filter(state, p, cluster, np.asarray([row], dtype=np.int64))
        got = verdict.table[int(verdict.codes[0])].code if verdict.codes[0] else S
        assert got == full[name]
