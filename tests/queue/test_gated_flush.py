"""v1.37's gated Pods on wildcard events: the 5-minute flush re-runs PreEnqueue on a Pod whose
gating plugin registered no wildcard, again 5 minutes after each flush (``FlushTimestamp``),
and a wildcard event reaches gated Pods; before v1.37 neither happens (``flush_gated``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kubesched.api import objects as api
from kubesched.framework.interface import ClusterEventWithHint, Status
from kubesched.queue import events
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.testing import make_pod
from tests.queue.support import (
    FIT,
    GATES,
    GATES_GONE,
    NODE_ADD,
    QUEUE,
    T0,
    Clock,
    GatesPlugin,
    prio_sort,
)


class CountingGates(GatesPlugin):
    """SchedulingGates (registered for gate removal only) that counts its PreEnqueue calls."""

    def __init__(self) -> None:
        self.calls = 0

    def pre_enqueue(self, pod: api.Pod) -> Status:
        self.calls += 1
        return super().pre_enqueue(pod)


def _gated_queue(clock: Clock, flush_gated: bool) -> tuple[SchedulingQueue, CountingGates]:
    gate = CountingGates()
    q = SchedulingQueue(
        clock=clock,
        sort_key=prio_sort,
        pre_enqueue={api.DEFAULT_SCHEDULER_NAME: [gate]},
        hints={
            api.DEFAULT_SCHEDULER_NAME: {
                FIT: [ClusterEventWithHint(NODE_ADD, QUEUE)],
                GATES: [ClusterEventWithHint(GATES_GONE, QUEUE)],
            }
        },
        flush_gated=flush_gated,
    )
    q.start_periodic()
    q.add(make_pod("g").gates("example.com/never").obj())
    assert q.queue_of("default/g") == "gated" and gate.calls == 1
    return q, gate


def _ticks(q: SchedulingQueue, clock: Clock, until: float) -> Iterator[float]:
    """Run ``due`` on every 30-s tick up to ``until`` seconds after T0, yielding each."""
    t = T0
    while t + 30 <= T0 + until:
        t += 30
        clock.t = t
        q.due(t)
        yield t


@pytest.mark.parametrize("flush_gated", [True, False])
def test_a_gated_pod_is_flushed_every_5_minutes_at_v137_only(flush_gated: bool) -> None:
    clock = Clock()
    q, gate = _gated_queue(clock, flush_gated)
    calls_at = []
    for t in _ticks(q, clock, 1000):
        if gate.calls > 1 + len(calls_at):
            calls_at.append(t - T0)
    if flush_gated:  # the first tick strictly after 300 s since the add, then since each flush
        assert calls_at == [330.0, 660.0, 990.0]
        assert q.incoming_counts[("unschedulable", "UnschedulableTimeout")] == 3
    else:
        assert calls_at == []
        assert ("unschedulable", "UnschedulableTimeout") not in q.incoming_counts
    assert q.queue_of("default/g") == "gated"
    assert q.pending_pods()["gated"] == 1


def test_a_pod_ungated_meanwhile_leaves_on_the_flush_at_v137() -> None:
    clock = Clock()
    q, gate = _gated_queue(clock, True)
    entry = q._entries["default/g"]
    entry.qp.pod = make_pod("g").obj()  # gates gone, but no event told the queue
    for _ in _ticks(q, clock, 330):
        pass
    assert q.queue_of("default/g") in ("active", "backoff")
    assert gate.calls == 2


@pytest.mark.parametrize("flush_gated", [True, False])
def test_a_wildcard_event_reaches_a_gated_pod_at_v137_only(flush_gated: bool) -> None:
    clock = Clock()
    q, gate = _gated_queue(clock, flush_gated)
    q.move_all_to_active_or_backoff(events.EVENT_FORCE_ACTIVATE)
    assert gate.calls == (2 if flush_gated else 1)
    q.move_all_to_active_or_backoff(NODE_ADD)  # not the gate's event: never
    assert gate.calls == (2 if flush_gated else 1)
    assert q.queue_of("default/g") == "gated"


def test_next_wakeup_follows_the_flush_timestamp_at_v137() -> None:
    clock = Clock()
    q, _ = _gated_queue(clock, True)
    wakeups = []
    for _ in range(3):
        t = q.next_wakeup()
        assert t is not None and t > clock.t
        clock.t = t
        q.due(t)
        wakeups.append(round(t - T0, 3))
    assert wakeups == [300.0, 600.0, 900.0]  # just after each 5 minutes: the next flush runs
    assert q.queue_of("default/g") == "gated"
