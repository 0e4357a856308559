"""The FGD paper's experiment protocol around a replay: which tasks arrive in which order,
the target workload, and how per-task measurements become a curve over arrived workload.

- Tasks are shuffled with the seed; then, while their GPU request is below ``ratio`` (130 %)
  of the cluster's GPU capacity, tasks drawn with replacement are appended (a longer list is
  cut by dropping tasks at random until it fits), as the reference simulator's
  ``TunePodsByNodeTotalResource`` does.
- The node order that breaks score ties is a seed-dependent permutation, fixed for the run.
- The target workload is the original pod list's most common shapes covering 95 %.
- The curve has one point per whole percent of arrived workload ``p`` (0..130): the mean of
  the measurements taken after the tasks whose arrived share rounds to ``p`` (or within one
  percent when none does), as the authors' ``merge_alloc_discrete`` script computes it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.devices.fragmentation import TargetWorkload, target_workload
from kubesched.sim.gpureplay.traces import PodList

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

TUNE_RATIO = 1.3
CURVE_POINTS = tuple(range(0, 131))


def workload(pods: PodList, capacity_milli: int, seed: int, ratio: float = TUNE_RATIO) -> IntArray:
    """Indices into ``pods`` in arrival order for ``seed``: int64 ``(P',)``."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pods)).astype(np.int64)
    req = pods.num * pods.milli
    target = ratio * capacity_milli
    total = int(req.sum())
    if total > target:
        drop_order = rng.permutation(order.size)
        cum = np.cumsum(req[order[drop_order]])
        k = int(np.argmax(total - cum <= target)) + 1
        keep = np.ones(order.size, dtype=np.bool_)
        keep[drop_order[:k]] = False
        return order[keep]
    extra: list[IntArray] = []
    while True:
        draw = rng.integers(0, len(pods), size=max(256, len(pods) // 4)).astype(np.int64)
        cum = total + np.cumsum(req[draw])
        over = np.flatnonzero(cum > target)
        if over.size:
            extra.append(draw[: over[0]])
            break
        extra.append(draw)
        total = int(cum[-1])
    return np.concatenate([order, *extra])


def node_order(n_nodes: int, seed: int) -> IntArray:
    """Tie-break rank of every node for ``seed`` (lower wins): int64 ``(N,)``."""
    rng = np.random.default_rng([seed, 1])
    return rng.permutation(n_nodes).astype(np.int64)


def pods_target_workload(pods: PodList) -> TargetWorkload:
    """The target workload of a pod list: shapes covering 95 % of its tasks."""
    counts: Counter[object] = Counter(pods.shape(i) for i in range(len(pods)))
    return target_workload(counts)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """Measurements at one arrived-workload percentage (means over the tasks counted there)."""

    arrived_percent: int
    unallocated_gpu_percent: float
    fragmentation_percent: float
    idle_whole_gpu_nodes: float

    def as_json(self) -> dict[str, float | int]:
        """The JSON object of ``kubesched replay``'s curve."""
        return {
            "arrivedPercent": self.arrived_percent,
            "unallocatedGpuPercent": round(self.unallocated_gpu_percent, 4),
            "fragmentationPercent": round(self.fragmentation_percent, 4),
            "idleWholeGpuNodes": round(self.idle_whole_gpu_nodes, 4),
        }


def curve(
    arrived: IntArray,
    allocated: IntArray,
    frag: FloatArray,
    idle: IntArray,
    capacity_milli: int,
) -> list[CurvePoint]:
    """Per-task measurements (each ``(P',)``, taken after the task) as a curve over 0..130 %.

    Points with no task near them are left out.
    """
    pct = np.round(arrived / capacity_milli * 100.0)
    alloc = allocated / capacity_milli * 100.0
    fragp = frag / capacity_milli * 100.0
    out = []
    for p in CURVE_POINTS:
        sel = pct == p
        if not sel.any():
            sel = (pct >= p - 1) & (pct <= p + 1)
            if not sel.any():
                continue
        out.append(
            CurvePoint(
                p,
                100.0 - float(alloc[sel].mean()),
                float(fragp[sel].mean()),
                float(idle[sel].mean()),
            )
        )
    return out


def point_at(
    arrived: IntArray,
    allocated: IntArray,
    frag: FloatArray,
    idle: IntArray,
    capacity_milli: int,
    percent: int,
) -> CurvePoint:
    """The measurement after the last task whose arrived share is at most ``percent`` (the
    first task when none is): the fallback where :func:`curve` has no point."""
    k = max(int(np.searchsorted(arrived, percent / 100.0 * capacity_milli, side="right")) - 1, 0)
    return CurvePoint(
        percent,
        100.0 - float(allocated[k]) / capacity_milli * 100.0,
        float(frag[k]) / capacity_milli * 100.0,
        float(idle[k]),
    )
