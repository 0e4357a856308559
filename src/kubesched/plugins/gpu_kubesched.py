"""GpuKubesched: kubesched's own GPU placement policy (Score, NormalizeScore).

FGD's fragmentation gradient plus GPU-level packing that values the hole a shared-GPU Pod
leaves by its expected eventual waste, keeps CPU-starved nodes from stranding GPUs, and
keeps GPU Pods off the GPU models that model-restricted Pods will need, by the models' GPU
count in the cluster (:func:`kubesched.devices.policies.kubesched_scores`).  Raw
scores are lexicographic composite keys; NormalizeScore maps their distinct values by rank
onto 0..100 (the best node gets 100), so the order survives weighting.  For a shared-GPU Pod
the chosen GPU index of each node is left in CycleState for GpuDevices' Reserve.  Args:
optional ``targetWorkload`` (see :mod:`kubesched.devices.gpuview`); without it the
workload is learned from the Pods seen.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.config import names
from kubesched.devices import gpuview as gv
from kubesched.devices import policies as gp
from kubesched.devices.fragmentation import FragModel
from kubesched.devices.policies import FloatArray
from kubesched.framework.interface import CycleState, Handle, IntArray
from kubesched.state.gpus import GpuTable

NAME = names.GPU_KUBESCHED


class GpuKubesched(gv.WorkloadScorePlugin):
    """Prefers the node (and GPU) that wastes least GPU capacity, now and later."""

    name = NAME

    def score_view(
        self, state: CycleState, gpod: gv.GpuPod, table: GpuTable, view: gv.NodeView, rows: IntArray
    ) -> IntArray:
        """Composite scores (higher is better), int64 ``(n,)``."""
        fm, hv = self.workload.models(table)
        v = view
        frag_now = fm.frag(v.free, v.cpu_left, v.model)
        req = gpod.req
        pressure = self.pressure(fm, table)[v.model] if req.count else None
        scores, gpu = gp.kubesched_scores(
            fm, hv, v.free, v.count, v.cpu_left, v.model, frag_now, gpod.cpu, req.milli,
            req.count, pressure=pressure,
        )  # fmt: skip
        if req.shared:
            state[gp.CHOICE_KEY] = dict(zip(rows.tolist(), gpu.tolist(), strict=True))
        return scores

    def pressure(self, fm: FragModel, table: GpuTable) -> FloatArray:
        """:func:`~kubesched.devices.policies.model_pressure` per model code of
        ``table``, from the GPUs of every node in the cluster; float64 ``(M + 1,)``."""
        rows = self.handle.cluster.nodes.order()
        capacity = np.bincount(
            table.model[rows], weights=table.count[rows], minlength=len(table.models)
        )
        return gp.model_pressure(fm.workload, tuple(table.models), capacity)

    def normalize_score(self, state: CycleState, pod: api.Pod, scores: IntArray) -> None:
        """Distinct raw values by rank onto 0..100, in place (the best gets 100)."""
        rank_scores(scores)


# --------------------------------------------------------------------------- kernel
def rank_scores(scores: IntArray) -> None:
    """Replace ``scores`` (int64 ``(n,)``) in place by ``100 * rank / (distinct - 1)`` of
    their value among the distinct values (all 100 when they are equal)."""
    if scores.shape[0] == 0:
        return
    values, inverse = np.unique(scores, return_inverse=True)
    if values.size == 1:
        scores[:] = 100
        return
    scores[:] = (inverse * 100) // (values.size - 1)


def new(args: object | None, handle: Handle) -> GpuKubesched:
    """Factory: ``args`` may hold ``targetWorkload``."""
    if args is not None and not isinstance(args, Mapping):
        raise InputError(f"{NAME}: args must be a mapping, got {type(args).__name__}")
    return GpuKubesched(args, handle)
