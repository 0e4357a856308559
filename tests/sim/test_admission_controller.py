"""Kueue admission in ``kubesched.schedule``: gated until admitted, reported per workload."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kubesched.admission import objects as o
from kubesched.api import objects as api
from kubesched.api.parse import parse_objects
from kubesched.sim.admission_controller import AdmissionController
from kubesched.sim.apiserver import SimApiServer
from kubesched.sim.engine import EventLoop
from kubesched.sim.whatif import schedule

KUEUE = "kueue.x-k8s.io/v1beta1"


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"pool": name}},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "4"}
        },
    }


def queues(nominal: int) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": "gpu"},
            "spec": {"nodeLabels": {"pool": "n1"}},
        },
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": "gpu",
                                "resources": [{"name": "nvidia.com/gpu", "nominalQuota": nominal}],
                            }
                        ],
                    }
                ]
            },
        },
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "t"},
            "spec": {"clusterQueue": "cq"},
        },
    ]


def pod(name: str, queue: str = "lq", group: str = "") -> dict[str, Any]:
    labels = {o.QUEUE_NAME_LABEL: queue}
    if group:
        labels[o.POD_GROUP_LABEL] = group
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "t", "labels": labels},
        "spec": {
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "100m", "nvidia.com/gpu": "1"}}}
            ]
        },
    }


def test_admitted_pods_schedule_the_rest_stay_gated() -> None:
    r = schedule([node("n1"), node("n2"), *queues(3)], [pod(f"p{i}") for i in range(5)])
    results = {k: v["result"] for k, v in r["pods"].items()}
    assert sorted(results.values()) == ["Gated"] * 2 + ["Scheduled"] * 3
    assert all(v["node"] in (None, "n1") for v in r["pods"].values())  # the flavor's label
    assert all(v["attempts"] == 0 for v in r["pods"].values() if v["result"] == "Gated")
    wl = r["workloads"]
    admitted = [w for w in wl.values() if w["admittedAt"] is not None]
    assert len(admitted) == 3 and all(w["timeToAllBoundSeconds"] is not None for w in admitted)
    usage = r["clusterQueues"]["cq"]["resources"]["gpu/nvidia.com/gpu"]
    assert (usage["nominal"], usage["used"], usage["available"]) == (3, 3, 0)
    assert r["clusterQueues"]["cq"]["pendingWorkloads"] == 2


def test_a_pod_group_is_admitted_whole_or_not_at_all() -> None:
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "job", "namespace": "t"},
        "spec": {"minMember": 3},
    }
    r = schedule([node("n1"), *queues(2), group], [pod(f"m{i}", group="job") for i in range(3)])
    assert {v["result"] for v in r["pods"].values()} == {"Gated"}
    assert r["workloads"]["t/job"]["members"] == 3 and r["workloads"]["t/job"]["admittedAt"] is None
    r = schedule([node("n1"), *queues(3), group], [pod(f"m{i}", group="job") for i in range(3)])
    assert {v["result"] for v in r["pods"].values()} == {"Scheduled"}
    assert r["gangs"]["t/job"]["running"] == 3


@pytest.mark.parametrize("declared", [True, False], ids=["other-queues", "no-kueue-objects"])
def test_a_missing_local_queue_leaves_the_workload_inadmissible(
    declared: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """Kueue's workload controller: a workload whose LocalQueue is missing is inadmissible
    (``QuotaReserved=False``, reason ``Inadmissible``, ``LocalQueue nope doesn't exist``);
    its Pod stays gated, a bound Pod naming the queue keeps running, one warning."""
    running = {**pod("old", queue="nope"), "spec": {**pod("old")["spec"], "nodeName": "n1"}}
    cluster = [node("n1"), *(queues(3) if declared else []), running]
    with caplog.at_level("WARNING", logger="kubesched.admission.references"):
        r = schedule(cluster, [pod("p", queue="nope"), pod("q", queue="nope")])
    assert [v["result"] for v in r["pods"].values()] == ["Gated", "Gated"]
    assert r["pods"]["t/p"]["message"] == "waiting for scheduling gates: [kueue.x-k8s.io/admission]"
    assert r["workloads"]["t/p"]["inadmissible"] == {
        "reason": "Inadmissible",
        "message": "LocalQueue nope doesn't exist",
    }
    assert r["workloads"]["t/p"]["admittedAt"] is None
    assert [x.getMessage().split(" (")[0] for x in caplog.records] == [
        'LocalQueue "t/nope" not found'
    ]


def test_a_missing_cluster_queue_leaves_the_workload_inadmissible() -> None:
    lq = {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": {"name": "orphan", "namespace": "t"},
        "spec": {"clusterQueue": "gone"},
    }
    r = schedule([node("n1"), *queues(3), lq], [pod("p", queue="orphan"), pod("q")])
    assert r["pods"]["t/p"]["result"] == "Gated" and r["pods"]["t/q"]["result"] == "Scheduled"
    assert r["workloads"]["t/p"]["inadmissible"]["message"] == "ClusterQueue gone doesn't exist"
    assert "inadmissible" not in r["workloads"]["t/q"]


def test_without_queues_nothing_is_gated() -> None:
    r = schedule([node("n1")], [{**pod("p"), "metadata": {"name": "p", "namespace": "t"}}])
    assert r["pods"]["t/p"]["result"] == "Scheduled" and r["workloads"] == {}


class FakeMetrics:
    def __init__(self) -> None:
        self.reclaimed: list[tuple[str, int]] = []

    def record_admission(self, cluster_queue: str, wait_seconds: float) -> None:
        del cluster_queue, wait_seconds

    def set_admission_pending(self, pending: dict[str, int]) -> None:
        del pending

    def record_reclaim(self, quota: str, victims: int = 1) -> None:
        self.reclaimed.append((quota, victims))


def prio_pod(name: str, prio: int) -> api.Pod:
    return dataclasses.replace(parse_objects([pod(name)]).pods[0], priority=prio)


@pytest.mark.parametrize(("within", "evicted"), [("LowerPriority", True), ("Never", False)])
def test_within_cluster_queue_preemption_deletes_the_victims_pods(
    within: str, evicted: bool
) -> None:
    objs = queues(2)
    objs[1]["spec"]["preemption"] = {"withinClusterQueue": within}
    loop = EventLoop()
    server = SimApiServer(loop)
    metrics = FakeMetrics()
    ctl = AdmissionController(server, loop, o.collect(objs), metrics=metrics)
    for name, prio in [("low0", 0), ("low1", 1)]:
        server.create_pod(ctl.gate(prio_pod(name, prio)))
    loop.run()
    loop.call_later(
        5.0,
        lambda: server.create_pod(ctl.gate(prio_pod("high", 10))),
    )
    loop.run()
    wl = ctl.report()["workloads"]
    if evicted:
        assert wl["t/low0"]["evictedBy"] == "t/high" and wl["t/low0"]["evictedAt"] == 5.0
        assert wl["t/low0"]["evictionReason"] == "Preempted"
        assert wl["t/low0"]["preemptionReason"] == "InClusterQueue"
        assert wl["t/low0"]["evictions"] == 1 and wl["t/low0"]["admittedAt"] is None
        assert "evictedBy" not in wl["t/low1"] and wl["t/high"]["admittedAt"] == 5.0
        assert "t/low0" not in server.pods and "t/low1" in server.pods
        # recreated, gated, and still the same workload, pending again
        assert o.KUEUE_GATE in server.pods["t/low0-r1"].scheduling_gates
        assert ctl.origin("t/low0-r1") == "t/low0"
        assert ctl.report()["clusterQueues"]["cq"]["pendingWorkloads"] == 1
        assert o.KUEUE_GATE not in server.pods["t/high"].scheduling_gates
        assert ctl.report()["clusterQueues"]["cq"]["evictedWorkloads"] == 1
        assert metrics.reclaimed == [("cq", 1)]
    else:
        assert all("evictedBy" not in w for w in wl.values())
        assert wl["t/high"]["admittedAt"] is None and "t/low0" in server.pods
        assert o.KUEUE_GATE in server.pods["t/high"].scheduling_gates
        assert ctl.report()["clusterQueues"]["cq"]["evictedWorkloads"] == 0
        assert metrics.reclaimed == []
