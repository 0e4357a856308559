"""GpuRandom: a random feasible node (PreScore, Score).

Reference ``RandomScorePlugin`` of ``hkust-adsl/kubernetes-scheduler-simulator``: one node
drawn uniformly among the scored ones gets 100, the others 0; a shared-GPU Pod gets a GPU
drawn uniformly among those with room (left in CycleState for GpuDevices' Reserve).  Draws
come from the scheduler's seeded generator (``handle.rng``) or, without one, from a
generator seeded with args ``seed`` (default 0).  No NormalizeScore.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.config import names
from kubesched.devices import gpuview as gv
from kubesched.devices import policies as gp
from kubesched.framework.interface import SKIP, SUCCESS, CycleState, Handle, IntArray, Status
from kubesched.state import gpus
from kubesched.state.cache import ClusterState

NAME = names.GPU_RANDOM
_KEY = "PreScore" + NAME


@dataclass(frozen=True, slots=True)
class GpuRandomArgs:
    """GpuRandom's args."""

    seed: int = 0
    """Seeds the plugin's own generator when the scheduler has none."""

    @staticmethod
    def from_raw(raw: Mapping[str, Any] | None) -> GpuRandomArgs:
        """From the configuration's raw mapping, or None."""
        return GpuRandomArgs(int((raw or {}).get("seed", 0)))


class GpuRandom:
    """Spreads Pods over feasible nodes at random."""

    name = NAME

    def __init__(self, args: GpuRandomArgs | None, handle: Handle) -> None:
        self.handle = handle
        rng = handle.rng
        seed = (args or GpuRandomArgs()).seed
        self.rng: np.random.Generator = (
            rng if isinstance(rng, np.random.Generator) else np.random.default_rng(seed)
        )

    def pre_score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Status:
        """Draw the node (its position in ``rows``); Skip when there is none."""
        if rows.shape[0] == 0:
            return SKIP
        try:
            gpod = gv.gpu_pod(pod)
        except InputError:
            return SKIP
        state[_KEY] = (int(rows[int(self.rng.integers(rows.shape[0]))]), gpod)
        return SUCCESS

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """100 for the drawn node, 0 elsewhere, int64 ``(n,)``."""
        out = np.zeros(rows.shape[0], dtype=np.int64)
        s = state.get(_KEY)
        if not isinstance(s, tuple):
            return out
        row, gpod = s
        out[rows == row] = 100
        if gpod.req.shared:
            free = gpus.table_for(cluster).free[row]
            ok = np.flatnonzero(free >= gpod.req.milli)
            if ok.size:
                state[gp.CHOICE_KEY] = {row: int(ok[int(self.rng.integers(ok.size))])}
        return out


def new(args: object | None, handle: Handle) -> GpuRandom:
    """Factory: ``args`` (a mapping, or typed :class:`GpuRandomArgs`) may hold ``seed``."""
    if isinstance(args, GpuRandomArgs):
        return GpuRandom(args, handle)
    if args is not None and not isinstance(args, Mapping):
        raise InputError(f"{NAME}: args must be a mapping, got {type(args).__name__}")
    return GpuRandom(GpuRandomArgs.from_raw(args), handle)
