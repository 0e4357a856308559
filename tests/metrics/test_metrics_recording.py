"""Upstream metrics recorded where upstream records them: plugin evaluations per node, Permit
waits, queueing hint calls, informer event handling and the queue's in-flight events."""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.framework import interface as fw
from kubesched.queue.hints import HintTable, Strategy
from kubesched.scheduler import Scheduler
from kubesched.testing import drain, make_node, make_pod, new_scheduler
from tests.scheduler.test_waiting_pods import setup as gated_setup

PROFILE = "default-scheduler"


def sample(s: Scheduler, name: str, **labels: str) -> float:
    """The value of one series (0 when absent), after the periodic sync."""
    s.sync_metrics()
    want = set(labels.items())
    return sum(v for (n, ls), v in s.metrics.samples().items() if n == name and want <= set(ls))


def node(name: str, cpu: str = "4", taint: bool = False) -> api.Node:
    b = make_node(name).cap(cpu=cpu, memory="8Gi", pods=10)
    return (b.taint("dedicated", "gpu") if taint else b).obj()


def evaluations(s: Scheduler, plugin: str, point: str) -> float:
    return sample(
        s,
        "scheduler_plugin_evaluation_total",
        plugin=plugin,
        extension_point=point,
        profile=PROFILE,
    )


def test_plugin_evaluation_total_counts_each_node_a_plugin_answered_for() -> None:
    s, _fake, _clock = new_scheduler()
    for i in range(3):
        s.on_node_add(node(f"n{i}"))
    s.on_node_add(node("tainted", taint=True))
    assert evaluations(s, "TaintToleration", "Filter") == 0
    s.on_pod_add(make_pod("p").req(cpu="1").obj())
    drain(s)
    assert evaluations(s, "TaintToleration", "Filter") == 4
    assert evaluations(s, "NodeResourcesFit", "Filter") == 3  # after TaintToleration's reject
    assert evaluations(s, "NodeResourcesFit", "PreFilter") == 1
    assert evaluations(s, "NodePorts", "PreFilter") == 0  # Skip: no host ports, not counted
    assert evaluations(s, "NodePorts", "Filter") == 0
    assert evaluations(s, "TaintToleration", "PreScore") == 1
    assert evaluations(s, "NodeResourcesBalancedAllocation", "Score") == 3
    s.on_pod_add(make_pod("q").req(cpu="2").obj())  # not equivalent: no result reuse
    drain(s)
    assert evaluations(s, "NodeResourcesFit", "Filter") == 6


def test_permit_wait_duration_by_result() -> None:
    s, _fake, clock, _gate = gated_setup()
    s.on_pod_add(make_pod("p").req(cpu="1").labels(wait="10").obj())
    drain(s)
    count = "scheduler_permit_wait_duration_seconds_count"
    assert sample(s, count, result="Success") == 0
    clock.now = 3.0
    wp = s.handle.get_waiting_pod("default/p")
    assert wp is not None
    wp.allow("Gate")
    s.schedule_one()
    assert sample(s, count, result="Success") == 1
    assert sample(s, "scheduler_permit_wait_duration_seconds_sum", result="Success") == 3.0
    s.on_pod_add(make_pod("q").req(cpu="1").labels(wait="5").obj())
    drain(s)
    clock.now = 8.0
    s.expire_waiting_pods()
    assert sample(s, count, result="Unschedulable") == 1


def test_queueing_hint_execution_duration_per_hint_call() -> None:
    s, _fake, _clock = new_scheduler()
    s.on_node_add(node("small", cpu="1"))
    s.on_pod_add(make_pod("p").req(cpu="2").obj())
    drain(s)
    assert s.queue.queue_of("default/p") == "unschedulable"
    name = "scheduler_queueing_hint_execution_duration_seconds_count"
    labels = {"plugin": "NodeResourcesFit", "event": "NodeAdd"}
    assert sample(s, name, **labels) == 0
    s.on_node_add(node("also-small", cpu="1"))
    assert sample(s, name, hint="QueueSkip", **labels) == 1
    assert s.queue.queue_of("default/p") == "unschedulable"
    s.on_node_add(node("big", cpu="4"))
    assert sample(s, name, hint="Queue", **labels) == 1


def test_event_handling_duration_per_event_label() -> None:
    s, _fake, _clock = new_scheduler()
    name = "scheduler_event_handling_duration_seconds_count"
    assert sample(s, name, event="NodeAdd") == 0
    s.on_node_add(node("n0"))
    assert sample(s, name, event="NodeAdd") == 1
    s.on_pod_add(make_pod("pending").req(cpu="1").obj())
    assert sample(s, name, event="UnschedulablePodAdd") == 1
    s.on_pod_add(make_pod("running").req(cpu="1").node("n0").obj())
    assert sample(s, name, event="AssignedPodAdd") == 1
    s.on_node_update(node("n0"), node("n0", cpu="8"))
    assert sample(s, name, event="NodeAllocatableChange") == 1


def test_inflight_events_while_a_pod_is_being_scheduled() -> None:
    s, _fake, _clock = new_scheduler()
    s.on_node_add(node("n0"))
    s.on_pod_add(make_pod("p").req(cpu="1").obj())
    name = "scheduler_inflight_events"
    assert sample(s, name, event="PodPopped") == 0
    qp = s.queue.pop()
    assert qp is not None
    s.on_node_add(node("n1"))
    assert sample(s, name, event="PodPopped") == 1
    assert sample(s, name, event="NodeAdd") == 1
    s.queue.done(qp.pod)
    assert sample(s, name, event="PodPopped") == 0
    assert sample(s, name, event="NodeAdd") == 0


def test_a_failing_hint_is_timed_as_error() -> None:
    def broken(pod: api.Pod, old: object, new: object) -> fw.QueueingHint:
        raise RuntimeError("boom")

    ev = fw.ClusterEvent(fw.Resource.NODE, fw.ActionType.ADD)
    table = HintTable({PROFILE: {"Broken": [fw.ClusterEventWithHint(ev, broken)]}})
    seen: list[tuple[str, ...]] = []
    table.observe = lambda seconds, *labels: seen.append(labels)
    qp = fw.QueuedPodInfo(pod=make_pod("p").obj(), timestamp=0.0)
    qp.unschedulable_plugins = {"Broken"}
    assert table.worth_requeuing(qp, ev, None, node("n")) == Strategy.AFTER_BACKOFF
    assert seen == [("Broken", "NodeAdd", "Error")]
