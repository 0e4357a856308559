"""GpuPacking: shared GPUs in use first, then idle GPUs of used nodes, then idle nodes (Score).

Reference ``GpuPackingScorePlugin`` of ``hkust-adsl/kubernetes-scheduler-simulator``: a Pod
that fits on GPUs already shared scores ``max(100 - freeRatio / 10, 50)`` (``freeRatio`` the
percent free on the GPUs it would use), one that needs idle GPUs of a used node
``max(50 - idleGpusUsed, 33)``, one on a fully idle node ``max(33 - idleGpus, idleGpus)``; a
CPU-only Pod scores 0 everywhere.  A shared-GPU Pod goes to the tightest GPU (GpuDevices'
default).  No NormalizeScore; no args.
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

NAME = "GpuPacking"
_KEY = "PreScore" + NAME


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod: gv.GpuPod


class GpuPacking:
    """Packs GPU work onto GPUs and nodes already in use."""

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
        return gp.packing_scores(v.free, v.count, s.pod.req.milli, s.pod.req.count)


def new(args: object | None, handle: Handle) -> GpuPacking:
    """Factory; no args."""
    return GpuPacking(args, handle)
