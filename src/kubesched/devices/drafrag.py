"""Fragmentation of DRA devices over their groups, and the devices that keep groups whole.

Beyond upstream (its allocator is first fit, with no device scoring).  For a Pod whose
claims one column decides (:class:`~kubesched.devices.draindex.Plan`: ``need`` devices of one
selector set), a node's free matching devices are grouped at each level named by a device
attribute, innermost first (default :data:`DEFAULT_GROUPS`: the PCIe root, the NUMA node, the
NVLink domain; an unqualified name is looked up in the device's driver domain, as
``matchAttribute`` does; a device without the attribute shares the node-wide group of that
level).  Level ``l``'s group of a device is the tuple of its values at levels ``l .. L-1``,
so groups nest.

The measure is the GPU policies' (the FGD paper's, :class:`~kubesched.devices.fragmentation.
FragModel`) over whole devices: for a target workload of device counts ``k`` with
frequencies ``p_k`` (every count: whole devices have few shapes, so the GPU policies' 95 %
cut would drop exactly the rare large requests fragmentation turns away), a unit (a node, or
one group) with ``f`` free devices wastes ``T[f] = sum_k p_k * f * [f < k]`` devices.
:func:`choose` picks the ``need`` devices: from the tightest innermost group that holds them
all (else the next level's, else the node's), inside it from the tightest finer groups
first, in allocator order on ties; the node's cost is the growth of ``T`` summed over the
node and every group the choice touches.  The score
plugin turns costs into scores, and DynamicResources' Reserve allocates the chosen devices
first (:func:`preferred_pools`): the allocator still checks every device, so a device is never
allocated twice and every DRA rule holds.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.api import resource as r
from kubesched.devices.allocator import DeviceId
from kubesched.devices.draindex import Column, DeviceIndex, Plan
from kubesched.devices.fragmentation import FloatArray, FragModel, Shape, target_workload
from kubesched.devices.pools import Pool
from kubesched.framework.interface import ServiceKey

PLAN_KEY = "kubesched.io/dra-plan"
"""CycleState key: the :class:`DevicePlan` DynamicResources' PreFilter found."""
ORDER_KEY = "kubesched.io/dra-device-choice"
"""CycleState key: ``{node row: device ids}`` the device score chose, for Reserve."""
Chooser = Callable[["DevicePlan", int], Sequence[DeviceId]]
"""``chooser(plan, row) -> device ids``: the device score's choice on one node."""
CHOOSER: ServiceKey[Chooser] = ServiceKey("kubesched.io/dra-device-chooser")
"""``Handle.services`` key: the device score's :data:`Chooser`, for Reserve when Score did
not run (one feasible node, as upstream skips scoring then)."""
DEFAULT_GROUPS = ("resource.kubernetes.io/pcieRoot", "numaNode", "nvlinkDomain")
"""Group attributes, innermost first."""


@dataclass(frozen=True, slots=True)
class DevicePlan:
    """What the device score needs of DynamicResources' cycle: the plan, its column, the
    device index and the devices in use (live)."""

    plan: Plan
    column: Column
    index: DeviceIndex
    in_use: Container[DeviceId]


@dataclass(frozen=True, slots=True)
class Dev:
    """A matching device of a row: its id and its group at each level."""

    id: DeviceId
    groups: tuple[tuple[object, ...], ...]


def attribute(device: r.Device, driver: str, name: str) -> object:
    """The attribute's value (None when absent), qualified or in the driver's domain."""
    value = device.typed.get(name)
    if value is None and "/" not in name:
        value = device.typed.get(f"{driver}/{name}")
    if value is None:
        domain, _, ident = name.partition("/")
        if ident and domain == driver:
            value = device.typed.get(ident)
    return None if value is None else value[1]


def row_devices(
    pools: Sequence[Pool], matching: Container[DeviceId], groups: Sequence[str]
) -> list[Dev]:
    """The matching devices of a row's pools, in allocator order, with their groups."""
    out = []
    for pool in pools:
        for s in pool.slices:
            for d in s.devices:
                dev_id = (s.driver, s.pool, d.name)
                if dev_id in matching:
                    values = [attribute(d, s.driver, g) for g in groups]
                    out.append(Dev(dev_id, tuple(tuple(values[i:]) for i in range(len(values)))))
    return out


def waste_table(counts: Mapping[int, float], largest: int) -> FloatArray:
    """``T[f]`` for ``f`` in ``0 .. largest``: float64 ``(largest + 1,)``, in devices, from
    the FGD measure over whole devices for a workload of ``{device count: weight}``."""
    width = max(largest, 1)
    shapes = {Shape(0, 1000, k): w for k, w in counts.items() if k > 0}
    # every count, not the 95 % the GPU policies keep: whole devices have few shapes, and
    # the rare large ones (8 devices) are what fragmentation turns away
    workload = target_workload(shapes, coverage=1.0)
    free = np.zeros((width + 1, width), dtype=np.int64)
    for f in range(width + 1):
        free[f, :f] = 1000
    n = width + 1
    model = FragModel(workload, (), width)
    frag = model.frag(free, np.full(n, 1 << 40, dtype=np.int64), np.zeros(n, dtype=np.int64))
    return np.asarray(frag[: largest + 1] / 1000.0, dtype=np.float64)


def choose(free: Sequence[Dev], k: int, table: FloatArray) -> tuple[float, tuple[DeviceId, ...]]:
    """The devices to take (see the module docstring) and the waste they add."""
    if k > len(free) or k <= 0:
        return 0.0, ()
    levels = len(free[0].groups)
    counts = [Counter(d.groups[m] for d in free) for m in range(levels)]
    inside: Sequence[Dev] = free
    for level in range(levels):
        fits = [g for g, c in counts[level].items() if c >= k]
        if fits:
            first = {d.groups[level]: i for i, d in reversed(list(enumerate(free)))}
            best = min(fits, key=lambda g: (counts[level][g], first[g]))
            inside = [d for d in free if d.groups[level] == best]
            break
    pos = {d.id: i for i, d in enumerate(inside)}
    ranked = sorted(
        inside, key=lambda d: ([counts[m][d.groups[m]] for m in range(levels)], pos[d.id])
    )
    taken = ranked[:k]
    last = len(table) - 1
    cost = float(table[min(len(free) - k, last)] - table[min(len(free), last)])
    for m in range(levels):
        for g, n in Counter(d.groups[m] for d in taken).items():
            c = counts[m][g]
            cost += float(table[min(c - n, last)] - table[min(c, last)])
    return cost, tuple(d.id for d in taken)


def preferred_pools(pools: Sequence[Pool], first: Sequence[DeviceId]) -> list[Pool]:
    """``pools`` with the devices ``first`` moved to the front of the search (the pools that
    hold them first, in their order): the allocator, first fit, then takes them."""
    if not first:
        return list(pools)
    rank = {d: i for i, d in enumerate(first)}
    big = len(rank)

    def key(pool: Pool, name: str) -> int:
        return rank.get((pool.driver, pool.name, name), big)

    out: list[tuple[int, int, Pool, list[r.ResourceSlice]]] = []
    for pool in pools:
        if pool.invalid():
            return list(pools)  # the allocator reports it; do not hide it by reordering
        devices = sorted(
            ((d, s) for s in pool.slices for d in s.devices), key=lambda x: key(pool, x[0].name)
        )
        if not devices:
            out.append((big, len(out), pool, list(pool.slices)))
            continue
        # one slice per device keeps each device with its own slice's driver and pool; the
        # pool stays complete (or incomplete) as it was, which the allocator reads (v1.35+)
        count = len(devices) + (1 if pool.incomplete else 0)
        slices = [dataclasses.replace(s, devices=(d,), slice_count=count) for d, s in devices]
        out.append(
            (min((key(pool, d.name) for d, _ in devices), default=big), len(out), pool, slices)
        )
    out.sort(key=lambda x: (x[0], x[1]))
    return [dataclasses.replace(p, slices=sl) for _, _, p, sl in out]
