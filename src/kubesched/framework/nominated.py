"""Nominated Pods in the Filter phase (part of the runtime).

Upstream ``RunFilterPluginsWithNominatedPods`` filters a node that has nominated Pods of
priority >= the incoming Pod's twice: with those Pods added to (a copy of) the node, and
without.  kubesched adds their usage to the node rows of the real table, runs the Filter
plugins over those rows at once, and takes the usage off again exactly
(:meth:`kubesched.framework.filterphase.FilterPhase.run_filter_with_nominated`).  All
nominated Pods are kept as arrays (:class:`NominatedSet`, over a
:class:`~kubesched.kernels.usage.UsageBlock`), updated in place when a nomination changes.
A Filter over one row reads that node's nominated Pods from the nominator instead
(:func:`usage_on_row`, :func:`shift_row`): no set to bring up to date for one row.

Arrays: ``rows`` int64 ``(n,)`` node-table rows.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

import numpy as np

from kubesched.api import objects as api
from kubesched.kernels.usage import Usage, UsageBlock, usage_of
from kubesched.state.nodes import IntArray, NodeTable

_NO_SLOTS: IntArray = np.zeros(0, dtype=np.int64)
_NO_SLOTS.flags.writeable = False
"""No slot (read-only: :meth:`NominatedSet.select`'s answer is only read)."""


class PodNominator(Protocol):
    """Pods nominated to nodes by preemption (the queue's nominator, upstream
    ``PodNominator``)."""

    @property
    def version(self) -> int:
        """Bumped on every change."""
        ...

    def __len__(self) -> int: ...
    def nominated_pods_for_node(self, node_name: str) -> Sequence[api.Pod]: ...
    def nominated_node_names(self) -> Collection[str]: ...
    def changed_since(self, version: int) -> Collection[str] | None:
        """Nodes whose nominations changed after ``version``; None: not known."""
        ...

    def node_of(self, pod_key: str) -> str:
        """The node the Pod is nominated to, or ``""``."""
        ...


class NominatedSet:
    """Every nominated Pod's usage as arrays, so that picking those relevant to one Filter
    call is a few array operations; brought up to date by :meth:`update` whenever the
    nominator changes (slots of Pods no longer nominated are freed and reused, so a change
    of one nomination costs one pass over the nominations, not a rebuild).

    Per slot: ``rows`` int64 the node row; ``priority`` int64; ``alive`` bool; ``pods`` the
    Pod (None when free); ``block`` their usage, to shift on and off the rows.
    """

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self.capacity = table.capacity
        self.pods: list[api.Pod | None] = []
        self.index: dict[str, int] = {}
        self.priority = np.zeros(0, dtype=np.int64)
        self.alive = np.zeros(0, dtype=np.bool_)
        self.block = UsageBlock(table, [])
        self._free: list[int] = []
        self._on_row: dict[int, set[int]] = {}
        """The live slots of each row."""
        self.version = -1
        """The nominator's version this set matches (-1: none yet)."""

    @property
    def rows(self) -> IntArray:
        """int64 ``(slots,)``: the node row of each slot."""
        return self.block.rows

    def update(self, nominator: PodNominator) -> None:
        """Match the slots to ``nominator``'s nominations (same node table): only the nodes
        changed since :attr:`version` when the nominator's journal says which (a Pod whose
        nomination changed left or joined a changed node, so only those rows' slots can be
        stale)."""
        changed = nominator.changed_since(self.version) if self.version >= 0 else None
        names = nominator.nominated_node_names() if changed is None else changed
        row_of = self.table.row_of
        current: dict[str, tuple[int, api.Pod]] = {}
        for name in names:
            row = row_of.get(name)
            if row is not None:
                for p in nominator.nominated_pods_for_node(name):
                    current[p.key] = (row, p)
        if changed is None:
            stale = list(self.index.items())
        else:
            pods = self.pods
            stale = []
            for name in changed:
                row = row_of.get(name)
                for slot in self._on_row.get(row, ()) if row is not None else ():
                    held = pods[slot]
                    assert held is not None
                    stale.append((held.key, slot))
        rows = self.block.rows
        for key, slot in stale:
            now = current.get(key)
            if now is None or now[1] is not self.pods[slot] or now[0] != rows[slot]:
                self._free_slot(key, slot)
        for key, (row, p) in current.items():
            if key not in self.index:
                self._put(p, usage_of(self.table, row, p))
        self.version = nominator.version

    def _free_slot(self, key: str, slot: int) -> None:
        del self.index[key]
        self.pods[slot] = None
        self.alive[slot] = False
        self._free.append(slot)
        on_row = self._on_row[int(self.block.rows[slot])]
        on_row.discard(slot)

    def _put(self, pod: api.Pod, usage: Usage) -> None:
        if not self._free:
            self._grow()
        slot = self._free.pop()
        b = self.block
        extra = usage[1].shape[0] - b.requests.shape[1]
        if extra > 0:  # the Pod requests a resource the table had no column for until now
            b.requests = np.hstack([b.requests, np.zeros((len(self.pods), extra), np.int64)])
        b.rows[slot] = usage[0]
        b.requests[slot] = 0
        b.requests[slot, : usage[1].shape[0]] = usage[1]
        b.nonzero[slot] = usage[2]
        if usage[3]:
            b.ports[slot] = usage[3]
        else:
            b.ports.pop(slot, None)
        if usage[4]:
            b.sparse[slot] = usage[4]
        else:
            b.sparse.pop(slot, None)
        self.priority[slot] = pod.priority
        self.alive[slot] = True
        self.pods[slot] = pod
        self.index[pod.key] = slot
        self._on_row.setdefault(usage[0], set()).add(slot)

    def _grow(self) -> None:
        old = len(self.pods)
        new = max(16, 2 * old)
        b = self.block
        b.rows = np.concatenate([b.rows, np.zeros(new - old, dtype=np.int64)])
        width = self.table.requested.shape[1]
        requests = np.zeros((new, width), dtype=np.int64)
        requests[:old, : b.requests.shape[1]] = b.requests
        b.requests = requests
        b.nonzero = np.concatenate([b.nonzero, np.zeros((new - old, 2), dtype=np.int64)])
        self.priority = np.concatenate([self.priority, np.zeros(new - old, dtype=np.int64)])
        self.alive = np.concatenate([self.alive, np.zeros(new - old, dtype=np.bool_)])
        self.pods.extend([None] * (new - old))
        self._free.extend(range(new - 1, old - 1, -1))

    def pods_at(self, slots: IntArray) -> list[api.Pod]:
        """The Pods of ``slots`` (live ones, as :meth:`select` returns)."""
        return [p for i in slots.tolist() if (p := self.pods[i]) is not None]

    def select(self, pod: api.Pod, rows: IntArray) -> IntArray:
        """int64 slots of the Pods nominated to one of ``rows`` with priority >= ``pod``'s,
        ``pod`` itself excluded, ordered by row."""
        mine = self.index.get(pod.key)
        if rows.shape[0] == 1:  # result reuse and preemption re-filter one node
            on_row = self._on_row.get(int(rows[0]))
            if not on_row:
                return _NO_SLOTS
            prio = pod.priority
            priority = self.priority
            slots = sorted(s for s in on_row if s != mine and int(priority[s]) >= prio)
            return np.asarray(slots, dtype=np.int64) if slots else _NO_SLOTS
        mask = self.alive & (self.priority >= pod.priority)
        if mine is not None:
            mask[mine] = False
        if not mask.any():
            return np.zeros(0, dtype=np.int64)
        wanted = np.zeros(self.capacity, dtype=np.bool_)
        wanted[rows] = True
        mask &= wanted[self.rows]
        idx = np.flatnonzero(mask)
        return idx[np.argsort(self.rows[idx], kind="stable")]


def usage_on_row(nominator: PodNominator, table: NodeTable, pod: api.Pod, row: int) -> list[Usage]:
    """The usage of the Pods nominated to node ``row`` with priority >= ``pod``'s, ``pod``
    itself excluded: the Pods :meth:`NominatedSet.select` picks for that one row, read from
    the nominator directly (no set to bring up to date for a one-row Filter)."""
    pods = nominator.nominated_pods_for_node(table.names[row])
    if not pods:
        return []
    prio, key = pod.priority, pod.key
    return [usage_of(table, row, p) for p in pods if p.priority >= prio and p.key != key]


def shift_row(table: NodeTable, row: int, usage: Sequence[Usage], sign: int) -> None:
    """Add (``sign`` 1) or remove (-1) ``usage`` (all on ``row``) on that row of ``table``,
    ``generation`` left alone (every change made here is undone)."""
    for _, req, nonzero, ports, sparse in usage:
        table.shift_pod_usage(row, req, nonzero, ports, sparse, sign)


class UsageCache:
    """The :class:`NominatedSet` of the current node table, updated when the nominator
    changes (a new one when the table's nodes or resource columns change)."""

    def __init__(self) -> None:
        self._set: tuple[tuple[int, int], int, NominatedSet] | None = None

    def nominated(self, nominator: PodNominator, table: NodeTable) -> NominatedSet:
        """The set for ``nominator`` as it is now."""
        shape = (table.version, len(table.resources))
        cached = self._set
        if cached is None or cached[0] != shape:
            cached = (shape, -1, NominatedSet(table))
        if cached[1] != nominator.version:
            cached[2].update(nominator)
            cached = (shape, nominator.version, cached[2])
        self._set = cached
        return cached[2]
