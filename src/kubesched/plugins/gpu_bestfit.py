"""GpuBestFit: the node left with the least CPU and GPU after placement (Score, NormalizeScore).

Reference ``BestFitScorePlugin`` of ``hkust-adsl/kubernetes-scheduler-simulator``:
``int64((1 - (0.5 (cpu_left - cpu) / 128000 + 0.5 (gpu_left - gpu) / 8000)) * 100)`` with
CPU in millicores and GPU in thousandths, then min-max normalised to 0..100 over the nodes
(integer arithmetic, all 0 when every node scores the same).  A shared-GPU Pod goes to the
tightest GPU (GpuDevices' default).  No args.
"""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.devices import gpuview as gv
from kubesched.devices import policies as gp
from kubesched.framework.interface import CycleState, Handle, IntArray
from kubesched.state.gpus import GpuTable

NAME = names.GPU_BEST_FIT


class GpuBestFit(gv.GpuScorePlugin):
    """Prefers the fullest node that still fits."""

    name = NAME

    def score_view(
        self, state: CycleState, gpod: gv.GpuPod, table: GpuTable, view: gv.NodeView, rows: IntArray
    ) -> IntArray:
        """Raw best-fit scores, int64 ``(n,)``."""
        return gp.bestfit_scores(view.cpu_left, view.gpu_left, gpod.cpu, gpod.req.total_milli)

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
