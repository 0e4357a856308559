"""GangScheduling on its own (upstream ``gangscheduling_test.go`` of v1.35.4 and v1.37.2):
PreEnqueue's holds and messages, Permit's quorum and timeout, PlacementFeasible's verdicts
and the queueing hints, over a PodGroupManager fed as the scheduler feeds it."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.config import featuregates
from kubesched.framework import interface as fw
from kubesched.plugins import gangscheduling
from kubesched.plugins.gangscheduling.plugin import (
    PERMIT_TIMEOUT_SECONDS,
    WAITING_FOR_MIN_COUNT,
    GangScheduling,
)
from kubesched.testing import make_cluster, make_pod


def _plugin(version: str = "1.37", now: list[float] | None = None) -> GangScheduling:
    gates = featuregates.with_settings(version, {"GenericWorkload": True})
    clock = (lambda: now[0]) if now is not None else None
    handle = fw.Handle(make_cluster([]), feature_gates=gates, clock=clock)
    return gangscheduling.new(None, handle)


def _group(name: str, min_count: int | None) -> dict[str, Any]:
    policy: dict[str, Any] = (
        {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    )
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"schedulingPolicy": policy},
    }


def _member(name: str, group: str = "g") -> api.Pod:
    pod = make_pod(name, "ns").obj()
    pod.scheduling_group = group
    return pod


def test_pre_enqueue_waits_for_the_pod_group_then_for_min_count() -> None:
    pl = _plugin()
    m = pl.manager
    p0 = _member("p0")
    m.on_pod_add(p0)
    status = pl.pre_enqueue(p0)
    assert status.code == fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == 'waiting for pods\'s pod group "g" to appear in scheduling queue'
    m.on_object(_group("g", 2), False)
    assert pl.pre_enqueue(p0).message() == WAITING_FOR_MIN_COUNT
    m.on_pod_add(_member("p1"))
    assert pl.pre_enqueue(p0).is_success()


def test_pre_enqueue_lets_a_basic_group_and_a_lone_pod_through() -> None:
    pl = _plugin()
    pl.manager.on_object(_group("b", None), False)
    p = _member("p", "b")
    pl.manager.on_pod_add(p)
    assert pl.pre_enqueue(p).is_success()
    assert pl.pre_enqueue(make_pod("lone", "ns").obj()).is_success()


def test_permit_waits_for_the_quorum_then_allows_the_waiting_members() -> None:
    pl = _plugin()
    m = pl.manager
    m.on_object(_group("g", 2), False)
    p0, p1, p2 = _member("p0"), _member("p1"), _member("p2")
    for p in (p0, p1, p2):
        m.on_pod_add(p)
    m.groups["ns/g"].assumed.add(p0.key)
    state = fw.CycleState()
    status, wait = pl.permit(state, p0, "n")
    assert status.code == fw.Code.WAIT
    assert status.message() == "waiting for minCount pods from a gang to be scheduled"
    assert wait == PERMIT_TIMEOUT_SECONDS
    assert sorted(state[fw.PODS_TO_ACTIVATE_KEY]) == ["ns/p1", "ns/p2"]
    wp = fw.WaitingPod(p0, {pl.name: 300.0})
    pl.handle.waiting_pods.add(wp)
    m.groups["ns/g"].assumed.add(p1.key)
    status, _ = pl.permit(fw.CycleState(), p1, "n")
    assert status.is_success()
    assert wp.status is not None and wp.status.is_success()


def test_v135_permit_keeps_one_deadline_per_group() -> None:
    now = [100.0]
    pl = _plugin("1.35", now)
    m = pl.manager
    m.on_object(
        {
            "apiVersion": "scheduling.k8s.io/v1alpha1",
            "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"podGroups": [{"name": "g", "policy": {"gang": {"minCount": 3}}}]},
        },
        False,
    )
    pods = []
    for name in ("p0", "p1", "p2"):
        pod = make_pod(name, "ns").obj()
        pod.workload_ref = api.WorkloadRef("w", "g", "")
        m.on_pod_add(pod)
        pods.append(pod)
    status, wait = pl.permit(fw.CycleState(), pods[0], "n")
    assert status.message() == "waiting for minCount pods from a gang to be waiting on permit"
    assert wait == PERMIT_TIMEOUT_SECONDS
    now[0] = 160.0
    _, wait = pl.permit(fw.CycleState(), pods[1], "n")
    assert wait == PERMIT_TIMEOUT_SECONDS - 60.0
    # A member reaching Permit when the deadline is due (the members' timers fired at this
    # instant of the virtual clock; upstream's wall clock is past it by then) starts a new
    # wait of its own, not one of 0 s.
    now[0] = 100.0 + PERMIT_TIMEOUT_SECONDS
    _, wait = pl.permit(fw.CycleState(), pods[2], "n")
    assert wait == PERMIT_TIMEOUT_SECONDS
    missing = make_pod("x", "ns").obj()
    missing.workload_ref = api.WorkloadRef("w", "other", "")
    assert (
        pl.pre_enqueue(missing).message() == 'pod group "other" doesn\'t exist for a workload "w"'
    )


@pytest.mark.parametrize(
    ("min_count", "scheduled", "remaining", "code", "message"),
    [
        (
            3,
            1,
            1,
            fw.Code.UNSCHEDULABLE,
            "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining",
        ),
        (3, 1, 2, fw.Code.WAIT, "minCount (3) is not yet satisfied: 1 scheduled, 2 remaining"),
        (3, 3, 0, fw.Code.SUCCESS, ""),
    ],
)
def test_placement_feasible(
    min_count: int, scheduled: int, remaining: int, code: fw.Code, message: str
) -> None:
    status = _plugin().placement_feasible(min_count, scheduled, remaining)
    assert (status.code, status.message()) == (code, message)


def test_hints_queue_only_the_same_group() -> None:
    pl = _plugin()
    events = pl.events_to_register()
    resources = [(e.event.resource, e.event.action) for e in events]
    assert (fw.Resource.UNSCHEDULED_POD, fw.ActionType.ADD) in resources
    assert (fw.Resource.ASSIGNED_POD, fw.ActionType.ADD) in resources
    hint = events[0].hint
    assert hint is not None
    assert hint(_member("a"), None, _member("b")) == fw.QueueingHint.QUEUE
    assert hint(_member("a"), None, _member("b", "h")) == fw.QueueingHint.QUEUE_SKIP
    group_hint = events[2].hint
    assert group_hint is not None
    assert group_hint(_member("a"), None, _group("g", 1)) == fw.QueueingHint.QUEUE
    assert group_hint(_member("a"), None, _group("h", 1)) == fw.QueueingHint.QUEUE_SKIP


@pytest.mark.parametrize(
    ("old", "new", "group", "want"),
    [
        (3, 2, "g", fw.QueueingHint.QUEUE),  # minCount lowered
        (2, 2, "g", fw.QueueingHint.QUEUE_SKIP),  # kept (a label changed)
        (2, 3, "g", fw.QueueingHint.QUEUE_SKIP),  # raised
        (None, 2, "g", fw.QueueingHint.QUEUE_SKIP),  # basic to gang
        (2, None, "g", fw.QueueingHint.QUEUE_SKIP),  # gang to basic
        (3, 2, "h", fw.QueueingHint.QUEUE_SKIP),  # another group's
    ],
)
def test_v137_pod_group_update_queues_only_a_lowered_min_count(
    old: int | None, new: int | None, group: str, want: fw.QueueingHint
) -> None:
    """v1.37 registers PodGroup Update apart from Add (``isSchedulableAfterPodGroupUpdated``):
    only the member's own group, gang before and after, with ``minCount`` lowered, queues."""
    registered = [
        e
        for e in _plugin().events_to_register()
        if e.event.resource == fw.Resource.POD_GROUP and e.event.action == fw.ActionType.UPDATE
    ]
    assert len(registered) == 1 and registered[0].hint is not None
    assert registered[0].hint(_member("a"), _group(group, old), _group(group, new)) == want


def test_workload_api_pod_group_events_carry_upstreams_labels() -> None:
    """A scheduling.k8s.io PodGroup's events are labelled as upstream's resource
    (``scheduling.k8s.io/PodGroupAdd``...), scheduler-plugins' PodGroup's as before."""
    from kubesched.framework.events import object_event
    from kubesched.queue.events import event_label

    def label(deleted: bool, existed: bool, workload_api: bool) -> str:
        event = object_event("PodGroup", deleted, existed, workload_api=workload_api)
        assert event is not None
        return event_label(event, since_v137=True)

    assert label(False, False, True) == "scheduling.k8s.io/PodGroupAdd"
    assert label(False, True, True) == "scheduling.k8s.io/PodGroupUpdate"
    assert label(True, True, True) == "scheduling.k8s.io/PodGroupDelete"
    assert label(True, True, False) == "PodGroupDelete"


def test_v135_workload_events_carry_upstreams_labels() -> None:
    """v1.35's Workload events are labelled as upstream's resource ``scheduling.k8s.io/Workload``
    (``scheduling.k8s.io/WorkloadAdd``...), and GangScheduling's registered Workload Add is that
    resource's."""
    from kubesched.framework.events import object_event
    from kubesched.queue.events import event_label

    def label(deleted: bool, existed: bool) -> str:
        event = object_event("Workload", deleted, existed, workload_api=True)
        assert event is not None
        return event_label(event)

    assert label(False, False) == "scheduling.k8s.io/WorkloadAdd"
    assert label(False, True) == "scheduling.k8s.io/WorkloadUpdate"
    assert label(True, True) == "scheduling.k8s.io/WorkloadDelete"
    gates = featuregates.with_settings("1.35", {"GenericWorkload": True, "GangScheduling": True})
    pl = gangscheduling.new(None, fw.Handle(make_cluster([]), feature_gates=gates))
    registered = {event_label(e.event) for e in pl.events_to_register()}
    assert "scheduling.k8s.io/WorkloadAdd" in registered


def test_composite_gate_reads_the_group_through_the_hierarchy_snapshot() -> None:
    """v1.37 with CompositePodGroup on: PreEnqueue and Permit of a member whose PodGroup is
    missing fail with ``BuildHierarchySnapshotFromPod``'s error (upstream
    ``preEnqueueWithHierarchies``, ``Permit``); the group found, nothing changes."""
    settings = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True}
    gates = featuregates.with_settings("1.37", {**settings, "CompositePodGroup": True})
    pl = gangscheduling.new(None, fw.Handle(make_cluster([]), feature_gates=gates))
    p0 = _member("p0")
    pl.manager.on_pod_add(p0)
    why = "failed to build hierarchy snapshot: pod group object not found in state for"
    status = pl.pre_enqueue(p0)
    assert status.code == fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == f"{why} podgroup/ns/g"
    permit, _ = pl.permit(fw.CycleState(), p0, "n1")
    assert permit.code == fw.Code.ERROR and permit.message() == f"{why} podgroup/ns/g"
    pl.manager.on_object(_group("g", 2), False)
    assert pl.pre_enqueue(p0).message() == WAITING_FOR_MIN_COUNT


def test_composite_gate_queues_a_member_added_only_once_its_pod_group_is_observed() -> None:
    """v1.37 with CompositePodGroup on: a Pod added to the rejected Pod's own group queues it
    only when ``areSameHierarchy`` finds both roots, and the cache's ``GetRootKeyForGroup``
    finds none for a PodGroup whose object is not observed, members known or not (kube-oracle
    v1.37.2: QueueSkip; seed 1 case 165 of the v1.37 hint cases)."""
    settings = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True}
    gates = featuregates.with_settings("1.37", {**settings, "CompositePodGroup": True})
    pl = gangscheduling.new(None, fw.Handle(make_cluster([]), feature_gates=gates))
    pl.manager.on_pod_add(_member("a"))
    hint = pl.events_to_register()[0].hint
    assert hint is not None
    assert hint(_member("a"), None, _member("b")) == fw.QueueingHint.QUEUE_SKIP
    pl.manager.on_object(_group("g", 2), False)
    assert hint(_member("a"), None, _member("b")) == fw.QueueingHint.QUEUE
