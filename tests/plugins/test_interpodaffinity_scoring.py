"""InterPodAffinity PreScore/Score/NormalizeScore: upstream scoring_test.go tables as data."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.framework.interface import Code
from kubesched.plugins.interpodaffinity import scoring
from kubesched.testing import Exists, In, NotIn
from tests.plugins._interpodaffinity import DNE, N, P, T, W, run_score

S1 = {"security": "S1"}
S2 = {"security": "S2"}
CHINA = {"region": "China"}
INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
TEAM1 = api.LabelSelector((), (In("team", "team1"),))
BAD = "{{.bad-value.}}"

STAY_S1 = {"paff": [W(5, T("region", In("security", "S1")))]}
STAY_S2 = {"paff": [W(6, T("region", In("security", "S2")))]}
AFFINITY3 = {
    "paff": [
        W(8, T("region", NotIn("security", "S1"), In("security", "S2"))),
        W(2, T("region", Exists("security"), DNE("wrongkey"))),
    ]
}
HARD = {
    "aff": [
        T("region", In("security", "S1", "value2")),
        T("region", Exists("security"), DNE("wrongkey")),
    ]
}
AWAY_S1_AZ = {"panti": [W(5, T("az", In("security", "S1")))]}
AWAY_S2_AZ = {"panti": [W(5, T("az", In("security", "S2")))]}
STAY_S1_AWAY_S2 = {
    "paff": [W(8, T("region", In("security", "S1")))],
    "panti": [W(5, T("az", In("security", "S2")))],
}
NS_TERM = T("region", In("security", "S1"), namespaces=["subteam2.team2"], ns_selector=TEAM1)
AFF_NS = {"paff": [W(5, NS_TERM)]}
ANTI_NS = {"panti": [W(5, NS_TERM)]}


def pod(labels: dict[str, str] | None = None, ns: str = "default", **aff: Any) -> api.Pod:
    return P("incoming", ns=ns, labels=labels, **aff)


def on(node: str, labels: dict[str, str] | None = None, ns: str = "default", **aff: Any) -> api.Pod:
    on.n += 1  # type: ignore[attr-defined]
    return P(f"e{on.n}", ns=ns, labels=labels, node=node, **aff)  # type: ignore[attr-defined]


on.n = 0  # type: ignore[attr-defined]


def nodes(*label_sets: dict[str, str]) -> list[api.Node]:
    return [N(f"node{i + 1}", **labels) for i, labels in enumerate(label_sets)]


NS_PODS = [
    on("node1", S1, "subteam1.team1"),
    on("node1", S1, "subteam1.team1"),
    on("node1", S1, "subteam1.team2"),
    on("node2", S1, "subteam2.team1"),
]
NS_PODS_2 = [*NS_PODS[:2], on("node1", S1, "subteam2.team2"), NS_PODS[3]]

# (name, pod, existing pods, nodes, expected normalized scores or None for Skip, args)
PREFERRED = [
    ("nil affinity: skip", pod(S1), [], nodes(CHINA, INDIA, AZ1), None, {}),
    (
        "affinity: matching region gets the high score",
        pod(S1, **STAY_S1),
        [on("node1", S1), on("node2", S2), on("node3", S1)],
        nodes(CHINA, INDIA, AZ1),
        [100, 0, 0],
        {},
    ),
    (
        "affinity: the whole region scores the same",
        pod(**STAY_S1),
        [on("node1", S1)],
        nodes(CHINA, CHINA_AZ1, INDIA),
        [100, 100, 0],
        {},
    ),
    (
        "affinity: the region with more matches wins",
        pod(S1, **STAY_S2),
        [
            on("node1", S2),
            on("node1", S2),
            on("node2", S2),
            on("node3", S2),
            on("node4", S2),
            on("node5", S2),
        ],
        nodes(CHINA, INDIA, CHINA, CHINA, INDIA),
        [100, 0, 100, 100, 0],
        {},
    ),
    (
        "affinity: several operators and weights",
        pod(S1, **AFFINITY3),
        [on("node1", S1), on("node2", S2), on("node3", S1)],
        nodes(CHINA, INDIA, AZ1),
        [20, 100, 0],
        {},
    ),
    (
        "affinity symmetry: existing preferred terms",
        pod(S2),
        [on("node1", S1, **STAY_S1), on("node2", S2, **STAY_S2)],
        nodes(CHINA, INDIA, AZ1),
        [0, 100, 0],
        {},
    ),
    (
        "affinity symmetry with namespace selector",
        pod(S1, "subteam1.team1"),
        [on("node1", S1, **AFF_NS), on("node2", S2, **STAY_S2)],
        nodes(CHINA, INDIA, AZ1),
        [100, 0, 0],
        {},
    ),
    (
        "anti-affinity symmetry with namespace selector",
        pod(S1, "subteam1.team1"),
        [on("node1", S1, **ANTI_NS), on("node2", S2, **STAY_S2)],
        nodes(CHINA, INDIA, AZ1),
        [0, 100, 100],
        {},
    ),
    (
        "affinity symmetry: existing required terms",
        pod(S1),
        [on("node1", S1, **HARD), on("node2", S2, **HARD)],
        nodes(CHINA, INDIA, AZ1),
        [100, 100, 0],
        {},
    ),
    (
        "anti-affinity: non-matching node scores high",
        pod(S1, **AWAY_S1_AZ),
        [on("node1", S1), on("node2", S2)],
        nodes(AZ1, CHINA),
        [0, 100],
        {},
    ),
    (
        "anti-affinity: node without the key scores high",
        pod(S1, **AWAY_S1_AZ),
        [on("node1", S1), on("node2", S1)],
        nodes(AZ1, CHINA),
        [0, 100],
        {},
    ),
    (
        "anti-affinity: more matches score lower",
        pod(S1, **AWAY_S1_AZ),
        [on("node1", S1), on("node1", S1), on("node2", S2)],
        nodes(AZ1, INDIA),
        [0, 100],
        {},
    ),
    (
        "anti-affinity symmetry",
        pod(S2),
        [on("node1", S1, **AWAY_S2_AZ), on("node2", S2, **AWAY_S1_AZ)],
        nodes(AZ1, AZ2),
        [0, 100],
        {},
    ),
    (
        "affinity and anti-affinity",
        pod(S1, **STAY_S1_AWAY_S2),
        [on("node1", S1), on("node2", S1)],
        nodes(CHINA, AZ1),
        [100, 0],
        {},
    ),
    (
        "affinity and anti-affinity, same labels",
        pod(S1, **STAY_S1_AWAY_S2),
        [
            on("node1", S1),
            on("node1", S1),
            on("node2", S1),
            on("node3", S1),
            on("node3", S1),
            on("node4", S1),
            on("node5", S1),
        ],
        nodes(CHINA_AZ1, INDIA, CHINA, CHINA, INDIA),
        [100, 0, 100, 100, 0],
        {},
    ),
    (
        "affinity, anti-affinity and symmetry",
        pod(S1, **STAY_S1_AWAY_S2),
        [
            on("node1", S1),
            on("node2", S2),
            on("node3", **STAY_S1_AWAY_S2),
            on("node4", **AWAY_S1_AZ),
        ],
        nodes(CHINA, AZ1, INDIA, AZ2),
        [100, 0, 100, 0],
        {},
    ),
    (
        "equal scores normalize to 0",
        pod(S1),
        [on("node1", S1), on("node2", **STAY_S1_AWAY_S2)],
        nodes(CHINA, CHINA),
        [0, 0],
        {},
    ),
    (
        "affinity with namespaceSelector",
        pod(S1, "subteam1.team1", **AFF_NS),
        NS_PODS,
        nodes(CHINA, INDIA),
        [100, 0],
        {},
    ),
    (
        "affinity with namespaceSelector and namespaces",
        pod(S1, "subteam1.team1", **AFF_NS),
        NS_PODS_2,
        nodes(CHINA, INDIA),
        [100, 0],
        {},
    ),
    (
        "anti-affinity with namespaceSelector",
        pod(S1, "subteam1.team1", **ANTI_NS),
        NS_PODS,
        nodes(CHINA, INDIA),
        [0, 100],
        {},
    ),
    (
        "anti-affinity with namespaceSelector and namespaces",
        pod(S1, "subteam1.team1", **ANTI_NS),
        NS_PODS_2,
        nodes(CHINA, INDIA),
        [0, 100],
        {},
    ),
    (
        "ignore preferred terms of existing pods",
        pod(S2),
        [on("node1", S1, **STAY_S1_AWAY_S2), on("node2", S2, **STAY_S2)],
        nodes(CHINA, INDIA),
        None,
        {"ignorePreferredTermsOfExistingPods": True},
    ),
    (
        "do not ignore preferred terms of existing pods",
        pod(S2),
        [on("node1", S1, **STAY_S1_AWAY_S2), on("node2", S2, **STAY_S2)],
        nodes(CHINA, INDIA),
        [0, 100],
        {},
    ),
    ("no nodes: skip", pod(S2), [], [], None, {}),
]


@pytest.mark.parametrize(
    ("pod", "pods", "nodes", "want", "args"),
    [c[1:] for c in PREFERRED],
    ids=[c[0] for c in PREFERRED],
)
def test_preferred_affinity(
    pod: api.Pod,
    pods: list[api.Pod],
    nodes: list[api.Node],
    want: list[int] | None,
    args: dict[str, Any],
) -> None:
    status, scores = run_score(nodes, pods, pod, {"hardPodAffinityWeight": 1, **args})
    if want is None:
        assert status.code == Code.SKIP
    else:
        assert status.code == Code.SUCCESS
        assert scores == want


@pytest.mark.parametrize(
    "aff",
    [
        {"paff": [W(8, T("region", In("security", BAD)))]},
        {"panti": [W(5, T("az", In("security", BAD)))]},
    ],
)
def test_invalid_terms_fail_pre_score(aff: dict[str, Any]) -> None:
    status, _ = run_score(nodes(CHINA, CHINA), [], pod(**aff))
    assert status.code == Code.ERROR
    assert f'Invalid value: "{BAD}"' in status.message()
    assert status.message().startswith("failed to parse pod: preferred")


HARD_NS = {
    "aff": [
        T(
            "region",
            In("service", "S1"),
            namespaces=["default", "subteam2.team2"],
            ns_selector=TEAM1,
        )
    ]
}


@pytest.mark.parametrize(
    ("ns", "weight", "want"),
    [
        ("default", 1, [100, 100, 0]),
        ("default", 0, None),
        ("subteam1.team2", 1, None),
        ("subteam1.team1", 1, [100, 100, 0]),
        ("subteam2.team2", 1, [100, 100, 0]),
    ],
    ids=[
        "default weight",
        "zero weight",
        "no matching namespace",
        "matching namespaceSelector",
        "matching namespaces",
    ],
)
def test_hard_pod_affinity_symmetric_weight(ns: str, weight: int, want: list[int] | None) -> None:
    existing = [on("node1", **HARD_NS), on("node2", **HARD_NS)]
    incoming = pod({"service": "S1"}, ns)
    status, scores = run_score(
        nodes(CHINA, INDIA, AZ1), existing, incoming, {"hardPodAffinityWeight": weight}
    )
    if want is None:
        assert status.code == Code.SKIP
    else:
        assert scores == want


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ([-5, 6, 0], [0, 100, 45]),  # float64 math, truncated: 100 * 5/11 = 45.45
        ([3, 3], [0, 0]),
        ([-7, -1, -4], [0, 100, 50]),
        ([0, 1, 2], [0, 50, 100]),
        ([1, 2, 3, 4, 5, 6, 7], [0, 16, 33, 50, 66, 83, 100]),
    ],
)
def test_normalize_matches_upstream_float_arithmetic(raw: list[int], want: list[int]) -> None:
    scores = np.asarray(raw, dtype=np.int64)
    scoring.normalize(scores)
    assert scores.tolist() == want
