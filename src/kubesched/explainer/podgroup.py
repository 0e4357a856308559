"""``explain`` for a member of a Workload API PodGroup: does its group fit, and where.

Upstream schedules such a Pod with its whole group (the PodGroup scheduling cycle, v1.36+;
:mod:`kubesched.scheduler.podgroup`), so why one Pod fits says little: the group is placed
all-or-nothing.  :func:`explain_group` runs that cycle's algorithm as a dry run on the
snapshot (nothing is committed), with the snapshot's pending members of the group, and
answers the ``"podGroup"`` part of ``explain``'s output::

    {"name": "ns/g", "policy": "gang", "minCount": 3,
     "members": 3,            # pending members in the snapshot (the explained Pod included)
     "scheduled": 0,          # members already bound in the snapshot
     "result": "Scheduled" | "Unschedulable" | "Gated" | "Error",
     "message": "...",        # the group's status as upstream's cycle words it
     "placements": {"ns/m0": "n1", "ns/m1": "n1", "ns/m2": null},
     "fitPerNode": {"n1": 2}, # how many members the cycle placed on each node
     "unplaced": {"ns/m2": "0/2 nodes are available: 2 Insufficient cpu."},
     "missing": "1 more member must fit (minCount 3: 2 placed, 0 left to try)",
     "alone": {"result": "Scheduled", "selectedNode": "n1", "message": "..."}}

``"alone"`` (only when the group's verdict replaced it) is what the framework says of the
explained Pod by itself, as a cycle for that one Pod would (upstream's framework run, which
the oracle's ``explain`` compares).

A member of a composite tree (v1.37, gate CompositePodGroup) is decided with its whole
tree (:meth:`kubesched.scheduler.podgroup_tree.TreeCycle.decide_tree`, every PodGroup
under the root with the snapshot's pending members): the fields above are its own
PodGroup's (its status as its members fail with it), and ``"tree"`` the tree's::

    "tree": {"root": "ns/root", "minGroupCount": 2, "result": "Unschedulable",
             "message": "pod group is unschedulable, 0/1 placements are available, ...",
             "groups": {"ns/a": {"result": ..., "message": ..., "members": 2, "placed": 2}},
             "placements": {"ns/root": "rack-b"},  # a constrained CompositePodGroup's domain
             "nominations": {"ns/a-0": "n1"}}   # when the tree would wait on a preemption

``"Gated"``: GangScheduling's PreEnqueue holds the members (the PodGroup is missing, or
fewer than ``minCount`` members exist), so no cycle would run; ``missing`` says what is
lacking.  The explained Pod's own ``result`` and ``message`` then say what the scheduler
would report for it (``pod group is unschedulable, ...`` for a member that fits alone in an
infeasible group).  v1.35 has no PodGroup cycle (members go one by one and wait at Permit),
so only the counts and the PreEnqueue verdict are given.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kubesched.api import objects as api
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework import podgroups
from kubesched.framework.interface import QueuedPodInfo, Status
from kubesched.framework.podgroups import COMPOSITE, TreeNode
from kubesched.framework.runtime import Framework
from kubesched.plugins.gangscheduling.plugin import WAITING_FOR_MIN_COUNT
from kubesched.scheduler import Diagnosis
from kubesched.scheduler.core import Scheduler
from kubesched.scheduler.options import SchedulerOptions
from kubesched.scheduler.podgroup_tree import TreeCycle
from kubesched.state.cache import ClusterState


def explain_group(
    cfg: KubeSchedulerConfiguration,
    cluster: ClusterState,
    pending: list[api.Pod],
    pod: api.Pod,
) -> tuple[dict[str, Any], Diagnosis | Status | None] | None:
    """The ``"podGroup"`` answer for ``pod`` and why the scheduler would fail ``pod`` (None:
    it would be bound), or None when ``pod`` is no Workload API group member under
    ``cfg``'s gates.  ``cluster`` is used for a dry run (left as it was)."""
    gates = cfg.feature_gates
    if not podgroups.enabled(gates):
        return None
    sched = Scheduler(
        cfg, clock=lambda: 0.0, cluster=cluster, options=SchedulerOptions(feature_gates=gates)
    )
    manager = sched.pod_group_manager
    cycle = sched.pod_group_cycle
    assert manager is not None and cycle is not None
    key = manager.group_key(pod)
    if key is None:
        return None
    root = manager.root(key) if manager.trees() else None
    tree = manager.tree(root) if root is not None and root.startswith(COMPOSITE) else None
    keys = {leaf.key for leaf in tree.leaves()} if tree is not None else {key}
    known = [p for p in pending if p.key != pod.key and manager.group_key(p) in keys]
    for p in (pod, *known):  # every pending member of the group (of the tree) counted
        manager.on_pod_add(p)
    members = [p for p in known if manager.group_key(p) == key]
    policy = manager.policy(key)
    state = manager.state(key)
    out: dict[str, Any] = {
        "name": key,
        "policy": None if policy is None else ("gang" if policy.gang else "basic"),
        "minCount": None if policy is None else policy.min_count,
        "members": len(members) + 1,
        "scheduled": state.scheduled_count(),
    }
    gate = next(
        (
            s
            for p in sched.profiles.values()
            if (s := p.run_pre_enqueue(pod)) and not s.is_success()
        ),
        None,
    )
    if gate is not None:
        out.update(result="Gated", message=gate.message())
        if gate.message() == WAITING_FOR_MIN_COUNT and policy is not None:
            lack = policy.min_count - state.all_count()
            out["missing"] = f"{lack} more member(s) must exist (minCount {policy.min_count})"
        elif tree is not None:
            out["missing"] = (
                f"members of more PodGroups under {tree.name!r}: each CompositePodGroup needs "
                "minGroupCount PodGroups with minCount members"
            )
        else:
            out["missing"] = "the group's object"
        return out, None
    if not cycle.handles(pod):  # v1.35: no PodGroup cycle
        out.update(result="Scheduled", message="members are scheduled one by one (v1.35)")
        return out, None
    fwk = sched.profiles.get(pod.scheduler_name)
    if fwk is None:
        return None
    if tree is not None and isinstance(cycle, TreeCycle):
        others = [p for p in known if p.key != pod.key]
        return _explain_tree(cycle, fwk, manager, tree, pod, others, out)
    queued = [
        QueuedPodInfo(p, timestamp=float(i), seq=i, attempts=1)
        for i, p in enumerate((pod, *members))
    ]
    ordered = cycle.order(queued)
    results, decided = cycle.decide(fwk, ordered, key)
    group = cycle.post_filter(fwk, key, ordered, decided, results)
    placements: dict[str, str | None] = {m.pod.key: None for m in ordered}
    unplaced: dict[str, str] = {}
    for res in results:
        if res.status.is_success():
            placements[res.qp.pod.key] = res.node
        else:
            unplaced[res.qp.pod.key] = (res.diagnosis or res.status).message()
    placed = sum(1 for n in placements.values() if n is not None)
    out.update(
        result="Scheduled" if group.is_success() else "Unschedulable",
        message=group.message() or f"{placed} of {len(ordered)} members fit",
        placements=placements,
        fitPerNode=dict(sorted(Counter(n for n in placements.values() if n).items())),
        unplaced=unplaced,
    )
    if group.code.name == "ERROR":
        out["result"] = "Error"
    if not group.is_success() and policy is not None:
        need = max(policy.min_count, 1) - placed - out["scheduled"]
        if need > 0:
            left = len(ordered) - len(results)
            out["missing"] = (
                f"{need} more member(s) must fit (minCount {max(policy.min_count, 1)}: "
                f"{placed + out['scheduled']} placed, {left} left to try)"
            )
    mine = next((r for r in results if r.qp.pod.key == pod.key), None)
    return out, cycle.member_failure(mine, group, decided)


def _explain_tree(
    cycle: TreeCycle,
    fwk: Framework,
    manager: podgroups.PodGroupManager,
    tree: TreeNode,
    pod: api.Pod,
    others: list[api.Pod],
    out: dict[str, Any],
) -> tuple[dict[str, Any], Diagnosis | Status | None]:
    """The ``"podGroup"`` answer for a member of a composite tree (v1.37, CompositePodGroup):
    the tree's cycle as a dry run over ``pod`` and the snapshot's ``others`` pending members
    of the tree (:meth:`TreeCycle.decide_tree`); the member's own PodGroup as for a lone
    group (``placements``, ``fitPerNode``, ``unplaced`` of its members), and ``"tree"``: the
    root, its verdict and every group's (``groups``: result, message, members placed)."""
    queued = [
        QueuedPodInfo(p, timestamp=float(i), seq=i, attempts=1)
        for i, p in enumerate((pod, *others))
    ]
    by_leaf = cycle.by_leaf(queued)
    decision = cycle.decide_tree(fwk, tree, by_leaf)
    key = out["name"]
    mine = by_leaf.get(key, [])
    res = decision.results.get(key)
    results = res.results if res is not None else []
    tried = (res.results or res.superseded) if res is not None else []
    group = decision.groups.get(key, decision.final)
    placements: dict[str, str | None] = {m.pod.key: None for m in mine}
    unplaced: dict[str, str] = {}
    for r in tried:  # a feasible PodGroup its failed parent undid: where it fit
        if r.status.is_success():
            placements[r.qp.pod.key] = r.node
        else:
            unplaced[r.qp.pod.key] = (r.diagnosis or r.status).message()
    placed = sum(1 for n in placements.values() if n is not None)
    groups: dict[str, Any] = {}
    for leaf in tree.leaves():
        status = decision.groups.get(leaf.key, decision.final)
        done = decision.results.get(leaf.key)
        groups[leaf.key] = {
            "result": _result(status),
            "message": status.message(),
            "members": len(by_leaf.get(leaf.key, [])),
            "placed": sum(
                1
                for r in ((done.results or done.superseded) if done else [])
                if r.status.is_success() and r.node
            ),
        }
    root = tree.key.removeprefix(COMPOSITE)
    cpg = manager.composite[root]
    out.update(
        result=_result(group),
        message=group.message() or f"{placed} of {len(mine)} members fit",
        placements=placements,
        fitPerNode=dict(sorted(Counter(n for n in placements.values() if n).items())),
        unplaced=unplaced,
        tree={
            "root": root,
            "minGroupCount": cpg.policy.min_count or 1,
            "result": _result(decision.final),
            "message": decision.final.message(),
            "groups": groups,
        },
    )
    chosen = {  # each constrained CompositePodGroup's domain, where the tree fit
        k.removeprefix(COMPOSITE): r.placement for k, r in decision.results.items() if r.placement
    }
    if chosen:
        out["tree"]["placements"] = dict(sorted(chosen.items()))
    if decision.preemption is not None:
        out["tree"]["nominations"] = dict(sorted(decision.preemption.nominations.items()))
    member = next((r for r in results if r.qp.pod.key == pod.key), None)
    untried = res.status if res is not None else None
    waiting = decision.preemption is not None
    return out, cycle.member_failure(member, group, untried, waiting=waiting)


def _result(status: Status) -> str:
    if status.is_success():
        return "Scheduled"
    return "Error" if status.code.name == "ERROR" else "Unschedulable"
