"""GpuFGD: fragmentation gradient descent (Score), the FGD paper's policy.

Weng et al., USENIX ATC '23; reference ``FGDScorePlugin`` of
``hkust-adsl/kubernetes-scheduler-simulator``: score =
``int64(sigmoid((frag_before - frag_after) / 1000) * 100)`` where ``frag`` is the node's GPU
fragmentation over the target workload (:mod:`kubesched.devices.fragmentation`); for a shared-GPU
Pod each GPU is tried and the best counts (its index is left in CycleState for GpuDevices'
Reserve).  Args: optional ``targetWorkload`` (see :mod:`kubesched.devices.gpuview`); without
it the workload is learned from the Pods seen.  No NormalizeScore (scores are 0..100).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kubesched.api.errors import InputError
from kubesched.config import names
from kubesched.devices import gpuview as gv
from kubesched.devices import policies as gp
from kubesched.framework.interface import CycleState, Handle, IntArray
from kubesched.state.gpus import GpuTable

NAME = names.GPU_FGD


class GpuFGD(gv.WorkloadScorePlugin):
    """Prefers the node (and GPU) whose fragmentation grows least."""

    name = NAME

    def score_view(
        self, state: CycleState, gpod: gv.GpuPod, table: GpuTable, view: gv.NodeView, rows: IntArray
    ) -> IntArray:
        """FGD scores 0..100, int64 ``(n,)``."""
        fm, _ = self.workload.models(table)
        frag_now = fm.frag(view.free, view.cpu_left, view.model)
        req = gpod.req
        scores, gpu = gp.fgd_scores(
            fm, view.free, view.cpu_left, view.model, frag_now, gpod.cpu, req.milli, req.count
        )
        if req.shared:
            state[gp.CHOICE_KEY] = dict(zip(rows.tolist(), gpu.tolist(), strict=True))
        return np.clip(scores, 0, 100)


def new(args: object | None, handle: Handle) -> GpuFGD:
    """Factory: ``args`` may hold ``targetWorkload``."""
    if args is not None and not isinstance(args, Mapping):
        raise InputError(f"{NAME}: args must be a mapping, got {type(args).__name__}")
    return GpuFGD(args, handle)
