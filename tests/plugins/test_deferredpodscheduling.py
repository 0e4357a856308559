"""DeferredPodScheduling (v1.37, gate InPlacePodVerticalScalingSchedulerPreemption):
upstream ``deferred_pod_scheduling_test.go``'s cases as data, the Pod and Node fields it
reads, the default profile under the gate, and what the other filter plugins do with a Pod
whose resize is deferred (explain, as the oracle checks it)."""

from __future__ import annotations

from typing import Any

import pytest

import kubesched
from kubesched.api import objects as api
from kubesched.api.parse import parse_node, parse_pod
from kubesched.api.podquick import quick_pod
from kubesched.config.featuregates import FeatureGates
from kubesched.framework.events import node_update_events
from kubesched.framework.interface import (
    ActionType,
    Code,
    CycleState,
    Handle,
    QueueingHint,
)
from kubesched.plugins import deferredpodscheduling as dps
from kubesched.plugins.registry import in_tree_registry
from kubesched.queue.events import event_label, node_scheduling_properties_change
from kubesched.testing import conformance, make_cluster, make_pod

GATE = "InPlacePodVerticalScalingSchedulerPreemption"
Q, S = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def plugin(on: bool = True, version: str = "1.37") -> dps.DeferredPodScheduling:
    gates = ((GATE, True),) if on else ()
    handle = Handle(make_cluster([]), feature_gates=FeatureGates(version, gates))
    return dps.new(None, handle)


def condition(reason: str) -> dict[str, Any]:
    return {"type": "PodResizePending", "status": "True", "reason": reason}


def manifest(*conditions: dict[str, Any], node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": "p", "namespace": "default", "uid": "p"},
        "spec": spec,
        "status": {"conditions": list(conditions)},
    }


def deferred(node: str = "") -> api.Pod:
    return parse_pod(manifest(condition("Deferred"), node=node))


def node(name: str, *owners: str) -> api.Node:
    obj: dict[str, Any] = {"metadata": {"name": name}, "status": {"allocatable": {"pods": "10"}}}
    if owners:
        obj["spec"] = {"podPreemptionPolicy": {"disableResizePreemption": list(owners)}}
    return parse_node(obj)


def test_registered_and_conformant() -> None:
    assert in_tree_registry()["DeferredPodScheduling"] is dps.new
    assert conformance.check_plugin(dps.new, None) == []


@pytest.mark.parametrize(
    ("conditions", "want"),
    [
        ((), False),
        ((condition("Deferred"),), True),
        ((condition("Infeasible"),), False),
        ((condition("Infeasible"), condition("Deferred")), False),  # the first one counts
        (({"type": "PodResizeInProgress", "status": "True"}, condition("Deferred")), True),
    ],
)
def test_a_pod_is_resize_deferred_by_its_first_pending_condition(
    conditions: tuple[dict[str, Any], ...], want: bool
) -> None:
    obj = manifest(*conditions)
    assert parse_pod(obj).resize_deferred is want
    quick = quick_pod(obj)
    assert quick is None or quick.pod.resize_deferred is want


def test_the_node_field() -> None:
    assert node("n", "autoscaler").resize_preemption_disabled
    assert not node("n").resize_preemption_disabled
    empty = parse_node({"metadata": {"name": "n"}, "spec": {"podPreemptionPolicy": {}}})
    assert not empty.resize_preemption_disabled


def test_pre_filter_skips_unless_the_gate_is_on_and_the_resize_deferred() -> None:
    cluster = make_cluster([])
    plain = make_pod("q").obj()
    assert plugin().pre_filter(CycleState(), plain, cluster)[1].code == Code.SKIP
    assert plugin(on=False).pre_filter(CycleState(), deferred(), cluster)[1].code == Code.SKIP
    assert plugin().pre_filter(CycleState(), deferred(), cluster)[1].is_success()


def _filter(p: dps.DeferredPodScheduling, pod: api.Pod, nodes: list[api.Node]) -> list[str]:
    cluster = make_cluster(nodes)
    rows = cluster.nodes.order()
    verdict = p.filter(CycleState(), pod, cluster, rows)
    out = []
    for code in verdict.codes.tolist():
        if code == 0:
            out.append("")
            continue
        st = verdict.table[code]
        assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        out.append(st.reasons[0])
    return out


def test_filter_keeps_the_pod_to_its_node_where_resize_preemption_is_allowed() -> None:
    nodes = [node("a"), node("b", "vpa"), node("c")]
    other, off = dps.ERR_REASON_OTHER_NODE, dps.ERR_REASON_DISABLED
    assert _filter(plugin(), deferred("a"), nodes) == ["", other, other]
    assert _filter(plugin(), deferred("b"), nodes) == [other, off, other]
    assert _filter(plugin(), deferred(), nodes) == ["", off, ""]  # placed anew (explain)
    assert _filter(plugin(on=False), deferred("b"), nodes) == ["", "", ""]
    assert _filter(plugin(), make_pod("q").obj(), nodes) == ["", "", ""]


def test_permit_rejects_the_deferred_pod_that_fits() -> None:
    status, _ = plugin().permit(CycleState(), deferred("a"), "a")
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (dps.PERMIT_REASON,)
    assert plugin(on=False).permit(CycleState(), deferred("a"), "a")[0].is_success()
    assert plugin().permit(CycleState(), make_pod("q").obj(), "a")[0].is_success()


def test_hints() -> None:
    p = plugin()
    change, add = (e.hint for e in p.events_to_register())
    assert change is not None and add is not None
    pod = deferred("a")
    assert change(pod, node("a", "vpa"), node("a")) == Q
    assert change(pod, node("a"), node("a", "vpa")) == S
    assert change(pod, node("b", "vpa"), node("b")) == S
    assert change(make_pod("q").obj(), node("a", "vpa"), node("a")) == S
    assert add(pod, None, node("a")) == Q
    assert add(pod, None, node("a", "vpa")) == S
    assert add(pod, None, node("b")) == S
    assert plugin(on=False).events_to_register()[1].hint(pod, None, node("a")) == S


def test_a_policy_change_is_an_event_of_its_own() -> None:
    for change in (node_scheduling_properties_change, node_update_events):
        events = change(node("a", "vpa"), node("a"))
        assert [e.action for e in events] == [ActionType.UPDATE_NODE_PREEMPTION_POLICY]
        assert change(node("a"), node("a")) == []
    assert event_label(node_update_events(node("a"), node("a", "x"))[0]) == (
        "NodeUpdateNodePreemptionPolicy"
    )


def _cluster() -> list[dict[str, Any]]:
    def n(name: str, **spec: Any) -> dict[str, Any]:
        alloc = {"cpu": "4", "memory": "8Gi", "pods": "10"}
        return {"kind": "Node", "metadata": {"name": name}, "spec": spec,
                "status": {"allocatable": alloc}}  # fmt: skip

    return [
        n("tainted", taints=[{"key": "k", "effect": "NoSchedule"}]),
        n("cordoned", unschedulable=True),
        n("closed", podPreemptionPolicy={"disableResizePreemption": ["vpa"]}),
        n("small"),
    ]


def _incoming(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "nodeName": "small",
            "nodeSelector": {"missing": "label"},
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}],
        },
        "status": {"conditions": list(conditions)},
    }


def _verdicts(pod: dict[str, Any], **gates: bool) -> dict[str, str | None]:
    out = kubesched.explain(_cluster(), pod, kubernetes_version="1.37", feature_gates=gates)
    return {name: v["plugin"] for name, v in out["nodes"].items()}


def test_explain_skips_the_other_filters_for_a_deferred_resize_under_the_gate() -> None:
    pod = _incoming(condition("Deferred"))
    assert _verdicts(pod, **{GATE: True}) == {
        "tainted": None,
        "cordoned": None,
        "closed": "DeferredPodScheduling",
        "small": None,
    }
    assert set(_verdicts(pod).values()) == {"NodeUnschedulable", "NodeAffinity", "TaintToleration"}
    infeasible = _incoming(condition("Infeasible"))
    assert None not in _verdicts(infeasible, **{GATE: True}).values()


def test_the_gate_is_unknown_before_v1_37() -> None:
    with pytest.raises(Exception, match=GATE):
        kubesched.explain(_cluster(), _incoming(), kubernetes_version="1.36",
                          feature_gates={GATE: True})  # fmt: skip


def test_scoring_a_deferred_pod_fails_as_upstream_does() -> None:
    """Upstream's VolumeBinding PreScore (with StorageCapacityScoring's scorer) and
    DynamicResources' Score read the PreFilter state they did not write: an Error."""
    pod = _incoming(condition("Deferred"))
    out = kubesched.explain(_cluster(), pod, kubernetes_version="1.37", feature_gates={GATE: True})
    assert (out["result"], out["message"]) == (
        "Error",
        'running PreScore plugin "VolumeBinding": not found',
    )
    gates = {GATE: True, "StorageCapacityScoring": False}
    out = kubesched.explain(_cluster(), pod, kubernetes_version="1.37", feature_gates=gates)
    assert (out["result"], out["message"]) == (
        "Error",
        'running Score plugins: plugin "DynamicResources" failed with: not found',
    )
    disabled = [{"name": "VolumeBinding"}, {"name": "DynamicResources"}]
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"plugins": {"multiPoint": {"disabled": disabled}}}],
    }
    out = kubesched.explain(
        _cluster(), pod, config, kubernetes_version="1.37", feature_gates={GATE: True}
    )
    assert out["result"] == "Scheduled"  # no Permit rejection: upstream never gets there
