"""GpuBestFit: the node left with the least CPU and GPU after placement (Score, NormalizeScore).

Reference ``BestFitScorePlugin`` of ``hkust-adsl/kubernetes-scheduler-simulator``:
``int64((1 - (0.5 (cpu_left - cpu) / 128000 + 0.5 (gpu_left - gpu) / 8000)) * 100)`` with
CPU in millicores and GPU in thousandths, then min-max normalised to 0..100 over the nodes
(integer arithmetic, all 0 when every node scores the same).  A shared-GPU Pod goes to the
tightest GPU (GpuDevices' default).  No args.
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

NAME = "GpuBestFit"
_KEY = "PreScore" + NAME


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod: gv.GpuPod


class GpuBestFit:
    """Prefers the fullest node that still fits."""

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
        """Raw best-fit scores, int64 ``(n,)``."""
        s = state.get(_KEY)
        if not isinstance(s, _PreScoreState):
            return np.zeros(rows.shape[0], dtype=np.int64)
        v = gv.node_view(cluster, gpus.table_for(cluster), rows)
        return gp.bestfit_scores(v.cpu_left, v.gpu_left, s.pod.cpu, s.pod.req.total_milli)

    def normalize_score(self, state: CycleState, pod: api.Pod, scores: IntArray) -> None:
        """Min-max onto 0..100 in place (reference ``NormalizeScore``)."""
        min_max_normalize(scores)


def min_max_normalize(scores: IntArray) -> None:
    """``(s - lowest) * 100 // (highest - lowest)`` in place; all 0 when they are equal."""
    if scores.shape[0] == 0:
        return
    lo, hi = int(scores.min()), int(scores.max())
    if hi == lo:
        scores[:] = 0
    else:
        scores[:] = (scores - lo) * 100 // (hi - lo)


def new(args: object | None, handle: Handle) -> GpuBestFit:
    """Factory; no args."""
    return GpuBestFit(args, handle)
