"""The PodGroup cycle's algorithm case by case, mirroring upstream v1.37's
``TestPodGroupSchedulingAlgorithm`` (``schedule_one_podgroup_test.go``): a fake filter
answers per member, a fake PlacementFeasible plugin answers a scripted sequence (one status
before the first member, then one after each), and the test checks the group's code and
which members were evaluated with which outcome.  Nothing stays assumed afterwards."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.config import featuregates
from kubesched.framework import interface as fw
from kubesched.framework.outcomes import PluginError
from kubesched.framework.podgroups import PodGroupManager
from kubesched.scheduler.podgroup import GroupAlgorithm
from kubesched.scheduler.types import Diagnosis, FitError, ScheduleResult
from kubesched.testing import make_cluster, make_node, make_pod

OK, U, UU, W, E = (
    fw.Code.SUCCESS,
    fw.Code.UNSCHEDULABLE,
    fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    fw.Code.WAIT,
    fw.Code.ERROR,
)


class FakeFeasible:
    """PlacementFeasible answering ``codes`` in turn (Success once they run out)."""

    name = "FakeFeasible"

    def __init__(self, codes: list[fw.Code]) -> None:
        self.codes = list(codes)

    def placement_feasible(self, min_count: int, scheduled: int, remaining: int) -> fw.Status:
        code = self.codes.pop(0) if self.codes else OK
        return fw.Status(code, () if code == OK else (f"fake {code.name}",), self.name)


class FakeFramework:
    """What the algorithm asks of a profile: its PlacementFeasible plugins, Reserve,
    Unreserve."""

    def __init__(self, feasible: FakeFeasible | None) -> None:
        self.instances: dict[str, Any] = {} if feasible is None else {"f": feasible}
        self.placement_feasible: list[Any] = [] if feasible is None else [feasible]

    def run_reserve(self, state: fw.CycleState, pod: api.Pod, node: str) -> fw.Status:
        return fw.SUCCESS

    def run_unreserve(self, state: fw.CycleState, pod: api.Pod, node: str) -> None:
        return None


def _setup(filters: dict[str, fw.Code]) -> tuple[GroupAlgorithm, list[fw.QueuedPodInfo]]:
    gates = featuregates.with_settings("1.37", {"GenericWorkload": True})
    cluster = make_cluster([make_node("node1").cap(cpu="10", pods=10).obj()])
    manager = PodGroupManager(gates, cluster)
    manager.on_object(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
        },
        False,
    )
    members = []
    for i, name in enumerate(("p1", "p2", "p3")):
        pod = make_pod(name).obj()
        pod.scheduling_group = "pg"
        manager.on_pod_add(pod)
        members.append(fw.QueuedPodInfo(pod, timestamp=float(i)))

    def schedule_pod(fwk: Any, state: fw.CycleState, pod: api.Pod) -> ScheduleResult:
        code = filters[pod.name]
        if code == OK:
            return ScheduleResult("node1", 1, 1)
        if code == E:
            raise PluginError("Fake", "boom")
        raise FitError(Diagnosis(1, Counter({"fake": 1}), {"Fake"}))

    algo = GroupAlgorithm(
        manager=manager, cluster=cluster, schedule_pod=schedule_pod, activate=lambda pods: None
    )
    return algo, members


ALL_OK = {"p1": OK, "p2": OK, "p3": OK}


@pytest.mark.parametrize(
    ("filters", "feasible", "group_code", "evaluated"),
    [
        (ALL_OK, None, OK, {"p1": OK, "p2": OK, "p3": OK}),  # All pods feasible
        (ALL_OK, [OK, OK, OK, OK], OK, {"p1": OK, "p2": OK, "p3": OK}),  # quorum met before
        (ALL_OK, [W, W, W, OK], OK, {"p1": OK, "p2": OK, "p3": OK}),  # with 3 schedulable
        (ALL_OK, [W, W, W, W], U, {"p1": OK, "p2": OK, "p3": OK}),  # podGroup waiting
        (ALL_OK, [W, U], U, {"p1": OK}),  # podGroup unschedulable
        (ALL_OK, [W, W, U], U, {"p1": OK, "p2": OK}),  # unschedulable with 2 pods
        ({"p1": U, "p2": OK, "p3": OK}, [W, W, W, OK], OK, {"p1": U, "p2": OK, "p3": OK}),
        ({"p1": UU, "p2": U, "p3": U}, [W, OK, OK, OK], U, {"p1": U, "p2": U, "p3": U}),
        ({"p1": OK, "p2": E, "p3": OK}, None, E, {"p1": OK, "p2": E}),  # a filter error
        (ALL_OK, [W, OK, E], E, {"p1": OK, "p2": OK}),  # a PlacementFeasible error
        (ALL_OK, [U], U, {}),  # first PlacementFeasible call Unschedulable
        (ALL_OK, [E], E, {}),  # first PlacementFeasible call Error
    ],
)
def test_pod_group_scheduling_algorithm(
    filters: dict[str, fw.Code],
    feasible: list[fw.Code] | None,
    group_code: fw.Code,
    evaluated: dict[str, fw.Code],
) -> None:
    algo, members = _setup(filters)
    fake = FakeFramework(None if feasible is None else FakeFeasible(feasible))
    policy = algo.manager.policy("default/pg")
    assert policy is not None
    results, group = algo.algorithm(fake, members, "default/pg", policy)  # type: ignore[arg-type]
    assert group.code == group_code
    got = {r.qp.pod.name: (U if r.status.is_rejected() else r.status.code) for r in results}
    assert got == evaluated
    assert not algo.cluster.pods  # every member assumed in the cycle was undone
