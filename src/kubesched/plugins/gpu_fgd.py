"""GpuFGD: fragmentation gradient descent (Score), the FGD paper's policy.

Weng et al., USENIX ATC '23; reference ``FGDScorePlugin`` of
``hkust-adsl/kubernetes-scheduler-simulator``: score =
``int64(sigmoid((frag_before - frag_after) / 1000) * 100)`` where ``frag`` is the node's GPU
fragmentation over the target workload (:mod:`kubesched.framework.gpufrag`); for a shared-GPU
Pod each GPU is tried and the best counts (its index is left in CycleState for GpuDevices'
Reserve).  Args: optional ``targetWorkload`` (see :mod:`kubesched.framework.gpuview`); without
it the workload is learned from the Pods seen.  No NormalizeScore (scores are 0..100).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.framework import gpupolicies as gp
from kubesched.framework import gpuview as gv
from kubesched.framework.interface import SKIP, SUCCESS, CycleState, Handle, IntArray, Status
from kubesched.state import gpus
from kubesched.state.cache import ClusterState

NAME = "GpuFGD"
_KEY = "PreScore" + NAME


# --------------------------------------------------------------------------- cycle state
@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod: gv.GpuPod


# --------------------------------------------------------------------------- plugin
class GpuFGD:
    """Prefers the node (and GPU) whose fragmentation grows least."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.handle = handle
        self.workload = gv.WorkloadModel(gv.parse_target_workload(args, NAME))
        self.workload.see_cluster(handle.cluster)

    def pre_score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Status:
        """Parse the request and count the Pod's shape; Skip a malformed request."""
        try:
            gpod = gv.gpu_pod(pod)
        except InputError:
            return SKIP
        self.workload.see(pod.key, gpod.shape)
        state[_KEY] = _PreScoreState(gpod)
        return SUCCESS

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """FGD scores 0..100, int64 ``(n,)``."""
        s = state.get(_KEY)
        if not isinstance(s, _PreScoreState) or rows.shape[0] == 0:
            return np.zeros(rows.shape[0], dtype=np.int64)
        table = gpus.table_for(cluster)
        fm, _ = self.workload.models(table)
        v = gv.node_view(cluster, table, rows)
        frag_now = fm.frag(v.free, v.cpu_left, v.model)
        req = s.pod.req
        scores, gpu = gp.fgd_scores(
            fm, v.free, v.cpu_left, v.model, frag_now, s.pod.cpu, req.milli, req.count
        )
        if req.shared:
            state[gp.CHOICE_KEY] = dict(zip(rows.tolist(), gpu.tolist(), strict=True))
        return np.clip(scores, 0, 100)


def new(args: object | None, handle: Handle) -> GpuFGD:
    """Factory: ``args`` may hold ``targetWorkload``."""
    if args is not None and not isinstance(args, Mapping):
        raise InputError(f"{NAME}: args must be a mapping, got {type(args).__name__}")
    return GpuFGD(args, handle)
