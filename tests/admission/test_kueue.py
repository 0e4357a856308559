"""Kueue-style admission: cohort arithmetic, ordering, gangs as one workload."""

from __future__ import annotations

import pytest

from kubesched.admission import objects as o
from kubesched.admission.kueue import Admitter
from kubesched.api import objects as api
from kubesched.testing import make_pod

GPU = "nvidia.com/gpu"


def cq(
    name: str,
    nominal: int,
    cohort: str = "",
    borrow: int | None = None,
    lend: int | None = None,
    strategy: str = "BestEffortFIFO",
    weight: float = 1,
    flavors: tuple[str, ...] = ("f",),
) -> o.ClusterQueueSpec:
    groups = (
        o.ResourceGroup(
            (GPU,), tuple((f, {GPU: o.FlavorQuota(nominal, borrow, lend)}) for f in flavors)
        ),
    )
    return o.ClusterQueueSpec(
        name, groups, cohort=cohort, queueing_strategy=strategy, weight_milli=round(weight * 1000)
    )


def objs(*queues: o.ClusterQueueSpec, groups: tuple[o.PodGroupSpec, ...] = ()) -> o.JobObjects:
    out = o.JobObjects()
    for f in ("f", "g"):
        out.flavors[f] = o.ResourceFlavorSpec(f, {"flavor": f})
    for q in queues:
        out.cluster_queues[q.name] = q
        out.local_queues[f"{q.name}/lq"] = o.LocalQueueSpec(q.name, "lq", q.name)
    for g in groups:
        out.pod_groups[g.key] = g
    return out


def gpod(name: str, ns: str, gpus: int, prio: int = 0, group: str = "") -> api.Pod:
    labels = {o.QUEUE_NAME_LABEL: "lq"}
    if group:
        labels[o.POD_GROUP_LABEL] = group
    return (
        make_pod(name, ns)
        .res({GPU: gpus})
        .priority(prio)
        .labels(**labels)
        .gates(o.KUEUE_GATE)
        .obj()
    )


@pytest.mark.parametrize(
    ("a", "b", "used_a", "used_b", "want_a"),
    [
        (cq("a", 8), cq("b", 8), 0, 0, 8),  # no cohort: nominal only
        (cq("a", 8, "c"), cq("b", 8, "c"), 0, 0, 16),  # borrows b's idle quota
        (cq("a", 8, "c"), cq("b", 8, "c"), 0, 12, 4),
        (cq("a", 8, "c", borrow=2), cq("b", 8, "c"), 0, 0, 10),  # borrowingLimit
        (cq("a", 8, "c"), cq("b", 8, "c", lend=3), 0, 0, 11),  # b lends at most 3
        (cq("a", 8, "c", lend=0), cq("b", 8, "c"), 0, 8, 8),  # a's own quota is guaranteed
        (cq("a", 8, "c", lend=0), cq("b", 8, "c"), 3, 8, 5),
    ],
)
def test_available(
    a: o.ClusterQueueSpec, b: o.ClusterQueueSpec, used_a: int, used_b: int, want_a: int
) -> None:
    ad = Admitter(objs(a, b))
    ad.usage["a"][("f", GPU)] = used_a
    ad.usage["b"][("f", GPU)] = used_b
    assert ad.available("a", ("f", GPU)) == want_a


def test_priority_then_fifo_and_quota_release() -> None:
    ad = Admitter(objs(cq("a", 2)))
    ad.add_pod(gpod("low", "a", 1), 0.0)
    ad.add_pod(gpod("first", "a", 1, prio=5), 1.0)
    ad.add_pod(gpod("second", "a", 1, prio=5), 2.0)
    got = [adm.workload.key for adm in ad.admit(3.0)]
    assert got == ["a/first", "a/second"]
    assert ad.admit(3.0) == []
    ad.remove_pod("a/first")
    assert [adm.workload.key for adm in ad.admit(4.0)] == ["a/low"]
    assert ad.workloads["a/low"].admitted_at == 4.0


def test_best_effort_passes_a_head_that_does_not_fit_strict_does_not() -> None:
    for strategy, want in (("BestEffortFIFO", ["a/small"]), ("StrictFIFO", [])):
        ad = Admitter(objs(cq("a", 2, strategy=strategy)))
        ad.add_pod(gpod("big", "a", 3), 0.0)
        ad.add_pod(gpod("small", "a", 1), 1.0)
        assert [adm.workload.key for adm in ad.admit(2.0)] == want


def test_pod_group_is_one_workload_admitted_whole() -> None:
    pg = o.PodGroupSpec("a", "job", 3)
    ad = Admitter(objs(cq("a", 4), groups=(pg,)))
    for i in range(2):
        ad.add_pod(gpod(f"m{i}", "a", 1, group="job"), float(i))
    assert ad.admit(2.0) == []  # 2 of 3 members exist
    ad.add_pod(gpod("m2", "a", 1, group="job"), 2.0)
    (adm,) = ad.admit(3.0)
    assert adm.workload.key == "a/job" and len(adm.pods) == 3
    assert ad.usage["a"][("f", GPU)] == 3


def test_gang_too_big_for_quota_waits_whole() -> None:
    pg = o.PodGroupSpec("a", "job", 3)
    ad = Admitter(objs(cq("a", 2), groups=(pg,)))
    for i in range(3):
        ad.add_pod(gpod(f"m{i}", "a", 1, group="job"), 0.0)
    assert ad.admit(1.0) == [] and ad.usage["a"] == {}


def test_second_flavor_when_the_first_is_full() -> None:
    ad = Admitter(objs(cq("a", 1, flavors=("f", "g"))))
    ad.add_pod(gpod("p1", "a", 1), 0.0)
    ad.add_pod(gpod("p2", "a", 1), 1.0)
    adms = ad.admit(2.0)
    assert [a.workload.assignment[GPU] for a in adms] == ["f", "g"]
    assert adms[1].node_labels == {"flavor": "g"}


def test_fair_sharing_prefers_the_queue_borrowing_less() -> None:
    queues = (cq("a", 4, "c"), cq("b", 4, "c"))
    for fair, want in ((False, "a/a2"), (True, "b/b1")):
        ad = Admitter(objs(*queues), fair_sharing=fair)
        ad.usage["a"][("f", GPU)] = 6  # a borrows 2
        ad.add_pod(gpod("a2", "a", 1, prio=1), 0.0)
        ad.add_pod(gpod("b1", "b", 1), 1.0)
        assert ad.admit(2.0)[0].workload.key == want


def test_identical_pending_pods_cost_one_fit_per_round() -> None:
    ad = Admitter(objs(cq("a", 10)))
    for i in range(2000):
        ad.add_pod(gpod(f"p{i}", "a", 1), float(i))
    calls = 0
    real = ad.fit

    def counting(name: str, request: dict[str, int]) -> dict[str, str] | None:
        nonlocal calls
        calls += 1
        return real(name, request)

    ad.fit = counting  # type: ignore[method-assign]
    assert len(ad.admit(0.0)) == 10
    assert calls == 11
