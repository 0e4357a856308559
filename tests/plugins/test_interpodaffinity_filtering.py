"""InterPodAffinity PreFilter/Filter: upstream filtering_test.go tables, ported as data."""

from __future__ import annotations

import pytest

from kubesched.api import objects as api
from kubesched.framework.interface import Code, Status
from kubesched.testing import Exists, In, NotIn
from tests.plugins._interpodaffinity import AFF, ANTI, DNE, EXISTING, SKIPPED, N, P, T, run_filter

SVC = {"service": "securityscan"}
SEC = {"security": "S1"}
NODE1 = N("node1", region="r1", zone="z11")
POD = P("pod", labels=SVC, node="node1")
TEAM1 = api.LabelSelector((), (In("team", "team1"),))
BAD = (
    'values[0][service]: Invalid value: "{{.bad-value.}}": a valid label must be an empty '
    "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

# (name, incoming pod, existing pods, PreFilter status, Filter status on node1)
SINGLE_NODE = [
    ("no required affinity, no pods", P(), [], SKIPPED, None),
    (
        "affinity In matches existing pod",
        P(labels=SEC, aff=[T("region", In("service", "securityscan", "value2"))]),
        [POD],
        None,
        None,
    ),
    (
        "affinity NotIn matches existing pod",
        P(labels=SEC, aff=[T("region", NotIn("service", "securityscan3", "value3"))]),
        [POD],
        None,
        None,
    ),
    (
        "affinity fails: existing pod in another namespace",
        P(
            labels=SEC,
            aff=[T("", In("service", "securityscan", "value2"), namespaces=["DiffNameSpace"])],
        ),
        [P("x", ns="ns", labels=SVC, node="node1")],
        None,
        AFF,
    ),
    (
        "affinity fails: selector does not match",
        P(labels=SVC, aff=[T("", In("service", "antivirusscan", "value2"))]),
        [POD],
        None,
        AFF,
    ),
    (
        "affinity with several operators in two terms",
        P(
            labels=SEC,
            aff=[
                T("region", Exists("service"), DNE("wrongkey")),
                T("region", In("service", "securityscan"), NotIn("service", "WrongValue")),
            ],
        ),
        [POD],
        None,
        None,
    ),
    (
        "affinity requirements are ANDed",
        P(
            labels=SEC,
            aff=[
                T("region", Exists("service"), DNE("wrongkey")),
                T("region", In("service", "securityscan2"), NotIn("service", "WrongValue")),
            ],
        ),
        [POD],
        None,
        AFF,
    ),
    (
        "affinity and anti-affinity both satisfied",
        P(
            labels=SEC,
            aff=[T("region", In("service", "securityscan", "value2"))],
            anti=[T("node", In("service", "antivirusscan", "value2"))],
        ),
        [POD],
        None,
        None,
    ),
    (
        "affinity, anti-affinity and symmetry satisfied",
        P(
            labels=SEC,
            aff=[T("region", In("service", "securityscan", "value2"))],
            anti=[T("node", In("service", "antivirusscan", "value2"))],
        ),
        [
            P(
                "x",
                labels=SVC,
                node="node1",
                anti=[T("node", In("service", "antivirusscan", "value2"))],
            )
        ],
        None,
        None,
    ),
    (
        "anti-affinity violated",
        P(
            labels=SEC,
            aff=[T("region", In("service", "securityscan", "value2"))],
            anti=[T("zone", In("service", "securityscan", "value2"))],
        ),
        [POD],
        None,
        ANTI,
    ),
    (
        "existing pod's anti-affinity violated",
        P(
            labels=SVC,
            aff=[T("region", In("service", "securityscan", "value2"))],
            anti=[T("node", In("service", "antivirusscan", "value2"))],
        ),
        [
            P(
                "x",
                labels=SVC,
                node="node1",
                anti=[T("zone", In("service", "securityscan", "value2"))],
            )
        ],
        None,
        EXISTING,
    ),
    (
        "own labels fail own NotIn affinity; matching pod is elsewhere",
        P(labels=SVC, aff=[T("region", NotIn("service", "securityscan", "value2"))]),
        [],
        None,
        AFF,
    ),
    (
        "existing anti-affinity applies to a pod without terms",
        P(labels=SVC),
        [
            P(
                "x",
                labels=SVC,
                node="node1",
                anti=[T("zone", In("service", "securityscan", "value2"))],
            )
        ],
        None,
        EXISTING,
    ),
    (
        "existing anti-affinity not matching: PreFilter skips",
        P(labels=SVC),
        [
            P(
                "x",
                labels=SVC,
                node="node1",
                anti=[T("zone", NotIn("service", "securityscan", "value2"))],
            )
        ],
        SKIPPED,
        None,
    ),
    (
        "incoming anti-affinity matches existing pod",
        P(labels=SVC, anti=[T("region", Exists("service")), T("region", Exists("security"))]),
        [P("x", labels=SEC, node="node1", anti=[T("zone", Exists("security"))])],
        None,
        ANTI,
    ),
    (
        "symmetry a1",
        P(labels=SVC, anti=[T("zone", Exists("service")), T("zone", Exists("security"))]),
        [P("x", labels=SEC, node="node1", anti=[T("zone", Exists("security"))])],
        None,
        ANTI,
    ),
    (
        "symmetry a2",
        P(labels=SEC, anti=[T("zone", Exists("security"))]),
        [
            P(
                "x",
                labels=SVC,
                node="node1",
                anti=[T("zone", Exists("service")), T("zone", Exists("security"))],
            )
        ],
        None,
        EXISTING,
    ),
    (
        "symmetry b1",
        P(labels={"abc": "", "xyz": ""}, anti=[T("zone", Exists("abc")), T("zone", Exists("def"))]),
        [
            P(
                "x",
                labels={"def": "", "xyz": ""},
                node="node1",
                anti=[T("zone", Exists("abc")), T("zone", Exists("def"))],
            )
        ],
        None,
        ANTI,
    ),
    (
        "symmetry b2",
        P(labels={"def": "", "xyz": ""}, anti=[T("zone", Exists("abc")), T("zone", Exists("def"))]),
        [
            P(
                "x",
                labels={"abc": "", "xyz": ""},
                node="node1",
                anti=[T("zone", Exists("abc")), T("zone", Exists("def"))],
            )
        ],
        None,
        ANTI,
    ),
    (
        "invalid affinity label value",
        P(
            labels=SVC,
            aff=[
                T("region", In("service", "{{.bad-value.}}")),
                T("node", In("service", "antivirusscan", "value2")),
            ],
        ),
        [],
        Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"parsing pod: requiredAffinityTerms: {BAD}",)
        ),
        None,
    ),
    (
        "invalid affinity label value in the second term",
        P(
            labels=SVC,
            aff=[T("region", In("service", "foo")), T("node", In("service", "{{.bad-value.}}"))],
        ),
        [],
        Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"parsing pod: requiredAffinityTerms: {BAD}",)
        ),
        None,
    ),
    (
        "invalid anti-affinity label value",
        P(labels=SVC, anti=[T("node", In("service", "{{.bad-value.}}"))]),
        [],
        Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"parsing pod: requiredAntiAffinityTerms: {BAD}",)
        ),
        None,
    ),
    (
        "affinity with namespaceSelector",
        P(
            labels=SEC,
            aff=[T("region", In("service", "securityscan", "value2"), ns_selector=TEAM1)],
        ),
        [P("x", ns="subteam1.team1", labels=SVC, node="node1")],
        None,
        None,
    ),
    (
        "affinity with non-matching namespaceSelector",
        P(
            labels=SEC,
            aff=[T("region", In("service", "securityscan", "value2"), ns_selector=TEAM1)],
        ),
        [P("x", ns="subteam1.team2", labels=SVC, node="node1")],
        None,
        AFF,
    ),
    (
        "anti-affinity with matching namespaceSelector",
        P(
            ns="subteam1.team1",
            labels=SEC,
            anti=[T("zone", In("service", "securityscan", "value2"), ns_selector=TEAM1)],
        ),
        [P("x", ns="subteam2.team1", labels=SVC, node="node1")],
        None,
        ANTI,
    ),
    (
        "anti-affinity with match-all namespaceSelector",
        P(
            ns="subteam1.team1",
            labels=SEC,
            anti=[
                T("zone", In("service", "securityscan", "value2"), ns_selector=api.LabelSelector())
            ],
        ),
        [P("x", ns="subteam2.team1", labels=SVC, node="node1")],
        None,
        ANTI,
    ),
    (
        "anti-affinity with non-matching namespaceSelector",
        P(
            ns="subteam1.team1",
            labels=SEC,
            anti=[T("zone", In("service", "securityscan", "value2"), ns_selector=TEAM1)],
        ),
        [P("x", ns="subteam1.team2", labels=SVC, node="node1")],
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("pod", "pods", "pre", "want"), [c[1:] for c in SINGLE_NODE], ids=[c[0] for c in SINGLE_NODE]
)
def test_required_affinity_single_node(
    pod: api.Pod, pods: list[api.Pod], pre: Status | None, want: Status | None
) -> None:
    got_pre, got = run_filter([NODE1], pods, pod)
    assert got_pre == (pre or Status())
    if got_pre.code == Code.SUCCESS:
        assert got["node1"] == want
