"""The Workload API family (``oracle/podgroup_cases.py``, ``--family podgroup``): its cases
are what each release accepts, and kube-oracle's ``schedule`` settles a gang's fate (a gang
that cannot fill waits at Permit, then times out; a group created after its members; a
missing group) instead of running into its wall-clock limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from compare import ours, ours_schedule, schedule_differences
from podgroup_cases import HOST, RACK, check_version, podgroup_case, podgroup_schedule_case

from tests.oracle.conftest import later_release_oracle

RELEASES = ("1.35", "1.36", "1.37")


@pytest.mark.parametrize("version", RELEASES)
def test_every_case_is_accepted_by_its_release(version: str) -> None:
    """kubesched takes every drawn request at the release it is drawn for (no input error:
    each object in that release's shape, each gate one the release lets a user set)."""
    for i in range(40):
        sched = ours_schedule(podgroup_schedule_case(5, i, version), version)
        assert "error" not in sched, (i, sched.get("error"))
        explained = ours(podgroup_case(5, i, version), version)
        assert "error" not in explained, (i, explained.get("error"))


def test_the_family_needs_a_release_with_the_workload_api() -> None:
    with pytest.raises(ValueError, match=r"1\.35 or newer"):
        check_version("1.34")
    with pytest.raises(ValueError):
        check_version(None)


@pytest.mark.parametrize("version", RELEASES)
def test_cases_draw_each_shape(version: str) -> None:
    """Across 60 cases: groups created before, after and never; gang and basic policies;
    some minCount above the group's size; input order other than arrival order."""
    seen: set[str] = set()
    for i in range(60):
        req = podgroup_schedule_case(2, i, version)
        kinds = [o["kind"] for o in req["pods"]]
        cluster = [o["kind"] for o in req["cluster"]["items"]]
        if any(k != "Pod" for k in kinds):
            seen.add("after")
        if any(k in ("PodGroup", "Workload") for k in cluster):
            seen.add("before")
        stamps = [o["metadata"]["creationTimestamp"] for o in req["pods"]]
        if stamps != sorted(stamps):
            seen.add("shuffled")
        text = str(req)
        seen |= {w for w in ("basic", "gang") if f"'{w}'" in text}
    assert seen == {"after", "before", "shuffled", "basic", "gang"}


def test_running_pods_of_a_1_37_preemption_situation_start_at_distinct_times() -> None:
    """At v1.37 every running Pod of a preemption situation (bound in the submission or the
    cluster's own) has its own ``status.startTime``: upstream breaks a tie between candidate
    nodes on the victims' start, and without one a victim starts at the clock read once per
    node in a Go map's walk, so the node picked among tied ones was upstream's at random."""
    situations = 0
    for i in range(40):
        req = podgroup_schedule_case(1, i, "1.37")
        bound = [p for p in req["pods"] if p["kind"] == "Pod" and p["spec"].get("nodeName")]
        if not bound:
            continue
        situations += 1
        cluster = [o for o in req["cluster"]["items"] if o["kind"] == "Pod"]
        starts = [p.get("status", {}).get("startTime") for p in [*cluster, *bound]]
        assert None not in starts
        assert len(set(starts)) == len(starts)
    assert situations >= 10


def test_running_pods_of_a_1_36_per_pod_preemption_situation_start_at_distinct_times() -> None:
    """So at v1.36 without WorkloadAwarePreemption, where a member that fits nowhere preempts
    for itself through DefaultPreemption (seed 19601 case 24 answered otherwise at each ask
    before): every running Pod has a start of its own (each is a victim alone there, whatever
    its PodGroup's ``disruptionMode``: seed 20361 case 20's gang shared one)."""
    situations = 0
    for i in range(80):
        req = podgroup_schedule_case(19601, i, "1.36")
        bound = [p for p in req["pods"] if p["kind"] == "Pod" and p["spec"].get("nodeName")]
        if not bound or req.get("featureGates", {}).get("WorkloadAwarePreemption"):
            continue
        situations += 1
        cluster = [o for o in req["cluster"]["items"] if o["kind"] == "Pod"]
        starts = [p.get("status", {}).get("startTime") for p in [*cluster, *bound]]
        assert None not in starts
        assert len(set(starts)) == len(starts)
    assert situations >= 3


def _gang_request(min_count: int, members: int, created: str) -> dict[str, Any]:
    """``members`` Pods of 1 CPU in a v1.37 gang of ``min_count`` on one node of 2 CPUs; the
    PodGroup in the cluster (``before``), after the members (``after``) or absent."""
    api = "scheduling.k8s.io/v1beta1"
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-0", "labels": {"kubernetes.io/hostname": "node-0"}},
        "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}},
    }
    group = {
        "apiVersion": api,
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }
    pods: list[dict[str, Any]] = []
    for i in range(members):
        req = {"requests": {"cpu": "1"}}
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"m-{i}",
                    "namespace": "default",
                    "creationTimestamp": f"2026-01-01T03:00:0{i + 1}Z",
                },
                "spec": {
                    "containers": [{"name": "c", "image": "x", "resources": req}],
                    "schedulingGroup": {"podGroupName": "g"},
                },
            }
        )
    items: list[dict[str, Any]] = [node]
    if created == "before":
        items.append(group)
    elif created == "after":
        group["metadata"]["creationTimestamp"] = "2026-01-01T03:00:09Z"
        pods.append(group)
    return {
        "cluster": {"apiVersion": "v1", "kind": "List", "items": items},
        "pods": pods,
        "config": None,
        "featureGates": {"GenericWorkload": True},
    }


@pytest.fixture(scope="module")
def schedule_oracle_1_37() -> Iterator[Any]:
    yield from later_release_oracle("1.37", "schedule")


def test_upstream_settles_a_gang_that_cannot_fill(schedule_oracle_1_37: Any) -> None:
    """Three members of a gang of three, room for two: none binds (all-or-nothing), and the
    run ends (the wait at Permit ended as its timer would) with every member Unschedulable."""
    answer = schedule_oracle_1_37.ask(_gang_request(3, 3, "before"))
    assert "error" not in answer, answer
    results = {k: v["result"] for k, v in answer["pods"].items()}
    assert set(results.values()) == {"Unschedulable"}, answer


def test_upstream_retries_a_group_whose_own_preemption_made_room(schedule_oracle_1_37: Any) -> None:
    """Seed 18002 case 30: group-1 preempts a gang, a higher-priority group takes the room,
    and group-1's second attempt preempts again (a running Pod), keeping its nomination.
    The victims are gone before that attempt's rejection, so the run must not settle on it:
    the retry after its backoff binds the member (as kubesched answers)."""
    req = podgroup_schedule_case(18002, 30, "1.37")
    answer = schedule_oracle_1_37.ask(req)
    assert "error" not in answer, answer
    member = answer["pods"]["default/group-1-0"]
    assert (member["result"], member["node"]) == ("Scheduled", "node-0"), member
    mine = ours_schedule(req, "1.37")["pods"]["default/group-1-0"]
    assert (mine["result"], mine["node"]) == ("Scheduled", "node-0"), mine


def test_upstream_schedules_a_gang_whose_group_comes_after_its_members(
    schedule_oracle_1_37: Any,
) -> None:
    answer = schedule_oracle_1_37.ask(_gang_request(2, 2, "after"))
    assert {v["result"] for v in answer["pods"].values()} == {"Scheduled"}, answer


def test_upstream_gates_members_of_a_missing_group(schedule_oracle_1_37: Any) -> None:
    """No PodGroup: GangScheduling's PreEnqueue keeps each member out of activeQ, which
    kube-oracle reports as Gated with the plugin's message."""
    answer = schedule_oracle_1_37.ask(_gang_request(2, 2, "never"))
    assert {v["result"] for v in answer["pods"].values()} == {"Gated"}, answer
    messages = {v["message"] for v in answer["pods"].values()}
    assert messages == {'waiting for pods\'s pod group "g" to appear in scheduling queue'}


def test_the_composite_gate_is_drawn_at_1_37_with_composite_trees_kubesched_takes() -> None:
    """CompositePodGroup (v1.37) is drawn on only beside its dependencies; most cases with it
    hold a composite tree (a root, at times a middle group), in the schedule and the explain
    form alike, every one of which kubesched takes rather than refuses: trees whose members
    may preempt, running trees among the victims, CompositePodGroups created during the
    run, CompositePodGroups with a topology constraint (rack or zone)."""
    trees = depth2 = explained = preempting = late = running = 0
    constrained: dict[str, set[str]] = {"schedule": set(), "explain": set()}
    for i in range(60):
        for req in (podgroup_schedule_case(4, i, "1.37"), podgroup_case(4, i, "1.37")):
            gates = req.get("featureGates", {})
            if gates.get("CompositePodGroup"):
                assert gates["GenericWorkload"] and gates["TopologyAwareWorkloadScheduling"]
            kinds = [o["kind"] for o in req["cluster"]["items"]]
            submitted = [o["kind"] for o in req.get("pods", [])]
            if "CompositePodGroup" not in kinds + submitted:
                assert "parentCompositePodGroupName" not in str(req)
                continue
            trees += 1
            depth2 += (kinds + submitted).count("CompositePodGroup") >= 2
            form = "explain" if "pod" in req else "schedule"
            keys = {
                c["key"]
                for o in [*req["cluster"]["items"], *req.get("pods", [])]
                if o["kind"] == "CompositePodGroup"
                for c in o["spec"].get("schedulingConstraints", {}).get("topology", [])
            }
            if keys and not constrained[form]:  # the first one of each form is taken
                answer = ours(req, "1.37") if form == "explain" else ours_schedule(req, "1.37")
                assert "error" not in answer
            constrained[form] |= keys
            if "pod" in req:
                explained += 1
                if explained <= 2:
                    assert "error" not in ours(req, "1.37")
                continue
            late += "CompositePodGroup" in submitted
            running += "running-tree" in str(req["cluster"])
            pods = [p for p in req["pods"] if p["kind"] == "Pod" and not p["spec"].get("nodeName")]
            preempting += any(p["spec"].get("preemptionPolicy") != "Never" for p in pods)
            if trees <= 3:
                assert "error" not in ours_schedule(req, "1.37")
    assert trees >= 5 and depth2 >= 1 and explained >= 1
    assert preempting >= 1 and late >= 1 and running >= 1
    zone = "topology.kubernetes.io/zone"
    assert constrained == {"schedule": {RACK, zone}, "explain": {RACK, zone}}
    assert not any(
        "CompositePodGroup" in podgroup_schedule_case(4, i, "1.36").get("featureGates", {})
        for i in range(30)
    )


def test_upstream_and_kubesched_hold_a_member_the_same_way_under_the_composite_gate(
    schedule_oracle_1_37: Any,
) -> None:
    """With CompositePodGroup on, a member of a missing PodGroup is held by the hierarchy
    read's error; kubesched's answer is upstream's, Pod by Pod."""
    req = _gang_request(2, 2, "never")
    req["featureGates"] = {
        "GenericWorkload": True,
        "TopologyAwareWorkloadScheduling": True,
        "CompositePodGroup": True,
    }
    theirs = schedule_oracle_1_37.ask(req)
    mine = ours_schedule(req, "1.37")
    assert {k: (v["result"], v["message"]) for k, v in theirs["pods"].items()} == {
        k: (v["result"], v["message"]) for k, v in mine["pods"].items()
    }


def _levels(objs: list[dict[str, Any]]) -> int:
    """The levels of the deepest PodGroup under its CompositePodGroups (1: no parent)."""
    parent = {o["metadata"]["name"]: o["spec"].get("parentCompositePodGroupName") for o in objs}
    deepest = 0
    for name in parent:
        levels, at = 0, name
        while at is not None and levels <= len(parent):
            at, levels = parent.get(at), levels + 1
        deepest = max(deepest, levels)
    return deepest


def test_schedule_cases_are_widened_outside_preemption_situations() -> None:
    """Across 150 v1.37 schedule cases (``podgroup_cases._widen``): members already running
    in the cluster, some meeting their gang's ``minCount`` before a submitted member is
    scheduled; constraints on the hostname and zone labels beside the rack; a PodGroup
    under three levels of CompositePodGroups; a toleration among a group's members; none
    of it in a preemption situation (submitted bound Pods); kubesched takes the first
    widened cases."""
    seen: set[str] = set()
    taken = 0
    for i in range(150):
        req = podgroup_schedule_case(2137, i, "1.37")
        items, pods = req["cluster"]["items"], req["pods"]
        groups = [o for o in [*items, *pods] if o["kind"] in ("PodGroup", "CompositePodGroup")]
        running = [p for p in items if p["kind"] == "Pod" and "schedulingGroup" in p["spec"]]
        keys = {
            c["key"]
            for o in groups
            for c in o["spec"].get("schedulingConstraints", {}).get("topology", [])
        }
        tolerated = any(p["spec"].get("tolerations") for p in pods if p["kind"] == "Pod")
        widened = running or tolerated or "tree-n1" in str(groups) or HOST in keys
        if any(p["kind"] == "Pod" and p["spec"].get("nodeName") for p in pods):
            assert not widened, i
            continue
        seen |= keys
        seen |= {"tolerated"} if tolerated else set()
        seen |= {"three CompositePodGroup levels"} if _levels(groups) >= 4 else set()
        for g in groups:
            gang = g["spec"]["schedulingPolicy"].get("gang", {})
            mine = [
                p
                for p in running
                if p["spec"]["schedulingGroup"]["podGroupName"] == g["metadata"]["name"]
            ]
            if mine:
                seen.add("running members")
                if "minCount" in gang and len(mine) >= gang["minCount"]:
                    seen.add("minCount met by running members")
        if widened and taken < 3:
            taken += 1
            assert "error" not in ours_schedule(req, "1.37")
    zone = "topology.kubernetes.io/zone"
    assert seen >= {
        RACK,
        zone,
        HOST,
        "tolerated",
        "three CompositePodGroup levels",
        "running members",
        "minCount met by running members",
    }, seen


def test_running_pods_of_a_1_36_workload_aware_preemption_situation_start_at_distinct_times() -> (
    None
):
    """So under v1.36's WorkloadAwarePreemption, the cluster's own running Pods too (before,
    only the submitted ones had starts: seed 20361's cases 23, 135, 137 and 170 had victims
    starting "now"); the members of a ``disruptionMode: PodGroup`` gang share their gang's."""
    situations = 0
    for i in range(200):
        req = podgroup_schedule_case(20361, i, "1.36")
        bound = [p for p in req["pods"] if p["kind"] == "Pod" and p["spec"].get("nodeName")]
        if not bound or not req.get("featureGates", {}).get("WorkloadAwarePreemption"):
            continue
        cluster = [o for o in req["cluster"]["items"] if o["kind"] == "Pod"]
        if not cluster:
            continue
        situations += 1
        starts = [p.get("status", {}).get("startTime") for p in cluster]
        assert None not in starts
        assert len(set(starts)) == len(starts)
        assert max(starts) < min(p["status"]["startTime"] for p in bound)
    assert situations >= 10


@pytest.fixture(scope="module")
def schedule_oracle_1_36() -> Iterator[Any]:
    yield from later_release_oracle("1.36", "schedule")


def test_upstream_drops_a_late_pod_groups_constraint_its_gate_disables(
    schedule_oracle_1_36: Any,
) -> None:
    """Seed 20361 case 137 (v1.36, WorkloadAwarePreemption on, TopologyAwareWorkloadScheduling
    off): PodGroup ``group-0``, created after its first member, names a rack constraint.  The
    API server drops it on create (its gate is off), so the group preempts as a whole and
    binds, as kubesched answers; kube-oracle's fake clientset stored it, and v1.36's
    ``runWorkloadAwarePreemption`` refused the constrained group at every attempt."""
    req = podgroup_schedule_case(20361, 137, "1.36")
    late = [
        o for o in req["pods"] if o["kind"] == "PodGroup" and o["metadata"]["name"] == "group-0"
    ]
    assert late and late[0]["spec"].get("schedulingConstraints")
    assert not req["featureGates"]["TopologyAwareWorkloadScheduling"]
    answer = schedule_oracle_1_36.ask(req)
    assert "error" not in answer, answer
    for m in ("group-0-0", "group-0-1", "group-0-2"):
        assert answer["pods"][f"default/{m}"]["result"] == "Scheduled", answer["pods"]
    assert answer["pods"]["default/victim-0"]["result"] == "Preempted", answer["pods"]
    mine = ours_schedule(req, "1.36")
    assert schedule_differences(mine, answer) == []


def test_placement_score_weights_are_drawn_under_topology_aware_scheduling_only() -> None:
    """``podgroup_cases._placement_weights``: across 120 v1.37 schedule cases, some under
    TopologyAwareWorkloadScheduling weigh PodGroupPodsCount and NodeResourcesFit by
    multiPoint and Fit's scoring-strategy resources; none without the gate; kubesched
    takes such a profile."""
    seen: set[str] = set()
    taken = 0
    for i in range(120):
        req = podgroup_schedule_case(2137, i, "1.37")
        profile = req["config"]["profiles"][0]
        multi = {p["name"] for p in profile["plugins"].get("multiPoint", {}).get("enabled", [])}
        args = profile.get("pluginConfig", [])
        if not (multi or args):
            continue
        assert req["featureGates"].get("TopologyAwareWorkloadScheduling"), i
        seen |= multi
        seen |= {"resources"} if args else set()
        if taken < 2:
            taken += 1
            assert "error" not in ours_schedule(req, "1.37")
    assert seen >= {"PodGroupPodsCount", "NodeResourcesFit", "resources"}, seen


@pytest.fixture(scope="module")
def schedule_oracle_1_35() -> Iterator[Any]:
    yield from later_release_oracle("1.35", "schedule")


def test_upstream_ends_the_second_permit_round_of_gangs_that_began_to_wait_again(
    schedule_oracle_1_35: Any,
) -> None:
    """Seed 24352 case 134 (v1.35, SchedulerAsyncAPICalls on): after the first Permit round
    (every wait ended at its gang's deadline) ``group-0`` and ``group-2`` wait again, one of
    them for the first time since the other's wait was ended.  Upstream gives both a new
    deadline five minutes after they began to wait again (``SchedulingTimeout`` on the wall
    clock); kube-oracle once counted the gang waiting again five minutes more, so the two
    ends fell minutes apart in wall time and the run was refused (``the Permit waits end
    ... past the run's timeout``: 3 of 4 asks in session 25).  Now both rounds end and the
    run answers: asked four times, as the refusal came with the run's pace.  Whether the
    second round happens at all depends on upstream's own pace (under CI's load one ask
    answered with every gang Unschedulable before it waited again), so every ask must answer
    and at least one must show the timeouts of the second round."""
    req = podgroup_schedule_case(24352, 134, "1.35")
    rounds = []
    for _ in range(4):
        answer = schedule_oracle_1_35.ask(req)
        assert "error" not in answer, answer
        rounds.append(
            [k for k, v in answer["pods"].items() if "rejected due to timeout" in v["message"]]
        )
    assert any(rounds), rounds
