"""Kueue fair sharing: dominant resource share, admission order, fair-sharing preemption.

The DRS table is Kueue's ``TestDominantResourceShare`` (``pkg/cache/fair_sharing_test.go``):
same quotas, usages, workload requests and expected integers.
"""

from __future__ import annotations

import dataclasses

import pytest

from kubesched.admission import fair_sharing as fs
from kubesched.admission import kueue_config as kc
from kubesched.admission import objects as o
from kubesched.admission.kueue import Admitter
from tests.admission.test_kueue import GPU, cq, gpod, objs

CPU = "cpu"
XGPU = "example.com/gpu"


def queue(
    name: str,
    flavors: dict[str, dict[str, tuple[int, int | None]]],
    cohort: str = "test-cohort",
    weight_milli: int = 1000,
) -> o.ClusterQueueSpec:
    """flavor -> resource -> (nominal, lendingLimit)."""
    resources = tuple(sorted({r for quotas in flavors.values() for r in quotas}))
    group = o.ResourceGroup(
        resources,
        tuple(
            (f, {r: o.FlavorQuota(n, None, lend) for r, (n, lend) in quotas.items()})
            for f, quotas in flavors.items()
        ),
    )
    return o.ClusterQueueSpec(name, (group,), cohort=cohort, weight_milli=weight_milli)


def default(
    cpu: int, gpu: int, gpu_lend: int | None = None
) -> dict[str, dict[str, tuple[int, int | None]]]:
    return {"default": {CPU: (cpu * 1000, None), XGPU: (gpu, gpu_lend)}}


LENDER = queue("lending-cq", default(8, 5))

DRS_CASES = {
    "no cohort": (
        queue("cq", default(2000, 5), cohort=""),
        None,
        {("default", CPU): 1000, ("default", XGPU): 2},
        None,
        (0, ""),
    ),
    "usage below nominal": (
        queue("cq", default(2, 5)),
        LENDER,
        {("default", CPU): 1000, ("default", XGPU): 2},
        None,
        (0, ""),
    ),
    "usage above nominal": (
        queue("cq", default(2, 5)),
        LENDER,
        {("default", CPU): 3000, ("default", XGPU): 7},
        None,
        (200, XGPU),  # (7-5)*1000/10
    ),
    "one resource above nominal": (
        queue("cq", default(2, 5)),
        LENDER,
        {("default", CPU): 3000, ("default", XGPU): 3},
        None,
        (100, CPU),  # (3-2)*1000/10
    ),
    "usage with workload above nominal": (
        queue("cq", default(2, 5)),
        LENDER,
        {("default", CPU): 1000, ("default", XGPU): 2},
        {("default", CPU): 4000, ("default", XGPU): 4},
        (300, CPU),  # (1+4-2)*1000/10
    ),
    "A resource with zero lendable": (
        queue("cq", default(2, 2, gpu_lend=0)),
        queue("lending-cq", default(8, 64, gpu_lend=0)),
        {("default", CPU): 1000, ("default", XGPU): 1},
        {("default", CPU): 4000, ("default", XGPU): 4},
        (300, CPU),
    ),
    "multiple flavors": (
        queue("cq", {"on-demand": {CPU: (20_000, None)}, "spot": {CPU: (80_000, None)}}),
        queue("lending-cq", {"default": {CPU: (100_000, None)}}),
        {("on-demand", CPU): 15_000, ("spot", CPU): 5_000},
        {("on-demand", CPU): 10_000},
        (25, CPU),  # ((15+10-20)+0)*1000/200 (spot under nominal)
    ),
    "above nominal with integer weight": (
        queue("cq", {"default": {XGPU: (5, None)}}, weight_milli=2000),
        queue("lending-cq", {"default": {XGPU: (5, None)}}),
        {("default", XGPU): 7},
        None,
        (100, XGPU),  # ((7-5)*1000/10)/2
    ),
    "above nominal with decimal weight": (
        queue("cq", {"default": {XGPU: (5, None)}}, weight_milli=500),
        queue("lending-cq", {"default": {XGPU: (5, None)}}),
        {("default", XGPU): 7},
        None,
        (400, XGPU),  # ((7-5)*1000/10)/(1/2)
    ),
    "above nominal with zero weight": (
        queue("cq", {"default": {XGPU: (5, None)}}, weight_milli=0),
        queue("lending-cq", {"default": {XGPU: (10, None)}}),
        {("default", XGPU): 7},
        None,
        (fs.MAX_SHARE, ""),
    ),
}


@pytest.mark.parametrize("case", list(DRS_CASES), ids=list(DRS_CASES))
def test_dominant_resource_share_kueue_table(case: str) -> None:
    spec, lender, usage, request, want = DRS_CASES[case]
    jo = o.JobObjects()
    jo.cluster_queues[spec.name] = spec
    if lender is not None:
        jo.cluster_queues[lender.name] = lender
    adm = Admitter(jo)
    adm.usage["cq"].update(usage)
    assert fs.dominant_resource_share(adm, "cq", request) == want


def test_weight_parsed_as_a_quantity() -> None:
    obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "q"},
        "spec": {"resourceGroups": [], "fairSharing": {"weight": "0.5"}},
    }
    assert o.parse_cluster_queue(obj).weight_milli == 500
    obj["spec"]["fairSharing"] = {}
    assert o.parse_cluster_queue(obj).weight_milli == 1000


# ------------------------------------------------------------------ ordering
def test_fair_order_follows_share_after_admission_then_priority() -> None:
    # a (weight 2) already borrows 4 of the cohort's 12: its share with one more GPU is
    # 5*1000//12*1000//2000 = 208; b's with one GPU is 83: b goes first despite priority
    queues = (cq("pool", 12, "c"), cq("a", 0, "c", weight=2), cq("b", 0, "c"))
    ad = Admitter(objs(*queues), fair_sharing=True)
    ad.usage["a"][("f", GPU)] = 4
    ad.add_pod(gpod("a1", "a", 1, prio=100), 0.0)
    ad.add_pod(gpod("b1", "b", 1), 1.0)
    assert [x.workload.key for x in ad.admit(2.0)] == ["b/b1", "a/a1"]
    assert ad.share("a") == 208 and ad.share("b") == 83


def test_weighted_queues_fill_the_cohort_in_proportion() -> None:
    queues = (cq("pool", 12, "c"), cq("a", 0, "c", weight=2), cq("b", 0, "c"))
    ad = Admitter(objs(*queues), fair_sharing=True)
    for i in range(20):
        ad.add_pod(gpod(f"a{i}", "a", 1), float(i))
        ad.add_pod(gpod(f"b{i}", "b", 1), float(i))
    ad.admit(30.0)
    used = {q: ad.usage[q].get(("f", GPU), 0) for q in ("a", "b")}
    assert used == {"a": 8, "b": 4}


# ------------------------------------------------------------------ preemption
def reclaim_any(spec: o.ClusterQueueSpec) -> o.ClusterQueueSpec:
    return dataclasses.replace(spec, reclaim_within_cohort="Any")


def fill(ad: Admitter, ns: str, sizes: list[int], t: float = 0.0) -> None:
    for i, n in enumerate(sizes):
        ad.add_pod(gpod(f"{ns}{i}", ns, n), t)
    ad.admit(t)


def test_less_than_or_equal_to_final_share_takes_from_the_biggest_borrower() -> None:
    # b borrows 2 of 6 lendable (share 333); a needs 2 more and has 1: evicting two of
    # b's 1-GPU workloads leaves b at its nominal quota, where a's share stays 0 <= b's
    queues = (reclaim_any(cq("a", 3, "c")), reclaim_any(cq("b", 3, "c")))
    ad = Admitter(objs(*queues), fair_sharing=True)
    fill(ad, "b", [1] * 5)
    fill(ad, "a", [1], 1.0)
    assert ad.share("b") == 333
    ad.add_pod(gpod("big", "a", 2), 2.0)
    (got,) = ad.admit(2.0)
    assert got.workload.key == "a/big"
    assert sorted(t.workload.key for t in got.evicted) == ["b/b3", "b/b4"]
    assert {t.reason for t in got.evicted} == {"InCohortFairSharing"}
    assert ad.usage["b"][("f", GPU)] == 3 and ad.share("b") == 0


@pytest.mark.parametrize(
    ("strategies", "evicts"),
    [(kc.DEFAULT_STRATEGIES, True), ((kc.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,), False)],
)
def test_less_than_initial_share_when_the_first_rule_refuses(
    strategies: tuple[str, ...], evicts: bool
) -> None:
    # b borrows 2 of 8 (share 250) in two 3-GPU workloads; a has 2 and wants 3, which
    # leaves a borrowing 1 (share 125).  Evicting one of b's leaves b at share 0 < 125,
    # so S2-a refuses; S2-b (125 < 250) allows it.
    queues = (reclaim_any(cq("a", 4, "c")), reclaim_any(cq("b", 4, "c")))
    config = kc.KueueConfig(fair_sharing=True, preemption_strategies=strategies)
    ad = Admitter(objs(*queues), config=config)
    fill(ad, "b", [3, 3])
    fill(ad, "a", [2], 1.0)
    ad.add_pod(gpod("more", "a", 3), 2.0)
    got = ad.admit(2.0)
    if evicts:
        assert [x.workload.key for x in got] == ["a/more"]
        assert [t.reason for t in got[0].evicted] == ["InCohortFairSharing"]
        assert ad.share("a") == 125 and ad.share("b") == 0
    else:
        assert got == [] and ad.usage["b"][("f", GPU)] == 6


def test_fair_sharing_never_preempts_a_queue_within_its_nominal_quota() -> None:
    queues = (reclaim_any(cq("a", 4, "c")), reclaim_any(cq("b", 4, "c")))
    ad = Admitter(objs(*queues), fair_sharing=True)
    fill(ad, "b", [1] * 4)
    fill(ad, "a", [1] * 4, 1.0)
    ad.add_pod(gpod("x", "a", 1), 2.0)
    assert ad.admit(2.0) == []
    assert ad.evictions == {"a": 0, "b": 0}


def test_configuration_parses_and_rejects_bad_strategies() -> None:
    conf = kc.parse_configuration(
        {
            "apiVersion": kc.API_VERSION,
            "kind": "Configuration",
            "fairSharing": {"enable": True, "preemptionStrategies": ["LessThanInitialShare"]},
            "waitForPodsReady": {
                "enable": True,
                "timeout": "2m",
                "requeuingStrategy": {"timestamp": "Creation", "backoffLimitCount": 3},
            },
        }
    )
    assert conf.fair_sharing and conf.preemption_strategies == ("LessThanInitialShare",)
    assert conf.wait_for_pods_ready and conf.pods_ready_timeout == 120.0
    assert conf.requeuing_timestamp == "Creation" and conf.backoff_limit_count == 3
    assert [conf.backoff_seconds(n) for n in (1, 2, 3, 7, 8)] == [60, 120, 240, 3600, 3600]
    from kubesched.api.errors import InputError

    bad = {
        "fairSharing": {
            "preemptionStrategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]
        }
    }
    with pytest.raises(InputError) as err:
        kc.parse_configuration(bad, "spec.admission.configuration")
    assert (
        err.value.problems[0][0] == "spec.admission.configuration.fairSharing.preemptionStrategies"
    )
    with pytest.raises(InputError) as err:
        kc.parse_configuration({"waitForPodsReady": {"timeout": "soon"}}, "c")
    assert err.value.problems[0][0] == "c.waitForPodsReady.timeout"
