"""Waiting Pods at Permit: allow, reject, timeout and deletion, with Unreserve and forget."""

from __future__ import annotations

from typing import Any

from kubesched.api import objects as api
from kubesched.framework import interface as fw
from kubesched.testing import drain, make_node, make_pod, new_scheduler


class Gate:
    """A Permit plugin that makes Pods labelled ``wait=<seconds>`` wait."""

    name = "Gate"

    def __init__(self, args: object, handle: fw.Handle) -> None:
        self.handle = handle
        self.unreserved: list[str] = []

    def reserve(self, state: fw.CycleState, pod: api.Pod, node: str) -> fw.Status:
        return fw.SUCCESS

    def unreserve(self, state: fw.CycleState, pod: api.Pod, node: str) -> None:
        self.unreserved.append(pod.key)

    def permit(self, state: fw.CycleState, pod: api.Pod, node: str) -> tuple[fw.Status, float]:
        wait = pod.labels.get("wait")
        if wait is None:
            return fw.SUCCESS, 0.0
        return fw.Status(fw.Code.WAIT), float(wait)


CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {"enabled": [{"name": "Gate"}]}},
        }
    ],
}


def setup() -> tuple[Any, Any, Any, Gate]:
    s, fake, clock = new_scheduler(CONFIG, {"Gate": Gate})
    s.on_node_add(make_node("n").cap(cpu="4", memory="8Gi", pods=10).obj())
    gate = s.profiles["default-scheduler"].instances["Gate"]
    return s, fake, clock, gate


def test_waiting_pod_holds_its_reservation_until_allowed() -> None:
    s, fake, _clock, _gate = setup()
    s.on_pod_add(make_pod("p").req(cpu="3").labels(wait="10").obj())
    drain(s)
    wp = s.handle.get_waiting_pod("default/p")
    assert wp is not None and wp.get_pending_plugins() == ["Gate"]
    assert s.cluster.is_assumed("default/p") and fake.binds == {}
    assert s.in_flight_bindings == 1
    s.on_pod_add(make_pod("q").req(cpu="3").obj())
    drain(s)
    assert "default/q" not in fake.binds  # p's reservation still counts
    wp.allow("Gate")
    s.schedule_one()  # the decision is taken up at the next cycle boundary
    assert fake.binds.get("default/p") == "n"
    assert s.handle.get_waiting_pod("default/p") is None and s.in_flight_bindings == 0


def test_rejected_waiting_pod_is_unreserved_forgotten_and_requeued() -> None:
    s, fake, _clock, gate = setup()
    s.on_pod_add(make_pod("p").req(cpu="3").labels(wait="10").obj())
    drain(s)
    s.handle.iterate_waiting_pods()[0].reject("Gate", "no quorum")
    s.schedule_one()
    assert gate.unreserved == ["default/p"]
    assert not s.cluster.is_assumed("default/p") and "default/p" not in s.cluster.pods
    # upstream WaitOnPermit: a FitError over the one node
    assert s.failures["default/p"] == ("Unschedulable", "0/1 nodes are available: 1 no quorum.")
    assert s.queue.queue_of("default/p") in ("backoff", "unschedulable")
    assert fake.binds == {} and s.in_flight_bindings == 0


def test_permit_timeout_on_the_scheduler_clock() -> None:
    s, _fake, clock, gate = setup()
    s.on_pod_add(make_pod("p").req(cpu="1").labels(wait="5").obj())
    drain(s)
    assert s.next_waiting_deadline() == 5.0
    clock.now = 4.9
    s.expire_waiting_pods()
    assert s.handle.get_waiting_pod("default/p") is not None
    clock.now = 5.0
    s.expire_waiting_pods()
    assert s.handle.get_waiting_pod("default/p") is None
    assert gate.unreserved == ["default/p"]
    assert s.failures["default/p"][1] == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 5s at plugin Gate."
    )


def test_wait_is_capped_at_fifteen_minutes() -> None:
    s, _fake, _clock, _gate = setup()
    s.on_pod_add(make_pod("p").req(cpu="1").labels(wait="100000").obj())
    drain(s)
    assert s.next_waiting_deadline() == fw.MAX_PERMIT_WAIT_SECONDS


def test_deleting_a_waiting_pod_releases_it() -> None:
    s, _fake, _clock, gate = setup()
    p = make_pod("p").req(cpu="1").labels(wait="5").obj()
    s.on_pod_add(p)
    drain(s)
    s.on_pod_delete(p)
    assert gate.unreserved == ["default/p"] and "default/p" not in s.cluster.pods
    assert s.queue.queue_of("default/p") is None and s.in_flight_bindings == 0


def test_a_preemption_victim_held_at_permit_is_rejected_not_deleted() -> None:
    """Upstream ``prepareCandidate``: a victim that is a waiting Pod is rejected
    (``preempted``) and goes back to the queue; only other victims are deleted."""
    s, fake, _clock, gate = setup()
    s.on_pod_add(make_pod("low").req(cpu="3").priority(0).labels(wait="30").obj())
    drain(s)
    assert s.handle.get_waiting_pod("default/low") is not None
    s.on_pod_add(make_pod("high").req(cpu="3").priority(1000).obj())
    drain(s)
    assert fake.deleted == []
    assert s.handle.get_waiting_pod("default/low") is None
    assert gate.unreserved == ["default/low"]
    assert s.failures["default/low"] == (
        "Unschedulable",
        "0/1 nodes are available: 1 preempted.",
    )
    assert s.queue.queue_of("default/low") is not None  # requeued, not lost
    assert s.preempted_by["default/low"] == "default/high"
