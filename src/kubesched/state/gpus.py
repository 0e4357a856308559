"""The GPU device table: per node row, free thousandths of every GPU, model and topology.

A :class:`GpuTable` is a cache observer (``ClusterState.observe``): node changes set a row's
devices from the node (:func:`kubesched.api.gpu.node_gpus`); every accounted Pod that asks for
GPUs holds concrete GPU indices:

- a Pod whose ``kubesched.io/gpu-index`` annotation names GPUs that fit keeps those;
- any other Pod gets a provisional choice at once (the tightest GPU for a shared request, the
  lowest-index idle GPUs for whole ones), so the table never loses track of capacity;
- the GpuDevices plugin's Reserve replaces the choice (:meth:`GpuTable.reassign`) and its
  Unreserve puts the previous one back.

A GPU is never oversubscribed: an assignment that does not fit is refused; a bound Pod that
cannot be placed on the GPUs (the node changed under it) is kept in ``unplaced`` and holds
nothing.  Columns (``cap`` rows, ``G`` the widest node so far; absent GPUs have 0 free):
``count`` int64 ``(cap,)``, ``free`` int64 ``(cap, G)``, ``model`` int64 ``(cap,)`` codes into
``models``, ``numa``/``pcie``/``nvlink`` int64 ``(cap, G)``, ``tags`` int64 ``(cap, G + 1)``
Pods per GpuClustering class (0 shared, ``k`` for ``k`` whole GPUs, capped at ``G``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.api import gpu as g
from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.state.cache import ClusterState, PodRecord

IntArray = npt.NDArray[np.int64]
MILLI = g.MILLI


@dataclass(frozen=True, slots=True)
class Assignment:
    """GPUs a Pod holds: node row, GPU indices, thousandths taken on each."""

    row: int
    indices: tuple[int, ...]
    milli: int


class GpuTable:
    """Per-node GPU devices and their free capacity; see the module docstring."""

    def __init__(self, capacity: int = 64, width: int = 8) -> None:
        self.count = np.zeros(capacity, dtype=np.int64)
        self.free = np.zeros((capacity, width), dtype=np.int64)
        self.model = np.zeros(capacity, dtype=np.int64)
        self.numa = np.zeros((capacity, width), dtype=np.int64)
        self.pcie = np.zeros((capacity, width), dtype=np.int64)
        self.nvlink = np.zeros((capacity, width), dtype=np.int64)
        self.tags = np.zeros((capacity, width + 1), dtype=np.int64)
        self.models: list[str] = [""]
        self.model_code: dict[str, int] = {"": 0}
        self.assigned: dict[str, Assignment] = {}
        self.unplaced: set[str] = set()
        self.version = 0
        """Bumped on every change; caches of derived data key on it."""

    # ------------------------------------------------------------------ sizing
    @property
    def width(self) -> int:
        """``G``: the most GPUs any node row may have."""
        return int(self.free.shape[1])

    def _ensure(self, row: int, width: int) -> None:
        cap = self.count.shape[0]
        if row >= cap or width > self.width:
            new_cap, new_w = (
                max(cap, row + 1, cap * 2 if row >= cap else cap),
                max(self.width, width),
            )

            def grow(a: IntArray, cols: int | None) -> IntArray:
                shape = (new_cap,) if cols is None else (new_cap, cols)
                b = np.zeros(shape, dtype=np.int64)
                if cols is None:
                    b[: a.shape[0]] = a
                else:
                    b[: a.shape[0], : a.shape[1]] = a
                return b

            self.count = grow(self.count, None)
            self.model = grow(self.model, None)
            self.free = grow(self.free, new_w)
            self.numa = grow(self.numa, new_w)
            self.pcie = grow(self.pcie, new_w)
            self.nvlink = grow(self.nvlink, new_w)
            self.tags = grow(self.tags, new_w + 1)

    def model_of(self, name: str) -> int:
        """Code of GPU model ``name`` (a new code when first seen)."""
        code = self.model_code.get(name)
        if code is None:
            code = len(self.models)
            self.models.append(name)
            self.model_code[name] = code
        return code

    # ------------------------------------------------------------------ observer
    def node_changed(self, row: int, old: api.Node | None, new: api.Node | None) -> None:
        """Set ``row``'s devices from ``new`` (cleared when the node went away)."""
        del old
        try:
            dev = g.node_gpus(new) if new is not None else g.NodeGpus()
        except InputError:
            dev = g.NodeGpus(int(new.allocatable.get(g.GPU_RESOURCE, 0)) if new else 0)
        self._ensure(row, dev.count)
        self.count[row] = dev.count
        self.model[row] = self.model_of(dev.model)
        n = dev.count
        for col, ids in ((self.numa, dev.numa), (self.pcie, dev.pcie), (self.nvlink, dev.nvlink)):
            col[row] = -1
            col[row, :n] = ids if len(ids) == n else range(n)
        self.free[row] = 0
        self.free[row, :n] = MILLI
        self.tags[row] = 0
        for key, a in list(self.assigned.items()):
            if a.row == row:
                if new is None or any(i >= n for i in a.indices):
                    del self.assigned[key]
                    self.unplaced.add(key)
                else:
                    self._take(a, -1)
        self.version += 1

    def pod_added(self, rec: PodRecord) -> None:
        """Give ``rec``'s Pod GPUs on its row: its annotation's, else a provisional choice."""
        try:
            req = g.pod_gpu_request(rec.pod)
        except InputError:
            return
        if req.count == 0:
            return
        wanted = g.parse_indices(rec.pod.annotations.get(g.GPU_INDEX_ANNOTATION, ""))
        if wanted is None or not self.fits(rec.row, wanted, req):
            wanted = self.default_choice(rec.row, req)
        if wanted is None:
            self.unplaced.add(rec.pod.key)
            return
        self._take(Assignment(rec.row, tuple(wanted), req.milli), -1)
        self.assigned[rec.pod.key] = Assignment(rec.row, tuple(wanted), req.milli)
        self.version += 1

    def pod_removed(self, rec: PodRecord) -> None:
        """Give back what ``rec``'s Pod held."""
        key = rec.pod.key
        self.unplaced.discard(key)
        a = self.assigned.pop(key, None)
        if a is not None:
            self._take(a, +1)
            self.version += 1

    # ------------------------------------------------------------------ assignments
    def _take(self, a: Assignment, sign: int) -> None:
        idx = np.asarray(a.indices, dtype=np.int64)
        self.free[a.row, idx] += sign * a.milli
        tag = 0 if a.milli < MILLI else min(len(a.indices), self.width)
        self.tags[a.row, tag] -= sign

    def fits(self, row: int, indices: tuple[int, ...] | list[int], req: g.GpuRequest) -> bool:
        """Whether ``req`` fits on GPUs ``indices`` of ``row`` (distinct, present, free)."""
        if len(indices) != req.count or len(set(indices)) != len(indices):
            return False
        n = int(self.count[row])
        if any(not 0 <= i < n for i in indices):
            return False
        return bool((self.free[row, list(indices)] >= req.milli).all())

    def default_choice(self, row: int, req: g.GpuRequest) -> tuple[int, ...] | None:
        """The tightest GPU for a shared request, the lowest-index idle GPUs for whole ones."""
        f = self.free[row, : int(self.count[row])]
        if req.shared:
            ok = np.flatnonzero(f >= req.milli)
            return (int(ok[np.argmin(f[ok])]),) if ok.size else None
        idle = np.flatnonzero(f == MILLI)
        return tuple(int(i) for i in idle[: req.count]) if idle.size >= req.count else None

    def reassign(
        self, key: str, row: int, indices: tuple[int, ...] | None, req: g.GpuRequest
    ) -> bool:
        """Move ``key``'s GPUs to ``indices`` on ``row`` for ``req`` (None: hold nothing).
        False, and no change, when they do not fit."""
        old = self.assigned.pop(key, None)
        if old is not None:
            self._take(old, +1)
        if indices is None:
            self.version += 1
            return True
        if not self.fits(row, indices, req):
            if old is not None:
                self._take(old, -1)
                self.assigned[key] = old
            return False
        a = Assignment(row, tuple(indices), req.milli)
        self._take(a, -1)
        self.assigned[key] = a
        self.unplaced.discard(key)
        self.version += 1
        return True

    def indices_of(self, key: str) -> tuple[int, ...] | None:
        """GPU indices ``key`` holds, if any."""
        a = self.assigned.get(key)
        return a.indices if a is not None else None


def table_for(cluster: ClusterState) -> GpuTable:
    """The cluster's GPU table, created and registered as an observer on first use."""
    for o in cluster.observers:
        if isinstance(o, GpuTable):
            return o
    table = GpuTable(max(64, cluster.nodes.capacity))
    cluster.observe(table)
    return table
