"""Workload-aware preemption (v1.37 DefaultPreemption's PodGroupPostFilter) in a simulated
run: a PodGroup that does not fit preempts for the whole group, choosing victims as upstream's
``PodGroupEvaluator`` does (a PodGroup with ``disruptionMode: all`` goes whole), nominates its
members and binds them once the victims are gone; the cycle's metrics.

Scenarios were checked against upstream v1.37.2's scheduler (``oracle/diff.py --family
podgroup --verb schedule``: the same situations drawn at random)."""

from __future__ import annotations

from typing import Any

from kubesched.config import featuregates
from kubesched.metrics import SchedulerMetrics
from kubesched.plugins.defaultpreemption.podgroup import (
    RANK_POD,
    RANK_POD_GROUP,
    Victim,
    importance,
)
from kubesched.sim.whatif import schedule
from kubesched.testing import make_pod
from tests._podgroup import gang, member, node

HOST = "kubernetes.io/hostname"
CLASSES = {"low": 0, "high": 1000}


def _node(name: str, cpu: str) -> dict[str, Any]:
    n = node(name, cpu)
    n["metadata"]["labels"] = {HOST: name}
    return n


def _classes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        for name, value in CLASSES.items()
    ]


def _group(name: str, min_count: int, cls: str, mode: str | None = None) -> dict[str, Any]:
    g = gang(name, min_count)
    g["spec"]["priorityClassName"], g["spec"]["priority"] = cls, CLASSES[cls]
    if mode is not None:
        g["spec"]["disruptionMode"] = {mode: {}}
    return g


def _pod(
    name: str,
    cpu: str,
    t: int,
    *,
    on: str | None = None,
    group: str | None = None,
    cls: str = "low",
    prefer: str | None = None,
) -> dict[str, Any]:
    p = member(name, group, cpu) if group else member(name, "", cpu)
    if not group:
        del p["spec"]["schedulingGroup"]
    if on is not None:
        p["spec"]["nodeName"] = on
    p["spec"]["priorityClassName"], p["spec"]["priority"] = cls, CLASSES[cls]
    if prefer is not None:
        term = {"matchExpressions": [{"key": HOST, "operator": "In", "values": [prefer]}]}
        prefs = [{"weight": 100, "preference": term}]
        p["spec"]["affinity"] = {
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": prefs}
        }
    p["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{t:02d}Z"
    return p


def _run(
    items: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    gates: dict[str, bool] | None = None,
    metrics: SchedulerMetrics | None = None,
) -> dict[str, dict[str, Any]]:
    fg = featuregates.with_settings("1.37", {"GenericWorkload": True, **(gates or {})})
    cluster = {"apiVersion": "v1", "kind": "List", "items": [*items, *_classes()]}
    out = schedule(cluster, pods, gates=fg, metrics=metrics)
    return {k.removeprefix("ns/"): v for k, v in out["pods"].items()}


def _gang_over_running_pods(
    metrics: SchedulerMetrics | None = None,
) -> dict[str, dict[str, Any]]:
    """Two 4-CPU nodes held by a low-priority gang (3 CPU on each) and a 1-CPU Pod; a
    high-priority gang of two 3-CPU members.  The running Pods go at once when evicted
    (no grace period): v1.37 retries the group when its backoff ends, not when its victims
    are gone, so victims that terminated for 30 s would see it retried on the way."""
    items = [_node("n1", "4"), _node("n2", "4"), _group("low", 2, "low"), _group("hi", 2, "high")]
    pods = [
        _pod("l0", "3", 1, on="n1", group="low"),
        _pod("l1", "3", 2, on="n2", group="low"),
        _pod("x", "1", 3, on="n1"),
        _pod("h0", "3", 5, group="hi", cls="high", prefer="n1"),
        _pod("h1", "3", 6, group="hi", cls="high", prefer="n1"),
    ]
    for p in pods[:3]:
        p["spec"]["terminationGracePeriodSeconds"] = 0
    return _run(items, pods, metrics=metrics)


def test_a_gang_preempts_for_the_whole_group_and_spares_what_it_need_not_evict() -> None:
    out = _gang_over_running_pods()
    assert out["l0"]["result"] == out["l1"]["result"] == "Preempted"
    # x (1 CPU) fits beside a 3-CPU member on n1: reprieved.
    assert out["x"]["result"] == "Scheduled" and out["x"]["node"] == "n1"
    assert {out["h0"]["node"], out["h1"]["node"]} == {"n1", "n2"}
    assert out["h0"]["result"] == out["h1"]["result"] == "Scheduled"
    # one cycle nominated the members and evicted the victims, the next bound them
    assert out["h0"]["attempts"] == out["h1"]["attempts"] == 2
    assert sorted(out["h0"]["victims"]) == ["ns/l0", "ns/l1"]


def _disruption(mode: str | None) -> dict[str, dict[str, Any]]:
    """A running low-priority gang with a 3-CPU Pod on n1 and a 1-CPU Pod on n2, a lone
    3-CPU Pod on n2; a high-priority member of 3 CPU preferring n1."""
    items = [_node("n1", "4"), _node("n2", "4"), _group("low", 1, "low", mode)]
    items.append(_group("hi", 1, "high"))
    pods = [
        _pod("l0", "3", 1, on="n1", group="low"),
        _pod("l1", "1", 2, on="n2", group="low"),
        _pod("p", "3", 3, on="n2"),
        _pod("h0", "3", 5, group="hi", cls="high", prefer="n1"),
    ]
    return _run(items, pods)


def test_disruption_mode_all_evicts_the_whole_running_group() -> None:
    out = _disruption("all")
    # The gang is one unit, more important than the lone Pod (so given back first): it
    # does not fit back on n1, so it goes whole, its Pod on n2 too; p is spared.
    assert out["l0"]["result"] == out["l1"]["result"] == "Preempted"
    assert out["p"]["result"] == "Scheduled"
    assert out["h0"]["node"] == "n1"


def test_disruption_mode_single_evicts_only_the_pod_in_the_way() -> None:
    out = _disruption("single")
    assert out["l0"]["result"] == "Preempted"
    assert out["l1"]["result"] == out["p"]["result"] == "Scheduled"
    assert out["h0"]["node"] == "n1"


def test_no_lower_priority_victim_ends_the_post_filter_with_upstreams_message() -> None:
    items = [_node("n1", "4"), _group("peer", 1, "high"), _group("hi", 2, "high")]
    pods = [
        _pod("busy", "3", 1, on="n1", group="peer", cls="high"),
        _pod("h0", "1", 5, group="hi", cls="high"),
        _pod("h1", "2", 6, group="hi", cls="high"),
    ]
    out = _run(items, pods)
    assert out["busy"]["result"] == "Scheduled"
    assert out["h0"]["result"] == "Unschedulable"
    assert out["h0"]["message"] == (
        "pod group is unschedulable, minCount (2) cannot be satisfied: 1 scheduled, "
        "0 remaining, pod group preemption: No preemption victims found for incoming "
        "preemptor"
    )


def _policy_never(gate: bool, member_says: str | None) -> dict[str, dict[str, Any]]:
    """A PodGroup saying ``preemptionPolicy: Never``, its member ``member_says``."""
    items = [_node("n1", "4"), _group("low", 1, "low"), _group("hi", 1, "high")]
    items[-1]["spec"]["preemptionPolicy"] = "Never"
    hi = _pod("h0", "3", 5, group="hi", cls="high")
    if member_says is not None:
        hi["spec"]["preemptionPolicy"] = member_says
    pods = [_pod("l0", "3", 1, on="n1", group="low"), hi]
    return _run(items, pods, {"PodGroupPreemptionPolicy": gate})


def test_the_pod_groups_preemption_policy_rules_under_its_gate() -> None:
    out = _policy_never(gate=True, member_says="Never")  # validation wants them alike
    assert out["l0"]["result"] == "Scheduled"
    assert out["h0"]["result"] == "Unschedulable"
    # Without the gate the field is dropped and the members' policy (the default) rules.
    out = _policy_never(gate=False, member_says=None)
    assert out["l0"]["result"] == "Preempted"
    assert out["h0"]["result"] == "Scheduled"


def test_the_pod_group_metrics_count_the_cycles_and_the_preemption() -> None:
    m = SchedulerMetrics()
    _gang_over_running_pods(m)
    s = m.samples()
    attempts = "scheduler_podgroup_schedule_attempts_total"
    profile = ("profile", "default-scheduler")
    assert s[(attempts, (profile, ("result", "waiting_on_preemption")))] == 1
    assert s[(attempts, (profile, ("result", "scheduled")))] == 1
    assert s[("scheduler_workload_preemption_attempts_total", (("result", "Success"),))] == 1
    assert s[("scheduler_workload_preemption_victims_sum", ())] == 2
    # one observation of two units: each Pod of a PodGroup without disruptionMode all
    by = (("preemptor", "PodGroup"),)
    assert s[("scheduler_preemption_workload_disruptions_count", by)] == 1
    assert s[("scheduler_preemption_workload_disruptions_sum", by)] == 2


def _victim(priority: int, rank: int, size: int, listed: int, start: float = 1e9) -> Victim:
    pods = tuple(make_pod(f"p{listed}-{i}", "ns").obj() for i in range(size))
    return Victim(pods, priority, rank, start, listed)


def test_more_important_victims_sort_first_as_upstreams_more_important_victim() -> None:
    lone = _victim(0, RANK_POD, 1, 0)
    member = _victim(0, RANK_POD_GROUP, 1, 1)
    big = _victim(0, RANK_POD_GROUP, 3, 2)
    higher = _victim(5, RANK_POD, 1, 3)
    older = _victim(0, RANK_POD, 1, 4, start=1.0)
    ordered = sorted([lone, member, big, higher, older], key=importance)
    # priority, then PodGroup units before Pods, more Pods, earlier start, then listing
    assert ordered == [higher, big, member, older, lone]
