"""GPU topology from Koordinator ``Device`` objects, as an alternative to the node annotation
``kubesched.io/gpu-topology``.

Koordinator's koordlet reports each node's devices in a cluster-scoped ``Device`` object
(``scheduling.koordinator.sh/v1alpha1``, named after the node; ``apis/scheduling/v1alpha1/
device_types.go``)::

    spec:
      devices:
      - type: gpu
        minor: 0                       # the GPU index
        topology: {socketID: 0, nodeID: 0, pcieID: "pci0000:3a", busID: "0000:3b:00.0"}

Each GPU's NUMA node is ``topology.nodeID`` and its PCIe switch ``topology.pcieID`` (strings
numbered per node in order of first appearance); Koordinator reports no NVLink domains, so
the NVLink level stays what the node declares (one domain by default).  Non-GPU devices are
ignored.  :class:`DeviceTopologies`, a cache observer beside the GPU table, lays a Device's
levels over the table's rows whenever the Device or its node changes; a deleted Device gives
the node back its own (annotation) topology.  The GpuDevices plugin feeds it the Device
objects it hears (``on_object``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.state import gpus
from kubesched.state.cache import ClusterState, PodRecord

log = logging.getLogger(__name__)

API_VERSION = "scheduling.koordinator.sh/v1alpha1"
KIND = "Device"
GPU_TYPE = "gpu"


@dataclass(frozen=True, slots=True)
class DeviceGpus:
    """One node's GPU topology from its Device: per GPU index, NUMA node and PCIe switch."""

    node: str
    numa: tuple[int, ...]
    pcie: tuple[int, ...]


def is_device(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is a Koordinator Device."""
    return obj.get("kind") == KIND and obj.get("apiVersion") == API_VERSION


def device_gpus(obj: Mapping[str, Any]) -> DeviceGpus:
    """The GPU topology of a Device; :class:`InputError` with field paths when malformed
    (GPU minors must be 0..N-1, each once)."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        raise InputError([("metadata.name", "a Device needs the name of its node")])
    where = f"Device {name}: spec.devices"
    spec = obj.get("spec") or {}
    devices = (spec.get("devices") or []) if isinstance(spec, Mapping) else None
    if not isinstance(devices, list):
        raise InputError([(where, "must be a list")])
    found: dict[int, tuple[int, str]] = {}
    problems: list[tuple[str, str]] = []
    for i, dev in enumerate(devices):
        path = f"{where}[{i}]"
        if not isinstance(dev, Mapping):
            problems.append((path, "must be an object"))
            continue
        if str(dev.get("type", "")).lower() != GPU_TYPE:
            continue
        minor, topo = dev.get("minor"), dev.get("topology") or {}
        if not isinstance(minor, int) or isinstance(minor, bool) or minor < 0:
            problems.append((f"{path}.minor", "must be an integer >= 0"))
            continue
        if minor in found:
            problems.append((f"{path}.minor", f"GPU {minor} appears twice"))
            continue
        numa = topo.get("nodeID", 0) if isinstance(topo, Mapping) else None
        if not isinstance(numa, int) or isinstance(numa, bool):
            problems.append((f"{path}.topology.nodeID", "must be an integer"))
            continue
        pcie = topo.get("pcieID", "") if isinstance(topo, Mapping) else ""
        found[minor] = (numa, str(pcie) if pcie not in (None, "") else f"gpu{minor}")
    if not problems and sorted(found) != list(range(len(found))):
        problems.append((where, f"GPU minors {sorted(found)} are not 0..{len(found) - 1}"))
    if problems:
        raise InputError(problems)
    switches: dict[str, int] = {}
    pcie_ids = tuple(switches.setdefault(found[m][1], len(switches)) for m in sorted(found))
    return DeviceGpus(name, tuple(found[m][0] for m in sorted(found)), pcie_ids)


class DeviceTopologies:
    """Cache observer (registered after the GPU table) overlaying Devices' topology."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.table = gpus.table_for(cluster)
        self.by_node: dict[str, DeviceGpus] = {}
        cluster.observe(self)

    def device_changed(self, obj: Mapping[str, Any], deleted: bool = False) -> None:
        """A Device was created, updated or (``deleted``) removed; malformed ones are logged
        and ignored, as an informer would skip them."""
        try:
            dev = device_gpus(obj)
        except InputError as e:
            log.warning("ignoring Device: %s", e)
            return
        row = self.cluster.nodes.row_of.get(dev.node)
        if deleted:
            self.by_node.pop(dev.node, None)
            node = self.cluster.nodes.nodes[row] if row is not None else None
            if row is not None and node is not None:  # the node's own topology again
                self.table.node_changed(row, node, node)
            return
        self.by_node[dev.node] = dev
        if row is not None:
            self._apply(row, dev)

    def _apply(self, row: int, dev: DeviceGpus) -> None:
        n = min(int(self.table.count[row]), len(dev.numa))
        if n < len(dev.numa) or n < int(self.table.count[row]):
            log.warning(
                "Device %s lists %d GPUs, the node has %d; using the first %d",
                dev.node,
                len(dev.numa),
                int(self.table.count[row]),
                n,
            )
        self.table.numa[row, :n] = dev.numa[:n]
        self.table.pcie[row, :n] = dev.pcie[:n]
        self.table.version += 1

    # ------------------------------------------------------------------ observer
    def node_changed(self, row: int, old: api.Node | None, new: api.Node | None) -> None:
        """Lay the node's Device over what the GPU table just read from the node."""
        if new is not None and new.name in self.by_node:
            self._apply(row, self.by_node[new.name])

    def pod_added(self, rec: PodRecord) -> None:
        """Pods do not change topology."""

    def pod_removed(self, rec: PodRecord) -> None:
        """Pods do not change topology."""


def topologies_for(cluster: ClusterState) -> DeviceTopologies:
    """The cluster's Device overlay, created and registered on first use."""
    for o in cluster.observers:
        if isinstance(o, DeviceTopologies):
            return o
    return DeviceTopologies(cluster)
