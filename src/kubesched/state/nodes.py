"""The columnar node table: one row per node, one numpy column per fact.

Plugins answer for all candidate nodes at once by reading these columns with an index array
``rows`` (``int64`` array of shape ``(n,)``).  Placing or removing a Pod touches one row.

Columns (``cap`` rows are allocated; ``alive[row]`` says whether a row holds a node):

- ``allocatable``, ``requested`` : int64 ``(cap, R)``; resource ``r`` is ``resources[r]``
  (CPU millicores, bytes, units).  Column 0 is ``cpu``, 1 ``memory``, 2 ``ephemeral-storage``;
  extended resources are appended as they appear, while the table has fewer than
  ``max_dense_extended`` of them.  Later ones are ``sparse[name]``
  (:class:`~kubesched.state.sparse.SparseResource`: the rows that have them) until
  ``promote_rows`` rows have one, when it becomes a dense column.  So ``R`` stays small
  when every node advertises its own resource.  :meth:`NodeTable.resource_values` reads
  either form.
- ``nonzero_requested`` : int64 ``(cap, 2)``: CPU and memory with upstream's non-zero
  defaults, what the scoring plugins use.
- ``pod_count``, ``allowed_pods`` : int64 ``(cap,)``.
- ``unschedulable`` : bool ``(cap,)``; ``generation`` : int64 ``(cap,)`` bumped on each change.
- ``moves`` (a :class:`~kubesched.state.journal.ChangeJournal`) lists, in order, the row of
  each change: every ``generation`` bump and every change of a row's Pod usage, those undone
  again too (a Filter pass's nominated Pods, a preemption dry run's victims), when made and
  when undone: what kept per-row answers are dropped by (:mod:`kubesched.state.rowmemo`).
- ``label_codes[key]`` : int32 ``(cap,)`` interned value code of label ``key``, -1 if absent;
  ``label_values[key]`` maps value to code.
- ``taint_set`` : int32 ``(cap,)`` id into ``taint_sets`` (interned tuples of taints).
- ``feature_set`` : int32 ``(cap,)`` id into ``feature_sets`` (interned
  ``status.declaredFeatures`` tuples; 0 is the empty one).
- ``host_ports[(ip, protocol, port)]`` : int32 ``(cap,)`` count of pods using that host port.
- ``image_sizes[name]`` : int64 ``(cap,)`` size of that image on the node, 0 if absent.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.state.journal import ChangeJournal
from kubesched.state.sparse import SparseRequest, SparseResource

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

BASE_RESOURCES = (api.CPU, api.MEMORY, api.EPHEMERAL_STORAGE)
_INITIAL_CAP = 64
MAX_DENSE_EXTENDED = 16
"""Extended resources that get a dense column as soon as they appear."""
PROMOTE_ROWS = 64
"""A sparse resource on this many rows becomes a dense column."""
MOVES_KEPT = 4096
"""Stamp moves :attr:`NodeTable.moves` keeps (between half and all of them)."""


class NodeTable:
    """Columns for every node of the cluster; see the module docstring for the layout."""

    def __init__(self, capacity: int = _INITIAL_CAP) -> None:
        cap = max(1, capacity)
        self.resources: list[str] = list(BASE_RESOURCES)
        self.resource_index: dict[str, int] = {r: i for i, r in enumerate(self.resources)}
        self.allocatable = np.zeros((cap, len(self.resources)), dtype=np.int64)
        self.requested = np.zeros((cap, len(self.resources)), dtype=np.int64)
        self.sparse: dict[str, SparseResource] = {}
        self._row_sparse: dict[int, set[str]] = {}
        """The sparse resources with an entry on each row."""
        self.max_dense_extended = MAX_DENSE_EXTENDED
        self.promote_rows = PROMOTE_ROWS
        self.nonzero_requested = np.zeros((cap, 2), dtype=np.int64)
        self.pod_count = np.zeros(cap, dtype=np.int64)
        self.allowed_pods = np.zeros(cap, dtype=np.int64)
        self.unschedulable = np.zeros(cap, dtype=np.bool_)
        self.alive = np.zeros(cap, dtype=np.bool_)
        self.generation = np.zeros(cap, dtype=np.int64)
        self.moves: ChangeJournal[int] = ChangeJournal(MOVES_KEPT)
        """The row of each change of a row (``generation`` bumped, or its Pod usage shifted
        and shifted back; a block's shift, one entry per row listed), in order.  Whatever
        bumps ``generation`` or shifts usage adds its rows here too."""
        self.taint_set = np.zeros(cap, dtype=np.int32)
        self.taint_sets: list[tuple[api.Taint, ...]] = [()]
        self._taint_set_ids: dict[tuple[api.Taint, ...], int] = {(): 0}
        self.feature_set = np.zeros(cap, dtype=np.int32)
        self.feature_sets: list[tuple[str, ...]] = [()]
        self._feature_set_ids: dict[tuple[str, ...], int] = {(): 0}
        self.label_codes: dict[str, npt.NDArray[np.int32]] = {}
        self.label_values: dict[str, dict[str, int]] = {}
        self.host_ports: dict[tuple[str, str, int], npt.NDArray[np.int32]] = {}
        self.image_sizes: dict[str, IntArray] = {}
        self.names: list[str] = [""] * cap
        self.nodes: list[api.Node | None] = [None] * cap
        self.row_of: dict[str, int] = {}
        self._free_rows: list[int] = []
        self._order: IntArray | None = None
        self._seq = np.zeros(cap, dtype=np.int64)
        self._next_seq = 0
        self.version = 0
        """Bumped on every node add/update/delete; cached per-cycle data keys on it."""
        self._last_request: tuple[dict[str, int], IntArray, SparseRequest] | None = None

    # ----------------------------------------------------------------- sizing
    @property
    def capacity(self) -> int:
        """Rows allocated."""
        return int(self.alive.shape[0])

    def __len__(self) -> int:
        return len(self.row_of)

    def order(self) -> IntArray:
        """Rows of live nodes in insertion order: the list the scheduler walks round-robin."""
        if self._order is None:
            rows = sorted(self.row_of.values(), key=lambda r: self._seq[r])
            self._order = np.asarray(rows, dtype=np.int64)
            self._order.flags.writeable = False  # shared: the search keeps rotations of it
        return self._order

    def _grow(self, cap: int) -> None:
        old = self.capacity
        if cap <= old:
            return

        def grow(a: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
            shape = (cap, *a.shape[1:])
            interned = a is self.taint_set or a is self.feature_set
            fill = -1 if a.dtype == np.int32 and not interned else 0
            b = np.full(shape, fill, dtype=a.dtype)
            b[:old] = a
            return b

        self.allocatable = grow(self.allocatable)  # type: ignore[assignment]
        self.requested = grow(self.requested)  # type: ignore[assignment]
        self.nonzero_requested = grow(self.nonzero_requested)  # type: ignore[assignment]
        self.pod_count = grow(self.pod_count)  # type: ignore[assignment]
        self.allowed_pods = grow(self.allowed_pods)  # type: ignore[assignment]
        self.unschedulable = grow(self.unschedulable)  # type: ignore[assignment]
        self.alive = grow(self.alive)  # type: ignore[assignment]
        self.generation = grow(self.generation)  # type: ignore[assignment]
        self.taint_set = grow(self.taint_set)  # type: ignore[assignment]
        self.feature_set = grow(self.feature_set)  # type: ignore[assignment]
        self._seq = np.concatenate([self._seq, np.zeros(cap - old, dtype=np.int64)])
        for key, col in self.label_codes.items():
            self.label_codes[key] = grow(col)  # type: ignore[assignment]
        for pkey, pcol in self.host_ports.items():
            b = np.zeros(cap, dtype=np.int32)
            b[:old] = pcol
            self.host_ports[pkey] = b
        for img, icol in self.image_sizes.items():
            self.image_sizes[img] = grow(icol)  # type: ignore[assignment]
        self.nodes.extend([None] * (cap - old))
        self.names.extend([""] * (cap - old))

    def resource_col(self, name: str) -> int | None:
        """Dense column of resource ``name``, or None when it is sparse; an unseen name gets
        a new (all-zero) column, or an empty sparse entry once the table has
        ``max_dense_extended`` extended resources."""
        col = self.resource_index.get(name)
        if col is not None:
            return col
        if name in self.sparse:
            return None
        if len(self.resources) - len(BASE_RESOURCES) >= self.max_dense_extended:
            self.sparse[name] = SparseResource()
            return None
        return self._add_column(name)

    def _add_column(self, name: str) -> int:
        col = len(self.resources)
        self.resources.append(name)
        self.resource_index[name] = col
        pad = np.zeros((self.capacity, 1), dtype=np.int64)
        self.allocatable = np.hstack([self.allocatable, pad])
        self.requested = np.hstack([self.requested, pad])
        return col

    def request_vector(self, requests: api.Resources) -> IntArray:
        """A pod's requests of dense resources as a read-only int64 vector of shape
        ``(R',)`` (``pods`` excluded; ``R' <= R``: resources added to the table later are
        not in it); see :meth:`split_request` for the sparse ones."""
        return self.split_request(requests)[0]

    def split_request(self, requests: api.Resources) -> tuple[IntArray, SparseRequest]:
        """A pod's requests as :meth:`request_vector` and the (name, amount) pairs of those
        held sparse now.  The last answer is reused for equal requests (Pods of one template
        come in runs)."""
        last = self._last_request
        if last is not None and last[0] == requests:
            return last[1], last[2]
        sparse: list[tuple[str, int]] = []
        cols: list[tuple[int, int]] = []
        for name, amount in requests.items():
            if name != api.PODS:
                col = self.resource_col(name)
                if col is None:
                    sparse.append((name, amount))
                else:
                    cols.append((col, amount))
        vec = np.zeros(len(self.resources), dtype=np.int64)
        for col, amount in cols:
            vec[col] = amount
        vec.flags.writeable = False
        split = (vec, tuple(sorted(sparse)))
        self._last_request = (dict(requests), *split)
        return split

    def resource_values(self, name: str, rows: IntArray) -> tuple[IntArray, IntArray]:
        """(allocatable, requested) of resource ``name`` on ``rows``, each int64 ``(n,)``,
        whether it is dense or sparse (zeros for a name never seen)."""
        col = self.resource_index.get(name)
        if col is not None:
            return self.allocatable[rows, col], self.requested[rows, col]
        sp = self.sparse.get(name)
        if sp is None:
            return np.zeros(rows.shape[0], dtype=np.int64), np.zeros(rows.shape[0], np.int64)
        return sp.values(rows)

    def resource_at(self, name: str, row: int) -> tuple[int, int]:
        """(allocatable, requested) of resource ``name`` on one row, as Python ints."""
        col = self.resource_index.get(name)
        if col is not None:
            return int(self.allocatable[row, col]), int(self.requested[row, col])
        sp = self.sparse.get(name)
        return (0, 0) if sp is None else sp.at(row)

    def _sparse_entry(self, row: int, name: str, kept: bool) -> None:
        names = self._row_sparse.setdefault(row, set())
        if kept:
            names.add(name)
        else:
            names.discard(name)

    def add_sparse_request(self, row: int, name: str, amount: int) -> None:
        """Add ``amount`` (may be negative) of resource ``name`` to ``row``'s requested
        sums, in its dense column if it was promoted since the request was split."""
        col = self.resource_index.get(name)
        if col is not None:
            self.requested[row, col] += amount
        else:
            self._sparse_entry(row, name, self.sparse[name].add_req(row, amount))

    def _promote(self, name: str) -> None:
        """Move sparse resource ``name`` into a new dense column."""
        sp = self.sparse.pop(name)
        col = self._add_column(name)
        k = len(sp)
        rows = sp.rows[:k]
        self.allocatable[rows, col] = sp.alloc[:k]
        self.requested[rows, col] = sp.req[:k]
        for row in rows.tolist():
            self._row_sparse[row].discard(name)

    # ----------------------------------------------------------------- labels, taints
    def label_code(self, key: str, value: str) -> int:
        """Interned code of ``value`` for label ``key``, or -2 if no node ever had it."""
        return self.label_values.get(key, {}).get(value, -2)

    def label_column(self, key: str) -> npt.NDArray[np.int32]:
        """Codes of label ``key`` for every row (-1 where the node lacks the label)."""
        col = self.label_codes.get(key)
        if col is None:
            col = np.full(self.capacity, -1, dtype=np.int32)
            self.label_codes[key] = col
            self.label_values[key] = {}
        return col

    def _set_labels(self, row: int, labels: dict[str, str]) -> None:
        for key, col in self.label_codes.items():
            if key not in labels:
                col[row] = -1
        for key, value in labels.items():
            col = self.label_column(key)
            values = self.label_values[key]
            code = values.get(value)
            if code is None:
                code = len(values)
                values[value] = code
            col[row] = code

    def _intern_taints(self, taints: tuple[api.Taint, ...]) -> int:
        tid = self._taint_set_ids.get(taints)
        if tid is None:
            tid = len(self.taint_sets)
            self.taint_sets.append(taints)
            self._taint_set_ids[taints] = tid
        return tid

    def _intern_features(self, features: tuple[str, ...]) -> int:
        fid = self._feature_set_ids.get(features)
        if fid is None:
            fid = len(self.feature_sets)
            self.feature_sets.append(features)
            self._feature_set_ids[features] = fid
        return fid

    # ----------------------------------------------------------------- nodes
    def add_node(self, node: api.Node) -> int:
        """Insert a node (or update it, if its name exists); return its row."""
        row = self.row_of.get(node.name)
        if row is not None:
            self.update_node(node)
            return row
        if self._free_rows:
            row = self._free_rows.pop()
        else:
            row = len(self.row_of) + len(self._free_rows)
            if row >= self.capacity:
                self._grow(max(self.capacity * 2, row + 1))
        self.row_of[node.name] = row
        self.names[row] = node.name
        self.alive[row] = True
        self._seq[row] = self._next_seq
        self._next_seq += 1
        self.requested[row] = 0
        self.nonzero_requested[row] = 0
        self.pod_count[row] = 0
        for pcol in self.host_ports.values():
            pcol[row] = 0
        self._write_node(row, node)
        self._order = None
        return row

    def update_node(self, node: api.Node) -> int:
        """Replace the node facts of an existing row (its pods stay accounted)."""
        row = self.row_of[node.name]
        self._write_node(row, node)
        return row

    def _write_node(self, row: int, node: api.Node) -> None:
        for name in node.allocatable:
            if name != api.PODS:
                self.resource_col(name)
        self.allocatable[row] = 0
        for name in list(self._row_sparse.get(row, ())):
            self._sparse_entry(row, name, self.sparse[name].set_alloc(row, 0))
        for name, amount in node.allocatable.items():
            if name == api.PODS:
                self.allowed_pods[row] = amount
            elif name in self.resource_index:
                self.allocatable[row, self.resource_index[name]] = amount
            else:
                sp = self.sparse[name]
                self._sparse_entry(row, name, sp.set_alloc(row, amount))
                if len(sp) >= self.promote_rows:
                    self._promote(name)
        if api.PODS not in node.allocatable:
            self.allowed_pods[row] = 0
        self.unschedulable[row] = node.unschedulable
        self.taint_set[row] = self._intern_taints(node.taints)
        self.feature_set[row] = self._intern_features(node.declared_features)
        self._set_labels(row, node.labels)
        for icol in self.image_sizes.values():
            icol[row] = 0
        for image in node.images:
            for name in image.names:
                sizes = self.image_sizes.get(name)
                if sizes is None:
                    sizes = np.zeros(self.capacity, dtype=np.int64)
                    self.image_sizes[name] = sizes
                sizes[row] = image.size_bytes
        self.nodes[row] = node
        self.generation[row] += 1
        self.moves.add(row)
        self.version += 1

    def remove_node(self, name: str) -> int:
        """Drop a node; its row is recycled later.  Returns the freed row."""
        row = self.row_of.pop(name)
        self.alive[row] = False
        self.nodes[row] = None
        self.names[row] = ""
        for col in self.label_codes.values():
            col[row] = -1
        for icol in self.image_sizes.values():
            icol[row] = 0
        self.allocatable[row] = 0
        self.requested[row] = 0
        for rname in self._row_sparse.pop(row, ()):
            self.sparse[rname].drop(row)
        self.generation[row] += 1
        self.moves.add(row)
        self._free_rows.append(row)
        self._order = None
        self.version += 1
        return row

    # ----------------------------------------------------------------- pods on rows
    def add_pod_usage(
        self,
        row: int,
        req: IntArray,
        nonzero: tuple[int, int],
        ports: Iterable[api.HostPort],
        sparse: SparseRequest = (),
    ) -> None:
        """Account one pod on ``row``: ``req`` has shape ``(R',)`` with ``R' <= R``;
        ``sparse`` its requests of sparse resources (:meth:`split_request`)."""
        self.shift_pod_usage(row, req, nonzero, ports, sparse, 1)
        self.generation[row] += 1  # the row's move journalled by shift_pod_usage

    def remove_pod_usage(
        self,
        row: int,
        req: IntArray,
        nonzero: tuple[int, int],
        ports: Iterable[api.HostPort],
        sparse: SparseRequest = (),
    ) -> None:
        """Undo :meth:`add_pod_usage` for the same arguments."""
        self.shift_pod_usage(row, req, nonzero, ports, sparse, -1)
        self.generation[row] += 1  # the row's move journalled by shift_pod_usage

    def shift_pod_usage(
        self,
        row: int,
        req: IntArray,
        nonzero: tuple[int, int],
        ports: Iterable[api.HostPort],
        sparse: SparseRequest,
        sign: int,
    ) -> None:
        """Add (``sign`` 1) or take off (-1) one pod's usage on ``row``: requests (dense and
        sparse), non-zero requests, the Pod count and host ports, ``generation`` left alone
        (:meth:`add_pod_usage` and :meth:`remove_pod_usage` move it; a Filter with
        nominated Pods undoes every change it makes here); the row journalled in ``moves``."""
        self.moves.add(row)
        # a view changed in place: ``a[row, :k] += req`` would also copy it back (setitem)
        used = self.requested[row, : req.shape[0]]
        if sign > 0:
            used += req
        else:
            used -= req
        for name, amount in sparse:
            self.add_sparse_request(row, name, sign * amount)
        nz = self.nonzero_requested[row]
        nz[0] += sign * nonzero[0]
        nz[1] += sign * nonzero[1]
        self.pod_count[row] += sign
        for p in ports:
            key = (p.host_ip, p.protocol, p.port)
            pcol = self.host_ports.get(key)
            if pcol is None:
                pcol = np.zeros(self.capacity, dtype=np.int32)
                self.host_ports[key] = pcol
            pcol[row] += sign
