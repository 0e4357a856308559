"""NodeDeclaredFeatures: upstream ``nodedeclaredfeatures_test.go`` (PreFilter, Filter, hints)
as data, the per-release registries and reasons, and the plugin in a configured profile."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.api.nodefeatures import (
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
    VOLUME_BIND_MOUNT_OPTIONS,
)
from kubesched.api.parse import parse_node, parse_pod
from kubesched.config.featuregates import FeatureGates
from kubesched.framework.interface import (
    ActionType,
    Code,
    CycleState,
    Handle,
    QueueingHint,
    Status,
)
from kubesched.plugins import nodedeclaredfeatures as ndf
from kubesched.plugins.registry import in_tree_registry
from kubesched.testing import conformance, make_cluster, make_node, make_pod

Q, S = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
UNSATISFIED = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match Pod's required features",)
)


def plugin(
    version: str = ndf.NEWEST, enabled: bool = True, **gates: bool
) -> ndf.NodeDeclaredFeatures:
    handle = Handle(
        make_cluster([]), feature_gates=FeatureGates(version, tuple(sorted(gates.items())))
    )
    made = ndf.factory(version, enabled)(None, handle)
    assert isinstance(made, ndf.NodeDeclaredFeatures)
    return made


def needing(*features: str, name: str = "p") -> api.Pod:
    pod = make_pod(name).obj()
    pod.required_features = tuple(sorted(features))
    return pod


def declaring(name: str, *features: str) -> api.Node:
    node = make_node(name).obj()
    node.declared_features = tuple(sorted(features))
    return node


def test_registered_under_its_upstream_name() -> None:
    assert in_tree_registry()["NodeDeclaredFeatures"] is ndf.new


def test_conformant() -> None:
    assert conformance.check_plugin(ndf.new, None) == []
    assert conformance.check_plugin(ndf.factory("1.35"), None) == []


def test_pre_filter_skips_a_pod_needing_nothing() -> None:
    state = CycleState()
    _, status = plugin().pre_filter(state, make_pod("p").obj(), make_cluster([]))
    assert status.code == Code.SKIP


def test_pre_filter_skips_everything_when_disabled() -> None:
    p = plugin(enabled=False)
    _, status = p.pre_filter(CycleState(), needing(RESTART_ALL_CONTAINERS), make_cluster([]))
    assert status.code == Code.SKIP
    assert p.events_to_register() == []


def test_filter_keeps_nodes_declaring_every_needed_feature() -> None:
    cluster = make_cluster(
        [
            declaring("none"),
            declaring("one", RESTART_ALL_CONTAINERS),
            declaring("both", RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK),
            declaring("other", "SomeFutureFeature", USER_NAMESPACES_HOST_NETWORK),
        ]
    )
    pod = needing(RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK)
    p, state = plugin(), CycleState()
    _, status = p.pre_filter(state, pod, cluster)
    assert status.code == Code.SUCCESS
    verdict = p.filter(state, pod, cluster, cluster.nodes.order())
    fails = [bool(c) for c in verdict.codes]
    assert fails == [True, True, False, True]
    assert {verdict.table[int(c)] for c in verdict.codes if c} == {UNSATISFIED}


def test_filter_without_pre_filter_state_is_an_error() -> None:
    cluster = make_cluster([declaring("n")])
    verdict = plugin().filter(
        CycleState(), needing(RESTART_ALL_CONTAINERS), cluster, cluster.nodes.order()
    )
    status = verdict.table[int(verdict.codes[0])]
    assert status.code == Code.ERROR
    assert status.reasons == (
        'error reading "PreFilterNodeDeclaredFeatures" from cycle-state: not found',
    )


@pytest.mark.parametrize(
    ("version", "needs"),
    [
        ("1.35", (RESTART_ALL_CONTAINERS,)),
        ("1.36", (RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK)),
        ("1.37", (RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK, VOLUME_BIND_MOUNT_OPTIONS)),
    ],
)
def test_each_release_needs_only_the_features_it_registers(
    version: str, needs: tuple[str, ...]
) -> None:
    pod = needing(RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK, VOLUME_BIND_MOUNT_OPTIONS)
    gates = {"VolumeBindMountOptions": True} if version == "1.37" else {}
    assert plugin(version, **gates).requirements(pod) == needs
    assert plugin(version, **gates).sign(pod) == needs


def test_a_feature_whose_pod_field_the_api_server_drops_is_never_needed() -> None:
    """The API server drops ``bindMountOptions`` without VolumeBindMountOptions (Alpha, off in
    v1.37) and ``restartPolicyRules`` without ContainerRestartRules: the Pod needs nothing."""
    pod = needing(RESTART_ALL_CONTAINERS, VOLUME_BIND_MOUNT_OPTIONS)
    assert plugin("1.37").requirements(pod) == (RESTART_ALL_CONTAINERS,)
    assert plugin("1.36", ContainerRestartRules=False).requirements(pod) == ()
    assert plugin("1.37", VolumeBindMountOptions=True).requirements(pod) == (
        RESTART_ALL_CONTAINERS,
        VOLUME_BIND_MOUNT_OPTIONS,
    )


def test_v135_reason_names_the_missing_features() -> None:
    cluster = make_cluster([declaring("n")])
    pod = needing(RESTART_ALL_CONTAINERS)
    p, state = plugin("1.35"), CycleState()
    p.pre_filter(state, pod, cluster)
    verdict = p.filter(state, pod, cluster, cluster.nodes.order())
    assert verdict.table[int(verdict.codes[0])] == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        (
            "node declared features check failed - unsatisfied requirements: "
            "RestartAllContainersOnContainerExits",
        ),
    )


def test_unknown_release_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no such release '1\.34'"):
        ndf.factory("1.34")


# --------------------------------------------------------------------------- hints
NODE_HINT_CASES: list[tuple[str, Any, Any, QueueingHint]] = [
    ("backoff-wrong-new-object", None, "not-a-node", Q),
    ("queue-on-node-add", None, declaring("n"), Q),
    ("skip-unchanged-features", declaring("n", "A"), declaring("n", "A"), S),
    ("queue-on-changed-features", declaring("n", "A"), declaring("n", "A", "B"), Q),
]


@pytest.mark.parametrize(
    ("old", "new", "want"), [c[1:] for c in NODE_HINT_CASES], ids=[c[0] for c in NODE_HINT_CASES]
)
def test_hint_node_change(old: object, new: object, want: QueueingHint) -> None:
    assert ndf.is_schedulable_after_node_change(make_pod("p").obj(), old, new) == want


def test_hint_target_pod_update() -> None:
    """v1.35/v1.36 register ``Pod/Update``: another Pod's update is skipped."""
    p = plugin("1.36")
    target = needing(RESTART_ALL_CONTAINERS)
    same = needing(RESTART_ALL_CONTAINERS)
    fewer = needing()
    other = needing(name="other")
    hint = p.is_schedulable_after_target_pod_update
    assert hint(target, target, same) == S
    assert hint(target, target, fewer) == Q
    assert hint(target, needing(RESTART_ALL_CONTAINERS, name="other"), other) == S
    assert hint(target, None, "not-a-pod") == Q


def test_hint_target_pod_update_v137() -> None:
    """v1.37 registers ``TargetPod/Update``: only the queued Pod's own update arrives, and
    the hint compares old and new requirements without a same-Pod check."""
    hint = plugin("1.37").is_schedulable_after_target_pod_update
    target = needing(RESTART_ALL_CONTAINERS)
    assert hint(target, needing(RESTART_ALL_CONTAINERS, name="other"), needing(name="other")) == Q
    assert hint(target, target, needing(RESTART_ALL_CONTAINERS)) == S


@pytest.mark.parametrize(("version", "resource"), [("1.36", "Pod"), ("1.37", "TargetPod")])
def test_events_registered(version: str, resource: str) -> None:
    events = [e.event for e in plugin(version).events_to_register()]
    assert [(e.resource.value, int(e.action)) for e in events] == [
        ("Node", int(ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE)),
        (resource, int(ActionType.UPDATE)),
    ]


# --------------------------------------------------------------------------- parsing
def container(**extra: Any) -> dict[str, Any]:
    return {"name": "c", "image": "i", **extra}


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ({"containers": [container()]}, ()),
        (
            {"containers": [container(restartPolicyRules=[{"action": "RestartAllContainers"}])]},
            (RESTART_ALL_CONTAINERS,),
        ),
        (
            {"containers": [container(restartPolicyRules=[{"action": "Restart"}])]},
            (),
        ),
        (
            {
                "containers": [container()],
                "initContainers": [
                    container(restartPolicyRules=[{"action": "RestartAllContainers"}])
                ],
            },
            (RESTART_ALL_CONTAINERS,),
        ),
        (
            {"containers": [container()], "hostNetwork": True, "hostUsers": False},
            (USER_NAMESPACES_HOST_NETWORK,),
        ),
        ({"containers": [container()], "hostNetwork": True}, ()),
        ({"containers": [container()], "hostUsers": False}, ()),
        (
            {
                "containers": [
                    container(
                        volumeMounts=[{"name": "v", "mountPath": "/v", "bindMountOptions": ["ro"]}]
                    )
                ]
            },
            (VOLUME_BIND_MOUNT_OPTIONS,),
        ),
        (
            {
                "containers": [container()],
                "ephemeralContainers": [
                    container(
                        volumeMounts=[{"name": "v", "mountPath": "/v", "bindMountOptions": ["ro"]}]
                    )
                ],
            },
            (VOLUME_BIND_MOUNT_OPTIONS,),
        ),
        (
            {"containers": [container(volumeMounts=[{"name": "v", "mountPath": "/v"}])]},
            (),
        ),
    ],
)
def test_parse_infers_what_a_pod_needs(spec: dict[str, Any], want: tuple[str, ...]) -> None:
    pod = parse_pod({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
    assert pod.required_features == want


def test_parse_reads_node_declared_features() -> None:
    node = parse_node(
        {
            "kind": "Node",
            "metadata": {"name": "n"},
            "status": {"declaredFeatures": ["A", "B"]},
        }
    )
    assert node.declared_features == ("A", "B")


@pytest.mark.parametrize(
    ("features", "message"),
    [
        (["B", "A"], 'status.declaredFeatures[1]: Invalid value: "A": list must be sorted'),
        (["A", "A"], 'status.declaredFeatures[1]: Duplicate value: "A"'),
    ],
)
def test_parse_refuses_what_the_api_server_refuses(features: list[str], message: str) -> None:
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_node(
            {"kind": "Node", "metadata": {"name": "n"}, "status": {"declaredFeatures": features}}
        )


# --------------------------------------------------------------------------- in a profile
def _node_manifest(name: str, *features: str) -> dict[str, Any]:
    status: dict[str, Any] = {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
    if features:
        status["declaredFeatures"] = list(features)
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": status}


ENABLED = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {"enabled": [{"name": "NodeDeclaredFeatures"}]}},
        }
    ],
}


def test_explain_with_a_profile_that_enables_it() -> None:
    import kubesched

    cluster = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [_node_manifest("plain"), _node_manifest("able", RESTART_ALL_CONTAINERS)],
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [container(restartPolicyRules=[{"action": "RestartAllContainers"}])]
        },
    }
    answer = kubesched.explain(cluster, pod, ENABLED)
    assert answer["selectedNode"] == "able"
    assert answer["nodes"]["plain"]["plugin"] == "NodeDeclaredFeatures"
    assert answer["nodes"]["plain"]["reasons"] == ["node(s) didn't match Pod's required features"]
    assert answer["result"] == "Scheduled"
    alone = {**cluster, "items": cluster["items"][:1]}
    refused = kubesched.explain(alone, pod, ENABLED)
    assert refused["result"] == "Unschedulable"
    assert refused["message"].startswith(
        "0/1 nodes are available: 1 node(s) didn't match Pod's required features."
    )
    # v1.34's default profile does not have the plugin: both nodes fit
    old = kubesched.explain(cluster, pod, kubernetes_version="1.34")
    assert old["nodes"]["plain"]["feasible"] is True
    # v1.36's and v1.37's (the default) have it, on by default
    for version in ("1.36", None):
        new = kubesched.explain(cluster, pod, kubernetes_version=version)
        assert new["nodes"]["plain"]["plugin"] == "NodeDeclaredFeatures"
    # v1.35's profile lists it only with its Alpha gate on
    off = kubesched.explain(cluster, pod, kubernetes_version="1.35")
    assert off["nodes"]["plain"]["feasible"] is True
    on = kubesched.explain(
        cluster, pod, kubernetes_version="1.35", feature_gates={"NodeDeclaredFeatures": True}
    )
    assert on["nodes"]["plain"]["plugin"] == "NodeDeclaredFeatures"


def test_explain_v137_bind_mount_options_need_their_alpha_gate() -> None:
    """v1.37's API server drops ``bindMountOptions`` with VolumeBindMountOptions off (its
    default), so the Pod needs no declared feature: upstream's kube-oracle v1.37 places it on
    a node declaring nothing (``oracle/diff.py --kubernetes-version 1.37 --seed 21``, case
    154); with the gate on it needs the node to declare VolumeBindMountOptions."""
    import kubesched

    mount = {"name": "bind", "mountPath": "/bind", "bindMountOptions": ["ro"]}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [container(volumeMounts=[mount])],
            "volumes": [{"name": "bind", "emptyDir": {}}],
        },
    }
    cluster = {"apiVersion": "v1", "kind": "List", "items": [_node_manifest("plain")]}
    off = kubesched.explain(cluster, pod, kubernetes_version="1.37")
    assert off["nodes"]["plain"]["feasible"] is True
    on = kubesched.explain(
        cluster, pod, kubernetes_version="1.37", feature_gates={"VolumeBindMountOptions": True}
    )
    assert on["nodes"]["plain"]["plugin"] == "NodeDeclaredFeatures"


# --------------------------------------------------------------------------- the rooms beside
def test_a_declared_features_change_is_a_node_update_event() -> None:
    from kubesched.framework import events
    from kubesched.queue import events as qevents

    old, new = declaring("n", "A"), declaring("n", "A", "B")
    assert events.node_update_events(old, new) == [events.NODE_DECLARED_FEATURES_CHANGE]
    assert qevents.event_label(events.NODE_DECLARED_FEATURES_CHANGE) == (
        "NodeUpdateNodeDeclaredFeature"
    )
    assert [e.action for e in qevents.node_scheduling_properties_change(new, old)] == [
        ActionType.UPDATE_NODE_DECLARED_FEATURE
    ]
    assert events.node_update_events(old, declaring("n", "A")) == []


def test_the_node_table_interns_declared_feature_lists() -> None:
    cluster = make_cluster([declaring("a", "X"), declaring("b"), declaring("c", "X")])
    table = cluster.nodes
    ids = table.feature_set[table.order()].tolist()
    assert [table.feature_sets[i] for i in ids] == [("X",), (), ("X",)]
    cluster.update_node(declaring("b", "Y"))
    assert table.feature_sets[int(table.feature_set[table.row_of["b"]])] == ("Y",)


def test_the_quick_pod_path_leaves_feature_sections_to_the_full_parse() -> None:
    from kubesched.api.podquick import quick_pod

    def manifest(**spec: Any) -> dict[str, Any]:
        return {"kind": "Pod", "metadata": {"name": "p"}, "spec": spec}

    assert quick_pod(manifest(containers=[container()])) is not None
    rules = [{"action": "RestartAllContainers"}]
    assert quick_pod(manifest(containers=[container(restartPolicyRules=rules)])) is None
    mounts = [{"name": "v", "mountPath": "/v", "bindMountOptions": ["ro"]}]
    assert quick_pod(manifest(containers=[container(volumeMounts=mounts)])) is None
    assert quick_pod(manifest(containers=[container()], ephemeralContainers=[])) is None


def test_a_rejected_pod_is_requeued_when_the_node_declares_the_feature() -> None:
    from kubesched.testing import drain, new_scheduler

    def node(*features: str, **labels: str) -> api.Node:
        n = make_node("n").res({"cpu": "4", "memory": "8Gi", "pods": 110}).labels(**labels).obj()
        n.declared_features = features
        return n

    s, fake, clock = new_scheduler(ENABLED)
    plain = node()
    s.on_node_add(plain)
    pod = make_pod("p").req(cpu="1").obj()
    pod.required_features = (RESTART_ALL_CONTAINERS,)
    s.on_pod_add(pod)
    drain(s)
    assert fake.bound == []
    labelled = node(team="a")
    s.on_node_update(plain, labelled)  # not an event NodeDeclaredFeatures registered
    clock.now += 20
    drain(s)
    assert fake.bound == []
    s.on_node_update(labelled, node(RESTART_ALL_CONTAINERS, team="a"))
    clock.now += 20
    drain(s)
    assert fake.bound == [("default/p", "n")]
