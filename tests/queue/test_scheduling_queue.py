"""SchedulingQueue end to end on a fake clock (ported from upstream scheduling_queue_test.go)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from kubesched.framework.interface import ActionType, ClusterEvent, QueueingHint, Resource
from kubesched.queue import events
from kubesched.testing import make_pod
from tests.queue.support import (
    FIT,
    GATES,
    NODE_ADD,
    POD_LABEL,
    QUEUE,
    SKIP,
    T0,
    Clock,
    fail,
    hint,
    make_queue,
    names,
)


def test_pop_orders_by_priority_then_fifo_and_counts_cycles() -> None:
    clock = Clock()
    q = make_queue(clock)
    for name, prio in [("low", 0), ("mid", 50), ("high", 100), ("mid2", 50)]:
        q.add(make_pod(name).priority(prio).obj())
        clock.t += 0.001
    assert q.pending_pods() == {"active": 4, "backoff": 0, "unschedulable": 0, "gated": 0}
    first = q.pop()
    assert (
        first is not None and first.attempts == 1 and first.initial_attempt_timestamp == T0 + 0.002
    )
    assert names(q) == ["mid", "mid2", "low"]
    assert q.pop() is None and q.scheduling_cycle == 4
    assert q.incoming_counts[("active", "UnschedulablePodAdd")] == 4


def test_backoff_flow_doubles_to_the_cap() -> None:
    """Upstream TestBackOffFlow: 1, 2, 4, 8, 10, 10, 10 s, counted from the failure."""
    clock = Clock(T0 + 0.25)
    q = make_queue(clock)
    q.add(make_pod("p").obj())
    for i, want in enumerate([1, 2, 4, 8, 10, 10, 10]):
        qp = q.pop()
        assert qp is not None and qp.attempts == i + 1
        failed_at = clock.t
        fail(q, qp, FIT)
        assert q.queue_of("default/p") == "unschedulable"
        q.move_all_to_active_or_backoff(events.EVENT_UNSCHEDULABLE_TIMEOUT)
        assert q.queue_of("default/p") == "backoff"
        expiry_window = int(failed_at + want)
        assert q.next_wakeup() == expiry_window + 1
        clock.t = expiry_window + 0.999
        q.flush_backoff_completed()
        assert q.queue_of("default/p") == "backoff"
        clock.t = expiry_window + 1
        q.flush_backoff_completed()
        assert q.queue_of("default/p") == "active"
    assert q.incoming_counts[("active", "BackoffComplete")] == 7


def test_pop_from_backoff_when_active_empty_but_not_error_backoff() -> None:
    """KEP-5142: the head of backoffQ (highest priority in the earliest window) pops early."""
    clock = Clock()
    q = make_queue(clock)
    for name, prio in [("a", 1), ("b", 5), ("err", 9)]:
        q.add(make_pod(name).priority(prio).obj())
    popped = {qp.pod.name: qp for qp in (q.pop(), q.pop(), q.pop()) if qp is not None}
    q.move_all_to_active_or_backoff(NODE_ADD)  # arrives while all three are in flight
    fail(q, popped["a"], FIT)
    fail(q, popped["b"], FIT)
    fail(q, popped["err"])  # no plugin: an error, error backoff heap
    assert q.pending_pods()["backoff"] == 3
    assert names(q) == ["b", "a"]  # err is never popped early
    assert q.incoming_counts[("active", "PopFromBackoffQ")] == 2
    clock.t = T0 + 2
    q.flush_backoff_completed()
    assert names(q) == ["err"]


@pytest.mark.parametrize(
    ("registered", "pending", "elapsed", "want"),
    [
        ({FIT: [(NODE_ADD, QUEUE)]}, False, 0.0, "backoff"),
        ({FIT: [(NODE_ADD, QUEUE)]}, False, 5.0, "active"),
        ({FIT: [(NODE_ADD, QUEUE)]}, True, 0.0, "active"),
        ({FIT: [(NODE_ADD, SKIP)]}, False, 5.0, "unschedulable"),
        ({FIT: [(NODE_ADD, None)]}, False, 0.0, "backoff"),
        (
            {FIT: [(NODE_ADD, hint(QueueingHint.QUEUE))], "Other": [(NODE_ADD, SKIP)]},
            False,
            5.0,
            "active",
        ),
        ({"Other": [(NODE_ADD, QUEUE)]}, False, 5.0, "unschedulable"),
        (
            {FIT: [(ClusterEvent(Resource.NODE, ActionType.DELETE), QUEUE)]},
            False,
            5.0,
            "unschedulable",
        ),
    ],
)
def test_move_on_event_follows_hints(
    registered: dict[str, Sequence[tuple[ClusterEvent, Any]]],
    pending: bool,
    elapsed: float,
    want: str,
) -> None:
    """Upstream TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint."""
    clock = Clock()
    q = make_queue(clock, registered)
    q.add(make_pod("p").obj())
    qp = q.pop()
    assert qp is not None
    fail(q, qp, FIT, pending=pending)
    assert q.queue_of("default/p") == "unschedulable"
    clock.t += elapsed
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert q.queue_of("default/p") == want


def test_raising_hint_counts_as_queue() -> None:
    def boom(pod: Any, old: Any, new: Any) -> QueueingHint:
        raise ValueError("bad hint")

    clock = Clock()
    q = make_queue(clock, {FIT: [(NODE_ADD, boom)]})
    q.add(make_pod("p").obj())
    qp = q.pop()
    assert qp is not None
    fail(q, qp, FIT)
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.queue_of("default/p") == "backoff"


@pytest.mark.parametrize(
    ("during_flight", "registered", "pending", "want"),
    [
        ("node_add", {FIT: [(NODE_ADD, QUEUE)]}, False, "backoff"),
        ("node_add", {FIT: [(NODE_ADD, SKIP)]}, False, "unschedulable"),
        ("node_add", {FIT: [(NODE_ADD, QUEUE)]}, True, "active"),
        ("none", {FIT: [(NODE_ADD, QUEUE)]}, False, "unschedulable"),
        ("before_pop", {FIT: [(NODE_ADD, QUEUE)]}, False, "unschedulable"),
        ("activate", {FIT: [(NODE_ADD, SKIP)]}, False, "backoff"),
        ("label_update", {FIT: [(POD_LABEL, QUEUE)]}, False, "backoff"),
        ("label_update", {FIT: [(NODE_ADD, QUEUE)]}, False, "unschedulable"),
    ],
)
def test_events_during_the_attempt_are_replayed(
    during_flight: str,
    registered: dict[str, Sequence[tuple[ClusterEvent, Any]]],
    pending: bool,
    want: str,
) -> None:
    """v1.34 in-flight events (TestPriorityQueue_AddUnschedulableIfNotPresent with hints)."""
    clock = Clock()
    q = make_queue(clock, registered)
    pod = make_pod("p").labels(app="a").obj()
    q.add(pod)
    q.add(make_pod("other").priority(1).obj())
    other = q.pop()  # "other" stays in flight the whole time
    assert other is not None and other.pod.name == "other"
    if during_flight == "before_pop":
        q.move_all_to_active_or_backoff(NODE_ADD)  # recorded for "other" only
    qp = q.pop()
    assert qp is not None
    if during_flight == "node_add":
        q.move_all_to_active_or_backoff(NODE_ADD)
    elif during_flight == "activate":
        q.activate([pod])
    elif during_flight == "label_update":
        q.update(pod, make_pod("p").labels(app="b").obj())
    fail(q, qp, FIT, pending=pending)
    assert q.queue_of("default/p") == want
    assert q.in_flight_pods() == ["uid-default-other"]
    if during_flight == "label_update":
        assert q.get("default/p").pod.labels == {"app": "b"}  # type: ignore[union-attr]
    fail(q, other, FIT)
    expected_other = "unschedulable" if during_flight in ("none", "activate") else None
    if expected_other:
        assert q.queue_of("default/other") == expected_other
    assert q.in_flight_pods() == []


def test_event_before_pop_is_not_replayed() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("p").obj())
    q.move_all_to_active_or_backoff(NODE_ADD)  # nothing in flight: not recorded
    qp = q.pop()
    assert qp is not None
    fail(q, qp, FIT)
    assert q.queue_of("default/p") == "unschedulable"


def test_flush_unschedulable_after_five_minutes() -> None:
    """Upstream TestHighPriorityFlushUnschedulablePodsLeftover."""
    clock = Clock()
    q = make_queue(clock)
    for name, prio in [("mid", 50), ("high", 100)]:
        q.add(make_pod(name).priority(prio).obj())
    for qp in (q.pop(), q.pop()):
        assert qp is not None
        fail(q, qp, FIT)
    assert q.pending_pods()["unschedulable"] == 2
    clock.t = T0 + 300
    q.flush_unschedulable_left_over()  # strictly more than 5 minutes is required
    assert q.pending_pods()["unschedulable"] == 2
    assert q.next_wakeup() is not None and T0 + 300 < q.next_wakeup() < T0 + 300.001  # type: ignore[operator]
    clock.t = T0 + 300.5
    q.flush_unschedulable_left_over()
    assert q.pending_pods() == {"active": 2, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert names(q) == ["high", "mid"]
    assert q.incoming_counts[("active", "UnschedulableTimeout")] == 2
    assert q.next_wakeup() is None


def test_gated_pod_waits_until_gates_are_removed() -> None:
    clock = Clock()
    q = make_queue(clock)
    gated = make_pod("g").gates("example.com/gate").obj()
    q.add(gated)
    assert q.pending_pods() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    qp = q.get("default/g")
    assert qp is not None and qp.gated and qp.gating_plugin == GATES
    assert qp.initial_attempt_timestamp is None and q.pop() is None
    q.move_all_to_active_or_backoff(NODE_ADD)  # not an event SchedulingGates registered
    clock.t = T0 + 3600
    q.flush_unschedulable_left_over()  # gated Pods do not time out
    assert q.next_wakeup() is None and q.queue_of("default/g") == "gated"
    q.update(gated, make_pod("g").gates("example.com/gate").labels(x="y").obj())
    assert q.queue_of("default/g") == "gated"
    q.update(gated, make_pod("g").obj())
    assert q.queue_of("default/g") == "active"
    assert qp.initial_attempt_timestamp == T0 + 3600 and not qp.gated
    assert q.incoming_counts[("unschedulable", "UnschedulablePodAdd")] == 1
    assert q.incoming_counts[("active", "UnschedulablePodUpdatePodSchedulingGatesEliminated")] == 1


def test_update_in_active_resorts_and_update_in_pool_uses_hints() -> None:
    clock = Clock()
    q = make_queue(clock, {FIT: [(POD_LABEL, QUEUE)]})
    a, b = make_pod("a").obj(), make_pod("b").obj()
    q.add(a)
    q.add(b)
    q.update(b, make_pod("b").priority(10).obj())
    assert names(q)[0] == "b"
    q.add(make_pod("c").labels(app="x").obj())
    qp = q.pop()
    assert qp is not None
    fail(q, qp, FIT)
    q.update(qp.pod, make_pod("c").labels(app="x").priority(3).obj())  # generic update
    assert q.queue_of("default/c") == "unschedulable"
    q.update(qp.pod, make_pod("c").labels(app="y").obj())
    assert q.queue_of("default/c") == "backoff"


def test_delete_removes_pod_wherever_it_is() -> None:
    clock = Clock()
    q = make_queue(clock)
    for n in ("a", "b", "c", "d"):
        q.add(make_pod(n).obj())
    q.add(make_pod("g").gates("x").obj())
    qa, qb, qc = q.pop(), q.pop(), q.pop()
    assert qa and qb and qc
    q.move_all_to_active_or_backoff(NODE_ADD)
    fail(q, qa, FIT)  # -> backoff
    q.done(qb.pod.uid)
    q.delete(qc.pod)  # in flight: dropped when its attempt ends
    fail(q, qc, FIT)
    q.add(make_pod("b").obj())
    fail_qp = q.pop()
    assert fail_qp is not None
    fail(q, fail_qp, "Other")  # -> pool
    for n in ("a", "b", "d", "g"):
        q.delete(make_pod(n).obj())
    assert q.pending_pods() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert q.pending_pod_infos() == [] and q.in_flight_pods() == [] and q.get("default/c") is None


def test_activate_moves_from_pool_and_backoff() -> None:
    clock = Clock()
    q = make_queue(clock)
    for n in ("a", "b"):
        q.add(make_pod(n).obj())
    qa, qb = q.pop(), q.pop()
    assert qa and qb
    fail(q, qa, FIT)
    fail(q, qb, FIT)
    q.move_all_to_active_or_backoff(events.EVENT_UNSCHEDULABLE_TIMEOUT, None, qb.pod)  # b only
    assert [q.queue_of(k) for k in ("default/a", "default/b")] == ["unschedulable", "backoff"]
    q.activate([qa.pod, qb.pod])
    assert q.pending_pods()["active"] == 2
    assert q.incoming_counts[("active", "ForceActivate")] == 2


def test_requeue_at_once_keeps_attempts_and_first_attempt_time() -> None:
    """A popped Pod sent back through no fault of its own (a parallel binder's conflict)
    is active again at once, with its attempt count and first-attempt time."""
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("a").obj())
    first = q.pop()
    assert first is not None and first.attempts == 1
    clock.t += 5.0
    q.requeue_at_once(first)
    assert q.pending_pods()["active"] == 1 and q.queue_of("default/a") == "active"
    again = q.pop()
    assert again is not None and again.attempts == 2
    assert again.initial_attempt_timestamp == T0


@pytest.mark.parametrize(
    ("target_pod_events", "want"), [(False, "unschedulable"), (True, "backoff")]
)
def test_own_update_is_a_target_pod_event_from_v137(target_pod_events: bool, want: str) -> None:
    """Upstream v1.37 ``PriorityQueue.Update``: a pending Pod's own update raises
    ``TargetPod`` events, which plugins registering ``TargetPod/UpdatePodLabel`` hear;
    before, ``UnschedulablePod`` events (which such a registration does not match)."""
    clock = Clock()
    target_label = ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE_POD_LABEL)
    q = make_queue(clock, {FIT: [(target_label, QUEUE)]}, target_pod_events=target_pod_events)
    q.add(make_pod("c").labels(app="x").obj())
    qp = q.pop()
    assert qp is not None
    fail(q, qp, FIT)
    q.update(qp.pod, make_pod("c").labels(app="y").obj())
    assert q.queue_of("default/c") == want


def test_take_is_a_pop_of_one_pod_so_its_own_updates_stay_in_flight() -> None:
    """A Pod taken out by key (a gang's sibling handed out with the member popped) is in
    flight as a popped one: its own update (the live coordinator's hand-out patch) is recorded
    for its requeue, not a new activeQ entry that would hand it out twice."""
    clock = Clock()
    q = make_queue(clock, {FIT: [(POD_LABEL, QUEUE)]})
    pod = make_pod("sibling").obj()
    q.add(pod)
    taken = q.take("default/sibling")
    assert taken is not None and taken.attempts == 1
    assert q.queue_of("default/sibling") == "in_flight"
    assert q.take("default/sibling") is None  # not queued any more
    q.update(pod, make_pod("sibling").labels(handed="1").obj())
    assert q.pop() is None  # not back in activeQ
    fail(q, taken, FIT)  # the update happened in flight: its hint requeues the failed attempt
    assert q.queue_of("default/sibling") == "backoff"


@pytest.mark.parametrize(("backoff_only", "want"), [(True, "backoff"), (False, "unschedulable")])
def test_a_v136_pod_group_member_is_requeued_after_its_backoff_alone(
    backoff_only: bool, want: str
) -> None:
    """v1.36 with GenericWorkload: a PodGroup member's failed attempt goes back after its
    backoff whatever its rejectors and the events during the attempt (none here); a Pod of
    no group still waits in the pool."""
    clock = Clock()
    member = (lambda pod: pod.scheduling_group is not None) if backoff_only else None
    q = make_queue(clock, backoff_only=member)
    q.add(dataclasses.replace(make_pod("m").obj(), scheduling_group="g"))
    q.add(make_pod("p").obj())
    for _ in range(2):
        qp = q.pop()
        assert qp is not None
        fail(q, qp, FIT)
    assert q.queue_of("default/m") == want
    assert q.queue_of("default/p") == "unschedulable"
