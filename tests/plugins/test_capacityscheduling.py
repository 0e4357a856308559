"""CapacityScheduling: quota admission at PreFilter and reclaim by preemption."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.framework import interface as fw
from kubesched.plugins import capacityscheduling as cap
from kubesched.scheduler.types import Diagnosis
from kubesched.state.cache import ClusterState
from kubesched.testing import FakeApi, make_cluster, make_node, make_pod

GPU = "nvidia.com/gpu"


def eq(name: str, lo: int, hi: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": name, "namespace": name},
        "spec": {"min": {GPU: str(lo)}, "max": {GPU: str(hi)}},
    }


def gpod(name: str, ns: str, gpus: int = 1, prio: int = 0, node: str = "") -> api.Pod:
    b = make_pod(name, ns).res({GPU: gpus}).priority(prio)
    return b.node(node).obj() if node else b.obj()


def setup(
    running: list[api.Pod], quotas: list[dict[str, Any]]
) -> tuple[ClusterState, cap.CapacityScheduling, FakeApi]:
    nodes = [make_node(f"n{i}").res({GPU: 4, "pods": 110}).obj() for i in range(2)]
    cluster = make_cluster(nodes, running)
    for q in quotas:
        cluster.apply_object(q)
    client = FakeApi(cluster)
    return cluster, cap.new(None, fw.Handle(cluster, client)), client


def b_everywhere(n: int = 8) -> list[api.Pod]:
    return [gpod(f"b{i}", "b", prio=i % 3, node=f"n{i % 2}") for i in range(n)]


@pytest.mark.parametrize(
    ("running", "pod", "message"),
    [
        ([], gpod("a0", "a", 4), None),
        ([], gpod("a0", "a", 8), None),  # borrows b's idle min
        ([], gpod("a0", "a", 9), "ElasticQuota a is more than Max"),
        (b_everywhere(), gpod("a0", "a"), "total ElasticQuota used is more than min"),
        ([], gpod("x", "unquoted", 100), None),  # no quota governs it
    ],
)
def test_pre_filter(running: list[api.Pod], pod: api.Pod, message: str | None) -> None:
    cluster, pl, _ = setup(running, [eq("a", 4, 8), eq("b", 4, 8)])
    _r, status = pl.pre_filter(fw.CycleState(), pod, cluster)
    if message is None:
        assert status.is_success()
    else:
        assert status.code == fw.Code.UNSCHEDULABLE
        assert status.message() == (
            f"Pod {pod.namespace}/{pod.name} is rejected in PreFilter because {message}"
        )


def test_usage_follows_assume_and_forget() -> None:
    cluster, pl, _ = setup([], [eq("a", 4, 8), eq("b", 4, 8)])
    p = gpod("a0", "a", 3)
    cluster.assume_pod(p.bound_to("n0"), "n0")
    assert pl.report()["a"]["resources"][GPU]["used"] == 3
    cluster.forget_pod(p.bound_to("n0"))
    assert pl.report()["a"]["resources"][GPU]["used"] == 0


def test_reclaim_takes_borrowed_pods_lowest_priority_first() -> None:
    cluster, pl, client = setup(b_everywhere(), [eq("a", 4, 8), eq("b", 4, 8)])
    state = fw.CycleState()
    pod = gpod("a0", "a", 2)
    assert not pl.pre_filter(state, pod, cluster)[1].is_success()
    result, status = pl.post_filter(state, pod, cluster, None)
    assert status.is_success() and result is not None
    # two victims on one node, both priority 0 (the lowest) there
    assert len(client.deleted) == 2
    assert result.nominated_node_name in {"n0", "n1"}
    assert all(v.priority == 0 for v in result.victims)
    assert pl.report()["b"]["resources"][GPU]["used"] == 6
    assert pl.report()["b"]["reclaimedPods"] == 2


def test_reclaim_may_take_a_borrower_below_its_min() -> None:
    """Upstream: b uses more than its min, so its Pods are victims, even one whose loss takes
    b below its min (6 - 3 < 4)."""
    running = [gpod(f"b{i}", "b", gpus=3, node=f"n{i}") for i in range(2)]  # b: 6 > min 4
    cluster, pl, client = setup(running, [eq("a", 2, 8), eq("b", 4, 8)])
    state = fw.CycleState()
    pod = gpod("a0", "a", 2)
    assert not pl.pre_filter(state, pod, cluster)[1].is_success()
    result, status = pl.post_filter(state, pod, cluster, None)
    assert status.is_success() and client.deleted == ["b/b0"]
    assert result is not None and result.nominated_node_name == "n0"


def test_reclaim_takes_nothing_from_a_quota_within_its_min() -> None:
    running = [gpod(f"b{i}", "b", gpus=2, node=f"n{i}") for i in range(2)]  # b: 4 = min
    running += [gpod("a-run", "a", gpus=2, node="n0")]
    cluster, pl, client = setup(running, [eq("a", 4, 8), eq("b", 4, 8)])
    state = fw.CycleState()
    pod = gpod("a0", "a", 4)  # over a's min: only a's lower-priority Pods, none here
    pl.pre_filter(state, pod, cluster)
    _r, status = pl.post_filter(state, pod, cluster, None)
    assert not status.is_success() and client.deleted == []


def test_pod_beyond_its_min_preempts_only_lower_priority_of_its_own_quota() -> None:
    running = [gpod("a-low", "a", 4, prio=0, node="n0"), gpod("b0", "b", 4, prio=0, node="n1")]
    cluster, pl, client = setup(running, [eq("a", 4, 8), eq("b", 4, 8)])
    state = fw.CycleState()
    pod = gpod("a-high", "a", 4, prio=5)
    assert not pl.pre_filter(state, pod, cluster)[1].is_success()
    result, status = pl.post_filter(state, pod, cluster, None)
    assert status.is_success() and client.deleted == ["a/a-low"]
    assert result is not None and result.nominated_node_name == "n0"


def test_nominated_reclaimer_holds_its_quota_against_others() -> None:
    cluster, pl, _ = setup(b_everywhere(), [eq("a", 4, 8), eq("b", 4, 8)])
    state = fw.CycleState()
    pod = gpod("a0", "a", 2)
    pl.pre_filter(state, pod, cluster)
    pl.post_filter(state, pod, cluster, None)
    # b may not take back the two GPUs reserved for a0
    status = pl.pre_filter(fw.CycleState(), gpod("b-new", "b"), cluster)[1]
    assert not status.is_success()


def test_a_child_within_its_own_max_is_refused_by_its_parents_max() -> None:
    """A second guard of the tree rule (tests/admission/test_quota.py checks QuotaTree
    itself): from ElasticQuota manifests with Koordinator's parent label and running Pods,
    PreFilter refuses a Pod its own quota has room for once the parent's max is used up by
    a sibling, and admits it when the sibling's Pod is gone."""
    parent = "quota.scheduling.koordinator.sh/parent"
    quotas = [eq("p", 4, 4), eq("a", 2, 4), eq("b", 2, 4), eq("r", 4, 4)]
    for child in quotas[1:3]:
        child["metadata"]["labels"] = {parent: "p"}
    running = [gpod("a0", "a", 2, node="n0"), gpod("b0", "b", 2, node="n1")]
    cluster, pl, _ = setup(running, quotas)
    pod = gpod("a1", "a", 1)  # a: 2 + 1 <= 4, but p: 2 + 2 + 1 > 4
    _r, status = pl.pre_filter(fw.CycleState(), pod, cluster)
    assert status.code == fw.Code.UNSCHEDULABLE
    assert status.message().endswith("because ElasticQuota p is more than Max")
    assert pl.pre_filter(fw.CycleState(), gpod("r1", "r", 1), cluster)[1].is_success()
    cluster.remove_pod("b/b0")
    assert pl.pre_filter(fw.CycleState(), pod, cluster)[1].is_success()


class GracefulApi(FakeApi):
    """Deletion starts graceful termination: the victim stays, with ``deletionTimestamp``."""

    def delete_pod(self, pod: api.Pod, reason: str) -> None:
        assert self.cluster is not None
        self.deleted.append(pod.key)
        self.cluster.add_pod(dataclasses.replace(pod, deletion_timestamp=30.0))


def test_reclaimer_does_not_reclaim_again_while_its_victims_terminate() -> None:
    """scheduler-plugins' ``PodEligibleToPreemptOthers``: a Pod within its min, nominated to a
    node where a Pod of a quota above its min is still terminating, does not preempt more;
    a victim already terminating gets no second delete."""
    cluster, pl, _ = setup(b_everywhere(), [eq("a", 4, 8), eq("b", 4, 8)])
    client = GracefulApi(cluster)
    pl.handle.api = client
    pod = gpod("a0", "a", 2)
    state = fw.CycleState()
    pl.pre_filter(state, pod, cluster)
    result, status = pl.post_filter(state, pod, cluster, None)
    assert status.is_success() and result is not None and len(client.deleted) == 2
    nominated = dataclasses.replace(pod, nominated_node_name=result.nominated_node_name)
    state = fw.CycleState()
    rejected = pl.pre_filter(state, nominated, cluster)[1]
    diagnosis = Diagnosis(2, Counter(), {cap.NAME}, absent=rejected)  # as schedule_pod gives
    _r, status = pl.post_filter(state, nominated, cluster, diagnosis)
    assert status.code == fw.Code.UNSCHEDULABLE
    assert status.message() == "not eligible due to a terminating pod on the nominated node."
    assert len(client.deleted) == 2
    state = fw.CycleState()  # not nominated: the same victims are chosen, not deleted twice
    pl.pre_filter(state, pod, cluster)
    result2, status = pl.post_filter(state, pod, cluster, None)
    assert status.is_success() and result2 is not None
    assert {v.key for v in result2.victims} == {v.key for v in result.victims}
    assert len(client.deleted) == 2 and pl.report()["b"]["reclaimedPods"] == 2
