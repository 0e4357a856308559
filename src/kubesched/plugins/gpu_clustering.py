"""GpuClustering: Pods of the same GPU class together (Score).

Reference ``GpuClusteringScorePlugin`` of ``hkust-adsl/kubernetes-scheduler-simulator``.  A
Pod's class is "shared GPU" or "``k`` whole GPUs"; a node running only that class scores
75..100, several classes including it 50..75, nothing 25..50, only other classes 0..25; within
a band ``25 * (8000 - gpu_left) / 8000`` (fuller nodes higher).  CPU-only Pods score 0.  A
shared-GPU Pod goes to the tightest GPU (GpuDevices' default).  No NormalizeScore; no args.
"""

from __future__ import annotations

from kubesched.config import names
from kubesched.devices import gpuview as gv
from kubesched.devices import policies as gp
from kubesched.framework.interface import CycleState, Handle, IntArray
from kubesched.state.gpus import GpuTable

NAME = names.GPU_CLUSTERING


class GpuClustering(gv.GpuScorePlugin):
    """Groups Pods of the same GPU class on the same nodes."""

    name = NAME
    skip_cpu_only = True

    def score_view(
        self, state: CycleState, gpod: gv.GpuPod, table: GpuTable, view: gv.NodeView, rows: IntArray
    ) -> IntArray:
        """Scores 0..100, int64 ``(n,)``."""
        tag = gp.affinity_tag(gpod.req.milli, gpod.req.count)
        return gp.clustering_scores(view.tags, view.gpu_left, min(tag, view.tags.shape[1] - 1))


def new(args: object | None, handle: Handle) -> GpuClustering:
    """Factory; no args."""
    return GpuClustering(args, handle)
