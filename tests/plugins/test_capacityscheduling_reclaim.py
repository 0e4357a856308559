"""CapacityScheduling reclaim: scheduler-plugins' ``SelectVictimsOnNode`` victim rules.

The issue-16 example runs through :func:`kubesched.schedule` (queue, PreFilter rejection,
PostFilter reclaim, nomination, graceful deletion); the table below ports upstream's own
``TestSelectVictimsOnNode`` cases (``pkg/capacityscheduling/capacity_scheduling_test.go``)
as data, GPUs standing in for upstream's CPU and memory.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import pytest

import kubesched
from kubesched.api import objects as api
from kubesched.framework import interface as fw
from kubesched.framework.outcomes import PostFilterResult
from kubesched.plugins import capacityscheduling as cap
from kubesched.plugins.capacityscheduling import reclaim
from kubesched.scheduler.types import Diagnosis
from kubesched.testing import FakeApi, make_cluster, make_node, make_pod

GPU = "nvidia.com/gpu"
BIG = {GPU: 8, "cpu": "64", "memory": "256Gi"}
CEIL = {GPU: 16, "cpu": "128", "memory": "512Gi"}


def quota(team: str, lo: dict[str, Any], hi: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": team, "namespace": team},
        "spec": {
            "min": {k: str(v) for k, v in lo.items()},
            "max": {k: str(v) for k, v in hi.items()},
        },
    }


def gpu_node(name: str, gpus: int = 8) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", GPU: str(gpus)}},
    }


def trainer(name: str, team: str, second: int) -> dict[str, Any]:
    req = {"cpu": "2", "memory": "8Gi", GPU: "1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": team,
            "creationTimestamp": f"2026-01-01T00:00:{second:02d}Z",
        },
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": req}}]},
    }


CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "CapacityScheduling"}]},
                "postFilter": {"disabled": [{"name": "DefaultPreemption"}]},
            },
        }
    ],
}


def as_list(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def test_issue16_quotas_naming_cpu_and_memory_still_reclaim() -> None:
    """B's 16 one-GPU Pods borrow A's idle GPUs; A's 8 arrive and reclaim them, although B
    stays far below its cpu/memory min (upstream: B uses more than its min on *some*
    resource, so its Pods are victims)."""
    cluster = as_list(
        gpu_node("n0"), gpu_node("n1"), quota("team-a", BIG, CEIL), quota("team-b", BIG, CEIL)
    )
    b = [trainer(f"b{i}", "team-b", 0) for i in range(16)]
    a = [trainer(f"a{i}", "team-a", 10) for i in range(8)]
    out = kubesched.schedule(cluster, as_list(*b, *a), CONFIG)
    results = [p["result"] for k, p in out["pods"].items() if k.startswith("team-a/")]
    assert results == ["Scheduled"] * 8
    preempted = [k for k, p in out["pods"].items() if p["result"] == "Preempted"]
    assert len(preempted) == 8 and all(k.startswith("team-b/") for k in preempted)
    gpus = out["quotas"]["team-a"]["resources"][GPU], out["quotas"]["team-b"]["resources"][GPU]
    assert [g["used"] for g in gpus] == [8, 8]


# ------------------------------------------------------------------ upstream's tables
# capacity_scheduling_test.go: node-a has 150 memory; makePod(name, ns, mem 50, prio); the
# ElasticQuotaInfos' Used equals what the Pods below charge.
MID, HIGH = 100, 1000


def mpod(name: str, ns: str, prio: int, node: str = "", mem: int = 50) -> api.Pod:
    b = make_pod(name, ns).res({"memory": mem}).priority(prio)
    return b.node(node).obj() if node else b.obj()


def mem_quota(ns: str, lo: int, hi: int) -> dict[str, Any]:
    return quota(ns, {"memory": lo}, {"memory": hi})


def run_post_filter(
    pod: api.Pod, running: list[api.Pod], quotas: list[dict[str, Any]], diagnosis: Any = None
) -> tuple[PostFilterResult | None, fw.Status, FakeApi]:
    cluster = make_cluster([make_node("node-a").res({"memory": 150, "pods": 110}).obj()], running)
    for q in quotas:
        cluster.apply_object(q)
    client = FakeApi()  # victims stay in the cluster: only the plugin's choice is checked
    pl = cap.new(None, fw.Handle(cluster, client))
    state = fw.CycleState()
    pl.pre_filter(state, pod, cluster)
    result, status = pl.post_filter(state, pod, cluster, diagnosis)
    return result, status, client


@pytest.mark.parametrize(
    ("pod", "running", "quotas", "victims"),
    [
        pytest.param(
            mpod("t1-p", "ns1", HIGH),
            [
                mpod("t1-p1", "ns1", MID, "node-a"),
                mpod("t1-p2", "ns2", MID, "node-a"),
                mpod("t1-p3", "ns2", MID, "node-a"),
            ],
            [mem_quota("ns1", 50, 200), mem_quota("ns2", 200, 200)],
            ["ns1/t1-p1"],
            id="in-namespace preemption",
        ),
        pytest.param(
            mpod("t1-p", "ns1", HIGH),
            [
                mpod("t1-p1", "ns1", MID, "node-a"),
                mpod("t1-p2", "ns2", HIGH, "node-a"),
                mpod("t1-p3", "ns2", MID, "node-a"),
            ],
            [mem_quota("ns1", 150, 200), mem_quota("ns2", 50, 200)],
            ["ns2/t1-p3"],
            id="cross-namespace preemption",
        ),
        pytest.param(
            mpod("t1-p1", "ns1", HIGH),
            [
                mpod("t1-p2", "ns1", MID, "node-a"),
                mpod("t1-p3", "ns2", MID, "node-a"),
                mpod("t1-p4", "ns2", MID, "node-a"),
            ],
            [],
            1,
            id="without elasticQuotas",
        ),
    ],
)
def test_upstream_select_victims_on_node(
    pod: api.Pod, running: list[api.Pod], quotas: list[dict[str, Any]], victims: Any
) -> None:
    """Upstream ``TestDryRunPreemption`` and ``TestPostFilter``: the victims on node-a (the
    last case names only the nominated node upstream: one victim of the three)."""
    result, status, client = run_post_filter(pod, running, quotas)
    assert status.is_success(), status.message()
    assert result is not None and result.nominated_node_name == "node-a"
    if isinstance(victims, int):
        assert len(client.deleted) == victims
    else:
        assert client.deleted == victims


def terminating(p: api.Pod) -> api.Pod:
    return dataclasses.replace(p, deletion_timestamp=1.0)


def nominated(p: api.Pod) -> api.Pod:
    return dataclasses.replace(p, nominated_node_name="node-a")


UNRESOLVABLE = Diagnosis(
    1, Counter(), set(), absent=fw.Status(fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("x",))
)


@pytest.mark.parametrize(
    ("pod", "running", "quotas", "diagnosis", "eligible"),
    [
        pytest.param(
            dataclasses.replace(mpod("t1-p1", "ns1", HIGH, mem=0), preemption_policy="Never"),
            [mpod("t1-p0", "ns1", MID, "node-a")],
            [mem_quota("ns1", 50, 150)],
            UNRESOLVABLE,
            False,
            id="Pod with PreemptNever preemption policy",
        ),
        pytest.param(
            nominated(mpod("t1-p1", "ns1", HIGH, mem=0)),
            [terminating(mpod("t1-p0", "ns1", MID, "node-a", mem=0))],
            [mem_quota("ns1", 50, 150)],
            UNRESOLVABLE,
            True,
            id="Pod with unschedulableAndUnresolvable nominated node",
        ),
        pytest.param(
            nominated(mpod("t1-p1", "ns1", HIGH, mem=0)),
            [terminating(mpod("t1-p0", "ns1", MID, "node-a", mem=0))],
            [mem_quota("ns1", 50, 150)],
            None,
            False,
            id="Pod with terminating pod in the same namespace",
        ),
        pytest.param(
            nominated(mpod("t1-p1", "ns1", HIGH, mem=0)),
            [
                terminating(mpod("t1-p0", "ns2", MID, "node-a", mem=0)),
                mpod("ns2-used", "ns2", MID, "node-a", mem=100),
            ],
            [mem_quota("ns1", 50, 150), mem_quota("ns2", 50, 150)],
            None,
            False,
            id="Pod with terminating pod in another namespace",
        ),
        pytest.param(
            nominated(mpod("t1-p1", "ns1", HIGH, mem=0)),
            [terminating(mpod("t1-p0", "ns2", MID, "node-a", mem=0))],
            [],
            None,
            False,
            id="Pod without elasticQuotas and terminating pod exists in the same namespace",
        ),
        pytest.param(
            nominated(mpod("t1-p1", "ns1", HIGH, mem=0)),
            [
                terminating(mpod("t1-p0", "ns2", MID, "node-a", mem=0)),
                mpod("ns2-used", "ns2", MID, "node-a", mem=100),
            ],
            [mem_quota("ns2", 50, 150)],
            None,
            True,
            id="Pod without ElasticQuotas and terminating pod exists in another namespace",
        ),
    ],
)
def test_upstream_pod_eligible_to_preempt_others(
    pod: api.Pod,
    running: list[api.Pod],
    quotas: list[dict[str, Any]],
    diagnosis: Diagnosis | None,
    eligible: bool,
) -> None:
    """Upstream ``TestPodEligibleToPreemptOthers``: an ineligible Pod stops at PostFilter with
    upstream's reason."""
    _r, status, _c = run_post_filter(pod, running, quotas, diagnosis)
    refusals = {"not eligible due to preemptionPolicy=Never.", reclaim.TERMINATING}
    assert (status.message() not in refusals) is eligible, status.message()
