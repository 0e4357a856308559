"""GPU fragmentation over a target workload, as the FGD paper measures it, vectorised.

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
Gradient Descent" (USENIX ATC '23); reference code ``hkust-adsl/kubernetes-scheduler-simulator``
``pkg/utils/frag.go``.  For a node and one task shape of the *target workload* (the most
common task shapes covering 95 % of tasks, each with its frequency), the fragment is:

- the node's whole idle GPU capacity when the shape cannot run there at all (it asks no GPU,
  its model restriction excludes the node, the node lacks the CPU, or fewer than ``num``
  GPUs have ``milli`` free);
- otherwise the idle capacity on the GPUs that have less than ``milli`` free.

The node's fragmentation is the frequency-weighted sum over shapes; the cluster's is the sum
over nodes.  Computing it shape by shape for every candidate placement is too slow, so
:class:`FragModel` regroups it: with ``S_t`` = idle milli on GPUs with less than ``t`` free and
``C_t`` = number of GPUs with at least ``t`` free, for each distinct per-GPU request ``t``,

    frag = total - sum_t W_t(cpu_left, model, C_t) * (total - S_t)

where ``W_t`` (a precomputed table) is the summed frequency of the shapes with request ``t``
that fit the node's free CPU, model and ``C_t``.  Arrays: ``free`` is int64 ``(n, G)``
(idle milli per GPU index, 0 for indices a node lacks), ``cpu_left`` int64 ``(n,)``, ``model``
int64 ``(n,)`` codes into the model list the model was built for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

MILLI = 1000
DEFAULT_COVERAGE = 0.95
"""Share of tasks the target workload's most common shapes must cover (the paper's 95 %)."""


@dataclass(frozen=True, slots=True, order=True)
class Shape:
    """One task shape: CPU millicores, GPU thousandths per GPU, GPU count, allowed models.

    ``models`` is empty for "any model"; a CPU-only task has ``milli == num == 0``.
    """

    cpu: int
    milli: int
    num: int
    models: tuple[str, ...] = ()
    memory: int = 0
    """Memory the shape needs (any unit nodes also use); 0 leaves memory out."""

    def accepts(self, model: str) -> bool:
        """Whether the shape may run on a node with GPU ``model``."""
        return not self.models or model in self.models


@dataclass(frozen=True, slots=True)
class TargetWorkload:
    """Shapes and their frequencies (float64 ``(K,)``, summing to 1)."""

    shapes: tuple[Shape, ...]
    freq: FloatArray


def target_workload(
    counts: Mapping[Shape, float], coverage: float = DEFAULT_COVERAGE
) -> TargetWorkload:
    """The most common shapes covering ``coverage`` of all tasks, renormalised.

    Order and cut follow the reference ``GetTypicalPods``: by count descending, equal counts
    by the larger shape first (cpu, milli, num, models); shapes are added one at a time until
    the cumulative count reaches ``coverage``.
    """
    items = sorted(counts.items(), key=lambda kv: (kv[1], _shape_key(kv[0])), reverse=True)
    total = float(sum(counts.values()))
    if total <= 0:
        return TargetWorkload((), np.zeros(0))
    chosen: list[tuple[Shape, float]] = []
    cum = 0.0
    for shape, n in items:
        if cum >= coverage * total:
            break
        chosen.append((shape, n))
        cum += n
    freq = np.array([n for _, n in chosen], dtype=np.float64) / cum
    return TargetWorkload(tuple(s for s, _ in chosen), freq)


def _shape_key(s: Shape) -> tuple[int, int, int, str]:
    return (s.cpu, s.milli, s.num, "|".join(s.models))


class FragModel:
    """Precomputed lookup tables for the fragmentation of ``workload`` (see module docstring).

    ``models`` lists the node GPU models by code; codes outside it (``len(models)``) stand for
    an unknown model, which only unrestricted shapes accept.  ``max_gpus`` is ``G``, the width
    of ``free``.
    """

    def __init__(self, workload: TargetWorkload, models: Sequence[str], max_gpus: int) -> None:
        self.workload = workload
        self.models = tuple(models)
        self.max_gpus = max_gpus
        gpu_shapes = [
            (s, f) for s, f in zip(workload.shapes, workload.freq, strict=True) if s.milli
        ]
        self.thresholds: IntArray = np.array(
            sorted({s.milli for s, _ in gpu_shapes}), dtype=np.int64
        )
        self.cpu_levels: IntArray = np.array(sorted({s.cpu for s, _ in gpu_shapes}), dtype=np.int64)
        self.mem_levels: IntArray = np.array(
            sorted({s.memory for s, _ in gpu_shapes if s.memory}), dtype=np.int64
        )
        n_models = len(self.models) + 1
        tab = np.zeros(
            (
                self.thresholds.size,
                n_models,
                max_gpus + 1,
                self.cpu_levels.size + 1,
                self.mem_levels.size + 1,
            ),
            dtype=np.float64,
        )
        for s, f in gpu_shapes:
            t = int(np.searchsorted(self.thresholds, s.milli))
            lv = int(np.searchsorted(self.cpu_levels, s.cpu)) + 1
            lm = int(np.searchsorted(self.mem_levels, s.memory)) + 1 if s.memory else 0
            ok = [m for m, name in enumerate(self.models) if s.accepts(name)]
            if not s.models:
                ok.append(n_models - 1)
            if s.num <= max_gpus:
                tab[t, ok, s.num :, lv:, lm:] += f
        self.table = tab
        self._flat = tab.ravel()
        self._t_offset = np.arange(self.thresholds.size) * int(np.prod(tab.shape[1:]))

    # ------------------------------------------------------------------ statistics
    def stats(self, free: IntArray) -> tuple[IntArray, IntArray]:
        """``(S, C)``: int64 ``(n, T)`` idle milli on GPUs below each threshold, and the count
        of GPUs at or above it."""
        t = self.thresholds
        below = free[:, :, None] < t
        s = (free[:, :, None] * below).sum(axis=1)
        c = (~below).sum(axis=1)
        return s.astype(np.int64), c.astype(np.int64)

    def frag_from_stats(
        self,
        total: IntArray | FloatArray,
        s: IntArray,
        c: IntArray,
        cpu_left: IntArray,
        model: IntArray,
        mem_left: IntArray | None = None,
    ) -> FloatArray:
        """Fragmentation in milli, float64 of ``total``'s shape.

        ``s`` and ``c`` have ``total``'s shape plus a trailing ``T`` axis; ``cpu_left``,
        ``model`` and ``mem_left`` (used only when shapes carry memory) broadcast against
        ``total``.
        """
        if self.thresholds.size == 0:
            return np.asarray(total, dtype=np.float64)
        level = np.searchsorted(self.cpu_levels, cpu_left, side="right")
        _, _, n_c, n_l, n_m = self.table.shape
        cell = (np.asarray(model) * n_c)[..., None] + np.minimum(c, self.max_gpus)
        cell = (cell * n_l + np.asarray(level)[..., None]) * n_m
        if n_m > 1 and mem_left is not None:
            cell = cell + np.searchsorted(self.mem_levels, mem_left, side="right")[..., None]
        w = self._flat.take(cell + self._t_offset)
        tot = np.asarray(total, dtype=np.float64)
        result: FloatArray = tot - (w * (tot[..., None] - s)).sum(axis=-1)
        return result

    def frag(self, free: IntArray, cpu_left: IntArray, model: IntArray) -> FloatArray:
        """Fragmentation of each node, float64 ``(n,)`` in milli."""
        s, c = self.stats(free)
        return self.frag_from_stats(free.sum(axis=1), s, c, cpu_left, model)

    # ------------------------------------------------------------------ what-ifs
    def frag_after_share(
        self,
        free: IntArray,
        s: IntArray,
        c: IntArray,
        cpu_left: IntArray,
        model: IntArray,
        cpu: int,
        milli: int,
        mem_left: IntArray | None = None,
        memory: int = 0,
    ) -> FloatArray:
        """Fragmentation after placing a shared-GPU task (``cpu``, ``milli``) on each GPU.

        Returns float64 ``(n, G)``; entries for GPUs with less than ``milli`` free are NaN.
        ``s`` and ``c`` are :meth:`stats` of ``free``.  GPUs of one node with equal free
        capacity lead to the same state, so each distinct value is evaluated once.
        """
        n, g = free.shape
        order = np.argsort(free, axis=1, kind="stable")
        sv = np.take_along_axis(free, order, axis=1)
        start = np.ones((n, g), dtype=np.bool_)
        start[:, 1:] = sv[:, 1:] != sv[:, :-1]
        ni, gj = np.nonzero(start & (sv >= milli))
        t = self.thresholds
        a = sv[ni, gj][:, None]
        b = a - milli
        s2 = s[ni] - a * (a < t) + b * (b < t)
        c2 = c[ni] - (a >= t) + (b >= t)
        total = free.sum(axis=1)[ni] - milli
        mem = None if mem_left is None else mem_left[ni] - memory
        vals = self.frag_from_stats(total, s2, c2, cpu_left[ni] - cpu, model[ni], mem)
        out_sorted = np.full((n, g), np.nan)
        out_sorted[ni, gj] = vals
        group = np.maximum.accumulate(np.where(start, np.arange(g), 0), axis=1)
        out_sorted = np.take_along_axis(out_sorted, group, axis=1)
        out = np.empty((n, g))
        np.put_along_axis(out, order, out_sorted, axis=1)
        return np.where(free >= milli, out, np.nan)

    def frag_after_whole(
        self,
        free: IntArray,
        s: IntArray,
        c: IntArray,
        cpu_left: IntArray,
        model: IntArray,
        cpu: int,
        num: int,
        mem_left: IntArray | None = None,
        memory: int = 0,
    ) -> FloatArray:
        """Fragmentation after placing ``num`` whole GPUs (0 for CPU-only) and ``cpu``.

        Whole GPUs come from fully idle ones, which no threshold counts as fragment, so only
        ``C`` and the total change.  float64 ``(n,)``.
        """
        total = free.sum(axis=1) - num * MILLI
        mem = None if mem_left is None else mem_left - memory
        return self.frag_from_stats(total, s, c - num, cpu_left - cpu, model, mem)


def sigmoid_scores(before: FloatArray, after: FloatArray) -> IntArray:
    """FGD's score: ``int64(sigmoid((before - after) / 1000) * 100)``; NaN after gives -1."""
    with np.errstate(over="ignore", invalid="ignore"):
        x = (1.0 / (1.0 + np.exp(-(before - after) / 1000.0))) * 100.0
    out = np.where(np.isnan(x), -1.0, np.floor(x))
    return out.astype(np.int64)
