"""The PodGroup scheduling cycle (upstream ``schedule_one_podgroup.go``, v1.37) in a running
scheduler: a gang is placed whole or not at all, with upstream's messages and condition.

Mirrors ``schedule_one_podgroup_test.go``'s cases for the default algorithm: a feasible
group binds every member; a group whose ``minCount`` cannot be met leaves nothing assumed
and fails its placed members with the group's message, the one that fits nowhere with its
own; with GenericWorkload off the same Pods are scheduled one by one.
"""

from __future__ import annotations

from typing import Any

from kubesched.api import objects as api
from kubesched.config import featuregates
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.queue.core import BACKOFF
from kubesched.scheduler import SchedulerOptions
from kubesched.scheduler.core import Scheduler
from kubesched.testing import FakeApi, VirtualClock, make_node, make_pod


def _scheduler(
    version: str, gates: dict[str, bool], clock: VirtualClock | None = None
) -> tuple[Scheduler, FakeApi]:
    """The default profile of ``version`` under ``gates``, on ``clock`` (a test that moves
    time passes its own) and a :class:`FakeApi`."""
    fg = featuregates.with_settings(version, gates)
    cfg = load_config(None, known_plugins=known_plugin_names(), gates=fg)
    fake = FakeApi()
    options = SchedulerOptions(feature_gates=fg)
    return Scheduler(cfg, clock=clock or VirtualClock(), api_client=fake, options=options), fake


def pod_group(
    name: str, min_count: int, priority: int | None = None, version: str = "v1beta1"
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
    }


def member(name: str, group: str, cpu: str = "1") -> api.Pod:
    pod = make_pod(name, "ns").req(cpu=cpu).obj()
    pod.scheduling_group = group
    return pod


def _run(s: Scheduler) -> None:
    for _ in range(100):
        if not s.schedule_one():
            return


def test_a_gang_that_fits_binds_every_member() -> None:
    s, fake = _scheduler("1.37", {"GenericWorkload": True})
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_object(pod_group("g", 3))
    for i in range(3):
        s.on_pod_add(member(f"m{i}", "g"))
    _run(s)
    assert sorted(fake.binds) == ["ns/m0", "ns/m1", "ns/m2"]
    assert s.pod_group_cycle is not None
    assert s.pod_group_cycle.conditions["ns/g"].reason == "Scheduled"
    assert s.queue.scheduling_cycle == 1  # one pop placed the whole group


def test_a_gang_short_of_room_holds_nothing_and_reports_upstreams_messages() -> None:
    s, fake = _scheduler("1.37", {"GenericWorkload": True})
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_object(pod_group("g", 3))
    for i in range(3):
        s.on_pod_add(member(f"m{i}", "g", cpu="2"))
    s.schedule_one()
    assert fake.binds == {}
    assert not s.cluster.pods  # nothing left assumed
    group_msg = (  # with PodGroupPostFilter's outcome: DefaultPreemption finds no victim,
        # UnschedulableAndUnresolvable, which ends the run (DynamicResources' reason dropped)
        "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, "
        "pod group preemption: No preemption victims found for incoming preemptor"
    )
    placed = ("Unschedulable", f"pod group is unschedulable, {group_msg}")
    assert fake.failures["ns/m0"] == placed
    assert fake.failures["ns/m1"] == placed
    reason, msg = fake.failures["ns/m2"]
    assert reason == "Unschedulable" and "Insufficient cpu" in msg
    assert s.pod_group_cycle is not None
    cond = s.pod_group_cycle.conditions["ns/g"]
    assert (cond.status, cond.reason, cond.message) == ("False", "Unschedulable", group_msg)


def test_a_group_that_cannot_fit_is_retried_whole_on_its_own_backoff() -> None:
    """v1.37 requeues the group as one entity (``AddAttemptedPodGroupIfNeeded``): after an
    unschedulable cycle every member waits in backoffQ for the group's backoff (1 s after
    one failure), the one Insufficient cpu rejected too, and the group's next cycle takes
    them all at once."""
    clock = VirtualClock()
    s, _ = _scheduler("1.37", {"GenericWorkload": True}, clock)
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_object(pod_group("g", 3))
    for i in range(3):
        s.on_pod_add(member(f"m{i}", "g", cpu="2"))
    assert s.schedule_one()
    assert [s.queue.queue_of(f"ns/m{i}") for i in range(3)] == ["backoff"] * 3
    assert not s.schedule_one()  # not popped before its backoff ends
    clock.advance(2.0)
    s.queue.flush_backoff_completed()
    assert s.schedule_one()
    assert s.queue.scheduling_cycle == 2  # one cycle each time for the whole group
    assert [s.pod_attempts[f"ns/m{i}"] for i in range(3)] == [2, 2, 2]


def test_a_member_of_another_priority_fails_the_group_with_upstreams_error() -> None:
    s, fake = _scheduler("1.37", {"GenericWorkload": True})
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_object(pod_group("g", 1, priority=0))
    s.on_pod_add(member("m0", "g"))
    other = member("m1", "g")
    other.priority = 5
    s.on_pod_add(other)
    s.schedule_one()
    assert fake.binds == {}
    reason, msg = fake.failures["ns/m0"]
    assert reason == "SchedulerError"
    assert msg.startswith("all pods in a single pod group should have the same priority")


def test_with_generic_workload_off_members_are_scheduled_one_by_one() -> None:
    s, fake = _scheduler("1.37", {})
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    for i in range(3):
        s.on_pod_add(member(f"m{i}", "g", cpu="2"))
    _run(s)
    assert sorted(fake.binds) == ["ns/m0", "ns/m1"]
    assert s.pod_group_cycle is None


def test_v136_tries_every_member_and_reports_each_ones_permit_message() -> None:
    s, fake = _scheduler("1.36", {"GenericWorkload": True, "GangScheduling": True})
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_object(pod_group("g", 3, version="v1alpha2"))
    for i in range(3):
        s.on_pod_add(member(f"m{i}", "g", cpu="2"))
    s.schedule_one()
    assert fake.binds == {}
    assert not s.cluster.pods
    placed = (
        "Unschedulable",
        "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
        "one or more plugins asked to wait and no plugin rejected pod",
    )
    # m2's add completes the quorum: it enters activeQ before the members its add event
    # moves, so it is tried first (upstream orders by first entry into activeQ).
    assert fake.failures["ns/m2"] == placed
    assert fake.failures["ns/m0"] == placed
    reason, msg = fake.failures["ns/m1"]
    assert reason == "Unschedulable" and "Insufficient cpu" in msg
    assert s.pod_group_cycle is not None
    cond = s.pod_group_cycle.conditions["ns/g"]
    assert (cond.type, cond.message) == ("PodGroupScheduled", "pod group is unschedulable")


def test_v136_a_gang_that_fits_binds_every_member() -> None:
    s, fake = _scheduler("1.36", {"GenericWorkload": True, "GangScheduling": True})
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_object(pod_group("g", 2, version="v1alpha2"))
    for i in range(2):
        s.on_pod_add(member(f"m{i}", "g", cpu="2"))
    _run(s)
    assert sorted(fake.binds) == ["ns/m0", "ns/m1"]


def test_a_pod_group_without_priority_has_its_class_or_zero() -> None:
    """v1.37 ``PodGroupPriority``: the admitted ``spec.priority`` (from the PodGroup's
    PriorityClass) or 0, which every member's priority must equal."""
    s, fake = _scheduler("1.37", {"GenericWorkload": True})
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_object(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 7,
        }
    )
    group = pod_group("g", 1)
    group["spec"]["priorityClassName"] = "high"
    s.on_object(group)
    s.on_object(pod_group("z", 1))
    high = member("h0", "g")
    high.priority = 7
    s.on_pod_add(high)
    odd = member("z0", "z")
    odd.priority = 7
    s.on_pod_add(odd)
    _run(s)
    assert fake.binds == {"ns/h0": "n0"}
    assert fake.failures["ns/z0"] == (
        "SchedulerError",
        "all pods in a single pod group should have the same priority as the pod group's "
        "priority, got 7 and 0",
    )


def _v135_workload(s: Scheduler, min_count: int) -> None:
    """The v1alpha1 Workload ``ns/w`` with one gang PodGroup ``g`` of ``min_count``."""
    gang = {"name": "g", "policy": {"gang": {"minCount": min_count}}}
    s.on_object(
        {
            "apiVersion": "scheduling.k8s.io/v1alpha1",
            "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"podGroups": [gang]},
        }
    )


def _member(pod: api.Pod) -> api.Pod:
    """``pod`` made a member of ``ns/w``'s PodGroup ``g`` (v1.35's ``workloadRef``)."""
    pod.workload_ref = api.WorkloadRef("w", "g", "")
    return pod


def test_v135_gang_waits_at_permit_and_binds_whole() -> None:
    """v1.35 has no PodGroup cycle: members go one by one, GangScheduling holds the first at
    Permit until ``minCount`` are assumed, then all bind."""
    s, fake = _scheduler("1.35", {"GenericWorkload": True, "GangScheduling": True})
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    _v135_workload(s, min_count=2)
    for i in range(2):
        pod = make_pod(f"m{i}", "ns").req(cpu="1").obj()
        s.on_pod_add(_member(pod))
    s.schedule_one()
    assert fake.binds == {}  # the first member waits at Permit
    assert len(s.handle.waiting_pods) == 1
    _run(s)
    assert sorted(fake.binds) == ["ns/m0", "ns/m1"]
    assert s.pod_group_cycle is not None and not s.pod_group_cycle.handles(pod)


def _v135_gang_that_cannot_fill(gates: dict[str, bool]) -> tuple[Scheduler, VirtualClock]:
    """A v1.35 gang of two on a node of one CPU: m0 (1 CPU) waits at Permit, m1 (2 CPUs) fits
    nowhere; then the wait times out."""
    s, clock = _v135_gang_waiting(gates)
    clock.advance(300.0)  # the gang's Permit timeout
    _run(s)
    return s, clock


def _v135_gang_waiting(gates: dict[str, bool]) -> tuple[Scheduler, VirtualClock]:
    """:func:`_v135_gang_that_cannot_fill` until m0 waits at Permit and m1 has failed."""
    clock = VirtualClock()
    s, _ = _scheduler("1.35", {"GenericWorkload": True, "GangScheduling": True, **gates}, clock)
    s.on_node_add(make_node("n0").cap(cpu="1", memory="8Gi", pods=10).obj())
    _v135_workload(s, min_count=2)
    for i, cpu in enumerate(("1", "2")):
        pod = make_pod(f"m{i}", "ns").req(cpu=cpu).obj()
        s.on_pod_add(_member(pod))
    _run(s)
    assert len(s.handle.waiting_pods) == 1
    return s, clock


def test_v135_a_member_whose_wait_failed_stays_nominated_to_its_node() -> None:
    """NominatedNodeNameForExpectation: the member patched ``nominatedNodeName`` before
    waiting and its failure does not clear it, so once its update reaches the queue it is
    nominated there.  With SchedulerAsyncAPICalls too: the failure's patch call carries the
    assumed Pod's status and is synced with the informer's copy only when an update of the
    Pod arrives before it runs (upstream v1.35.4 answered ``nominatedNode: node-1`` for four
    timed-out members at seed 22352 case 69, SchedulerAsyncAPICalls on).
    Without NominatedNodeNameForExpectation nothing is nominated."""
    s, _ = _v135_gang_that_cannot_fill({})
    assert not s.handle.waiting_pods
    assert s.queue.nominator.node_of("ns/m0") == "n0"
    s, _ = _v135_gang_that_cannot_fill({"SchedulerAsyncAPICalls": True})
    assert s.queue.nominator.node_of("ns/m0") == "n0"
    s, _ = _v135_gang_that_cannot_fill({"NominatedNodeNameForExpectation": False})
    assert s.queue.nominator.node_of("ns/m0") in (None, "")


def test_v135_async_a_failed_waiters_update_is_heard_after_the_pods_backing_off() -> None:
    """With SchedulerAsyncAPICalls the failed waiter's update comes after its patch's round
    trip: all at once only when no other Pod's cycle can begin first, which with activeQ
    empty still means backoffQ empty too (a pop takes from backoffQ).  ``p`` (2 CPUs, fits
    nowhere) failed half a second before the timeout; the timeout's move sends m1 to
    activeQ and ``p``, still backing off, to backoffQ.  m0's nomination comes back after
    ``p``'s cycle, not once m1's has emptied activeQ (v1.35 seed 23351 case 87)."""
    s, clock = _v135_gang_waiting({"SchedulerAsyncAPICalls": True})
    clock.advance(299.5)
    s.on_pod_add(make_pod("p", "ns").req(cpu="2").obj())
    _run(s)
    clock.advance(0.5)  # the gang's Permit timeout
    assert s.schedule_one()  # m0 rejected; m1 tried and failed again
    assert s.pod_attempts["ns/m1"] == 2 and s.pod_attempts["ns/p"] == 1
    assert s.queue.pending_pods()[BACKOFF] == 1
    assert s.queue.nominator.node_of("ns/m0") in (None, "")
    assert s.schedule_one()  # p, popped from backoffQ
    assert s.pod_attempts["ns/p"] == 2
    assert s.queue.nominator.node_of("ns/m0") == "n0"


class GroupStatusApi(FakeApi):
    """A FakeApi that can write a PodGroup's condition (as live mode's client)."""

    def __init__(self) -> None:
        super().__init__()
        self.group_conditions: list[tuple[str, dict[str, Any]]] = []

    def pod_group_condition(self, pod_group: dict[str, Any], condition: dict[str, Any]) -> None:
        self.group_conditions.append((pod_group["metadata"]["name"], condition))


def _short_gang(existing: dict[str, Any] | None) -> GroupStatusApi:
    """A gang of 3 short of room (2 fit) on a PodGroup object at generation 2 that carries
    ``existing`` as its condition; one cycle."""
    fg = featuregates.with_settings("1.37", {"GenericWorkload": True})
    cfg = load_config(None, known_plugins=known_plugin_names(), gates=fg)
    fake = GroupStatusApi()
    s = Scheduler(
        cfg, clock=VirtualClock(), api_client=fake, options=SchedulerOptions(feature_gates=fg)
    )
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    group = pod_group("g", 3)
    group["metadata"]["generation"] = 2
    if existing is not None:
        group["status"] = {"conditions": [existing]}
    s.on_object(group)
    for i in range(3):
        s.on_pod_add(member(f"m{i}", "g", cpu="2"))
    s.schedule_one()
    assert fake.binds == {}
    return fake


GROUP_MESSAGE = (
    "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, "
    "pod group preemption: No preemption victims found for incoming preemptor"
)


def test_the_group_condition_is_written_on_the_object_as_upstream() -> None:
    fake = _short_gang(None)
    [(name, cond)] = fake.group_conditions
    assert name == "g"
    assert {k: v for k, v in cond.items() if k != "lastTransitionTime"} == {
        "type": "PodGroupInitiallyScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": GROUP_MESSAGE,
        "observedGeneration": 2,
    }
    assert cond["lastTransitionTime"]


def test_the_group_condition_is_not_written_again_nor_back_from_true() -> None:
    same = {
        "type": "PodGroupInitiallyScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": GROUP_MESSAGE,
        "observedGeneration": 2,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    assert _short_gang(same).group_conditions == []  # SetStatusCondition: no change
    scheduled = {**same, "status": "True", "reason": "Scheduled", "message": ""}
    assert _short_gang(scheduled).group_conditions == []  # never back from True
    older = {**same, "observedGeneration": 1}
    [(_, cond)] = _short_gang(older).group_conditions  # a new generation: written,
    assert cond["lastTransitionTime"] == "2026-01-01T00:00:00Z"  # its status unchanged


def _scheduler_without(version: str, gates: dict[str, bool], plugin: str) -> Scheduler:
    fg = featuregates.with_settings(version, gates)
    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"multiPoint": {"disabled": [{"name": plugin}]}},
            }
        ],
    }
    cfg = load_config(raw, known_plugins=known_plugin_names(), gates=fg)
    return Scheduler(
        cfg, clock=VirtualClock(), api_client=FakeApi(), options=SchedulerOptions(feature_gates=fg)
    )


def test_members_before_their_pod_group_are_held_unseen_then_placed_in_one_cycle() -> None:
    """v1.37 ``incompletePodGroupPods``: members arriving before their PodGroup are in no
    queue (``pending_pods{queue="incomplete"}``) and never attempted; the object's add
    queues them as one entity, placed in one cycle."""
    s, fake = _scheduler("1.37", {"GenericWorkload": True})
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    for i in range(2):
        s.on_pod_add(member(f"m{i}", "g"))
    assert s.queue.queue_of("ns/m0") == "incomplete"
    assert s.queue.pending_pods()["incomplete"] == 2
    _run(s)
    assert not fake.binds and s.queue.scheduling_cycle == 0
    s.on_object(pod_group("g", 2))
    _run(s)
    assert sorted(fake.binds) == ["ns/m0", "ns/m1"]
    assert s.queue.scheduling_cycle == 1


def test_without_gang_scheduling_a_member_of_a_missing_pod_group_is_never_attempted() -> None:
    """Upstream holds the member whatever the profile: no GangScheduling PreEnqueue is
    needed to keep it from a cycle that would fail (``podgroups ... not found``)."""
    s = _scheduler_without("1.37", {"GenericWorkload": True}, "GangScheduling")
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_pod_add(member("m0", "g"))
    _run(s)
    assert s.queue.scheduling_cycle == 0
    assert s.queue.queue_of("ns/m0") == "incomplete"


def test_v136_writes_the_pod_group_metrics_too() -> None:
    """v1.36.3's ``submitPodGroupAlgorithmResult`` observes ``podgroup_schedule_attempts_total``
    and the latencies as v1.37.2 does."""
    s, _ = _scheduler("1.36", {"GenericWorkload": True, "GangScheduling": True})
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_object(pod_group("g", 2, version="v1alpha2"))
    for i in range(2):
        s.on_pod_add(member(f"m{i}", "g", cpu="2"))
    _run(s)
    got = s.metrics.samples()
    profile = ("profile", "default-scheduler")
    attempts = "scheduler_podgroup_schedule_attempts_total"
    assert got[(attempts, (profile, ("result", "scheduled")))] == 1
    assert got[("scheduler_podgroup_scheduling_algorithm_duration_seconds_count", ())] == 1


def test_v137_queue_metrics_show_the_held_members_and_the_entities() -> None:
    """``pending_pods{queue="incomplete"}`` for members held without their PodGroup, then
    ``queued_entities{type="podgroup"}`` once the object makes them one entity (gated:
    GangScheduling waits for ``minCount`` members)."""
    s, _ = _scheduler("1.37", {"GenericWorkload": True})
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_pod_add(member("m0", "g"))
    s.on_pod_add(make_pod("lone", "ns").req(cpu="8").obj())  # fits nowhere: unschedulable
    _run(s)
    s.sync_metrics()
    got = s.metrics.samples()
    assert got[("scheduler_pending_pods", (("queue", "incomplete"),))] == 1
    assert got[("scheduler_pending_pods", (("queue", "pending"),))] == 0
    entities = "scheduler_queued_entities"
    assert got[(entities, (("queue", "unschedulable"), ("type", "pod")))] == 1
    s.on_object(pod_group("g", 2))
    s.sync_metrics()
    got = s.metrics.samples()
    assert got[("scheduler_pending_pods", (("queue", "incomplete"),))] == 0
    assert got[(entities, (("queue", "gated"), ("type", "podgroup")))] == 1


def _v135_waiters_time_out_together(waiters: int) -> tuple[Scheduler, FakeApi]:
    """Without SchedulerAsyncAPICalls: ``waiters`` members wait on n0 (one CPU each, n0 full)
    while one more fits nowhere; p and q (1 CPU each) fail before the gang's Permit timeout,
    which rejects the waiters at once and moves p and q."""
    clock = VirtualClock()
    s, fake = _scheduler("1.35", {"GenericWorkload": True, "GangScheduling": True}, clock)
    s.on_node_add(make_node("n0").cap(cpu=str(waiters), memory="8Gi", pods=10).obj())
    _v135_workload(s, min_count=waiters + 1)
    for i in range(waiters + 1):  # the last fits no node (no Pod's deletion moves it)
        builder = make_pod(f"m{i}", "ns").req(cpu="1")
        pod = (builder.node_selector(zone="none") if i == waiters else builder).obj()
        s.on_pod_add(_member(pod))
    _run(s)
    assert len(s.handle.waiting_pods) == waiters
    for name in ("p", "q"):
        s.on_pod_add(make_pod(name, "ns").req(cpu="1").obj())
    _run(s)
    assert s.pod_attempts["ns/p"] == 1 and s.pod_attempts["ns/q"] == 1
    clock.advance(300.0)  # the gang's Permit timeout: the waiters rejected at once
    _run(s)
    for i in range(waiters):
        assert s.queue.nominator.node_of(f"ns/m{i}") == "n0"
    return s, fake


def test_v135_waiters_rejected_together_are_heard_after_the_second_moved_pods_cycle() -> None:
    """Without SchedulerAsyncAPICalls a failed waiter's update (its nomination back) is heard
    during the first moved Pod's cycle when it failed alone (v1.35 seed 21352 case 134), but
    after the second when three or more waiters were rejected at once, each failure handler
    patching the API server (v1.35 seed 24352 case 126, seed 24354 case 140: three members
    timed out together, the second moved Pod's Filter still finding their node free): p
    binds on n0 first, q too in the second cycle, before the nominations are heard."""
    _, fake = _v135_waiters_time_out_together(3)
    assert {fake.binds.get("ns/p"), fake.binds.get("ns/q")} == {"n0"}


def test_v135_two_waiters_rejected_together_are_heard_after_the_first_moved_pods_cycle() -> None:
    """Two waiters rejected at once are heard as one alone is, during the first moved Pod's
    cycle (v1.35 seed 24356 case 33: ``group-2-0`` and ``group-2-1`` time out together on
    node-0; the first moved Pod, ``group-1-0``, binds there, the second, ``group-1-1``,
    finds their nominations and is Unschedulable, upstream 7 of 7 asks): p binds on n0, q
    does not."""
    _, fake = _v135_waiters_time_out_together(2)
    assert [fake.binds.get("ns/p"), fake.binds.get("ns/q")] == ["n0", None]


def test_v135_a_failed_waiter_assumed_again_is_not_nominated_by_its_late_update() -> None:
    """The update of a timed-out member (its ``nominatedNodeName`` back, heard a cycle or two
    later) is dropped when the member has been tried again and is assumed by then, waiting
    at Permit: upstream's ``updatePodInSchedulingQueue`` ignores the updates of assumed
    Pods (``IsAssumedPod``).  Kept, the nomination counted the member twice on its node
    (v1.35 seed 24354 case 122: ``group-1-2``, waiting on node-1 in the gang's second round,
    still held node-3 from the first, so ``group-2-1`` went to node-1; upstream node-3).
    m0 and m1 wait on n0 (2 CPUs), m2 is short of room; they time out together, the move
    sends m2 to n0, whose Permit activates m0, which waits on n0 again."""
    clock = VirtualClock()
    gates = {"GenericWorkload": True, "GangScheduling": True, "SchedulerAsyncAPICalls": True}
    s, _ = _scheduler("1.35", gates, clock)
    s.on_node_add(make_node("n0").cap(cpu="2", memory="8Gi", pods=10).obj())
    _v135_workload(s, min_count=3)
    for i in range(3):
        pod = make_pod(f"m{i}", "ns").req(cpu="1").obj()
        s.on_pod_add(_member(pod))
    _run(s)
    assert len(s.handle.waiting_pods) == 2 and s.pod_attempts["ns/m2"] == 1
    clock.advance(300.0)  # the gang's Permit timeout: m0 and m1 rejected at once
    _run(s)
    waiting = sorted(wp.pod.key for wp in s.handle.waiting_pods.all())
    assert waiting == ["ns/m0", "ns/m2"]
    assert s.queue.nominator.node_of("ns/m0") in (None, "")


def test_v135_a_permit_deadline_reached_cycle_by_cycle_ends_the_wait_then() -> None:
    """The simulator's clock adds each cycle's seconds as floats: a gang that began to wait
    at 0.003 s has its deadline at 300.003 s, which a clock at 300.001 s reaches after four
    cycles of 0.5 ms as 300.00299999999993.  Compared in whole nanoseconds (as Go's times
    are), the wait ends in that cycle, not one later (v1.35 seed 24354 case 140)."""
    clock = VirtualClock(0.003)
    s, _ = _scheduler("1.35", {"GenericWorkload": True, "GangScheduling": True}, clock)
    s.on_node_add(make_node("n0").cap(cpu="1", memory="8Gi", pods=10).obj())
    _v135_workload(s, min_count=2)
    pod = make_pod("m0", "ns").req(cpu="1").obj()
    s.on_pod_add(_member(pod))
    pod = make_pod("m1", "ns").req(cpu="1").node_selector(zone="none").obj()
    s.on_pod_add(_member(pod))
    _run(s)
    assert len(s.handle.waiting_pods) == 1
    clock.now = 300.001
    for _ in range(4):
        clock.advance(0.0005)
    assert clock.now < 300.003
    s.expire_waiting_pods()
    assert not s.handle.waiting_pods
    assert s.failures["ns/m0"][1].endswith("after waiting 5m0s at plugin GangScheduling.")


def test_v135_async_a_lone_waiters_update_comes_after_the_burst_of_moved_pods() -> None:
    """With SchedulerAsyncAPICalls a Permit waiter rejected alone is heard (its
    ``nominatedNodeName`` back) only after :data:`ASYNC_LONE_PATCH_CYCLES` cycles or once the
    queue is idle: the Pods its failure moves are retried in quick cycles while the patch
    makes its round trip (v1.35 seed 23351 case 202: all twelve retries ran before the
    update, 6 of 6 asks).  m0 waits on n0 (1 CPU), m1 fits nowhere; eight Pods too big for
    n0 and then q (1 CPU) failed before the timeout; after it q is the ninth Pod retried and
    takes n0, m0's nomination not heard yet (six cycles, the count before, heard it first)."""
    clock = VirtualClock()
    gates = {"GenericWorkload": True, "GangScheduling": True, "SchedulerAsyncAPICalls": True}
    s, fake = _scheduler("1.35", gates, clock)
    s.on_node_add(make_node("n0").cap(cpu="1", memory="8Gi", pods=20).obj())
    _v135_workload(s, min_count=2)
    s.on_pod_add(_member(make_pod("m0", "ns").req(cpu="1").obj()))
    s.on_pod_add(_member(make_pod("m1", "ns").req(cpu="1").node_selector(zone="none").obj()))
    _run(s)
    assert len(s.handle.waiting_pods) == 1
    for i in range(8):
        clock.advance(0.001)
        s.on_pod_add(make_pod(f"big{i}", "ns").req(cpu="2").obj())
    clock.advance(0.001)
    s.on_pod_add(make_pod("q", "ns").req(cpu="1").obj())
    _run(s)
    assert s.pod_attempts["ns/q"] == 1 and not fake.binds
    clock.advance(300.0)  # the gang's Permit timeout: m0 rejected alone
    _run(s)
    assert fake.binds.get("ns/q") == "n0"
    assert s.pod_attempts["ns/q"] == 2
