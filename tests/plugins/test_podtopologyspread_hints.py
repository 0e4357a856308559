"""PodTopologySpread queueing hints and events, from upstream ``plugin_test.go`` (v1.34)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.config.featuregates import FeatureGates
from kubesched.framework.interface import ActionType, Handle, QueueingHint, Resource
from kubesched.plugins import podtopologyspread as pts
from kubesched.state.cache import ClusterState
from tests.plugins.test_podtopologyspread_filtering import BAR, FOO, TAINT, tsc

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
LIST = {"defaultingType": "List"}


def plugin() -> pts.PodTopologySpread:
    return pts.new(LIST, Handle(ClusterState()))


def n(**labels: str) -> api.Node:
    return api.Node("node-a", labels=dict(labels))


def tainted(key: str, **labels: str) -> api.Node:
    return api.Node("node-a", labels=dict(labels), taints=(api.Taint(key, "bbb"),))


ZONE = (tsc(1, "zone", FOO),)
ZONE_NODE = (tsc(1, "zone", FOO), tsc(1, "node", FOO))


def target(*constraints: Any, **kw: Any) -> api.Pod:
    return api.Pod("p", uid="p", labels={"foo": ""}, topology_spread_constraints=constraints, **kw)


NODE_CASES = [
    ("node updates label which matches topologyKey", ZONE, n(zone="zone1"), n(zone="zone2"), Q),
    ("node that doesn't match updates non-related label", ZONE, n(foo="bar1"), n(foo="bar2"), SKIP),
    (
        "node that matches adds non-related label",
        ZONE_NODE,
        n(zone="zone1", node="node1", foo="bar"),
        n(zone="zone1", node="node1"),
        SKIP,
    ),
    ("create node with non-related labels", ZONE, None, n(foo="bar"), SKIP),
    ("create node with related labels", ZONE, None, n(zone="zone1"), Q),
    ("delete node with non-related labels", ZONE, n(foo="bar"), None, SKIP),
    ("delete node with related labels", ZONE, n(zone="zone1"), None, Q),
    ("add node with labels matching only one constraint", ZONE_NODE, None, n(zone="zone1"), SKIP),
    (
        "add node with labels matching all constraints",
        ZONE_NODE,
        None,
        n(zone="zone1", node="node1"),
        Q,
    ),
    (
        "update node with labels matching only one constraint",
        ZONE_NODE,
        n(zone="zone1"),
        n(zone="zone1"),
        SKIP,
    ),
    (
        "update node with labels matching all constraints",
        ZONE_NODE,
        n(zone="zone1", node="node1"),
        n(zone="zone1", node="node2"),
        Q,
    ),
    (
        "update node with different taints matching all constraints",
        ZONE_NODE,
        tainted("aaa", zone="zone1", node="node1"),
        tainted("ccc", zone="zone1", node="node1"),
        Q,
    ),
    (
        "update node with different taints matching only one constraint",
        ZONE_NODE,
        tainted("aaa", node="node1"),
        tainted("ccc", node="node1"),
        SKIP,
    ),
    ("node gains every topology key", ZONE_NODE, n(zone="zone1"), n(zone="zone1", node="n1"), Q),
]


@pytest.mark.parametrize(
    ("constraints", "old", "new", "want"),
    [c[1:] for c in NODE_CASES],
    ids=[c[0] for c in NODE_CASES],
)
def test_node_change_hint(constraints: Any, old: Any, new: Any, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_node_change(target(*constraints), old, new) == want


def other(uid: str = "p2", node: str = "fake-node", ns: str = "default", **labels: str) -> api.Pod:
    return api.Pod("q", namespace=ns, uid=uid, labels=dict(labels), node_name=node)


ZONE_BAR = (tsc(1, "zone", FOO), tsc(1, "node", BAR))
HONOR = (tsc(1, "zone", FOO, node_taints_policy="Honor"), tsc(1, "node", BAR))
IGNORE = (tsc(1, "zone", FOO, node_taints_policy="Ignore"), tsc(1, "node", BAR))
TOL = (api.Toleration(TAINT.key, "Exists"),)

POD_CASES = [
    ("add pod with labels matching the selector", ZONE, None, other(foo=""), Q),
    ("add un-scheduled pod", ZONE, None, other(node="", foo=""), SKIP),
    ("update un-scheduled pod", ZONE, other(node="", bar=""), other(node="", foo=""), SKIP),
    ("delete un-scheduled pod", ZONE, other(node="", foo=""), None, SKIP),
    ("add pod with different namespace", ZONE, None, other(ns="fake-namespace", foo=""), SKIP),
    ("add pod with labels not matching the selector", ZONE, None, other(bar=""), SKIP),
    ("delete pod with labels matching the selector", ZONE, other(foo=""), None, Q),
    ("delete pod with labels not matching the selector", ZONE, other(bar=""), None, SKIP),
    (
        "update pod's non-related label",
        ZONE,
        other(foo="", bar="bar1"),
        other(foo="", bar="bar2"),
        SKIP,
    ),
    ("add pod's label that matches the selector", ZONE, other(), other(foo=""), Q),
    ("delete pod label that matches the selector", ZONE, other(foo=""), other(), Q),
    ("change pod's label value, still matching", ZONE, other(foo="foo1"), other(foo="foo2"), SKIP),
    (
        "add label matching the second constraint",
        ZONE_BAR,
        other(foo=""),
        other(foo="", bar="bar2"),
        Q,
    ),
    ("add label matching no constraint", ZONE_BAR, other(foo=""), other(foo="", baz=""), SKIP),
    (
        "change label value still matching both",
        ZONE_BAR,
        other(foo="", bar=""),
        other(foo="", bar="bar2"),
        SKIP,
    ),
    (
        "the pod got a new toleration and a constraint honours taints",
        HONOR,
        api.Pod("p", uid="p", labels={"foo": ""}),
        api.Pod("p", uid="p", labels={"foo": ""}, tolerations=TOL),
        Q,
    ),
    (
        "the pod got a new toleration, no constraint honours taints",
        IGNORE,
        api.Pod("p", uid="p", labels={"foo": ""}),
        api.Pod("p", uid="p", labels={"foo": ""}, tolerations=TOL),
        SKIP,
    ),
    (
        "the pod got a new label matching a selector",
        IGNORE,
        api.Pod("p", uid="p"),
        api.Pod("p", uid="p", labels={"foo": ""}),
        Q,
    ),
    (
        "the pod got an unrelated label",
        IGNORE,
        api.Pod("p", uid="p"),
        api.Pod("p", uid="p", labels={"unrelated": ""}),
        SKIP,
    ),
]


@pytest.mark.parametrize(
    ("constraints", "old", "new", "want"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES]
)
def test_pod_change_hint(constraints: Any, old: Any, new: Any, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_pod_change(target(*constraints), old, new) == want


def test_events_to_register() -> None:
    events = pts.new(LIST, Handle(ClusterState(), feature_gates=FeatureGates("1.36")))
    events = events.events_to_register()
    assert [e.event.resource for e in events] == [Resource.POD, Resource.NODE]
    assert events[0].event.action == (
        ActionType.ADD
        | ActionType.UPDATE_POD_LABEL
        | ActionType.UPDATE_POD_TOLERATION
        | ActionType.DELETE
    )
    assert events[1].event.action == (
        ActionType.ADD
        | ActionType.DELETE
        | ActionType.UPDATE_NODE_LABEL
        | ActionType.UPDATE_NODE_TAINT
    )
    assert all(e.hint is not None for e in events)


def test_hints_use_default_constraints_from_services() -> None:
    cluster = ClusterState()
    cluster.services = {"default/s": ("default", {"app": "web"})}  # type: ignore[attr-defined]
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
    pl = pts.new(args, Handle(cluster))
    web = api.Pod("p", uid="p", labels={"app": "web"})
    assert pl.is_schedulable_after_pod_change(web, None, other(app="web")) == Q
    assert pl.is_schedulable_after_pod_change(web, None, other(app="db")) == SKIP
    assert pl.is_schedulable_after_node_change(web, None, n(zone="z")) == Q


def test_sign_pods_without_constraints_or_with_hard_ones_only() -> None:
    cluster = ClusterState()
    pl = pts.new(None, Handle(cluster))
    assert pl.sign(api.Pod("a")) is not None
    hard = pl.sign(target(*ZONE))
    assert hard is not None and hard != pl.sign(api.Pod("a"))
    assert pl.sign(target(*ZONE_NODE)) != hard
    other_labels = api.Pod(
        "p", uid="q", labels={"foo": "", "x": "1"}, topology_spread_constraints=ZONE
    )
    assert pl.sign(other_labels) == hard  # labels no selector reads do not matter
    no_self = api.Pod("p", uid="p", labels={"bar": ""}, topology_spread_constraints=ZONE)
    assert pl.sign(no_self) != hard  # the Pod no longer counts itself
    assert pl.sign(target(*ZONE, namespace="other")) != hard
    assert pl.sign(target(tsc(1, "zone", FOO, "ScheduleAnyway"))) is None
    assert pl.sign(target(tsc(1, "zone", FOO), tsc(1, "node", FOO, "ScheduleAnyway"))) is None
    cluster.services = {"default/s": ("default", {"app": "web"})}  # type: ignore[attr-defined]
    assert pl.sign(api.Pod("a", labels={"app": "web"})) is None
    assert pl.sign(api.Pod("a", labels={"app": "db"})) is not None


TARGET_CASES = [c for c in POD_CASES if c[0].startswith("the pod got")]


@pytest.mark.parametrize(
    ("constraints", "old", "new", "want"),
    [c[1:] for c in TARGET_CASES],
    ids=[c[0] for c in TARGET_CASES],
)
def test_target_pod_change_hint_v137(
    constraints: Any, old: Any, new: Any, want: QueueingHint
) -> None:
    """v1.37 ``isSchedulableAfterTargetPodChange``: the same answers for the Pod's own update,
    without a same-Pod check (only the queued Pod's update is a TargetPod event)."""
    pl = pts.new(LIST, Handle(ClusterState(), feature_gates=FeatureGates("1.37")))
    me = target(*constraints)
    assert pl.is_schedulable_after_target_pod_change(me, old, new) == want
    renamed_old = api.Pod("q", uid="q", labels=old.labels, tolerations=old.tolerations)
    renamed_new = api.Pod("q", uid="q", labels=new.labels, tolerations=new.tolerations)
    assert pl.is_schedulable_after_target_pod_change(me, renamed_old, renamed_new) == want


def test_events_to_register_v137() -> None:
    """v1.37: AssignedPod Add|UpdatePodLabel|Delete, TargetPod UpdatePodToleration|
    UpdatePodLabel, Node as before."""
    registered = plugin().events_to_register()
    assert [(e.event.resource, e.event.action) for e in registered] == [
        (Resource.ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        (Resource.TARGET_POD, ActionType.UPDATE_POD_TOLERATION | ActionType.UPDATE_POD_LABEL),
        (
            Resource.NODE,
            ActionType.ADD
            | ActionType.DELETE
            | ActionType.UPDATE_NODE_LABEL
            | ActionType.UPDATE_NODE_TAINT,
        ),
    ]
