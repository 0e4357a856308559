"""Gang (PodGroup) lifecycle bookkeeping, kept current by events instead of listings.

:class:`GangTracker` hears Pod events (informer-style: every Pod the scheduler knows,
pending or bound) and cache events (Pods accounted on a node: assumed while reserved or
waiting at Permit, then bound), and answers what Coscheduling asks per group: how many
members exist, how many are assigned, which are pending.  It also keeps the times a group
first had a member assigned and first reached ``minMember`` assigned, and counts releases,
for the per-group status report (upstream PodGroup ``status``: ``phase``, ``scheduled``,
``running``).

:func:`gang_report` computes the same status from outside the scheduler (creation and
bind times as the API server saw them), for simulation results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from kubesched.admission import objects as o
from kubesched.api import objects as api

PENDING = "Pending"
SCHEDULING = "Scheduling"
SCHEDULED = "Scheduled"
RUNNING = "Running"


def group_key(pod: api.Pod) -> str:
    """``namespace/podgroup`` of the Pod ("" when it belongs to none)."""
    name = o.pod_group_of(pod)
    return f"{pod.namespace}/{name}" if name else ""


@dataclass(slots=True)
class GroupState:
    """One group's members and placements."""

    members: dict[str, api.Pod] = field(default_factory=dict)
    assigned: set[str] = field(default_factory=set)
    bound: set[str] = field(default_factory=set)
    first_seen: float | None = None
    first_assigned: float | None = None
    scheduled_at: float | None = None
    releases: int = 0


class GangTracker:
    """Per-group members (every known Pod) and assigned members (accounted on a node)."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self.clock = clock or (lambda: 0.0)
        self.groups: dict[str, GroupState] = {}
        self.min_member: Callable[[str], int | None] = lambda key: None
        """Set by the owner: the group's minMember (None when no PodGroup exists)."""

    def _group(self, key: str) -> GroupState:
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = GroupState(first_seen=self.clock())
        return g

    # ------------------------------------------------------------------ informer side
    def on_pod_add(self, pod: api.Pod) -> None:
        """A Pod appeared (pending or bound)."""
        key = group_key(pod)
        if key:
            g = self._group(key)
            g.members[pod.key] = pod
            if pod.node_name:
                g.bound.add(pod.key)

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        """A Pod changed (bound, relabelled)."""
        if group_key(old) != group_key(new):
            self.on_pod_delete(old)
        self.on_pod_add(new)

    def on_pod_delete(self, pod: api.Pod) -> None:
        """A Pod went away."""
        g = self.groups.get(group_key(pod))
        if g is not None:
            g.members.pop(pod.key, None)
            g.bound.discard(pod.key)

    # ------------------------------------------------------------------ cache side
    def placed(self, pod: api.Pod) -> None:
        """``pod`` is accounted on a node (assumed or bound)."""
        key = group_key(pod)
        if not key:
            return
        g = self._group(key)
        g.assigned.add(pod.key)
        now = self.clock()
        if g.first_assigned is None:
            g.first_assigned = now
        need = self.min_member(key)
        if g.scheduled_at is None and need is not None and len(g.assigned) >= need:
            g.scheduled_at = now

    def unplaced(self, pod: api.Pod) -> None:
        """``pod`` is no longer accounted (forgotten or deleted)."""
        g = self.groups.get(group_key(pod))
        if g is not None:
            g.assigned.discard(pod.key)
            if not g.assigned and g.scheduled_at is None:
                g.first_assigned = None

    # ------------------------------------------------------------------ queries
    def total(self, key: str) -> int:
        """Members known (pending or bound)."""
        g = self.groups.get(key)
        return len(g.members) if g is not None else 0

    def assigned(self, key: str) -> int:
        """Members accounted on nodes (assumed or bound)."""
        g = self.groups.get(key)
        return len(g.assigned) if g is not None else 0

    def unassigned(self, key: str) -> list[api.Pod]:
        """Members not on a node, by key."""
        g = self.groups.get(key)
        if g is None:
            return []
        return [p for k, p in sorted(g.members.items()) if k not in g.assigned]

    def first_seen(self, key: str) -> float | None:
        """When the group's first member was seen."""
        g = self.groups.get(key)
        return g.first_seen if g is not None else None

    def phase(self, key: str, min_member: int) -> str:
        """Upstream-like PodGroup phase from the counts."""
        g = self.groups.get(key)
        if g is None or not g.assigned:
            return PENDING
        if len(g.bound) >= min_member:
            return RUNNING
        if len(g.assigned) >= min_member:
            return SCHEDULED
        return SCHEDULING

    def report(self, pod_groups: Mapping[str, o.PodGroupSpec]) -> dict[str, Any]:
        """Per group: minMember, members, scheduled (assigned) and running (bound), phase."""
        out: dict[str, Any] = {}
        for key in sorted(set(self.groups) | set(pod_groups)):
            spec = pod_groups.get(key)
            need = spec.min_member if spec is not None else 1
            g = self.groups.get(key) or GroupState()
            out[key] = {
                "minMember": need,
                "members": len(g.members),
                "scheduled": len(g.assigned),
                "running": len(g.bound),
                "phase": self.phase(key, need),
                "releases": g.releases,
            }
        return out


class MinMember(Protocol):
    """What :func:`gang_report` reads of a group: how many members make it complete."""

    @property
    def min_member(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Need:
    """A group's ``minMember`` alone (a Workload API gang's ``minCount``)."""

    min_member: int


def gang_report(
    pod_groups: Mapping[str, MinMember],
    pods: Iterable[api.Pod],
    created_at: Mapping[str, float],
    bound_at: Mapping[str, float],
    live: Mapping[str, api.Pod],
    key_of: Callable[[api.Pod], str | None] = group_key,
    ready_at: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Per PodGroup from the API server's view: when its first member was created, when
    ``minMember`` members had been bound (``completeSeconds``: "all N processes runnable"),
    and how many members are bound now (``running``).  ``key_of`` names a Pod's group
    (Coscheduling's label by default; a Workload API group's key for those gangs); a group
    missing from ``pod_groups`` is complete when all its members are bound.

    With ``ready_at`` (Pod key -> when it became Ready), also the job's view of the whole
    gang, every member and not only ``minMember``: ``allBoundSeconds`` and
    ``allReadySeconds`` from the first member's creation until the last member was bound /
    Ready (None while some member is not)."""
    members: dict[str, list[api.Pod]] = {}
    for p in pods:
        key = key_of(p)
        if key:
            members.setdefault(key, []).append(p)
    out: dict[str, Any] = {}
    for key in sorted(set(members) | set(pod_groups)):
        spec = pod_groups.get(key)
        need = spec.min_member if spec is not None else len(members.get(key, []))
        ms = members.get(key, [])
        created = min((created_at[p.key] for p in ms if p.key in created_at), default=None)
        binds = sorted(bound_at[p.key] for p in ms if p.key in bound_at)
        complete = binds[need - 1] if need and len(binds) >= need else None
        running = sum(1 for p in ms if p.key in live and live[p.key].node_name)
        out[key] = {
            "minMember": need,
            "members": len(ms),
            "running": running,
            "createdAt": created,
            "completeAt": complete,
            "completeSeconds": None
            if complete is None or created is None
            else round(complete - created, 6),
            "phase": RUNNING if running >= need else (SCHEDULING if running else PENDING),
        }
        if ready_at is not None:
            out[key]["allBoundSeconds"] = _all_by(ms, bound_at, created)
            out[key]["allReadySeconds"] = _all_by(ms, ready_at, created)
    return out


def _all_by(members: list[api.Pod], at: Mapping[str, float], start: float | None) -> float | None:
    """Seconds from ``start`` until every one of ``members`` has a time in ``at`` (the last
    of them); None when some member has none, or there are no members or no start."""
    if not members or start is None or any(p.key not in at for p in members):
        return None
    return round(max(at[p.key] for p in members) - start, 6)


def completion(rows: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Over the gangs of one kind (rows of :func:`gang_report` with ``ready_at``): how many
    there are, how many had every member bound (``allBound``) and Ready (``allReady``), and
    p50 / p99 of ``allBoundSeconds`` and ``allReadySeconds`` over the gangs that got there
    (None when none did)."""
    out: dict[str, Any] = {"gangs": len(rows)}
    for field_, count in (("allBoundSeconds", "allBound"), ("allReadySeconds", "allReady")):
        values = [float(r[field_]) for r in rows.values() if r.get(field_) is not None]
        out[count] = len(values)
        out[field_] = {"p50": _percentile(values, 50), "p99": _percentile(values, 99)}
    return out


def _percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile of ``values`` rounded to 4 places; None for no values."""
    return round(float(np.percentile(values, q)), 4) if values else None
