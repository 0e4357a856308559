"""PodTopologySpread PreFilter / Filter, ported from upstream ``filtering_test.go`` (v1.34).

Tables: TestPreFilterState (per-domain counts, domains, global minimum, with node inclusion
policies and matchLabelKeys), TestSingleConstraint, TestMultipleConstraints, plus minDomains,
selector edge cases (nil vs ``{}``), default constraints and errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.framework.interface import Code, CycleState, Handle
from kubesched.plugins import podtopologyspread as pts
from kubesched.plugins.podtopologyspread.plugin import _PRE_FILTER_KEY
from kubesched.state.cache import ClusterState
from kubesched.testing import make_cluster

S, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
DNS, SA = "DoNotSchedule", "ScheduleAnyway"


def exists(*keys: str) -> api.LabelSelector:
    return api.LabelSelector(match_expressions=tuple(api.Requirement(k, "Exists") for k in keys))


FOO, BAR = exists("foo"), exists("bar")
TAINT = api.Taint("node.kubernetes.io/unschedulable", "", api.NO_SCHEDULE)


def tsc(skew: int, key: str, sel: api.LabelSelector | None, when: str = DNS, **kw: Any) -> Any:
    return api.TopologySpreadConstraint(skew, key, when, sel, **kw)


def pod(labels: dict[str, str], *constraints: Any, **kw: Any) -> api.Pod:
    return api.Pod(name="p", uid="p", labels=labels, topology_spread_constraints=constraints, **kw)


def node(name: str, taints: tuple[api.Taint, ...] = (), **labels: str) -> api.Node:
    return api.Node(name, labels=dict(labels), taints=taints, allocatable={"pods": 110})


def zn(name: str, zone: str) -> api.Node:
    return node(name, zone=zone, node=name)


FOUR = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]


def placed(spec: str, ns: str = "default", **labels: str) -> api.Pod:
    """``"p-a1@node-a"``: a bound Pod."""
    name, node_name = spec.split("@")
    return api.Pod(name=name, namespace=ns, uid=name + ns, labels=dict(labels), node_name=node_name)


def foo_pods(*specs: str) -> list[api.Pod]:
    return [placed(s, foo="") for s in specs]


def run(
    p: api.Pod, nodes: list[api.Node], pods: list[api.Pod], args: Any = None, **attrs: Any
) -> tuple[Any, dict[str, Code], ClusterState, CycleState]:
    cluster = make_cluster(nodes, pods)
    for k, v in attrs.items():
        setattr(cluster, k, v)
    plugin = pts.new(args, Handle(cluster))
    state = CycleState()
    _, status = plugin.pre_filter(state, p, cluster)
    rows = np.asarray([cluster.nodes.row_of[n.name] for n in nodes], dtype=np.int64)
    codes: dict[str, Code] = {}
    if status.is_success():
        verdict = plugin.filter(state, p, cluster, rows)
        for n, c in zip(nodes, verdict.codes.tolist(), strict=True):
            codes[n.name] = verdict.table[c].code if c else S
    return status, codes, cluster, state


# ------------------------------------------------------------------ TestPreFilterState
PRE_FILTER_STATE = [
    (
        "clean cluster with one spreadConstraint",
        pod({"foo": ""}, tsc(5, "zone", api.LabelSelector(match_labels=(("foo", "bar"),)))),
        FOUR,
        [],
        [{"zone1": 0, "zone2": 0}],
        [0],
    ),
    (
        "normal case with one spreadConstraint",
        pod({"foo": ""}, tsc(1, "zone", FOO)),
        FOUR,
        foo_pods("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-y1@node-y", "p-y2@node-y"),
        [{"zone1": 3, "zone2": 2}],
        [2],
    ),
    (
        "normal case with null label selector",
        pod({"foo": ""}, tsc(1, "zone", None)),
        FOUR,
        foo_pods("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-y1@node-y", "p-y2@node-y"),
        [{"zone1": 0, "zone2": 0}],
        [0],
    ),
    (
        "normal case with one spreadConstraint, on a 3-zone cluster",
        pod({"foo": ""}, tsc(1, "zone", FOO)),
        [*FOUR, zn("node-o", "zone3"), zn("node-p", "zone3")],
        foo_pods("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-y1@node-y", "p-y2@node-y"),
        [{"zone1": 3, "zone2": 2, "zone3": 0}],
        [0],
    ),
    (
        "namespace mismatch doesn't count",
        pod({"foo": ""}, tsc(1, "zone", FOO)),
        FOUR,
        [
            placed("p-a1@node-a", foo=""),
            placed("p-a2@node-a", "ns1", foo=""),
            placed("p-b1@node-b", foo=""),
            placed("p-y1@node-y", "ns2", foo=""),
            placed("p-y2@node-y", foo=""),
        ],
        [{"zone1": 2, "zone2": 1}],
        [1],
    ),
    (
        "normal case with two spreadConstraints",
        pod({"foo": ""}, tsc(1, "zone", FOO), tsc(1, "node", FOO)),
        FOUR,
        foo_pods(
            "p-a1@node-a",
            "p-a2@node-a",
            "p-b1@node-b",
            "p-y1@node-y",
            "p-y2@node-y",
            "p-y3@node-y",
            "p-y4@node-y",
        ),
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}],
        [3, 0],
    ),
    (
        "soft spreadConstraints should be bypassed",
        pod(
            {"foo": ""},
            tsc(1, "zone", FOO, SA),
            tsc(1, "zone", FOO),
            tsc(1, "node", FOO, SA),
            tsc(1, "node", FOO),
        ),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
        foo_pods(
            "p-a1@node-a",
            "p-a2@node-a",
            "p-b1@node-b",
            "p-y1@node-y",
            "p-y2@node-y",
            "p-y3@node-y",
            "p-y4@node-y",
        ),
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
        [3, 1],
    ),
    (
        "NodeAffinityPolicy honored with labelSelectors",
        pod({"foo": ""}, tsc(1, "node", BAR), node_selector={"foo": ""}),
        [
            node("node-a", node="node-a", foo=""),
            node("node-b", node="node-b", foo=""),
            node("node-c", node="node-c", bar=""),
        ],
        [
            placed("p-a@node-a", bar=""),
            placed("p-b@node-b", bar=""),
            placed("p-c@node-b", bar=""),
            placed("p-d@node-c"),
        ],
        [{"node-a": 1, "node-b": 2}],
        [1],
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        pod(
            {"foo": ""},
            tsc(1, "node", BAR, node_affinity_policy="Ignore"),
            node_selector={"foo": ""},
        ),
        [
            node("node-a", node="node-a", foo=""),
            node("node-b", node="node-b", foo=""),
            node("node-c", node="node-c", bar=""),
        ],
        [
            placed("p-a@node-a", bar=""),
            placed("p-b@node-b", bar=""),
            placed("p-c@node-b", bar=""),
            placed("p-d@node-c"),
        ],
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
        [0],
    ),
    (
        "NodeAffinityPolicy honored with nodeAffinity",
        pod(
            {"foo": ""},
            tsc(1, "node", BAR),
            node_affinity=api.NodeAffinity(
                required=(api.NodeSelectorTerm((api.Requirement("foo", "In", ("",)),)),)
            ),
        ),
        [
            node("node-a", node="node-a", foo=""),
            node("node-b", node="node-b", foo=""),
            node("node-c", node="node-c", bar=""),
        ],
        [
            placed("p-a@node-a", bar=""),
            placed("p-c@node-b", bar=""),
            placed("p-d@node-b", bar=""),
            placed("p-e@node-c"),
        ],
        [{"node-a": 1, "node-b": 2}],
        [1],
    ),
    (
        "NodeTaintsPolicy ignored",
        pod({"foo": ""}, tsc(1, "node", BAR)),
        [
            node("node-a", node="node-a"),
            node("node-b", node="node-b"),
            node("node-c", (TAINT,), node="node-c", bar=""),
        ],
        [
            placed("p-a@node-a", bar=""),
            placed("p-b@node-b", bar=""),
            placed("p-c@node-b", bar=""),
            placed("p-d@node-c"),
        ],
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
        [0],
    ),
    (
        "NodeTaintsPolicy honored",
        pod({"foo": ""}, tsc(1, "node", BAR, node_taints_policy="Honor")),
        [
            node("node-a", node="node-a"),
            node("node-b", node="node-b"),
            node("node-c", (TAINT,), node="node-c", bar=""),
        ],
        [
            placed("p-a@node-a", bar=""),
            placed("p-b@node-b", bar=""),
            placed("p-c@node-b", bar=""),
            placed("p-d@node-c"),
        ],
        [{"node-a": 1, "node-b": 2}],
        [1],
    ),
    (
        "NodeTaintsPolicy honored with tolerated taints",
        pod(
            {"foo": ""},
            tsc(1, "node", BAR, node_taints_policy="Honor"),
            tolerations=(api.Toleration(TAINT.key, "Exists"),),
        ),
        [
            node("node-a", node="node-a"),
            node("node-b", node="node-b"),
            node("node-c", (TAINT,), node="node-c", bar=""),
        ],
        [
            placed("p-a@node-a", bar=""),
            placed("p-b@node-b", bar=""),
            placed("p-c@node-b", bar=""),
            placed("p-d@node-c"),
        ],
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
        [0],
    ),
    (
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        pod(
            {"foo": ""},
            tsc(1, "zone", FOO),
            tsc(1, "node", FOO, node_affinity_policy="Ignore"),
            node_selector={"foo": ""},
        ),
        [
            node("node-a", zone="zone1", node="node-a", foo=""),
            node("node-b", zone="zone1", node="node-b"),
            node("node-x", zone="zone2", node="node-x", foo=""),
        ],
        foo_pods("p-b1@node-b", "p-b2@node-b", "p-x1@node-x"),
        [{"zone1": 0, "zone2": 1}, {"node-a": 0, "node-b": 2, "node-x": 1}],
        [0, 0],
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        pod({"foo": "", "bar": "a"}, tsc(1, "zone", FOO, match_label_keys=("bar",))),
        FOUR,
        [
            placed("p-a1@node-a", foo=""),
            placed("p-a2@node-a", foo="", bar="a"),
            placed("p-b1@node-b", foo=""),
            placed("p-y1@node-y", foo="", bar="a"),
            placed("p-y2@node-y", bar=""),
        ],
        [{"zone1": 1, "zone2": 1}],
        [1],
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        pod({"foo": "a"}, tsc(1, "zone", api.LabelSelector(), match_label_keys=("foo",))),
        FOUR,
        [
            placed(s, foo="a")
            for s in ("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-y1@node-y", "p-y2@node-y")
        ],
        [{"zone1": 3, "zone2": 2}],
        [2],
    ),
    (
        "key in matchLabelKeys is ignored when LabelSelector is nil",
        pod({"foo": ""}, tsc(1, "zone", None, match_label_keys=("bar",))),
        FOUR,
        [
            placed(s, foo="a")
            for s in ("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-y1@node-y", "p-y2@node-y")
        ],
        [{"zone1": 0, "zone2": 0}],
        [0],
    ),
    (
        "key in matchLabelKeys is ignored when it isn't in the pod's labels",
        pod({"foo": ""}, tsc(1, "zone", FOO, match_label_keys=("bar",))),
        FOUR,
        [
            placed(s, foo="a")
            for s in ("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-y1@node-y", "p-y2@node-y")
        ],
        [{"zone1": 3, "zone2": 2}],
        [2],
    ),
    (
        "empty (non-nil) selector counts nothing, as v1.34's countPodsMatchSelector",
        pod({"foo": ""}, tsc(1, "zone", api.LabelSelector())),
        FOUR,
        foo_pods("p-a1@node-a", "p-y1@node-y"),
        [{"zone1": 0, "zone2": 0}],
        [0],
    ),
]


@pytest.mark.parametrize(
    ("p", "nodes", "pods", "want_counts", "want_min"),
    [c[1:] for c in PRE_FILTER_STATE],
    ids=[c[0] for c in PRE_FILTER_STATE],
)
def test_pre_filter_state(
    p: api.Pod, nodes: list[api.Node], pods: list[api.Pod], want_counts: Any, want_min: Any
) -> None:
    status, _, cluster, state = run(p, nodes, pods)
    assert status.is_success()
    pre = state[_PRE_FILTER_KEY]
    assert pre.match_nums(cluster) == want_counts
    assert [hc.min_match for hc in pre.constraints] == want_min
    assert [hc.domains_num for hc in pre.constraints] == [len(c) for c in want_counts]


def test_pre_filter_skips_without_hard_constraints() -> None:
    status, codes, _, _ = run(pod({"foo": ""}, tsc(1, "zone", FOO, SA)), FOUR, [])
    assert status.code == Code.SKIP and codes == {}
    status, _, _, _ = run(pod({"foo": ""}), FOUR, [])  # System defaults are all soft
    assert status.code == Code.SKIP


def test_invalid_selector_is_an_error() -> None:
    bad = api.LabelSelector(match_expressions=(api.Requirement("foo", "In", ()),))
    status, _, _, _ = run(pod({"foo": ""}, tsc(1, "zone", bad)), FOUR, [])
    assert status.code == Code.ERROR
    assert "values set can't be empty" in status.message()
