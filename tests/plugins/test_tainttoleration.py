"""TaintToleration: upstream ``taint_toleration_test.go`` tables (v1.34 reasons) as data."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.config.featuregates import FeatureGates
from kubesched.framework.interface import ActionType, Code, CycleState, Handle, QueueingHint
from kubesched.plugins import tainttoleration as tt
from kubesched.testing import make_cluster, make_node, make_pod

NS, PNS, NE = api.NO_SCHEDULE, api.PREFER_NO_SCHEDULE, api.NO_EXECUTE
Q, S = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def tol(key: str = "", value: str = "", effect: str = "", op: str = "Equal") -> api.Toleration:
    return api.Toleration(key, op, value, effect)


def taint(key: str, value: str = "", effect: str = NS) -> api.Taint:
    return api.Taint(key, value, effect)


def node(name: str, *taints: api.Taint) -> api.Node:
    n = make_node(name).obj()
    n.taints = tuple(taints)
    return n


def pod(*tols: api.Toleration, name: str = "pod1") -> api.Pod:
    return make_pod(name).tolerate(*tols).obj()


def plugin() -> tt.TaintToleration:
    return tt.new(None, Handle(make_cluster([])))


# name, pod tolerations, node taints, want reason (None = pass)
FILTER_CASES = [
    ("no tolerations vs taint", (), (taint("dedicated", "user1"),), "{dedicated: user1}"),
    (
        "tolerated dedicated user1",
        (tol("dedicated", "user1", NS),),
        (taint("dedicated", "user1"),),
        None,
    ),
    (
        "wrong value user2",
        (tol("dedicated", "user2", NS),),
        (taint("dedicated", "user1"),),
        "{dedicated: user1}",
    ),
    ("Exists tolerates", (tol("foo", effect=NS, op="Exists"),), (taint("foo", "bar"),), None),
    (
        "all of several taints tolerated",
        (tol("dedicated", "user2", NS), tol("foo", effect=NS, op="Exists")),
        (taint("dedicated", "user2"), taint("foo", "bar")),
        None,
    ),
    (
        "effect mismatch",
        (tol("foo", "bar", PNS),),
        (taint("foo", "bar"),),
        "{foo: bar}",
    ),
    ("empty effect tolerates all effects", (tol("foo", "bar"),), (taint("foo", "bar"),), None),
    (
        "PreferNoSchedule taint is not filtered",
        (tol("dedicated", "user2", NS),),
        (taint("dedicated", "user1", PNS),),
        None,
    ),
    ("no tolerations, PreferNoSchedule only", (), (taint("dedicated", "user1", PNS),), None),
    ("NoExecute filtered", (), (taint("evict", "now", NE),), "{evict: now}"),
    (
        "first untolerated taint reported",
        (tol("a", effect=NS, op="Exists"),),
        (taint("a", "1"), taint("b", "2", PNS), taint("c", "3"), taint("d", "4")),
        "{c: 3}",
    ),
    ("Exists without key tolerates everything", (tol(op="Exists"),), (taint("x", "y", NE),), None),
    ("unknown operator tolerates nothing", (tol("x", "y", op="Gt"),), (taint("x", "y"),), "{x: y}"),
]


@pytest.mark.parametrize(
    ("tols", "taints", "want"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(
    tols: tuple[api.Toleration, ...], taints: tuple[api.Taint, ...], want: str | None
) -> None:
    cluster = make_cluster([node("nodeA", *taints)])
    verdict = plugin().filter(CycleState(), pod(*tols), cluster, cluster.nodes.order())
    code = int(verdict.codes[0])
    if want is None:
        assert code == 0
    else:
        status = verdict.table[code]
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == ("node(s) had untolerated taint(s)",)  # v1.34: no taint named


def test_filter_many_nodes_shares_taint_sets() -> None:
    nodes = [
        node("n0"),
        node("n1", taint("a", "1")),
        node("n2", taint("b", "2")),
        node("n3", taint("a", "1")),
        node("n4", taint("c", "", PNS)),
        node("n5", taint("b", "2")),
    ]
    cluster = make_cluster(nodes)
    rows = cluster.nodes.order()
    verdict = plugin().filter(CycleState(), pod(tol("b", effect=NS, op="Exists")), cluster, rows)
    codes = verdict.codes.tolist()
    assert codes[0] == codes[2] == codes[4] == codes[5] == 0
    assert codes[1] == codes[3] != 0
    assert verdict.table[codes[1]].reasons == ("node(s) had untolerated taint(s)",)
    # a subset of rows, in another order
    sub = rows[[3, 0]]
    assert plugin().filter(CycleState(), pod(), cluster, sub).codes.tolist()[1] == 0


def test_distinct_taints_share_one_reason() -> None:
    nodes = [node(f"n{i}", taint(f"k{i}", "v")) for i in range(130)]
    cluster = make_cluster(nodes)
    verdict = plugin().filter(CycleState(), pod(), cluster, cluster.nodes.order())
    assert (verdict.codes > 0).all()
    assert [s.reasons for s in verdict.table.values()] == [(tt.UNTOLERATED,)]
    assert verdict.codes.dtype == np.int8


PT = PNS
# name, tolerations, nodes' taints, want normalized scores
SCORE_CASES = [
    (
        "tolerated node scores higher",
        (tol("foo", "bar", PT),),
        [(taint("foo", "bar", PT),), (taint("foo", "blah", PT),)],
        [100, 0],
    ),
    (
        "count of tolerated taints doesn't matter",
        (tol("cpu-type", "arm64", PT), tol("disk-type", "ssd", PT)),
        [
            (),
            (taint("cpu-type", "arm64", PT),),
            (taint("cpu-type", "arm64", PT), taint("disk-type", "ssd", PT)),
        ],
        [100, 100, 100],
    ),
    (
        "more intolerable taints, lower score",
        (tol("foo", "bar", PT),),
        [
            (),
            (taint("cpu-type", "arm64", PT),),
            (taint("cpu-type", "arm64", PT), taint("disk-type", "ssd", PT)),
        ],
        [100, 50, 0],
    ),
    (
        "only PreferNoSchedule is scored",
        (tol("cpu-type", "arm64", NS), tol("disk-type", "ssd", NS)),
        [
            (),
            (taint("cpu-type", "arm64", NS),),
            (taint("cpu-type", "arm64", PT), taint("disk-type", "ssd", PT)),
        ],
        [100, 100, 0],
    ),
    (
        "no tolerations",
        (),
        [(), (taint("cpu-type", "arm64", PT),)],
        [100, 0],
    ),
    ("no taints anywhere", (), [(), ()], [100, 100]),
    (
        "three levels truncate",
        (),
        [(taint("a", "", PT),), (taint("a", "", PT), taint("b", "", PT), taint("c", "", PT)), ()],
        [67, 0, 100],
    ),
]


@pytest.mark.parametrize(
    ("tols", "taints", "want"), [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES]
)
def test_score(
    tols: tuple[api.Toleration, ...], taints: list[tuple[api.Taint, ...]], want: list[int]
) -> None:
    cluster = make_cluster([node(f"node{i}", *t) for i, t in enumerate(taints)])
    p, state, rows, the_pod = plugin(), CycleState(), cluster.nodes.order(), pod(*tols)
    assert p.pre_score(state, the_pod, cluster, rows).is_success()
    scores = p.score(state, the_pod, cluster, rows)
    p.normalize_score(state, the_pod, scores)
    assert scores.tolist() == want
    raw = p.score(CycleState(), the_pod, cluster, rows)  # without PreScore: same raw counts
    p.normalize_score(state, the_pod, raw)
    assert raw.tolist() == want


@pytest.mark.parametrize(
    ("raw", "reverse", "want"),
    [
        ([0, 0, 0], False, [0, 0, 0]),
        ([0, 0, 0], True, [100, 100, 100]),
        ([1, 2, 3], False, [33, 66, 100]),
        ([1, 2, 3], True, [67, 34, 0]),
        ([-5, 0], False, [-5, 0]),
    ],
)
def test_default_normalize_score(raw: list[int], reverse: bool, want: list[int]) -> None:
    scores = np.array(raw, dtype=np.int64)
    tt.default_normalize_score(scores, 100, reverse)
    assert scores.tolist() == want


U1 = taint("dedicated", "user1")
U2 = taint("dedicated", "user2")
HINT_POD = pod(tol("dedicated", "user2", NS))
NODE_HINT_CASES = [
    ("backoff-wrong-new-object", None, "not-a-node", Q),
    ("backoff-wrong-old-object", "not-a-node", node("nodeA", U1), Q),
    ("skip-queue-on-untoleratedtaint-node-added", None, node("nodeA", U1), S),
    ("queue-on-toleratedtaint-node-added", None, node("nodeA", U2), Q),
    ("skip-unrelated-change", node("nodeA", U1), node("nodeA", U1, taint("dedicated", "user3")), S),
    ("queue-on-taint-change", node("nodeA", U1), node("nodeA", U2), Q),
    ("skip-already-tolerated", node("nodeA", U2), node("nodeA"), S),
]


@pytest.mark.parametrize(
    ("old", "new", "want"), [c[1:] for c in NODE_HINT_CASES], ids=[c[0] for c in NODE_HINT_CASES]
)
def test_hint_node_change(old: object, new: object, want: QueueingHint) -> None:
    assert tt.is_schedulable_after_node_change(HINT_POD, old, new) == want


def test_hint_pod_toleration_change() -> None:
    target = pod(name="pod-1")
    updated = pod(tol("foo", effect=NS), name="pod-1")
    other = pod(tol("foo", effect=NS), name="pod-2")
    assert tt.is_schedulable_after_pod_toleration_change(target, target, updated) == Q
    assert tt.is_schedulable_after_pod_toleration_change(target, other, other) == S
    assert tt.is_schedulable_after_pod_toleration_change(target, None, "junk") == Q


def test_events_to_register() -> None:
    events = tt.new(None, Handle(make_cluster([]), feature_gates=FeatureGates("1.36")))
    registered = events.events_to_register()
    assert [(e.event.resource, e.event.action) for e in registered] == [
        ("Node", ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
        ("Pod", ActionType.UPDATE_POD_TOLERATION),
    ]
    assert all(e.hint is not None for e in registered)


def test_events_to_register_v137() -> None:
    """v1.37: TargetPod/UpdatePodToleration, always Queue (upstream's hint returns Queue)."""
    registered = plugin().events_to_register()
    assert [(e.event.resource, e.event.action) for e in registered] == [
        ("Node", ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
        ("TargetPod", ActionType.UPDATE_POD_TOLERATION),
    ]
    assert registered[1].hint is None


def test_tolerations_tolerate_taints_helper() -> None:
    assert tt.tolerations_tolerate_taints((U2, taint("x", "", PNS)), (tol("dedicated", "user2"),))
    assert not tt.tolerations_tolerate_taints((U1,), (tol("dedicated", "user2"),))


def test_vectorised_filter_and_score_agree_with_scalar_on_random_cases() -> None:
    rng = random.Random(3)
    keys, values, effects = ["a", "b"], ["1", "2"], [NS, PNS, NE]

    def rand_taint() -> api.Taint:
        return taint(rng.choice(keys), rng.choice(values), rng.choice(effects))

    nodes = [
        node(f"n{i}", *dict.fromkeys(rand_taint() for _ in range(rng.randint(0, 3))))
        for i in range(30)
    ]
    cluster = make_cluster(nodes)
    rows = cluster.nodes.order()
    for _ in range(100):
        tols = tuple(
            tol(
                rng.choice(["", *keys]),
                rng.choice(values),
                rng.choice(["", *effects]),
                rng.choice(["Equal", "Exists"]),
            )
            for _ in range(rng.randint(0, 3))
        )
        p, the_pod = plugin(), pod(*tols)
        verdict = p.filter(CycleState(), the_pod, cluster, rows)
        for n, code in zip(nodes, verdict.codes.tolist(), strict=True):
            bad = tt.find_untolerated_taint(n.taints, tols)
            assert (code == 0) == (bad is None)
            if bad is not None:
                assert verdict.table[code].reasons == (tt.UNTOLERATED,)
        raw = p.score(CycleState(), the_pod, cluster, rows).tolist()
        soft = tt.prefer_no_schedule_tolerations(tols)
        assert raw == [tt.count_intolerable_prefer_no_schedule(n.taints, soft) for n in nodes]


# ------------------------------------------------------ Gt/Lt (TaintTolerationComparisonOperators)
def gated_plugin(on: bool) -> tt.TaintToleration:
    gates = FeatureGates("1.35", (("TaintTolerationComparisonOperators", on),))
    return tt.new(None, Handle(make_cluster([]), feature_gates=gates))


@pytest.mark.parametrize(
    ("op", "value", "taint_value", "want"),
    [
        ("Gt", "6", "12", True),  # the taint's value is greater
        ("Gt", "6", "6", False),
        ("Gt", "6", "5", False),
        ("Lt", "6", "5", True),
        ("Lt", "6", "0", True),
        ("Lt", "-1", "0", False),
        ("Gt", "-1", "0", True),
        ("Gt", "0", "07", False),  # not canonical: no number
        ("Gt", "0", "v3", False),
        ("Lt", "100", "", False),
        ("Gt", "0", "9223372036854775808", False),  # beyond int64
        ("Lt", "9223372036854775807", "9223372036854775806", True),
    ],
)
def test_numeric_tolerations_compare_as_int64(
    op: str, value: str, taint_value: str, want: bool
) -> None:
    t = taint("gen", taint_value)
    assert tol("gen", value, NS, op).tolerates(t, comparison=True) is want
    assert tol("gen", value, NS, op).tolerates(t) is False  # the gate off: nothing


def test_numeric_tolerations_filter_and_score_follow_the_gate() -> None:
    cluster = make_cluster(
        [
            node("n5", taint("gen", "5")),
            node("n12", taint("gen", "12")),
            node("soft7", taint("gen", "7", PNS)),
        ]
    )
    the_pod = pod(tol("gen", "6", op="Gt"))
    rows = cluster.nodes.order()
    for on, feasible in ((True, [False, True, True]), (False, [False, False, True])):
        p = gated_plugin(on)
        codes = p.filter(CycleState(), the_pod, cluster, rows).codes
        assert [int(c) == 0 for c in codes] == feasible
        state = CycleState()
        assert p.pre_score(state, the_pod, cluster, rows).is_success()
        assert p.score(state, the_pod, cluster, rows).tolist() == [0, 0, 0 if on else 1]


def test_numeric_toleration_hint_follows_the_gate() -> None:
    old, new = node("n", taint("gen", "2")), node("n", taint("gen", "9"))
    the_pod = pod(tol("gen", "6", op="Gt"))
    assert gated_plugin(True).is_schedulable_after_node_change(the_pod, old, new) == Q
    assert gated_plugin(False).is_schedulable_after_node_change(the_pod, old, new) == S
