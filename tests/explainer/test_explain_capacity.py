"""explain's ``capacity`` object for ``nvidia.com/gpu`` requests: short of capacity or
fragmented, over the nodes that pass the other filters; in JSON and in the CLI's text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import kubesched
from kubesched.cli import main

GPU = "nvidia.com/gpu"
TAINT = {"key": "team", "value": "a", "effect": "NoSchedule"}


def node(name: str, gpus: int = 8, cpu: str = "32", taint: bool = False) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": "64Gi", "pods": "110"}
    if gpus:
        alloc[GPU] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"taints": [TAINT] if taint else []},
        "status": {"allocatable": alloc},
    }


def pod(name: str, gpus: int, cpu: str = "1", node_name: str = "") -> dict[str, Any]:
    req = {"cpu": cpu, GPU: str(gpus)} if gpus else {"cpu": cpu}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "x", "resources": {"requests": req, "limits": req}}]
    }
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def cluster(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def busy(n: int, used: int) -> dict[str, Any]:
    """``n`` 8-GPU nodes with ``used`` GPUs taken on each."""
    items = []
    for i in range(n):
        items.append(node(f"n{i}"))
        if used:
            items.append(pod(f"run{i}", used, node_name=f"n{i}"))
    return cluster(*items)


def gpu_entry(out: dict[str, Any]) -> dict[str, Any]:
    return next(e for e in out["capacity"]["resources"] if e["resource"] == GPU)


def test_enough_free_in_total_but_fragmented() -> None:
    out = kubesched.explain(busy(4, 5), pod("big", 8))  # 4 x 3 free GPUs
    assert out["result"] == "Unschedulable"
    cap = out["capacity"]
    assert (cap["verdict"], cap["eligibleNodes"]) == ("fragmented", 4)
    assert gpu_entry(out) == {
        "resource": GPU,
        "needed": 8,
        "freeTotal": 12,
        "freeOnEligibleNodes": 12,
        "maxFreeOnEligibleNode": 3,
        "maxCapacityOnEligibleNode": 8,
        "verdict": "fragmented",
        "message": "12 nvidia.com/gpu free in the cluster, at most 3 on any of the 4 nodes "
        "that pass the other filters; the Pod needs 8 on one node",
    }
    assert cap["message"] == "enough free in total but fragmented: " + gpu_entry(out)["message"]
    cpu = next(e for e in cap["resources"] if e["resource"] == "cpu")
    assert (cpu["needed"], cpu["verdict"]) == (1000, "fits")  # millicores


def test_short_of_capacity() -> None:
    out = kubesched.explain(busy(2, 6), pod("big", 8))  # 2 x 2 free
    assert out["capacity"]["verdict"] == "short"
    e = gpu_entry(out)
    assert (e["freeTotal"], e["maxFreeOnEligibleNode"], e["verdict"]) == (4, 2, "short")
    assert out["capacity"]["message"] == (
        "short of capacity: 4 nvidia.com/gpu free in the cluster; the Pod needs 8 on one node"
    )


def test_free_gpus_on_nodes_the_pod_may_not_use_count_in_the_cluster_only() -> None:
    # n0 and n1 (3 free each) pass the other filters; n2 and n3 are tainted and idle
    snap = busy(2, 5)
    snap["items"] += [node("n2", taint=True), node("n3", taint=True)]
    out = kubesched.explain(snap, pod("big", 4))
    e = gpu_entry(out)
    assert out["capacity"]["eligibleNodes"] == 2
    assert (e["freeTotal"], e["freeOnEligibleNodes"], e["maxFreeOnEligibleNode"]) == (22, 6, 3)
    assert e["verdict"] == "fragmented"
    idle = cluster(*(node(f"n{i}", taint=True) for i in range(3)))
    out = kubesched.explain(idle, pod("big", 4))  # every node tainted: capacity is not it
    assert out["capacity"]["verdict"] == "filtered"
    assert (out["capacity"]["eligibleNodes"], gpu_entry(out)["verdict"]) == (0, "filtered")


def test_larger_than_any_node() -> None:
    out = kubesched.explain(busy(4, 0), pod("huge", 16))
    assert out["capacity"]["verdict"] == "tooLarge"
    assert gpu_entry(out)["maxCapacityOnEligibleNode"] == 8
    assert "(at most 8)" in out["capacity"]["message"]


def test_each_resource_fits_somewhere_but_not_together() -> None:
    # the GPU node has 2 CPUs, the CPU node no GPU: each request fits some node, none both
    snap = cluster(node("gpu", gpus=8, cpu="2"), node("cpu", gpus=0, cpu="64"))
    out = kubesched.explain(snap, pod("p", 1, cpu="16"))
    assert out["result"] == "Unschedulable"
    assert out["capacity"]["verdict"] == "notTogether"
    assert {e["resource"]: e["verdict"] for e in out["capacity"]["resources"]} == {
        "pods": "fits",
        "cpu": "fits",
        GPU: "fits",
    }


def test_a_scheduled_pod_has_no_capacity_object() -> None:
    out = kubesched.explain(busy(2, 4), pod("p", 4))
    assert out["result"] == "Scheduled"
    assert "capacity" not in out


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "c.json").write_text(json.dumps(busy(4, 5)))
    (tmp_path / "p.json").write_text(json.dumps(pod("big", 8)))
    return {"cluster": tmp_path / "c.json", "pod": tmp_path / "p.json"}


def test_cli_json_and_text(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    args = ["explain", "--cluster", str(files["cluster"]), "--pod", str(files["pod"])]
    assert main([*args, "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["capacity"]["verdict"] == "fragmented"
    assert main([*args, "-o", "text"]) == 0
    text = capsys.readouterr().out
    assert (
        "Capacity: enough free in total but fragmented: 12 nvidia.com/gpu free in the cluster, "
        "at most 3 on any of the 4 nodes that pass the other filters; the Pod needs 8 on one node"
    ) in text


def test_a_resource_few_nodes_have_is_counted_from_its_sparse_rows() -> None:
    """Past MAX_DENSE_EXTENDED names, a rare resource lives in the node table's sparse form;
    the capacity object must still see what those nodes have free."""
    from kubesched.state.nodes import MAX_DENSE_EXTENDED

    items = []
    for i in range(MAX_DENSE_EXTENDED + 3):
        n = node(f"n{i}", gpus=0)
        n["status"]["allocatable"][f"example.com/dev-{i}"] = "2"
        items.append(n)
    rare = f"example.com/dev-{MAX_DENSE_EXTENDED + 2}"
    big = pod("big", 0)
    big["spec"]["containers"][0]["resources"] = {"requests": {rare: "3"}, "limits": {rare: "3"}}
    out = kubesched.explain(cluster(*items), big)
    entry = next(e for e in out["capacity"]["resources"] if e["resource"] == rare)
    assert (entry["freeTotal"], entry["maxFreeOnEligibleNode"], entry["needed"]) == (2, 2, 3)
    assert entry["verdict"] == "tooLarge"  # no node has 3 of it
