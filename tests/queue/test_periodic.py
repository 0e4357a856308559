"""The queue's periodic work: ``due`` runs each flush on its tick, never early, never skipped,
and ``next_wakeup`` names the tick (or, with a period of 0, the instant) a Pod can move."""

from __future__ import annotations

from kubesched.queue.periodic import BACKOFF_FLUSH_PERIOD, UNSCHEDULABLE_FLUSH_PERIOD, Ticker
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.testing import make_pod
from tests.queue.support import FIT, T0, Clock, fail, make_queue, quota_gated_queue


def _failed(q: SchedulingQueue, name: str, *plugins: str) -> None:
    q.add(make_pod(name).obj())
    qp = q.pop()
    assert qp is not None and qp.pod.name == name
    fail(q, qp, *plugins)


def _at(q: SchedulingQueue, clock: Clock, t: float) -> None:
    clock.t = t
    q.due(t)


def test_upstream_periods() -> None:
    assert (BACKOFF_FLUSH_PERIOD, UNSCHEDULABLE_FLUSH_PERIOD) == (1.0, 30.0)


def test_ticker_fires_on_its_period_from_the_call() -> None:
    t = Ticker()
    assert t.fire(-1e9) and t.fire(-1e9)  # not started: due at every call
    t.start(10.0, 1.0)
    assert not t.fire(10.999) and t.fire(11.0)
    assert t.next_at == 12.0
    assert t.fire(12.5) and t.next_at == 13.5  # sliding, as upstream's wait.Until


def test_backoff_flush_runs_every_second_not_at_completion() -> None:
    clock = Clock(T0 + 0.5)
    q = make_queue(clock)
    q.start_periodic()  # backoffQ ticks at T0+1.5, T0+2.5, ...
    _failed(q, "p")  # an error: the error heap, 1 s, completes at T0+2; never popped early
    assert q.next_wakeup() == T0 + 1.5
    _at(q, clock, T0 + 1.5)
    assert q.queue_of("default/p") == "backoff"  # the tick came before the completion
    assert q.next_wakeup() == T0 + 2.5
    _at(q, clock, T0 + 2.4)
    assert q.queue_of("default/p") == "backoff"  # completed, but no tick yet
    _at(q, clock, T0 + 2.5)
    assert q.queue_of("default/p") == "active"
    assert q.next_wakeup() is None


def test_backoff_period_zero_flushes_at_the_completion() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.start_periodic(backoff_period=0.0)  # the simulator's virtual time
    _failed(q, "p")
    assert q.next_wakeup() == T0 + 2
    _at(q, clock, T0 + 1.999)
    assert q.queue_of("default/p") == "backoff"
    _at(q, clock, T0 + 2)
    assert q.queue_of("default/p") == "active"


def test_pool_flush_every_30_s_moves_a_pod_on_the_first_tick_after_5_minutes() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.start_periodic()
    _failed(q, "p", FIT)
    assert q.queue_of("default/p") == "unschedulable"
    ticks: list[float] = []
    while q.queue_of("default/p") == "unschedulable" and len(ticks) < 20:
        t = q.next_wakeup()
        assert t is not None and t > clock.t
        if t == T0 + 330:  # the time-out (300 s, strictly) passed: still waits for the tick
            _at(q, clock, T0 + 329.99)
            assert q.queue_of("default/p") == "unschedulable"
        _at(q, clock, t)
        ticks.append(t - T0)
    assert ticks == [30.0 * k for k in range(1, 12)]
    assert q.queue_of("default/p") == "active"
    assert q.incoming_counts[("active", "UnschedulableTimeout")] == 1


def test_an_error_backoff_is_not_held_back_by_a_pod_waiting_for_the_pool_flush() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.start_periodic(backoff_period=0.0)
    _failed(q, "a", FIT)  # times out after T0+300, moves on the tick at T0+330
    for k in range(1, 11):
        _at(q, clock, T0 + 30 * k)
    _at(q, clock, T0 + 305)
    _failed(q, "b")  # an error at T0+305: error backoff until T0+307
    assert q.next_wakeup() == T0 + 307
    _at(q, clock, T0 + 307)
    assert q.queue_of("default/b") == "active"
    assert q.queue_of("default/a") == "unschedulable"
    assert q.next_wakeup() == T0 + 330


def test_a_gated_pod_is_retried_on_every_pool_flush_after_its_time_out() -> None:
    clock = Clock()
    q = quota_gated_queue(clock)
    q.start_periodic()
    q.add(make_pod("p").obj())
    assert q.queue_of("default/p") == "gated"
    wakeups = []
    for _ in range(3):
        t = q.next_wakeup()
        assert t is not None and t > clock.t
        _at(q, clock, t)
        wakeups.append(round(t - T0, 3))
    assert wakeups == [300.0, 330.0, 360.0]
    assert q.queue_of("default/p") == "gated"


def test_not_started_due_flushes_at_every_call() -> None:
    clock = Clock()
    q = make_queue(clock)
    _failed(q, "p")
    assert q.next_wakeup() == T0 + 2
    _at(q, clock, T0 + 2)
    assert q.queue_of("default/p") == "active"
