"""The unschedulable pool: Pods tried and rejected, or gated by PreEnqueue, awaiting an event.

Upstream v1.34 ``unschedulable_pods.go`` is a map keyed by ``namespace/name``; gated Pods are
counted apart (``scheduler_pending_pods{queue="gated"}``).  Upstream finds Pods to time out by
scanning the map every 30 s; here a heap ordered by time-out instant
(``timestamp + max_in_unschedulable``) makes :meth:`UnschedulablePool.pop_due` and
:meth:`UnschedulablePool.next_timeout` O(log n), which lets a virtual-time loop jump straight
to the next instant anything can move.  Before v1.37, gated Pods whose gating plugin does not
react to the wildcard time-out event never time out upstream, so they are kept out of that
heap; v1.37 flushes gated Pods too, each again 5 minutes after its last flush
(``FlushTimestamp``, ``Entry.flushed_at``).  PreEnqueue
(which decides who is gated) lives here too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

from kubesched.api import objects as api
from kubesched.framework.interface import QueuedPodInfo, Status
from kubesched.queue.backoff import Entry
from kubesched.queue.heaps import KeyedHeap


class PreEnqueuePlugin(Protocol):
    """A plugin with a PreEnqueue extension point."""

    name: str

    def pre_enqueue(self, pod: api.Pod) -> Status:
        """Success lets the Pod into activeQ/backoffQ; anything else gates it."""
        ...


def run_pre_enqueue(
    plugins_by_profile: Mapping[str, Sequence[PreEnqueuePlugin]], qp: QueuedPodInfo
) -> None:
    """Upstream ``runPreEnqueuePlugins``: gate ``qp`` on the first plugin that fails.

    The plugin that gated it last time runs first; a failure adds the plugin to
    ``unschedulable_plugins`` (so its hints can release the Pod) and sets ``gating_plugin``,
    ``gated`` and ``message``; when every plugin passes, the gate is cleared.
    """
    plugins = plugins_by_profile.get(qp.pod.scheduler_name, ())
    if qp.gating_plugin:
        plugins = sorted(plugins, key=lambda pl: pl.name != qp.gating_plugin)
    for pl in plugins:
        status = pl.pre_enqueue(qp.pod)
        if not status.is_success():
            qp.unschedulable_plugins.add(pl.name)
            qp.gating_plugin, qp.gated = pl.name, True
            qp.message = status.message()
            return
    qp.gating_plugin, qp.gated = "", False


class UnschedulablePool:
    """Pods keyed by ``namespace/name`` in insertion order, with gated and time-out indexes."""

    def __init__(self, max_in_unschedulable: float) -> None:
        self.max_in_unschedulable = max_in_unschedulable
        self._pods: dict[str, Entry] = {}
        self._gated: set[str] = set()
        self._ungated: dict[str, Entry] = {}
        """The pooled Pods that are not gated: what most cluster events are offered to."""
        self._timeouts: KeyedHeap[Entry] = KeyedHeap()

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._pods.values())

    @property
    def gated_count(self) -> int:
        """Pods held back by a PreEnqueue plugin."""
        return len(self._gated)

    def is_gated(self, key: str) -> bool:
        """Whether the pooled Pod ``key`` is gated."""
        return key in self._gated

    def add_or_update(self, entry: Entry, times_out: bool) -> bool:
        """Insert or refresh ``entry``; returns True when it was not pooled before.

        ``times_out``: whether the Pod may leave on ``UnschedulableTimeout`` at
        ``max(timestamp, flushed_at) + max_in_unschedulable``.
        """
        key, qp = entry.key, entry.qp
        new = key not in self._pods
        self._pods[key] = entry
        if qp.gated:
            self._gated.add(key)
            self._ungated.pop(key, None)
        else:
            self._gated.discard(key)
            self._ungated[key] = entry
        if times_out:
            since = max(qp.timestamp, entry.flushed_at)
            self._timeouts.push(key, (since + self.max_in_unschedulable, qp.seq), entry)
        else:
            self._timeouts.remove(key)
        return new

    def remove(self, key: str) -> None:
        """Drop ``key`` from the pool (no-op when absent)."""
        if self._pods.pop(key, None) is not None:
            self._gated.discard(key)
            self._ungated.pop(key, None)
            self._timeouts.remove(key)

    def candidates(self, include_gated: bool) -> Iterator[Entry]:
        """Pooled Pods to offer an event to: every one, or only the ungated ones (so that
        ten thousand gated Pods cost nothing on events their gates do not care about)."""
        return iter(self._pods.values()) if include_gated else iter(self._ungated.values())

    def pop_due(self, now: float) -> list[Entry]:
        """Remove from the time-out index (not the pool) every Pod whose time-out is before now.

        Upstream moves a Pod when ``now - timestamp > max`` (strictly); comparing with the sum
        keeps that exact and consistent with :meth:`next_timeout`.
        """
        due: list[Entry] = []
        while (prio := self._timeouts.peek_priority()) is not None and now > prio[0]:
            entry = self._timeouts.pop()
            assert entry is not None
            due.append(entry)
        return due

    def retry_at(self, entry: Entry, when: float) -> None:
        """Put a pooled Pod back in the time-out index, due at ``when``."""
        self._timeouts.push(entry.key, (when, entry.qp.seq), entry)

    def next_timeout(self) -> float | None:
        """The earliest time-out instant (a Pod moves strictly after it); None if none."""
        prio = self._timeouts.peek_priority()
        return None if prio is None else float(prio[0])
