"""GpuClustering: Pods of the same GPU class together (Score).

Reference ``GpuClusteringScorePlugin`` of ``hkust-adsl/kubernetes-scheduler-simulator``.  A
Pod's class is "shared GPU" or "``k`` whole GPUs"; a node running only that class scores
75..100, several classes including it 50..75, nothing 25..50, only other classes 0..25; within
a band ``25 * (8000 - gpu_left) / 8000`` (fuller nodes higher).  CPU-only Pods score 0.  A
shared-GPU Pod goes to the tightest GPU (GpuDevices' default).  No NormalizeScore; no args.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.framework import gpupolicies as gp
from kubesched.framework import gpuview as gv
from kubesched.framework.interface import SKIP, SUCCESS, CycleState, Handle, IntArray, Status
from kubesched.state import gpus
from kubesched.state.cache import ClusterState

NAME = "GpuClustering"
_KEY = "PreScore" + NAME


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod: gv.GpuPod


class GpuClustering:
    """Groups Pods of the same GPU class on the same nodes."""

    name = NAME

    def __init__(self, args: object | None, handle: Handle) -> None:
        del args
        self.handle = handle

    def pre_score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Status:
        """Parse the request; Skip CPU-only Pods (all 0) and malformed requests."""
        try:
            gpod = gv.gpu_pod(pod)
        except InputError:
            return SKIP
        if gpod.req.count == 0:
            return SKIP
        state[_KEY] = _PreScoreState(gpod)
        return SUCCESS

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """Scores 0..100, int64 ``(n,)``."""
        s = state.get(_KEY)
        if not isinstance(s, _PreScoreState):
            return np.zeros(rows.shape[0], dtype=np.int64)
        v = gv.node_view(cluster, gpus.table_for(cluster), rows)
        tag = gp.affinity_tag(s.pod.req.milli, s.pod.req.count)
        return gp.clustering_scores(v.tags, v.gpu_left, min(tag, v.tags.shape[1] - 1))


def new(args: object | None, handle: Handle) -> GpuClustering:
    """Factory; no args."""
    return GpuClustering(args, handle)
