"""The PodGroup cycle's placement algorithm (v1.37, TopologyAwareWorkloadScheduling):
TopologyPlacementGenerator offers one placement per rack, the default algorithm runs on each,
PodGroupPodsCount picks among the feasible ones (upstream's
``TestPodGroupSchedulingPlacementAlgorithm`` and ``..._Scoring``, in a running scheduler)."""

from __future__ import annotations

from typing import Any

from kubesched.api import objects as api
from kubesched.config import featuregates
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import SchedulerOptions
from kubesched.scheduler.core import Scheduler
from kubesched.testing import FakeApi, VirtualClock, make_node, make_pod

RACK = "example.com/rack"
GATES = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True}


def _scheduler() -> tuple[Scheduler, FakeApi]:
    fg = featuregates.with_settings("1.37", GATES)
    cfg = load_config(None, known_plugins=known_plugin_names(), gates=fg)
    fake = FakeApi()
    options = SchedulerOptions(feature_gates=fg)
    return Scheduler(cfg, clock=VirtualClock(), api_client=fake, options=options), fake


def _group(min_count: int, rack: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if rack:
        spec["schedulingConstraints"] = {"topology": [{"key": RACK}]}
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": spec,
    }


def _member(name: str, cpu: str = "1") -> api.Pod:
    pod = make_pod(name, "ns").req(cpu=cpu).obj()
    pod.scheduling_group = "g"
    pod.preemption_policy = "Never"  # the group may not preempt: PodGroupPostFilter says so
    return pod


def _racks(s: Scheduler, cpus: dict[str, list[str]]) -> None:
    for rack, per_node in cpus.items():
        for i, cpu in enumerate(per_node):
            node = make_node(f"{rack}-{i}").cap(cpu=cpu, memory="8Gi", pods=10)
            s.on_node_add(node.labels(**{RACK: rack}).obj())


def _run(s: Scheduler, group: dict[str, Any], members: list[api.Pod]) -> None:
    s.on_object(group)
    for m in members:
        s.on_pod_add(m)
    for _ in range(20):
        if not s.schedule_one():
            break


def test_the_group_lands_whole_in_the_rack_that_holds_it() -> None:
    s, fake = _scheduler()
    _racks(s, {"a": ["2"], "b": ["1", "1", "1"]})  # a holds 2 members (emptier), b holds 3
    _run(s, _group(3), [_member(f"m{i}") for i in range(3)])
    assert sorted(fake.binds) == ["ns/m0", "ns/m1", "ns/m2"]
    assert {n.split("-")[0] for n in fake.binds.values()} == {"b"}


def test_no_rack_holds_it_reports_the_first_placement() -> None:
    s, fake = _scheduler()
    _racks(s, {"a": ["1"], "b": ["2"]})
    _run(s, _group(3), [_member(f"m{i}") for i in range(3)])
    assert fake.binds == {}
    first = "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining"  # rack a, after m1
    group = (
        "pod group is unschedulable, 0/2 placements are available, first placement status: "
        f"{first}, pod group preemption: not eligible due to preemptionPolicy=Never."
    )
    assert s.pod_group_cycle is not None
    assert s.pod_group_cycle.conditions["ns/g"].message == group
    assert fake.failures["ns/m0"] == ("Unschedulable", f"pod group is unschedulable, {group}")
    assert fake.failures["ns/m1"][1] == "0/1 nodes are available: 1 Insufficient cpu."
    untried = group.removesuffix(
        ", pod group preemption: not eligible due to preemptionPolicy=Never."
    )
    assert fake.failures["ns/m2"] == ("Unschedulable", untried)  # the status before PostFilter


def test_pods_count_prefers_the_rack_placing_more_members() -> None:
    s, fake = _scheduler()
    _racks(s, {"a": ["2"], "b": ["3"]})  # both meet minCount 2; b places all 3
    _run(s, _group(2), [_member(f"m{i}") for i in range(3)])
    assert len(fake.binds) == 3
    assert set(fake.binds.values()) == {"b-0"}


def test_generator_placements() -> None:
    """One placement of every node without a constraint; one per rack with it (racks in the
    order the nodes list them: upstream's Go map of a few domains walks in insertion order
    most of the time); a member already bound pins the group to its rack."""
    s, _ = _scheduler()
    _racks(s, {"b": ["1"], "a": ["1", "1"]})
    s.on_node_add(make_node("bare").cap(cpu="1", memory="8Gi", pods=10).obj())  # no rack label
    gen = s.profiles["default-scheduler"].placement_generators[0]
    rows = s.cluster.nodes.order()
    s.on_object(_group(2, rack=False))
    [one], status = gen.generate_placements("ns/g", rows)
    assert status.is_success() and one.name == "" and one.rows.tolist() == rows.tolist()
    s.on_object(_group(2))
    placements, _ = gen.generate_placements("ns/g", rows)
    names = s.cluster.nodes.names
    assert [(p.name, [names[r] for r in p.rows.tolist()]) for p in placements] == [
        ("b", ["b-0"]),
        ("a", ["a-0", "a-1"]),
    ]
    s.on_pod_add(_member("m0").bound_to("b-0"))
    [pinned], _ = gen.generate_placements("ns/g", rows)
    assert pinned.name == "b"


def test_v136_placements_say_it_without_the_prefix() -> None:
    fg = featuregates.with_settings("1.36", {**GATES, "GangScheduling": True})
    cfg = load_config(None, known_plugins=known_plugin_names(), gates=fg)
    fake = FakeApi()
    s = Scheduler(
        cfg, clock=VirtualClock(), api_client=fake, options=SchedulerOptions(feature_gates=fg)
    )
    _racks(s, {"a": ["1"], "b": ["2"]})
    group = _group(3)
    group["apiVersion"] = "scheduling.k8s.io/v1alpha2"
    _run(s, group, [_member(f"m{i}") for i in range(3)])
    assert fake.binds == {}
    assert s.pod_group_cycle is not None
    assert s.pod_group_cycle.conditions["ns/g"].message == (
        "0/2 placements are available, first placement status: pod group is unschedulable"
    )


def test_equal_counts_go_to_the_rack_left_fuller() -> None:
    """Both racks place every member: PodGroupPodsCount ties, NodeResourcesFit's placement
    score (MostAllocated over the rack's nodes) prefers the smaller rack b (75 % of its cpu
    used against 62 % of a's)."""
    s, fake = _scheduler()
    _racks(s, {"a": ["2", "8"], "b": ["4", "4"]})
    _run(s, _group(2), [_member(f"m{i}", cpu="2") for i in range(3)])
    assert len(fake.binds) == 3
    assert {n.split("-")[0] for n in fake.binds.values()} == {"b"}


def test_placement_metrics_count_each_placement_by_its_result() -> None:
    """v1.37 ``generated_placements_total`` and ``placement_evaluations_total`` /
    ``placement_evaluation_duration_seconds`` by ``result``: two racks, only b holds the
    group (one cycle)."""
    s, fake = _scheduler()
    _racks(s, {"a": ["2"], "b": ["1", "1", "1"]})
    _run(s, _group(3), [_member(f"m{i}") for i in range(3)])
    assert len(fake.binds) == 3
    got = s.metrics.samples()
    profile = ("profile", "default-scheduler")
    assert got[("scheduler_generated_placements_total", (profile,))] == 2
    evaluations = "scheduler_placement_evaluations_total"
    assert got[(evaluations, (profile, ("result", "feasible")))] == 1
    assert got[(evaluations, (profile, ("result", "infeasible")))] == 1
    duration = "scheduler_placement_evaluation_duration_seconds_count"
    assert got[(duration, (profile, ("result", "infeasible")))] == 1
