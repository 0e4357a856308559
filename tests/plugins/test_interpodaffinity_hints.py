"""InterPodAffinity queueing hints: upstream plugin_test.go tables, plus registered events."""

from __future__ import annotations

import pytest

from kubesched.api import objects as api
from kubesched.config.featuregates import FeatureGates
from kubesched.framework.interface import ActionType, Handle, QueueingHint, Resource
from kubesched.plugins import interpodaffinity
from kubesched.testing import Exists, In
from tests.plugins._interpodaffinity import P, T, cluster_of, plugin

Q = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP
AFF_SVC = {"aff": [T("region", In("service", "securityscan", "value2"))]}
ANTI_SVC = {"anti": [T("region", In("service", "securityscan", "value2"))]}
AFF_AB = {"aff": [T("hostname", Exists("aaa")), T("hostname", Exists("bbb"))]}


def target(labels: dict[str, str] | None = None, **aff: list[api.PodAffinityTerm]) -> api.Pod:
    return P("p", labels=labels, **aff)


def other(
    labels: dict[str, str], node: str = "fake-node", **aff: list[api.PodAffinityTerm]
) -> api.Pod:
    return P("other", labels=labels, node=node, **aff)


# (name, target pod, old pod, new pod, hint)
POD_CASES = [
    (
        "add a pod matching the affinity",
        target(**AFF_SVC),
        None,
        other({"service": "securityscan"}),
        Q,
    ),
    (
        "add an unscheduled pod",
        target(**AFF_SVC),
        None,
        other({"service": "securityscan"}, node=""),
        SKIP,
    ),
    ("add a pod not matching the affinity", target(**AFF_SVC), None, other({"aaa": "a"}), SKIP),
    (
        "update a pod from non-match to match",
        target(**AFF_SVC),
        other({"aaa": "a"}),
        other({"service": "securityscan"}),
        Q,
    ),
    (
        "update a pod matching before and after",
        target(**AFF_SVC),
        other({"service": "value2"}),
        other({"service": "securityscan"}),
        SKIP,
    ),
    (
        "update an unscheduled pod",
        target(**AFF_SVC),
        other({"aaa": "a"}, node=""),
        other({"service": "securityscan"}, node=""),
        SKIP,
    ),
    (
        "update a pod from match to non-match",
        target(**AFF_SVC),
        other({"service": "securityscan"}),
        other({"aaa": "a"}),
        SKIP,
    ),
    (
        "multiple terms: match to non-match",
        target(**AFF_AB),
        other({"aaa": "a"}),
        other({"service": "securityscan"}),
        SKIP,
    ),
    (
        "multiple terms: non-match to match",
        target(**AFF_AB),
        other({"aaa": "a"}),
        other({"aaa": "", "bbb": ""}),
        Q,
    ),
    (
        "the updated pod is the target pod",
        target({"foo": "baz"}),
        P("p", labels={"foo": "bar"}),
        P("p", labels={"foo": "baz"}),
        Q,
    ),
    (
        "label change stops matching the anti-affinity",
        target(**ANTI_SVC),
        other({"service": "securityscan"}),
        other({"service": "aaaa"}),
        Q,
    ),
    (
        "label change starts matching the anti-affinity",
        target(**ANTI_SVC),
        other({"service": "bbb"}),
        other({"service": "securityscan"}),
        SKIP,
    ),
    (
        "delete a pod not matching the anti-affinity",
        target(**ANTI_SVC),
        other({"aaa": "a"}),
        None,
        SKIP,
    ),
    (
        "delete a pod matching the anti-affinity",
        target(**ANTI_SVC),
        other({"service": "securityscan"}),
        None,
        Q,
    ),
    (
        "delete a pod whose anti-affinity matches the target",
        target({"service": "securityscan"}),
        other({}, **ANTI_SVC),
        None,
        Q,
    ),
    (
        "delete a pod whose anti-affinity does not match",
        target({"service": "foo"}),
        other({}, **ANTI_SVC),
        None,
        SKIP,
    ),
    (
        "delete: neither side matches",
        target({"service": "foo"}, **ANTI_SVC),
        other({"service": "foo"}, **ANTI_SVC),
        None,
        SKIP,
    ),
]


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES]
)
def test_is_schedulable_after_pod_change(
    pod: api.Pod, old: api.Pod | None, new: api.Pod | None, want: QueueingHint
) -> None:
    """Upstream v1.36's table (v1.37 splits the target Pod's own update off: below)."""
    pl = versioned("1.36")
    assert pl.is_schedulable_after_pod_change(pod, old, new) == want


def versioned(version: str) -> interpodaffinity.InterPodAffinity:
    return interpodaffinity.new(None, Handle(cluster_of([]), feature_gates=FeatureGates(version)))


def node(**labels: str) -> api.Node:
    return api.Node("node-a", labels=dict(labels))


AFF_ZONE = {"aff": [T("zone", In("service", "securityscan", "value2"))]}
AFF_REGION = {"aff": [T("region", In("service", "securityscan", "value2"))]}
ANTI_ZONE = {"anti": [T("zone", labels={"another": "label"})]}

# (name, target pod, old node, new node, hint)
NODE_CASES = [
    ("add a node with the affinity key", target(**AFF_ZONE), None, node(zone="zone1"), Q),
    ("add a node without the affinity key", target(**AFF_REGION), None, node(zone="zone1"), SKIP),
    ("update a label that is not the key", target(**AFF_ZONE), node(aaa="a"), node(aaa="b"), SKIP),
    (
        "update an unrelated label",
        target(**AFF_ZONE),
        node(zone="zone1"),
        node(zone="zone1", unrelated="x"),
        SKIP,
    ),
    (
        "change the affinity key's value",
        target(**AFF_ZONE),
        node(zone="zone1"),
        node(zone="zone2"),
        Q,
    ),
    ("add the affinity key", target(**AFF_ZONE), node(aaa="a"), node(zone="zone1"), Q),
    ("add a node with the anti-affinity key", target(**ANTI_ZONE), None, node(zone="zone1"), Q),
    ("add a node without the anti-affinity key", target(**ANTI_ZONE), None, node(), Q),
    (
        "update an unrelated label (anti)",
        target(**ANTI_ZONE),
        node(zone="zone1"),
        node(zone="zone1", unrelated="x"),
        SKIP,
    ),
    (
        "change the anti-affinity key's value",
        target(**ANTI_ZONE),
        node(zone="zone1"),
        node(zone="zone2"),
        Q,
    ),
    ("add the anti-affinity key", target(**ANTI_ZONE), node(aaa="a"), node(zone="zone1"), SKIP),
    ("remove the anti-affinity key", target(**ANTI_ZONE), node(zone="zone1"), node(aaa="a"), Q),
]


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"), [c[1:] for c in NODE_CASES], ids=[c[0] for c in NODE_CASES]
)
def test_is_schedulable_after_node_change(
    pod: api.Pod, old: api.Node | None, new: api.Node, want: QueueingHint
) -> None:
    pl = plugin(cluster_of([]))
    assert pl.is_schedulable_after_node_change(pod, old, new) == want


def test_events_to_register() -> None:
    events = [e.event for e in versioned("1.36").events_to_register()]
    assert [(e.resource, e.action) for e in events] == [
        (Resource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ]


def test_events_to_register_v137() -> None:
    """Upstream v1.37: AssignedPod for other Pods, TargetPod/UpdatePodLabel (always Queue)
    for the target's own label update (found by oracle/diff.py --verb hints)."""
    registered = versioned("1.37").events_to_register()
    assert [(e.event.resource, e.event.action) for e in registered] == [
        (Resource.ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        (Resource.TARGET_POD, ActionType.UPDATE_POD_LABEL),
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ]
    assert registered[1].hint is None


def test_deleted_pods_anti_affinity_reads_no_namespace_labels() -> None:
    """Upstream v1.36+ ``podMatchesAllAffinityTerms(originalPodAntiTerms, pod)`` passes nil
    namespace labels: a namespace selector naming labels never matches."""
    sel = api.LabelSelector((), (In("team", "team1"),))
    deleted = other({}, anti=[T("zone", Exists("app"), ns_selector=sel)])
    in_team1 = P("p", ns="subteam1.team1", labels={"app": "x"})
    for version in ("1.36", "1.37"):
        assert versioned(version).is_schedulable_after_pod_change(in_team1, deleted, None) == SKIP


@pytest.mark.parametrize(("version", "want"), [("1.36", SKIP), ("1.37", Q)])
def test_deleted_pods_anti_affinity_all_terms_until_v137(version: str, want: QueueingHint) -> None:
    """The deleted Pod's anti-affinity matches the target when ALL its terms do (v1.36),
    ANY term (v1.37 ``podMatchesAnyAffinityTerms``)."""
    deleted = other({}, anti=[T("zone", Exists("app")), T("zone", Exists("tier"))])
    me = target({"app": "x"})
    assert versioned(version).is_schedulable_after_pod_change(me, deleted, None) == want


@pytest.mark.parametrize(("version", "want"), [("1.36", SKIP), ("1.37", Q)])
def test_target_anti_affinity_any_term_from_v137(version: str, want: QueueingHint) -> None:
    """A deleted or relabelled Pod matching one of the target's two anti-affinity terms:
    v1.37 queues (any term), v1.36 needs all."""
    me = target(anti=[T("zone", Exists("app")), T("zone", Exists("tier"))])
    gone = other({"app": "x"})
    assert versioned(version).is_schedulable_after_pod_change(me, gone, None) == want
    relabelled = other({"other": "x"})
    assert versioned(version).is_schedulable_after_pod_change(me, gone, relabelled) == want


def test_nominated_pod_counts_as_placed_from_v136() -> None:
    """v1.36+: a Pod without a node but with a nominated one is not "unscheduled"."""
    nominated = P("other", labels={"app": "x"})
    nominated.nominated_node_name = "node-a"
    me = target(**{"aff": [T("zone", Exists("app"))]})
    assert versioned("1.35").is_schedulable_after_pod_change(me, None, nominated) == SKIP
    assert versioned("1.36").is_schedulable_after_pod_change(me, None, nominated) == Q


@pytest.mark.parametrize(("version", "want"), [("1.34", SKIP), ("1.35", SKIP), ("1.36", Q)])
def test_v136_pod_hints_not_before(version: str, want: QueueingHint) -> None:
    """Upstream v1.34 and v1.35: the target Pod's own label update is an unscheduled Pod's
    (QueueSkip), and a deleted Pod queues only when it matched the target's anti-affinity;
    v1.36 queues both (found by oracle/diff.py --verb hints)."""
    from kubesched.config.featuregates import FeatureGates
    from kubesched.framework.interface import Handle
    from kubesched.plugins import interpodaffinity

    pl = interpodaffinity.new(None, Handle(cluster_of([]), feature_gates=FeatureGates(version)))
    me = target({"app": "x"}, **AFF_SVC)
    relabelled = target({"app": "y"}, **AFF_SVC)
    assert pl.is_schedulable_after_pod_change(relabelled, me, relabelled) == want
    deleted = other({}, anti=[T("zone", Exists("app"))])
    assert pl.is_schedulable_after_pod_change(me, deleted, None) == want
