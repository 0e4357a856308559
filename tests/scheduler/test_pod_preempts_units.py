"""An ordinary Pod's preemption seeing PodGroup units (v1.37 under GenericWorkload:
``GetVictimsOnNode`` / DefaultPreemption's ``SelectVictimsOnNode``): a PodGroup member is a
victim at its PodGroup's priority, and a PodGroup with ``disruptionMode: all`` goes whole,
its members on other nodes too; without GenericWorkload (or before v1.37) every victim is a
Pod at its own priority.

Scenarios were checked against upstream v1.37.2's scheduler (``oracle/diff.py --family
podgroup --verb schedule`` draws these situations)."""

from __future__ import annotations

from typing import Any

from tests.scheduler.test_podgroup_preemption import _group, _node, _pod, _run


def _high_pod_over_group(mode: str | None, gates: dict[str, bool] | None = None) -> Any:
    """Two 4-CPU nodes, each running one 3-CPU member of a low-priority group; a 3-CPU
    high-priority Pod (no group) prefers n1."""
    items = [_node("n1", "4"), _node("n2", "4"), _group("low", 2, "low", mode)]
    pods = [
        _pod("l0", "3", 1, on="n1", group="low"),
        _pod("l1", "3", 2, on="n2", group="low"),
        _pod("p", "3", 5, cls="high", prefer="n1"),
    ]
    return _run(items, pods, gates)


def test_a_pod_preempting_a_disruption_mode_all_member_evicts_the_whole_group() -> None:
    out = _high_pod_over_group("all")
    assert out["p"]["result"] == "Scheduled"
    assert sorted(out["p"]["victims"]) == ["ns/l0", "ns/l1"]
    assert out["l0"]["result"] == out["l1"]["result"] == "Preempted"
    # a single-mode group, or GenericWorkload off: only the member in the way goes
    for mode, gates in (("single", None), ("all", {"GenericWorkload": False})):
        alone = _high_pod_over_group(mode, gates)
        assert alone["p"]["result"] == "Scheduled"
        assert len(alone["p"]["victims"]) == 1


def test_a_member_is_a_victim_at_its_pod_groups_priority() -> None:
    """A member whose own priority is low but whose PodGroup's is high is no victim."""
    items = [_node("n1", "4"), _group("hi", 1, "high")]
    member = _pod("m", "3", 1, on="n1", group="hi")  # own priority low (0)
    pods = [member, _pod("p", "3", 5, cls="high")]
    hi: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}
    hi |= {"metadata": {"name": "mid"}, "value": 500}
    pods[1]["spec"]["priorityClassName"], pods[1]["spec"]["priority"] = "mid", 500
    out = _run([*items, hi], pods)
    assert out["p"]["result"] != "Scheduled"
    assert out["m"]["result"] != "Preempted"
