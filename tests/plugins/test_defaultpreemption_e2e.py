"""DefaultPreemption end to end: the simulated cluster (PreemptionBasic- and
Unschedulable-like), ``kubesched.schedule``'s report, nominated Pods counted in Filter,
and the metrics."""

from __future__ import annotations

from typing import Any

import numpy as np

import kubesched
from kubesched.api import objects as api
from kubesched.api.parse import parse_node, parse_pod
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim.driver import SimCluster
from tests.explainer.test_explain import as_list
from tests.explainer.test_explain import node as node_manifest
from tests.explainer.test_explain import pod as pod_manifest
from tests.plugins._defaultpreemption import framework, node, pod, prefiltered, scheduler


def _low(i: int, j: int) -> dict[str, Any]:
    return pod_manifest(f"low-{i}-{j}", cpu="900m", node_name=f"n{i}")


def _high(k: int, cpu: str = "3970m", **spec: Any) -> dict[str, Any]:
    return pod_manifest(f"high-{k}", cpu=cpu, priority=10000, **spec)


def _run(nodes: int, incoming: list[dict[str, Any]]) -> SimCluster:
    """PreemptionBasic-like: ``nodes`` 4-CPU nodes each full with 4 low-priority 900m Pods."""
    sim = SimCluster(load_config(None, known_plugins=known_plugin_names()))
    for i in range(nodes):
        sim.api.create_node(parse_node(node_manifest(f"n{i}")))
        for j in range(4):
            sim.api.create_pod(parse_pod(_low(i, j)))
    for p in incoming:
        sim.api.create_pod(parse_pod(p))
    while sim.loop.now <= 600 and not sim.quiet():
        if not sim.loop.step():
            break
    return sim


def test_preemption_basic_places_every_high_priority_pod() -> None:
    sim = _run(5, [_high(k) for k in range(5)])
    bound = {k: p.node_name for k, p in sim.api.pods.items() if k.startswith("default/high")}
    assert len(bound) == 5 and all(bound.values())
    assert len(set(bound.values())) == 5  # one per node: each preempted a whole node
    assert not [k for k in sim.api.pods if k.startswith("default/low")]  # all 20 preempted
    assert sim.api.overcommitted() == [] and sim.api.bound_twice() == []
    s = sim.scheduler
    assert not s.cluster.overcommitted_nodes()
    assert len(s.queue.nominator) == 0
    for key, node_name in bound.items():
        assert s.preemptions[key][0] == node_name
        assert {v.rsplit("-", 2)[1] for v in s.preemptions[key][1]} == {node_name[1:]}
    registry = s.metrics.registry
    # upstream counts every PostFilter call: each preemption, and each retry of a preemptor
    # whose nominated node still has victims terminating (how many depends on timing)
    failed = s.attempts["unschedulable"]
    assert failed >= 5
    assert registry.get_sample_value("scheduler_preemption_attempts_total") == failed
    assert registry.get_sample_value("scheduler_preemption_victims_sum") == 20


def test_preemption_policy_never_does_not_preempt() -> None:
    sim = _run(3, [_high(0, preemptionPolicy="Never")])
    assert sim.api.pods["default/high-0"].node_name == ""
    assert len([k for k in sim.api.pods if k.startswith("default/low")]) == 12
    _, message = sim.scheduler.failures["default/high-0"]
    assert message == (
        "0/3 nodes are available: 3 Insufficient cpu. "
        "preemption: not eligible due to preemptionPolicy=Never."
    )


def test_pod_larger_than_any_node_is_not_helped_by_preemption() -> None:
    sim = _run(5, [pod_manifest("big", cpu="9", priority=10)])
    assert sim.api.pods["default/big"].node_name == ""
    assert sim.api.stats.deletes == 0
    assert sim.scheduler.failures["default/big"][1] == (
        "0/5 nodes are available: 5 Insufficient cpu. "
        "preemption: 0/5 nodes are available: "
        "5 Preemption is not helpful for scheduling."
    )


def test_schedule_reports_victims_nominations_and_preempted_pods() -> None:
    cluster = as_list(node_manifest("n0", cpu="2"))
    low = pod_manifest("low", cpu="1500m", node_name="n0")  # submitted already bound
    high = pod_manifest("high", cpu="1", priority=100)
    out = kubesched.schedule(cluster, as_list(low, high))
    assert out["pods"]["default/high"]["result"] == "Scheduled"
    assert out["pods"]["default/high"]["nominatedNode"] == "n0"
    assert out["pods"]["default/high"]["victims"] == ["default/low"]
    assert out["pods"]["default/low"] == {
        "result": "Preempted",
        "node": None,
        "message": "Preempted by default/high on node n0",
        "preemptedBy": "default/high",
        "attempts": 0,
        "source": "pods",
    }
    assert out["summary"]["preempted"] == 1
    assert out["summary"]["preemptions"] == 1
    assert out["summary"]["victims"] == 1


def _pending(s: Any, name: str, priority: int, cpu: str) -> api.Pod:
    p = pod(name, priority, {"cpu": cpu})
    s.on_pod_add(p)
    return p


def test_nominated_pod_keeps_the_room_it_preempted_for() -> None:
    """The preemptor is nominated; while it waits, a lower-priority Pod may not take its room
    and the preemptor's own next attempt goes straight to its nominated node."""
    nodes = [node("a", {"cpu": "2"}), node("b", {"cpu": "2"})]
    full = [pod("fa", 0, {"cpu": "2"}, "a"), pod("fb", 50, {"cpu": "2"}, "b")]
    s, client = scheduler(nodes, full)
    client.scheduler = s
    _pending(s, "high", 100, "2")
    s.schedule_one()  # fails, preempts fa on a (the lowest victim), nominated to a
    assert client.deleted == ["default/fa"]
    assert s.queue.nominator.node_of("default/high") == "a"
    assert s.queue.get("default/high").pod.nominated_node_name == "a"  # type: ignore[union-attr]
    fwk = framework(s)
    rows = np.asarray([s.cluster.nodes.row_of["a"]], dtype=np.int64)
    lower = pod("mid", 60, {"cpu": "1"})
    outcome = fwk.run_filter_with_nominated(prefiltered(s, lower), lower, rows)
    assert outcome.feasible.size == 0
    assert outcome.status_of(0).reasons == ("Insufficient cpu",)
    assert fwk.run_filter(prefiltered(s, lower), lower, rows).feasible.size == 1
    higher = pod("top", 200, {"cpu": "1"})
    assert fwk.run_filter_with_nominated(prefiltered(s, higher), higher, rows).feasible.size == 1
    table = s.cluster.nodes
    assert int(table.requested[rows[0], 0]) == 0  # nominated usage was taken off again
    while s.schedule_one():
        pass
    assert client.binds["default/high"] == "a"
    assert len(s.queue.nominator) == 0


def test_a_node_failing_with_its_nominated_pods_is_not_filtered_again_without_them() -> None:
    """Upstream ``RunFilterPluginsWithNominatedPods`` filters a node with nominated Pods
    first with them; a failure there is the node's status and the pass without them does not
    run (each plugin evaluated once for the node); a node that passes with them is filtered
    again without them (evaluated twice)."""
    nodes = [node("a", {"cpu": "2"}), node("b", {"cpu": "4"})]
    full = [pod("fa", 0, {"cpu": "2"}, "a")]
    s, client = scheduler(nodes, full)
    client.scheduler = s
    _pending(s, "high", 100, "2")
    s.schedule_one()  # fails on a (b is not full: it fits there)
    s.queue.nominator.add(pod("held", 100, {"cpu": "2"}), "a")
    s.queue.nominator.add(pod("kept", 100, {"cpu": "1"}), "b")
    fwk = framework(s)
    fit = ("NodeResourcesFit", "Filter")
    table = s.cluster.nodes
    for name, cpu, feasible, evaluated in (("a", "1", 0, 1), ("b", "1", 1, 2)):
        rows = np.asarray([table.row_of[name]], dtype=np.int64)
        mid = pod("mid", 60, {"cpu": cpu})
        state = prefiltered(s, mid)
        before = fwk.evaluations.get(fit, 0)
        outcome = fwk.run_filter_with_nominated(state, mid, rows)
        assert outcome.feasible.size == feasible
        assert fwk.evaluations.get(fit, 0) - before == evaluated


def test_preempting_clears_lower_priority_nominations_on_that_node() -> None:
    nodes = [node("a", {"cpu": "2"})]
    s, client = scheduler(
        nodes, [pod("fa", 0, {"cpu": "1"}, "a"), pod("fb", 10, {"cpu": "1"}, "a")]
    )
    client.scheduler = s
    _pending(s, "m", 50, "1")
    s.schedule_one()  # m preempts fa only (fb is reprieved) and is nominated to a
    assert client.deleted == ["default/fa"]
    assert s.queue.nominator.node_of("default/m") == "a"
    _pending(s, "h", 100, "2")
    s.schedule_one()  # h ignores m's lower-priority nomination, preempts fb
    assert client.deleted == ["default/fa", "default/fb"]
    assert s.queue.nominator.node_of("default/h") == "a"
    assert s.queue.nominator.node_of("default/m") == ""
    assert s.queue.get("default/m").pod.nominated_node_name == ""  # type: ignore[union-attr]
    while s.schedule_one():
        pass
    assert client.binds == {"default/h": "a"}
    assert "preemption: 0/1 nodes are available" in s.failures["default/m"][1]


def test_victims_are_the_later_started_of_equal_priority_pods() -> None:
    """A second guard of upstream's victim order (``MoreImportantPod``: higher priority,
    then earlier ``status.startTime``; none counts as now), from manifests through
    ``kubesched.schedule``: the Pods reprieved first are the earliest-started, so the
    later-started ones are the victims, whatever their names or listing order."""
    cluster = as_list(node_manifest("n0", cpu="2"))
    running = []
    for name, started in (
        ("c", "2024-05-01T12:00:00Z"),
        ("a", None),
        ("b", "2024-05-01T09:00:00Z"),
    ):
        p = pod_manifest(name, cpu="500m", node_name="n0")
        if started is not None:
            p["status"] = {"startTime": started}
        running.append(p)
    oldest = pod_manifest("oldest", cpu="500m", node_name="n0")
    oldest["status"] = {"startTime": "2024-04-30T00:00:00Z"}
    high = pod_manifest("high", cpu="1", priority=100)  # needs two 500m Pods gone
    out = kubesched.schedule(cluster, as_list(*running, oldest, high))
    assert out["pods"]["default/high"]["result"] == "Scheduled"
    # a (no startTime: "now") and c (noon) go; b (9:00) and oldest stay
    assert sorted(out["pods"]["default/high"]["victims"]) == ["default/a", "default/c"]
    assert out["pods"]["default/b"]["result"] != "Preempted"
    assert out["pods"]["default/oldest"]["result"] != "Preempted"


def test_an_event_during_a_cycle_does_not_start_the_next_one_early() -> None:
    """The scheduling process is busy for ``cycleSeconds`` after each attempt: a victim's
    deletion heard inside the preempting attempt wakes it, and the next attempt still waits
    for the cycle's end (it used to start at once, so every preemption's cycle cost 0)."""
    sim = SimCluster(load_config(None, known_plugins=known_plugin_names()))
    starts: list[float] = []
    scheduled = sim.scheduler.schedule_one

    def timed() -> bool:
        starts.append(sim.loop.now)
        return scheduled()

    sim.scheduler.schedule_one = timed  # type: ignore[method-assign]
    for i in range(5):
        sim.api.create_node(parse_node(node_manifest(f"n{i}")))
        for j in range(4):
            sim.api.create_pod(parse_pod(_low(i, j)))
    for k in range(5):
        sim.api.create_pod(parse_pod(_high(k)))
    while sim.loop.now <= 600 and not sim.quiet():
        if not sim.loop.step():
            break
    cycle = sim.timing.cycle_seconds
    gaps = np.diff(np.asarray(starts))
    assert len(starts) > 5 and gaps.min() >= cycle * (1 - 1e-9)
