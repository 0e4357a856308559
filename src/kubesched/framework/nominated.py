"""Nominated Pods in the Filter phase, and Pod usage moved on and off node rows in bulk.

Upstream ``RunFilterPluginsWithNominatedPods`` filters a node that has nominated Pods of
priority >= the incoming Pod's twice: with those Pods added to (a copy of) the node, and
without.  kubesched adds their usage to the node rows of the real table, runs the Filter
plugins over those rows at once, and takes the usage off again exactly
(:meth:`kubesched.framework.runtime.Framework.run_filter_with_nominated`).  Preemption's dry
runs lift victims off their rows the same way (:func:`shift_usage`).

Arrays: ``rows`` int64 ``(n,)`` node-table rows; a :data:`Usage` is one Pod on one row.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

import numpy as np

from kubesched.api import objects as api
from kubesched.framework.interface import IntArray
from kubesched.state.nodes import NodeTable

Usage = tuple[int, IntArray, tuple[int, int], tuple[api.HostPort, ...]]
"""``(row, request vector (R',), (non-zero cpu, non-zero memory), host ports)`` of one Pod
(the fields of :class:`kubesched.state.cache.PodRecord`)."""


class PodNominator(Protocol):
    """Pods nominated to nodes by preemption (the queue's nominator, upstream
    ``PodNominator``)."""

    version: int
    """Bumped on every change."""

    def __len__(self) -> int: ...
    def nominated_pods_for_node(self, node_name: str) -> Sequence[api.Pod]: ...
    def nominated_node_names(self) -> Collection[str]: ...


class UsageCache:
    """Request vectors of nominated Pods, built once per Pod object and table width."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[api.Pod, int, IntArray, tuple[int, int]]] = {}
        self._nodes: tuple[int, int, list[tuple[int, str]], IntArray] | None = None

    def nominated_rows(
        self, nominator: PodNominator, table: NodeTable
    ) -> tuple[list[tuple[int, str]], IntArray]:
        """``(row, node name)`` of every node with nominated Pods, and those rows (int64)."""
        cached = self._nodes
        if cached is None or cached[0] != nominator.version or cached[1] != table.version:
            row_of = table.row_of
            pairs = [(row_of[n], n) for n in nominator.nominated_node_names() if n in row_of]
            rows = np.fromiter((r for r, _ in pairs), dtype=np.int64, count=len(pairs))
            cached = self._nodes = (nominator.version, table.version, pairs, rows)
        return cached[2], cached[3]

    def usage(self, table: NodeTable, row: int, pod: api.Pod) -> Usage:
        """``pod``'s usage on ``row``."""
        hit = self._cache.get(pod.key)
        width = len(table.resources)
        if hit is None or hit[0] is not pod or hit[1] != width:
            nonzero = (
                pod.nonzero_requests.get(api.CPU, 0),
                pod.nonzero_requests.get(api.MEMORY, 0),
            )
            req = table.request_vector(pod.requests)
            hit = (pod, len(table.resources), req, nonzero)
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[pod.key] = hit
        return (row, hit[2], hit[3], pod.host_ports)


def nominated_usage(
    nominator: PodNominator, table: NodeTable, pod: api.Pod, rows: IntArray, cache: UsageCache
) -> tuple[IntArray, list[Usage], list[list[api.Pod]]]:
    """Rows of ``rows`` that hold nominated Pods of priority >= ``pod``'s (``pod`` itself
    excluded), those Pods' usage, and the Pods of each such row (aligned with the rows)."""
    nominated, nrows = cache.nominated_rows(nominator, table)
    if not nominated:
        return np.zeros(0, dtype=np.int64), [], []
    with_rows: list[int] = []
    usage: list[Usage] = []
    pods: list[list[api.Pod]] = []
    for k in np.flatnonzero(np.isin(nrows, rows)).tolist():
        row, name = nominated[k]
        here = [
            p
            for p in nominator.nominated_pods_for_node(name)
            if p.priority >= pod.priority and p.key != pod.key
        ]
        if here:
            with_rows.append(row)
            pods.append(here)
            usage.extend(cache.usage(table, row, p) for p in here)
    return np.asarray(with_rows, dtype=np.int64), usage, pods


class UsageBlock:
    """The usage of many Pods as arrays, to move any subset of them on or off their rows
    in one step (preemption's dry runs move victims back and forth)."""

    def __init__(self, table: NodeTable, usage: Sequence[Usage]) -> None:
        n = len(usage)
        self.table = table
        self.rows = np.fromiter((u[0] for u in usage), dtype=np.int64, count=n)
        self.requests = np.zeros((n, table.requested.shape[1]), dtype=np.int64)
        for i, u in enumerate(usage):
            self.requests[i, : u[1].shape[0]] = u[1]
        self.nonzero = np.asarray([u[2] for u in usage], dtype=np.int64).reshape(n, 2)
        self.ports = {i: u[3] for i, u in enumerate(usage) if u[3]}

    def shift(self, idx: IntArray | slice, sign: int) -> None:
        """Add (``sign`` 1) or remove (-1) the usage of Pods ``idx`` (int64 indices or a
        slice): requests, non-zero requests, Pod counts and host ports, exactly as
        ``add_pod_usage`` / ``remove_pod_usage`` one by one (``generation`` is left alone:
        every change made here is undone)."""
        t = self.table
        rows = self.rows[idx]
        if rows.size == 0:
            return
        np.add.at(t.requested, rows, self.requests[idx] * sign)
        np.add.at(t.nonzero_requested, rows, self.nonzero[idx] * sign)
        np.add.at(t.pod_count, rows, sign)
        if self.ports:
            picked = range(len(self.rows))[idx] if isinstance(idx, slice) else idx.tolist()
            for i in picked:
                for p in self.ports.get(i, ()):
                    key = (p.host_ip, p.protocol, p.port)
                    col = t.host_ports.get(key)
                    if col is None:
                        col = t.host_ports[key] = np.zeros(t.capacity, dtype=np.int32)
                    col[int(self.rows[i])] += sign


def shift_usage(table: NodeTable, usage: Sequence[Usage], sign: int) -> None:
    """Add (``sign`` 1) or remove (-1) the usage of ``usage`` (see :class:`UsageBlock`)."""
    if usage:
        UsageBlock(table, usage).shift(slice(None), sign)
