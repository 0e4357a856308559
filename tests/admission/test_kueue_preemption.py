"""Kueue admission-level preemption: withinClusterQueue, reclaimWithinCohort, ordering."""

from __future__ import annotations

import dataclasses

import pytest

from kubesched.admission import objects as o
from kubesched.admission.kueue import Admitter
from kubesched.admission.kueue_preemption import find_candidates, preempt_assignment
from tests.admission.test_kueue import GPU, cq, gpod, objs


def policy(
    spec: o.ClusterQueueSpec, within: str = "Never", reclaim: str = "Never", borrow: str = "Never"
) -> o.ClusterQueueSpec:
    return dataclasses.replace(
        spec,
        within_cluster_queue=within,
        reclaim_within_cohort=reclaim,
        borrow_within_cohort=borrow,
    )


def admitted(adm: Admitter, now: float) -> list[str]:
    return [a.workload.key for a in adm.admit(now)]


@pytest.mark.parametrize(
    ("within", "low_prio", "high_prio", "evicted"),
    [
        ("LowerPriority", 0, 10, True),
        ("LowerPriority", 10, 10, False),  # equal priority is not lower
        ("LowerOrNewerEqualPriority", 10, 10, False),  # the victim is older
        ("Never", 0, 10, False),
    ],
)
def test_within_cluster_queue(within: str, low_prio: int, high_prio: int, evicted: bool) -> None:
    adm = Admitter(objs(policy(cq("a", 4), within=within)))
    adm.add_pod(gpod("low", "a", 4, low_prio), 0.0)
    assert admitted(adm, 0.0) == ["a/low"]
    adm.add_pod(gpod("high", "a", 4, high_prio), 1.0)
    got = adm.admit(1.0)
    low = adm.workloads["a/low"]
    if evicted:
        assert [a.workload.key for a in got] == ["a/high"]
        assert [t.workload.key for t in got[0].evicted] == ["a/low"]
        assert got[0].evicted[0].reason == "InClusterQueue"
        assert low.evicted_by == "a/high" and low.evicted_at == 1.0
        assert adm.usage["a"][("f", GPU)] == 4
        assert adm.report()["a"]["evictedWorkloads"] == 1
    else:
        assert got == []  # waits
        assert not low.evicted_by
        assert adm.report()["a"]["pendingWorkloads"] == 1
        assert adm.report()["a"]["evictedWorkloads"] == 0


def test_newer_equal_priority_is_a_candidate() -> None:
    adm = Admitter(objs(policy(cq("a", 4), within="LowerOrNewerEqualPriority")))
    adm.add_pod(gpod("old", "a", 4, 5), 0.0)
    adm.add_pod(gpod("new", "a", 4, 5), 2.0)
    adm.admit(2.0)  # "old" admitted first (FIFO), "new" waits
    wl = adm.workloads["a/new"]
    frs = {("f", GPU)}
    assert find_candidates(adm, wl, frs) == []
    # a preemptor created before "old" may take it
    adm.workloads["a/new"].created = -1.0
    assert [c.key for c in find_candidates(adm, wl, frs)] == ["a/old"]


def test_minimal_set_lowest_priority_then_most_recent() -> None:
    adm = Admitter(objs(policy(cq("a", 6), within="LowerPriority")))
    for t, (name, prio) in enumerate([("p1", 1), ("p0a", 0), ("p0b", 0)]):
        adm.add_pod(gpod(name, "a", 2, prio), float(t))
        adm.admit(float(t))
    adm.add_pod(gpod("big", "a", 2, 9), 5.0)
    got = adm.admit(5.0)
    # one victim suffices: the most recently admitted of the lowest priority
    assert [t.workload.key for t in got[0].evicted] == ["a/p0b"]
    adm.add_pod(gpod("bigger", "a", 4, 9), 6.0)
    got = adm.admit(6.0)
    assert sorted(t.workload.key for t in got[0].evicted) == ["a/p0a", "a/p1"]


def test_fill_back_keeps_unneeded_victims() -> None:
    adm = Admitter(objs(policy(cq("a", 6), within="LowerPriority")))
    adm.add_pod(gpod("small", "a", 1, 0), 0.0)
    adm.admit(0.0)
    adm.add_pod(gpod("large", "a", 5, 1), 1.0)
    adm.admit(1.0)
    adm.add_pod(gpod("hi", "a", 5, 9), 2.0)
    got = adm.admit(2.0)
    # removing "small" (lowest) is not enough; after "large" goes, "small" is added back
    assert [t.workload.key for t in got[0].evicted] == ["a/large"]
    assert not adm.workloads["a/small"].evicted_by


def cohort(reclaim: str, a_nominal: int = 4, b_nominal: int = 4) -> Admitter:
    return Admitter(objs(policy(cq("a", a_nominal, "c"), reclaim=reclaim), cq("b", b_nominal, "c")))


@pytest.mark.parametrize(
    ("reclaim", "b_prio", "evicted"),
    [
        ("LowerPriority", 0, ["b/borrow"]),
        ("LowerPriority", 10, []),  # not lower
        ("Any", 10, ["b/borrow"]),
        ("Never", 0, []),
    ],
)
def test_reclaim_within_cohort(reclaim: str, b_prio: int, evicted: list[str]) -> None:
    adm = cohort(reclaim)
    adm.add_pod(gpod("own", "b", 4, b_prio), 0.0)  # b's nominal
    adm.add_pod(gpod("borrow", "b", 4, b_prio), 0.0)  # borrowed from a
    assert admitted(adm, 0.0) == ["b/own", "b/borrow"]
    adm.add_pod(gpod("back", "a", 4, 5), 1.0)
    got = adm.admit(1.0)
    if evicted:
        assert [t.workload.key for t in got[0].evicted] == evicted
        assert got[0].evicted[0].reason == "InCohortReclamation"
        assert adm.usage["b"][("f", GPU)] == 4 and adm.usage["a"][("f", GPU)] == 4
        assert adm.report()["b"]["evictedWorkloads"] == 1
    else:
        assert got == []


def test_reclaim_never_evicts_a_non_borrowing_workload() -> None:
    adm = cohort("Any", a_nominal=4, b_nominal=4)
    adm.add_pod(gpod("own", "b", 4, 0), 0.0)  # within b's nominal: not borrowing
    adm.add_pod(gpod("mine", "a", 2, 0), 0.0)
    admitted(adm, 0.0)
    adm.add_pod(gpod("big", "a", 4, 9), 1.0)
    assert adm.admit(1.0) == []  # a needs 6 > its nominal 4; b is not borrowing
    assert not adm.workloads["b/own"].evicted_by


def test_reclaim_stops_once_the_borrower_is_back_within_nominal() -> None:
    adm = cohort("LowerPriority", a_nominal=4, b_nominal=2)
    for i in range(3):
        adm.add_pod(gpod(f"w{i}", "b", 2, 0), float(i))
        adm.admit(float(i))  # b uses 6: 4 borrowed from a
    adm.add_pod(gpod("back", "a", 4, 5), 5.0)
    got = adm.admit(5.0)
    assert sorted(t.workload.key for t in got[0].evicted) == ["b/w1", "b/w2"]
    assert not adm.workloads["b/w0"].evicted_by


def test_preempt_assignment_needs_nominal_unless_borrow_within_cohort() -> None:
    adm = cohort("LowerPriority", a_nominal=2, b_nominal=4)
    adm.add_pod(gpod("fill", "b", 6, 0), 0.0)
    admitted(adm, 0.0)
    assert preempt_assignment(adm, "a", {GPU: 3}) is None  # 3 > a's nominal 2
    adm.objs.cluster_queues["a"] = policy(
        adm.objs.cluster_queues["a"], reclaim="LowerPriority", borrow="LowerPriority"
    )
    assert preempt_assignment(adm, "a", {GPU: 3}) == ({GPU: "f"}, {("f", GPU)})


def run_scenario() -> list[tuple[str, str]]:
    adm = cohort("LowerPriority")
    adm.objs.cluster_queues["b"] = policy(adm.objs.cluster_queues["b"], within="LowerPriority")
    out: list[tuple[str, str]] = []
    for i in range(6):
        adm.add_pod(gpod(f"b{i}", "b", 1, i % 3), float(i))
    adm.admit(6.0)
    for i, ns in enumerate(["a", "b", "a"]):
        adm.add_pod(gpod(f"x{i}", ns, 2, 7), 10.0 + i)
        for a in adm.admit(10.0 + i):
            out.extend((a.workload.key, t.workload.key) for t in a.evicted)
    return out


def test_deterministic() -> None:
    first = run_scenario()
    assert first and all(run_scenario() == first for _ in range(3))


def test_parse_borrow_within_cohort() -> None:
    obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "q"},
        "spec": {
            "resourceGroups": [],
            "preemption": {
                "reclaimWithinCohort": "Any",
                "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
            },
        },
    }
    spec = o.parse_cluster_queue(obj)
    assert (spec.borrow_within_cohort, spec.borrow_max_priority_threshold) == ("LowerPriority", 100)
    assert o.parse_cluster_queue({**obj, "spec": {"resourceGroups": []}}).borrow_within_cohort == (
        "Never"
    )
