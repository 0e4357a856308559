"""Devices per node in columns, so Filter rejects a node without walking its devices.

:class:`DeviceIndex` keeps, per node row, the pools that reach the node (upstream
``GatherPools`` for that node, built once per change of slices, classes or nodes) and, per
*selector set* (a device class and a request's CEL selectors, :data:`Sig`), a
:class:`Column`: int64 ``free[row]``, the devices reaching the row that the class and the
selectors accept and that are not in use, and bool ``exact[row]``, whether that count
decides the row.  A row is not exact when a device reaching it fails a selector with a CEL
runtime error (upstream's allocator would report the error), a pool reaching it is invalid
or incomplete (whether the allocator takes its devices depends on the release), or a device
reaching it has taints or binding conditions (whether it is picked depends on the request's
tolerations and the gates).
The columns follow :class:`~kubesched.plugins.dynamicresources.claims.DeviceUse`: a device
that becomes used or free moves ``free`` on the rows it reaches, nothing is recounted.

:func:`plan` says when a Pod's claims are decided by one column: every request ``exactly``,
``ExactCount``, without admin access, all of one selector set, no constraints.  Then the
depth-first allocator takes the first free matching devices in pool order and never
backtracks, so it succeeds on a node exactly when ``need <= free[row]``; the devices
themselves are found for the chosen node only (at Reserve).

Where no column decides, :meth:`DeviceIndex.answer` keeps the allocator's answer per node row
and claim *shape* (the specs of the claims to allocate, :data:`Shape`): the search is a
function of the row's pools (fixed while :attr:`DeviceIndex.token` is), the claims' specs,
the classes (in the token), the release's options and which of the row's devices are in use,
so an answer holds while none of the row's devices became used or free
(:attr:`DeviceIndex.gen`, bumped by :meth:`DeviceIndex.on_use`).  The caller keeps only
answers that name no claim (no ``shareID``, never an error) and asks only when no device
is shared by capacity (shares are not counted per row).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from kubesched.api import resource as r
from kubesched.api.errors import CelRuntimeError
from kubesched.api.objects import Node
from kubesched.devices.allocator import DeviceId
from kubesched.devices.draoptions import V1_34, Options
from kubesched.devices.pools import Pool, gather_pools, slice_reaches
from kubesched.framework.interface import IntArray

if TYPE_CHECKING:
    from kubesched.api.cel import Selector

Sig = tuple[str, tuple[str, ...]]
"""``(device class name, the request's selector expressions)``."""
Shape = tuple[str, ...]
"""The specs of the claims to allocate, serialised in order (claims from one template
share it)."""
Answer = list[tuple[r.AllocatedDevice, ...]] | None
"""What :func:`~kubesched.devices.allocator.allocate_in` returned on a row."""
SHAPES_MAX = 64
"""Claim shapes whose answers are kept before starting again."""


@dataclass(frozen=True, slots=True)
class Plan:
    """A Pod whose claims one column decides: ``need`` devices of selector set ``sig``."""

    sig: Sig
    need: int
    selectors: tuple[Selector, ...]


def plan(claims: Sequence[r.ResourceClaim]) -> Plan | None:
    """The column plan for the claims to allocate, or None when the allocator must search."""
    sig: Sig | None = None
    selectors: tuple[Selector, ...] = ()
    need = 0
    for claim in claims:
        if claim.constraints:
            return None
        per_claim = 0
        for req in claim.requests:
            e = req.exactly
            if e is None or e.mode != r.EXACT_COUNT or e.admin_access_set or e.capacity is not None:
                return None
            key = (e.class_name, tuple(s.expression for s in e.selectors))
            if sig is None:
                sig, selectors = key, e.selectors
            elif key != sig:
                return None
            per_claim += e.count
        if per_claim > r.ALLOCATION_RESULTS_MAX_SIZE:
            return None  # the allocator reports the limit
        need += per_claim
    return None if sig is None else Plan(sig, need, selectors)


def match_state(klass: r.DeviceClass, selectors: Sequence[Selector], d: r.Device) -> int:
    """1 when the class's and the request's selectors accept device ``d``, 0 when one
    rejects it, -1 for a CEL runtime error (in the allocator's order, cached per device)."""
    if d.binding_conditions or d.special:
        return 0  # (a row with binding conditions or special devices is never exact)
    for sel in (*klass.selectors, *selectors):
        hit = d.matches.get(sel.expression)
        if hit is None:
            try:
                hit = d.matches[sel.expression] = sel.matches(d.activation)
            except CelRuntimeError:
                return -1
        if not hit:
            return 0
    return 1


@dataclass(slots=True)
class Kept:
    """The allocator's answers for one claim shape, per row: ``at[row]``, the row's
    :attr:`DeviceIndex.gen` when the answer was kept (-1: none); ``passed[row]``, whether
    it found devices; ``found``, the devices by row where it did."""

    at: IntArray
    passed: npt.NDArray[np.bool_]
    found: dict[int, list[tuple[r.AllocatedDevice, ...]]] = field(default_factory=dict)


@dataclass(slots=True)
class Column:
    """``free``: int64 ``(capacity,)``; ``exact``: bool ``(capacity,)``; ``matching``: the
    devices the selector set accepts."""

    free: IntArray
    exact: npt.NDArray[np.bool_]
    matching: set[DeviceId] = field(default_factory=set)


class DeviceIndex:
    """Pools per node row and one :class:`Column` per selector set in use."""

    def __init__(self) -> None:
        self.token: tuple[int, ...] | None = None
        self.pools_of: dict[int, list[Pool]] = {}
        self.slices_of: dict[int, list[r.ResourceSlice]] = {}
        """The slices reaching each row, every generation (a claim's node selector)."""
        self.rows_of: dict[DeviceId, IntArray] = {}
        """Rows each device reaches (a device id reaching rows through two slice versions
        counts once per row it reaches in the newest generation there)."""
        self.devices: dict[DeviceId, r.Device] = {}
        self.bad: npt.NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        self.columns: dict[Sig, Column] = {}
        self.gen: IntArray = np.zeros(0, dtype=np.int64)
        """Per row, bumped each time a device reaching the row becomes used or free."""
        self.answers: dict[Shape, Kept] = {}
        """The allocator's answers per claim shape (:meth:`known`)."""

    def refresh(
        self,
        token: tuple[int, ...],
        slices: Sequence[r.ResourceSlice],
        nodes: Sequence[tuple[int, Node]],
        capacity: int,
        options: Options = V1_34,
    ) -> None:
        """Rebuild when ``token`` (slices, classes and nodes versions) changed; the pools
        as the release of ``options`` gathers them."""
        if token == self.token:
            return
        self.token = token
        by_name: dict[str, list[tuple[int, r.ResourceSlice]]] = {}
        shared: list[tuple[int, r.ResourceSlice]] = []
        for i, s in enumerate(slices):
            if s.node_name and not (options.pool_counters and s.shared_counters):
                by_name.setdefault(s.node_name, []).append((i, s))
            else:  # every node, a selector, per-device node selection, shared counters
                shared.append((i, s))
        self.pools_of, self.slices_of = {}, {}
        rows: dict[DeviceId, list[int]] = {}
        self.devices = {}
        self.bad = np.zeros(capacity, dtype=np.bool_)
        for row, node in nodes:
            cands = by_name.get(node.name, []) + shared
            if shared:
                cands.sort(key=lambda x: x[0])
            reaching = [s for _, s in cands if slice_reaches(s, node.name, node.labels, options)]
            self.slices_of[row] = reaching
            pools = gather_pools(reaching, node.name, node.labels, options, slices)
            self.pools_of[row] = pools
            for pool in pools:
                if pool.incomplete or pool.invalid():
                    self.bad[row] = True
                for s in pool.slices:
                    if s.per_device_node_selection or s.shared_counters:
                        self.bad[row] = True  # the allocator decides (partitionable devices)
                    for d in s.devices:
                        if d.taints or d.binding_conditions or d.special:
                            # whether a taint keeps the device from a request depends on the
                            # request's tolerations and the DRADeviceTaints gate, whether a
                            # device with binding conditions is picked on the gates: the
                            # allocator decides the row
                            self.bad[row] = True
                        dev_id = (s.driver, s.pool, d.name)
                        rows.setdefault(dev_id, []).append(row)
                        self.devices[dev_id] = d
        self.rows_of = {k: np.asarray(v, dtype=np.int64) for k, v in rows.items()}
        self.columns = {}
        self.gen = np.zeros(capacity, dtype=np.int64)
        self.answers = {}

    def column(
        self,
        p: Plan,
        klass: r.DeviceClass,
        in_use: Mapping[DeviceId, int],
    ) -> Column:
        """The column of ``p.sig`` (built on first use from the devices in use now)."""
        col = self.columns.get(p.sig)
        if col is not None:
            return col
        n = self.bad.shape[0]
        col = Column(np.zeros(n, dtype=np.int64), ~self.bad)
        for dev_id, rows in self.rows_of.items():
            m = match_state(klass, p.selectors, self.devices[dev_id])
            if m < 0:
                col.exact[rows] = False
            elif m:
                col.matching.add(dev_id)
                if dev_id not in in_use:
                    np.add.at(col.free, rows, 1)
        self.columns[p.sig] = col
        return col

    def on_use(self, dev_id: DeviceId, delta: int) -> None:
        """A device became used (-1) or free (+1): move the columns that count it."""
        rows = self.rows_of.get(dev_id)
        if rows is None:
            return
        one = int(rows[0]) if rows.shape[0] == 1 else -1  # (a device local to one node)
        if one >= 0:
            self.gen[one] += 1
        else:
            self.gen[rows] += 1
        for col in self.columns.values():
            if dev_id in col.matching:
                if one >= 0:
                    col.free[one] += delta
                else:
                    np.add.at(col.free, rows, delta)

    def answers_for(self, shape: Shape) -> Kept:
        """The answers kept for claims of ``shape`` (see :meth:`known`)."""
        got = self.answers.get(shape)
        if got is None:
            if len(self.answers) >= SHAPES_MAX:
                self.answers.clear()
            n = len(self.gen)
            got = self.answers[shape] = Kept(
                np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.bool_)
            )
        return got

    def known(self, kept: Kept, rows: IntArray) -> npt.NDArray[np.bool_]:
        """Per row of ``rows``, whether ``kept`` holds its answer for the devices in use
        now (none of the row's devices became used or free since it was kept)."""
        same: npt.NDArray[np.bool_] = kept.at[rows] == self.gen[rows]
        return same

    def answer(self, kept: Kept, row: int) -> tuple[Answer] | None:
        """:meth:`known` for one row: its answer in a 1-tuple, or None (search, then
        :meth:`keep`)."""
        if kept.at[row] != self.gen[row]:
            return None
        return (kept.found.get(row),)

    def keep(self, kept: Kept, row: int, found: Answer) -> None:
        """Keep the allocator's answer ``found`` on ``row`` (for the devices in use now)."""
        kept.at[row] = self.gen[row]
        kept.passed[row] = found is not None
        if found is None:
            kept.found.pop(row, None)
        else:
            kept.found[row] = found
