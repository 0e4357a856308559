"""The virtual-time event loop (ordering, FIFO ties, cancellation) and the wall clock."""

from __future__ import annotations

from kubesched.sim.engine import EventLoop, WallClock


def test_events_run_in_time_then_priority_then_fifo_order() -> None:
    loop = EventLoop()
    seen: list[str] = []
    loop.call_at(2.0, lambda: seen.append("t2"))
    loop.call_at(1.0, lambda: seen.append("t1-b"), priority=0)
    loop.call_at(1.0, lambda: seen.append("t1-a"), priority=-1)
    loop.call_at(1.0, lambda: seen.append("t1-c"), priority=0)
    loop.run()
    assert seen == ["t1-a", "t1-b", "t1-c", "t2"]
    assert loop.now == 2.0


def test_run_until_stops_before_later_events_and_cancel_skips() -> None:
    loop = EventLoop()
    seen: list[float] = []
    loop.call_later(1.0, lambda: seen.append(loop.now))
    dropped = loop.call_later(1.5, lambda: seen.append(-1))
    loop.call_later(3.0, lambda: seen.append(loop.now))
    EventLoop.cancel(dropped)
    loop.run(until=2.0)
    assert seen == [1.0]
    assert loop.peek() == 3.0
    loop.run()
    assert seen == [1.0, 3.0]


def test_callbacks_may_schedule_more_events() -> None:
    loop = EventLoop()
    seen: list[float] = []

    def tick() -> None:
        seen.append(loop.now)
        if len(seen) < 3:
            loop.call_later(0.5, tick)

    loop.call_at(0.0, tick)
    loop.run()
    assert seen == [0.0, 0.5, 1.0]


def test_wall_clock_reads_its_source_and_runs_timers_only_when_asked() -> None:
    now = [10.0]
    clock = WallClock(lambda: now[0])
    seen: list[str] = []
    clock.call_later(5.0, lambda: seen.append("later"))
    clock.call_at(12.0, lambda: seen.append("at"))
    assert clock.now == 10.0 and clock.next_due() == 12.0
    now[0] = 20.0
    assert seen == []  # nothing runs by itself
    assert clock.run_due(14.0) == 1 and seen == ["at"]
    assert clock.run_due(clock.now) == 1 and seen == ["at", "later"]
    assert clock.next_due() is None
