"""One replay of a GPU trace: every task tried once, in order, against the node list.

The cluster is a handful of numpy columns (free thousandths per GPU, free CPU and memory,
per-node fragmentation and its threshold statistics); each task filters all nodes at once
(CPU, memory, GPU model, per-GPU capacity), scores the feasible ones with the policy's kernel
from :mod:`kubesched.devices.policies`, takes the best (ties to the lowest rank of the
seed's fixed node order), picks concrete GPUs and updates one row.  Nothing ever departs.
Memory and CPU only decide feasibility, as in the paper.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.devices import policies as gp
from kubesched.devices.fragmentation import MILLI, FragModel, TargetWorkload
from kubesched.sim.gpureplay import protocol
from kubesched.sim.gpureplay.traces import NodeList, PodList

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
WHOLE_NODE_GPUS = 8
"""Nodes of this many GPUs count as "whole-GPU nodes" for the idle-node measure."""


@dataclass(frozen=True, slots=True)
class Task:
    """One task: CPU millicores, memory MiB, thousandths per GPU, GPU count, spec code."""

    cpu: int
    memory: int
    milli: int
    num: int
    spec: int

    @property
    def shared(self) -> bool:
        """A fraction of one GPU."""
        return self.num == 1 and self.milli < MILLI


class ReplayState:
    """The cluster during a replay; all columns ``(N,)`` or ``(N, G)``."""

    def __init__(self, nodes: NodeList, fm: FragModel, specs: tuple[tuple[str, ...], ...]) -> None:
        g = max(int(nodes.gpus.max()), 1)
        self.fm = fm
        self.hv = gp.hole_values(fm.workload)
        capacity = np.bincount(nodes.model, weights=nodes.gpus, minlength=len(nodes.models))
        self.pressure = gp.model_pressure(fm.workload, nodes.models, capacity)[nodes.model]
        self.count = nodes.gpus.copy()
        self.free = np.where(np.arange(g) < self.count[:, None], MILLI, 0).astype(np.int64)
        self.cpu_left = nodes.cpu.copy()
        self.mem_left = nodes.memory.copy()
        self.model = nodes.model.copy()
        self.full = self.count.copy()
        self.max_free = np.where(self.count > 0, MILLI, 0).astype(np.int64)
        self.total = self.count * MILLI
        self.s, self.c = fm.stats(self.free)
        self.frag = fm.frag_from_stats(self.total, self.s, self.c, self.cpu_left, self.model)
        self.tags = np.zeros((len(nodes), g + 1), dtype=np.int64)
        self.access = np.array(
            [[not spec or m in spec for m in nodes.models] for spec in specs], dtype=np.bool_
        )[:, nodes.model]
        self.allocated = 0
        self.idle_whole = int(((self.count == WHOLE_NODE_GPUS) & (self.full == self.count)).sum())

    def feasible(self, t: Task) -> IntArray:
        """Rows that can host ``t``: int64 ``(n,)``."""
        ok = (self.cpu_left >= t.cpu) & (self.mem_left >= t.memory) & self.access[t.spec]
        if t.num:
            ok &= (self.max_free >= t.milli) if t.shared else (self.full >= t.num)
        return np.flatnonzero(ok)

    def place(self, row: int, gpus: IntArray, t: Task) -> None:
        """Account ``t`` on ``row`` using GPU indices ``gpus``."""
        was_idle = self.count[row] == WHOLE_NODE_GPUS and self.full[row] == self.count[row]
        self.free[row, gpus] -= t.milli
        assert (self.free[row] >= 0).all(), "GPU oversubscribed"
        self.cpu_left[row] -= t.cpu
        self.mem_left[row] -= t.memory
        f = self.free[row]
        self.full[row] = int((f == MILLI).sum())
        self.max_free[row] = int(f.max())
        self.total[row] = int(f.sum())
        s, c = self.fm.stats(f[None, :])
        self.s[row], self.c[row] = s[0], c[0]
        self.frag[row] = self.fm.frag_from_stats(
            self.total[row : row + 1], s, c, self.cpu_left[row : row + 1], self.model[row : row + 1]
        )[0]
        tag = gp.affinity_tag(t.milli, t.num)
        if tag >= 0:
            self.tags[row, min(tag, self.tags.shape[1] - 1)] += 1
        self.allocated += t.milli * t.num
        if was_idle and self.full[row] != self.count[row]:
            self.idle_whole -= 1


Chooser = Callable[[ReplayState, IntArray, Task, np.random.Generator], tuple[int, int]]
"""``choose(state, rows, task, rng) -> (position in rows, shared GPU index or -1)``."""


def _best(scores: npt.NDArray[np.generic], rows: IntArray, rank: IntArray) -> int:
    top = np.flatnonzero(scores == scores.max())
    return int(top[np.argmin(rank[rows[top]])]) if top.size > 1 else int(top[0])


def make_chooser(policy: str, rank: IntArray) -> Chooser:
    """The node (and shared GPU) choice of ``policy`` with tie-break ranks ``rank``."""

    def shared_gpu(st: ReplayState, row: int, t: Task) -> int:
        return int(gp.best_fit_gpu(st.free[row : row + 1], t.milli)[0]) if t.shared else -1

    def random(
        st: ReplayState, rows: IntArray, t: Task, rng: np.random.Generator
    ) -> tuple[int, int]:
        i = int(rng.integers(rows.size))
        if not t.shared:
            return i, -1
        ok = np.flatnonzero(st.free[rows[i]] >= t.milli)
        return i, int(ok[rng.integers(ok.size)])

    def simple(score: Callable[[ReplayState, IntArray, Task], IntArray]) -> Chooser:
        def choose(
            st: ReplayState, rows: IntArray, t: Task, rng: np.random.Generator
        ) -> tuple[int, int]:
            i = _best(score(st, rows, t), rows, rank)
            return i, shared_gpu(st, int(rows[i]), t)

        return choose

    def fgd(st: ReplayState, rows: IntArray, t: Task, rng: np.random.Generator) -> tuple[int, int]:
        scores, gpu = gp.fgd_scores(
            st.fm, st.free[rows], st.cpu_left[rows], st.model[rows], st.frag[rows],
            t.cpu, t.milli, t.num, (st.s[rows], st.c[rows]),
        )  # fmt: skip
        i = _best(scores, rows, rank)
        return i, int(gpu[i])

    def kubesched(
        st: ReplayState, rows: IntArray, t: Task, rng: np.random.Generator
    ) -> tuple[int, int]:
        scores, gpu = gp.kubesched_scores(
            st.fm, st.hv, st.free[rows], st.count[rows], st.cpu_left[rows], st.model[rows],
            st.frag[rows], t.cpu, t.milli, t.num, (st.s[rows], st.c[rows]), st.pressure[rows],
        )  # fmt: skip
        i = _best(scores, rows, rank)
        return i, int(gpu[i])

    table: dict[str, Chooser] = {
        "random": random,
        "dotproduct": simple(
            lambda st, r, t: gp.dotproduct_scores(
                st.cpu_left[r], st.total[r], t.cpu, t.milli * t.num
            )
        ),
        "bestfit": simple(
            lambda st, r, t: gp.bestfit_scores(st.cpu_left[r], st.total[r], t.cpu, t.milli * t.num)
        ),
        "gpupacking": simple(
            lambda st, r, t: gp.packing_scores(st.free[r], st.count[r], t.milli, t.num)
        ),
        "gpuclustering": simple(
            lambda st, r, t: gp.clustering_scores(
                st.tags[r], st.total[r], gp.affinity_tag(t.milli, t.num)
            )
        ),
        "fgd": fgd,
        "kubesched": kubesched,
    }
    if policy not in table:
        raise ValueError(f"unknown policy {policy!r}; want one of {list(table)}")
    return table[policy]


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """One replay's per-task measurements (each ``(P',)``, after the task) and outcome."""

    policy: str
    seed: int
    capacity_milli: int
    arrived: IntArray
    allocated: IntArray
    frag: FloatArray
    idle_whole: IntArray
    node: IntArray
    """Row each task went to, -1 when it found no node."""
    waited_whole: int = 0
    """Multi-GPU tasks that found no node although the cluster had that many idle GPUs in
    all, spread over nodes (the replay's "waiting for lack of a whole node"; each task is
    tried once, so they fail instead of waiting)."""

    @property
    def failed(self) -> int:
        """Tasks that found no node."""
        return int((self.node < 0).sum())

    def curve(self) -> list[protocol.CurvePoint]:
        """The measurements over arrived workload (see :func:`protocol.curve`)."""
        return protocol.curve(
            self.arrived, self.allocated, self.frag, self.idle_whole, self.capacity_milli
        )


def replay(
    nodes: NodeList,
    pods: PodList,
    policy: str,
    seed: int,
    *,
    target: TargetWorkload | None = None,
    ratio: float = protocol.TUNE_RATIO,
) -> ReplayResult:
    """Replay ``pods`` on ``nodes`` with ``policy`` under the paper's protocol for ``seed``."""
    cap = nodes.gpu_capacity_milli
    order = protocol.workload(pods, cap, seed, ratio)
    rank = protocol.node_order(len(nodes), seed)
    rng = np.random.default_rng([seed, 2])
    choose = make_chooser(policy, rank)
    tw = target if target is not None else protocol.pods_target_workload(pods)
    fm = FragModel(tw, nodes.models, max(int(nodes.gpus.max()), 1))
    st = ReplayState(nodes, fm, pods.specs)
    n = order.size
    arrived = np.cumsum(pods.num[order] * pods.milli[order])
    allocated = np.zeros(n, dtype=np.int64)
    frag = np.zeros(n, dtype=np.float64)
    idle = np.zeros(n, dtype=np.int64)
    placed = np.full(n, -1, dtype=np.int64)
    cols = (pods.cpu, pods.memory, pods.milli, pods.num, pods.spec)
    cpu, mem, milli, num, spec = (a[order].tolist() for a in cols)
    frag_total = float(st.frag.sum())
    waited_whole = 0
    for k in range(n):
        t = Task(cpu[k], mem[k], milli[k], num[k], spec[k])
        rows = st.feasible(t)
        if rows.size:
            i, g = choose(st, rows, t, rng)
            row = int(rows[i])
            gpus = np.array([g], dtype=np.int64) if t.shared else gp.idle_gpus(st.free[row], t.num)
            before = st.frag[row]
            st.place(row, gpus, t)
            frag_total += st.frag[row] - before
            placed[k] = row
        elif t.num >= 2 and int(st.full.sum()) >= t.num:
            waited_whole += 1
        allocated[k] = st.allocated
        frag[k] = frag_total
        idle[k] = st.idle_whole
    return ReplayResult(policy, seed, cap, arrived, allocated, frag, idle, placed, waited_whole)
