"""GpuPacking: shared GPUs in use first, then idle GPUs of used nodes, then idle nodes (Score).

Reference ``GpuPackingScorePlugin`` of ``hkust-adsl/kubernetes-scheduler-simulator``: a Pod
that fits on GPUs already shared scores ``max(100 - freeRatio / 10, 50)`` (``freeRatio`` the
percent free on the GPUs it would use), one that needs idle GPUs of a used node
``max(50 - idleGpusUsed, 33)``, one on a fully idle node ``max(33 - idleGpus, idleGpus)``; a
CPU-only Pod scores 0 everywhere.  A shared-GPU Pod goes to the tightest GPU (GpuDevices'
default).  No NormalizeScore; no args.
"""

from __future__ import annotations

from kubesched.config import names
from kubesched.devices import gpuview as gv
from kubesched.devices import policies as gp
from kubesched.framework.interface import CycleState, Handle, IntArray
from kubesched.state.gpus import GpuTable

NAME = names.GPU_PACKING


class GpuPacking(gv.GpuScorePlugin):
    """Packs GPU work onto GPUs and nodes already in use."""

    name = NAME
    skip_cpu_only = True

    def score_view(
        self, state: CycleState, gpod: gv.GpuPod, table: GpuTable, view: gv.NodeView, rows: IntArray
    ) -> IntArray:
        """Scores 0..100, int64 ``(n,)``."""
        return gp.packing_scores(view.free, view.count, gpod.req.milli, gpod.req.count)


def new(args: object | None, handle: Handle) -> GpuPacking:
    """Factory; no args."""
    return GpuPacking(args, handle)
