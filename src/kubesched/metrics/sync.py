"""The periodic sync of a scheduler's metrics: gauges set and counters advanced from the
queue's, the cache's and result reuse's own counts (about once a second)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from prometheus_client import Counter, Gauge

from kubesched.metrics.catalog import MEMBER_STORES, QUEUES


class PeriodicSync:
    """:meth:`sync` over the metrics :class:`SchedulerMetrics` creates (mixed into it)."""

    pending_pods: Gauge
    queued_entities: Gauge
    queue_incoming: Counter
    batch_attempts: Counter
    batch_flushes: Counter
    unschedulable_pods: Gauge
    cache_size: Gauge
    plugin_evaluation: Counter
    inflight_events: Gauge
    _seen: dict[tuple[str, ...], int]
    _unschedulable_seen: set[tuple[str, str]]
    _inflight_seen: set[str]
    _entities_seen: set[tuple[str, str]]
    _lock: threading.Lock

    def sync(
        self,
        *,
        pending: Mapping[str, int],
        incoming: Mapping[tuple[str, str], int] | None = None,
        rejected: Iterable[tuple[str, Iterable[str]]] = (),
        cache: Mapping[str, int] | None = None,
        batch_profile: str = "",
        batch_attempts: Mapping[str, int] | None = None,
        batch_flushes: Mapping[str, int] | None = None,
        evaluations: Mapping[tuple[str, str, str], int] | None = None,
        inflight: Mapping[str, int] | None = None,
        entities: Mapping[tuple[str, str], int] | None = None,
    ) -> None:
        """Bring gauges and queue counters up to date (call about once a second).

        ``pending``: queue -> Pods (``SchedulingQueue.pending_pods()``); ``incoming``: the
        queue's cumulative ``(queue, event) -> n`` (counters grow by the difference since the
        last sync); ``rejected``: one ``(profile, plugins)`` per queued Pod whose last attempt
        (or PreEnqueue) was rejected by ``plugins``; ``cache``: type -> count;
        ``batch_attempts`` / ``batch_flushes``: cumulative result / reason counts of result
        reuse, exported under ``batch_profile``; ``evaluations``: cumulative
        ``(plugin, extension_point, profile) -> n`` plugin evaluations; ``inflight``: event
        label -> events (and ``PodPopped`` -> Pods) the queue tracks in flight now;
        ``entities``: ``(queue, type) -> n`` queued entities (v1.37,
        ``SchedulingQueue.queued_entities()``; v1.37's ``pending`` adds ``incomplete`` and
        ``pending`` to the queues of ``pending_pods``).
        """
        with self._lock:
            for q in (*QUEUES, *(m for m in MEMBER_STORES if m in pending)):
                self.pending_pods.labels(queue=q).set(pending.get(q, 0))
            now = dict(entities or {})
            for q, kind in self._entities_seen - now.keys():  # a series stays, at 0
                self.queued_entities.labels(queue=q, type=kind).set(0)
            for (q, kind), n in now.items():
                self.queued_entities.labels(queue=q, type=kind).set(n)
            self._entities_seen |= now.keys()
            for key, n in (incoming or {}).items():
                self._advance(
                    self.queue_incoming, ("incoming", *key), n, queue=key[0], event=key[1]
                )
            for result, n in (batch_attempts or {}).items():
                self._advance(
                    self.batch_attempts, ("batch", result), n, profile=batch_profile, result=result
                )
            for reason, n in (batch_flushes or {}).items():
                self._advance(
                    self.batch_flushes, ("flush", reason), n, profile=batch_profile, reason=reason
                )
            counts: dict[tuple[str, str], int] = {}
            for profile, plugins in rejected:
                for plugin in plugins:
                    counts[(plugin, profile)] = counts.get((plugin, profile), 0) + 1
            for key in self._unschedulable_seen - counts.keys():
                self.unschedulable_pods.labels(plugin=key[0], profile=key[1]).set(0)
            for key, n in counts.items():
                self.unschedulable_pods.labels(plugin=key[0], profile=key[1]).set(n)
            self._unschedulable_seen |= counts.keys()
            for kind, n in (cache or {}).items():
                self.cache_size.labels(type=kind).set(n)
            for (plugin, point, profile), n in (evaluations or {}).items():
                self._advance(
                    self.plugin_evaluation,
                    ("evaluation", plugin, point, profile),
                    n,
                    plugin=plugin,
                    extension_point=point,
                    profile=profile,
                )
            if inflight is not None:
                for label in self._inflight_seen - inflight.keys():
                    self.inflight_events.labels(event=label).set(0)
                for label, n in inflight.items():
                    self.inflight_events.labels(event=label).set(n)
                self._inflight_seen |= inflight.keys()

    def _advance(self, metric: Counter, key: tuple[str, ...], total: int, **labels: str) -> None:
        """Grow a counter to the cumulative ``total`` kept elsewhere (never backwards)."""
        delta = total - self._seen.get(key, 0)
        if delta > 0:
            metric.labels(**labels).inc(delta)
            self._seen[key] = total
