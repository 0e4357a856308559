"""GPU placement measures for metrics and report panels, as plain functions of the cluster
state (the observability layer decides how to export them).

- :func:`fragmentation_percent`: the FGD paper's fragmentation of the idle GPU capacity over
  a target workload, as a percentage of all GPU capacity (an empty trace cluster measures
  about 14 %);
- :func:`idle_whole_gpu_nodes`: nodes of ``size`` GPUs with every GPU idle (the only places an
  ``size``-GPU job can start);
- :func:`pods_waiting_for_whole_node`: pending Pods that ask for more idle GPUs than any node
  has now;
- :func:`cross_numa_placements`: Pods holding GPUs on more than one NUMA node.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from kubesched.api import gpu as g
from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.framework.gpufrag import FragModel, TargetWorkload
from kubesched.state import gpus
from kubesched.state.cache import ClusterState


def fragmentation_percent(cluster: ClusterState, workload: TargetWorkload) -> float:
    """Fragmented GPU capacity over ``workload``, in percent of the cluster's GPU capacity
    (0 for a cluster without GPUs)."""
    table = gpus.table_for(cluster)
    rows = cluster.nodes.order()
    capacity = int(table.count[rows].sum()) * g.MILLI
    if capacity == 0:
        return 0.0
    fm = FragModel(workload, table.models, table.width)
    cpu_left = cluster.nodes.allocatable[rows, 0] - cluster.nodes.requested[rows, 0]
    frag = fm.frag(table.free[rows], cpu_left, table.model[rows])
    return float(frag.sum()) / capacity * 100.0


def idle_whole_gpu_nodes(cluster: ClusterState, size: int = 8) -> int:
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
