"""GPU placement measures for metrics and report panels, as plain functions of the cluster
state (the GpuDevices plugin exports them; see :class:`GpuGauges`).

- :func:`fragmentation_percent`: the FGD paper's fragmentation of the idle GPU capacity over
  a target workload, as a percentage of all GPU capacity (an empty trace cluster measures
  about 14 %);
- :func:`idle_whole_gpu_nodes`: nodes of ``size`` GPUs with every GPU idle (the only places an
  ``size``-GPU job can start);
- :func:`pods_waiting_for_whole_node`: pending Pods that ask for more idle GPUs than any node
  has now;
- :func:`cross_numa_placements`: Pods holding GPUs on more than one NUMA node.

:func:`measure` takes all four at once; :data:`METRICS` names the Prometheus gauges they are
exported as (declared in :mod:`kubesched.metrics.catalog`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from kubesched.api import gpu as g
from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.devices.fragmentation import FragModel, TargetWorkload
from kubesched.state import gpus
from kubesched.state.cache import ClusterState

if TYPE_CHECKING:
    from kubesched.metrics import SchedulerMetrics

WHOLE_NODE_GPUS = 8
"""GPUs of a "whole node" for the idle-node measure (the trace's and DGX-class nodes)."""

METRICS = {
    "fragmentation_ratio": "scheduler_gpu_fragmentation_ratio",
    "idle_whole_gpu_nodes": "scheduler_gpu_idle_whole_nodes",
    "pods_waiting_for_whole_node": "scheduler_gpu_pods_waiting_for_whole_node",
    "cross_numa_placements": "scheduler_gpu_cross_numa_pods",
}
"""Field of :class:`GpuGauges` -> the gauge it is exported as."""


@dataclass(frozen=True, slots=True)
class GpuGauges:
    """The four measures at one moment."""

    fragmentation_percent: float
    """Fragmented idle GPU capacity, percent of the cluster's GPU capacity."""
    idle_whole_gpu_nodes: int
    """Nodes of :data:`WHOLE_NODE_GPUS` GPUs, all idle."""
    pods_waiting_for_whole_node: int
    """Pending multi-GPU Pods asking more idle GPUs than any one node has."""
    cross_numa_placements: int
    """Pods whose GPUs sit on more than one NUMA node."""

    @property
    def fragmentation_ratio(self) -> float:
        """:attr:`fragmentation_percent` / 100 (Prometheus prefers ratios)."""
        return self.fragmentation_percent / 100.0

    def as_json(self) -> dict[str, float | int]:
        """The timeline's field names."""
        return {
            "fragmentationPercent": round(self.fragmentation_percent, 4),
            "idleWholeGpuNodes": self.idle_whole_gpu_nodes,
            "podsWaitingForWholeNode": self.pods_waiting_for_whole_node,
            "crossNumaPods": self.cross_numa_placements,
        }

    def export(self, metrics: SchedulerMetrics) -> None:
        """Set the gauges of :data:`METRICS` on a ``SchedulerMetrics`` (its ``own`` dict)."""
        values = {
            "fragmentation_ratio": self.fragmentation_ratio,
            "idle_whole_gpu_nodes": self.idle_whole_gpu_nodes,
            "pods_waiting_for_whole_node": self.pods_waiting_for_whole_node,
            "cross_numa_placements": self.cross_numa_placements,
        }
        for field, name in METRICS.items():
            gauge = metrics.own.get(name)
            if gauge is not None:
                gauge.set(float(values[field]))


def measure(
    cluster: ClusterState,
    pending: Iterable[api.Pod],
    workload: TargetWorkload | FragModel,
    size: int = WHOLE_NODE_GPUS,
) -> GpuGauges:
    """All four measures of ``cluster`` (``pending``: the Pods still waiting)."""
    return GpuGauges(
        fragmentation_percent(cluster, workload),
        idle_whole_gpu_nodes(cluster, size),
        pods_waiting_for_whole_node(cluster, pending),
        cross_numa_placements(cluster),
    )


def fragmentation_percent(cluster: ClusterState, workload: TargetWorkload | FragModel) -> float:
    """Fragmented GPU capacity over ``workload`` (or a model built for the cluster's GPU
    table), in percent of the cluster's GPU capacity (0 for a cluster without GPUs or an empty
    workload)."""
    table = gpus.table_for(cluster)
    rows = cluster.nodes.order()
    capacity = int(table.count[rows].sum()) * g.MILLI
    tw = workload.workload if isinstance(workload, FragModel) else workload
    if capacity == 0 or not tw.shapes:
        return 0.0
    fm = workload
    if (
        not isinstance(fm, FragModel)
        or fm.models != tuple(table.models)
        or fm.max_gpus != table.width
    ):
        fm = FragModel(tw, table.models, table.width)
    cpu_left = cluster.nodes.allocatable[rows, 0] - cluster.nodes.requested[rows, 0]
    frag = fm.frag(table.free[rows], cpu_left, table.model[rows])
    return float(frag.sum()) / capacity * 100.0


def idle_whole_gpu_nodes(cluster: ClusterState, size: int = WHOLE_NODE_GPUS) -> int:
    """Nodes with exactly ``size`` GPUs, all of them idle."""
    table = gpus.table_for(cluster)
    rows = cluster.nodes.order()
    count = table.count[rows]
    idle = (table.free[rows] == g.MILLI).sum(axis=1)
    return int(((count == size) & (idle == size)).sum())


def pods_waiting_for_whole_node(cluster: ClusterState, pending: Iterable[api.Pod]) -> int:
    """Pending Pods whose whole-GPU count exceeds the idle GPUs of every node."""
    table = gpus.table_for(cluster)
    rows = cluster.nodes.order()
    most_idle = int((table.free[rows] == g.MILLI).sum(axis=1).max()) if rows.size else 0
    waiting = 0
    for pod in pending:
        try:
            req = g.pod_gpu_request(pod)
        except InputError:
            continue
        if req.count >= 2 and req.milli == g.MILLI and req.count > most_idle:
            waiting += 1
    return waiting


def cross_numa_placements(cluster: ClusterState) -> int:
    """Pods whose GPUs sit on more than one NUMA node."""
    table = gpus.table_for(cluster)
    crossing = 0
    for a in table.assigned.values():
        if len(a.indices) > 1:
            numa = table.numa[a.row, np.asarray(a.indices)]
            crossing += int(np.unique(numa).size > 1)
    return crossing


def latest(plugins: Iterable[object]) -> GpuGauges | None:
    """The measures the first plugin among ``plugins`` that keeps them (``gpu_gauges``, the
    GpuDevices plugin after its ``sync_metrics``) took last, or None."""
    for p in plugins:
        if isinstance(p, KeepsGpuGauges) and isinstance(p.gpu_gauges, GpuGauges):
            return p.gpu_gauges
    return None


@runtime_checkable
class KeepsGpuGauges(Protocol):
    """A plugin that keeps the last GPU measures it took (GpuDevices): ``gpu_gauges`` is
    None until its first ``sync_metrics``."""

    gpu_gauges: GpuGauges | None
