"""What a measured phase reports: throughput samples, latency percentiles, perf-dash items.

Throughput is upstream's ``throughputCollector`` (``util.go``): it counts the Pods of the
measured namespaces (and label selector) that get bound after collection starts, and every
1 s of wall time it takes a sample.  As upstream it ignores ticks until the first Pod is
bound, drops that first interval (creating and scheduling start independently), and does not
record a zero interval but stretches the next sample over the skipped ticks.  Average is the
mean of the samples, PercN the sample at rank ``ceil(n*N/100)``.  A single-threaded loop
cannot tick in the middle of a scheduling cycle; a tick due meanwhile is taken right after
it, with the real elapsed time (as upstream does when its goroutine runs late).

Deviation: upstream reports no throughput when the phase yields no sample (a phase shorter
than about 2 s), and a single sample when it yields one: the tail bound in the second tick
after the first interval (most of the phase) was dropped, often 1 Pod/s.  kubesched then
reports one sample, the Pods bound divided by the time from the start of collection to the
last bind, and says so in the summary (``short run``); ``kube-oracle bench`` does the same,
so the two stay comparable.  That time leaves out, as upstream's window does, what the
scheduler spent binding Pods the phase does not count before the first it counts: the window
opens at the later of the phase's start and the last bind of an uncounted Pod before the
first counted one.  A phase that begins with other Pods still queued ahead of its own
(misc's ``SchedulingDeletedPodsWithFinalizers``: the 5,000 finalizer Pods created just
before, without waiting) is then measured on its own Pods, as upstream's collector, whose
samples begin only at the first tick that sees a measured Pod bound, measures it.

Latency items are upstream's ``metricsCollector``: per label value, the quantiles of the
scheduler's Prometheus histograms over the phase (bucket interpolation as PromQL's
``histogram_quantile``), in milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import objects as api
from kubesched.bench.config import MetricSelector
from kubesched.metrics import SchedulerMetrics
from kubesched.sim.apiserver import labels_match

SAMPLE_INTERVAL = 1.0
"""Seconds between throughput samples (upstream ``throughputSampleInterval``)."""
THROUGHPUT = "SchedulingThroughput"
ATTEMPT_DURATION = "scheduler_scheduling_attempt_duration_seconds"
EXTENSION_POINT_DURATION = "scheduler_framework_extension_point_duration_seconds"
SLI_DURATION = "scheduler_pod_scheduling_sli_duration_seconds"
HISTOGRAMS: tuple[tuple[str, str | None, tuple[str, ...]], ...] = (
    (ATTEMPT_DURATION, "result", ("scheduled", "unschedulable", "error")),
    (EXTENSION_POINT_DURATION, "extension_point", ()),
    (SLI_DURATION, None, ()),
)
"""Histograms reported: name, the label to split by (None: aggregate), preferred order."""
EXTENSION_POINTS = (
    "PreEnqueue",
    "PreFilter",
    "Filter",
    "PostFilter",
    "PreScore",
    "Score",
    "Reserve",
    "Permit",
    "PreBind",
    "Bind",
    "PostBind",
    "Unreserve",
)


def percentile_rank(values: Sequence[float], p: int) -> float:
    """Upstream: the sorted ``values`` at index ``ceil(n * p / 100) - 1``."""
    return values[math.ceil(len(values) * p / 100) - 1]


class ThroughputCollector:
    """Samples scheduled-Pod throughput of one measured phase (see the module docstring)."""

    def __init__(
        self,
        namespaces: Iterable[str],
        selector: Mapping[str, str] | None,
        start: float,
    ) -> None:
        self.namespaces = frozenset(namespaces)
        self.selector = dict(selector or {})
        self.start = start
        self.scheduled = 0
        self.samples: list[float] = []
        self.sample_times: list[float] = []
        """Seconds since ``start`` at which each of ``samples`` ends (a stretched sample's
        share of its interval), for plots."""
        self.next_tick = start + SAMPLE_INTERVAL
        self.started = False
        self.last_count = 0
        self.last_time = start
        self.skipped = 0
        self.last_bound_at: float | None = None
        self.opened = start
        """Where a short run's window opens: the phase's start, or the last bind of a Pod
        not counted before the first counted one."""

    def pod_bound(self, pod: api.Pod, now: float) -> None:
        """The API server bound ``pod``: count it if it is measured."""
        if pod.namespace in self.namespaces and (
            not self.selector or labels_match(pod.labels, self.selector)
        ):
            self.scheduled += 1
            self.last_bound_at = now
        elif not self.scheduled:
            self.opened = now

    def tick(self, now: float) -> None:
        """Take a sample if a tick is due (ticks missed while busy collapse into one)."""
        if now < self.next_tick:
            return
        while self.next_tick <= now:
            self.next_tick += SAMPLE_INTERVAL
        scheduled = self.scheduled
        if scheduled == 0:
            return
        if not self.started:
            self.started = True
            self.last_count, self.last_time = scheduled, now
            return
        new = scheduled - self.last_count
        if new == 0:
            self.skipped += 1
            return
        rate = new / (now - self.last_time)
        self.samples.extend([rate] * (self.skipped + 1))
        step = (now - self.last_time) / (self.skipped + 1)
        base = self.last_time - self.start
        self.sample_times.extend(base + step * (i + 1) for i in range(self.skipped + 1))
        self.last_count, self.last_time, self.skipped = scheduled, now, 0

    def summary(self) -> tuple[dict[str, float] | None, bool]:
        """(data, short_run): Average and PercN, or the total/elapsed fallback, or None."""
        values = sorted(self.samples)
        short = False
        if len(values) < 2 and self.scheduled and self.last_bound_at is not None:
            elapsed = max(self.last_bound_at - self.opened, 1e-9)
            values, short = [self.scheduled / elapsed], True
        if not values:
            return None, False
        data = {"Average": sum(values) / len(values)}
        for p in (50, 90, 95, 99):
            data[f"Perc{p}"] = percentile_rank(values, p)
        return data, short


# ------------------------------------------------------------------ histograms
Buckets = dict[tuple[tuple[str, str], ...], list[float]]
"""Labels (without ``le``) to ``[sum, count, cumulative counts per bucket...]``."""


@dataclass(slots=True)
class HistogramSnapshot:
    """Every histogram of a :class:`SchedulerMetrics` registry at one moment."""

    bounds: dict[str, list[float]] = field(default_factory=dict)
    series: dict[str, Buckets] = field(default_factory=dict)


def snapshot(metrics: SchedulerMetrics, names: Iterable[str]) -> HistogramSnapshot:
    """The current counts of the histograms ``names``."""
    wanted = set(names)
    snap = HistogramSnapshot()
    for family in metrics.registry.collect():
        if family.name not in wanted:
            continue
        bounds: list[float] = []
        series: Buckets = {}
        for s in family.samples:
            labels = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
            row = series.setdefault(labels, [0.0, 0.0])
            if s.name.endswith("_bucket"):
                le = float(s.labels["le"])
                if le not in bounds:
                    bounds.append(le)
                row.append(float(s.value))
            elif s.name.endswith("_sum"):
                row[0] = float(s.value)
            elif s.name.endswith("_count"):
                row[1] = float(s.value)
        snap.bounds[family.name] = bounds
        snap.series[family.name] = series
    return snap


def bucket_quantile(q: float, bounds: Sequence[float], counts: Sequence[float]) -> float:
    """PromQL ``bucketQuantile`` over cumulative ``counts`` per upper bound (last is +Inf)."""
    if len(counts) < 2 or counts[-1] == 0:
        return math.nan
    rank = q * counts[-1]
    b = next((i for i in range(len(counts) - 1) if counts[i] >= rank), len(counts) - 1)
    if b == len(counts) - 1:
        return bounds[-2]
    if b == 0 and bounds[0] <= 0:
        return bounds[0]
    start, end, count = 0.0, bounds[b], counts[b]
    if b > 0:
        start = bounds[b - 1]
        count -= counts[b - 1]
        rank -= counts[b - 1]
    return start + (end - start) * (rank / count)


def histogram_items(
    before: HistogramSnapshot, after: HistogramSnapshot, name_label: str
) -> list[dict[str, Any]]:
    """perf-dash items (ms) for what the histograms recorded between two snapshots."""
    items: list[dict[str, Any]] = []
    for metric, split, order in HISTOGRAMS:
        bounds = after.bounds.get(metric)
        if not bounds:
            continue
        groups: dict[str, list[float]] = {}
        for labels, row in after.series.get(metric, {}).items():
            old = before.series.get(metric, {}).get(labels)
            delta = [v - (old[i] if old else 0.0) for i, v in enumerate(row)]
            key = dict(labels).get(split, "") if split else ""
            acc = groups.setdefault(key, [0.0] * len(delta))
            groups[key] = [a + d for a, d in zip(acc, delta, strict=True)]
        rank = {v: i for i, v in enumerate(order or EXTENSION_POINTS)}
        for key in sorted(groups, key=lambda k: (rank.get(k, len(rank)), k)):
            total, count, *cumulative = groups[key]
            if count <= 0:
                continue
            data = {
                f"Perc{p}": bucket_quantile(p / 100, bounds, cumulative) * 1000.0
                for p in (50, 90, 95, 99)
            }
            data["Average"] = total / count * 1000.0
            item_labels = {"Metric": metric, "Name": name_label}
            if split:
                item_labels[split] = key
            items.append({"data": _ordered(data), "unit": "ms", "labels": item_labels})
    return items


def throughput_item(data: Mapping[str, float], name_label: str) -> dict[str, Any]:
    """The ``SchedulingThroughput`` perf-dash item."""
    return {
        "data": _ordered(data),
        "unit": "pods/s",
        "labels": {"Metric": THROUGHPUT, "Name": name_label},
    }


def duration_item(seconds: Sequence[float], metric: str, name_label: str) -> dict[str, Any]:
    """An item (ms) of exact percentiles (upstream's nearest rank) of measured durations."""
    values = sorted(seconds)
    data = {f"Perc{p}": percentile_rank(values, p) * 1000.0 for p in (50, 90, 95, 99)}
    data["Average"] = sum(values) / len(values) * 1000.0
    return {"data": _ordered(data), "unit": "ms", "labels": {"Metric": metric, "Name": name_label}}


def _ordered(data: Mapping[str, float]) -> dict[str, float]:
    keys = ("Average", "Perc50", "Perc90", "Perc95", "Perc99")
    out = {k: round(float(data[k]), 6) for k in keys if k in data}
    out.update({k: v for k, v in data.items() if k not in out})
    return out


def apply_threshold(
    items: Iterable[dict[str, Any]], threshold: float, selector: MetricSelector
) -> list[str]:
    """Upstream ``applyThreshold``: record ``<Bucket>Threshold`` on the selected items and
    return a message for each one on the wrong side of it (none when ``threshold`` is 0)."""
    if threshold == 0:
        return []
    bucket = selector.data_bucket
    failures = []
    for item in items:
        labels = item["labels"]
        if labels.get("Metric") != selector.name or not labels_match(labels, selector.labels):
            continue
        item["data"][bucket + "Threshold"] = threshold
        value = item["data"].get(bucket)
        name = labels.get("Name", "")
        if value is None:
            failures.append(f"{name}: no data present for {selector.name!r} {bucket!r}")
            continue
        ok = value < threshold if selector.expect_lower else value > threshold
        if not ok:
            want = "lower" if selector.expect_lower else "higher"
            failures.append(
                f"{name}: expected {selector.name} {bucket} to be {want}: "
                f"got {value:.2f}, want {threshold:g}"
            )
    return failures
