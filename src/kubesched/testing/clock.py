"""A virtual clock for tests: time that moves only when the test moves it.

A scheduler, its queue and its plugins read time through a clock (a callable returning
seconds as a float, like ``time.monotonic``).  Given a :class:`VirtualClock`, a test sets or
advances ``now`` and checks a deadline, a backoff or a Permit timeout at its exact instant,
instead of within a wall-clock slack.
"""

from __future__ import annotations


class VirtualClock:
    """Seconds on a clock that only the test moves: call it for the time, set ``now`` or call
    :meth:`advance` (or :meth:`sleep`, for code that sleeps on an injected clock) to move it."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        """Move time forward by ``seconds`` (never backwards); the new time."""
        if seconds < 0:
            raise ValueError(f"a clock does not go back ({seconds} s)")
        self.now += seconds
        return self.now

    def sleep(self, seconds: float) -> None:
        """Sleep without waiting: advance by ``seconds``."""
        self.advance(seconds)

    def __repr__(self) -> str:
        return f"VirtualClock(now={self.now!r})"
