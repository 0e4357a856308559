"""InterPodAffinity Filter over several nodes: upstream TestRequiredAffinityMultipleNodes."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.framework.interface import Code, CycleState, Status
from kubesched.testing import Exists, In
from tests.plugins._interpodaffinity import (
    AFF,
    ANTI,
    EXISTING,
    SKIPPED,
    N,
    P,
    T,
    cluster_of,
    plugin,
    run_filter,
)

CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}
FOO_BAR = {"foo": "bar"}


TWO_Z12 = [
    N("nodeA", region="r1", zone="z1", hostname="nodeA"),
    N("nodeB", region="r1", zone="z2", hostname="nodeB"),
]
TWO_Z11 = [
    N("nodeA", region="r1", zone="z1", hostname="nodeA"),
    N("nodeB", region="r1", zone="z1", hostname="nodeB"),
]
RG3 = [N("nodeA", **CHINA), N("nodeB", **CHINA_AZ1), N("nodeC", **INDIA)]

# (name, incoming pod, existing pods, nodes, PreFilter status, Filter status per node)
MULTI_NODE = [
    (
        "same region as the matching pod",
        P(aff=[T("region", In("foo", "bar"))]),
        [P("p1", labels=FOO_BAR, node="node1")],
        [N("node1", **CHINA), N("node2", **CHINA_AZ1), N("node3", **INDIA)],
        None,
        [None, None, AFF],
    ),
    (
        "first pod of a collection may go anywhere",
        P(
            labels={"foo": "bar", "service": "securityscan"},
            aff=[T("zone", In("foo", "bar")), T("zone", In("service", "securityscan"))],
        ),
        [P("p1", labels=FOO_BAR, node="nodeA")],
        [N("nodeA", zone="az1", hostname="h1"), N("nodeB", zone="az2", hostname="h2")],
        None,
        [None, None],
    ),
    (
        "first pod of a collection needs the topology keys",
        P(
            labels={"foo": "bar", "service": "securityscan"},
            aff=[T("zone", In("foo", "bar")), T("zone", In("service", "securityscan"))],
        ),
        [P("p1", labels=FOO_BAR, node="nodeA")],
        [N("nodeA", zoneLabel="az1", hostname="h1"), N("nodeB", zoneLabel="az2", hostname="h2")],
        None,
        [AFF, AFF],
    ),
    (
        "anti-affinity blocks the whole region",
        P(anti=[T("region", In("foo", "abc"))]),
        [P("x", labels={"foo": "abc"}, node="nodeA")],
        [N("nodeA", region="r1", hostname="nodeA"), N("nodeB", region="r1", hostname="nodeB")],
        None,
        [ANTI, ANTI],
    ),
    (
        "anti-affinity: any term matching is enough",
        P(anti=[T("region", In("foo", "abc")), T("zone", In("service", "securityscan"))]),
        [P("x", labels={"foo": "abc", "service": "securityscan"}, node="nodeA")],
        [
            N("nodeA", region="r1", zone="z1", hostname="nodeA"),
            N("nodeB", region="r1", zone="z2", hostname="nodeB"),
        ],
        None,
        [ANTI, ANTI],
    ),
    (
        "anti-affinity: other region is fine",
        P(anti=[T("region", In("foo", "abc"))]),
        [P("x", labels={"foo": "abc"}, node="nodeA")],
        RG3,
        None,
        [ANTI, ANTI, None],
    ),
    (
        "anti-affinity: existing pod in another namespace",
        P(ns="NS1", labels={"foo": "123"}, anti=[T("region", In("foo", "bar"))]),
        [
            P("x", ns="NS1", labels=FOO_BAR, node="nodeA"),
            P("y", ns="NS2", node="nodeC", anti=[T("region", In("foo", "123"))]),
        ],
        RG3,
        None,
        [ANTI, ANTI, None],
    ),
    (
        "existing anti-affinity on an unknown topology key",
        P(labels={"foo": ""}),
        [P("x", node="nodeA", anti=[T("invalid-node-label", Exists("foo"))])],
        TWO_Z11,
        SKIPPED,
        [],
    ),
    (
        "incoming anti-affinity on an unknown topology key",
        P(anti=[T("invalid-node-label", Exists("foo"))]),
        [P("x", labels={"foo": ""}, node="nodeA")],
        TWO_Z11,
        None,
        [None, None],
    ),
    (
        "existing pods' terms block every node",
        P(labels={"foo": "", "bar": ""}),
        [
            P("x", node="nodeA", anti=[T("zone", Exists("foo"))]),
            P("y", node="nodeA", anti=[T("region", Exists("bar"))]),
        ],
        TWO_Z12,
        None,
        [EXISTING, EXISTING],
    ),
    (
        "incoming terms block every node",
        P(anti=[T("zone", Exists("foo")), T("region", Exists("bar"))]),
        [P("x", labels={"foo": ""}, node="nodeA"), P("y", labels={"bar": ""}, node="nodeB")],
        TWO_Z12,
        None,
        [ANTI, ANTI],
    ),
    (
        "existing: term with unknown key counts nothing",
        P(labels={"foo": "", "bar": ""}),
        [
            P(
                "x",
                node="nodeA",
                anti=[T("invalid-node-label", Exists("foo")), T("zone", Exists("bar"))],
            )
        ],
        TWO_Z12,
        None,
        [EXISTING, None],
    ),
    (
        "incoming: term with unknown key counts nothing",
        P(anti=[T("invalid-node-label", Exists("foo")), T("zone", Exists("bar"))]),
        [P("podA", labels={"foo": "", "bar": ""}, node="nodeA")],
        TWO_Z12,
        None,
        [ANTI, None],
    ),
    (
        "existing: both keys valid",
        P(labels={"foo": "", "bar": ""}),
        [P("x", node="nodeA", anti=[T("region", Exists("foo")), T("zone", Exists("bar"))])],
        TWO_Z12,
        None,
        [EXISTING, EXISTING],
    ),
    (
        "incoming: both keys valid",
        P(anti=[T("region", Exists("foo")), T("zone", Exists("bar"))]),
        [P("x", labels={"foo": "", "bar": ""}, node="nodeA")],
        TWO_Z12,
        None,
        [ANTI, ANTI],
    ),
    (
        "existing pods on A and B each match; only C fits",
        P(labels={"foo": "", "bar": ""}),
        [
            P("x", node="nodeA", anti=[T("zone", Exists("foo")), T("zone", Exists("labelA"))]),
            P("y", node="nodeB", anti=[T("zone", Exists("bar")), T("zone", Exists("labelB"))]),
        ],
        [*TWO_Z12, N("nodeC", region="r1", zone="z3", hostname="nodeC")],
        None,
        [EXISTING, EXISTING, None],
    ),
    (
        "affinity: one pod matches all terms",
        P(aff=[T("region", Exists("foo")), T("zone", Exists("bar"))]),
        [P("pod1", labels={"foo": "", "bar": ""}, node="nodeA")],
        TWO_Z11,
        None,
        [None, None],
    ),
    (
        "affinity: terms must be matched by the same pod",
        P(aff=[T("region", Exists("foo")), T("zone", Exists("bar"))]),
        [P("pod1", labels={"foo": ""}, node="nodeA"), P("pod2", labels={"bar": ""}, node="nodeB")],
        TWO_Z12,
        None,
        [AFF, AFF],
    ),
]


@pytest.mark.parametrize(
    ("pod", "pods", "nodes", "pre", "want"),
    [c[1:] for c in MULTI_NODE],
    ids=[c[0] for c in MULTI_NODE],
)
def test_required_affinity_multiple_nodes(
    pod: api.Pod,
    pods: list[api.Pod],
    nodes: list[api.Node],
    pre: Status | None,
    want: list[Status | None],
) -> None:
    got_pre, got = run_filter(nodes, pods, pod, {"NS1": {}})
    assert got_pre == (pre or Status())
    if got_pre.code == Code.SUCCESS:
        assert [got[n.name] for n in nodes] == want


def test_filter_without_pre_filter_computes_the_state() -> None:
    """Upstream errors without PreFilter state; we compute it (explain calls Filter alone)."""
    c = cluster_of([N("node1", zone="z1")], [P("x", labels={"service": "s"}, node="node1")])
    pl = plugin(c)
    pod = P(anti=[T("zone", In("service", "s"))])
    v = pl.filter(CycleState(), pod, c, np.asarray([c.nodes.row_of["node1"]], dtype=np.int64))
    assert v.codes.tolist() == [2] and v.table[2] == ANTI


# ------------------------------------------------------------------- beyond upstream's tables
ZONES = [N("a1", zone="a"), N("a2", zone="a"), N("b1", zone="b")]
TIER = T("zone", labels={"app": "web"}, match_keys=["tier"])
NOT_TIER = T("zone", labels={"app": "web"}, mismatch_keys=["tier"])


@pytest.mark.parametrize(
    ("pod", "pods", "want"),
    [
        # matchLabelKeys: only Pods with the incoming Pod's own tier value conflict.
        (
            P(labels={"tier": "t1"}, anti=[TIER]),
            [P("x", labels={"app": "web", "tier": "t2"}, node="a1")],
            [None, None, None],
        ),
        (
            P(labels={"tier": "t1"}, anti=[TIER]),
            [P("x", labels={"app": "web", "tier": "t1"}, node="a1")],
            [ANTI, ANTI, None],
        ),
        # a key the Pod lacks is ignored: the selector stays app=web.
        (
            P(anti=[TIER]),
            [P("x", labels={"app": "web", "tier": "t2"}, node="a1")],
            [ANTI, ANTI, None],
        ),
        # mismatchLabelKeys: only Pods with another tier value conflict.
        (
            P(labels={"tier": "t1"}, anti=[NOT_TIER]),
            [P("x", labels={"app": "web", "tier": "t1"}, node="a1")],
            [None, None, None],
        ),
        (
            P(labels={"tier": "t1"}, anti=[NOT_TIER]),
            [P("x", labels={"app": "web", "tier": "t2"}, node="b1")],
            [None, None, ANTI],
        ),
        # an existing Pod's matchLabelKeys come from its own labels.
        (
            P(labels={"app": "web", "tier": "t1"}),
            [P("x", labels={"tier": "t1"}, node="b1", anti=[TIER])],
            [None, None, EXISTING],
        ),
        (
            P(labels={"app": "web", "tier": "t2"}),
            [P("x", labels={"tier": "t1"}, node="b1", anti=[TIER])],
            None,
        ),
        # a term without a label selector selects no Pod.
        (
            P(anti=[T("zone", no_selector=True)]),
            [P("x", labels={"app": "web"}, node="a1")],
            [None, None, None],
        ),
        (
            P(aff=[T("zone", no_selector=True)]),
            [P("x", labels={"app": "web"}, node="a1")],
            [AFF, AFF, AFF],
        ),
    ],
)
def test_match_label_keys_and_nil_selectors(
    pod: api.Pod, pods: list[api.Pod], want: list[Status | None] | None
) -> None:
    pre, got = run_filter(ZONES, pods, pod)
    if want is None:
        assert pre == SKIPPED
    else:
        assert [got[n.name] for n in ZONES] == want


def test_undeclared_namespace_counts_as_one_without_labels() -> None:
    """A namespaceSelector selecting namespaces *without* a label also selects a namespace
    that holds Pods but was never declared (a real cluster would have declared it)."""
    no_team = api.LabelSelector((), (api.Requirement("team", "DoesNotExist"),))
    pod = P(anti=[T("zone", Exists("app"), ns_selector=no_team)])
    pods = [P("x", ns="undeclared", labels={"app": "db"}, node="a1")]
    _, got = run_filter(ZONES, pods, pod, {"labelled": {"team": "t"}})
    assert [got[n.name] for n in ZONES] == [ANTI, ANTI, None]
    pods = [P("x", ns="labelled", labels={"app": "db"}, node="a1")]
    _, got = run_filter(ZONES, pods, pod, {"labelled": {"team": "t"}})
    assert [got[n.name] for n in ZONES] == [None, None, None]


def test_counts_follow_namespace_label_changes() -> None:
    """Counts are kept per resolved namespace set, so relabelling a namespace takes effect
    at the next cycle."""
    team1 = api.LabelSelector((), (In("team", "team1"),))
    pod = P(anti=[T("zone", Exists("app"), ns_selector=team1)])
    c = cluster_of(ZONES, [P("x", ns="ns1", labels={"app": "db"}, node="b1")], {"ns1": {}})
    pl = plugin(c)
    rows = np.arange(3, dtype=np.int64)
    state = CycleState()
    assert pl.pre_filter(state, pod, c)[1] == Status()
    assert pl.filter(state, pod, c, rows).codes.tolist() == [0, 0, 0]
    c.namespaces.labels["ns1"] = {"team": "team1"}
    state = CycleState()
    pl.pre_filter(state, pod, c)
    assert pl.filter(state, pod, c, rows).codes.tolist() == [0, 0, 2]


def test_batching_signature() -> None:
    """A Pod without terms signs with the existing Pods' term groups that select it."""
    c = cluster_of(ZONES)
    pl = plugin(c)
    assert pl.sign(P()) == ()
    assert pl.sign(P(anti=[TIER])) is None
    c.add_pod(P("x", node="a1", paff=[api.WeightedPodAffinityTerm(1, TIER)]))
    assert pl.sign(P()) == ()  # x's term does not select it
    web = pl.sign(P(labels={"app": "web"}))
    assert web and web == pl.sign(P("q", labels={"app": "web"}))
    c.add_pod(P("y", node="b1", anti=[TIER]))
    assert pl.sign(P("r", labels={"app": "web"})) != web  # a new group selects it too
    assert pl.pre_filter(CycleState(), P(), c)[1] == SKIPPED
