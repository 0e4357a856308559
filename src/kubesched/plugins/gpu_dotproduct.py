"""GpuDotProduct: Tetris-style alignment of free and requested resources (Score).

Reference ``DotProductScorePlugin`` of ``hkust-adsl/kubernetes-scheduler-simulator`` as the FGD
paper runs it (GPU dimension merged, normalised by the largest node spec):
``int64(100 * (1 - ((cpu_left / 128000) (cpu / 128000) + (gpu_left / 8000) (gpu / 8000)) / 2))``,
a smaller dot product scoring higher.  A shared-GPU Pod goes to the tightest GPU (GpuDevices'
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

NAME = "GpuDotProduct"
_KEY = "PreScore" + NAME


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod: gv.GpuPod


class GpuDotProduct:
    """Prefers nodes whose free resources align least with the request."""

    name = NAME

    def __init__(self, args: object | None, handle: Handle) -> None:
        del args
        self.handle = handle

    def pre_score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Status:
        """Parse the request; Skip a malformed one."""
        try:
            state[_KEY] = _PreScoreState(gv.gpu_pod(pod))
        except InputError:
            return SKIP
        return SUCCESS

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """Scores 0..100, int64 ``(n,)``."""
        s = state.get(_KEY)
        if not isinstance(s, _PreScoreState):
            return np.zeros(rows.shape[0], dtype=np.int64)
        v = gv.node_view(cluster, gpus.table_for(cluster), rows)
        raw = gp.dotproduct_scores(v.cpu_left, v.gpu_left, s.pod.cpu, s.pod.req.total_milli)
        return np.clip(raw, 0, 100)


def new(args: object | None, handle: Handle) -> GpuDotProduct:
    """Factory; no args."""
    return GpuDotProduct(args, handle)
