"""Composite PodGroup trees (v1.37, gate CompositePodGroup) scheduled as upstream v1.37.2's
``schedule_one_podgroup.go`` does: the root CompositePodGroup's ``minGroupCount`` over its
children, a failed parent failing its feasible children, the tree's quorum at PreEnqueue,
the root's priority for every member, a CompositePodGroup's topology constraint
(its children tried inside each of its placements)
(:mod:`kubesched.scheduler.podgroup_tree`, ``docs/workload-api.md``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import kubesched
from tests import _podgroup

GATES = {
    "GenericWorkload": True,
    "TopologyAwareWorkloadScheduling": True,
    "CompositePodGroup": True,
}
TREE_ROOT_FAILED = (
    "pod group is unschedulable, 0/1 placements are available, first placement status: "
    "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"
)


def node(name: str, cpu: str) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": res, "capacity": res},
    }


def composite(name: str, min_group_count: int, parent: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "workloadRef": {"workloadName": "w", "templateName": name},
        "schedulingPolicy": {"gang": {"minGroupCount": min_group_count}},
    }
    if parent is not None:
        spec["parentCompositePodGroupName"] = parent
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
    }


def leaf(name: str, min_count: int, parent: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "workloadRef": {"workloadName": "w", "templateName": name},
        "schedulingPolicy": {"gang": {"minCount": min_count}},
    }
    if parent is not None:
        spec["parentCompositePodGroupName"] = parent
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
    }


def member(name: str, group: str, cpu: str, **spec: Any) -> dict[str, Any]:
    """:func:`tests._podgroup.member` that never preempts, with ``spec`` fields added."""
    pod = _podgroup.member(name, group, cpu)
    pod["spec"].update(preemptionPolicy="Never", **spec)
    return pod


def _schedule(
    items: list[dict[str, Any]], pods: list[dict[str, Any]], gates: dict[str, bool] = GATES
) -> dict[str, dict[str, Any]]:
    cluster = {"apiVersion": "v1", "kind": "List", "items": copy.deepcopy(items)}
    out = kubesched.schedule(
        cluster, copy.deepcopy(pods), None, kubernetes_version="1.37", feature_gates=gates
    )
    pods_out: dict[str, dict[str, Any]] = out["pods"]
    return pods_out


def _two_leaves(min_group_count: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Leaf ``a`` (2 members of 1 CPU) fits on the 3-CPU node, leaf ``b`` (2 of 2 CPU) does
    not fit beside it."""
    items = [
        node("n0", "3"),
        composite("root", min_group_count),
        leaf("a", 2, "root"),
        leaf("b", 2, "root"),
    ]
    pods = [
        member("a-0", "a", "1"),
        member("a-1", "a", "1"),
        member("b-0", "b", "2"),
        member("b-1", "b", "2"),
    ]
    return items, pods


def test_a_tree_short_of_min_group_count_binds_none_of_its_feasible_children() -> None:
    items, pods = _two_leaves(2)
    out = _schedule(items, pods)
    assert {k: v["result"] for k, v in out.items()} == dict.fromkeys(
        ("ns/a-0", "ns/a-1", "ns/b-0", "ns/b-1"), "Unschedulable"
    )
    # a was feasible: its members fail with the root's status, not their own
    assert out["ns/a-0"]["message"] == TREE_ROOT_FAILED
    assert out["ns/a-1"]["message"] == TREE_ROOT_FAILED
    # without the tree (the gate off drops the parent field) a stands alone and binds
    alone = _schedule(items, pods, {**GATES, "CompositePodGroup": False})
    assert [alone[f"ns/a-{i}"]["node"] for i in range(2)] == ["n0", "n0"]


def test_a_tree_that_meets_min_group_count_binds_its_feasible_children() -> None:
    items, pods = _two_leaves(1)
    out = _schedule(items, pods)
    assert [out[f"ns/a-{i}"]["node"] for i in range(2)] == ["n0", "n0"]
    assert [out[f"ns/b-{i}"]["result"] for i in range(2)] == ["Unschedulable"] * 2


def test_a_middle_group_that_fails_fails_its_feasible_leaf() -> None:
    # root (1 of 2) -> direct leaf d (fits) and mid (2 of 2) -> a (fits), b (does not)
    items = [
        node("n0", "4"),
        composite("root", 1),
        composite("mid", 2, "root"),
        leaf("a", 1, "mid"),
        leaf("b", 1, "mid"),
        leaf("d", 1, "root"),
    ]
    pods = [member("a-0", "a", "1"), member("b-0", "b", "8"), member("d-0", "d", "1")]
    out = _schedule(items, pods)
    assert out["ns/d-0"]["node"] == "n0"
    assert out["ns/a-0"]["result"] == "Unschedulable"
    assert out["ns/a-0"]["message"] == (
        "pod group is unschedulable, 0/1 placements are available, first placement status: "
        "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"
    )


def test_members_wait_for_the_whole_tree_at_pre_enqueue() -> None:
    items, pods = _two_leaves(2)
    out = _schedule(items, pods[:2])  # b has no member: the root cannot count 2 children
    for key in ("ns/a-0", "ns/a-1"):
        assert out[key]["result"] == "Gated"
        assert out[key]["message"] == 'waiting for composite pod group "root" tree to meet quorum'


def test_every_member_must_carry_the_roots_priority() -> None:
    items, pods = _two_leaves(1)
    mid = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "mid"},
        "value": 100,
    }
    pods[0]["spec"].update(priorityClassName="mid", priority=100)
    out = _schedule([*items, mid], pods)
    assert out["ns/a-1"]["result"] == "Error"
    assert out["ns/a-1"]["message"] == (
        "all pods in a single pod group should have the same priority as the pod group's "
        "priority, got 100 and 0"
    )


RACK = "example.com/rack"
ZONE = "topology.kubernetes.io/zone"


def racked(name: str, cpu: str, rack: str, zone: str | None = None) -> dict[str, Any]:
    """:func:`node` in ``rack`` (and ``zone``)."""
    out = node(name, cpu)
    out["metadata"]["labels"][RACK] = rack
    if zone is not None:
        out["metadata"]["labels"][ZONE] = zone
    return out


def constrained(obj: dict[str, Any], key: str = RACK) -> dict[str, Any]:
    """``obj`` (a CompositePodGroup or PodGroup) with a topology constraint on ``key``."""
    obj["spec"]["schedulingConstraints"] = {"topology": [{"key": key}]}
    return obj


def _nodes(out: dict[str, dict[str, Any]], *keys: str) -> list[str | None]:
    return [out[f"ns/{k}"]["node"] for k in keys]


def test_a_constrained_root_places_its_whole_tree_in_one_rack() -> None:
    # a and b (one 2-CPU member each) both fit only in rack-b (two 2-CPU nodes); rack-a's
    # one node holds one of them, so the root (2 of 2) is feasible only there
    items = [
        racked("n0", "2", "rack-a"),
        racked("n1", "2", "rack-b"),
        racked("n2", "2", "rack-b"),
        constrained(composite("root", 2)),
        leaf("a", 1, "root"),
        leaf("b", 1, "root"),
    ]
    pods = [member("a-0", "a", "2"), member("b-0", "b", "2")]
    out = _schedule(items, pods)
    assert sorted(_nodes(out, "a-0", "b-0")) == ["n1", "n2"]  # type: ignore[type-var]


def test_a_constrained_root_infeasible_in_every_rack_reports_the_first() -> None:
    items = [
        racked("n0", "2", "rack-a"),
        racked("n1", "2", "rack-b"),
        constrained(composite("root", 2)),
        leaf("a", 1, "root"),
        leaf("b", 1, "root"),
    ]
    pods = [member("a-0", "a", "2"), member("b-0", "b", "2")]
    out = _schedule(items, pods)
    assert _nodes(out, "a-0", "b-0") == [None, None]
    # rack-a (the first in name order): a placed, b not, 2 of 2 missed
    assert out["ns/a-0"]["message"] == (
        "pod group is unschedulable, 0/2 placements are available, first placement status: "
        "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"
    )
    # no node with the label: no placement at all
    unlabelled = [node("n0", "8"), *items[2:]]
    out = _schedule(unlabelled, pods)
    assert out["ns/a-0"]["result"] == "Unschedulable"
    assert out["ns/a-0"]["message"] == "no feasible placements found"


def test_a_leafs_placements_are_generated_inside_its_parents() -> None:
    # the root by zone, its leaf a (2 of 2 members, 2 CPU each) by rack: rack-a spans both
    # zones, so inside either zone no rack holds both members -- unless zone-b's rack-b
    # has two nodes
    items = [
        racked("n0", "2", "rack-a", "zone-a"),
        racked("n1", "2", "rack-a", "zone-b"),
        racked("n2", "2", "rack-b", "zone-b"),
        constrained(composite("root", 1), ZONE),
        constrained(leaf("a", 2, "root")),
    ]
    pods = [member("a-0", "a", "2"), member("a-1", "a", "2")]
    out = _schedule(items, pods)
    assert _nodes(out, "a-0", "a-1") == [None, None]
    out = _schedule([*items, racked("n3", "2", "rack-b", "zone-b")], pods)
    assert sorted(_nodes(out, "a-0", "a-1")) == ["n2", "n3"]  # type: ignore[type-var]


def test_members_scheduled_under_a_constrained_group_pin_its_rack() -> None:
    # a-0 runs in rack-b; rack-a (one small node, filled by a-1 and b-0) would score
    # higher (MostAllocated over the placement), but the root is pinned to rack-b
    running = member("a-0", "a", "1", nodeName="n1")
    items = [
        racked("n0", "2", "rack-a"),
        racked("n1", "16", "rack-b"),
        constrained(composite("root", 2)),
        leaf("a", 1, "root"),
        leaf("b", 1, "root"),
        running,
    ]
    pods = [member("a-1", "a", "1"), member("b-0", "b", "1")]
    out = _schedule(items, pods)
    assert _nodes(out, "a-1", "b-0") == ["n1", "n1"]
    # not pinned (a-0 gone), rack-a's placement wins
    out = _schedule(items[:-1], pods)
    assert _nodes(out, "a-1", "b-0") == ["n0", "n0"]
    # members scheduled in two racks: the root's domain cannot be told, an Error
    split = [*items, member("b-1", "b", "1", nodeName="n0")]
    out = _schedule(split, pods)
    assert out["ns/a-1"]["result"] == "Error"
    assert "more than 1 domain found for pod group" in out["ns/a-1"]["message"]


def test_explain_decides_a_member_of_a_constrained_tree() -> None:
    items = [
        racked("n0", "2", "rack-a"),
        racked("n1", "2", "rack-b"),
        racked("n2", "2", "rack-b"),
        constrained(composite("root", 2)),
        leaf("a", 1, "root"),
        leaf("b", 1, "root"),
    ]
    pods = [member("a-0", "a", "2"), member("b-0", "b", "2")]
    cluster = {"apiVersion": "v1", "kind": "List", "items": [*items, pods[1]]}
    out = kubesched.explain(cluster, pods[0], kubernetes_version="1.37", feature_gates=GATES)
    assert out["result"] == "Scheduled"
    assert out["podGroup"]["tree"]["result"] == "Scheduled"
    assert out["podGroup"]["placements"]["ns/a-0"] in ("n1", "n2")
    assert out["podGroup"]["tree"]["placements"] == {"ns/root": "rack-b"}


def _stamped(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``objs`` created one second apart, in their order."""
    out = copy.deepcopy(objs)
    for i, obj in enumerate(out):
        obj["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{i:02d}Z"
    return out


def test_tree_objects_created_during_the_run_release_the_held_members() -> None:
    # a's members arrive first: their parent root is not observed yet, so they are held
    # (incompletePodGroupPods); the root's add releases every PodGroup under it, and the
    # tree is scheduled as one (1 of 2: a binds, b does not fit beside it)
    items, pods = _two_leaves(1)
    arrivals = _stamped([items[2], items[3], *pods, items[1]])
    out = _schedule(items[:1], arrivals)
    assert [out[f"ns/a-{i}"]["node"] for i in range(2)] == ["n0", "n0"]
    assert [out[f"ns/b-{i}"]["result"] for i in range(2)] == ["Unschedulable"] * 2
    # 2 of 2: the root's quorum is never met, nothing binds
    items, pods = _two_leaves(2)
    out = _schedule(items[:1], _stamped([items[2], items[3], *pods, items[1]]))
    assert {v["result"] for v in out.values()} == {"Unschedulable"}
    # the root never created: the members stay held
    out = _schedule(items[:1], _stamped([items[2], items[3], *pods]))
    assert {v["result"] for v in out.values()} == {"Gated"}
    assert out["ns/a-0"]["message"] == (
        "failed to build hierarchy snapshot: composite pod group object not found in state "
        "for compositepodgroup/ns/root"
    )


def _classy(obj: dict[str, Any], cls: str, value: int) -> dict[str, Any]:
    obj["spec"].update(priorityClassName=cls, priority=value)
    return obj


def _priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def _running(name: str, group: str | None, node_name: str, cpu: str) -> dict[str, Any]:
    pod = _classy(_podgroup.member(name, group or "-", cpu), "low", 10)
    if group is None:
        del pod["spec"]["schedulingGroup"]
    pod["spec"].update(nodeName=node_name, terminationGracePeriodSeconds=0)
    return pod


def test_a_tree_preempts_as_one_at_its_roots_priority() -> None:
    # the root's PodGroupPostFilter: the tree's algorithm rerun without the lower-priority
    # Pod, its members nominated, then bound once the victim is gone
    items = [
        node("n0", "3"),
        _priority_class("low", 10),
        _priority_class("high", 1000),
        _classy(composite("root", 1), "high", 1000),
        _classy(leaf("a", 2, "root"), "high", 1000),
        _running("low-0", None, "n0", "2"),
    ]
    pods = [_classy(_podgroup.member(f"a-{i}", "a", "1"), "high", 1000) for i in range(2)]
    out = _schedule(items, pods)
    assert [out[f"ns/a-{i}"]["node"] for i in range(2)] == ["n0", "n0"]
    assert out["ns/a-0"]["victims"] == ["ns/low-0"]
    # the root's preemptionPolicy Never (PodGroupPreemptionPolicy): nothing is preempted
    never = copy.deepcopy(items)
    never[3]["spec"]["preemptionPolicy"] = "Never"
    for pod in (never_pods := copy.deepcopy(pods)):
        pod["spec"]["preemptionPolicy"] = "Never"
    out = _schedule(never, never_pods, {**GATES, "PodGroupPreemptionPolicy": True})
    assert out["ns/a-0"]["result"] == "Unschedulable"
    assert out["ns/a-0"]["message"].endswith(
        "pod group preemption: not eligible due to preemptionPolicy=Never."
    )


@pytest.mark.parametrize(("mode", "victims"), [(None, 1), ("root", 2), ("a", 1)])
def test_a_tree_with_disruption_mode_all_is_one_victim(mode: str | None, victims: int) -> None:
    # an ordinary Pod needing n0 evicts a-0; with the root's disruptionMode all the whole
    # tree (b-0 on n1 too) goes as one CompositePodGroup unit, a leaf's covers only itself
    root = _classy(composite("root", 1), "low", 10)
    a = _classy(leaf("a", 1, "root"), "low", 10)
    b = _classy(leaf("b", 1, "root"), "low", 10)
    if mode is not None:
        (root if mode == "root" else a)["spec"]["disruptionMode"] = {"all": {}}
    items = [
        node("n0", "3"),
        node("n1", "3"),
        _priority_class("low", 10),
        _priority_class("high", 1000),
        root,
        a,
        b,
        _running("a-0", "a", "n0", "2"),
        _running("b-0", "b", "n1", "2"),
    ]
    hi = _classy(_podgroup.member("hi", "-", "2"), "high", 1000)
    del hi["spec"]["schedulingGroup"]
    hi["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n0"}
    out = _schedule(items, [hi])
    assert out["ns/hi"]["node"] == "n0"
    assert out["ns/hi"]["victims"] == ["ns/a-0", "ns/b-0"][:victims]


def test_explain_decides_a_member_with_its_whole_tree() -> None:
    # a fits alone (2 members on n0) but its root wants both children: a-0 fails with the
    # root's status, and podGroup says where a's members fit and what each group got
    items, pods = _two_leaves(2)
    cluster = {"apiVersion": "v1", "kind": "List", "items": [*items, *pods[1:]]}
    out = kubesched.explain(cluster, pods[0], kubernetes_version="1.37", feature_gates=GATES)
    assert out["result"] == "Unschedulable"
    assert out["message"] == TREE_ROOT_FAILED
    group = out["podGroup"]
    assert group["alone"]["result"] == "Scheduled"  # the framework for a-0 alone
    assert group["placements"] == {"ns/a-0": "n0", "ns/a-1": "n0"}
    tree = group["tree"]
    assert (tree["root"], tree["minGroupCount"], tree["result"]) == ("ns/root", 2, "Unschedulable")
    assert {k: (g["members"], g["placed"]) for k, g in tree["groups"].items()} == {
        "ns/a": (2, 2),
        "ns/b": (2, 0),
    }
    # 1 of 2 is enough: a-0 would bind where the tree's cycle puts it
    items, pods = _two_leaves(1)
    cluster = {"apiVersion": "v1", "kind": "List", "items": [*items, *pods[1:]]}
    out = kubesched.explain(cluster, pods[0], kubernetes_version="1.37", feature_gates=GATES)
    tree = out["podGroup"]["tree"]
    assert (out["result"], tree["result"]) == ("Scheduled", "Scheduled")
    assert tree["groups"]["ns/b"]["result"] == "Unschedulable"
