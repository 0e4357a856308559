"""Evicted Kueue workloads: Evicted condition, quota released, requeued, admitted again.

Includes the property that no workload is lost across evictions and that quota is never
exceeded, over random workloads, priorities, policies and completions.
"""

from __future__ import annotations

import dataclasses

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kubesched.admission import kueue_config as kc
from kubesched.admission import kueue_preemption as kp
from kubesched.admission import objects as o
from kubesched.admission.kueue import Admitter
from kubesched.api import objects as api
from tests.admission.test_kueue import GPU, cq, gpod, objs


def within(spec: o.ClusterQueueSpec) -> o.ClusterQueueSpec:
    return dataclasses.replace(spec, within_cluster_queue="LowerPriority")


def recreate(ad: Admitter, victim_key: str, round_: int) -> None:
    """What the owning controller does: each member's Pod recreated under a new name."""
    wl = ad.workloads[victim_key]
    for key, pod in list(wl.pods.items()):
        fresh = dataclasses.replace(pod, name=f"{pod.name.split('~')[0]}~{round_}")
        ad.replace_pod(key, fresh)
        ad.remove_pod(key)  # the old Pod's deletion is seen later: nothing to release
        ad.add_pod(fresh, 0.0)


def test_preempted_workload_is_requeued_and_admitted_again() -> None:
    ad = Admitter(objs(within(cq("a", 4))))
    ad.add_pod(gpod("low", "a", 4, 0), 0.0)
    ad.admit(0.0)
    ad.add_pod(gpod("high", "a", 4, 10), 1.0)
    (got,) = ad.admit(1.0)
    low = ad.workloads["a/low"]
    assert [t.workload.key for t in got.evicted] == ["a/low"]
    assert low.admitted_at is None and low.assignment == {}
    assert low.conditions["Evicted"].reason == "Preempted"
    assert low.conditions["Preempted"].reason == "InClusterQueue"
    assert (low.evictions, low.admissions) == (1, 1)
    assert ad.evictions_by_reason == {("a", "Preempted"): 1}
    assert ad.usage["a"][("f", GPU)] == 4  # only the preemptor is charged
    recreate(ad, "a/low", 1)
    assert ad.admit(2.0) == []  # pending again, behind the preemptor's quota
    assert [w.key for w in ad.pending_workloads()] == ["a/low"]
    ad.remove_pod("a/high")  # the preemptor finishes
    (again,) = ad.admit(3.0)
    assert again.workload is low and low.admitted_at == 3.0
    assert [p.name for p in again.pods] == ["low~1"]
    assert (low.evictions, low.admissions) == (1, 2)
    assert "Evicted" not in low.conditions


def test_requeued_preempted_workload_keeps_its_creation_order() -> None:
    ad = Admitter(objs(within(cq("a", 4))))
    ad.add_pod(gpod("old", "a", 4, 5), 0.0)
    ad.admit(0.0)
    ad.add_pod(gpod("newer", "a", 4, 5), 1.0)  # same priority, created later: waits
    ad.add_pod(gpod("boss", "a", 4, 10), 2.0)
    ad.admit(2.0)
    recreate(ad, "a/old", 1)
    ad.remove_pod("a/boss")
    assert [x.workload.key for x in ad.admit(3.0)] == ["a/old"]


def timeout(ad: Admitter, key: str, now: float) -> None:
    ad.evict(kp.Target(ad.workloads[key], ""), None, now, reason="PodsReadyTimeout")


def test_pods_ready_timeout_backs_off_then_requeues() -> None:
    config = kc.KueueConfig(wait_for_pods_ready=True, backoff_base_seconds=10)
    ad = Admitter(objs(cq("a", 4)), config=config)
    ad.add_pod(gpod("w", "a", 4), 0.0)
    ad.admit(0.0)
    timeout(ad, "a/w", 5.0)
    wl = ad.workloads["a/w"]
    assert (
        wl.conditions["Evicted"].reason == "PodsReadyTimeout" and "Preempted" not in wl.conditions
    )
    assert (wl.requeue_count, wl.requeue_at) == (1, 15.0)
    assert ad.next_requeue_at() == 15.0
    assert ad.admit(14.9) == []
    assert [x.workload.key for x in ad.admit(15.0)] == ["a/w"]
    timeout(ad, "a/w", 20.0)
    assert wl.requeue_at == 40.0  # 10 * 2^(2-1)


def test_backoff_limit_count_deactivates() -> None:
    config = kc.KueueConfig(wait_for_pods_ready=True, backoff_limit_count=1, backoff_base_seconds=1)
    ad = Admitter(objs(cq("a", 4)), config=config)
    ad.add_pod(gpod("w", "a", 4), 0.0)
    ad.admit(0.0)
    timeout(ad, "a/w", 1.0)
    ad.admit(5.0)
    timeout(ad, "a/w", 6.0)
    wl = ad.workloads["a/w"]
    assert wl.deactivated and ad.admit(100.0) == [] and wl.admitted_at is None
    assert ad.report()["a"]["pendingWorkloads"] == 1


def test_requeuing_timestamp_eviction_versus_creation() -> None:
    for stamp, first in (("Eviction", "a/later"), ("Creation", "a/early")):
        config = kc.KueueConfig(
            wait_for_pods_ready=True, requeuing_timestamp=stamp, backoff_base_seconds=0
        )
        ad = Admitter(objs(cq("a", 4)), config=config)
        ad.add_pod(gpod("early", "a", 4), 0.0)
        ad.admit(0.0)
        ad.add_pod(gpod("later", "a", 4), 1.0)
        timeout(ad, "a/early", 2.0)
        got = ad.admit(2.0)
        assert [x.workload.key for x in got] == [first], stamp


# ------------------------------------------------------------------ property
OP = st.tuples(
    st.sampled_from(["add", "add", "add", "finish", "admit", "admit"]),
    st.sampled_from(["a", "b"]),
    st.integers(1, 3),  # GPUs
    st.integers(0, 5),  # priority
)


@settings(max_examples=80, deadline=None)
@example(  # a preemption for sure: a low-priority workload fills a, a high one arrives
    ops=[("add", "a", 3, 0), ("admit", "a", 1, 0), ("add", "a", 3, 5), ("admit", "a", 1, 0)],
    nominal=(3, 3),
    borrow=0,
    fair=False,
    reclaim="Never",
)
@given(
    ops=st.lists(OP, min_size=1, max_size=40),
    nominal=st.tuples(st.integers(3, 6), st.integers(3, 6)),
    borrow=st.sampled_from([None, 0, 2]),
    fair=st.booleans(),
    reclaim=st.sampled_from(["Never", "LowerPriority", "Any"]),
)
def test_no_workload_is_lost_and_quota_is_never_exceeded(
    ops: list[tuple[str, str, int, int]],
    nominal: tuple[int, int],
    borrow: int | None,
    fair: bool,
    reclaim: str,
) -> None:
    specs = [
        dataclasses.replace(
            cq(name, n, "c", borrow=borrow),
            within_cluster_queue="LowerPriority",
            reclaim_within_cohort=reclaim,
        )
        for name, n in zip(("a", "b"), nominal, strict=True)
    ]
    ad = Admitter(objs(*specs), fair_sharing=fair)
    limits = {s.name: s.resource_groups[0].flavors[0][1][GPU] for s in specs}
    total = sum(nominal)
    round_ = 0
    created: list[str] = []

    def admit(now: float) -> None:
        nonlocal round_
        round_ += 1
        for adm in ad.admit(now):
            for t in adm.evicted:
                assert t.workload.admitted_at is None
                recreate(ad, t.workload.key, round_)
        used = {q: ad.usage[q].get(("f", GPU), 0) for q in ("a", "b")}
        assert sum(used.values()) <= total
        for q, u in used.items():
            assert u >= 0
            lim = limits[q]
            if lim.borrowing_limit is not None:
                assert u <= lim.nominal + lim.borrowing_limit
        charged = {q: 0 for q in ("a", "b")}
        for w in ad.workloads.values():
            if w.admitted_at is not None:
                charged[w.cluster_queue] += sum(ad.workload_usage(w).values())
        assert charged == used

    def finish(ns: str) -> None:
        running = [w for w in ad.admitted_workloads(ns)]
        if running:
            for key in list(running[0].pods):
                ad.remove_pod(key)
            done.add(running[0].key)

    done: set[str] = set()
    now = 0.0
    for i, (op, ns, gpus, prio) in enumerate(ops):
        now += 1.0
        if op == "add":
            pod: api.Pod = gpod(f"w{i}", ns, gpus, prio)
            ad.add_pod(pod, now)
            created.append(pod.key)
        elif op == "finish":
            finish(ns)
        else:
            admit(now)
    # drain: finish what runs, admit what waits; every workload completes
    for _ in range(4 * len(created) + 4):
        now += 1.0
        admit(now)
        for ns in ("a", "b"):
            finish(ns)
        if len(done) == len(created):
            break
    assert done == set(created)
    assert all(ad.workloads[k].admissions == ad.workloads[k].evictions + 1 for k in created)
