"""The runtime state of the Workload API's pod groups (upstream's ``PodGroupManager``).

Upstream keeps, beside its cache, one state per runtime pod group (v1.35
``backend/workloadmanager``, v1.36+ ``backend/cache/podgroupstate.go``): the Pods known to
belong to it, split into *unscheduled*, *assumed* (past Reserve, not bound yet) and
*assigned* (bound); and the PodGroup objects (v1.35: the Workloads whose ``podGroups`` give
each group its policy).  GangScheduling's PreEnqueue counts all members, its Permit the
scheduled ones (assumed or assigned); the PodGroup scheduling cycle
(:mod:`kubesched.scheduler.podgroup`) reads the same counts.

:class:`PodGroupManager` is fed like upstream's: Pod events from the informer
(:meth:`on_pod_add` / :meth:`on_pod_update` / :meth:`on_pod_delete`: membership and binds),
the cache's assume and forget (:meth:`pod_added` / :meth:`pod_removed`, a cache observer)
and object events (:meth:`on_object`: PodGroups and Workloads, read by
:func:`kubesched.api.workload.read` under the run's gates).  Group keys are
:func:`kubesched.api.workload.pod_group_key`'s: ``namespace/podGroupName`` (v1.36+),
``namespace/workload/podGroup/replicaKey`` (v1.35).  Pods are named by ``namespace/name``
where upstream uses UIDs.

The scheduler makes one when the release has the Workload API with GenericWorkload on
(:func:`enabled`) and offers it to the plugins under :data:`POD_GROUP_MANAGER`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import objects as api
from kubesched.api import workload
from kubesched.framework.interface import Handle, IntArray, ServiceKey
from kubesched.state.cache import ClusterState, PodRecord

__all__ = [
    "COMPOSITE",
    "POD_GROUP_MANAGER",
    "GroupState",
    "Placement",
    "PodGroupManager",
    "TreeNode",
    "enabled",
    "manager_of",
]


@dataclass(slots=True)
class GroupState:
    """One runtime group's members (upstream ``podGroupState``): every known Pod by key, and
    which of them are assumed or assigned; the rest are unscheduled."""

    pods: dict[str, api.Pod] = field(default_factory=dict)
    assumed: set[str] = field(default_factory=set)
    assigned: set[str] = field(default_factory=set)
    deadline: float | None = None
    """v1.35 ``schedulingDeadline``: when the current Permit wait of the group ends."""

    def all_count(self) -> int:
        """``AllPodsCount``: every member known."""
        return len(self.pods)

    def scheduled(self) -> set[str]:
        """Keys of the members assumed or assigned (``ScheduledPods``)."""
        return self.assumed | self.assigned

    def scheduled_count(self) -> int:
        """``ScheduledPodsCount``."""
        return len(self.assumed | self.assigned)

    def unscheduled(self) -> list[api.Pod]:
        """``UnscheduledPods``: members neither assumed nor assigned, by key."""
        done = self.assumed | self.assigned
        return [p for k, p in sorted(self.pods.items()) if k not in done]


@dataclass(frozen=True, slots=True)
class Placement:
    """A set of nodes a group is tried on in one go (upstream ``fwk.Placement``, v1.37
    TopologyAwareWorkloadScheduling): ``name`` (a topology domain, "" for all nodes) and
    ``rows``, int64 node-table rows of shape ``(n,)``."""

    name: str
    rows: IntArray


COMPOSITE = "composite:"
"""The prefix of a CompositePodGroup's key (``composite:namespace/name``), where a PodGroup's is
``namespace/name`` (upstream's ``EntityKey`` types)."""


@dataclass(frozen=True, slots=True)
class TreeNode:
    """One group of a composite tree as the cycle walks it (upstream ``PodGroupInfo`` with its
    ``Children``): ``key`` a PodGroup's ``namespace/name`` or a CompositePodGroup's
    ``composite:namespace/name``; ``min_count`` its ``minCount`` or ``minGroupCount`` (1 for
    ``basic``, as GangScheduling's ``getMinCount``); ``children`` empty for a PodGroup."""

    key: str
    name: str
    min_count: int
    children: tuple[TreeNode, ...] = ()

    @property
    def composite(self) -> bool:
        return self.key.startswith(COMPOSITE)

    def leaves(self) -> list[TreeNode]:
        """The PodGroups under this node, in the walk's order."""
        if not self.composite:
            return [self]
        return [leaf for child in self.children for leaf in child.leaves()]


POD_GROUP_MANAGER: ServiceKey[PodGroupManager] = ServiceKey("kubesched.io/pod-group-manager")
"""Where the scheduler offers its :class:`PodGroupManager` (:attr:`Handle.services`)."""


def manager_of(handle: Handle) -> PodGroupManager:
    """The run's :class:`PodGroupManager` for a plugin: the one the scheduler offers, or in
    a bare harness without one a manager of the plugin's own, hearing the handle's events
    and offered to the plugins made after it."""
    manager = handle.services.get(POD_GROUP_MANAGER)
    if manager is None:
        manager = PodGroupManager(handle.feature_gates, handle.cluster)
        handle.add_event_handler(manager)
        handle.services.provide(POD_GROUP_MANAGER, manager)
    return manager


def enabled(gates: workload.Gates) -> bool:
    """Whether the release has Workload API groups at all (v1.35+ with GenericWorkload)."""
    return gates.version in workload.SERVED and gates.enabled("GenericWorkload")


def unscheduled_add_moves(gates: workload.Gates) -> bool:
    """Whether upstream's ``addPodToSchedulingQueue`` also moves pooled Pods on a pending
    Pod's add (``EventUnscheduledPodAdd``): v1.35-1.36 under GangScheduling, v1.37 under
    GenericWorkload."""
    gate = {"1.35": "GangScheduling", "1.36": "GangScheduling", "1.37": "GenericWorkload"}
    name = gate.get(gates.version)
    return name is not None and gates.enabled(name)


def queue_entity(
    manager: PodGroupManager | None,
) -> Callable[[api.Pod], tuple[str, int] | None] | None:
    """The scheduling queue's view of PodGroup entities (v1.37 with GenericWorkload,
    upstream ``isPodGroupMember`` and the queue's ``workloadForest``): a member's group
    ``namespace/name`` and the PodGroup's priority (``PodGroupPriority``: ``spec.priority``,
    0 without) once its object is observed; None for a Pod queued alone.  None before v1.37
    (the members are queued one by one there) or without the Workload API."""
    if manager is None or manager.gates.version in ("1.35", "1.36"):
        return None

    def entity_of(pod: api.Pod) -> tuple[str, int] | None:
        if pod.scheduling_group is None:
            return None
        key = manager.group_key(pod)
        pg = manager.pod_group(key) if key is not None else None
        if key is None or pg is None:
            return None
        root = manager.root(key)
        if root is None:  # a parent not observed: queued alone (upstream: incomplete)
            return None
        if root != key:  # a composite tree: the root's entity, at the root's priority
            cpg = manager.composite[root.removeprefix(COMPOSITE)]
            return root, cpg.policy.priority or 0  # CompositePodGroupPriority
        return key, pg.policy.priority or 0

    return entity_of


KINDS = ("PodGroup", "CompositePodGroup", "Workload")
"""The object kinds :meth:`PodGroupManager.on_object` keeps (beside PriorityClasses)."""


def queue_member(manager: PodGroupManager | None) -> Callable[[api.Pod], str | None] | None:
    """The scheduling queue's ``isPodGroupMember`` beside :func:`queue_entity`: a member's
    group ``namespace/name`` whether or not its PodGroup is observed (v1.37 with
    GenericWorkload), so the queue holds a member whose object is missing
    (``incompletePodGroupPods``); None where :func:`queue_entity` is None."""
    if manager is None or manager.gates.version in ("1.35", "1.36"):
        return None

    def member_of(pod: api.Pod) -> str | None:
        return None if pod.scheduling_group is None else manager.group_key(pod)

    return member_of


def workload_pod_group_key(obj: dict[str, Any]) -> str | None:
    """``namespace/name`` of a Workload API PodGroup object, None for any other object."""
    if obj.get("kind") != "PodGroup" or not workload.is_workload_api(obj):
        return None
    return _key(obj)


def composite_pod_group_key(obj: dict[str, Any]) -> str:
    """The tree key of a CompositePodGroup object (:data:`COMPOSITE` + ``namespace/name``)."""
    return COMPOSITE + _key(obj)


def released_groups(manager: PodGroupManager | None, obj: dict[str, Any]) -> list[str]:
    """The PodGroups whose held members an added Workload API object sends to the queue
    again (upstream ``AddPodGroup`` / ``AddCompositePodGroup``): a PodGroup's own; under
    CompositePodGroup (v1.37), for a PodGroup or CompositePodGroup whose root is now
    observed, every PodGroup under that root (``getLeafPodGroups``, the tree's order), none
    while an ancestor is missing."""
    key = workload_pod_group_key(obj)
    if manager is None or not manager.trees():
        return [key] if key is not None else []
    if key is None:
        if obj.get("kind") != "CompositePodGroup" or not workload.is_workload_api(obj):
            return []
        key = composite_pod_group_key(obj)
    root = manager.root(key)
    if root is None:
        return []
    return [leaf.key for leaf in manager.tree(root).leaves()]


def _key(obj: dict[str, Any]) -> str:
    """An object's ``namespace/name`` (the namespace defaulted), the managers' key."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


class PodGroupManager:
    """The pod groups' runtime state under ``gates`` (see the module docstring)."""

    def __init__(self, gates: workload.Gates, cluster: ClusterState | None = None) -> None:
        self.gates = gates
        self.groups: dict[str, GroupState] = {}
        self.pod_groups: dict[str, workload.PodGroup] = {}
        """PodGroup objects (v1.36+) by ``namespace/name``."""
        self.composite: dict[str, workload.CompositePodGroup] = {}
        """CompositePodGroup objects (v1.37, gate CompositePodGroup) by ``namespace/name``."""
        self.workloads: dict[str, workload.Workload] = {}
        """Workload objects by ``namespace/name`` (v1.35 reads its groups' policies here)."""
        self._group_of: dict[str, str] = {}
        self._raw: dict[str, dict[str, Any]] = {}
        """PodGroup and Workload manifests by ``Kind/namespace/name``."""
        self._classes: dict[str, dict[str, Any]] = {}
        """PriorityClasses by name (a PodGroup's priority comes from its class)."""
        if cluster is not None:
            for (kind, _key), obj in list(cluster.objects.items()):
                if kind in ("PodGroup", "CompositePodGroup", "Workload", "PriorityClass"):
                    self.on_object(obj, False)
            for rec in cluster.pods.values():
                self.on_pod_add(rec.pod)
                self.pod_added(rec)
            cluster.observe(self)

    # ------------------------------------------------------------------ lookups
    def group_key(self, pod: api.Pod) -> str | None:
        """The runtime group ``pod`` belongs to, or None."""
        return workload.pod_group_key(pod, self.gates)

    def policy(self, key: str) -> workload.GroupTemplate | None:
        """The group's policy (``minCount`` 0: basic), or None while its object is missing
        (v1.35: the Workload, or its pod group in it)."""
        if self.gates.version == "1.35":
            namespace, wl_name, group, _replica = key.split("/", 3)
            wl = self.workloads.get(f"{namespace}/{wl_name}")
            return wl.template(group) if wl is not None else None
        pg = self.pod_groups.get(key)
        return pg.policy if pg is not None else None

    def pod_group(self, key: str) -> workload.PodGroup | None:
        """The PodGroup object ``namespace/name`` (v1.36+), or None."""
        return self.pod_groups.get(key)

    def manifest(self, key: str) -> dict[str, Any] | None:
        """The PodGroup object ``namespace/name`` as last seen (its status included), or
        None."""
        return self._raw.get(f"PodGroup/{key}")

    def state(self, key: str) -> GroupState:
        """The group's state (an empty one for a group with no member yet)."""
        return self.groups.get(key) or GroupState()

    # ------------------------------------------------------------------ objects
    def on_object(self, obj: dict[str, Any], deleted: bool) -> None:
        """A PodGroup, Workload or PriorityClass added, updated or deleted."""
        meta = obj.get("metadata") or {}
        if obj.get("kind") == "PriorityClass":
            name = str(meta.get("name", ""))
            if deleted:
                self._classes.pop(name, None)
            else:
                self._classes[name] = obj
            for raw in list(self._raw.values()):  # priorities follow their class
                self._read(raw)
            return
        if obj.get("kind") not in KINDS or not workload.is_workload_api(obj):
            return
        key = _key(obj)
        if deleted:
            self._raw.pop(f"{obj['kind']}/{key}", None)
            self._objects(str(obj["kind"])).pop(key, None)
            return
        self._raw[f"{obj['kind']}/{key}"] = obj
        self._read(obj)

    def _read(self, obj: dict[str, Any]) -> None:
        key = _key(obj)
        value = workload.read(obj, self.gates, self._classes.values())
        if isinstance(value, workload.PodGroup):
            self.pod_groups[key] = value
        elif isinstance(value, workload.CompositePodGroup):
            self.composite[key] = value
        elif isinstance(value, workload.Workload):
            self.workloads[key] = value
        else:
            self._objects(str(obj.get("kind"))).pop(key, None)

    def _objects(self, kind: str) -> dict[str, Any]:
        if kind == "PodGroup":
            return self.pod_groups
        return self.composite if kind == "CompositePodGroup" else self.workloads

    # ------------------------------------------------------------------ composite trees
    def trees(self) -> bool:
        """Whether groups may have parents (v1.37 with CompositePodGroup on)."""
        return self.gates.version == "1.37" and self.gates.enabled("CompositePodGroup")

    def _parent(self, key: str) -> str | None:
        """The parent of group ``key`` (a PodGroup's or a ``composite:`` key) as observed,
        as a ``composite:`` key, or None."""
        if key.startswith(COMPOSITE):
            cpg = self.composite.get(key.removeprefix(COMPOSITE))
            parent = cpg.parent if cpg is not None else None
            namespace = cpg.namespace if cpg is not None else ""
        else:
            pg = self.pod_groups.get(key)
            parent = pg.parent if pg is not None and self.trees() else None
            namespace = pg.namespace if pg is not None else ""
        return f"{COMPOSITE}{namespace}/{parent}" if parent is not None else None

    def root(self, key: str) -> str | None:
        """The root of the tree PodGroup ``key`` is in (upstream
        ``getRootLookupInfoForPodGroup``): ``key`` itself without a parent, else the topmost
        CompositePodGroup's ``composite:`` key; None when a parent on the way is not observed
        (or the parents make a cycle)."""
        seen = {key}
        while (parent := self._parent(key)) is not None:
            if parent in seen or parent.removeprefix(COMPOSITE) not in self.composite:
                return None
            seen.add(parent)
            key = parent
        return key

    def group_policy(self, key: str) -> workload.GroupTemplate | None:
        """The policy of the group object ``key`` (a v1.36+ PodGroup's or a ``composite:``
        key) as observed, or None (unlike :meth:`policy`, never a v1.35 Workload's)."""
        if key.startswith(COMPOSITE):
            cpg = self.composite.get(key.removeprefix(COMPOSITE))
            return cpg.policy if cpg is not None else None
        pg = self.pod_groups.get(key)
        return pg.policy if pg is not None else None

    def lineage(self, key: str) -> list[tuple[str, workload.GroupTemplate]]:
        """PodGroup ``key`` and its ancestors upward with their policies (upstream
        ``TraverseHierarchyUp``): stops before a group not observed, at a repeated one and
        after :data:`~kubesched.api.workload.MAX_TREE_DEPTH` groups; only ``key`` without
        trees (v1.37 with CompositePodGroup on: :meth:`trees`)."""
        out: list[tuple[str, workload.GroupTemplate]] = []
        current: str | None = key
        while current is not None and len(out) < workload.MAX_TREE_DEPTH:
            if any(k == current for k, _ in out):
                break
            policy = self.group_policy(current)
            if policy is None:
                break
            out.append((current, policy))
            current = self._parent(current)
        return out

    def tree(self, root: str) -> TreeNode:
        """The tree under ``root`` as observed (upstream ``buildQueuedPodGroupInfo``):
        children in name order, PodGroups before CompositePodGroups of one parent (upstream
        walks a Go set, in no fixed order)."""
        if not root.startswith(COMPOSITE):
            policy = self.policy(root)
            name = root.split("/", 1)[1]
            return TreeNode(root, name, (policy.min_count if policy else 0) or 1)
        cpg = self.composite[root.removeprefix(COMPOSITE)]
        kids = [k for k in self.pod_groups if self._parent(k) == root]
        kids += [
            f"{COMPOSITE}{k}" for k in self.composite if self._parent(f"{COMPOSITE}{k}") == root
        ]
        kids.sort(key=lambda k: (k.startswith(COMPOSITE), k))
        children = tuple(self.tree(k) for k in kids)
        return TreeNode(root, cpg.name, cpg.policy.min_count or 1, children)

    def scheduled_under(self, key: str) -> set[str]:
        """The scheduled (assumed or assigned) members of group ``key``, a PodGroup's or a
        ``composite:`` key, by Pod key: a CompositePodGroup's are those of every PodGroup
        under it (upstream ``helper.GetPodGroupStates``, which TopologyPlacementGenerator
        and PodGroupPodsCount read under CompositePodGroup)."""
        if not key.startswith(COMPOSITE):
            return self.state(key).scheduled()
        return {k for leaf in self.tree(key).leaves() for k in self.state(leaf.key).scheduled()}

    def too_deep(self, key: str) -> str | None:
        """Upstream ``helper.GetPodGroupStates``' refusal of the tree under ``key`` (a
        ``composite:`` key; a PodGroup's is never refused): an entity :data:`~kubesched.api.
        workload.MAX_TREE_DEPTH` levels below ``key`` or deeper (a PodGroup under four
        CompositePodGroups, say, which no API validation refuses: the objects name their
        parents), as its error reads, ``exceeded maximum hierarchy depth at
        podgroup/NAMESPACE/NAME``; None when the tree is shallow enough.  Upstream walks a
        CompositePodGroup's children in a Go set's order, so of several too deep the one
        named may differ; TopologyPlacementGenerator and PodGroupPodsCount fail with it."""
        if not key.startswith(COMPOSITE):
            return None

        def walk(node: TreeNode, depth: int) -> str | None:
            if depth >= workload.MAX_TREE_DEPTH:
                kind = "compositepodgroup" if node.composite else "podgroup"
                return f"{kind}/{node.key.removeprefix(COMPOSITE)}"
            for child in node.children:
                if (found := walk(child, depth + 1)) is not None:
                    return found
            return None

        found = walk(self.tree(key), 0)
        return None if found is None else f"exceeded maximum hierarchy depth at {found}"

    def tree_ready(self, node: TreeNode, count: Callable[[GroupState], int]) -> bool:
        """GangScheduling's ``isCPGTreeReady``: at least ``minGroupCount`` children ready, a
        PodGroup ready when ``count`` of its state reaches its ``minCount`` (1 for
        ``basic``)."""
        if not node.composite:
            return node.key in self.pod_groups and count(self.state(node.key)) >= node.min_count
        ready = sum(1 for child in node.children if self.tree_ready(child, count))
        return ready >= node.min_count

    # ------------------------------------------------------------------ Pods (informer)
    def on_pod_add(self, pod: api.Pod) -> None:
        """A Pod appeared (bound ones count as assigned)."""
        key = self.group_key(pod)
        if key is None:
            return
        g = self.groups.setdefault(key, GroupState())
        g.pods[pod.key] = pod
        self._group_of[pod.key] = key
        if pod.node_name:
            g.assigned.add(pod.key)
            g.assumed.discard(pod.key)

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        """A Pod changed; bound now: assigned (upstream ``updatePod``)."""
        del old
        key = self._group_of.get(new.key)
        if key is None:
            self.on_pod_add(new)
            return
        g = self.groups[key]
        g.pods[new.key] = new
        if new.node_name:
            g.assigned.add(new.key)
            g.assumed.discard(new.key)

    def on_pod_delete(self, pod: api.Pod) -> None:
        """A Pod is gone."""
        key = self._group_of.pop(pod.key, None)
        if key is None:
            return
        g = self.groups[key]
        g.pods.pop(pod.key, None)
        g.assumed.discard(pod.key)
        g.assigned.discard(pod.key)
        if not g.pods:
            del self.groups[key]

    # ------------------------------------------------------------------ the cache
    def pod_added(self, rec: PodRecord) -> None:
        """The cache assumed (or accounted a bound) Pod: a member is assumed now."""
        key = self._group_of.get(rec.pod.key)
        if key is not None and rec.assumed:
            self.groups[key].assumed.add(rec.pod.key)

    def pod_removed(self, rec: PodRecord) -> None:
        """The cache forgot an assumed Pod: unscheduled again (upstream ``ForgetPod``)."""
        key = self._group_of.get(rec.pod.key)
        if key is not None:
            self.groups[key].assumed.discard(rec.pod.key)

    def node_changed(self, row: int, old: api.Node | None, new: api.Node | None) -> None:
        del row, old, new

    def pods(self, keys: Iterable[str]) -> list[api.Pod]:
        """The members among ``keys`` that are known, in that order."""
        out = []
        for k in keys:
            group = self._group_of.get(k)
            if group is not None:
                out.append(self.groups[group].pods[k])
        return out
