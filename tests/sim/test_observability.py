"""Metrics and the timeline agree with the run they describe."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched import metrics as m
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import core as scheduler_module
from kubesched.sim.driver import SimCluster
from kubesched.sim.scenario import load_scenario
from kubesched.sim.simulate import run_scenario
from kubesched.sim.timeline import Timeline, idle_gpu_nodes, resource_usage
from kubesched.testing import make_node, make_pod

SCENARIO = """
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: obs}
spec:
  seed: 3
  durationSeconds: 12
  drainSeconds: 4
  nodePools:
  - name: cpu
    count: 12
    zones: [zone-a, zone-b]
    allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
  - name: gpu
    count: 2
    zones: [zone-a]
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    allocatable: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}
  workloads:
  - name: web
    count: 150
    ratePerSecond: 15
    lifetimeSeconds: 6
    template:
      spec:
        containers:
        - {name: app, image: web, resources: {requests: {cpu: 500m, memory: 1Gi}}}
  - name: huge
    count: 3
    ratePerSecond: 1
    template:
      spec:
        containers:
        - {name: app, image: huge, resources: {requests: {cpu: "100"}}}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], m.SchedulerMetrics]:
    path = tmp_path_factory.mktemp("obs") / "scenario.yaml"
    path.write_text(SCENARIO)
    metrics = m.SchedulerMetrics()
    summary = run_scenario(load_scenario(str(path)), metrics=metrics)
    return summary, metrics


def _value(metrics: m.SchedulerMetrics, name: str, **labels: str) -> float:
    return metrics.samples().get((name, tuple(sorted(labels.items()))), 0.0)


def test_scheduled_attempts_equal_pods_bound(
    run: tuple[dict[str, Any], m.SchedulerMetrics],
) -> None:
    summary, metrics = run
    scheduled = _value(
        metrics,
        "scheduler_schedule_attempts_total",
        result="scheduled",
        profile="default-scheduler",
    )
    assert scheduled == summary["podsScheduled"] == 150
    unsched = _value(
        metrics,
        "scheduler_schedule_attempts_total",
        result="unschedulable",
        profile="default-scheduler",
    )
    assert unsched == summary["attempts"]["unschedulable"] > 0
    sli = metrics.histogram("scheduler_pod_scheduling_sli_duration_seconds", by="")
    assert sli[""]["count"] == 150
    assert _value(metrics, "scheduler_pod_scheduling_attempts_count") == 150


def test_pending_gauges_equal_queue_sizes_at_the_end(
    run: tuple[dict[str, Any], m.SchedulerMetrics],
) -> None:
    summary, metrics = run
    for queue, n in summary["pendingPods"].items():
        assert _value(metrics, "scheduler_pending_pods", queue=queue) == n
    assert summary["pendingPods"]["unschedulable"] == 3
    for plugin in ("NodeResourcesFit", "TaintToleration"):
        got = _value(
            metrics, "scheduler_unschedulable_pods", plugin=plugin, profile="default-scheduler"
        )
        assert got == 3
    tl = summary["timeline"]
    assert tl["pending"]["unschedulable"][-1] == 3


def test_incoming_pods_counter_matches_the_queue(
    run: tuple[dict[str, Any], m.SchedulerMetrics],
) -> None:
    _, metrics = run
    got = _value(
        metrics, "scheduler_queue_incoming_pods_total", queue="active", event="UnschedulablePodAdd"
    )
    assert got == 153  # every Pod entered activeQ once on creation


def test_plugin_durations_are_sampled(run: tuple[dict[str, Any], m.SchedulerMetrics]) -> None:
    summary, metrics = run
    plugins = metrics.histogram("scheduler_plugin_execution_duration_seconds", by="plugin")
    cycles = sum(summary["attempts"].values())
    fit = plugins["NodeResourcesFit"]["count"]
    assert fit is not None and 0 < fit < cycles
    points = metrics.histogram("scheduler_plugin_execution_duration_seconds", by="extension_point")
    assert {"Filter", "PreFilter", "Bind"} <= set(points)


def test_sampling_does_not_change_placements(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, run: tuple[dict[str, Any], m.SchedulerMetrics]
) -> None:
    summary, _ = run
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO)
    monkeypatch.setattr(scheduler_module, "PLUGIN_SAMPLE_EVERY", 10**9)
    again = run_scenario(load_scenario(str(path)))
    keys = ("podsScheduled", "attempts", "pendingPods")
    assert {k: again[k] for k in keys} == {k: summary[k] for k in keys}
    assert again["timeline"]["bound"] == summary["timeline"]["bound"]


def test_timeline_is_sampled_every_simulated_second(
    run: tuple[dict[str, Any], m.SchedulerMetrics],
) -> None:
    summary, _ = run
    tl = summary["timeline"]
    assert tl["t"] == [float(i) for i in range(int(summary["virtualSeconds"]) + 1)]
    n = len(tl["t"])
    assert all(len(v) == n for v in tl["pending"].values())
    assert tl["attempts"]["scheduled"][-1] == summary["attempts"]["scheduled"]
    assert tl["bound"] == sorted(tl["bound"]) and tl["bound"][-1] == 150
    assert tl["idleGpuNodes"] == [2] * n  # nobody tolerates the GPU taint


def test_waiting_pods_from_creation_and_condition(
    run: tuple[dict[str, Any], m.SchedulerMetrics],
) -> None:
    summary, _ = run
    w = summary["waiting"]
    assert w["count"] == 3 and w["byReason"] == {"Unschedulable": 3}
    assert w["oldest"]["pod"] == "default/huge-000000"
    assert w["oldest"]["ageSeconds"] == max(w["agesSeconds"])
    assert "Insufficient cpu" in w["oldest"]["message"]


def _sim(*nodes: Any) -> SimCluster:
    sim = SimCluster(load_config(None, known_plugins=known_plugin_names()))
    for n in nodes:
        sim.api.create_node(n.obj())
    return sim


def test_fragmentation_counts_free_capacity_on_partly_used_nodes() -> None:
    sim = _sim(
        make_node("a").cap(cpu="4", memory="8Gi", pods=10),
        make_node("b").cap(cpu="4", memory="8Gi", pods=10),
        make_node("g1").cap(cpu="8", memory="8Gi", pods=10).res({"nvidia.com/gpu": 8}),
        make_node("g2").cap(cpu="8", memory="8Gi", pods=10).res({"nvidia.com/gpu": 8}),
    )
    sim.api.create_pod(make_pod("p").req(cpu="1").node("a").obj())
    sim.api.create_pod(make_pod("q").req(cpu="1").res({"nvidia.com/gpu": 2}).node("g1").obj())
    usage = resource_usage(sim)
    util, frag = usage["cpu"]
    assert util == pytest.approx(100 * 2 / 24, abs=1e-3)
    assert frag == pytest.approx(100 * 10 / 22, abs=1e-3)  # 3 free on a + 7 free on g1
    gpu_util, gpu_frag = usage["nvidia.com/gpu"]
    assert gpu_util == pytest.approx(12.5)
    assert gpu_frag == pytest.approx(100 * 6 / 14, abs=1e-3)  # 6 free on g1, 8 on idle g2
    assert idle_gpu_nodes(sim) == 1
    tl = Timeline(sim)
    tl.sample()
    assert tl.series["idleGpuNodes"] == [1] and tl.series["running"] == [2]
