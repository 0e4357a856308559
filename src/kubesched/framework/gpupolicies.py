"""GPU placement policies as pure numpy kernels: the GPU score plugins and the trace replay
both call these, so a policy means the same thing on Kubernetes objects and on trace rows.

The baselines follow the FGD paper's reference simulator (``hkust-adsl/kubernetes-scheduler-
simulator``, ``pkg/simulator/plugin/*_score.go``) formula for formula, including its integer
arithmetic: Random, DotProduct (Tetris alignment, merged GPU dimension, normalised by the
largest node spec), GpuPacking, GpuClustering, BestFit and FGD (:mod:`kubesched.framework.
gpufrag`).  :func:`kubesched_scores` is kubesched's own policy.

Arrays, for ``n`` candidate nodes with at most ``G`` GPUs each: ``free`` int64 ``(n, G)`` idle
thousandths per GPU index (0 where a node has no such GPU), ``count`` int64 ``(n,)`` GPUs per
node, ``cpu_left`` int64 ``(n,)`` free millicores.  A request is ``(cpu, milli, num)``:
millicores, thousandths per GPU and GPU count (``milli < 1000`` means one shared GPU,
``num == 0`` a CPU-only task).  Scores are int64 ``(n,)``, higher is better.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from kubesched.framework import gpufrag
from kubesched.framework.gpufrag import FragModel

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

MILLI = gpufrag.MILLI
MAX_SPEC_CPU = 128_000
"""CPU of the largest node spec, millicores (the reference simulator's normaliser)."""
MAX_SPEC_GPU = 8_000
"""GPU of the largest node spec, thousandths."""
MAX_SCORE = 100

POLICIES = ("random", "dotproduct", "gpupacking", "gpuclustering", "bestfit", "fgd", "kubesched")
"""Policy names as the command line spells them."""

CHOICE_KEY = "kubesched.io/gpu-choice"
"""CycleState key where a GPU policy leaves ``{node row: GPU index}`` for shared-GPU Pods, so
the device-allocation plugin's Reserve takes the GPU the policy scored."""


# --------------------------------------------------------------------------- fit
def fits(free: IntArray, milli: int, num: int) -> BoolArray:
    """Nodes with GPUs for the request: any GPU with ``milli`` free for a shared GPU, at least
    ``num`` idle GPUs for whole ones, every node for CPU-only.  bool ``(n,)``."""
    if num == 0:
        return np.ones(free.shape[0], dtype=np.bool_)
    if milli < MILLI:
        return np.asarray((free >= milli).any(axis=1))
    return np.asarray((free == MILLI).sum(axis=1) >= num)


def best_fit_gpu(free: IntArray, milli: int) -> IntArray:
    """Per node, the GPU with the least free capacity that still holds ``milli`` (lowest index
    on ties), or -1.  int64 ``(n,)``."""
    key = np.where(free >= milli, free, np.iinfo(np.int64).max)
    idx = key.argmin(axis=1)
    ok = free[np.arange(free.shape[0]), idx] >= milli
    return np.where(ok, idx, -1).astype(np.int64)


def idle_gpus(free_row: IntArray, num: int) -> IntArray:
    """The ``num`` lowest-index fully idle GPUs of one node (reference
    ``AllocateExclusiveGpuId``).  int64 ``(num,)``; fewer when the node lacks them."""
    return np.flatnonzero(free_row == MILLI)[:num].astype(np.int64)


# --------------------------------------------------------------------------- baselines
def dotproduct_scores(cpu_left: IntArray, gpu_left: IntArray, cpu: int, gpu_total: int) -> IntArray:
    """Tetris alignment, lower dot product scores higher: ``int64(100 * (1 - dot / 2))`` with
    free and requested (CPU, total GPU) normalised by the largest node spec."""
    dot = (cpu_left / MAX_SPEC_CPU) * (cpu / MAX_SPEC_CPU) + (gpu_left / MAX_SPEC_GPU) * (
        gpu_total / MAX_SPEC_GPU
    )
    return (100.0 * (1.0 - dot / 2.0)).astype(np.int64)


def bestfit_scores(cpu_left: IntArray, gpu_left: IntArray, cpu: int, gpu_total: int) -> IntArray:
    """Least resources left after placement scores highest:
    ``int64((1 - (0.5 (cpu_left - cpu) / 128000 + 0.5 (gpu_left - gpu) / 8000)) * 100)``."""
    left = (cpu_left - cpu) / MAX_SPEC_CPU * 0.5 + (gpu_left - gpu_total) / MAX_SPEC_GPU * 0.5
    return ((1.0 - left) * 100.0).astype(np.int64)


def packing_scores(free: IntArray, count: IntArray, milli: int, num: int) -> IntArray:
    """GpuPacking: shared GPUs already in use first (``max(100 - freeRatio/10, 50)``), then
    idle GPUs of used nodes (``max(50 - idleUsed, 33)``), then idle nodes
    (``max(33 - idle, idle)``).  All 0 for a CPU-only task."""
    n = free.shape[0]
    if num == 0 or milli <= 0:
        return np.zeros(n, dtype=np.int64)
    idle = (free == MILLI).sum(axis=1).astype(np.int64)
    idle_node = np.maximum(MAX_SCORE // 3 - idle, idle)
    if milli < MILLI:
        g = best_fit_gpu(free, milli)
        left = free[np.arange(n), np.maximum(g, 0)]
        shared = np.maximum(MAX_SCORE - (left * 100 // MILLI) // 10, MAX_SCORE // 2)
        used = np.where(left == MILLI, max(MAX_SCORE // 2 - 1, MAX_SCORE // 3), shared)
    else:
        used = np.full(n, max(MAX_SCORE // 2 - num, MAX_SCORE // 3), dtype=np.int64)
    return np.where(idle == count, idle_node, used).astype(np.int64)


def affinity_tag(milli: int, num: int) -> int:
    """GpuClustering's task class: -1 CPU-only, 0 shared GPU, ``k`` for ``k`` whole GPUs."""
    if num == 0:
        return -1
    return 0 if milli < MILLI else num


def clustering_scores(tags: IntArray, gpu_left: IntArray, tag: int) -> IntArray:
    """GpuClustering: nodes running only this task class score 75..100, mixed classes with it
    50..75, idle nodes 25..50, other classes 0..25; within a band, fuller nodes score higher
    (``25 * (8000 - gpu_left) / 8000``).  ``tags`` int64 ``(n, C)`` counts Pods per class."""
    n = tags.shape[0]
    if tag < 0:
        return np.zeros(n, dtype=np.int64)
    used = MAX_SPEC_GPU - gpu_left
    fill = np.sign(used) * (np.abs(MAX_SCORE // 4 * used) // MAX_SPEC_GPU)
    classes = (tags > 0).sum(axis=1)
    same = tags[:, tag] > 0 if tag < tags.shape[1] else np.zeros(n, dtype=np.bool_)
    band = np.where(same, np.where(classes == 1, 75, 50), np.where(classes == 0, 25, 0))
    return (fill + band).astype(np.int64)


def fgd_scores(
    fm: FragModel,
    free: IntArray,
    cpu_left: IntArray,
    model: IntArray,
    frag_now: FloatArray,
    cpu: int,
    milli: int,
    num: int,
    stats: tuple[IntArray, IntArray] | None = None,
) -> tuple[IntArray, IntArray]:
    """FGD: ``int64(sigmoid((frag_before - frag_after) / 1000) * 100)``; for a shared GPU the
    best GPU of each node (lowest index on ties).  Returns scores and GPU indices (-1 unless
    shared), both int64 ``(n,)``.  ``stats`` is ``fm.stats(free)`` when the caller keeps it."""
    s, c = stats if stats is not None else fm.stats(free)
    if num == 1 and 0 < milli < MILLI:
        after = fm.frag_after_share(free, s, c, cpu_left, model, cpu, milli)
        sc = gpufrag.sigmoid_scores(frag_now[:, None], after)
        gpu = sc.argmax(axis=1).astype(np.int64)
        return sc[np.arange(sc.shape[0]), gpu], gpu
    after_w = fm.frag_after_whole(free, s, c, cpu_left, model, cpu, num)
    return gpufrag.sigmoid_scores(frag_now, after_w), np.full(free.shape[0], -1, dtype=np.int64)


def kubesched_scores(
    fm: FragModel,
    free: IntArray,
    cpu_left: IntArray,
    model: IntArray,
    frag_now: FloatArray,
    cpu: int,
    milli: int,
    num: int,
    stats: tuple[IntArray, IntArray] | None = None,
) -> tuple[IntArray, IntArray]:
    """kubesched's own policy (placeholder: FGD)."""
    return fgd_scores(fm, free, cpu_left, model, frag_now, cpu, milli, num, stats)
