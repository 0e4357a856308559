"""GangScheduling: the Workload API's all-or-nothing groups (kube-scheduler's own plugin).

Upstream ``pkg/scheduler/framework/plugins/gangscheduling`` of v1.35.4, v1.36.3 and v1.37.2,
in the default profile under gate GangScheduling (v1.35-1.36) or GenericWorkload (v1.37).
It reads the groups' runtime state from the scheduler's
:class:`~kubesched.framework.podgroups.PodGroupManager`:

- **PreEnqueue** holds a member until its group's object exists and, for a ``gang`` policy,
  ``minCount`` members are known: ``waiting for pods's pod group "NAME" to appear in
  scheduling queue`` (v1.35: ``... pods's workload "NAME" ...`` and ``pod group "G" doesn't
  exist for a workload "W"``), then ``waiting for minCount pods from a gang to appear in
  scheduling queue``, both UnschedulableAndUnresolvable;
- **Permit** (``gang`` policy): Wait while fewer than ``minCount`` members are scheduled
  (assumed or bound), activating the unscheduled ones; the member that completes the quorum
  allows every assumed member held at Permit.  The wait is 5 minutes (v1.36+
  ``permitTimeoutDuration``); v1.35 keeps one deadline per group (``SchedulingTimeout``: the
  first waiter sets now + 5 minutes, later ones wait what is left of it);
- **Reserve / Unreserve** (v1.35 only, :class:`GangSchedulingV135`): mark the member
  assumed / unscheduled again (later releases have the cache do it; here the cache's
  assume and forget always do, so the two agree);
- **PlacementFeasible** (v1.37, :meth:`GangScheduling.placement_feasible`): the PodGroup
  scheduling cycle's check of ``minCount`` against scheduled + remaining members;
- **events**: v1.35 a Pod added of the same Workload reference, a Workload added; v1.36 a Pod
  added of the same group, a PodGroup added; v1.37 an unscheduled or assigned Pod added of
  the same group, a PodGroup added, a PodGroup updated with a lower ``minCount`` (the
  update's old object is not known here: any update of the group queues).

Under gate CompositePodGroup (v1.37) PreEnqueue and Permit read the group through the
cache's ``BuildHierarchySnapshotFromPod``: a member whose PodGroup object is missing is held
with that function's error (``failed to build hierarchy snapshot: pod group object not found
in state for podgroup/NS/NAME``), not ``waiting for pods's pod group ...``.  A member of a
composite tree (its PodGroup names a parent) waits for the whole tree
(``checkCPGHierarchyReadiness`` / ``permitPodForHierarchy``: ``waiting for composite pod group
"ROOT" tree to meet quorum``): each CompositePodGroup needs ``minGroupCount`` ready children,
a PodGroup is ready with ``minCount`` members known (PreEnqueue) or scheduled (Permit), 1 for
``basic``; the member completing the tree's quorum at Permit allows the tree's assumed
members, and a Pod added to any PodGroup of the same tree queues the waiting ones.
"""

from __future__ import annotations

from typing import Any

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework import interface as fw
from kubesched.framework.podgroups import (
    COMPOSITE,
    GroupState,
    PodGroupManager,
    TreeNode,
    composite_pod_group_key,
    manager_of,
    workload_pod_group_key,
)

NAME = names.GANG_SCHEDULING
PERMIT_TIMEOUT_SECONDS = 300.0
"""``permitTimeoutDuration`` (v1.36+) and v1.35's ``DefaultSchedulingTimeoutDuration``."""
WAITING_FOR_MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"
PERMIT_WAIT = "waiting for minCount pods from a gang to be scheduled"
PERMIT_WAIT_V135 = "waiting for minCount pods from a gang to be waiting on permit"


def min_count_status(min_count: int, scheduled: int, remaining: int) -> fw.Status:
    """``PlacementFeasible`` (v1.37): Unschedulable when ``minCount`` can no longer be met,
    Wait while it is not met yet, Success once it is."""
    if remaining + scheduled < min_count:
        return fw.Status(
            fw.Code.UNSCHEDULABLE,
            (
                f"minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, "
                f"{remaining} remaining",
            ),
            NAME,
        )
    if scheduled < min_count:
        return fw.Status(
            fw.Code.WAIT,
            (
                f"minCount ({min_count}) is not yet satisfied: {scheduled} scheduled, "
                f"{remaining} remaining",
            ),
            NAME,
        )
    return fw.SUCCESS


class GangScheduling:
    """PreEnqueue, Permit and the queueing hints of the Workload API's gangs (v1.36+)."""

    name = NAME

    def __init__(self, args: object | None, handle: fw.Handle) -> None:
        del args
        self.handle = handle
        gates = handle.feature_gates
        self.version = gates.version
        self.hierarchies = gates.enabled("CompositePodGroup")
        """v1.37's hierarchy paths (``isCompositePodGroupEnabled``)."""
        self.manager: PodGroupManager = manager_of(handle)
        self.clock = handle.clock or (lambda: 0.0)

    # ------------------------------------------------------------------ PreEnqueue
    def pre_enqueue(self, pod: api.Pod) -> fw.Status:
        """Hold a member until its group exists and ``minCount`` members are known."""
        key = self.manager.group_key(pod)
        if key is None:
            return fw.SUCCESS
        policy = self.manager.policy(key)
        if policy is None:
            if self.hierarchies:  # preEnqueueWithHierarchies
                why = f"failed to build hierarchy snapshot: {self._no_state(key)}"
                return fw.unschedulable(why, resolvable=False)
            return fw.unschedulable(self._missing(pod, key), resolvable=False)
        tree = self._tree_of(key)
        if tree is not None:  # checkCPGHierarchyReadiness, every member known
            if isinstance(tree, str):
                return fw.unschedulable(tree, resolvable=False)
            if not self.manager.tree_ready(tree, GroupState.all_count):
                return fw.unschedulable(_tree_wait(tree), resolvable=False)
            return fw.SUCCESS
        if not policy.gang:
            return fw.SUCCESS
        if self.manager.state(key).all_count() < policy.min_count:
            return fw.unschedulable(WAITING_FOR_MIN_COUNT, resolvable=False)
        return fw.SUCCESS

    def _missing(self, pod: api.Pod, key: str) -> str:
        if self.version == "1.35":
            ref = pod.workload_ref
            assert ref is not None
            namespace, wl_name = key.split("/", 2)[:2]
            if f"{namespace}/{wl_name}" in self.manager.workloads:
                return f'pod group "{ref.pod_group}" doesn\'t exist for a workload "{ref.name}"'
            return f'waiting for pods\'s workload "{ref.name}" to appear in scheduling queue'
        return (
            f'waiting for pods\'s pod group "{pod.scheduling_group}" to appear in scheduling queue'
        )

    def _tree_of(self, key: str) -> TreeNode | str | None:
        """The composite tree PodGroup ``key`` is in under CompositePodGroup (None: no
        parent), or the hierarchy snapshot's error when a parent is not observed."""
        pg = self.manager.pod_group(key)
        if not self.hierarchies or pg is None or pg.parent is None:
            return None
        root = self.manager.root(key)
        if root is None:
            entity = f"compositepodgroup/{pg.namespace}/{pg.parent}"
            return (
                "failed to build hierarchy snapshot: composite pod group object not found in "
                f"state for {entity}"
            )
        return self.manager.tree(root)

    def _no_state(self, key: str) -> str:
        """``BuildHierarchySnapshotFromPod``'s error for a group whose object is missing: its
        state exists once a member is known (the cache adds pending members)."""
        entity = f"podgroup/{key}"  # fwk.EntityKey.String(): type/namespace/name
        if key in self.manager.groups:
            return f"pod group object not found in state for {entity}"
        return f"pod group state not found for {entity}"

    # ------------------------------------------------------------------ Permit
    def permit(self, state: fw.CycleState, pod: api.Pod, node: str) -> tuple[fw.Status, float]:
        """Wait for the quorum of scheduled members; the member completing it allows all."""
        del node
        key = self.manager.group_key(pod)
        if key is None:
            return fw.SUCCESS, 0.0
        policy = self.manager.policy(key)
        if policy is None and self.hierarchies:
            return fw.error(f"failed to build hierarchy snapshot: {self._no_state(key)}"), 0.0
        if policy is None:
            what = "workload" if self.version == "1.35" else "podGroup"
            return fw.error(f"failed to get {what} {key}: not found"), 0.0
        tree = self._tree_of(key)
        if isinstance(tree, str):
            return fw.error(tree), 0.0
        if tree is not None:  # permitPodForHierarchy, the scheduled members counted
            leaves = [self.manager.state(leaf.key) for leaf in tree.leaves()]
            if not self.manager.tree_ready(tree, GroupState.scheduled_count):
                siblings = {p.key: p for g in leaves for p in g.unscheduled()}
                if siblings:
                    state.setdefault(fw.PODS_TO_ACTIVATE_KEY, {}).update(siblings)
                return _wait(_tree_wait(tree)), PERMIT_TIMEOUT_SECONDS
            for member in sorted(m for g in leaves for m in g.assumed):
                wp = self.handle.get_waiting_pod(member)
                if wp is not None:
                    wp.allow(NAME)
            return fw.SUCCESS, 0.0
        if not policy.gang:
            return fw.SUCCESS, 0.0
        group = self.manager.state(key)
        if group.scheduled_count() < policy.min_count:
            siblings = {p.key: p for p in group.unscheduled()}
            if siblings:
                state.setdefault(fw.PODS_TO_ACTIVATE_KEY, {}).update(siblings)
            if self.version == "1.35":
                now = self.clock()
                if group.deadline is None or fw.passed(group.deadline, now):
                    group.deadline = now + PERMIT_TIMEOUT_SECONDS
                wait = _wait(PERMIT_WAIT_V135)
                return wait, group.deadline - now
            return _wait(PERMIT_WAIT), PERMIT_TIMEOUT_SECONDS
        for member in sorted(group.assumed):
            wp = self.handle.get_waiting_pod(member)
            if wp is not None:
                wp.allow(NAME)
        return fw.SUCCESS, 0.0

    # ------------------------------------------------------------------ PlacementFeasible
    def placement_feasible(self, min_count: int, scheduled: int, remaining: int) -> fw.Status:
        """The PodGroup cycle's check (v1.37): see :func:`min_count_status`."""
        return min_count_status(min_count, scheduled, remaining)

    # ------------------------------------------------------------------ queueing hints
    def events_to_register(self) -> list[fw.ClusterEventWithHint]:
        """The release's events (see the module docstring)."""
        add = fw.ActionType.ADD
        if self.version == "1.35":
            return [
                fw.ClusterEventWithHint(fw.ClusterEvent(fw.Resource.POD, add), self._pod_added),
                fw.ClusterEventWithHint(
                    fw.ClusterEvent(fw.Resource.WORKLOAD, add), self._workload_added
                ),
            ]
        if self.version == "1.36":
            return [
                fw.ClusterEventWithHint(fw.ClusterEvent(fw.Resource.POD, add), self._pod_added),
                fw.ClusterEventWithHint(
                    fw.ClusterEvent(fw.Resource.POD_GROUP, add), self._pod_group_changed
                ),
            ]
        registered = [
            fw.ClusterEventWithHint(
                fw.ClusterEvent(fw.Resource.UNSCHEDULED_POD, add), self._pod_added
            ),
            fw.ClusterEventWithHint(
                fw.ClusterEvent(fw.Resource.ASSIGNED_POD, add), self._pod_added
            ),
            fw.ClusterEventWithHint(
                fw.ClusterEvent(fw.Resource.POD_GROUP, add), self._pod_group_changed
            ),
            fw.ClusterEventWithHint(
                fw.ClusterEvent(fw.Resource.POD_GROUP, fw.ActionType.UPDATE),
                self._pod_group_updated,
            ),
        ]
        if self.hierarchies:  # a CompositePodGroup added may complete a waiting tree
            registered.append(
                fw.ClusterEventWithHint(
                    fw.ClusterEvent(fw.Resource.COMPOSITE_POD_GROUP, add),
                    self._composite_added,
                )
            )
        return registered

    def _pod_added(self, pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
        del old
        if not isinstance(new, api.Pod):
            return fw.QueueingHint.QUEUE
        mine = self.manager.group_key(pod)
        theirs = self.manager.group_key(new)
        if mine is None or theirs is None:
            return fw.QueueingHint.QUEUE_SKIP
        if self.hierarchies:  # areSameHierarchy alone, even for the same group
            same = self._same_tree(mine, theirs)
            return fw.QueueingHint.QUEUE if same else fw.QueueingHint.QUEUE_SKIP
        if mine == theirs:
            return fw.QueueingHint.QUEUE
        return fw.QueueingHint.QUEUE_SKIP

    def _same_tree(self, a: str, b: str) -> bool:
        """``areSameHierarchy``: both groups' roots observed and the same (the cache's
        ``GetRootKeyForGroup``: a PodGroup whose object is not observed has no root, even
        with members known)."""
        root = self._root(a)
        return root is not None and root == self._root(b)

    def _root(self, key: str) -> str | None:
        """``GetRootKeyForGroup``: None while PodGroup ``key``'s object is not observed."""
        if not key.startswith(COMPOSITE) and self.manager.pod_group(key) is None:
            return None
        return self.manager.root(key)

    def _pod_group_changed(self, pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
        del old
        if self.hierarchies and isinstance(new, dict) and new.get("kind") == "PodGroup":
            return self._in_tree_of(pod, workload_pod_group_key(new))
        return self._names_object(pod, new, "PodGroup", pod.scheduling_group)

    def _pod_group_updated(self, pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
        """``isSchedulableAfterPodGroupUpdated`` (v1.37): the updated PodGroup is the pod's
        group (or in its tree), gang before and after, and its ``minCount`` lowered."""
        if not isinstance(old, dict) or not isinstance(new, dict):
            return fw.QueueingHint.QUEUE  # util.As's error: Queue
        if self._pod_group_changed(pod, None, new) is fw.QueueingHint.QUEUE_SKIP:
            return fw.QueueingHint.QUEUE_SKIP
        before, after = _gang_min_count(old), _gang_min_count(new)
        if before is None or after is None or after >= before:
            return fw.QueueingHint.QUEUE_SKIP
        return fw.QueueingHint.QUEUE

    def _composite_added(self, pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
        """``isSchedulableAfterCompositePodGroupAdded``: the added CompositePodGroup is in
        the pod's group's tree."""
        del old
        if not isinstance(new, dict) or new.get("kind") != "CompositePodGroup":
            return fw.QueueingHint.QUEUE
        return self._in_tree_of(pod, composite_pod_group_key(new))

    def _in_tree_of(self, pod: api.Pod, key: str | None) -> fw.QueueingHint:
        """``areSameHierarchy`` of the pod's group and group ``key``: both roots observed
        and the same."""
        mine = self.manager.group_key(pod) if pod.scheduling_group is not None else None
        if mine is None or key is None or not self._same_tree(mine, key):
            return fw.QueueingHint.QUEUE_SKIP
        return fw.QueueingHint.QUEUE

    def _workload_added(self, pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
        del old
        ref = pod.workload_ref
        return self._names_object(pod, new, "Workload", ref.name if ref is not None else None)

    def _names_object(self, pod: api.Pod, obj: Any, kind: str, name: str | None) -> fw.QueueingHint:
        if self.manager.group_key(pod) is None or name is None:
            return fw.QueueingHint.QUEUE_SKIP
        if not isinstance(obj, dict) or obj.get("kind") != kind:
            return fw.QueueingHint.QUEUE_SKIP
        meta = obj.get("metadata") or {}
        same = (meta.get("namespace") or "default") == pod.namespace and meta.get("name") == name
        return fw.QueueingHint.QUEUE if same else fw.QueueingHint.QUEUE_SKIP


def _gang_min_count(obj: dict[str, Any]) -> int | None:
    """A PodGroup manifest's ``spec.schedulingPolicy.gang.minCount`` (None: not a gang)."""
    spec = obj.get("spec")
    policy = spec.get("schedulingPolicy") if isinstance(spec, dict) else None
    gang = policy.get("gang") if isinstance(policy, dict) else None
    if not isinstance(gang, dict):
        return None
    count = gang.get("minCount")
    return count if isinstance(count, int) else 0


def _tree_wait(tree: TreeNode) -> str:
    """PreEnqueue's and Permit's message while a composite tree is short of its quorum."""
    return f'waiting for composite pod group "{tree.name}" tree to meet quorum'


def _wait(message: str) -> fw.Status:
    """A Wait status from this plugin."""
    return fw.Status(fw.Code.WAIT, (message,), NAME)


class GangSchedulingV135(GangScheduling):
    """v1.35's plugin: also Reserve / Unreserve (the member assumed / forgotten)."""

    def reserve(self, state: fw.CycleState, pod: api.Pod, node: str) -> fw.Status:
        """``AssumePod`` in the workload manager."""
        del state, node
        key = self.manager.group_key(pod)
        if key is not None and key in self.manager.groups:
            self.manager.groups[key].assumed.add(pod.key)
        return fw.SUCCESS

    def unreserve(self, state: fw.CycleState, pod: api.Pod, node: str) -> None:
        """``ForgetPod`` in the workload manager."""
        del state, node
        key = self.manager.group_key(pod)
        if key is not None and key in self.manager.groups:
            self.manager.groups[key].assumed.discard(pod.key)


def new(args: object | None, handle: fw.Handle) -> GangScheduling:
    """Factory: the release's plugin (no args type upstream)."""
    if handle.feature_gates.version == "1.35":
        return GangSchedulingV135(args, handle)
    return GangScheduling(args, handle)
