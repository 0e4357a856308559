"""A workload's outcome, its one-line summary, and the perf-dash JSON of a whole run.

perf-dash JSON (docs/design.md section 5, upstream ``DataItems``)::

    {"version": "v1", "dataItems": [
      {"data": {"Average": .., "Perc50": .., "Perc90": .., "Perc95": .., "Perc99": ..},
       "unit": "pods/s", "labels": {"Metric": "SchedulingThroughput", "Name": "<case>/<workload>"}},
      {"data": {...}, "unit": "ms", "labels": {"Metric": "SchedulingAttemptDuration", ...}},
      {"data": {...}, "unit": "ms", "labels": {"Name": ..., "result": "scheduled",
       "Metric": "scheduler_scheduling_attempt_duration_seconds"}}, ...]}

``SchedulingAttemptDuration`` is kubesched's own: every ``schedule_one`` of the phase timed
exactly (the upstream histogram's smallest bucket is 1 ms, too coarse for sub-millisecond
cycles).  The histogram items keep upstream's metric names and labels.  When a run used the
modelled API server, every item also carries ``Binding: memory|api``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.bench.collect import THROUGHPUT

MEMORY = "memory"
API = "api"
ATTEMPT_METRIC = "SchedulingAttemptDuration"


@dataclass(slots=True)
class ApiModel:
    """The binding mode a workload ran with."""

    mode: str = MEMORY
    latency: float = 0.0
    qps: float = 0.0
    burst: int = 0
    calls: int = 0
    throttled_calls: int = 0
    """Calls that waited for a client token."""
    max_wait: float = 0.0


@dataclass(slots=True)
class WorkloadResult:
    """What running one workload gave."""

    case: str
    workload: str
    api: ApiModel = field(default_factory=ApiModel)
    items: list[dict[str, Any]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    """Threshold checks that failed."""
    error: str | None = None
    """Why the workload could not finish (timeout, stall)."""
    limitations: list[str] = field(default_factory=list)
    """Where this run's decisions are known to differ from upstream's (a scheduler
    behaviour kubesched does not model; none is flagged today: an ordinary Pod's
    workload-aware preemption, the last, is modelled since)."""
    pods_bound: int = 0
    wall_seconds: float = 0.0
    attempts: dict[str, int] = field(default_factory=dict)
    short_run: bool = False
    threshold: float = 0.0
    peak_rss_mib: float = 0.0
    parallel: dict[str, Any] | None = None
    """Binder and per-shard numbers when the run used ``--shards N`` with N >= 2."""
    pods_created: int = 0
    pods_unbound: int = 0
    """Pods present but not bound when the workload ended (failed or still pending)."""
    throughput_samples: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    """Per measured phase (its ``Name`` label): ``(seconds since the phase began, pods/s)``
    for every throughput sample, for the HTML report; not part of perf-dash JSON."""
    settings: dict[str, Any] = field(default_factory=dict)
    """How the workload ran (params, seed, timeout, gates, ...), for the HTML report."""

    @property
    def name(self) -> str:
        """``<case>/<workload>``."""
        return f"{self.case}/{self.workload}"

    @property
    def ok(self) -> bool:
        """Finished and above every threshold."""
        return self.error is None and not self.failures

    def metric(self, name: str) -> dict[str, float] | None:
        """The data of the first item of metric ``name``."""
        for item in self.items:
            if item["labels"].get("Metric") == name:
                data: dict[str, float] = item["data"]
                return data
        return None

    def summary_line(self) -> str:
        """One line: throughput, attempt latency, Pods bound, threshold verdict."""
        parts = [f"{self.name}" + (f" [{self.api.mode} binds]" if self.api.mode != MEMORY else "")]
        tp = self.metric(THROUGHPUT)
        if tp is not None:
            parts.append(
                f"{tp['Average']:.1f} pods/s (p50 {tp['Perc50']:.1f}, p90 {tp['Perc90']:.1f}, "
                f"p99 {tp['Perc99']:.1f}{'; short run: total/elapsed' if self.short_run else ''})"
            )
        else:
            parts.append("no throughput measured")
        at = self.metric(ATTEMPT_METRIC)
        if at is not None:
            parts.append(f"attempt p50 {at['Perc50']:.3f} ms, p99 {at['Perc99']:.3f} ms")
        parts.append(
            f"{self.pods_bound} pods bound in {self.wall_seconds:.1f} s, "
            f"peak RSS {self.peak_rss_mib:.0f} MiB"
        )
        if self.parallel is not None:
            b = self.parallel["binder"]
            parts.append(
                f"{self.parallel['shards']} shards: {100.0 * b['conflictRate']:.2f}% of "
                f"{sum(b['proposals'].values())} proposals conflicted"
            )
        if self.api.mode != MEMORY:
            limit = f"{self.api.qps:g} qps / burst {self.api.burst}" if self.api.qps else "no limit"
            share = 100.0 * self.api.throttled_calls / max(1, self.api.calls)
            parts.append(
                f"client {limit}, latency {self.api.latency:g} s: {share:.0f}% of "
                f"{self.api.calls} calls waited for the rate limit (max {self.api.max_wait:.2f} s)"
            )
        parts.extend(f"NOT AS UPSTREAM: {note}" for note in self.limitations)
        if self.error is not None:
            parts.append(f"ERROR: {self.error}")
        elif self.failures:
            parts.append("FAIL: " + "; ".join(self.failures))
        elif self.threshold:
            parts.append(f"threshold {self.threshold:g}: ok")
        return ", ".join(parts)


def perf_dash(results: Sequence[WorkloadResult]) -> dict[str, Any]:
    """The perf-dash document for ``results`` (see the module docstring)."""
    label_binding = any(r.api.mode != MEMORY for r in results)
    items = []
    for r in results:
        for item in r.items:
            copy = {**item, "labels": dict(item["labels"])}
            if label_binding:
                copy["labels"]["Binding"] = r.api.mode
            if r.parallel is not None:
                copy["labels"]["Shards"] = str(r.parallel["shards"])
            items.append(copy)
    return {"version": "v1", "dataItems": items}


def write_json(results: Sequence[WorkloadResult], path: str) -> None:
    """Write :func:`perf_dash` to ``path``."""
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(perf_dash(results), fh, indent=2)
        fh.write("\n")
