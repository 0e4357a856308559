"""Coscheduling: all-or-nothing placement of a PodGroup (scheduler-plugins' semantics).

Upstream ``sigs.k8s.io/scheduler-plugins/pkg/coscheduling`` (``coscheduling.go``,
``core/core.go``).  Pods join a ``PodGroup`` by the label ``scheduling.x-k8s.io/pod-group``:

- QueueSort: priority, then the group's time, then ``namespace/name``, so a group's members
  pop together (replaces PrioritySort when enabled);
- PreFilter: UnschedulableAndUnresolvable while the group is backed off, when fewer than
  ``minMember`` Pods of the group exist, or when ``minResources`` exceed what the cluster has
  free (the group's own Pods counted as free);
- Permit: Wait (for ``scheduleTimeoutSeconds``, default ``permitWaitingTimeSeconds``) until
  ``minMember`` members are assigned, then allow every waiting member; the first member to
  wait asks the scheduler to activate its siblings;
- PostFilter: when a member fits nowhere and the group is more than 10 % short, reject the
  group's waiting members and back the group off (``podGroupBackoffSeconds``);
- Unreserve (a member rejected, timed out or failed to bind): reject every waiting member.

Deviations: the group's time is when its first member reached the scheduler (on the
scheduler's clock) rather than the PodGroup's ``creationTimestamp``, so virtual and wall
times never mix; Unreserve also backs the group off (upstream only PostFilter does), so a
timed-out gang does not grab resources again at once; the ``minResources`` gap message is
``resource gap: cpu=4000`` (upstream prints a Go map).  Args may be given as the raw
``CoschedulingArgs`` mapping (``permitWaitingTimeSeconds``, ``podGroupBackoffSeconds``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.admission import gang
from kubesched.admission import objects as o
from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.config import names
from kubesched.framework import interface as fw
from kubesched.state.cache import ClusterState, PodRecord

NAME = names.COSCHEDULING
NOT_FOUND = "PodGroup not found"
NO_GROUP = "can not find pod group"
POST_FILTER_REJECT = "optimistic rejection in PostFilter"
UNRESERVE_REJECT = "rejection in Unreserve"
SMALL_GAP = 0.1
"""PostFilter leaves the group alone when at most this fraction of minMember is missing."""


# --------------------------------------------------------------------------- args
@dataclass(frozen=True, slots=True)
class CoschedulingArgs:
    """``CoschedulingArgs`` with upstream defaults."""

    permit_waiting_time_seconds: int = 60
    """Permit wait for groups without ``scheduleTimeoutSeconds``."""
    pod_group_backoff_seconds: int = 0
    """How long a rejected group is refused at PreFilter (0: no backoff)."""


# --------------------------------------------------------------------------- plugin
class Coscheduling:
    """Gang scheduling over the scheduler's waiting-pods map."""

    name = NAME

    def __init__(self, args: CoschedulingArgs | None, handle: fw.Handle) -> None:
        self.args = args or CoschedulingArgs()
        self.handle = handle
        self.clock: Callable[[], float] = handle.clock or (lambda: 0.0)
        self.pod_groups: dict[str, o.PodGroupSpec] = {}
        self.tracker = gang.GangTracker(self.clock)
        self.tracker.min_member = self._min_member
        self.backoff_until: dict[str, float] = {}
        self.metrics = handle.metrics
        for (kind, _key), obj in list(handle.cluster.objects.items()):
            if kind == "PodGroup":
                self.on_object(obj, False)
        handle.add_event_handler(self)
        handle.cluster.observe(_Placements(self.tracker))

    # ------------------------------------------------------------------ informer side
    def on_object(self, obj: dict[str, Any], deleted: bool) -> None:
        """Keep PodGroups current (bad ones are reported at load time and skipped here)."""
        if obj.get("kind") != "PodGroup":
            return
        try:
            spec = o.parse_pod_group(obj)
        except InputError:
            return
        if deleted:
            self.pod_groups.pop(spec.key, None)
        else:
            self.pod_groups[spec.key] = spec

    def on_pod_add(self, pod: api.Pod) -> None:
        """Track group membership."""
        self.tracker.on_pod_add(pod)

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        """Track group membership."""
        self.tracker.on_pod_update(old, new)

    def on_pod_delete(self, pod: api.Pod) -> None:
        """Track group membership."""
        self.tracker.on_pod_delete(pod)

    def _min_member(self, key: str) -> int | None:
        spec = self.pod_groups.get(key)
        return spec.min_member if spec is not None else None

    def pod_group(self, pod: api.Pod) -> tuple[str, o.PodGroupSpec | None]:
        """Upstream ``GetPodGroup``: the group's full name and spec (None when missing)."""
        key = gang.group_key(pod)
        return key, self.pod_groups.get(key) if key else None

    def _backed_off(self, key: str) -> bool:
        until = self.backoff_until.get(key)
        return until is not None and self.clock() < until

    def _back_off(self, key: str) -> None:
        """Upstream ``BackoffPodGroup`` (an existing, unexpired backoff is kept)."""
        seconds = self.args.pod_group_backoff_seconds
        if seconds > 0 and not self._backed_off(key):
            self.backoff_until[key] = self.clock() + seconds

    # ------------------------------------------------------------------ QueueSort
    def sort_key(self, qp: fw.QueuedPodInfo) -> tuple[int, float, str, int]:
        """``(-priority, group or Pod time, namespace/name, seq)``."""
        ts = (
            qp.initial_attempt_timestamp
            if qp.initial_attempt_timestamp is not None
            else qp.timestamp
        )
        key, spec = self.pod_group(qp.pod)
        if spec is not None:
            first = self.tracker.first_seen(key)
            ts = first if first is not None else ts
        return (-qp.pod.priority, ts, qp.pod.key, qp.seq)

    # ------------------------------------------------------------------ PreFilter
    def pre_filter(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[fw.PreFilterResult | None, fw.Status]:
        """Refuse members of a backed-off group, of a group short of Pods or of resources."""
        key, spec = self.pod_group(pod)
        if spec is None:
            return None, fw.SUCCESS
        if self._backed_off(key):
            return None, fw.unschedulable(f"podGroup {key} failed recently", resolvable=False)
        total = self.tracker.total(key)
        if total < spec.min_member:
            return None, fw.unschedulable(
                f"pre-filter pod {pod.name} cannot find enough sibling pods, current pods "
                f"number: {total}, minMember of group: {spec.min_member}",
                resolvable=False,
            )
        if spec.min_resources:
            need = dict(spec.min_resources)
            need[api.PODS] = spec.min_member
            gap = resource_gap(cluster, need, self.tracker.groups[key].assigned)
            if gap:
                text = ", ".join(f"{r}={v}" for r, v in sorted(gap.items()))
                return None, fw.unschedulable(f"resource gap: {text}", resolvable=False)
        return None, fw.SUCCESS

    # ------------------------------------------------------------------ PostFilter
    def post_filter(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, diagnosis: Any
    ) -> tuple[None, fw.Status]:
        """Reject the whole group when one member fits nowhere (upstream PostFilter)."""
        key, spec = self.pod_group(pod)
        if spec is None:
            return None, fw.unschedulable(NO_GROUP)
        assigned = self.tracker.assigned(key)
        if assigned >= spec.min_member:
            return None, fw.Status(fw.Code.UNSCHEDULABLE)
        if (spec.min_member - assigned) / spec.min_member <= SMALL_GAP:
            return None, fw.Status(fw.Code.UNSCHEDULABLE)
        self._reject_waiting(key, POST_FILTER_REJECT)
        if self.tracker.total(key) >= spec.min_member:
            self._back_off(key)
        return None, fw.unschedulable(
            f"PodGroup {key} gets rejected due to Pod {pod.name} is unschedulable even after "
            "PostFilter"
        )

    def _publish_waiting(self, add: str = "", drop: str = "") -> None:
        """``scheduler_gangs_waiting``: groups with members held at Permit."""
        if self.metrics is None:
            return
        groups = {gang.group_key(wp.get_pod()) for wp in self.handle.iterate_waiting_pods()}
        groups = (groups | {add}) - {drop, ""}
        self.metrics.gangs_waiting.set(len(groups))

    def _reject_waiting(self, key: str, message: str, result: str = "rejected") -> None:
        released = ""
        for wp in self.handle.iterate_waiting_pods():
            if gang.group_key(wp.get_pod()) == key:
                wp.reject(self.name, message)
                released = wp.get_pod().scheduler_name
        if released and key in self.tracker.groups:
            self.tracker.groups[key].releases += 1
            if self.metrics is not None:
                self.metrics.record_gang(released, result)
            self._publish_waiting(drop=key)

    # ------------------------------------------------------------------ Reserve / Permit
    def reserve(self, state: fw.CycleState, pod: api.Pod, node_name: str) -> fw.Status:
        """Nothing to reserve (upstream)."""
        return fw.SUCCESS

    def unreserve(self, state: fw.CycleState, pod: api.Pod, node_name: str) -> None:
        """A member failed after Reserve: release every waiting member, back the group off."""
        key, spec = self.pod_group(pod)
        if spec is None:
            return
        g = self.tracker.groups.get(key)
        timeout = spec.schedule_timeout_seconds or self.args.permit_waiting_time_seconds
        first = g.first_assigned if g is not None else None
        timed_out = first is not None and self.clock() >= first + timeout
        self._reject_waiting(key, UNRESERVE_REJECT, "timeout" if timed_out else "rejected")
        self._back_off(key)

    def permit(self, state: fw.CycleState, pod: api.Pod, node_name: str) -> tuple[fw.Status, float]:
        """Wait until ``minMember`` members are assigned, then allow them all."""
        key = gang.group_key(pod)
        if not key:
            return fw.SUCCESS, 0.0
        spec = self.pod_groups.get(key)
        if spec is None:
            return fw.unschedulable(NOT_FOUND), 0.0
        g = self.tracker.groups.get(key)
        assigned = len(g.assigned - {pod.key}) if g is not None else 0
        if assigned + 1 >= spec.min_member:
            for wp in self.handle.iterate_waiting_pods():
                if gang.group_key(wp.get_pod()) == key:
                    wp.allow(self.name)
            if self.metrics is not None and g is not None and assigned + 1 == spec.min_member:
                first = g.first_assigned if g.first_assigned is not None else self.clock()
                self.metrics.record_gang(pod.scheduler_name, "scheduled", self.clock() - first)
            self._publish_waiting(drop=key)
            return fw.SUCCESS, 0.0
        if assigned == 0:
            siblings = {p.key: p for p in self.tracker.unassigned(key) if p.key != pod.key}
            if siblings:
                state.setdefault(fw.PODS_TO_ACTIVATE_KEY, {}).update(siblings)
        timeout = spec.schedule_timeout_seconds or self.args.permit_waiting_time_seconds
        self._publish_waiting(add=key)
        return fw.Status(fw.Code.WAIT), float(timeout)

    # ------------------------------------------------------------------ queueing hints
    def events_to_register(self) -> list[fw.ClusterEventWithHint]:
        """A new Pod (a sibling may complete the group) and PodGroup changes (upstream)."""
        return [
            fw.ClusterEventWithHint(fw.ClusterEvent(fw.Resource.POD, fw.ActionType.ADD)),
            fw.ClusterEventWithHint(
                fw.ClusterEvent(fw.Resource.POD_GROUP, fw.ActionType.ADD | fw.ActionType.UPDATE)
            ),
        ]

    def sign(self, pod: api.Pod) -> tuple[()] | None:
        """Pods outside any group are all alike here; members never share results."""
        return None if gang.group_key(pod) else ()


class _Placements:
    """Cache observer feeding the tracker with assumed / bound / forgotten Pods."""

    def __init__(self, tracker: gang.GangTracker) -> None:
        self.tracker = tracker

    def pod_added(self, rec: PodRecord) -> None:
        self.tracker.placed(rec.pod)

    def pod_removed(self, rec: PodRecord) -> None:
        self.tracker.unplaced(rec.pod)

    def node_changed(self, row: int, old: api.Node | None, new: api.Node | None) -> None:
        del row, old, new


# --------------------------------------------------------------------------- kernel
def resource_gap(cluster: ClusterState, need: Mapping[str, int], own: set[str]) -> dict[str, int]:
    """Upstream ``CheckClusterResource``: what ``need`` lacks of the cluster's free resources
    (allocatable - requested over all nodes, the Pods in ``own`` counted as free); empty
    when it fits.  ``pods`` counts free Pod slots."""
    t = cluster.nodes
    alive = t.alive
    free = (t.allocatable[alive] - t.requested[alive]).sum(axis=0)
    slots = int((t.allowed_pods[alive] - t.pod_count[alive]).sum())
    for key in own:
        rec = cluster.pods.get(key)
        if rec is not None:
            free = free + rec.request
            slots += 1
    gap: dict[str, int] = {}
    for res, amount in need.items():
        if res == api.PODS:
            have = slots
        elif res in t.resource_index:
            have = int(free[t.resource_index[res]])
        else:  # held sparse (few nodes have it), or unknown: zeros
            alloc, used = t.resource_values(res, t.order())
            have = int((alloc - used).sum())
            for key in own:
                rec = cluster.pods.get(key)
                have += dict(rec.sparse).get(res, 0) if rec is not None else 0
        if amount > have:
            gap[res] = amount - have
    return gap


def new(args: object | None, handle: fw.Handle) -> Coscheduling:
    """Factory: accepts :class:`CoschedulingArgs`, the raw args mapping, or None."""
    if args is None or isinstance(args, CoschedulingArgs):
        return Coscheduling(args, handle)
    if not isinstance(args, Mapping):
        raise InputError(f"want args to be of type CoschedulingArgs, got {type(args).__name__}")
    problems: list[tuple[str, str]] = []
    values: dict[str, int] = {}
    for field_name, attr in (
        ("permitWaitingTimeSeconds", "permit_waiting_time_seconds"),
        ("podGroupBackoffSeconds", "pod_group_backoff_seconds"),
    ):
        v = args.get(field_name)
        if v is None:
            continue
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            problems.append((field_name, "must be a non-negative integer"))
        else:
            values[attr] = v
    unknown = sorted(
        set(args) - {"permitWaitingTimeSeconds", "podGroupBackoffSeconds", "kind", "apiVersion"}
    )
    problems.extend((k, "unknown field") for k in unknown)
    if problems:
        raise InputError(problems)
    return Coscheduling(CoschedulingArgs(**values), handle)
