"""A keyed binary heap with lazy deletion: the building block of activeQ, backoffQ and timers.

Upstream uses an indexed heap (``pkg/scheduler/backend/heap``) keyed by ``namespace/name``.
Python's :mod:`heapq` cannot re-sift an arbitrary element, so :class:`KeyedHeap` keeps a
``key -> (priority, token, item)`` map beside the heap list and treats every heap record whose
token no longer matches the map as garbage.  ``push`` (add or update), ``remove``, ``pop`` and
``peek`` are O(log n) amortised; the list is rebuilt when garbage outnumbers live entries, so
memory stays O(live).

Priorities are tuples; a heap record is the flat tuple ``(*priority, token, key)`` (a nested
``((a, b), token, key)`` compares about 3x slower, and activeQ pops once per cycle).  Ties:
tokens grow monotonically, so two items with equal priority pop in push order (FIFO) and keys
are never compared.  Priorities in one heap must have the same length.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_COMPACT_SLACK = 64
"""Garbage allowed on top of ``2 * live`` records before the heap list is rebuilt."""


class KeyedHeap(Generic[T]):
    """A min-heap of items addressed by a string key; smaller ``priority`` pops first."""

    __slots__ = ("_counter", "_heap", "_live")

    def __init__(self) -> None:
        self._heap: list[tuple[Any, ...]] = []
        self._live: dict[str, tuple[tuple[Any, ...], int, T]] = {}
        self._counter = 0

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: object) -> bool:
        return key in self._live

    def push(self, key: str, priority: tuple[Any, ...], item: T) -> None:
        """Add ``item`` under ``key``, or move it to ``priority`` if the key is present."""
        self._counter += 1
        token = self._counter
        self._live[key] = (priority, token, item)
        heapq.heappush(self._heap, (*priority, token, key))
        self._maybe_compact()

    def remove(self, key: str) -> T | None:
        """Remove ``key``; returns its item, or None when absent."""
        rec = self._live.pop(key, None)
        if rec is None:
            return None
        self._maybe_compact()
        return rec[2]

    def get(self, key: str) -> T | None:
        """The item under ``key`` (None when absent)."""
        rec = self._live.get(key)
        return None if rec is None else rec[2]

    def peek(self) -> T | None:
        """The item that :meth:`pop` would return, without removing it."""
        self._prune()
        if not self._heap:
            return None
        return self._live[self._heap[0][-1]][2]

    def peek_priority(self) -> tuple[Any, ...] | None:
        """The smallest priority in the heap (None when empty)."""
        self._prune()
        return self._heap[0][:-2] if self._heap else None

    def pop(self) -> T | None:
        """Remove and return the item with the smallest priority (None when empty)."""
        self._prune()
        if not self._heap:
            return None
        return self._live.pop(heapq.heappop(self._heap)[-1])[2]

    def items(self) -> Iterator[T]:
        """Every item, in no particular order."""
        return (rec[2] for rec in self._live.values())

    def ordered(self) -> list[T]:
        """Every item in pop order (O(n log n); for reports and tests)."""
        recs = sorted((p, tok, item) for p, tok, item in self._live.values())
        return [item for _, _, item in recs]

    def _prune(self) -> None:
        heap, live = self._heap, self._live
        while heap:
            top = heap[0]
            rec = live.get(top[-1])
            if rec is not None and rec[1] == top[-2]:
                return
            heapq.heappop(heap)

    def _maybe_compact(self) -> None:
        if len(self._heap) <= 2 * len(self._live) + _COMPACT_SLACK:
            return
        self._heap = [(*p, tok, key) for key, (p, tok, _) in self._live.items()]
        heapq.heapify(self._heap)
