"""backoffQ: Pods serving their retry penalty, and the per-Pod record the queue keeps.

Upstream v1.34 ``backoff_queue.go`` with ``SchedulerPopFromBackoffQ`` (KEP-5142, beta and on by
default since v1.33):

- **duration** = ``initial * 2**(count-1)`` capped at ``max``, in integer nanoseconds as Go
  does it (``initial > max >> shift ? max : initial << shift``).  v1.37's queue entity of a
  PodGroup (:mod:`kubesched.queue.podgroups`) caps it at ``max * sqrt(members queued)``
  (``calculateBackoffDuration``).  ``count`` is the Pod's
  *UnschedulableCount* (attempts rejected by plugins), or its *ConsecutiveErrorsCount* when the
  last attempt ended in an error (v1.34, kubernetes#128748).  A Pod never rejected gets no
  backoff; ``max == 0`` disables backoff altogether.
- **expiry** = ``align(timestamp + duration)`` where ``timestamp`` is the time of the last
  failed attempt and ``align`` truncates to the 1-second *ordering window*; the value is cached
  on the record until the next failure.  A Pod is still backing off while
  ``expiry >= align(now)``, so it completes at the window start *after* its expiry window:
  a 1 s backoff lasts between 1 s and 2 s in practice.  Upstream flushes backoffQ on ticks
  aligned to whole seconds; any :meth:`BackoffQueue.pop_all_completed` call at time ``t``
  gives the result of the tick at ``floor(t)``.
- two heaps: Pods rejected by plugins (ordered by expiry window, then by QueueSort's key, so a
  window flushes in priority order), and Pods that failed with an error (ordered by expiry
  only).  When activeQ is empty, ``pop`` takes the head of the first heap even if its backoff
  has not completed (KEP-5142); Pods that failed with an error are never popped early.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from kubesched.api import objects as api
from kubesched.framework.interface import QueuedPodInfo
from kubesched.queue.heaps import KeyedHeap

ORDERING_WINDOW = 1.0
"""Seconds; upstream ``backoffQOrderingWindowDuration``."""

NO_BACKOFF = -math.inf
"""Expiry of a Pod that owes no backoff (upstream's zero ``time.Time``)."""

_NS = 1_000_000_000


@dataclass(slots=True, eq=False)
class Entry:
    """The queue's record of one Pod (keyed by ``namespace/name``), wherever it is.

    Holds what upstream keeps on ``QueuedPodInfo`` but our shared ``QueuedPodInfo`` lacks:
    failure counters, the cached backoff expiry, and in-flight bookkeeping.
    """

    qp: QueuedPodInfo
    uid: str
    where: str = ""
    """"active", "backoff", "unschedulable", "in_flight", or "" while moving."""
    unschedulable_count: int = 0
    consecutive_errors: int = 0
    backoff_expiration: float | None = None
    """Cached aligned expiry; None until computed."""
    deleted: bool = False
    """Deleted while in flight: dropped instead of requeued when the attempt ends."""
    latest_pod: api.Pod | None = None
    """An update received while in flight, applied when the Pod comes back."""
    members: dict[str, Entry] | None = None
    """A PodGroup's queue entity (v1.37, :mod:`kubesched.queue.podgroups`): its queued
    members by Pod key (None: the record of one Pod)."""
    group: str = ""
    """A member inside its group's entity: the group's ``namespace/name``."""
    flushed_at: float = -math.inf
    """When the 5-minute flush last moved it (upstream v1.37 ``FlushTimestamp``; only
    set with ``flush_gated``): its next time-out counts from the later of this and
    ``qp.timestamp``."""

    @property
    def size(self) -> int:
        """How many Pods the record stands for (upstream ``QueuedEntityInfo.Size``)."""
        return 1 if self.members is None else len(self.members)

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return self.qp.pod.key


def align_to_window(t: float) -> float:
    """Truncate ``t`` (seconds) to the start of its ordering window."""
    return math.floor(t / ORDERING_WINDOW) * ORDERING_WINDOW


def backoff_duration(count: int, initial: float, maximum: float, size: int = 1) -> float:
    """Seconds of backoff after ``count`` failures (0 for ``count == 0``); Go's integer maths.
    An entity of ``size`` Pods (v1.37's PodGroup) may back off up to ``maximum *
    sqrt(size)`` (Go's float product, truncated to nanoseconds)."""
    if count <= 0:
        return 0.0
    init_ns, max_ns = round(initial * _NS), round(maximum * _NS)
    if size > 1:
        max_ns = int(float(max_ns) * math.sqrt(size))
    shift = count - 1
    if shift >= 63 or init_ns > (max_ns >> shift):
        return max_ns / _NS
    return (init_ns << shift) / _NS


class BackoffQueue:
    """The two backoff heaps; items are :class:`Entry` records keyed by ``namespace/name``."""

    def __init__(
        self,
        clock: Callable[[], float],
        initial: float,
        maximum: float,
        sort_key: Callable[[QueuedPodInfo], tuple[object, ...]],
    ) -> None:
        self._clock = clock
        self.initial = initial
        self.maximum = maximum
        self._sort_key = sort_key
        self._rejected: KeyedHeap[Entry] = KeyedHeap()
        self._errors: KeyedHeap[Entry] = KeyedHeap()

    def __len__(self) -> int:
        return len(self._rejected) + len(self._errors)

    def __contains__(self, key: object) -> bool:
        return key in self._rejected or key in self._errors

    def len_backoff(self) -> int:
        """Pods rejected by plugins (the ones :meth:`pop_backoff` may take)."""
        return len(self._rejected)

    def backoff_time(self, entry: Entry) -> float:
        """Upstream ``getBackoffTime``: the aligned expiry, cached on ``entry``."""
        if self.maximum == 0:
            return NO_BACKOFF
        count = entry.consecutive_errors or entry.unschedulable_count
        if count == 0:
            return NO_BACKOFF
        if entry.backoff_expiration is None:
            duration = backoff_duration(count, self.initial, self.maximum, entry.size)
            entry.backoff_expiration = align_to_window(entry.qp.timestamp + duration)
        return entry.backoff_expiration

    def is_backing_off(self, entry: Entry) -> bool:
        """True while the Pod's expiry window has not passed (upstream ``isPodBackingoff``)."""
        return self.backoff_time(entry) >= align_to_window(self._clock())

    def add(self, entry: Entry) -> None:
        """Insert (or re-sort) ``entry``: error heap when no plugin rejected it."""
        qp = entry.qp
        bo = self.backoff_time(entry)
        if not qp.unschedulable_plugins and not qp.pending_plugins:
            self._rejected.remove(entry.key)
            self._errors.push(entry.key, (bo, qp.seq), entry)
        else:
            self._errors.remove(entry.key)
            self._rejected.push(entry.key, (bo, self._sort_key(qp), qp.seq), entry)

    def update(self, entry: Entry) -> None:
        """Re-sort ``entry`` after its Pod changed (e.g. a new priority)."""
        if entry.key in self._rejected:
            qp = entry.qp
            prio = (self.backoff_time(entry), self._sort_key(qp), qp.seq)
            self._rejected.push(entry.key, prio, entry)

    def remove(self, key: str) -> Entry | None:
        """Remove ``key`` from whichever heap holds it."""
        found = self._rejected.remove(key)
        return found if found is not None else self._errors.remove(key)

    def pop_all_completed(self) -> list[Entry]:
        """Remove and return every Pod whose backoff completed (rejected heap first)."""
        done: list[Entry] = []
        for heap in (self._rejected, self._errors):
            while (head := heap.peek()) is not None and not self.is_backing_off(head):
                heap.pop()
                done.append(head)
        return done

    def has_rejected(self) -> bool:
        """Whether :meth:`pop_backoff` has a Pod to pop (a Pod rejected by plugins)."""
        return self._rejected.peek() is not None

    def pop_backoff(self) -> Entry | None:
        """Pop the head of the rejected heap regardless of its backoff (KEP-5142)."""
        return self._rejected.pop()

    def next_completion(self) -> float | None:
        """Earliest time at which :meth:`pop_all_completed` would return something."""
        rejected = self._rejected.peek_priority()
        errors = self._errors.peek_priority()
        if errors is None:
            return None if rejected is None else float(rejected[0]) + ORDERING_WINDOW
        if rejected is None or errors[0] < rejected[0]:
            return float(errors[0]) + ORDERING_WINDOW
        return float(rejected[0]) + ORDERING_WINDOW

    def entries(self) -> list[Entry]:
        """Every Pod in backoff, rejected heap first, each in pop order."""
        return self._rejected.ordered() + self._errors.ordered()
