"""A histogram for the hot path whose observations are bucketed in bulk, and PromQL's
``histogram_quantile`` for reading results back."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry
from prometheus_client.core import HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString


class BufferedChild:
    """One label set of a :class:`BufferedHistogram`: ``observe`` only appends."""

    __slots__ = ("_lock", "buckets", "pending", "total")

    def __init__(self, n_buckets: int) -> None:
        self.pending: list[float] = []
        self.buckets = np.zeros(n_buckets, dtype=np.int64)
        self.total = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        """Record one observation (cheap: counted into buckets at collection)."""
        self.pending.append(value)

    def flush(self, bounds: np.ndarray[Any, np.dtype[np.float64]]) -> None:
        """Count pending observations into the buckets (``value <= le``, as Prometheus)."""
        with self._lock:
            values, self.pending = self.pending, []
        if values:
            arr = np.asarray(values, dtype=np.float64)
            idx = np.searchsorted(bounds, arr, side="left")
            self.buckets += np.bincount(idx, minlength=self.buckets.shape[0])
            self.total += float(arr.sum())


class BufferedHistogram:
    """A Prometheus histogram for the hot path: ``observe`` appends to a list, and the
    observations are bucketed with numpy when the registry is collected.  Exposes exactly
    what ``prometheus_client.Histogram`` would (``_bucket``/``_sum``/``_count`` series, Go
    float formatting of ``le``) at a fraction of the per-observation cost."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: tuple[str, ...],
        buckets: tuple[float, ...],
        registry: CollectorRegistry,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = labelnames
        self._bounds = np.asarray([*buckets, float("inf")], dtype=np.float64)
        self._le = [floatToGoString(b) for b in self._bounds.tolist()]  # type: ignore[no-untyped-call]
        self._children: dict[tuple[str, ...], BufferedChild] = {}
        self._lock = threading.Lock()
        self._plain: BufferedChild | None = None
        """The only child of a histogram without labels (``observe`` goes straight to it)."""
        if not labelnames:  # client_golang exports a histogram without labels from the start
            self._plain = self.labels()
        registry.register(self)

    def labels(self, *values: str, **labels: str) -> BufferedChild:
        """The child for one label set (by position or by name)."""
        key = tuple(values) if values else tuple(str(labels[n]) for n in self.labelnames)
        child = self._children.get(key)
        if child is None:
            with self._lock:
                child = self._children.setdefault(key, BufferedChild(self._bounds.shape[0]))
        return child

    def observe(self, value: float) -> None:
        """Observe on the histogram without labels."""
        (self._plain or self.labels()).pending.append(value)

    def describe(self) -> list[Metric]:
        """The family without samples (so registration does not collect)."""
        return [HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)]

    def collect(self) -> Iterator[Metric]:
        """Bucket what was observed since the last collection and yield the family."""
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for key, child in sorted(self._children.items()):
            child.flush(self._bounds)
            cumulative = np.cumsum(child.buckets).tolist()
            family.add_metric(
                list(key), list(zip(self._le, cumulative, strict=True)), sum_value=child.total
            )
        yield family


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus's ``histogram_quantile`` over cumulative ``(le, count)`` pairs sorted by
    ``le`` (the last one ``+Inf``): linear interpolation inside the bucket holding the rank;
    a rank in the ``+Inf`` bucket gives the highest finite bound.  None with no observations."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    total = buckets[-1][1]
    rank = q * total
    prev_le, prev_count = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if le == float("inf"):
                return prev_le
            if count == prev_count:
                return le
            return prev_le + (le - prev_le) * (rank - prev_count) / (count - prev_count)
        prev_le, prev_count = le, count
    return prev_le
