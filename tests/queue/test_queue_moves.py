"""SchedulingQueue: error backoff, assigned-Pod events, and scale (50,000 Pods)."""

from __future__ import annotations

from kubesched.framework.interface import ActionType, ClusterEvent, Resource
from kubesched.testing import make_pod
from tests.queue.support import (
    FIT,
    NODE_ADD,
    QUEUE,
    T0,
    Clock,
    fail,
    make_queue,
    prio_sort,
    quota_gated_queue,
)


def test_errors_back_off_apart_from_rejections() -> None:
    """v1.34: a Pod rejected 3 times then failing with an error backs off 1 s, not 8 s."""
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("p").obj())
    for _ in range(3):
        qp = q.pop()
        assert qp is not None
        fail(q, qp, FIT)
        q.activate([qp.pod])
    qp = q.pop()
    assert qp is not None
    fail(q, qp)
    assert q.queue_of("default/p") == "backoff"
    assert q.next_wakeup() == T0 + 2


def test_assigned_pod_events_use_filter_and_scale_down_reaches_all() -> None:
    scale = ClusterEvent(Resource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN)
    clock = Clock()
    q = make_queue(
        clock,
        {
            "InterPodAffinity": [
                (
                    ClusterEvent(Resource.POD, ActionType.ADD | ActionType.UPDATE_POD_SCALE_DOWN),
                    QUEUE,
                )
            ]
        },
        assigned_pod_filter=lambda qp, pod: qp.pod.name == "x",
    )
    for n in ("x", "y"):
        q.add(make_pod(n).obj())
    for qp in (q.pop(), q.pop()):
        assert qp is not None
        fail(q, qp, "InterPodAffinity")
    clock.t += 20
    bound = make_pod("bound").node("n1").obj()
    q.assigned_pod_added(bound)
    assert [q.queue_of("default/x"), q.queue_of("default/y")] == ["active", "unschedulable"]
    q.assigned_pod_updated(bound, bound, scale)
    assert q.queue_of("default/y") == "active"


def test_fifty_thousand_pods_are_cheap() -> None:
    clock = Clock()
    q = make_queue(clock)
    n = 50_000
    for i in range(n):
        q.add(make_pod(f"p{i}").priority(i % 7).obj())
    seen = 0
    prev = (-(10**9), 0.0)
    while (qp := q.pop()) is not None:
        key = prio_sort(qp)
        assert key >= prev
        prev = key
        fail(q, qp, FIT)
        seen += 1
    assert seen == n and q.pending_pods()["unschedulable"] == n
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.pending_pods()["backoff"] == n
    clock.t += 3
    q.flush_backoff_completed()
    assert q.pending_pods()["active"] == n


def test_virtual_time_loop_never_spins_on_a_pod_that_stays_gated() -> None:
    clock = Clock()
    q = quota_gated_queue(clock)
    q.add(make_pod("p").obj())
    assert q.queue_of("default/p") == "gated"
    qp = q.get("default/p")
    assert qp is not None and qp.message == "quota exhausted"
    wakeups = []
    for _ in range(3):
        t = q.next_wakeup()
        assert t is not None and t > clock.t
        clock.t = t
        q.flush_backoff_completed()
        q.flush_unschedulable_left_over()
        wakeups.append(round(t - T0, 3))
    assert wakeups == [300.0, 330.0, 360.0]  # retried on upstream's 30 s flush period
    assert q.queue_of("default/p") == "gated"


def test_done_accepts_pod_uid_or_key_and_forgets_bound_pods() -> None:
    clock = Clock()
    q = make_queue(clock)
    for n in ("a", "b", "c"):
        q.add(make_pod(n).obj())
    qa, qb, qc = q.pop(), q.pop(), q.pop()
    assert qa and qb and qc
    q.done(qa.pod)
    q.done(qb.pod.uid)
    q.done(qc.pod.key)
    assert q.in_flight_pods() == [] and q.get("default/a") is None
    assert q.queue_of("default/c") is None and q.pending_pod_infos() == []


def test_assigned_pod_updated_without_event_derives_it() -> None:
    label = ClusterEvent(Resource.POD, ActionType.UPDATE_POD_LABEL)
    clock = Clock()
    q = make_queue(clock, {"InterPodAffinity": [(label, QUEUE)]})
    q.add(make_pod("p").obj())
    qp = q.pop()
    assert qp is not None
    fail(q, qp, "InterPodAffinity")
    old = make_pod("bound").node("n1").labels(app="a").obj()
    q.assigned_pod_updated(old, make_pod("bound").node("n1").labels(app="a").priority(5).obj())
    assert q.queue_of("default/p") == "unschedulable"  # generic AssignedPod/Update
    q.assigned_pod_updated(old, make_pod("bound").node("n1").labels(app="b").obj())
    assert q.queue_of("default/p") == "backoff"
    assert q.incoming_counts[("backoff", "AssignedPodUpdatePodLabel")] == 1
