"""Throughput sampling as upstream's collector, histogram quantiles, thresholds."""

from __future__ import annotations

import math

import pytest

from kubesched.bench import collect
from kubesched.bench.config import MetricSelector
from kubesched.metrics import SchedulerMetrics
from kubesched.testing import make_pod


def _bind(c: collect.ThroughputCollector, n: int, now: float, ns: str = "m") -> None:
    for i in range(n):
        c.pod_bound(make_pod(f"p{now}-{i}", ns).obj(), now)


def test_first_interval_is_dropped_and_zero_intervals_stretch_the_next() -> None:
    c = collect.ThroughputCollector(["m"], None, start=0.0)
    c.tick(1.0)  # nothing bound yet: no sample, not started
    _bind(c, 50, 1.5)
    c.tick(2.0)  # first tick with Pods: starts, sample dropped
    _bind(c, 100, 2.5)
    c.tick(3.0)  # 100 in 1 s
    c.tick(4.0)  # nothing new: skipped
    _bind(c, 60, 4.5)
    c.tick(5.0)  # 60 over 2 s, recorded twice
    assert c.samples == [100.0, 30.0, 30.0]
    data, short = c.summary()
    assert not short and data is not None
    assert data["Average"] == pytest.approx(160 / 3)
    assert (data["Perc50"], data["Perc90"], data["Perc99"]) == (30.0, 100.0, 100.0)


def test_late_ticks_collapse_and_use_the_real_elapsed_time() -> None:
    c = collect.ThroughputCollector(["m"], None, start=0.0)
    _bind(c, 1, 0.5)
    c.tick(1.0)
    _bind(c, 300, 2.0)
    c.tick(3.5)  # ticks at 2 and 3 were missed: one sample over 2.5 s
    assert c.samples == [120.0]
    assert c.next_tick == 4.0


def test_only_measured_namespaces_and_labels_count() -> None:
    c = collect.ThroughputCollector(["m"], {"app": "web"}, start=0.0)
    c.pod_bound(make_pod("a", "m").labels(app="web").obj(), 0.1)
    c.pod_bound(make_pod("b", "m").labels(app="db").obj(), 0.1)
    c.pod_bound(make_pod("c", "other").labels(app="web").obj(), 0.1)
    assert c.scheduled == 1


def test_short_runs_fall_back_to_total_over_elapsed() -> None:
    c = collect.ThroughputCollector(["m"], None, start=10.0)
    assert c.summary() == (None, False)
    _bind(c, 40, 10.4)
    data, short = c.summary()
    assert short and data is not None
    assert data["Average"] == pytest.approx(100.0) and data["Perc99"] == pytest.approx(100.0)


def test_a_single_sample_is_the_tail_so_short_runs_report_total_over_elapsed() -> None:
    """PreemptionBasic's shape: nearly every Pod binds in the dropped first interval, one
    straggler in the next; the lone 1 Pod/s sample would stand for the whole phase."""
    c = collect.ThroughputCollector(["m"], None, start=0.0)
    _bind(c, 499, 0.5)
    c.tick(1.0)  # starts; the first interval is dropped
    _bind(c, 1, 1.5)
    c.tick(2.0)
    assert c.samples == [1.0]
    data, short = c.summary()
    assert short and data is not None
    assert data["Average"] == pytest.approx(500 / 1.5)


def test_a_short_runs_window_opens_after_the_uncounted_pods_queued_ahead() -> None:
    """SchedulingDeletedPodsWithFinalizers' shape: other Pods queued before the phase bind
    first; upstream's samples begin only once a measured Pod is bound, so their time is not
    the measured Pods'."""
    c = collect.ThroughputCollector(["m"], None, start=0.0)
    _bind(c, 400, 0.2, ns="finalizers")
    _bind(c, 500, 0.4, ns="finalizers")  # the last uncounted bind before the first counted
    _bind(c, 100, 0.45)
    _bind(c, 3, 0.47, ns="finalizers")  # after the first counted one: inside the window
    _bind(c, 100, 0.6)
    data, short = c.summary()
    assert short and data is not None
    assert data["Average"] == pytest.approx(200 / 0.2)


@pytest.mark.parametrize(
    ("values", "p", "want"), [([1.0], 50, 1.0), ([1.0, 2.0, 3.0, 4.0], 50, 2.0),
                               ([1.0, 2.0, 3.0, 4.0], 90, 4.0), (list(range(1, 101)), 99, 99)],
)  # fmt: skip
def test_percentile_rank_is_upstreams(values: list[float], p: int, want: float) -> None:
    assert collect.percentile_rank(values, p) == want


@pytest.mark.parametrize(
    ("q", "want"),
    [(0.5, 1.75), (0.25, 1.125), (0.9, 3.5), (1.0, 4.0), (0.0, 0.0)],
)
def test_bucket_quantile_interpolates_as_promql(q: float, want: float) -> None:
    # 10 observations: 2 in (0,1], 4 in (1,2], 4 in (2,4]
    bounds, counts = [1.0, 2.0, 4.0, math.inf], [2.0, 6.0, 10.0, 10.0]
    assert collect.bucket_quantile(q, bounds, counts) == pytest.approx(want)


def test_bucket_quantile_past_the_last_finite_bucket_and_empty() -> None:
    assert collect.bucket_quantile(0.99, [1.0, math.inf], [1.0, 10.0]) == 1.0
    assert math.isnan(collect.bucket_quantile(0.5, [1.0, math.inf], [0.0, 0.0]))


def test_histogram_items_report_only_what_the_phase_recorded() -> None:
    m = SchedulerMetrics()
    m.attempt_duration.labels(result="scheduled", profile="p").observe(5.0)  # before the phase
    names = [h[0] for h in collect.HISTOGRAMS]
    before = collect.snapshot(m, names)
    for v in (0.0015, 0.0015, 0.003):
        m.attempt_duration.labels(result="scheduled", profile="p").observe(v)
    m.extension_point_duration.labels(
        extension_point="Filter", status="Success", profile="p"
    ).observe(0.00015)
    m.extension_point_duration.labels(
        extension_point="PreFilter", status="Success", profile="p"
    ).observe(0.00015)
    items = collect.histogram_items(before, collect.snapshot(m, names), "C/w")
    labels = [item["labels"] for item in items]
    assert labels == [
        {"Metric": collect.ATTEMPT_DURATION, "Name": "C/w", "result": "scheduled"},
        {"Metric": collect.EXTENSION_POINT_DURATION, "Name": "C/w", "extension_point": "PreFilter"},
        {"Metric": collect.EXTENSION_POINT_DURATION, "Name": "C/w", "extension_point": "Filter"},
    ]
    attempt = items[0]["data"]
    assert attempt["Average"] == pytest.approx(2.0)  # ms, the 5 s observation excluded
    assert items[0]["unit"] == "ms"
    assert list(attempt) == ["Average", "Perc50", "Perc90", "Perc95", "Perc99"]


def _item(avg: float) -> dict[str, object]:
    return collect.throughput_item({"Average": avg, "Perc50": avg, "Perc90": avg, "Perc95": avg,
                                    "Perc99": avg}, "C/w")  # fmt: skip


@pytest.mark.parametrize(
    ("avg", "threshold", "failed"), [(100.0, 50.0, False), (40.0, 50.0, True), (50.0, 50.0, True),
                                      (10.0, 0.0, False)],
)  # fmt: skip
def test_threshold_fails_when_the_average_is_not_above_it(
    avg: float, threshold: float, failed: bool
) -> None:
    item = _item(avg)
    failures = collect.apply_threshold([item], threshold, MetricSelector())
    assert bool(failures) is failed
    if threshold:
        assert item["data"]["AverageThreshold"] == threshold  # type: ignore[index]
    if failed:
        assert "expected SchedulingThroughput Average to be higher" in failures[0]


def test_threshold_selector_can_expect_lower_values_of_another_metric() -> None:
    item = collect.duration_item([0.002, 0.004], "SchedulingAttemptDuration", "C/w")
    selector = MetricSelector("SchedulingAttemptDuration", {}, "Perc99", expect_lower=True)
    assert collect.apply_threshold([item], 3.0, selector)  # 4 ms is not below 3 ms
    assert not collect.apply_threshold([item], 5.0, selector)
