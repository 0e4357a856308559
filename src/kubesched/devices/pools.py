"""The ResourceSlices a node can use, gathered into pools (upstream ``GatherPools``).

A slice offers its devices to a node by ``nodeName``, ``allNodes`` or a matching
``nodeSelector``; under DRAPartitionableDevices a slice of shared counters reaches every node
(v1.35+) and a ``perDeviceNodeSelection`` slice the nodes one of its devices reaches.  Only
each pool's newest generation is kept; from v1.35 a pool that looks incomplete from one node
is checked against every slice (obsolete, complete, or not), and its other slices kept for
the counters their allocated devices consume.  The allocator searches these pools; the DRA
index and the explainer read them too.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kubesched.api import objects as api
from kubesched.api import resource as r
from kubesched.devices.draoptions import V1_34, Options


@dataclass(slots=True)
class Pool:
    """The slices of one ``(driver, pool)`` at its newest generation."""

    driver: str
    name: str
    slices: list[r.ResourceSlice] = field(default_factory=list)
    others: list[r.ResourceSlice] = field(default_factory=list)
    """v1.35+: the pool's slices that do not reach the node (their allocated devices
    consume the pool's shared counters too)."""
    complete: bool | None = None
    """Whether every slice is published, when the slices reaching the node do not say."""
    pool_counters: bool = False
    """The pool's shared counters are checked (DRAPartitionableDevices at v1.35+)."""
    _invalid: str | None = field(default=None, repr=False, compare=False)
    _binding: bool | None = field(default=None, repr=False, compare=False)
    _devices: bool | None = field(default=None, repr=False, compare=False)

    @property
    def incomplete(self) -> bool:
        """Fewer slices than ``resourceSliceCount`` are published."""
        if self.complete is not None:
            return not self.complete
        return len(self.slices) != self.slices[0].slice_count

    def invalid(self) -> str:
        """Upstream ``poolIsInvalid`` / ``buildPool``: a duplicate device name, and under
        DRAPartitionableDevices (v1.35+) a duplicate counter set or a device consuming a
        counter set or counter the pool lacks ("" when valid).  Worked out once: a pool
        is not changed after :func:`gather_pools` made it."""
        if self._invalid is None:
            self._invalid = self._why_invalid()
        return self._invalid

    @property
    def binding_conditions(self) -> bool:
        """Upstream ``poolHasBindingConditions``: a device has ``bindingConditions``."""
        if self._binding is None:
            self._binding = any(d.binding_conditions for s in self.slices for d in s.devices)
        return self._binding

    @property
    def has_devices(self) -> bool:
        """A slice of the pool reaching the node has devices."""
        if self._devices is None:
            self._devices = any(s.devices for s in self.slices)
        return self._devices

    def _why_invalid(self) -> str:
        seen: set[str] = set()
        for s in self.slices:
            for d in s.devices:
                if d.name in seen:
                    return f"duplicate device name {d.name}"
                seen.add(d.name)
        if not self.pool_counters:
            return ""
        sets: dict[str, r.CounterSet] = {}
        for s in self.slices:
            for cs in s.shared_counters:
                if cs.name in sets:
                    return f"duplicate counter set name {cs.name}"
                sets[cs.name] = cs
        for s in (*self.slices, *self.others):
            for d in s.devices:
                for name, counters in d.consumes:
                    found = sets.get(name)
                    if found is None:
                        return f"counter set {name} not found"
                    for c, _ in counters:
                        if c not in found.counters:
                            return f"counter {c} not found in counter set {name}"
        return ""

    def counter_sets(self) -> list[r.CounterSet]:
        """The pool's shared counters (v1.35+)."""
        return [cs for s in self.slices for cs in s.shared_counters]


def has_binding_conditions(pool: Pool) -> bool:
    """Upstream ``poolHasBindingConditions``: a device of the pool has ``bindingConditions``."""
    return pool.binding_conditions


def node_matches(
    node_name: str,
    selector: tuple[api.NodeSelectorTerm, ...] | None,
    all_nodes: bool,
    node: str,
    labels: Mapping[str, str],
) -> bool:
    """Upstream ``nodeMatches`` of a slice's (or a device's) node selection."""
    if node_name:
        return node_name == node
    if all_nodes:
        return True
    if selector is not None:
        return r.node_selector_matches(selector, node, labels)
    return False


def slice_reaches(
    s: r.ResourceSlice, node: str, labels: Mapping[str, str], options: Options | None = None
) -> bool:
    """Whether slice ``s`` offers its devices to ``node`` (upstream ``nodeMatches``); with
    ``options`` under DRAPartitionableDevices, a slice of shared counters (v1.35+) reaches
    every node and a ``perDeviceNodeSelection`` slice the nodes one of its devices
    reaches."""
    if options is not None and options.partitionable:
        if options.pool_counters and s.shared_counters:
            return True
        if s.per_device_node_selection:
            return any(
                node_matches(d.node_name, d.node_selector, d.all_nodes, node, labels)
                for d in s.devices
            )
    return node_matches(s.node_name, s.node_selector, s.all_nodes, node, labels)


def gather_pools(
    slices: Iterable[r.ResourceSlice],
    node: str,
    labels: Mapping[str, str],
    options: Options = V1_34,
    every: Iterable[r.ResourceSlice] | None = None,
) -> list[Pool]:
    """Upstream ``GatherPools`` for one node, pools by driver and name (upstream's are in Go
    map order: with ``options.pool_seed``, in an order drawn from it and the node's name).
    From v1.35 a pool incomplete among the slices reaching the node is looked up in
    ``every`` slice: dropped when a newer generation exists, complete when all its slices
    are published (the others kept in ``Pool.others``)."""
    pools: dict[tuple[str, str], Pool] = {}
    for s in slices:
        if not options.partitionable and (
            s.per_device_node_selection or (options.pool_counters and s.shared_counters)
        ):
            continue  # DRAPartitionableDevices off
        if not slice_reaches(s, node, labels, options):
            continue
        pool = pools.get((s.driver, s.pool))
        if pool is None:
            pools[(s.driver, s.pool)] = Pool(s.driver, s.pool, [s])
        elif s.generation > pool.slices[0].generation:
            pool.slices = [s]
        elif s.generation == pool.slices[0].generation:
            pool.slices.append(s)
    out = []
    everything: dict[tuple[str, str], list[r.ResourceSlice]] | None = None
    keys = sorted(pools)
    if options.pool_seed is not None:
        random.Random(f"{options.pool_seed}/{node}").shuffle(keys)
    for k in keys:
        pool = pools[k]
        pool.pool_counters = options.partitionable and options.pool_counters
        if options.pool_counters and len(pool.slices) != pool.slices[0].slice_count:
            gen = pool.slices[0].generation
            if everything is None:  # grouped once, only for a pool that looks incomplete
                everything = {}
                for x in every if every is not None else ():
                    everything.setdefault((x.driver, x.pool), []).append(x)
            same = everything.get(k, [])
            if any(x.generation > gen for x in same):
                continue  # upstream: obsolete, the driver is replacing it
            whole = [x for x in same if x.generation == gen]
            pool.complete = len(whole) == pool.slices[0].slice_count
            mine = {x.name for x in pool.slices}
            pool.others = [x for x in whole if x.name not in mine]
        out.append(pool)
    return out
