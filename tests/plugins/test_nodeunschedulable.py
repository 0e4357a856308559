"""NodeUnschedulable: upstream ``node_unschedulable_test.go`` (filter and hints) as data."""

from __future__ import annotations

import pytest

from kubesched.api import objects as api
from kubesched.config.featuregates import FeatureGates
from kubesched.framework.interface import ActionType, Code, CycleState, Handle, QueueingHint, Status
from kubesched.plugins import nodeunschedulable as nu
from kubesched.testing import make_cluster, make_node, make_pod

Q, S = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
UNSCHED_TOL = api.Toleration(nu.TAINT_NODE_UNSCHEDULABLE, effect=api.NO_SCHEDULE)
WANT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) were unschedulable",))


def plugin() -> nu.NodeUnschedulable:
    return nu.new(None, Handle(make_cluster([])))


# name, tolerations, node unschedulable, fails
FILTER_CASES = [
    ("unschedulable node", (), True, True),
    ("normal node", (), False, False),
    ("toleration for unschedulable taint", (UNSCHED_TOL,), True, False),
    ("Exists toleration without key", (api.Toleration(operator="Exists"),), True, False),
    (
        "toleration with wrong effect",
        (api.Toleration(nu.TAINT_NODE_UNSCHEDULABLE, effect=api.NO_EXECUTE),),
        True,
        True,
    ),
]


@pytest.mark.parametrize(
    ("tols", "unschedulable", "fails"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(tols: tuple[api.Toleration, ...], unschedulable: bool, fails: bool) -> None:
    cluster = make_cluster(
        [make_node("a").unschedulable(unschedulable).obj(), make_node("b").obj()]
    )
    the_pod = make_pod("p").tolerate(*tols).obj()
    verdict = plugin().filter(CycleState(), the_pod, cluster, cluster.nodes.order())
    assert verdict.codes[1] == 0
    if fails:
        assert verdict.table[int(verdict.codes[0])] == WANT
    else:
        assert verdict.codes[0] == 0


def node(unschedulable: bool) -> api.Node:
    return make_node("n").unschedulable(unschedulable).obj()


NODE_HINT_CASES = [
    ("backoff-wrong-new-object", None, "not-a-node", Q),
    ("backoff-wrong-old-object", "not-a-node", node(False), Q),
    ("skip-queue-on-unschedulable-node-added", None, node(True), S),
    ("queue-on-schedulable-node-added", None, node(False), Q),
    ("skip-unrelated-change", node(False), node(False), S),
    ("queue-on-unschedulable-to-schedulable", node(True), node(False), Q),
    ("skip-schedulable-to-unschedulable", node(False), node(True), S),
]


@pytest.mark.parametrize(
    ("old", "new", "want"), [c[1:] for c in NODE_HINT_CASES], ids=[c[0] for c in NODE_HINT_CASES]
)
def test_hint_node_change(old: object, new: object, want: QueueingHint) -> None:
    assert nu.is_schedulable_after_node_change(make_pod("p").obj(), old, new) == want


POD_HINT_CASES = [
    ("backoff-wrong-new-object", "not-a-pod", Q),
    ("queue-when-target-gets-toleration", make_pod("p").tolerate(UNSCHED_TOL).obj(), Q),
    (
        "skip-unrelated-toleration",
        make_pod("p").tolerate(api.Toleration("foo", effect=api.NO_SCHEDULE)).obj(),
        S,
    ),
    ("skip-other-pod", make_pod("other").tolerate(UNSCHED_TOL).obj(), S),
]


@pytest.mark.parametrize(
    ("new", "want"), [c[1:] for c in POD_HINT_CASES], ids=[c[0] for c in POD_HINT_CASES]
)
def test_hint_pod_toleration_change(new: object, want: QueueingHint) -> None:
    target = make_pod("p").obj()
    assert nu.is_schedulable_after_pod_toleration_change(target, target, new) == want


@pytest.mark.parametrize(("version", "pods"), [("1.36", "Pod"), ("1.37", "TargetPod")])
def test_events_to_register(version: str, pods: str) -> None:
    handle = Handle(make_cluster([]), feature_gates=FeatureGates(version))
    events = nu.new(None, handle).events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        ("Node", ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
        (pods, ActionType.UPDATE_POD_TOLERATION),
    ]
    assert all(e.hint is not None for e in events)


def test_target_pod_toleration_hint_v137() -> None:
    """v1.37's TargetPod hint: only the queued Pod's own update arrives, so no UID check;
    Queue when it now tolerates the unschedulable taint."""
    hint = nu.is_schedulable_after_target_pod_toleration_change
    target = api.Pod(name="p", uid="u1")
    renamed = api.Pod(name="p", uid="u2", tolerations=(api.Toleration(operator="Exists"),))
    assert hint(target, target, renamed) == QueueingHint.QUEUE
    assert hint(target, target, api.Pod(name="p", uid="u2")) == QueueingHint.QUEUE_SKIP
