"""GpuDotProduct: Tetris-style alignment of free and requested resources (Score).

Reference ``DotProductScorePlugin`` of ``hkust-adsl/kubernetes-scheduler-simulator`` as the FGD
paper runs it (GPU dimension merged, normalised by the largest node spec):
``int64(100 * (1 - ((cpu_left / 128000) (cpu / 128000) + (gpu_left / 8000) (gpu / 8000)) / 2))``,
a smaller dot product scoring higher.  A shared-GPU Pod goes to the tightest GPU (GpuDevices'
default).  No NormalizeScore; no args.
"""

from __future__ import annotations

import numpy as np

from kubesched.config import names
from kubesched.devices import gpuview as gv
from kubesched.devices import policies as gp
from kubesched.framework.interface import CycleState, Handle, IntArray
from kubesched.state.gpus import GpuTable

NAME = names.GPU_DOT_PRODUCT


class GpuDotProduct(gv.GpuScorePlugin):
    """Prefers nodes whose free resources align least with the request."""

    name = NAME

    def score_view(
        self, state: CycleState, gpod: gv.GpuPod, table: GpuTable, view: gv.NodeView, rows: IntArray
    ) -> IntArray:
        """Scores 0..100, int64 ``(n,)``."""
        raw = gp.dotproduct_scores(view.cpu_left, view.gpu_left, gpod.cpu, gpod.req.total_milli)
        return np.clip(raw, 0, 100)


def new(args: object | None, handle: Handle) -> GpuDotProduct:
    """Factory; no args."""
    return GpuDotProduct(args, handle)
