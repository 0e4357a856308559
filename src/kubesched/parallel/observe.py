"""What the parallel scheduler records: its own metrics and per-shard counts.

Metric names (kubesched's own, see :data:`kubesched.metrics.OWN_METRICS`):
``scheduler_binder_conflicts_total{reason}``, ``scheduler_binder_proposals_total{shard,result}``,
``scheduler_binder_duration_seconds{path}``, ``scheduler_dispatcher_retries_total{reason}`` and
``scheduler_dispatcher_in_flight_pods{shard}``.  Counters are also kept as plain numbers
(:class:`ShardCounts`) for the benchmark and simulation summaries.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kubesched.metrics import SchedulerMetrics


@dataclass(slots=True)
class BinderStats:
    """What the binder decided, for the results and the design note."""

    proposals: Counter[int] = field(default_factory=Counter)
    committed: Counter[str] = field(default_factory=Counter)
    """By path: ``fast``, ``cross``, ``full``, ``alternative``."""
    conflicts: Counter[str] = field(default_factory=Counter)
    retries: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    """Time spent re-validating and committing."""


@dataclass(slots=True)
class ShardCounts:
    """Per-shard numbers: results by kind, busy seconds, restarts."""

    results: Counter[str] = field(default_factory=Counter)
    busy: float = 0.0
    cpu: float = 0.0
    apply_cpu: float = 0.0
    messages: int = 0
    restarts: int = 0


class ParallelMetrics:
    """Records into a :class:`~kubesched.metrics.SchedulerMetrics` registry."""

    def __init__(self, metrics: SchedulerMetrics, shards: int) -> None:
        own = metrics.own
        self._conflicts = metrics.binder_conflicts
        self._proposals = own["scheduler_binder_proposals_total"]
        self._duration = own["scheduler_binder_duration_seconds"]
        self._retries = own["scheduler_dispatcher_retries_total"]
        self._in_flight = own["scheduler_dispatcher_in_flight_pods"]
        self.shards = [ShardCounts() for _ in range(shards)]
        self._children: dict[tuple[int, str], Any] = {}
        self._paths: dict[str, Any] = {}

    def conflict(self, reason: str) -> None:
        """A proposed node failed re-validation."""
        self._conflicts.labels(reason=reason).inc()

    def result(self, shard: int, result: str) -> None:
        """A shard's result was handled: committed, alternative, refused, unschedulable, error."""
        self.shards[shard].results[result] += 1
        child = self._children.get((shard, result))
        if child is None:
            child = self._proposals.labels(shard=str(shard), result=result)
            self._children[(shard, result)] = child
        child.inc()

    def binder_seconds(self, path: str, seconds: float) -> None:
        """Time the binder spent on one proposal (or gang)."""
        child = self._paths.get(path)
        if child is None:
            child = self._paths[path] = self._duration.labels(path=path)
        child.observe(seconds)

    def retry(self, reason: str, n: int = 1) -> None:
        """Pods handed out again."""
        if n:
            self._retries.labels(reason=reason).inc(n)

    def in_flight(self, load: list[int]) -> None:
        """Pods per shard awaiting an answer."""
        for i, n in enumerate(load):
            self._in_flight.labels(shard=str(i)).set(n)

    def summary(self) -> list[dict[str, Any]]:
        """Per-shard numbers, JSON-ready."""
        return [
            {
                "shard": i,
                "results": dict(s.results),
                "busySeconds": round(s.busy, 3),
                "cpuSeconds": round(s.cpu, 3),
                "applyCpuSeconds": round(s.apply_cpu, 3),
                "messages": s.messages,
                "restarts": s.restarts,
                "podsPerBusySecond": round(
                    (s.results["committed"] + s.results["alternative"]) / s.busy, 1
                )
                if s.busy > 0
                else None,
            }
            for i, s in enumerate(self.shards)
        ]


def binder_summary(stats: BinderStats) -> dict[str, Any]:
    """The binder's counts as a JSON-ready dict."""
    attempts = sum(stats.proposals.values())
    conflicts = sum(stats.conflicts.values())
    return {
        "proposals": {str(k): v for k, v in sorted(stats.proposals.items())},
        "committed": dict(stats.committed),
        "conflicts": dict(stats.conflicts),
        "conflictRate": round(conflicts / attempts, 4) if attempts else 0.0,
        "retries": dict(stats.retries),
        "binderSeconds": round(stats.seconds, 4),
    }
