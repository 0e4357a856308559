"""Reuse of results across equivalent Pods: same placements as the full path, and the
validity rules that flush the cache."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import Scheduler, SchedulerOptions
from kubesched.testing import FakeApi, VirtualClock, drain, make_node, make_pod

ALL_NODES = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "percentageOfNodesToScore": 100,
}


def scheduler(batching: bool, config: dict[str, Any] | None = None) -> tuple[Scheduler, FakeApi]:
    fake = FakeApi()
    cfg = load_config(config, known_plugins=known_plugin_names())
    return Scheduler(
        cfg, clock=VirtualClock(), api_client=fake, options=SchedulerOptions(batching=batching)
    ), fake


def workload(s: Scheduler, nodes: int, pods: list[tuple[str, str]]) -> None:
    for i in range(nodes):
        cpu = "4" if i % 3 else "8"
        s.on_node_add(
            make_node(f"n{i:03d}")
            .cap(cpu=cpu, memory="16Gi", pods=30)
            .labels(zone=f"z{i % 3}")
            .obj()
        )
    for i, (cpu, mem) in enumerate(pods):
        s.on_pod_add(make_pod(f"p{i:04d}").req(cpu=cpu, memory=mem).created(float(i)).obj())


@pytest.mark.parametrize("nodes", [7, 150])
def test_batched_placements_equal_the_full_path(nodes: int) -> None:
    shapes = [("100m", "200Mi")] * 300 + [("500m", "1Gi")] * 100 + [("100m", "200Mi")] * 200
    runs = []
    for batching in (False, True):
        s, fake = scheduler(batching, ALL_NODES)
        workload(s, nodes, shapes)
        drain(s)
        runs.append((fake.binds, s))
    (full, s_full), (batched, s) = runs
    assert full == batched
    assert len(full) == min(len(shapes), 30 * nodes)  # 30 pods per node at most
    assert s_full.attempts == s.attempts
    assert s.batch.attempts["hit"] >= len(full) - 5  # all but the first of each run
    if nodes > 100:
        assert s.batch.flushes["signature"] == 2  # the shape changed twice


def test_cluster_change_flushes_the_cache() -> None:
    s, fake = scheduler(True)
    workload(s, 10, [("100m", "200Mi")] * 4)
    s.schedule_one()
    s.schedule_one()
    assert s.batch.attempts["hit"] == 1
    s.on_node_add(make_node("late").cap(cpu="64", memory="64Gi", pods=110).obj())
    s.schedule_one()
    assert s.batch.flushes["cluster_changed"] == 1
    assert s.batch.attempts["miss"] == 2
    drain(s)
    assert len(fake.binds) == 4


def test_exhausted_cache_falls_back_to_the_full_path() -> None:
    s, fake = scheduler(True)
    for i in range(3):
        s.on_node_add(make_node(f"n{i}").cap(cpu="1", memory="4Gi", pods=110).obj())
    for i in range(7):
        s.on_pod_add(make_pod(f"p{i}").req(cpu="400m").created(float(i)).obj())
    drain(s)
    assert len(fake.binds) == 6  # two per node, the seventh does not fit
    assert s.batch.flushes["exhausted"] == 1
    assert s.cluster.overcommitted_nodes() == []


def test_unsignable_pods_are_scheduled_normally() -> None:
    s, fake = scheduler(True)
    workload(s, 5, [])

    s.on_pod_add(make_pod("a").obj())
    fwk = s.profiles["default-scheduler"]
    fwk._signers.append(None)  # a plugin without ``sign``
    fwk._signers_unclaimed.append(None)
    drain(s)
    assert fake.binds and s.batch.attempts["unsignable"] == 1


def _spread_pod(i: int, skew: int) -> Any:
    p = make_pod(f"s{i:04d}").req(cpu="100m", memory="200Mi").labels(app="web").created(float(i))
    return p.spread(skew, "zone", labels={"app": "web"}).obj()


@pytest.mark.parametrize(("nodes", "skew", "placed"), [(7, 1, 181), (150, 1, 200), (150, 3, 200)])
def test_topology_spread_pods_reuse_results_and_place_as_the_full_path(
    nodes: int, skew: int, placed: int
) -> None:
    """Pods with hard spread constraints are signable: the reuse path refreshes the zone
    counts every time, drops nodes of a zone that became too full and flushes when a zone
    that was too full may accept again, so placements equal the full path's."""
    runs = []
    for batching in (False, True):
        s, fake = scheduler(batching, ALL_NODES)
        workload(s, nodes, [])
        for i in range(200):
            s.on_pod_add(_spread_pod(i, skew))
        drain(s)
        runs.append((fake.binds, s))
    (full, _), (batched, s) = runs
    assert full == batched
    assert len(full) == placed  # 7 nodes: zones of 60 slots cap the other at 61
    assert s.batch.attempts["hit"] > 0
    if skew == 1:  # with maxSkew 1 every third Pod re-opens the zones: flushes happen
        assert s.batch.flushes["domain_widened"] > 0
    zones = [0, 0, 0]
    for node in dict(full).values():
        zones[int(node[1:]) % 3] += 1
    assert max(zones) - min(zones) <= skew


@pytest.mark.parametrize("nodes", [7, 150])
def test_pods_reuse_results_while_others_are_nominated(nodes: int) -> None:
    """Nominated Pods (of higher priority) do not turn reuse off: the reused node is
    re-filtered with them counted, as the full path does, so placements are the same; a
    new nomination flushes the entry."""

    def nominate(s: Scheduler, name: str, node: str) -> None:
        pod = make_pod(name).req(cpu="3500m").obj()
        pod.priority = 10
        s.queue.nominator.add(pod, node)

    runs = []
    for batching in (False, True):
        s, fake = scheduler(batching, ALL_NODES)
        workload(s, nodes, [("100m", "200Mi")] * 150)
        nominate(s, "big-0", "n001")  # 4 CPU: only 500m is left for others there
        for _ in range(60):
            s.schedule_one()
        nominate(s, "big-1", "n002")
        drain(s)
        runs.append((fake.binds, s))
    (full, _), (batched, s) = runs
    assert full == batched
    assert list(dict(full).values()).count("n001") <= 5  # 500m left beside the nominee
    assert s.batch.attempts["hit"] >= len(full) - 5
    assert s.batch.flushes["nominations"] == 1


@pytest.mark.parametrize("nodes", [7, 150])
def test_pods_pinned_to_one_node_reuse_results(nodes: int) -> None:
    """DaemonSet-style Pods (``matchFields`` metadata.name: NodeAffinity's PreFilterResult
    names one node) reuse the one feasible node until it is full, then take the full path
    and fail with the same reasons."""
    from kubesched.api import objects as api

    pin = api.NodeAffinity(
        required=(
            api.NodeSelectorTerm(match_fields=(api.Requirement("metadata.name", "In", ("n003",)),)),
        )
    )
    runs = []
    for batching in (False, True):
        s, fake = scheduler(batching)
        workload(s, nodes, [])
        for i in range(40):
            s.on_pod_add(make_pod(f"d{i:02d}").req(cpu="100m").affinity(pin).created(i).obj())
        drain(s)
        runs.append((fake.binds, fake.failures, s))
    (full, failed_full, s_full), (batched, failed, s) = runs
    assert full == batched and len(full) == 30  # the node takes 30 Pods
    assert set(full.values()) == {"n003"}
    assert s.batch.attempts["hit"] == 30  # the 31st finds the node full: exhausted
    assert s.batch.flushes["exhausted"] == 1
    assert s_full.attempts == s.attempts
    assert failed == failed_full and len(failed) == 10
    assert "Too many pods" in next(iter(failed.values()))[1]


@pytest.mark.parametrize("nodes", [7, 150])
def test_pods_kept_off_by_running_anti_affinity_reuse_results(nodes: int) -> None:
    """Pods carrying a label that running Pods' required anti-affinity selects (in every
    namespace) sign with the groups selecting them: reuse keeps them out of the blocked
    zones exactly as the full path does, and a new guard flushes the entry."""
    from kubesched.api import objects as api
    from tests.plugins._interpodaffinity import P, T

    term = T("zone", labels={"color": "green"}, ns_selector=api.LabelSelector())
    runs = []
    for batching in (False, True):
        s, fake = scheduler(batching, ALL_NODES)
        workload(s, nodes, [])
        s.on_pod_add(P("guard-0", ns="guards", node="n000", anti=[term]))
        for i in range(120):
            pod = make_pod(f"g{i:03d}").req(cpu="100m").labels(color="green").created(i)
            s.on_pod_add(pod.obj())
        for _ in range(40):
            s.schedule_one()
        s.on_pod_add(P("guard-1", ns="guards", node="n001", anti=[term]))
        drain(s)
        runs.append((fake.binds, s))
    (full, _), (batched, s) = runs
    assert full == batched
    zones = [int(node[1:]) % 3 for node in full.values()]
    assert 0 not in zones and zones[40:].count(1) == 0 and zones[:40].count(1) > 0
    assert s.batch.attempts["hit"] >= len(full) - 5
    assert s.batch.flushes["cluster_changed"] == 1


def _entry(rows: list[int], total: list[int]) -> Any:
    import numpy as np

    from kubesched.scheduler.batch import BatchEntry

    return BatchEntry(
        "p", (), np.asarray(rows, np.int64), np.asarray(total, np.int64), {}, 0, len(rows),
        {}, frozenset(), frozenset(), [], [], True,
    )  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_kept_ties_are_the_ties_found_afresh(data: st.DataObject) -> None:
    """Reuse keeps the best nodes (``select_host``'s draw) across changes of one total;
    after each change they are exactly what a pass over every total finds."""
    n = data.draw(st.integers(1, 12))
    rows = data.draw(st.permutations(range(40)))[:n]
    total = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    entry = _entry(rows, total)
    entry.tied()
    for _ in range(data.draw(st.integers(1, 20))):
        i = data.draw(st.integers(0, n - 1))
        entry.total[i] = data.draw(st.integers(0, 4))
        entry.total_changed(i)
        fresh = _entry(rows, entry.total.tolist())
        kept = [int(j) for j in entry.tied()]
        assert kept == fresh.tied().tolist() and entry.top == fresh.top
        assert entry.tie_rows in (None, [rows[j] for j in kept])


def test_a_search_signs_its_pod_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Result reuse, kept static failures and kept Filter verdicts all ask for the Pod's
    signature: one search signs it once, whether it is signable or not."""
    from kubesched.framework.runtime import Framework

    signed: list[str] = []
    sign = Framework._sign

    def counting(self: Framework, pod: Any) -> tuple[object, ...] | None:
        signed.append(pod.key)
        return sign(self, pod)

    monkeypatch.setattr(Framework, "_sign", counting)
    s, fake = scheduler(True, ALL_NODES)
    workload(s, 6, [])
    for i in range(4):
        pod = make_pod(f"s{i}").req(cpu="100m").labels(app="web").created(float(i))
        if i % 2:
            pod = pod.spread(1, "zone", "ScheduleAnyway", labels={"app": "web"})
        s.on_pod_add(pod.obj())
    drain(s)
    assert len(fake.binds) == 4
    assert sorted(signed) == sorted(f"default/s{i}" for i in range(4))
