"""Reading a metrics registry back: the exposition text, every sample, and a histogram's
count and quantiles per label value (what reports, tests and ``bench`` read)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from kubesched.metrics.histogram import histogram_quantile


class RegistryReader:
    """Read-back methods over ``self.registry`` (mixed into :class:`SchedulerMetrics`)."""

    registry: CollectorRegistry

    def exposition(self) -> bytes:
        """The text exposition format of every metric."""
        data: bytes = generate_latest(self.registry)
        return data

    def samples(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every sample: ``(name, sorted label pairs) -> value``."""
        out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        for family in self.registry.collect():
            for s in family.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = float(s.value)
        return out

    def histogram(self, name: str, by: str) -> dict[str, dict[str, float | None]]:
        """Per value of label ``by`` of histogram ``name`` (full name, no suffix): the
        observation count and the 0.5 / 0.99 quantiles estimated as Prometheus's
        ``histogram_quantile`` does, summed over the other labels."""
        buckets: dict[str, dict[float, float]] = {}
        for (sample, labels), value in self.samples().items():
            if sample != name + "_bucket":
                continue
            d = dict(labels)
            group = buckets.setdefault(d.get(by, ""), {})
            le = float(d["le"])
            group[le] = group.get(le, 0.0) + value
        out: dict[str, dict[str, float | None]] = {}
        for key, cum in sorted(buckets.items()):
            pairs = sorted(cum.items())
            out[key] = {
                "count": pairs[-1][1] if pairs else 0.0,
                "p50": histogram_quantile(0.5, pairs),
                "p99": histogram_quantile(0.99, pairs),
            }
        return out
