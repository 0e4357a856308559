"""Pod usage moved on and off node rows in bulk: a kernel the runtime and plugins share.

The runtime counts nominated Pods on their nodes in the Filter phase
(:class:`kubesched.framework.nominated.NominatedSet`); preemption's dry runs lift victims
off their rows and put them back (``plugins/defaultpreemption/dryrun.py``).  Both keep the
Pods' usage as one :class:`UsageBlock` and shift any subset of it in one step, exactly as
``add_pod_usage`` / ``remove_pod_usage`` would one Pod at a time.

Arrays: ``rows`` int64 ``(n,)`` node-table rows; a :data:`Usage` is one Pod on one row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.api import objects as api
from kubesched.state.nodes import IntArray, NodeTable
from kubesched.state.sparse import SparseRequest

Usage = tuple[int, IntArray, tuple[int, int], tuple[api.HostPort, ...], SparseRequest]
"""``(row, request vector (R',), (non-zero cpu, non-zero memory), host ports, requests of
sparse resources)`` of one Pod (the fields of :class:`kubesched.state.cache.PodRecord`)."""


def usage_of(table: NodeTable, row: int, pod: api.Pod) -> Usage:
    """The usage of ``pod`` on ``row`` of ``table``."""
    nonzero = (pod.nonzero_requests.get(api.CPU, 0), pod.nonzero_requests.get(api.MEMORY, 0))
    req, sparse = table.split_request(pod.requests)
    return (row, req, nonzero, pod.host_ports, sparse)


class UsageBlock:
    """The usage of many Pods as arrays, to move any subset of them on or off their rows
    in one step (preemption's dry runs move victims back and forth)."""

    def __init__(self, table: NodeTable, usage: Sequence[Usage]) -> None:
        n = len(usage)
        self.table = table
        self.rows = np.fromiter((u[0] for u in usage), dtype=np.int64, count=n)
        self.requests = np.zeros((n, table.requested.shape[1]), dtype=np.int64)
        widths = {u[1].shape[0] for u in usage}
        if len(widths) == 1:  # the usual case: one stack instead of a row per Pod
            w = widths.pop()
            self.requests[:, :w] = np.stack([u[1] for u in usage])
        else:
            for i, u in enumerate(usage):
                self.requests[i, : u[1].shape[0]] = u[1]
        self.nonzero = np.asarray([u[2] for u in usage], dtype=np.int64).reshape(n, 2)
        self.ports = {i: u[3] for i, u in enumerate(usage) if u[3]}
        self.sparse = {i: u[4] for i, u in enumerate(usage) if u[4]}

    def shift(self, idx: IntArray | slice, sign: int) -> None:
        """Add (``sign`` 1) or remove (-1) the usage of Pods ``idx`` (int64 indices or a
        slice): requests (dense and sparse), non-zero requests, Pod counts and host ports, as
        ``add_pod_usage`` / ``remove_pod_usage`` one by one (``generation`` is left alone:
        every change made here is undone; the rows journalled in ``moves``)."""
        t = self.table
        rows = self.rows[idx]
        if rows.size == 0:
            return
        t.moves.extend(rows.tolist())  # a row listed twice: journalled twice, dropped once
        if rows.shape[0] == 1:  # one Pod (a nominated one, a victim): views, no ufunc.at
            row = int(rows[0])
            i = range(self.rows.shape[0])[idx][0] if isinstance(idx, slice) else int(idx[0])
            # the row's views changed in place (``a[row] += x`` would copy them back too)
            used, nz = t.requested[row], t.nonzero_requested[row]
            if sign > 0:
                used += self.requests[i]
                nz += self.nonzero[i]
            else:
                used -= self.requests[i]
                nz -= self.nonzero[i]
            t.pod_count[row] += sign
        elif rows[0] == rows[-1] and bool((rows == rows[0]).all()):  # one node's Pods: sums
            row = int(rows[0])
            used, nz = t.requested[row], t.nonzero_requested[row]
            if sign > 0:
                used += self.requests[idx].sum(axis=0)
                nz += self.nonzero[idx].sum(axis=0)
            else:
                used -= self.requests[idx].sum(axis=0)
                nz -= self.nonzero[idx].sum(axis=0)
            t.pod_count[row] += sign * int(rows.shape[0])
        else:
            np.add.at(t.requested, rows, self.requests[idx] * sign)
            np.add.at(t.nonzero_requested, rows, self.nonzero[idx] * sign)
            np.add.at(t.pod_count, rows, sign)
        if self.ports or self.sparse:
            picked = range(len(self.rows))[idx] if isinstance(idx, slice) else idx.tolist()
            for i in picked:
                for name, amount in self.sparse.get(i, ()):
                    t.add_sparse_request(int(self.rows[i]), name, sign * amount)
                for p in self.ports.get(i, ()):
                    key = (p.host_ip, p.protocol, p.port)
                    col = t.host_ports.get(key)
                    if col is None:
                        col = t.host_ports[key] = np.zeros(t.capacity, dtype=np.int32)
                    col[int(self.rows[i])] += sign
