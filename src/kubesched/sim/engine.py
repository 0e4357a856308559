"""A discrete-event loop in virtual time, small enough to read in one sitting (after SimPy).

A heap of ``(time, priority, sequence, callback)``; :meth:`EventLoop.step` pops and runs one.
The sequence number makes ties FIFO, so runs are deterministic.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(order=True, slots=True)
class _Entry:
    at: float
    priority: int
    seq: int
    fn: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)


class EventLoop:
    """Virtual time: ``now`` only moves when the next event runs."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self._heap: list[_Entry] = []
        self._seq = 0

    def clock(self) -> float:
        """The current virtual time in seconds (use as the scheduler's clock)."""
        return self.now

    def call_at(self, at: float, fn: Callable[[], None], priority: int = 0) -> _Entry:
        """Run ``fn`` at virtual time ``at`` (never earlier than now)."""
        self._seq += 1
        entry = _Entry(max(at, self.now), priority, self._seq, fn)
        heapq.heappush(self._heap, entry)
        return entry

    def call_later(self, delay: float, fn: Callable[[], None], priority: int = 0) -> _Entry:
        """Run ``fn`` after ``delay`` virtual seconds."""
        return self.call_at(self.now + max(0.0, delay), fn, priority)

    @staticmethod
    def cancel(entry: _Entry) -> None:
        """Cancel a pending call (lazy: it is skipped when popped)."""
        entry.cancelled = True

    def peek(self) -> float | None:
        """Time of the next live event, or None."""
        while self._heap and self._heap[0].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0].at if self._heap else None

    def step(self) -> bool:
        """Run the next event; False when none is left."""
        while self._heap:
            entry = heapq.heappop(self._heap)
            if entry.cancelled:
                continue
            self.now = entry.at
            entry.fn()
            return True
        return False

    def run(self, until: float | None = None) -> None:
        """Run events until none is left or the next one is after ``until``."""
        while True:
            nxt = self.peek()
            if nxt is None or (until is not None and nxt > until):
                break
            self.step()
        if until is not None and self.now < until and self.peek() is None:
            return
