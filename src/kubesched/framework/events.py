"""The cluster events the scheduler emits, named as upstream (``framework/events.go``).

``node_update_events`` mirrors upstream ``NodeSchedulingPropertiesChange``: one event per
kind of change that can matter to scheduling.
"""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.framework.interface import ActionType, ClusterEvent, Resource

NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD, "NodeAdd")
NODE_DELETE = ClusterEvent(Resource.NODE, ActionType.DELETE, "NodeDelete")
NODE_ALLOCATABLE_CHANGE = ClusterEvent(
    Resource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE, "NodeAllocatableChange"
)
NODE_LABEL_CHANGE = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL, "NodeLabelChange")
NODE_TAINT_CHANGE = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_TAINT, "NodeTaintChange")
NODE_SPEC_UNSCHEDULABLE_CHANGE = ClusterEvent(
    Resource.NODE, ActionType.UPDATE_NODE_TAINT, "NodeSpecUnschedulableChange"
)
NODE_ANNOTATION_CHANGE = ClusterEvent(
    Resource.NODE, ActionType.UPDATE_NODE_ANNOTATION, "NodeAnnotationChange"
)
NODE_DECLARED_FEATURES_CHANGE = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_DECLARED_FEATURE)
"""Unlabelled: its metrics label is upstream's ``NodeUpdateNodeDeclaredFeature``."""
NODE_PREEMPTION_POLICY_CHANGE = ClusterEvent(
    Resource.NODE, ActionType.UPDATE_NODE_PREEMPTION_POLICY
)
"""v1.37's ``spec.podPreemptionPolicy`` change (unlabelled, as above)."""
ASSIGNED_POD_ADD = ClusterEvent(Resource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_UPDATE = ClusterEvent(Resource.ASSIGNED_POD, ActionType.UPDATE, "AssignedPodUpdate")
ASSIGNED_POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
UNSCHEDULABLE_TIMEOUT = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "ForceActivate")


def node_update_events(old: api.Node, new: api.Node) -> list[ClusterEvent]:
    """The scheduling-relevant changes between two versions of a node."""
    out: list[ClusterEvent] = []
    if old.unschedulable != new.unschedulable:
        out.append(NODE_SPEC_UNSCHEDULABLE_CHANGE)
    if old.allocatable != new.allocatable:
        out.append(NODE_ALLOCATABLE_CHANGE)
    if old.labels != new.labels:
        out.append(NODE_LABEL_CHANGE)
    if old.taints != new.taints:
        out.append(NODE_TAINT_CHANGE)
    if old.annotations != new.annotations:
        out.append(NODE_ANNOTATION_CHANGE)
    if preemption_policy(old) != preemption_policy(new):
        out.append(NODE_PREEMPTION_POLICY_CHANGE)
    if old.declared_features != new.declared_features:
        out.append(NODE_DECLARED_FEATURES_CHANGE)
    return out


def preemption_policy(node: api.Node) -> object:
    """``spec.podPreemptionPolicy`` of the object ``node`` was parsed from (None: absent;
    v1.37's API server keeps it only under InPlacePodVerticalScalingSchedulerPreemption)."""
    spec = node.raw.get("spec")
    return spec.get("podPreemptionPolicy") if isinstance(spec, dict) else None


WORKLOAD_API_GROUP = "scheduling.k8s.io"
"""The Workload API's group: upstream's event resources ``scheduling.k8s.io/Workload``
(v1.35), ``scheduling.k8s.io/PodGroup`` (v1.36+) and ``scheduling.k8s.io/CompositePodGroup``
(v1.37)."""

_OBJECT_RESOURCES = {
    "Namespace": Resource.NAMESPACE,
    "Service": Resource.SERVICE,
    "PodDisruptionBudget": Resource.PDB,
    "PodGroup": Resource.POD_GROUP,
    "CompositePodGroup": Resource.COMPOSITE_POD_GROUP,
    "Workload": Resource.WORKLOAD,
    "ElasticQuota": Resource.ELASTIC_QUOTA,
    "ResourceClaim": Resource.RESOURCE_CLAIM,
    "ResourceSlice": Resource.RESOURCE_SLICE,
    "DeviceClass": Resource.DEVICE_CLASS,
    # upstream's slice tracker reports a rule's change as updates of the slices it patches
    "DeviceTaintRule": Resource.RESOURCE_SLICE,
    "PersistentVolume": Resource.PERSISTENT_VOLUME,
    "PersistentVolumeClaim": Resource.PERSISTENT_VOLUME_CLAIM,
    "StorageClass": Resource.STORAGE_CLASS,
    "CSINode": Resource.CSI_NODE,
    "CSIDriver": Resource.CSI_DRIVER,
    "CSIStorageCapacity": Resource.CSI_STORAGE_CAPACITY,
    "VolumeAttachment": Resource.VOLUME_ATTACHMENT,
}
# The storage and DRA kinds: upstream's informers (the claims' assume cache too) raise their
# deletion as any other event of the resource (``buildEvtResHandler``), labelled
# ``storage.k8s.io/CSINodeDelete``, ``resource.k8s.io/ResourceClaimDelete`` and so on.
_LABELLED_BY_RESOURCE = frozenset(
    {"PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode", "CSIDriver",
     "CSIStorageCapacity", "VolumeAttachment", "ResourceClaim", "ResourceSlice", "DeviceClass"}
)  # fmt: skip


def object_event(
    kind: str, deleted: bool, existed: bool | None = None, *, workload_api: bool = False
) -> ClusterEvent | None:
    """The event for an add, update or delete of a Namespace, Service, PDB, PodGroup,
    CompositePodGroup, Workload, ElasticQuota, DRA object (ResourceClaim, ResourceSlice,
    DeviceClass, DeviceTaintRule) or storage object (PersistentVolume,
    PersistentVolumeClaim, StorageClass, CSINode, CSIDriver, CSIStorageCapacity,
    VolumeAttachment).

    ``existed`` says whether the object was known before the change: False an Add, True an
    Update (upstream's informers tell them apart, so a plugin registered for Add alone, such
    as v1.35-1.36 GangScheduling's Workload or PodGroup Add, hears a new object); None (not
    known) an Add or Update.

    ``workload_api``: the object is a Workload API one (``scheduling.k8s.io``, not
    scheduler-plugins' PodGroup, which shares its resource): its event is labelled as
    upstream's resource (``scheduling.k8s.io/PodGroupAdd``, ``...Update``, ``...Delete``;
    v1.35's ``scheduling.k8s.io/WorkloadAdd`` and so on)."""
    resource = _OBJECT_RESOURCES.get(kind)
    if resource is None:
        return None
    known = deleted or existed is not None
    if workload_api and kind in ("PodGroup", "CompositePodGroup", "Workload") and known:
        action = ActionType.DELETE if deleted else ActionType.UPDATE if existed else ActionType.ADD
        name = "Delete" if deleted else "Update" if existed else "Add"
        return ClusterEvent(resource, action, f"{WORKLOAD_API_GROUP}/{kind}{name}")
    if deleted:
        label = "" if kind in _LABELLED_BY_RESOURCE else f"{kind}Delete"
        return ClusterEvent(resource, ActionType.DELETE, label)
    if existed is None:
        return ClusterEvent(resource, ActionType.ADD | ActionType.UPDATE, f"{kind}Change")
    if existed or kind == "DeviceTaintRule":  # a rule's change: updates of the slices
        return ClusterEvent(resource, ActionType.UPDATE)
    return ClusterEvent(resource, ActionType.ADD)
