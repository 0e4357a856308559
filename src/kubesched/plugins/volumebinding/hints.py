"""VolumeBinding's queueing hints for storage objects (upstream v1.34-v1.37
``volume_binding.go``, ``isSchedulableAfter*Change``): whether an added or updated
StorageClass, CSINode, CSIDriver or CSIStorageCapacity may make a Pod the plugin rejected
schedulable.

Each hint takes ``(pod, old, new)`` as the queue hands an object event over: the raw
objects before and after the change, ``old`` None for an add
(:meth:`kubesched.scheduler.core.Scheduler.on_object`).  An object that does not parse
raises, which the queue counts as Queue, as upstream counts a hint's error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api import objects as api
from kubesched.api import storage as st
from kubesched.framework.interface import QueueingHint


def is_schedulable_after_class_change(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """A new StorageClass may help; an updated one only when its ``allowedTopologies``
    changed (its binding mode cannot change)."""
    del pod
    if not isinstance(old, Mapping):
        return QueueingHint.QUEUE
    before, after = st.parse_class(old), st.parse_class(new)
    if before.allowed_topologies != after.allowed_topologies:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_csinode_change(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """A new CSINode may help; an updated one only when its migrated-plugins annotation
    changed (the in-tree volumes it translates)."""
    del pod
    if not isinstance(old, Mapping):
        return QueueingHint.QUEUE
    key = st.ANN_MIGRATED_PLUGINS
    before = st.parse_csinode(old).annotations.get(key, "")
    if before != st.parse_csinode(new).annotations.get(key, ""):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_driver_change(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """An updated CSIDriver helps when it stopped ``storageCapacity`` and the Pod has an
    inline CSI volume of that driver (read from the Pod as written: kubesched's volumes
    keep no inline CSI source)."""
    if not isinstance(old, Mapping):
        return QueueingHint.QUEUE
    before, after = st.parse_driver(old), st.parse_driver(new)
    volumes = (pod.raw.get("spec") or {}).get("volumes") or []
    for volume in volumes:
        csi = volume.get("csi") if isinstance(volume, Mapping) else None
        if not isinstance(csi, Mapping) or csi.get("driver") != after.name:
            continue
        if before.storage_capacity and not after.storage_capacity:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_capacity_change(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """A new CSIStorageCapacity may help; an updated one when its volume limit (the
    maximum volume size, else the capacity) appeared or grew."""
    del pod
    if not isinstance(old, Mapping):
        return QueueingHint.QUEUE
    before, after = st.parse_capacity(old).limit(), st.parse_capacity(new).limit()
    if after is not None and (before is None or after > before):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
