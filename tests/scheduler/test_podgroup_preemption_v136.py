"""v1.36's workload-aware preemption (gate WorkloadAwarePreemption, on top of GangScheduling)
in a simulated run: a member's own PostFilter says the group preempts for it, the group's
preemption picks victims by rerunning the whole algorithm (a v1alpha2 PodGroup with
``disruptionMode: PodGroup`` goes whole, others' Pods alone at their own priority), the
members placed before are nominated where they were placed, and what stops it is appended
to the group's status.

Scenarios were checked against upstream v1.36.3's scheduler (``oracle/diff.py --family
podgroup --kubernetes-version 1.36 --verb schedule``: the same situations drawn at random)."""

from __future__ import annotations

from typing import Any

from kubesched.config import featuregates
from kubesched.metrics import SchedulerMetrics
from kubesched.sim.whatif import schedule
from tests._podgroup import member, node

HOST = "kubernetes.io/hostname"
CLASSES = {"low": 0, "high": 1000}
API = "scheduling.k8s.io/v1alpha2"


def _node(name: str, cpu: str) -> dict[str, Any]:
    n = node(name, cpu)
    n["metadata"]["labels"] = {HOST: name, "rack": "r1"}
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


def _group(
    name: str, min_count: int, cls: str, mode: str | None = None, rack: bool = False
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    spec["priorityClassName"], spec["priority"] = cls, CLASSES[cls]
    if mode is not None:
        spec["disruptionMode"] = mode
    if rack:
        spec["schedulingConstraints"] = {"topology": [{"key": "rack"}]}
    meta = {"name": name, "namespace": "ns"}
    return {"apiVersion": API, "kind": "PodGroup", "metadata": meta, "spec": spec}


def _pod(
    name: str,
    cpu: str,
    t: int,
    *,
    on: str | None = None,
    group: str | None = None,
    cls: str = "low",
    prefer: str | None = None,
    never: bool = False,
) -> dict[str, Any]:
    p = member(name, group or "", cpu)
    if not group:
        del p["spec"]["schedulingGroup"]
    if on is not None:  # running; gone at once when preempted
        p["spec"]["nodeName"] = on
        p["spec"]["terminationGracePeriodSeconds"] = 0
    p["spec"]["priorityClassName"], p["spec"]["priority"] = cls, CLASSES[cls]
    if never:
        p["spec"]["preemptionPolicy"] = "Never"
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
    *,
    wap: bool = True,
    gates: dict[str, bool] | None = None,
    metrics: SchedulerMetrics | None = None,
) -> dict[str, dict[str, Any]]:
    return _schedule(items, pods, wap=wap, gates=gates, metrics=metrics)["pods"]


def _condition(items: list[dict[str, Any]], pods: list[dict[str, Any]], group: str) -> str:
    """The message of ``group``'s ``PodGroupScheduled`` condition after the run."""
    report = _schedule(items, pods, wap=True, gates=None, metrics=None)["podGroups"]
    message: str = report[f"ns/{group}"]["condition"]["message"]
    return message


def _schedule(
    items: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    *,
    wap: bool,
    gates: dict[str, bool] | None,
    metrics: SchedulerMetrics | None,
) -> dict[str, Any]:
    settings = {
        "GenericWorkload": True,
        "GangScheduling": True,
        "WorkloadAwarePreemption": wap,
        "SchedulerAsyncPreemption": False,
        **(gates or {}),
    }
    fg = featuregates.with_settings("1.36", settings)
    cluster = {"apiVersion": "v1", "kind": "List", "items": [*items, *_classes()]}
    out = schedule(cluster, pods, gates=fg, metrics=metrics)
    out["pods"] = {k.removeprefix("ns/"): v for k, v in out["pods"].items()}
    return out


def _gang_over_running_pods(
    wap: bool = True, metrics: SchedulerMetrics | None = None
) -> dict[str, dict[str, Any]]:
    """Two 4-CPU nodes held by a low-priority gang (3 CPU on each) and a 1-CPU Pod; a
    high-priority gang of two 3-CPU members."""
    items = [_node("n1", "4"), _node("n2", "4"), _group("low", 2, "low"), _group("hi", 2, "high")]
    pods = [
        _pod("l0", "3", 1, on="n1", group="low"),
        _pod("l1", "3", 2, on="n2", group="low"),
        _pod("x", "1", 3, on="n1"),
        _pod("h0", "3", 5, group="hi", cls="high", prefer="n1"),
        _pod("h1", "3", 6, group="hi", cls="high", prefer="n1"),
    ]
    return _run(items, pods, wap=wap, metrics=metrics)


def test_a_gang_preempts_as_a_whole_under_the_gate() -> None:
    metrics = SchedulerMetrics()
    out = _gang_over_running_pods(metrics=metrics)
    assert out["l0"]["result"] == out["l1"]["result"] == "Preempted"
    # x (1 CPU) fits beside a 3-CPU member on n1: the rerun algorithm places both members
    # without evicting it.
    assert out["x"]["result"] == "Scheduled" and out["x"]["node"] == "n1"
    assert out["h0"]["result"] == out["h1"]["result"] == "Scheduled"
    assert {out["h0"]["node"], out["h1"]["node"]} == {"n1", "n2"}
    assert out["h0"]["attempts"] == out["h1"]["attempts"] == 2
    # v1.36 observes the victims, counts no attempt of its own
    s = metrics.samples()
    assert s[("scheduler_preemption_victims_count", ())] == 1
    assert s[("scheduler_preemption_victims_sum", ())] == 2
    assert s.get(("scheduler_workload_preemption_victims_sum", ()), 0) == 0


def test_without_the_gate_each_member_preempts_for_itself_and_the_group_waits() -> None:
    """Upstream runs a member's PostFilter in the group's cycle: DefaultPreemption evicts
    for the member alone (the victims at their own priority, one node each), the member is
    assumed on its nominated node for the next one, and the group, feasible so, waits on
    the preemption; both members are scheduled on the next cycle.  That cycle follows at
    once (the group popped from backoffQ), before the members' nominations are heard on
    their Pods (``Failures.unheard``), so each is searched without its nominated node
    first: the nominations held for the other member send h0 to n2 (kube-oracle v1.36.3:
    3 of 4 asks; h0 on n1 in the fourth)."""
    out = _gang_over_running_pods(wap=False)
    assert out["l0"]["result"] == out["l1"]["result"] == "Preempted"
    assert {out["l0"]["message"], out["l1"]["message"]} == {
        "Preempted by ns/h0 on node n1",
        "Preempted by ns/h1 on node n2",
    }
    assert out["x"]["result"] == "Scheduled" and out["x"]["node"] == "n1"
    assert (out["h0"]["node"], out["h1"]["node"]) == ("n2", "n1")
    assert out["h0"]["attempts"] == out["h1"]["attempts"] == 2


def test_without_the_gate_a_member_that_cannot_preempt_says_why() -> None:
    items = [_node("n1", "2"), _group("hi", 2, "high")]
    pods = [
        _pod("h0", "3", 1, group="hi", cls="high", never=True),
        _pod("h1", "3", 2, group="hi", cls="high", never=True),
    ]
    out = _run(items, pods, wap=False)
    msg = out["h0"]["message"]
    assert msg.endswith("preemption: not eligible due to preemptionPolicy=Never.")
    assert "Insufficient cpu" in msg


def test_a_failed_member_is_retried_after_its_backoff_alone() -> None:
    """v1.36 requeues a failed member after its backoff whatever happened (no event is
    needed), never into the unschedulable pool: the members are tried again and again until
    the run settles."""
    items = [_node("n1", "2"), _group("hi", 2, "high")]
    pods = [
        _pod("h0", "3", 1, group="hi", cls="high", never=True),
        _pod("h1", "3", 2, group="hi", cls="high", never=True),
    ]
    out = _run(items, pods, wap=False)
    assert out["h0"]["result"] == out["h1"]["result"] == "Unschedulable"
    assert out["h0"]["attempts"] > 1 and out["h1"]["attempts"] > 1


def test_retries_that_repeat_settle_the_run_after_three() -> None:
    """A high-priority group whose quorum is met but a member does not fit is retried at
    once, without backoff, for ever (v1.36); a low-priority gang that cannot fit is retried
    each time its backoff ends.  The run ends once each ready member has been retried three
    times with nothing changed at the API server (``SPIN_RETRIES``; kube-oracle counts such
    a member settled once rejected after the last release): with twenty it ran for twenty
    virtual seconds, ~40,000 cycles of the spinning group (seed 4 case 3: over a minute of
    CPU)."""
    items = [_node("n1", "2"), _group("a", 1, "high"), _group("b", 2, "low")]
    pods = [
        _pod("a0", "1", 1, group="a", cls="high", never=True),
        _pod("a1", "3", 2, group="a", cls="high", never=True),
        _pod("b0", "3", 3, group="b", cls="low", never=True),
        _pod("b1", "3", 4, group="b", cls="low", never=True),
    ]
    out = _schedule(items, pods, wap=False, gates=None, metrics=None)
    got = {k: (v["result"], v["node"]) for k, v in out["pods"].items()}
    assert got == {
        "a0": ("Scheduled", "n1"),
        "a1": ("Unschedulable", None),
        "b0": ("Unschedulable", None),
        "b1": ("Unschedulable", None),
    }
    assert out["pods"]["a1"]["attempts"] >= 200  # spinning
    assert 3 < out["pods"]["b0"]["attempts"] <= 10
    assert out["summary"]["virtualSeconds"] < 5


def test_a_member_that_fits_nowhere_says_its_group_preempts_for_it() -> None:
    items = [_node("n1", "2"), _group("hi", 2, "high")]
    pods = [_pod("h0", "3", 1, group="hi", cls="high"), _pod("h1", "3", 2, group="hi", cls="high")]
    out = _run(items, pods)
    msg = out["h0"]["message"]
    assert msg.endswith("preemption: not eligible due to workload aware preemption enabled")
    assert "Insufficient cpu" in msg


def _disruption(mode: str | None, p_class: str = "low") -> dict[str, dict[str, Any]]:
    """A running low-priority gang with a 3-CPU Pod on n1 and a 1-CPU Pod on n2, a lone
    3-CPU Pod on n2 (of ``p_class``); a high-priority member of 3 CPU preferring n1."""
    items = [_node("n1", "4"), _node("n2", "4"), _group("low", 1, "low", mode)]
    items.append(_group("hi", 1, "high"))
    pods = [
        _pod("l0", "3", 1, on="n1", group="low"),
        _pod("l1", "1", 2, on="n2", group="low"),
        _pod("p", "3", 3, on="n2", cls=p_class),
        _pod("h0", "3", 5, group="hi", cls="high", prefer="n1"),
    ]
    return _run(items, pods)


def test_every_reprieve_reruns_the_whole_algorithm() -> None:
    out = _disruption("PodGroup")
    # The gang (one unit, more important than the lone p) is given back first and the
    # rerun algorithm moves h0 to n2 (v1.37 would only check h0 on n1, where it was placed,
    # and evict the gang): p goes, the gang stays.
    assert out["p"]["result"] == "Preempted"
    assert out["l0"]["result"] == out["l1"]["result"] == "Scheduled"
    assert out["h0"]["node"] == "n2"


def test_disruption_mode_pod_group_evicts_the_whole_running_group() -> None:
    out = _disruption("PodGroup", p_class="high")  # p is no victim
    assert out["l0"]["result"] == out["l1"]["result"] == "Preempted"
    assert out["p"]["result"] == "Scheduled"
    assert out["h0"]["node"] == "n1"


def test_disruption_mode_pod_evicts_only_the_pod_in_the_way() -> None:
    for mode in ("Pod", None):
        out = _disruption(mode, p_class="high")
        assert out["l0"]["result"] == "Preempted"
        assert out["l1"]["result"] == out["p"]["result"] == "Scheduled"
        assert out["h0"]["node"] == "n1"


def test_a_never_member_stops_the_group_and_says_so_on_its_status() -> None:
    items = [_node("n1", "4"), _group("low", 1, "low"), _group("hi", 2, "high")]
    pods = [
        _pod("l0", "3", 1, on="n1", group="low"),
        _pod("h0", "1", 5, group="hi", cls="high"),
        _pod("h1", "3", 6, group="hi", cls="high", never=True),
    ]
    out = _run(items, pods)
    assert out["l0"]["result"] == "Scheduled"
    assert out["h0"]["result"] == out["h1"]["result"] == "Unschedulable"
    # the answer appended to the group's status as it is (no "pod group preemption: ")
    said = "pod group is unschedulable, not eligible due to preemptionPolicy=Never."
    assert _condition(items, pods, "hi") == said


def test_no_lower_priority_victim_is_appended_to_the_groups_status() -> None:
    items = [_node("n1", "4"), _group("peer", 1, "high"), _group("hi", 2, "high")]
    pods = [
        _pod("busy", "3", 1, on="n1", group="peer", cls="high"),
        _pod("h0", "1", 5, group="hi", cls="high"),
        _pod("h1", "2", 6, group="hi", cls="high"),
    ]
    said = "pod group is unschedulable, No preemption victims found for incoming preemptor"
    assert _condition(items, pods, "hi") == said


def test_a_topology_constrained_group_does_not_preempt() -> None:
    items = [_node("n1", "4"), _group("low", 1, "low"), _group("hi", 1, "high", rack=True)]
    pods = [
        _pod("l0", "3", 1, on="n1", group="low"),
        _pod("h0", "3", 5, group="hi", cls="high"),
    ]
    gates = {"TopologyAwareWorkloadScheduling": True}
    report = _schedule(items, pods, wap=True, gates=gates, metrics=None)
    out = report["pods"]
    assert out["l0"]["result"] == "Scheduled"
    said = report["podGroups"]["ns/hi"]["condition"]["message"]
    assert said.endswith(
        ", workload aware preemption is not supported for pod groups with scheduling constraints"
    )
    assert out["h0"]["result"] == "Unschedulable"
    # the member's own PostFilter: the placement limitation comes first
    assert out["h0"]["message"].endswith(
        "preemption: not eligible due to placement-based pod group scheduling limitation"
    )


def test_a_stored_constrained_group_does_not_preempt_with_topology_scheduling_off() -> None:
    # The snapshot's PodGroup keeps its stored topology constraint although the gate that
    # would drop it on create is off, and v1.36 reads it without asking the gate (seed 2
    # cases 41 and 44 of the podgroup schedules).
    items = [_node("n1", "4"), _group("low", 1, "low"), _group("hi", 1, "high", rack=True)]
    pods = [
        _pod("l0", "3", 1, on="n1", group="low"),
        _pod("h0", "3", 5, group="hi", cls="high"),
    ]
    report = _schedule(items, pods, wap=True, gates=None, metrics=None)
    out = report["pods"]
    assert out["l0"]["result"] == "Scheduled"
    assert out["h0"]["result"] == "Unschedulable"
    said = report["podGroups"]["ns/hi"]["condition"]["message"]
    assert said.endswith(
        ", workload aware preemption is not supported for pod groups with scheduling constraints"
    )


def test_a_constrained_group_created_with_topology_scheduling_off_preempts() -> None:
    # Created during the run, the PodGroup loses the constraint (dropDisabledPodGroupSpecFields).
    items = [_node("n1", "4"), _group("low", 1, "low")]
    created = _group("hi", 1, "high", rack=True)
    created["metadata"]["creationTimestamp"] = "2026-01-01T00:00:04Z"
    pods = [
        _pod("l0", "3", 1, on="n1", group="low"),
        created,
        _pod("h0", "3", 5, group="hi", cls="high"),
    ]
    out = _run(items, pods)
    assert out["l0"]["result"] == "Preempted"
    assert out["h0"]["result"] == "Scheduled"


def _members_preempting_on_both_nodes(async_api: bool) -> dict[str, dict[str, Any]]:
    """Without GangScheduling, three 1-CPU members that prefer n1 each preempt for
    themselves: h0 and h1 evict the lowest-priority Pod on n2, h2 a Pod of n1; a Pod that
    may not preempt (``p``) has a short cycle of its own before the group's next."""
    mid = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": 10}
    mid["metadata"] = {"name": "mid"}
    items = [_node("n1", "2"), _node("n2", "2"), _group("hi", 1, "high"), mid]
    pods = [_pod("a", "1", 1, on="n1"), _pod("b", "1", 2, on="n1"), _pod("c", "2", 3, on="n2")]
    for p in pods[:2]:
        p["spec"]["priorityClassName"], p["spec"]["priority"] = "mid", 10
    pods += [_pod("p", "3", 4, never=True)]
    pods += [_pod(f"h{i}", "1", 5 + i, group="hi", cls="high", prefer="n1") for i in range(3)]
    gates = {"GangScheduling": False, "SchedulerAsyncAPICalls": async_api}
    return _run(items, pods, wap=False, gates=gates)


def test_members_nominations_are_heard_after_a_short_cycle_without_async_api_calls() -> None:
    """The failure handler patches each member's status itself: the group's next cycle
    finds them nominated, and each returns to its node (kube-oracle v1.36.3: 4 of 4)."""
    out = _members_preempting_on_both_nodes(async_api=False)
    assert out["a"]["result"] == out["c"]["result"] == "Preempted"
    assert [out[f"h{i}"]["node"] for i in range(3)] == ["n2", "n2", "n1"]


def test_with_async_api_calls_a_short_cycle_does_not_hear_the_members_nominations() -> None:
    """The API dispatcher patches later; ``p``'s cycle (no eviction, well under a
    millisecond) is too short for the update to come, so the group's next cycle searches
    its members afresh: h0 takes n1, which it prefers (kube-oracle v1.36.3: 2 of 3 asks,
    the third h1 on n1; the nominated nodes, h2 on n1, in none)."""
    out = _members_preempting_on_both_nodes(async_api=True)
    assert out["a"]["result"] == out["c"]["result"] == "Preempted"
    assert [out[f"h{i}"]["node"] for i in range(3)] == ["n1", "n2", "n2"]


def _victim_heard_by_the_next_pod(async_api: bool) -> dict[str, dict[str, Any]]:
    """``p`` (high) preempts ``v`` on the only node; ``q`` (low, never preempts) is popped
    next and cannot fit beside ``p``'s nomination either way."""
    items = [_node("n1", "2"), _group("hi", 1, "high")]
    pods = [
        _pod("v", "2", 1, on="n1"),
        _pod("p", "2", 2, cls="high"),
        _pod("q", "1", 3, never=True),
    ]
    return _run(items, pods, wap=False, gates={"SchedulerAsyncAPICalls": async_api})


def test_with_async_api_calls_a_victims_delete_is_heard_during_the_next_pods_cycle() -> None:
    """The failure handler hands ``p``'s status patch to the API dispatcher and returns, so
    ``q`` is popped before the informer delivers ``v``'s delete: ``q`` fails on the view
    that still holds ``v``, the event finds it in flight and it goes to backoffQ, not the
    pool, and is tried a second time (kube-oracle v1.36.3: 2 attempts in 3 of 4 asks)."""
    out = _victim_heard_by_the_next_pod(async_api=True)
    assert (out["p"]["result"], out["p"]["node"]) == ("Scheduled", "n1")
    assert out["v"]["result"] == "Preempted"
    assert (out["q"]["result"], out["q"]["attempts"]) == ("Unschedulable", 2)


def test_without_async_api_calls_a_victims_delete_is_heard_before_the_next_pop() -> None:
    """The failure handler patches ``p``'s status itself, long enough for the informer:
    ``q`` sees ``v`` gone, fails on ``p``'s nomination and stays pooled (kube-oracle
    v1.36.3: 1 attempt in 3 of 4 asks)."""
    out = _victim_heard_by_the_next_pod(async_api=False)
    assert (out["q"]["result"], out["q"]["attempts"]) == ("Unschedulable", 1)
