"""kubesched.schedule: the offline what-if through the real queue in virtual time."""

from __future__ import annotations

from typing import Any

import kubesched
from tests.explainer.test_explain import as_list, node, pod, to_nodes


def test_pods_are_scheduled_in_creation_order_until_nothing_fits() -> None:
    cluster = as_list(node("a", cpu="2"))
    late = pod("late", cpu="1")
    late["metadata"]["creationTimestamp"] = "2026-01-01T00:00:10Z"
    early = pod("early", cpu="1")
    early["metadata"]["creationTimestamp"] = "2026-01-01T00:00:01Z"
    third = pod("third", cpu="1")
    third["metadata"]["creationTimestamp"] = "2026-01-01T00:00:20Z"
    out = kubesched.schedule(cluster, as_list(late, third, early))
    pods = out["pods"]
    assert pods["default/early"]["result"] == "Scheduled"
    assert pods["default/late"]["result"] == "Scheduled"
    assert pods["default/third"] == {
        "result": "Unschedulable",
        "node": None,
        "message": "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are "
        "available: 1 No preemption victims found for incoming pod.",
        "attempts": 1,
        "source": "pods",
    }
    assert out["summary"]["scheduled"] == 2
    assert out["summary"]["unschedulable"] == 1


def test_other_schedulers_pods_are_ignored_and_gated_pods_reported() -> None:
    gated = pod("gated", schedulingGates=[{"name": "example.com/hold"}])
    other = pod("other", schedulerName="someone-else")
    out = kubesched.schedule(as_list(node("a")), as_list(gated, other, pod("ok")))
    assert "default/other" not in out["pods"]
    assert out["summary"]["ignored"] == 1
    assert out["pods"]["default/gated"]["result"] == "Gated"
    assert out["pods"]["default/gated"]["attempts"] == 0
    assert out["pods"]["default/ok"]["node"] == "a"


def test_running_pods_of_the_snapshot_hold_resources() -> None:
    cluster = as_list(
        node("a", cpu="2"), node("b", cpu="2"), pod("running", cpu="2", node_name="a")
    )
    out = kubesched.schedule(cluster, as_list(pod("new", cpu="2")))
    assert out["pods"]["default/new"]["node"] == "b"


def test_results_are_deterministic() -> None:
    cluster = as_list(*[node(f"n{i}") for i in range(10)])
    pods: list[dict[str, Any]] = [pod(f"p{i}") for i in range(30)]
    assert kubesched.schedule(cluster, as_list(*pods)) == kubesched.schedule(
        cluster, as_list(*pods)
    )


def test_pods_may_name_a_priority_class_of_the_snapshot() -> None:
    high = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    }
    p = pod("p")
    p["spec"]["priorityClassName"] = "high"
    out = kubesched.schedule(as_list(node("a"), high), as_list(p))
    assert out["pods"]["default/p"]["result"] == "Scheduled"


def test_affinity_to_a_deleted_node_is_unschedulable_not_an_error() -> None:
    """A DaemonSet Pod whose node was deleted: upstream's FitError, one attempt (it used to
    crash the cycle and be retried as an Error)."""
    cluster = as_list(node("n1"), node("n2"), node("n3"))
    out = kubesched.schedule(cluster, as_list(pod("ds", affinity=to_nodes("ghost"))))
    assert out["pods"]["default/ds"] == {
        "result": "Unschedulable",
        "node": None,
        "message": "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]."
        " preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling.",
        "attempts": 1,
        "source": "pods",
    }
    assert out["summary"]["error"] == 0


def test_affinity_to_a_deleted_and_an_existing_node() -> None:
    cluster = as_list(
        node("n1"), node("n2", cpu="2"), node("n3"), pod("full", cpu="2", node_name="n2")
    )
    pods = as_list(pod("ds", cpu="1", affinity=to_nodes("ghost", "n2")), pod("ok", cpu="1"))
    out = kubesched.schedule(cluster, pods)
    assert out["pods"]["default/ds"]["message"] == (
        "0/3 nodes are available: 1 Insufficient cpu, "
        "2 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
        "preemption: 0/3 nodes are "
        "available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )
    assert out["pods"]["default/ok"]["result"] == "Scheduled"
    roomy = as_list(node("n1"), node("n2"), node("n3"))
    fits = kubesched.schedule(roomy, as_list(pod("ds", affinity=to_nodes("ghost", "n2"))))
    assert fits["pods"]["default/ds"]["node"] == "n2"
