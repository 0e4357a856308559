"""A discrete-event loop in virtual time, small enough to read in one sitting (after SimPy).

A heap of ``(time, priority, sequence, callback)``; :meth:`EventLoop.step` pops and runs one.
The sequence number makes ties FIFO, so runs are deterministic.

:class:`Clock` is what the in-process API server (:mod:`kubesched.sim.apiserver`) needs of
its time: ``now`` and timers.  :class:`EventLoop` is one (virtual time, the simulator);
:class:`WallClock` is the other (real time where events cost nothing, the benchmark): ``now``
reads a time source and timers wait until the owner's loop runs them.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class Clock(Protocol):
    """The time an in-process world lives in: the current time and timers on it."""

    @property
    def now(self) -> float:
        """Seconds."""
        ...

    def call_at(self, at: float, fn: Callable[[], None], priority: int = 0) -> object:
        """Run ``fn`` at time ``at`` (never earlier than now)."""
        ...

    def call_later(self, delay: float, fn: Callable[[], None], priority: int = 0) -> object:
        """Run ``fn`` after ``delay`` seconds."""
        ...


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


class WallClock:
    """Real time for a world whose API calls take no time (the benchmark): :attr:`now` reads
    ``source`` (``time.perf_counter``); a timer waits in a heap until the owner's loop calls
    :meth:`run_due` (the benchmark's loop does, between scheduling cycles)."""

    def __init__(self, source: Callable[[], float] = time.perf_counter) -> None:
        self.source = source
        self._heap: list[tuple[float, int, int, Callable[[], None]]] = []
        self._seq = itertools.count()

    @property
    def now(self) -> float:
        """The time source's current time."""
        return self.source()

    def call_at(self, at: float, fn: Callable[[], None], priority: int = 0) -> object:
        """Run ``fn`` at the first :meth:`run_due` at or after ``at``."""
        heapq.heappush(self._heap, (at, priority, next(self._seq), fn))
        return None

    def call_later(self, delay: float, fn: Callable[[], None], priority: int = 0) -> object:
        """Run ``fn`` at the first :meth:`run_due` at least ``delay`` seconds from now."""
        return self.call_at(self.now + max(0.0, delay), fn, priority)

    def next_due(self) -> float | None:
        """When the next timer is due, or None."""
        return self._heap[0][0] if self._heap else None

    def run_due(self, now: float) -> int:
        """Run every timer due by ``now``, in order; how many ran."""
        ran = 0
        while self._heap and self._heap[0][0] <= now:
            heapq.heappop(self._heap)[3]()
            ran += 1
        return ran
