"""The GPU policies through the normal framework: Node and Pod manifests with GPU labels and
requests, ``kubesched.schedule`` with a configuration enabling one policy."""

from __future__ import annotations

from typing import Any

import pytest

import kubesched
from kubesched.api import gpu as g
from kubesched.devices.policies import POLICIES

PLUGIN = {
    "random": "GpuRandom",
    "dotproduct": "GpuDotProduct",
    "gpupacking": "GpuPacking",
    "gpuclustering": "GpuClustering",
    "bestfit": "GpuBestFit",
    "fgd": "GpuFGD",
    "kubesched": "GpuKubesched",
}


def node(name: str, gpus: int, model: str = "T4") -> dict[str, Any]:
    alloc = {"cpu": "32", "memory": "128Gi", "pods": "110", g.GPU_RESOURCE: str(gpus)}
    alloc[g.GPU_MILLI_RESOURCE] = str(gpus * 1000)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {g.GPU_PRODUCT_LABEL: model}},
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def pod(name: str, *, whole: int = 0, milli: int = 0, ts: int = 0) -> dict[str, Any]:
    req: dict[str, str] = {"cpu": "1", "memory": "1Gi"}
    if whole:
        req[g.GPU_RESOURCE] = str(whole)
    if milli:
        req[g.GPU_MILLI_RESOURCE] = str(milli)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "creationTimestamp": f"2024-01-01T00:00:{ts:02d}Z",
        },
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": req}}]},
    }


def config(policy: str) -> dict[str, Any]:
    dev = [{"name": "GpuDevices"}]
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "preFilter": {"enabled": dev},
                    "filter": {"enabled": dev},
                    "reserve": {"enabled": dev},
                    "preBind": {"enabled": dev},
                    "preScore": {"enabled": [{"name": PLUGIN[policy]}]},
                    "score": {
                        "disabled": [{"name": "*"}],
                        "enabled": [{"name": PLUGIN[policy], "weight": 1}],
                    },
                },
            }
        ],
    }


def cluster() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": [node("a", 2), node("b", 2)]}


@pytest.mark.parametrize("policy", POLICIES)
def test_policy_schedules_gpu_pods_without_oversubscribing(policy: str) -> None:
    pods = [pod("s1", milli=600, ts=1), pod("s2", milli=400, ts=2), pod("w1", whole=1, ts=3)]
    pods += [pod("w2", whole=2, ts=4), pod("big", whole=2, ts=5), pod("cpu", ts=6)]
    out = kubesched.schedule(cluster(), pods, config(policy))
    res = out["pods"]
    assert res["default/cpu"]["result"] == "Scheduled"
    placed = {k: v["node"] for k, v in res.items() if v["result"] == "Scheduled"}
    # capacity: 4 GPUs; demand 0.6 + 0.4 + 1 + 2 + 2: at most 4 GPUs' worth fits
    use = {"a": 0.0, "b": 0.0}
    demand = {"s1": 0.6, "s2": 0.4, "w1": 1, "w2": 2, "big": 2, "cpu": 0}
    for key, n in placed.items():
        use[n] += demand[key.split("/")[1]]
    assert max(use.values()) <= 2.0 + 1e-9
    failed = [k for k, v in res.items() if v["result"] != "Scheduled"]
    for key in failed:
        assert "GpuDevices" in res[key]["message"] or "gpu" in res[key]["message"].lower()


@pytest.mark.parametrize("policy", ["fgd", "kubesched", "gpupacking", "bestfit"])
def test_fragmentation_aware_policies_pair_shared_pods(policy: str) -> None:
    # two shared Pods that together fill one GPU, then a 2-GPU Pod: only placements that put
    # both shares on one node leave a whole node for it
    pods = [pod("s1", milli=500, ts=1), pod("s2", milli=500, ts=2), pod("w", whole=2, ts=3)]
    out = kubesched.schedule(cluster(), pods, config(policy))
    res = out["pods"]
    assert res["default/s1"]["node"] == res["default/s2"]["node"]
    assert res["default/w"]["result"] == "Scheduled"
    assert res["default/w"]["node"] != res["default/s1"]["node"]


def test_kubesched_plugin_weighs_models_by_their_gpus_in_the_cluster() -> None:
    from kubesched.framework.interface import Handle
    from kubesched.plugins import gpu_kubesched
    from kubesched.state import gpus
    from kubesched.state.cache import ClusterState
    from tests.state.test_gpus import gpu_node

    cl = ClusterState()
    for n in (gpu_node("t4", 2, "T4"), gpu_node("a", 4, "A100"), gpu_node("b", 2, "A100")):
        cl.add_node(n)
    args = {
        "targetWorkload": [
            {"cpu": "1", "gpuMilli": 1000, "gpuCount": 1, "weight": 3},
            {"cpu": "1", "gpuMilli": 1000, "gpuCount": 1, "models": "T4", "weight": 1},
        ]
    }
    plugin = gpu_kubesched.new(args, Handle(cl))
    table = gpus.table_for(cl)
    fm, _ = plugin.workload.models(table)
    p = plugin.pressure(fm, table)
    # a quarter of 8 GPUs' demand (2) must land on T4's 2 GPUs: pressure 1; A100 none
    assert p[table.model_code["T4"]] == pytest.approx(1.0)
    assert p[table.model_code["A100"]] == 0.0
