"""Every plugin name kubesched knows, in one place: the upstream v1.34 in-tree plugins, the
newer releases' ones kubesched models, and the plugins kubesched adds (gang scheduling,
elastic quotas, GPU sharing).

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

# --------------------------------------------------------------------------- upstream v1.35+
NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"
"""In the default profile from v1.36 (the NodeDeclaredFeatures gate); not in v1.34's."""

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
