"""kubesched.explain on the shared kubectl snapshot and on hand-made clusters
(docs/design.md section 5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import kubesched

SNAPSHOT = (
    Path(__file__).resolve().parents[3] / "shared" / "data" / "snapshots" / "kind-like-cluster.json"
)


def node(
    name: str, cpu: str = "4", taints: list[dict[str, str]] | None = None, **labels: str
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str = "100m", node_name: str | None = None, **spec: Any) -> dict[str, Any]:
    p: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
    }
    if node_name:
        p["spec"]["nodeName"] = node_name
    return p


def as_list(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def test_result_has_the_contract_shape_and_upstream_message() -> None:
    cluster = as_list(
        node("a", cpu="1"),
        node("b", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        node("c", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
    )
    out = kubesched.explain(cluster, pod("p", cpu="2"))
    keys = {"pod", "profile", "kubernetesVersion", "result", "selectedNode", "message", "nodes"}
    assert set(out) == keys | {"capacity"}  # capacity: only in Unschedulable answers
    assert out["pod"] == "default/p"
    assert out["kubernetesVersion"] == "1.37"  # the default: the newest supported
    assert out["profile"] == "default-scheduler"
    assert out["result"] == "Unschedulable"
    assert out["selectedNode"] is None
    assert out["message"] == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s)."
    )
    assert out["nodes"]["a"] == {
        "feasible": False,
        "plugin": "NodeResourcesFit",
        "reasons": ["Insufficient cpu"],
        "score": 0,
        "scores": {},
    }
    assert out["nodes"]["b"]["plugin"] == "TaintToleration"
    assert kubesched.explain(cluster, pod("p"), kubernetes_version="1.34")["kubernetesVersion"] == (
        "1.34"
    )
    # a alone passes the other filters, and its whole cpu is less than the Pod asks
    assert (out["capacity"]["verdict"], out["capacity"]["eligibleNodes"]) == ("tooLarge", 1)
    json.dumps(out)  # JSON-ready


def test_scores_are_normalized_per_plugin_and_weighted_into_the_total() -> None:
    cluster = as_list(node("busy"), node("idle"), pod("running", cpu="3", node_name="busy"))
    out = kubesched.explain(cluster, pod("p", cpu="1"))
    assert out["result"] == "Scheduled"
    assert out["selectedNode"] == "idle"
    weights = {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }
    for info in out["nodes"].values():
        assert info["feasible"]
        assert all(0 <= s <= 100 for s in info["scores"].values())
        assert info["score"] == sum(weights[p] * s for p, s in info["scores"].items())
    # LeastAllocated on cpu (memory requests are the non-zero default 200Mi on both):
    assert (
        out["nodes"]["idle"]["scores"]["NodeResourcesFit"]
        > out["nodes"]["busy"]["scores"]["NodeResourcesFit"]
    )


def test_every_node_is_evaluated_even_in_a_large_cluster() -> None:
    items = [node(f"n{i:03d}") for i in range(250)]
    out = kubesched.explain(as_list(*items), pod("p"))
    assert len(out["nodes"]) == 250
    assert all(n["feasible"] and n["scores"] for n in out["nodes"].values())


def test_unknown_profile_is_an_error_result() -> None:
    out = kubesched.explain(as_list(node("a")), pod("p", schedulerName="other"))
    assert out["result"] == "Error"
    assert "other" in out["message"]


def test_node_selector_mismatch_reason() -> None:
    out = kubesched.explain(
        as_list(node("a", zone="z1"), node("b", zone="z2")), pod("p", nodeSelector={"zone": "z2"})
    )
    assert out["selectedNode"] == "b"
    assert out["nodes"]["a"]["reasons"] == ["node(s) didn't match Pod's node affinity/selector"]


@pytest.mark.skipif(not SNAPSHOT.exists(), reason="shared snapshot not present")
def test_the_shared_snapshot_explains_the_pending_web_pod() -> None:
    snapshot = json.loads(SNAPSHOT.read_text())
    pending = next(i for i in snapshot["items"] if i["metadata"]["name"] == "web-6d4cf56db6-3abcd")
    out = kubesched.explain(snapshot, pending)
    assert out["pod"] == "shop/web-6d4cf56db6-3abcd"
    nodes = out["nodes"]
    assert set(nodes) == {"kind-control-plane", "kind-worker", "kind-worker2", "gpu-node-0"}
    assert nodes["kind-control-plane"]["reasons"] == ["node(s) had untolerated taint(s)"]
    assert nodes["gpu-node-0"]["reasons"] == ["node(s) had untolerated taint(s)"]
    assert out["result"] == "Scheduled"
    assert out["selectedNode"] in ("kind-worker", "kind-worker2")


def to_nodes(*names: str) -> dict[str, Any]:
    """Required node affinity to ``names`` by ``metadata.name`` (one term each, ORed), as a
    DaemonSet controller writes it."""
    terms = [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}
        for name in names
    ]
    req = {"nodeSelectorTerms": terms}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": req}}


def test_affinity_to_a_deleted_node_is_unschedulable_on_every_node() -> None:
    """Upstream: NodeAffinity's PreFilterResult names only the ghost; findNodesThatFitPod
    keeps the names the snapshot has (none) and gives every other node its reason."""
    out = kubesched.explain(
        as_list(node("n1"), node("n2"), node("n3")), pod("ds", affinity=to_nodes("ghost"))
    )
    assert out["result"] == "Unschedulable"
    assert out["selectedNode"] is None
    assert out["message"] == (
        "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
    reason = "node(s) didn't satisfy plugin(s) [NodeAffinity]"
    rejected = {"feasible": False, "plugin": "NodeAffinity", "reasons": [reason]}
    assert out["nodes"] == {n: {**rejected, "score": 0, "scores": {}} for n in ("n1", "n2", "n3")}


def test_affinity_to_a_deleted_and_an_existing_node_filters_the_existing_one() -> None:
    cluster = as_list(
        node("n1"), node("n2", cpu="2"), node("n3"), pod("full", cpu="2", node_name="n2")
    )
    out = kubesched.explain(cluster, pod("ds", cpu="1", affinity=to_nodes("ghost", "n2")))
    assert out["result"] == "Unschedulable"
    assert out["message"] == (
        "0/3 nodes are available: 1 Insufficient cpu, "
        "2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
    assert out["nodes"]["n2"]["plugin"] == "NodeResourcesFit"
    assert out["nodes"]["n1"]["plugin"] == out["nodes"]["n3"]["plugin"] == "NodeAffinity"


def test_a_gated_pod_is_gated_with_schedules_message_and_the_nodes_as_if_ungated() -> None:
    """Upstream's PreEnqueue keeps a Pod with schedulingGates out of activeQ: no cycle, no
    node.  explain says so as ``schedule`` does and still evaluates every node."""
    cluster = as_list(node("a", cpu="1"), node("b"))
    gated = pod("g", cpu="2", schedulingGates=[{"name": "example.com/hold"}, {"name": "x/y"}])
    out = kubesched.explain(cluster, gated)
    assert out["result"] == "Gated"
    assert out["selectedNode"] is None
    assert out["message"] == "waiting for scheduling gates: [example.com/hold x/y]"
    scheduled = kubesched.schedule(cluster, as_list(gated))["pods"]["default/g"]
    assert (scheduled["result"], scheduled["message"]) == ("Gated", out["message"])
    assert out["nodes"]["a"]["reasons"] == ["Insufficient cpu"]
    assert out["nodes"]["b"]["feasible"] and out["nodes"]["b"]["scores"]
    ungated = kubesched.explain(cluster, pod("g", cpu="2"))
    assert out["nodes"] == ungated["nodes"]


def test_preemption_dry_run_names_the_node_and_victims_without_deleting() -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}},
    }

    def pod_of(name: str, cpu: str, priority: int, node_name: str = "") -> dict[str, Any]:
        spec: dict[str, Any] = {
            "priority": priority,
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
        }
        if node_name:
            spec["nodeName"] = node_name
        return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}

    low = {"apiVersion": "v1", "kind": "Pod", **pod_of("low", "1500m", 0, "n1")}
    cluster = {"apiVersion": "v1", "kind": "List", "items": [node, low]}
    high = pod_of("high", "1", 100)
    plain = kubesched.explain(cluster, high)
    assert plain["result"] == "Unschedulable" and "preemption" not in plain
    out = kubesched.explain(cluster, high, preemption=True)
    assert out["preemption"] == {
        "message": "preemption: found a potential placement for pod on node n1, "
        "preempting 1 victims",
        "nominatedNode": "n1",
        "victims": ["default/low"],
    }
    v134 = kubesched.explain(cluster, high, preemption=True, kubernetes_version="1.34")
    assert v134["preemption"] == {"message": "", "nominatedNode": "n1", "victims": ["default/low"]}
    never = {**high, "spec": {**high["spec"], "preemptionPolicy": "Never"}}
    assert kubesched.explain(cluster, never, preemption=True)["preemption"] == {
        "message": "preemption: not eligible due to preemptionPolicy=Never.",
        "nominatedNode": None,
        "victims": [],
    }
    assert kubesched.explain(cluster, high)["result"] == "Unschedulable"  # nothing deleted
