"""backoffQ maths and ordering, and the queueing-hint decision table (ported from upstream
``backoff_queue_test.go`` and ``TestPriorityQueue_isPodWorthRequeuing``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueuedPodInfo,
    QueueingHint,
    Resource,
)
from kubesched.queue import events
from kubesched.queue.backoff import BackoffQueue, Entry, align_to_window, backoff_duration
from kubesched.queue.hints import HintTable, Strategy
from kubesched.testing import make_pod

T0 = 1000.0  # aligned with the 1 s ordering window


def prio_sort(qp: QueuedPodInfo) -> tuple[Any, ...]:
    return (-qp.pod.priority, qp.timestamp)


@pytest.mark.parametrize(
    ("count", "initial", "maximum", "want"),
    [
        (0, 1.0, 10.0, 0.0),
        (1, 1.0, 10.0, 1.0),
        (2, 1.0, 10.0, 2.0),
        (3, 1.0, 10.0, 4.0),
        (4, 1.0, 10.0, 8.0),
        (5, 1.0, 10.0, 10.0),
        (40, 1.0, 10.0, 10.0),
        (16, 1e-9, 32e-9, 32e-9),  # upstream "normal"
        (64, 1e-9, 9.223372036, 9.223372036),  # upstream "overflow_64bit"
        (3, 0.5, 60.0, 2.0),
    ],
)
def test_backoff_duration(count: int, initial: float, maximum: float, want: float) -> None:
    assert backoff_duration(count, initial, maximum) == pytest.approx(want, abs=1e-12)


def test_align_to_window() -> None:
    assert [align_to_window(t) for t in (3.0, 3.999, -0.5)] == [3.0, 3.0, -1.0]


def _entry(name: str, ts: float, prio: int = 0, plugin: bool = True, seq: int = 0) -> Entry:
    qp = QueuedPodInfo(pod=make_pod(name).priority(prio).obj(), timestamp=ts, seq=seq)
    if plugin:
        qp.unschedulable_plugins.add("plugin")
    return Entry(qp, name, unschedulable_count=1)


def test_backoff_ordering_by_window_then_priority() -> None:
    """Upstream TestBackoffQueueOrdering (PopFromBackoffQ enabled)."""
    now = [T0]
    bq = BackoffQueue(lambda: now[0], 1.0, 10.0, prio_sort)
    specs = [
        ("pod0", 1, T0),
        ("pod1", 1, T0 - 1),
        ("pod2", 2, T0 - 2 + 0.001),
        ("pod3", 1, T0 - 2),
        ("pod4", 2, T0 - 2),
        ("pod5", 1, T0 - 3),
    ]
    for i, (name, prio, ts) in enumerate(specs):
        bq.add(_entry(name, ts, prio, seq=i))
    got = [e.qp.pod.name for e in bq.pop_all_completed()]
    assert got == ["pod5", "pod4", "pod2", "pod3"]
    assert len(bq) == 2
    assert bq.next_completion() == T0 + 1  # pod1's window [T0, T0+1) ends


@pytest.mark.parametrize(
    ("in_backoff", "want"),
    [
        ([], []),
        (["pod0", "pod1"], ["pod0"]),
        (["pod2", "pod3"], ["pod2"]),
        (["pod0", "pod1", "pod2", "pod3"], ["pod0", "pod2"]),
        (["pod1", "pod3"], []),
    ],
)
def test_pop_all_completed_both_heaps(in_backoff: list[str], want: list[str]) -> None:
    """Upstream TestBackoffQueue_popEachBackoffCompleted: pod2/pod3 failed with errors."""
    specs = {
        "pod0": (T0 - 2, True),
        "pod1": (T0 + 1, True),
        "pod2": (T0 - 2, False),
        "pod3": (T0 + 1, False),
    }
    bq = BackoffQueue(lambda: T0, 1.0, 10.0, prio_sort)
    for name in in_backoff:
        ts, plugin = specs[name]
        bq.add(_entry(name, ts, plugin=plugin))
    assert [e.qp.pod.name for e in bq.pop_all_completed()] == want
    assert len(bq) == len(in_backoff) - len(want)


@pytest.mark.parametrize(
    ("now", "backing_off"),
    [(T0 + 0.5, True), (T0 + 1.0, True), (T0 + 1.999, True), (T0 + 2.0, False)],
)
def test_backoff_completes_at_window_after_expiry(now: float, backing_off: bool) -> None:
    clock = [now]
    bq = BackoffQueue(lambda: clock[0], 1.0, 10.0, prio_sort)
    assert bq.is_backing_off(_entry("p", T0)) is backing_off


def test_error_count_takes_precedence_and_zero_max_disables() -> None:
    bq = BackoffQueue(lambda: T0, 1.0, 10.0, prio_sort)
    e = _entry("p", T0)
    e.unschedulable_count, e.consecutive_errors = 4, 1
    assert bq.backoff_time(e) == T0 + 1  # error backoff: 1 s, not 8 s
    off = BackoffQueue(lambda: T0, 1.0, 0.0, prio_sort)
    assert not off.is_backing_off(_entry("q", T0))
    never_tried = _entry("r", T0)
    never_tried.unschedulable_count = 0
    assert not bq.is_backing_off(never_tried)


# ---------------------------------------------------------------- hints
NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD)
NODE_UPDATE = ClusterEvent(Resource.NODE, ActionType.UPDATE)
NODE_LABEL = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL)


def _queue(pod: Any, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE


def _skip(pod: Any, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE_SKIP


def _boom(pod: Any, old: Any, new: Any) -> QueueingHint:
    raise RuntimeError("hint failed")


def _qp(unschedulable: set[str], pending: set[str] = frozenset()) -> QueuedPodInfo:  # type: ignore[assignment]
    qp = QueuedPodInfo(pod=make_pod("p").obj(), timestamp=T0)
    qp.unschedulable_plugins |= unschedulable
    qp.pending_plugins |= set(pending)
    return qp


OTHER = make_pod("other").obj()


@pytest.mark.parametrize(
    ("registered", "qp", "event", "new", "want"),
    [
        ({"fooPlugin1": [(NODE_ADD, None)]}, _qp({"fooPlugin1"}), NODE_ADD, None, "after"),
        ({"fooPlugin1": [(NODE_ADD, _boom)]}, _qp({"fooPlugin1"}), NODE_ADD, None, "after"),
        ({"fooPlugin1": [(NODE_ADD, _skip)]}, _qp({"fooPlugin1"}), NODE_ADD, None, "skip"),
        ({"fooPlugin1": [(NODE_ADD, _skip)]}, _qp(set()), NODE_ADD, None, "after"),
        ({}, _qp({"fooPlugin1"}), events.EVENT_UNSCHEDULABLE_TIMEOUT, None, "after"),
        ({}, _qp({"fooPlugin1"}), events.EVENT_FORCE_ACTIVATE, OTHER, "skip"),
        (
            {"fooPlugin1": [(NODE_ADD, _queue)]},
            _qp(set(), {"fooPlugin1"}),
            NODE_ADD,
            None,
            "immediately",
        ),
        (
            {"fooPlugin1": [(NODE_ADD, _queue)], "fooPlugin2": [(NODE_ADD, _queue)]},
            _qp({"fooPlugin1"}, {"fooPlugin2"}),
            NODE_ADD,
            None,
            "immediately",
        ),
        ({"fooPlugin2": [(NODE_ADD, _queue)]}, _qp({"fooPlugin1"}), NODE_ADD, None, "skip"),
        ({"fooPlugin1": [(NODE_UPDATE, _queue)]}, _qp({"fooPlugin1"}), NODE_LABEL, None, "after"),
        ({"fooPlugin1": [(NODE_LABEL, _queue)]}, _qp({"fooPlugin1"}), NODE_UPDATE, None, "skip"),
        (
            {"fooPlugin1": [(NODE_ADD, _skip), (NODE_ADD, _queue)]},
            _qp({"fooPlugin1"}),
            NODE_ADD,
            None,
            "after",
        ),
    ],
)
def test_worth_requeuing(
    registered: dict[str, list[tuple[ClusterEvent, Any]]],
    qp: QueuedPodInfo,
    event: ClusterEvent,
    new: api.Pod | None,
    want: str,
) -> None:
    hints = {
        plugin: [ClusterEventWithHint(ev, fn) for ev, fn in regs]
        for plugin, regs in registered.items()
    }
    table = HintTable({api.DEFAULT_SCHEDULER_NAME: hints})
    expected = {"skip": Strategy.SKIP, "after": Strategy.AFTER_BACKOFF}.get(
        want, Strategy.IMMEDIATELY
    )
    assert table.worth_requeuing(qp, event, None, new) == expected


def test_unknown_profile_requeues_and_interest() -> None:
    table = HintTable({"other": {"fooPlugin1": [ClusterEventWithHint(NODE_ADD, _skip)]}})
    assert table.worth_requeuing(_qp({"fooPlugin1"}), NODE_ADD, None, None) == (
        Strategy.AFTER_BACKOFF
    )
    assert table.is_event_of_interest(NODE_ADD)
    assert not table.is_event_of_interest(NODE_UPDATE)
    assert table.is_event_of_interest(events.EVENT_UNSCHEDULABLE_TIMEOUT)
