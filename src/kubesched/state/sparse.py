"""Sparse resource columns: resources that only a few nodes have.

The node table (:mod:`kubesched.state.nodes`) keeps dense ``[N, R]`` columns for the
resources many nodes share.  Device plugins with per-device names (one extended resource per
node) would make ``R`` grow with ``N``, memory with ``N * R`` and every request vector with
``R``; such a resource lives here instead, as the rows that have it (or whose Pods request
it) with their allocatable and requested amounts.  Reading it for any ``rows`` is one
``searchsorted`` over its few rows, and :meth:`SparseResource.rows_with` is the index a Pod
requesting it filters through.

Arrays: ``rows`` int64 ``(n,)`` node-table rows; a resource's own slots are int64 ``(k,)``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

SparseRequest = tuple[tuple[str, int], ...]
"""A Pod's requests of sparse resources: (name, amount) pairs, sorted by name."""


class SparseResource:
    """One resource on a few rows: slot ``s < len(self)`` holds row ``rows[s]`` with
    ``alloc[s]`` allocatable and ``req[s]`` requested (int64 ``(capacity,)`` arrays, the
    first ``len(self)`` slots used); ``slot[row]`` is the slot of a row."""

    __slots__ = ("_sorted", "alloc", "req", "rows", "slot")

    def __init__(self) -> None:
        self.slot: dict[int, int] = {}
        self.rows = np.zeros(4, dtype=np.int64)
        self.alloc = np.zeros(4, dtype=np.int64)
        self.req = np.zeros(4, dtype=np.int64)
        self._sorted: tuple[IntArray, IntArray] | None = None

    def __len__(self) -> int:
        return len(self.slot)

    def _slot_of(self, row: int) -> int:
        s = self.slot.get(row)
        if s is not None:
            return s
        s = len(self.slot)
        if s >= self.rows.shape[0]:
            cap = 2 * self.rows.shape[0]
            self.rows = np.resize(self.rows, cap)
            self.alloc = np.resize(self.alloc, cap)
            self.req = np.resize(self.req, cap)
        self.slot[row] = s
        self.rows[s] = row
        self.alloc[s] = 0
        self.req[s] = 0
        self._sorted = None
        return s

    def set_alloc(self, row: int, amount: int) -> bool:
        """Set ``row``'s allocatable; True when the row holds an entry afterwards."""
        if amount == 0 and row not in self.slot:
            return False
        s = self._slot_of(row)  # first: it may grow the arrays
        self.alloc[s] = amount
        return self._keep(row)

    def add_req(self, row: int, amount: int) -> bool:
        """Add ``amount`` (may be negative) to ``row``'s requested; True when the row holds
        an entry afterwards."""
        s = self._slot_of(row)  # first: it may grow the arrays
        self.req[s] += amount
        return self._keep(row)

    def _keep(self, row: int) -> bool:
        s = self.slot[row]
        if self.alloc[s] or self.req[s]:
            return True
        self.drop(row)
        return False

    def drop(self, row: int) -> None:
        """Forget ``row`` (the last slot moves into its place)."""
        s = self.slot.pop(row, None)
        if s is None:
            return
        last = len(self.slot)
        if s != last:
            moved = int(self.rows[last])
            self.rows[s] = moved
            self.alloc[s] = self.alloc[last]
            self.req[s] = self.req[last]
            self.slot[moved] = s
        self._sorted = None

    def at(self, row: int) -> tuple[int, int]:
        """(allocatable, requested) of one row, 0 where it has no entry."""
        s = self.slot.get(row)
        return (0, 0) if s is None else (int(self.alloc[s]), int(self.req[s]))

    def values(self, rows: IntArray) -> tuple[IntArray, IntArray]:
        """(allocatable, requested) of ``rows``, each int64 ``(n,)``, 0 where absent."""
        k = len(self.slot)
        n = rows.shape[0]
        if k == 0 or n == 0:
            return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        if self._sorted is None:
            order = np.argsort(self.rows[:k], kind="stable")
            self._sorted = (self.rows[:k][order], order)
        srt, order = self._sorted
        pos = np.minimum(np.searchsorted(srt, rows), k - 1)
        hit = srt[pos] == rows
        sl = order[pos]
        return np.where(hit, self.alloc[sl], 0), np.where(hit, self.req[sl], 0)

    def rows_with(self) -> IntArray:
        """int64 ``(m,)``: the rows with allocatable > 0 (ascending)."""
        k = len(self.slot)
        rows = self.rows[:k][self.alloc[:k] > 0]
        return np.sort(rows)
