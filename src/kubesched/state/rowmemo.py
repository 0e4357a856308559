"""Answers of a row-local kernel kept per node row, refreshed where a row changed.

A Filter or Score kernel whose answer for a node depends only on a key (the Pod's
requests, say) and that node's own row of the :class:`~kubesched.state.nodes.NodeTable`
(allocatable, requested, Pod count) gives the same answer for a row until the row
changes.  The table lists the row of every change in
:attr:`~kubesched.state.nodes.NodeTable.moves`: each lasting one (a Node set or removed, a
Pod added or removed) and each one undone again (the nominated Pods' usage a Filter pass
adds, the victims a preemption dry run takes off), when made and when undone.  Pods of one
template are filtered and scored against mostly the same rows, each bind changing one row,
so :class:`RowMemo` keeps each row's answer until its row changes: a call first drops the
answers of the rows changed since the key's last call (all of them when the journal no
longer reaches back that far), then computes only the rows asked for that have no answer.

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


class _Kept:
    """One key's answers: int64 ``(capacity,)``, each current where ``known`` (bool) is
    set, as of the table's ``moves.version`` ``seen``."""

    __slots__ = ("answers", "known", "seen")

    def __init__(self, capacity: int, seen: int) -> None:
        self.answers = np.zeros(capacity, dtype=np.int64)
        self.known = np.zeros(capacity, dtype=np.bool_)
        self.seen = seen


class RowMemo:
    """Per-row answers (int64) of one kernel, for up to :data:`MAX_KEYS` keys, of one table."""

    __slots__ = ("_capacity", "_kept", "_table")

    def __init__(self) -> None:
        self._table: NodeTable | None = None
        self._capacity = 0
        self._kept: dict[Hashable, _Kept] = {}

    def values(
        self,
        table: NodeTable,
        key: Hashable,
        rows: IntArray,
        compute: Callable[[IntArray], IntArray],
    ) -> IntArray:
        """The answers for ``rows`` (int64 ``(n,)``, a new array): kept ones where the
        row did not change since they were found, the others from ``compute(rows without
        one)`` (int64, one answer per row given, in their order)."""
        if table is not self._table or table.capacity != self._capacity:
            self._table, self._capacity = table, table.capacity
            self._kept.clear()
        moves = table.moves
        kept = self._kept.get(key)
        if kept is None:
            if len(self._kept) >= MAX_KEYS:
                self._kept.clear()
            kept = self._kept[key] = _Kept(self._capacity, moves.version)
        elif kept.seen != moves.version:
            moved = moves.since(kept.seen)
            if moved is None:  # the journal no longer reaches back: nothing is known
                kept.known.fill(False)
            elif len(moved) <= FEW_ROWS:
                known = kept.known
                for row in moved:
                    known[row] = False
            else:
                kept.known[np.asarray(moved, dtype=np.int64)] = False
            kept.seen = moves.version
        answers, known = kept.answers, kept.known
        have = known.take(rows)
        if np.count_nonzero(have) != rows.shape[0]:
            redo = rows[~have]
            answers[redo] = compute(redo)
            known[redo] = True
        return answers.take(rows)
