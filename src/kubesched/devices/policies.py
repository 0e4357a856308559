"""GPU placement policies as pure numpy kernels: the GPU score plugins and the trace replay
both call these, so a policy means the same thing on Kubernetes objects and on trace rows.

The baselines follow the FGD paper's reference simulator (``hkust-adsl/kubernetes-scheduler-
simulator``, ``pkg/simulator/plugin/*_score.go``) formula for formula, including its integer
arithmetic: Random, DotProduct (Tetris alignment, merged GPU dimension, normalised by the
largest node spec), GpuPacking, GpuClustering, BestFit and FGD (:mod:`kubesched.devices.
fragmentation`).  :func:`kubesched_scores` is kubesched's own policy.

Arrays, for ``n`` candidate nodes with at most ``G`` GPUs each: ``free`` int64 ``(n, G)`` idle
thousandths per GPU index (0 where a node has no such GPU), ``count`` int64 ``(n,)`` GPUs per
node, ``cpu_left`` int64 ``(n,)`` free millicores.  A request is ``(cpu, milli, num)``:
millicores, thousandths per GPU and GPU count (``milli < 1000`` means one shared GPU,
``num == 0`` a CPU-only task).  Scores are int64 ``(n,)``, higher is better.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.devices import fragmentation
from kubesched.devices.fragmentation import FragModel, TargetWorkload

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

MILLI = fragmentation.MILLI
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
    out: IntArray = (fill + band).astype(np.int64)
    return out


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
        sc = fragmentation.sigmoid_scores(frag_now[:, None], after)
        gpu = sc.argmax(axis=1).astype(np.int64)
        return sc[np.arange(sc.shape[0]), gpu], gpu
    after_w = fm.frag_after_whole(free, s, c, cpu_left, model, cpu, num)
    no_gpu = np.full(free.shape[0], -1, dtype=np.int64)
    return fragmentation.sigmoid_scores(frag_now, after_w), no_gpu


# --------------------------------------------------------------------------- kubesched
MIN_WHOLE_SHARE = 0.25
"""Below this share of the GPU demand in whole-GPU tasks, hole waste only breaks FGD's ties
(:attr:`HoleValue.weight` 0): shared tasks are then most of the demand and refill holes, and
FGD's measure, which sees their shapes, judges better (measured: ``gpushare80``)."""

PRESSURE_POINTS = 2.0
"""FGD score points a GPU task gives up, per unit of :func:`model_pressure`, on a node whose
GPU model the workload's model-restricted tasks need."""


@dataclass(frozen=True, slots=True)
class HoleValue:
    """Expected eventual waste of a partly used GPU, by its free thousandths.

    ``v`` : float64 ``(1001,)``; ``v[h]`` for a GPU with ``h`` free (``v[0] = v[1000] = 0``).
    A GPU on a node with less than ``cpu_min`` millicores free is *dead*: nothing shared will
    reach it, so its whole free capacity is waste.
    """

    v: FloatArray
    cpu_min: int
    weight: float = 1.0
    """How much hole waste counts against fragmentation: the whole-GPU tasks' part of the
    workload's GPU demand (the tasks a needlessly broken GPU turns away), 0 below
    :data:`MIN_WHOLE_SHARE`."""


def hole_values(workload: TargetWorkload, dead_quantile: float = 0.4) -> HoleValue:
    """Hole values for a target workload.

    With ``p(s)`` the frequency of shared size ``s`` among the workload's shared tasks and
    ``P(h)`` that of the sizes fitting in ``h``, the next fitting task takes a hole with
    probability ``P(h)``, else the hole stays empty:
    ``v[h] = (1 - P(h)) h + sum_{s <= h} p(s) v[h - s]``.  ``v[1000] = 0``: an idle GPU may
    go to a whole-GPU task.  ``cpu_min`` is the ``dead_quantile`` (by frequency) of the shared
    shapes' CPU; ``weight`` the whole-GPU tasks' part of the workload's GPU demand (0 when
    under :data:`MIN_WHOLE_SHARE`).
    """
    shared: dict[int, float] = {}
    cpus: dict[int, float] = {}
    shared_mass = whole_mass = 0.0
    for shape, fr in zip(workload.shapes, workload.freq, strict=True):
        f = float(fr)
        if shape.num == 1 and 0 < shape.milli < MILLI:
            shared[shape.milli] = shared.get(shape.milli, 0.0) + f
            cpus[shape.cpu] = cpus.get(shape.cpu, 0.0) + f
            shared_mass += f * shape.milli
        elif shape.num >= 1:
            whole_mass += f * shape.num * MILLI
    v = np.arange(MILLI + 1, dtype=np.float64)
    if shared:
        size_arr = np.array(sorted(shared), dtype=np.int64)
        prob = np.array([shared[k] for k in sorted(shared)]) / sum(shared.values())
        for h in range(int(size_arr[0]), MILLI):
            fit = size_arr <= h
            v[h] = (1.0 - prob[fit].sum()) * h + (prob[fit] * v[h - size_arr[fit]]).sum()
    v[MILLI] = 0.0
    cpu_min = 0
    if cpus:
        order = sorted(cpus)
        cum = np.cumsum([cpus[c] for c in order]) / sum(cpus.values())
        cpu_min = int(order[int(np.searchsorted(cum, dead_quantile))])
    weight = whole_mass / (shared_mass + whole_mass) if shared_mass + whole_mass else 0.0
    return HoleValue(v, cpu_min, weight if weight >= MIN_WHOLE_SHARE else 0.0)


def model_pressure(
    workload: TargetWorkload, models: tuple[str, ...] | list[str], capacity: npt.ArrayLike
) -> FloatArray:
    """How much of each GPU model the workload's model-restricted tasks will need.

    ``capacity`` float64 ``(M,)`` or ``(M + 1,)``: GPUs of each model code.  Each restricted
    shape's GPU demand is spread over the models it accepts in proportion to their capacity;
    a model's pressure is the demand so expected on it when the whole workload has arrived as
    much GPU as the cluster has, over its capacity (1: the restricted tasks alone fill it).
    Returns float64 ``(M + 1,)`` (the last entry, unknown models, 0).
    """
    m = len(models)
    given = np.asarray(capacity, dtype=np.float64)[: m + 1]
    cap = np.zeros(m + 1)
    cap[: given.shape[0]] = given
    need = np.zeros(m + 1)
    demand = 0.0
    for shape, fr in zip(workload.shapes, workload.freq, strict=True):
        d = float(fr) * shape.milli * shape.num / MILLI
        demand += d
        if shape.models and d > 0:
            ok = np.array([name in shape.models for name in models] + [False]) * cap
            if ok.sum() > 0:
                need += d * ok / ok.sum()
    if demand <= 0:
        return np.zeros(m + 1)
    out: FloatArray = np.where(cap > 0, need / np.maximum(cap, 1.0), 0.0) * (cap.sum() / demand)
    return out


def _hole_value(hv: HoleValue, free: IntArray, dead: BoolArray) -> FloatArray:
    """Value of each GPU's free capacity, ``(n, G)``: ``v[free]``, or all of it on a dead node
    (an idle GPU there is stranded too, so a small task that uses it saves waste)."""
    f = np.clip(free, 0, MILLI)
    return np.where(dead & (f > 0), f, hv.v[f])


def kubesched_scores(
    fm: FragModel,
    hv: HoleValue,
    free: IntArray,
    count: IntArray,
    cpu_left: IntArray,
    model: IntArray,
    frag_now: FloatArray,
    cpu: int,
    milli: int,
    num: int,
    stats: tuple[IntArray, IntArray] | None = None,
    pressure: FloatArray | None = None,
) -> tuple[IntArray, IntArray]:
    """kubesched's own policy: FGD's fragmentation gradient, plus GPU-level packing that values
    the hole a shared task leaves by its expected eventual waste (:class:`HoleValue`),
    CPU-starved nodes whose idle GPUs nothing can use, and GPU models that model-restricted
    tasks will need (``pressure``: float64 ``(n,)``, :func:`model_pressure` of each row's
    model; GPU tasks take :data:`PRESSURE_POINTS` per unit off FGD's score there).

    Lexicographic keys, best first (the caller breaks the last ties by its node order):

    - shared GPU: least added hole waste weighted by ``hv.weight`` (10-milli steps), FGD
      score, least added hole waste, a node already running GPU work, the tightest GPU;
    - whole GPUs and CPU-only: FGD score, least hole value stranded by taking the node's CPU
      below ``hv.cpu_min`` (10-milli steps), a node already running GPU work, and for CPU-only
      tasks the fewest idle GPUs (whole GPUs).

    Returns composite int64 scores (higher is better; -1 for impossible GPUs) and GPU indices
    (-1 unless shared), both ``(n,)``.
    """
    n = free.shape[0]
    s, c = stats if stats is not None else fm.stats(free)
    used = (free.sum(axis=1) < count * MILLI).astype(np.int64)
    shift = np.zeros(n, dtype=np.int64)
    if pressure is not None and num > 0:
        shift = np.round(PRESSURE_POINTS * pressure).astype(np.int64)
    shift = np.clip(shift, 0, 20) - 20  # keeps the shifted score in 0..127
    dead_now = (cpu_left < hv.cpu_min)[:, None]
    dead_after = ((cpu_left - cpu) < hv.cpu_min)[:, None]
    if num == 1 and 0 < milli < MILLI:
        after = fm.frag_after_share(free, s, c, cpu_left, model, cpu, milli)
        q = fragmentation.sigmoid_scores(frag_now[:, None], after) - shift[:, None]
        dv = _hole_value(hv, free - milli, dead_after) - _hole_value(hv, free, dead_now)
        dvb = np.clip(np.round(dv / 10.0), -127, 127).astype(np.int64)
        tight = np.clip(MILLI - (free - milli), 0, MILLI)
        wdv = np.clip(np.round(dv * hv.weight / 10.0), -127, 127).astype(np.int64)
        key = (((127 - wdv) * 128 + q) * 256 + (127 - dvb)) * 2 + used[:, None]
        key = key * 1024 + tight
        key = np.where(free >= milli, key, -1)
        gpu = key.argmax(axis=1).astype(np.int64)
        return key[np.arange(n), gpu], gpu
    after_w = fm.frag_after_whole(free, s, c, cpu_left, model, cpu, num)
    q1 = fragmentation.sigmoid_scores(frag_now, after_w) - shift
    killed = (~dead_now[:, 0]) & dead_after[:, 0]
    holes = _hole_value(hv, free, np.zeros_like(free, dtype=np.bool_))
    f = np.clip(free, 0, MILLI)
    loss = np.where((f > 0) & (f < MILLI), f - holes, 0.0).sum(axis=1) * killed
    lossb = np.clip(np.round(loss / 10.0), 0, 1023).astype(np.int64)
    key1 = (q1 * 1024 + (1023 - lossb)) * 2 + used
    if num == 0:
        idle_gpus = np.clip(free.sum(axis=1) // MILLI, 0, 15)
        key1 = key1 * 16 + (15 - idle_gpus)
    return key1.astype(np.int64), np.full(n, -1, dtype=np.int64)
