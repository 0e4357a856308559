"""NodeAffinity scoring and queueing hints: upstream ``node_affinity_test.go`` tables."""

from __future__ import annotations

import pytest

from kubesched.api import objects as api
from kubesched.framework.interface import ActionType, Code, CycleState, QueueingHint
from kubesched.testing import make_cluster, make_node
from tests.plugins.test_nodeaffinity import (
    FOO_IN_BAR,
    L1,
    L2,
    L3,
    L4,
    L5,
    node,
    plugin,
    pod,
    preferred,
    req,
    term,
)

# name, pod, nodes (name, labels), addedAffinity, want normalized scores
AFF1 = preferred((2, term(req("foo", "In", "bar"))))
AFF2 = preferred(
    (2, term(req("foo", "In", "bar"))),
    (4, term(req("key", "In", "value"))),
    (5, term(req("foo", "In", "bar"), req("key", "In", "value"), req("az", "In", "az1"))),
)
SCORE_CASES = [
    ("no affinity", pod(), [("node1", L1), ("node2", L2), ("node3", L3)], None, [0, 0, 0]),
    (
        "no node matches",
        pod(affinity=AFF1),
        [("node1", L4), ("node2", L2), ("node3", L3)],
        None,
        [0, 0, 0],
    ),
    (
        "only node1 matches",
        pod(affinity=AFF1),
        [("node1", L1), ("node2", L2), ("node3", L3)],
        None,
        [100, 0, 0],
    ),
    (
        "different priorities",
        pod(affinity=AFF2),
        [("node1", L1), ("node5", L5), ("node2", L2)],
        None,
        [18, 100, 36],
    ),
    ("added affinity", pod(), [("node1", L1), ("node2", L2)], AFF1, [100, 0]),
    (
        "added affinity and pod affinity",
        pod(affinity=AFF1),
        [("node1", L1), ("node2", L2), ("node3", L5)],
        preferred((3, term(req("key", "In", "value")))),
        [40, 60, 100],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "added", "want"),
    [c[1:] for c in SCORE_CASES],
    ids=[c[0] for c in SCORE_CASES],
)
def test_score(
    pod: api.Pod,
    nodes: list[tuple[str, dict[str, str]]],
    added: api.NodeAffinity | None,
    want: list[int],
) -> None:
    cluster = make_cluster([make_node(n).labels(**lab).obj() for n, lab in nodes])
    p, state, rows = plugin(added), CycleState(), cluster.nodes.order()
    status = p.pre_score(state, pod, cluster, rows)
    if status.code == Code.SKIP:
        assert want == [0] * len(nodes)
        return
    assert status.is_success()
    scores = p.score(state, pod, cluster, rows)
    p.normalize_score(state, pod, scores)
    assert scores.tolist() == want
    # Score without PreScore gives the same raw-then-normalized result.
    again = p.score(CycleState(), pod, cluster, rows)
    p.normalize_score(state, pod, again)
    assert again.tolist() == want


HINT_POD = pod(affinity=FOO_IN_BAR)
Q, S = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
HINT_CASES = [
    ("backoff-wrong-new-object", None, None, "not-a-node", Q),
    ("backoff-wrong-old-object", None, "not-a-node", node(), Q),
    ("skip-queue-on-add", None, None, node(), S),
    ("queue-on-add", None, None, node(foo="bar"), Q),
    ("skip-unrelated-changes", None, node(), node(), S),
    ("skip-unrelated-changes-on-labels", None, node(), node(k="v"), S),
    ("skip-labels-changes-on-suitable-node", None, node(foo="bar"), node(foo="bar", k="v"), S),
    ("skip-suitable-to-unsuitable", None, node(foo="bar"), node(k="v"), S),
    ("queue-on-labels-change-makes-pod-schedulable", None, node(), node(foo="bar"), Q),
    ("skip-queue-on-add-scheduler-enforced", FOO_IN_BAR, None, node(), S),
    ("queue-on-add-scheduler-enforced", FOO_IN_BAR, None, node(foo="bar"), Q),
]


@pytest.mark.parametrize(
    ("added", "old", "new", "want"), [c[1:] for c in HINT_CASES], ids=[c[0] for c in HINT_CASES]
)
def test_hint_node_change(
    added: api.NodeAffinity | None, old: object, new: object, want: QueueingHint
) -> None:
    assert plugin(added).is_schedulable_after_node_change(HINT_POD, old, new) == want


def test_events_to_register() -> None:
    (ev,) = plugin().events_to_register()
    assert ev.event.resource == "Node"
    assert ev.event.action == ActionType.ADD | ActionType.UPDATE_NODE_LABEL
    assert ev.hint is not None


def test_pre_score_reports_invalid_preferred_terms() -> None:
    the_pod = pod(affinity=preferred((1, term(req("foo", "Gt", "abc")))))
    cluster = make_cluster([node("a")])
    status = plugin().pre_score(CycleState(), the_pod, cluster, cluster.nodes.order())
    assert status.code == Code.ERROR
    assert status.message().startswith("[0].preference.matchExpressions[0].values")


def test_zero_weight_preferred_terms_are_ignored() -> None:
    the_pod = pod(
        affinity=preferred((0, term(req("foo", "Exists"))), (3, term(req("x", "Exists"))))
    )
    cluster = make_cluster([node("a", foo="1"), node("b", x="1")])
    p, state, rows = plugin(), CycleState(), cluster.nodes.order()
    assert p.pre_score(state, the_pod, cluster, rows).is_success()
    assert p.score(state, the_pod, cluster, rows).tolist() == [0, 3]
