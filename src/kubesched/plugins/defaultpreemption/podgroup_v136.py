"""v1.36's workload-aware preemption (gate WorkloadAwarePreemption, alpha, on top of
GangScheduling): upstream v1.36.3 ``framework/preemption/podgrouppreemption.go``,
``types.go`` and ``preemption.go``'s ``filterVictimsWithPDBViolation``.

The same idea as v1.37's (:mod:`.podgroup`, whose :class:`~.podgroup.Victim`,
:class:`~.podgroup.Mutations` and :func:`~.podgroup.preemptor_of` are reused), an earlier
algorithm:

- *the domain's victims* (:func:`domain_victims`, ``newDomainForWorkloadPreemption``): the
  Pods on the nodes, each alone at its *own* priority, except that the Pods of a PodGroup
  whose ``disruptionMode`` is ``PodGroup`` (v1alpha2's enum) are one unit at the
  PodGroup's priority, made of the Pods met on the nodes (its earliest start is the first
  met Pod's: upstream computes it when the unit is created).  A unit "is a PodGroup"
  (``IsPodGroup``) when its first Pod names a scheduling group, alone or not;
- *importance* (``moreImportantVictim``): priority, then PodGroups before lone Pods, then
  lone Pods by start, PodGroups by size then start: :func:`.podgroup.importance`'s key (a
  lone Pod is one Pod).  Upstream lists the victims in a Go map's order, so equally
  important ones fall at random; here they keep the listing order (node by node);
- *selection* (:func:`select_victims`, ``selectVictimsOnDomain``): every lower-priority
  unit taken off the cluster, the group's whole algorithm run once
  (``podGroupSchedulingFunc``, no PostFilter per member), then each unit, most important
  first, the PodGroup-budget-violating ones before the others, given back and kept when the
  *whole algorithm* still succeeds; no PreFilterExtensions and no Filter per placed member
  (each run is a whole cycle's algorithm), no ongoing-preemption check, no nominations, the
  PDB violations counted by unit (upstream's count goes unused).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kubesched.api import objects as api
from kubesched.framework.contract import PodGroupSchedulingFunc
from kubesched.framework.interface import Code, Status
from kubesched.framework.podgroups import PodGroupManager
from kubesched.plugins.defaultpreemption import pdb
from kubesched.plugins.defaultpreemption.podgroup import (
    NO_VICTIMS,
    RANK_POD,
    RANK_POD_GROUP,
    Mutations,
    Preemptor,
    Victim,
    importance,
)
from kubesched.state.cache import ClusterState


def domain_victims(cluster: ClusterState, manager: PodGroupManager) -> list[Victim]:
    """``newDomainForWorkloadPreemption`` over every node (``NodeInfos().List()`` order,
    each node's Pods in ``NodeInfo`` order; see the module docstring)."""
    out: list[Victim] = []
    units: dict[str, int] = {}
    table = cluster.nodes
    for row in table.order().tolist():
        for pk in cluster.pods_on_node.get(table.names[row], ()):
            rec = cluster.pods.get(pk)
            if rec is None:
                continue
            pod = rec.pod
            key = manager.group_key(pod)
            pg = manager.pod_group(key) if key is not None else None
            if key is not None and pg is not None and pg.policy.disruption_all:
                at = units.get(key)
                if at is not None:
                    out[at] = replace(out[at], pods=(*out[at].pods, pod))
                    continue
                units[key] = len(out)
                priority = pg.policy.priority or 0  # PodGroupPriority
            else:
                priority = pod.priority
            rank = RANK_POD_GROUP if key is not None else RANK_POD
            out.append(Victim((pod,), priority, rank, _start(pod), len(out)))
    return out


def _start(pod: api.Pod) -> float:
    return float("inf") if pod.start_time is None else pod.start_time


@dataclass(frozen=True, slots=True)
class Selection:
    """``selectVictimsOnDomain``'s answer: the Pods to evict, most important unit first, and
    how many units violate a PodDisruptionBudget."""

    victims: tuple[api.Pod, ...]
    pdb_violations: int


def split_by_violation(
    victims: Sequence[Victim], budgets: Sequence[pdb.Budget]
) -> tuple[list[Victim], list[Victim]]:
    """v1.36's ``filterVictimsWithPDBViolation``: a unit violates when one of its Pods, in
    order, takes a budget below zero; the Pods after that one are not charged."""
    left = [b.allowed for b in budgets]
    violating: list[Victim] = []
    fine: list[Victim] = []
    for v in victims:
        hit = any(pdb.charge(pod, budgets, left, first_only=True) for pod in v.pods)
        (violating if hit else fine).append(v)
    return violating, fine


def select_victims(
    cluster: ClusterState,
    preemptor: Preemptor,
    victims: Sequence[Victim],
    budgets: Sequence[pdb.Budget],
    schedule: PodGroupSchedulingFunc,
) -> tuple[Selection | None, Status]:
    """``selectVictimsOnDomain`` after the eligibility check (see the module docstring);
    the cluster is restored exactly afterwards."""
    potential = [v for v in victims if v.priority < preemptor.priority]
    if not potential:
        return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,))
    mut = Mutations(cluster)
    try:
        for v in potential:
            for p in v.pods:
                mut.remove(p)
        status = schedule().status
        if not status.is_success():
            return None, status
        potential.sort(key=importance)
        violating, fine = split_by_violation(potential, budgets)
        chosen: list[Victim] = []
        violations = 0
        for v in (*violating, *fine):
            for p in v.pods:
                mut.add(p)
            if schedule().status.is_success():
                continue
            for p in v.pods:
                mut.remove(p)
            chosen.append(v)
            violations += v in violating
        chosen.sort(key=importance)
    finally:
        mut.restore()
    return Selection(tuple(p for v in chosen for p in v.pods), violations), Status()
