"""Every plugin name kubesched knows, in one place: the upstream in-tree plugins (v1.34 and
those later releases add) and the plugins kubesched adds (gang scheduling, elastic quotas, GPU
sharing).

A plugin module declares its ``NAME`` from here and every other room (configuration defaults,
the parallel binder, the simulator, the scheduler, the explainer) refers to a plugin by these
constants, never by a string literal.  Out-of-tree plugins bring their own names.
"""

from __future__ import annotations

# --------------------------------------------------------------------------- upstream v1.34
SCHEDULING_GATES = "SchedulingGates"
PRIORITY_SORT = "PrioritySort"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_NAME = "NodeName"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_PORTS = "NodePorts"
NODE_RESOURCES_FIT = "NodeResourcesFit"
VOLUME_RESTRICTIONS = "VolumeRestrictions"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"
VOLUME_BINDING = "VolumeBinding"
VOLUME_ZONE = "VolumeZone"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"
DYNAMIC_RESOURCES = "DynamicResources"
DEFAULT_PREEMPTION = "DefaultPreemption"
NODE_RESOURCES_BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
IMAGE_LOCALITY = "ImageLocality"
DEFAULT_BINDER = "DefaultBinder"

# ------------------------------------------------------- upstream v1.35+ (per version)
NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"
"""v1.35+: Filter on Node ``status.declaredFeatures`` (gate NodeDeclaredFeatures)."""
GANG_SCHEDULING = "GangScheduling"
"""v1.35+: the Workload API's gang plugin (gate GangScheduling; v1.37: GenericWorkload)."""
TOPOLOGY_PLACEMENT_GENERATOR = "TopologyPlacementGenerator"
"""v1.36+: the Workload API's topology placement (gate TopologyAwareWorkloadScheduling)."""
POD_GROUP_PODS_COUNT = "PodGroupPodsCount"
"""v1.36+: the Workload API's placement score (gate TopologyAwareWorkloadScheduling)."""
DEFERRED_POD_SCHEDULING = "DeferredPodScheduling"
"""v1.37: in-place resize deferral (gate InPlacePodVerticalScalingSchedulerPreemption)."""
RESIZE_DEFERRED_SKIPPED = frozenset(
    {
        "NodeUnschedulable",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        NODE_DECLARED_FEATURES,
        "DynamicResources",
    }
)
"""The in-tree filter plugins whose PreFilter Skips (and Filter passes) a Pod whose resize is
deferred, under :data:`kubesched.config.featuregates.RESIZE_PREEMPTION` (upstream v1.37:
each checks ``IsPodResizeDeferred``; NodeName and NodeResourcesFit do not): the Pod runs
where it runs, only its resize is checked."""

# --------------------------------------------------------------------------- kubesched's own
COSCHEDULING = "Coscheduling"
"""Gang scheduling (scheduler-plugins' Coscheduling)."""
CAPACITY_SCHEDULING = "CapacityScheduling"
"""Elastic quotas (scheduler-plugins' CapacityScheduling)."""
DEVICE_FRAGMENTATION = "DeviceFragmentation"
"""DRA device fragmentation scoring."""
GPU_DEVICES = "GpuDevices"
GPU_RANDOM = "GpuRandom"
GPU_DOT_PRODUCT = "GpuDotProduct"
GPU_PACKING = "GpuPacking"
GPU_CLUSTERING = "GpuClustering"
GPU_BEST_FIT = "GpuBestFit"
GPU_FGD = "GpuFGD"
GPU_KUBESCHED = "GpuKubesched"
