"""DeviceFragmentation: a Score for DRA devices that keeps whole devices and whole device
groups (NVLink domain, NUMA node, PCIe root) free.  Beyond upstream, opt-in: enable it at
``score`` (with a weight) beside DynamicResources; upstream's first fit stays the default.

For a Pod whose claims one device column decides (DynamicResources' PreFilter leaves the
:class:`~kubesched.devices.drafrag.DevicePlan` in CycleState), each node's cost is the growth
of the GPU policies' fragmentation measure over the node and the device groups the best
choice of devices touches (:func:`kubesched.devices.drafrag.choose`); the node wasting least
scores 100.  The devices chosen on each node are left in CycleState, and DynamicResources'
Reserve offers them to the allocator first, so the score steers *which* devices the Pod
gets, not only the node.  Other Pods (several selector sets, constraints, ``All``,
``firstAvailable``, admin access) are not scored (Skip).

Args (all optional): ``groupAttributes``, the device attributes naming a device's group,
innermost first (default ``[resource.kubernetes.io/pcieRoot, numaNode, nvlinkDomain]``;
unqualified names are looked up in the device's driver domain); ``targetWorkload``, a list
of ``{count: devices, weight: w}`` (default: learned from the device counts of the Pods
scored so far).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.config import names
from kubesched.devices import drafrag
from kubesched.devices.allocator import DeviceId
from kubesched.devices.fragmentation import FloatArray
from kubesched.framework.interface import SKIP, SUCCESS, CycleState, Handle, IntArray, Status
from kubesched.state.cache import ClusterState

NAME = names.DEVICE_FRAGMENTATION
SCALE = 1000
"""Raw score units per device of waste."""


class DeviceFragmentation:
    """Prefers the node, and the devices on it, that leave the fewest devices stranded."""

    name = NAME

    def __init__(self, groups: tuple[str, ...], workload: Mapping[int, float]) -> None:
        self.groups = groups
        self.fixed = dict(workload)
        self.seen: Counter[int] = Counter()
        self._table: tuple[tuple[tuple[int, float], ...], FloatArray] | None = None
        self._rows: dict[int, list[drafrag.Dev]] = {}
        self._rows_key: object = None
        self._choices: tuple[object, dict[Any, tuple[float, tuple[DeviceId, ...]]]] = (None, {})

    def sign(self, pod: api.Pod) -> tuple[()]:
        """Scores depend on the Pod's device plan only (DynamicResources signs it)."""
        return ()

    def pre_score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Status:
        """Skip unless one device column decides the Pod's claims."""
        dp = state.get(drafrag.PLAN_KEY)
        if not isinstance(dp, drafrag.DevicePlan) or rows.shape[0] == 0:
            return SKIP
        if not self.fixed:
            self.seen[dp.plan.need] += 1
        return SUCCESS

    def table(self) -> FloatArray:
        """The waste table of the target workload (given, or learned so far)."""
        counts = self.fixed or dict(self.seen)
        key = tuple(sorted(counts.items()))
        if self._table is None or self._table[0] != key:
            self._table = (key, drafrag.waste_table(counts, max(counts, default=1)))
        return self._table[1]

    def devices(self, dp: drafrag.DevicePlan, row: int) -> list[drafrag.Dev]:
        """The row's devices of the plan's selector set (cached per index version)."""
        key = (dp.index.token, dp.plan.sig)
        if key != self._rows_key:
            self._rows, self._rows_key = {}, key
            self._choices = (None, {})
        devs = self._rows.get(row)
        if devs is None:
            pools = dp.index.pools_of.get(row, [])
            devs = self._rows[row] = drafrag.row_devices(pools, dp.column.matching, self.groups)
        return devs

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """``-SCALE * waste added`` per node, int64 ``(n,)``; the chosen devices per row go
        to CycleState for Reserve."""
        out = np.zeros(rows.shape[0], dtype=np.int64)
        dp = state.get(drafrag.PLAN_KEY)
        if not isinstance(dp, drafrag.DevicePlan):
            return out
        chosen = dict(state.get(drafrag.ORDER_KEY) or {})
        for i, row in enumerate(rows.tolist()):
            cost, chosen[row] = self.choose(dp, row)
            out[i] = -round(cost * SCALE)
        state[drafrag.ORDER_KEY] = chosen
        return out

    def choose(self, dp: drafrag.DevicePlan, row: int) -> tuple[float, tuple[DeviceId, ...]]:
        """The waste choosing on ``row`` adds, and the devices chosen (cached by the row's
        devices in use: between two Pods only the rows that changed are worked out)."""
        devs = self.devices(dp, row)
        table = self.table()
        used = tuple(d.id in dp.in_use for d in devs)
        key = (row, dp.plan.need, used)
        if self._choices[0] is not table:
            self._choices = (table, {})
        hit = self._choices[1].get(key)
        if hit is None:
            free = [d for d, u in zip(devs, used, strict=True) if not u]
            hit = self._choices[1][key] = drafrag.choose(free, dp.plan.need, table)
        return hit

    def normalize_score(self, state: CycleState, pod: api.Pod, scores: IntArray) -> None:
        """Min-max onto 0..100 in place (the least waste gets 100; all 100 when equal)."""
        if scores.shape[0] == 0:
            return
        low, high = int(scores.min()), int(scores.max())
        if high == low:
            scores[:] = 100
        else:
            scores[:] = (scores - low) * 100 // (high - low)


def new(args: object | None, handle: Handle) -> DeviceFragmentation:
    """Factory: optional ``groupAttributes`` and ``targetWorkload`` (see the module docs).
    The plugin's choice is also offered to DynamicResources' Reserve through
    ``handle.services`` for cycles without Score (one feasible node)."""
    plugin = _new(args)
    if handle is not None:
        handle.services.provide(drafrag.CHOOSER, lambda dp, row: plugin.choose(dp, row)[1])
    return plugin


def _new(args: object | None) -> DeviceFragmentation:
    path = f"pluginConfig[{NAME}].args"
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise InputError([(path, f"must be a mapping, got {type(args).__name__}")])
    groups = args.get("groupAttributes", list(drafrag.DEFAULT_GROUPS))
    if not isinstance(groups, list) or not all(isinstance(g, str) and g for g in groups):
        raise InputError([(f"{path}.groupAttributes", "must be a list of attribute names")])
    workload: dict[int, float] = {}
    items: Any = args.get("targetWorkload", [])
    if not isinstance(items, list):
        raise InputError([(f"{path}.targetWorkload", "must be a list")])
    for i, item in enumerate(items):
        p = f"{path}.targetWorkload[{i}]"
        count = item.get("count") if isinstance(item, Mapping) else None
        weight = item.get("weight", 1) if isinstance(item, Mapping) else None
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            raise InputError([(f"{p}.count", "must be a positive integer")])
        if not isinstance(weight, int | float) or isinstance(weight, bool) or weight <= 0:
            raise InputError([(f"{p}.weight", "must be a positive number")])
        workload[count] = workload.get(count, 0.0) + float(weight)
    return DeviceFragmentation(tuple(groups), workload)
