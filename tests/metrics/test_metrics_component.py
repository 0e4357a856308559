"""What a fresh kubesched registry shows before anything happened, as kube-scheduler's does:
the default process collectors, the label-less histograms and counters at zero, and
``schedule_attempts_total`` at zero for every result of every profile; then the same series
moving when the thing happens."""

from __future__ import annotations

import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubesched import metrics as m
from kubesched.testing import drain, make_node, make_pod, new_scheduler

TWO_PROFILES = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "batch"}],
}


def _families(sm: m.SchedulerMetrics) -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(sm.exposition().decode())}


@pytest.mark.parametrize(
    "name",
    [
        "process_cpu_seconds",
        "process_resident_memory_bytes",
        "process_start_time_seconds",
        "process_open_fds",
        "python_gc_collections",
        "python_info",
    ],
)
def test_default_process_collectors_on_the_registry(name: str) -> None:
    fam = _families(m.SchedulerMetrics())[name]
    assert fam.samples  # type: ignore[attr-defined]


def test_process_cpu_seconds_grow_with_the_work_done() -> None:
    sm = m.SchedulerMetrics()
    key = ("process_cpu_seconds_total", ())
    before = sm.samples()[key]
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:  # burn a little CPU
        pass
    assert sm.samples()[key] >= before + 0.2


def test_two_registries_each_have_their_own_process_metrics() -> None:
    a, b = m.SchedulerMetrics(), m.SchedulerMetrics()
    for sm in (a, b):
        assert sm.samples()[("process_cpu_seconds_total", ())] >= 0


@pytest.mark.parametrize(
    "name",
    [
        "scheduler_scheduling_algorithm_duration_seconds_count",
        "scheduler_preemption_victims_count",
        "scheduler_preemption_victims_sum",
        "scheduler_pod_scheduling_attempts_count",
        "scheduler_preemption_attempts_total",
    ],
)
def test_label_less_series_start_at_zero(name: str) -> None:
    assert m.SchedulerMetrics().samples()[(name, ())] == 0


def test_label_less_histogram_buckets_start_at_zero() -> None:
    got = m.SchedulerMetrics().samples()
    les = [
        dict(labels)["le"]
        for (n, labels), v in got.items()
        if n == "scheduler_preemption_victims_bucket" and v == 0
    ]
    assert les == ["1.0", "2.0", "4.0", "8.0", "16.0", "32.0", "64.0", "+Inf"]


def test_preemption_series_move_when_a_preemption_happens() -> None:
    sm = m.SchedulerMetrics()
    sm.record_preemption(3)
    got = sm.samples()
    assert got[("scheduler_preemption_attempts_total", ())] == 1
    assert got[("scheduler_preemption_victims_count", ())] == 1
    assert got[("scheduler_preemption_victims_sum", ())] == 3
    assert got[("scheduler_preemption_victims_bucket", (("le", "2.0"),))] == 0
    assert got[("scheduler_preemption_victims_bucket", (("le", "4.0"),))] == 1


def _attempts(sm: m.SchedulerMetrics) -> dict[tuple[str, str], float]:
    return {
        (dict(labels)["profile"], dict(labels)["result"]): v
        for (n, labels), v in sm.samples().items()
        if n == "scheduler_schedule_attempts_total"
    }


def test_schedule_attempts_start_at_zero_for_every_result_of_every_profile() -> None:
    s, _, _ = new_scheduler(TWO_PROFILES)
    want = {(p, r): 0.0 for p in ("default-scheduler", "batch") for r in m.RESULTS}
    assert _attempts(s.metrics) == want


def test_schedule_attempts_count_from_zero() -> None:
    s, _, _ = new_scheduler(TWO_PROFILES)
    s.on_node_add(make_node("n1").cap(cpu="1", pods=10).obj())
    s.on_pod_add(make_pod("fits").req(cpu="500m").obj())
    s.on_pod_add(make_pod("too-big").req(cpu="2").obj())
    drain(s)
    got = _attempts(s.metrics)
    assert got[("default-scheduler", "scheduled")] == 1
    assert got[("default-scheduler", "unschedulable")] == 1
    assert got[("default-scheduler", "error")] == 0
    assert got[("batch", "scheduled")] == 0


def test_algorithm_duration_counts_from_zero() -> None:
    s, _, _ = new_scheduler()
    key = ("scheduler_scheduling_algorithm_duration_seconds_count", ())
    assert s.metrics.samples()[key] == 0
    s.on_node_add(make_node("n1").cap(cpu="1", pods=10).obj())
    s.on_pod_add(make_pod("p").req(cpu="100m").obj())
    drain(s)
    assert s.metrics.samples()[key] == 1


@pytest.mark.parametrize(("name", "spec"), sorted(m.COMPONENT_METRICS.items()))
def test_component_metric_families_are_declared(
    name: str, spec: tuple[str, tuple[str, ...], tuple[float, ...] | None]
) -> None:
    kind, _, _ = spec
    fam = _families(m.SchedulerMetrics())[name.removesuffix("_total")]
    assert fam.type == kind  # type: ignore[attr-defined]
