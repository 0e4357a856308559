"""The GPU gauges GpuDevices exports (fragmentation, idle 8-GPU nodes, Pods waiting for a
whole node, cross-NUMA Pods), on small hand-made clusters run through ``kubesched.schedule``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubesched.api import gpu as g
from kubesched.metrics import SchedulerMetrics
from kubesched.sim.whatif import schedule

CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                point: {"enabled": [{"name": "GpuDevices"}]}
                for point in ("preFilter", "filter", "reserve", "preBind")
            },
        }
    ],
}


def node(name: str, gpus: int, numa: list[int] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {g.GPU_PRODUCT_LABEL: "A100"}}
    if numa is not None:
        meta["annotations"] = {g.GPU_TOPOLOGY_ANNOTATION: json.dumps({"numa": numa})}
    alloc = {"cpu": "64", "memory": "256Gi", "pods": "110", g.GPU_RESOURCE: str(gpus)}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": {"allocatable": alloc}}


def pod(name: str, gpus: int, node_name: str = "", index: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if index:
        meta["annotations"] = {g.GPU_INDEX_ANNOTATION: index}
    req = {"cpu": "1", g.GPU_RESOURCE: str(gpus)}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": req}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def items(*objs: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(objs)}


def gauges(metrics: SchedulerMetrics) -> dict[str, float]:
    return {
        name: value
        for (name, labels), value in metrics.samples().items()
        if name.startswith("scheduler_gpu_") and not labels
    }


def test_a_pod_wanting_more_idle_gpus_than_any_node_has_waits_for_a_whole_node() -> None:
    # 8 idle GPUs in all, but 4 on each node: the 8-GPU Pod waits, the 4-GPU Pod runs
    cluster = items(
        node("a", 8),
        node("b", 8),
        pod("ra", 4, "a", "0,1,2,3"),
        pod("rb", 4, "b", "0,1,2,3"),
    )
    metrics = SchedulerMetrics()
    out = schedule(cluster, items(pod("big", 8), pod("four", 4)), CONFIG, metrics=metrics)
    assert out["pods"]["default/big"]["result"] == "Unschedulable"
    assert out["pods"]["default/four"]["result"] == "Scheduled"
    got = gauges(metrics)
    assert got["scheduler_gpu_pods_waiting_for_whole_node"] == 1
    assert got["scheduler_gpu_idle_whole_nodes"] == 0
    assert got["scheduler_gpu_cross_numa_pods"] == 0
    # learned workload: three 4-GPU Pods, one 8-GPU Pod; 4 idle GPUs left on one node are
    # fragment for the 8-GPU shape only: 0.25 * 4000 of 16000
    assert got["scheduler_gpu_fragmentation_ratio"] == pytest.approx(0.0625)


def test_waiting_ends_when_a_whole_node_frees_up_or_the_pod_goes() -> None:
    cluster = items(node("a", 8), node("b", 8), pod("rb", 1, "b", "0"))
    metrics = SchedulerMetrics()
    out = schedule(cluster, items(pod("big", 8)), CONFIG, metrics=metrics)
    assert out["pods"]["default/big"]["node"] == "a"
    got = gauges(metrics)
    assert got["scheduler_gpu_pods_waiting_for_whole_node"] == 0
    assert got["scheduler_gpu_idle_whole_nodes"] == 0  # b has one GPU in use


def test_a_two_gpu_pod_placed_across_numa_nodes_counts() -> None:
    # GPUs 1 and 2 are taken, so the only two idle GPUs (0 and 3) sit on NUMA 0 and 1
    cluster = items(
        node("c", 4, numa=[0, 0, 1, 1]),
        node("idle", 8),
        pod("r1", 1, "c", "1"),
        pod("r2", 1, "c", "2"),
        pod("fill", 7, "idle", "0,1,2,3,4,5,6"),
    )
    metrics = SchedulerMetrics()
    out = schedule(cluster, items(pod("pair", 2)), CONFIG, metrics=metrics)
    assert out["pods"]["default/pair"]["node"] == "c"
    got = gauges(metrics)
    assert got["scheduler_gpu_cross_numa_pods"] == 1
    assert got["scheduler_gpu_pods_waiting_for_whole_node"] == 0


def test_an_idle_eight_gpu_node_counts_and_same_numa_pairs_do_not_cross() -> None:
    cluster = items(node("c", 4, numa=[0, 0, 1, 1]), node("idle", 8))
    metrics = SchedulerMetrics()
    out = schedule(cluster, items(pod("pair", 2, ""), pod("p2", 2)), CONFIG, metrics=metrics)
    assert {out["pods"][k]["result"] for k in ("default/pair", "default/p2")} == {"Scheduled"}
    got = gauges(metrics)
    assert got["scheduler_gpu_cross_numa_pods"] == 0
    placed = {out["pods"][k]["node"] for k in ("default/pair", "default/p2")}
    assert got["scheduler_gpu_idle_whole_nodes"] == (0 if "idle" in placed else 1)
