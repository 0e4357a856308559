"""v1.37's PodGroup as one queue entity (:mod:`kubesched.queue.podgroups`), after upstream
v1.37.2's ``scheduling_queue.go`` (``addPodGroupMember``, ``AddAttemptedPodGroupIfNeeded``,
``isEntityWorthRequeuing``) and ``backoff_queue.go`` (``calculateBackoffDuration``)."""

from __future__ import annotations

import dataclasses

from kubesched.api import objects as api
from kubesched.queue.backoff import backoff_duration
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.testing import make_pod
from tests.queue.support import FIT, T0, Clock, fail, make_queue

GROUP = "default/g"
GROUP_PRIORITY = 100


def entity_of(pod: api.Pod) -> tuple[str, int] | None:
    """Members of PodGroup ``g`` (observed, priority 100) are one entity."""
    return (GROUP, GROUP_PRIORITY) if pod.scheduling_group == "g" else None


def member(name: str, *gates: str) -> api.Pod:
    return dataclasses.replace(make_pod(name).gates(*gates).obj(), scheduling_group="g")


def group_queue(clock: Clock, members: int) -> SchedulingQueue:
    q = make_queue(clock, entity_of=entity_of)
    for i in range(members):
        q.add(member(f"m{i}"))
        clock.t += 0.001
    return q


def pop_group(q: SchedulingQueue) -> list[str]:
    """Pop the group's entity: its members' names."""
    first = q.pop()
    assert first is not None
    members = q.group_members(first)
    assert members is not None and first in members
    return [m.pod.name for m in members]


def test_members_are_one_entry_popped_whole_at_the_pod_groups_priority() -> None:
    clock = Clock()
    q = make_queue(clock, entity_of=entity_of)
    q.add(make_pod("alone").priority(50).obj())
    for i in range(3):
        q.add(member(f"m{i}"))  # the members' own priority is 0; the PodGroup's is 100
    assert q.pending_pods()["active"] == 4
    assert pop_group(q) == ["m0", "m1", "m2"]
    assert q.scheduling_cycle == 1  # one cycle for the whole group
    for i in range(3):
        qp = q.get(f"default/m{i}")
        assert qp is not None and qp.attempts == 1
    alone = q.pop()
    assert alone is not None and alone.pod.name == "alone" and q.group_members(alone) is None


def test_the_group_backs_off_as_one_with_the_maximum_times_the_root_of_its_size() -> None:
    """Four members: 1, 2, 4, 8, 16, then 20 s (10 s * sqrt(4)) for ever; and never popped
    before its backoff ends (it names no rejector: the error heap), although activeQ is
    empty and KEP-5142 would pop a rejected Pod at once."""
    clock = Clock(T0 + 0.25)
    q = group_queue(clock, 4)
    for want in [1, 2, 4, 8, 16, 20, 20]:
        names = pop_group(q)
        assert len(names) == 4
        failed_at = clock.t
        for name in names:
            qp = q.get(f"default/{name}")
            assert qp is not None
            fail(q, qp, FIT)
            assert q.queue_of(f"default/{name}") == "in_flight"  # waits for its group
        assert q.add_attempted_pod_group(GROUP, "rejected") == "backoff"
        assert q.pending_pods()["backoff"] == 4
        assert q.pop() is None
        expiry_window = int(failed_at + want)
        clock.t = expiry_window + 0.999
        q.flush_backoff_completed()
        assert q.queue_of("default/m0") == "backoff"
        clock.t = expiry_window + 1
        q.flush_backoff_completed()
        assert q.queue_of("default/m0") == "active"
    assert backoff_duration(9, 1.0, 10.0, 4) == 20.0
    assert backoff_duration(9, 1.0, 10.0, 3) == 17.320508075


def test_a_member_arriving_in_flight_waits_and_joins_at_the_requeue() -> None:
    clock = Clock()
    q = group_queue(clock, 2)
    assert pop_group(q) == ["m0", "m1"]
    q.add(member("m2"))
    assert q.queue_of("default/m2") == "in_flight"  # pendingPodGroupPods
    assert q.pop() is None
    q.done("default/m0")  # m0 was placed; m1 failed in the cycle
    m1 = q.get("default/m1")
    assert m1 is not None
    fail(q, m1, FIT)
    assert q.add_attempted_pod_group(GROUP, "success") == "active"  # no backoff
    assert sorted(pop_group(q)) == ["m1", "m2"]


def test_a_feasible_cycle_keeps_the_groups_place_only_when_a_member_failed() -> None:
    """After a feasible cycle the group goes to activeQ at once; with a member that failed
    in it, with its old timestamp (ahead of an equal Pod that came later), otherwise with a
    new one (behind it)."""
    for failed in (True, False):
        clock = Clock()
        q = group_queue(clock, 2)
        assert pop_group(q) == ["m0", "m1"]
        clock.t += 1
        q.add(make_pod("later").priority(GROUP_PRIORITY).obj())
        clock.t += 1
        q.done("default/m0")
        m1 = q.get("default/m1")
        assert m1 is not None
        if failed:
            fail(q, m1, FIT)
        else:  # m1 placed too; a new member came meanwhile
            q.done("default/m1")
            q.add(member("m2"))
        assert q.add_attempted_pod_group(GROUP, "success") == "active"
        first = q.pop()
        assert first is not None
        if failed:
            assert q.group_members(first) is not None  # the group, ahead of "later"
        else:
            assert first.pod.name == "later"


def test_an_event_moves_the_whole_group_when_one_member_is_worth_it() -> None:
    """One gated member gates the entity (every member checked at PreEnqueue); lifting its
    gate is judged for the entity and moves every member."""
    clock = Clock()
    q = make_queue(clock, entity_of=entity_of)
    q.add(member("m0"))
    gated = member("m1", "wait")
    q.add(gated)
    assert q.queue_of("default/m0") == q.queue_of("default/m1") == "gated"
    assert q.pending_pods()["gated"] == 2
    assert q.pop() is None
    q.update(gated, dataclasses.replace(gated, scheduling_gates=()))
    assert q.pending_pods()["active"] == 2
    assert sorted(pop_group(q)) == ["m0", "m1"]


def test_a_deleted_member_leaves_the_entity_and_the_last_one_ends_it() -> None:
    clock = Clock()
    q = group_queue(clock, 2)
    q.delete(member("m0"))
    assert q.pending_pods()["active"] == 1
    q.delete(member("m1"))
    assert q.pending_pods()["active"] == 0 and q.pop() is None
