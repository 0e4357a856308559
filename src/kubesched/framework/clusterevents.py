"""Cluster events and queueing hints: what a plugin registers to have its rejected Pods
requeued (upstream ``framework.ClusterEvent``, ``ActionType``, ``QueueingHint``).

Part of the plugin contract; :mod:`kubesched.framework.interface` re-exports every name.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import objects as api


class ActionType(enum.IntFlag):
    """Upstream ``framework.ActionType`` bits."""

    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATION = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 2048
    UPDATE_NODE_DECLARED_FEATURE = 4096
    """A change of ``status.declaredFeatures`` (upstream v1.35+; a bit of its own here, after
    the v1.34 ones, so that their values stay)."""
    UPDATE_POD_SCALE_UP = 8192
    """A Pod's request grew or was added (upstream v1.37+; a bit of its own, as above)."""
    UPDATE_NODE_PREEMPTION_POLICY = 16384
    """A change of ``spec.podPreemptionPolicy`` (upstream v1.37+; a bit of its own)."""
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
        | UPDATE_NODE_DECLARED_FEATURE
        | UPDATE_POD_SCALE_UP
        | UPDATE_NODE_PREEMPTION_POLICY
    )
    ALL = ADD | DELETE | UPDATE


class Resource(enum.StrEnum):
    """Upstream ``framework.EventResource`` values we emit."""

    POD = "Pod"
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnschedulablePod"
    """Spelled ``UnscheduledPod`` from v1.37 (:func:`kubesched.queue.events.event_label`)."""
    TARGET_POD = "TargetPod"
    """v1.37+: an update of the queued Pod itself (upstream ``fwk.TargetPod``)."""
    NODE = "Node"
    NAMESPACE = "Namespace"
    SERVICE = "Service"
    PDB = "PodDisruptionBudget"
    POD_GROUP = "podgroups.v1alpha1.scheduling.x-k8s.io"
    COMPOSITE_POD_GROUP = "scheduling.k8s.io/CompositePodGroup"
    """v1.37's CompositePodGroup (gate CompositePodGroup)."""
    ELASTIC_QUOTA = "elasticquotas.v1alpha1.scheduling.x-k8s.io"
    WORKLOAD = "scheduling.k8s.io/Workload"
    """v1.35's Workload (``scheduling.k8s.io/v1alpha1``, gate GenericWorkload)."""
    RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
    RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"
    DEVICE_CLASS = "resource.k8s.io/DeviceClass"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "storage.k8s.io/StorageClass"
    CSI_NODE = "storage.k8s.io/CSINode"
    CSI_DRIVER = "storage.k8s.io/CSIDriver"
    CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIStorageCapacity"
    VOLUME_ATTACHMENT = "storage.k8s.io/VolumeAttachment"
    WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A change in the cluster: which resource and which action(s).

    Its hash is computed once, at construction (an event is a dict key several times per
    cluster event: the queue's interest and gating tables, the in-flight log's counts), and
    recomputed when an event is unpickled (:meth:`__reduce__`), since a string's hash differs
    between processes."""

    resource: Resource
    action: ActionType
    label: str = ""
    _hash: int = field(default=0, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.resource, self.action, self.label)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[ClusterEvent], tuple[Resource, ActionType, str]]:
        return ClusterEvent, (self.resource, self.action, self.label)

    def matches(self, other: ClusterEvent) -> bool:
        """Whether this *registered* event covers the *incoming* ``other`` event."""
        if self.resource == Resource.WILDCARD and self.action == ActionType.ALL:
            return True
        same = self.resource in (other.resource, Resource.WILDCARD) or (
            self.resource == Resource.POD
            and other.resource
            in (Resource.ASSIGNED_POD, Resource.UNSCHEDULED_POD, Resource.TARGET_POD)
        )
        return same and bool(self.action & other.action) and other.action <= self.action

    def __str__(self) -> str:
        return self.label or f"{self.resource}{self.action.name}"


class QueueingHint(enum.Enum):
    """A plugin's answer to "may this event make the Pod schedulable?"."""

    QUEUE_SKIP = 0
    QUEUE = 1


HintFn = Callable[[api.Pod, Any, Any], QueueingHint]
"""``hint(pod, old_obj, new_obj)``; old/new are Node or Pod objects (None when absent)."""


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """A registered event; a None ``hint`` always means Queue."""

    event: ClusterEvent
    hint: HintFn | None = None
