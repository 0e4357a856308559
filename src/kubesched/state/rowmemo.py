"""Answers of a row-local kernel kept per node row, refreshed where a row changed.

A Filter or Score kernel whose answer for a node depends only on a key (the Pod's
requests, say) and that node's own row of the :class:`~kubesched.state.nodes.NodeTable`
(allocatable, requested, Pod count) gives the same answer for a row until the row
changes.  Every lasting change of a row moves its ``generation`` (a Node set or removed, a
Pod added or removed), and every change undone again (the nominated Pods' usage a Filter
pass adds, the victims a preemption dry run takes off) moves its ``transient`` count, when
made and when undone.  Pods of one template are filtered and scored against mostly the
same rows, each bind changing one row, so :class:`RowMemo` keeps each row's answer with
the sum of the two counts it was found at (both only grow: the sum moves when either
does) and computes only the rows whose sum moved (or that were never asked for).

A memo is only for kernels whose answer is elementwise over the rows (the answer for a row
is the same whichever other rows are computed with it) and reads nothing beyond the row's
columns and the key; the caller says which key it is.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np

from kubesched.state.nodes import IntArray, NodeTable

FEW_ROWS = 8
"""Up to this many rows, a kernel's caller may rather compute them one by one with Python
numbers: a numpy kernel's fixed cost is that of ~15 rows, and the rows a memo finds changed
are usually a few."""
MAX_KEYS = 16
"""Keys kept at once (Pods of a few templates alternating); past it the memo starts over."""


class RowMemo:
    """Per-row answers (int64) of one kernel, for up to :data:`MAX_KEYS` keys, of one table."""

    __slots__ = ("_capacity", "_kept", "_table")

    def __init__(self) -> None:
        self._table: NodeTable | None = None
        self._capacity = 0
        self._kept: dict[Hashable, tuple[IntArray, IntArray]] = {}
        """key -> (answers, stamps): int64 ``(capacity,)`` each; a stamp is the row's
        ``generation + transient`` when its answer was found, -1 for a row never computed
        (the counts are never negative)."""

    def values(
        self,
        table: NodeTable,
        key: Hashable,
        rows: IntArray,
        compute: Callable[[IntArray], IntArray],
    ) -> IntArray:
        """The answers for ``rows`` (int64 ``(n,)``, a new array): kept ones where the row's
        stamp is the one they were found at, the others from ``compute(stale rows)``
        (int64, one answer per row given, in their order)."""
        if table is not self._table or table.capacity != self._capacity:
            self._table, self._capacity = table, table.capacity
            self._kept.clear()
        kept = self._kept.get(key)
        if kept is None:
            if len(self._kept) >= MAX_KEYS:
                self._kept.clear()
            kept = (
                np.zeros(self._capacity, dtype=np.int64),
                np.full(self._capacity, -1, dtype=np.int64),
            )
            self._kept[key] = kept
        answers, stamps = kept
        now = table.generation.take(rows)
        now += table.transient.take(rows)
        stale = stamps.take(rows) != now
        if stale.any():
            redo = rows[stale]
            answers[redo] = compute(redo)
            stamps[redo] = now[stale]
        return answers.take(rows)
