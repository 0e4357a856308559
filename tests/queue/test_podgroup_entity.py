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


class Observed:
    """Which PodGroups the queue has observed (``workloadForest``), for ``entity_of``."""

    def __init__(self) -> None:
        self.groups: set[str] = set()

    def entity_of(self, pod: api.Pod) -> tuple[str, int] | None:
        key = self.member_of(pod)
        return (key, GROUP_PRIORITY) if key in self.groups else None

    @staticmethod
    def member_of(pod: api.Pod) -> str | None:
        return None if pod.scheduling_group is None else f"default/{pod.scheduling_group}"


def holding_queue(clock: Clock, seen: Observed) -> SchedulingQueue:
    return make_queue(clock, entity_of=seen.entity_of, member_of=seen.member_of, group_stores=True)


def test_members_wait_unseen_until_their_pod_group_and_keep_their_arrival_time() -> None:
    """Upstream ``incompletePodGroupPods``: a member whose PodGroup is not observed is in
    no queue (no PreEnqueue, no pool), counted under ``incomplete``; the object's add
    makes the entity of every held member with the first one's timestamp, so the group
    pops ahead of an equal Pod that came after its members but before its object."""
    clock = Clock()
    seen = Observed()
    q = holding_queue(clock, seen)
    q.add(member("m0"))
    clock.t += 1
    q.add(member("m1"))
    assert q.queue_of("default/m0") == q.queue_of("default/m1") == "incomplete"
    pending = q.pending_pods()
    assert pending["incomplete"] == 2 and pending["gated"] == 0 and pending["pending"] == 0
    assert q.incoming_counts == {}  # never entered a queue
    clock.t += 1
    q.add(make_pod("later").priority(GROUP_PRIORITY).obj())
    assert q.pop() is not None and q.pop() is None  # "later" only; the members unseen
    q.add(make_pod("after").priority(GROUP_PRIORITY).obj())
    seen.groups.add(GROUP)
    q.pod_group_added(GROUP)
    assert q.pending_pods()["incomplete"] == 0 and q.pending_pods()["active"] == 3
    before_v137 = make_queue(Clock(), entity_of=seen.entity_of, member_of=seen.member_of)
    assert set(before_v137.pending_pods()) == {"active", "backoff", "unschedulable", "gated"}
    # two Pods, then the entity entering with one member and again with two (each move
    # counts the entity's size, as upstream's recordIncomingEntitiesMetrics)
    assert q.incoming_counts == {("active", "UnschedulablePodAdd"): 5}
    assert pop_group(q) == ["m0", "m1"]
    rest = q.pop()
    assert rest is not None and rest.pod.name == "after"


def test_a_deleted_pod_group_holds_its_queued_members_again() -> None:
    """Upstream ``DeletePodGroup``: the queued entity leaves its queue and its members are
    held; while the group is in flight, its members waiting aside are held and the
    cycle's failed members follow on their requeue."""
    clock = Clock()
    seen = Observed()
    seen.groups.add(GROUP)
    q = holding_queue(clock, seen)
    q.add(member("m0"))
    q.add(member("m1"))
    seen.groups.clear()
    q.pod_group_deleted(GROUP)
    assert q.pending_pods()["incomplete"] == 2 and q.pending_pods()["active"] == 0
    assert q.pop() is None
    seen.groups.add(GROUP)
    q.pod_group_added(GROUP)
    assert pop_group(q) == ["m0", "m1"]
    q.add(member("m2"))
    assert q.pending_pods()["pending"] == 1  # waits aside for its group in flight
    seen.groups.clear()
    q.pod_group_deleted(GROUP)
    assert q.pending_pods()["pending"] == 0 and q.queue_of("default/m2") == "incomplete"
    for name in ("m0", "m1"):
        qp = q.get(f"default/{name}")
        assert qp is not None
        fail(q, qp, FIT)
        assert q.queue_of(f"default/{name}") == "incomplete"
    assert q.add_attempted_pod_group(GROUP, "rejected") is None
    assert q.pending_pods()["incomplete"] == 3 and q.pop() is None
    q.delete(member("m2"))
    assert q.pending_pods()["incomplete"] == 2
