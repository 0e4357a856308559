"""The scheduling queue's periodic work, as tickers in caller-driven time.

Upstream's ``PriorityQueue.Run`` starts two goroutines, ``wait.Until(flushBackoffQCompleted,
1 s)`` and ``wait.Until(flushUnschedulablePodsLeftover, 30 s)``.  Here no thread runs them:
a :class:`Ticker` only knows its period and when it next fires, and
:class:`~kubesched.queue.scheduling_queue.SchedulingQueue` fires them from ``due(now)``
(:meth:`Ticker.fire`: due when ``now`` reached the next time, then re-armed ``period`` after
``now``, like upstream's sliding ``wait.Until``).  The drivers (the simulator in virtual time,
``bench`` and ``kubesched run`` in wall-clock time) only decide when to call it.

A period of 0 fires at every call: a queue whose periodic work was never started flushes
whenever ``due`` is called, and the simulator flushes backoffQ the moment a Pod's backoff ends
instead of on the next whole second.
"""

from __future__ import annotations

import math

BACKOFF_FLUSH_PERIOD = 1.0
"""Seconds between upstream's ``flushBackoffQCompleted`` runs (``PriorityQueue.Run``)."""
UNSCHEDULABLE_FLUSH_PERIOD = 30.0
"""Seconds between upstream's ``flushUnschedulablePodsLeftover`` runs (``PriorityQueue.Run``);
a Pod still gated after a time-out is retried one period later."""


class Ticker:
    """One periodic task: its period (seconds) and when it next fires (the queue's clock)."""

    __slots__ = ("next_at", "period")

    def __init__(self) -> None:
        """Not started: period 0, due at every :meth:`fire`."""
        self.period = 0.0
        self.next_at = -math.inf

    def start(self, now: float, period: float) -> None:
        """Fire every ``period`` seconds from ``now`` (the first time at ``now + period``)."""
        self.period = period
        self.next_at = now + period

    def fire(self, now: float) -> bool:
        """True (and re-armed ``period`` after ``now``) when the task is due at ``now``."""
        if now < self.next_at:
            return False
        self.next_at = now + self.period
        return True
