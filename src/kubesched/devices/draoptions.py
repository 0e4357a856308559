"""What each release's DRA allocator does differently, and which of upstream's allocators it is.

Upstream keeps three implementations of ``k8s.io/dynamic-resource-allocation/structured``
(``stable``, ``incubating``, ``experimental``) and picks the most stable one that supports
every feature gate that is on (:func:`channel`); the releases differ too.  :class:`Options`
is that choice as the flags :mod:`kubesched.devices.allocator`, :mod:`.pools` and the
explainer read, built once per plugin from the release and its gates
(:meth:`Options.of_release`); the defaults are v1.34's (:data:`V1_34`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class Options(NamedTuple):
    """What a release's allocator does differently (the defaults are v1.34's)."""

    skip_unusable: bool = False
    """v1.35+: incomplete and invalid pools are passed over in the device search."""
    keep_alternative: bool = False
    """v1.36+: an ``All`` alternative keeps its own index (no v1.34 reuse quirks)."""
    device_taints: bool = False
    """DRADeviceTaints (on from v1.36): a device with a ``NoSchedule`` or ``NoExecute``
    taint the request does not tolerate is passed over."""
    taints_any_effect: bool = True
    """v1.34 (DRADeviceTaints alpha): a taint of any effect (``None`` too) the request does
    not tolerate keeps the device from it (``allTaintsTolerated``)."""

    admin_access: bool = True
    """DRAAdminAccess (beta, on at v1.34): off, a request that sets ``adminAccess`` is an
    error."""

    binding_conditions: bool = False
    """DRADeviceBindingConditions and DRAResourceClaimDeviceStatus (both on from v1.36): a
    device with ``bindingConditions`` may be allocated, and pools holding such devices are
    searched last (else such a device is never picked)."""
    partitionable: bool = False
    """DRAPartitionableDevices: devices consuming shared counters are allocated while the
    counters last; slices with ``perDeviceNodeSelection`` (and, from v1.35, slices of
    shared counters) are read."""
    consumable: bool = False
    """DRAConsumableCapacity: devices with ``allowMultipleAllocations`` are shared by
    capacity, requests' ``capacity`` is read, ``distinctAttribute`` constraints hold."""
    pool_counters: bool = False
    """v1.35+: shared counters belong to the pool (slices of their own), not to the slice
    of the devices consuming them (v1.34); a pool incomplete among the slices reaching the
    node is looked up among all slices."""
    checks_capacity: bool = False
    """The allocator the gates select refuses capacity requests without
    DRAConsumableCapacity (an error) and reads ``distinctAttribute`` (:func:`channel`:
    upstream's ``experimental`` one, and from v1.36 the ``incubating`` one)."""
    distinct_by_device: bool = False
    """v1.34: ``distinctAttribute`` compares the attribute's value pointers, so only the
    same device twice (a shared one) breaks it."""
    distinct_every_device: bool = False
    """v1.37+: ``distinctAttribute`` compares a device's value with every device taken
    (v1.35 and v1.36: with one per request, the request's last)."""
    ordered: bool = False
    """v1.36+ (not the ``stable`` allocator): a request's next device is searched after
    its previous one (else from the first pool again)."""
    keeps_counters: bool = False
    """v1.34 and v1.35, every allocator (``allocateDevice``; :meth:`of_release` sets it): a
    device passed over after its counters were reserved (a taint it carries, a constraint
    it breaks) keeps them reserved for the rest of the search (v1.36's ``rollbackDevice``
    gives them back), so whether a node fits can depend on the order of its pools
    (upstream's is Go map order, :attr:`pool_seed`)."""
    experimental: bool = False
    """v1.34 and v1.35 with upstream's ``experimental`` allocator (:func:`channel`): beyond
    :attr:`keeps_counters`, a share given back keeps its counters, a failed capacity check
    gives nothing back, and v1.34's checks a share's counters even while the device is
    shared."""

    list_attributes: bool = False
    """DRAListTypeAttributes (v1.36+, alpha; it selects upstream's ``experimental``
    allocator): ``matchAttribute`` keeps the intersection of the devices' values taken as
    sets (a scalar is a set of one) and needs it non-empty, ``distinctAttribute`` needs each
    device's set disjoint from the others'."""

    fractional_range: bool = False
    """DRAFractionalCapacityRange (v1.37, beta): a capacity's ``validRange`` whose bounds
    are exact in thousandths is rounded and checked in thousandths, not after rounding the
    request and every bound up to integers (``devices.allocator.use_milli``)."""
    capacity_errors: bool = False
    """v1.37+: a capacity request that cannot be represented (past the int64 range, or not
    exact in thousandths on the milli path) or a negative consumption aborts the allocation
    with an error (v1.36 logs and passes the device over, or wraps), and an ``All``
    request's devices are checked against their capacity alone, not what shares already
    consume (so a device shares fill fails the request instead of being left out)."""

    pool_seed: int | None = None
    """Not a release's: the order in which a node's pools are searched is drawn from this
    seed and the node's name (upstream walks ``GatherPools``' Go map, another order each
    call; None: by driver and pool name, :func:`kubesched.devices.pools.gather_pools`).
    Where that order decides (:attr:`keeps_counters`, an invalid pool met first), each seed
    gives one of upstream's possible answers (``kubesched.explain``'s ``pool_seed``)."""

    cel_multiple: bool = True
    """CEL's ``device.allowMultipleAllocations`` is the device's (upstream's ``experimental``
    allocator, and from v1.36 the ``incubating`` one, pass it to ``cel.Device``; the others
    leave it out, so it reads false)."""

    binds_to_node: bool = False
    """The allocator pins an allocation with a ``bindsToNode`` device to the node
    (``createNodeSelector``: upstream's ``experimental`` one, and from v1.36 the
    ``incubating`` one)."""

    @classmethod
    def of_release(cls, at_least: Callable[[str], bool], enabled: Callable[[str], bool]) -> Options:
        """The options of the release ``at_least("1.xx")`` describes, under the gates
        ``enabled(name)`` says are on."""
        which = channel(at_least, enabled)
        return cls(
            skip_unusable=at_least("1.35"),
            keep_alternative=at_least("1.36"),
            device_taints=enabled("DRADeviceTaints"),
            taints_any_effect=not at_least("1.35"),
            admin_access=enabled("DRAAdminAccess"),
            binding_conditions=enabled("DRADeviceBindingConditions")
            and enabled("DRAResourceClaimDeviceStatus"),
            partitionable=enabled("DRAPartitionableDevices"),
            consumable=enabled("DRAConsumableCapacity"),
            pool_counters=at_least("1.35"),
            checks_capacity=which != STABLE and (which == EXPERIMENTAL or at_least("1.36")),
            binds_to_node=which != STABLE and (which == EXPERIMENTAL or at_least("1.36")),
            cel_multiple=which != STABLE and (which == EXPERIMENTAL or at_least("1.36")),
            keeps_counters=not at_least("1.36"),
            fractional_range=enabled("DRAFractionalCapacityRange"),
            capacity_errors=at_least("1.37"),
            experimental=which == EXPERIMENTAL and not at_least("1.36"),
            list_attributes=which == EXPERIMENTAL and enabled("DRAListTypeAttributes"),
            ordered=which != STABLE and at_least("1.36"),
            distinct_by_device=not at_least("1.35"),
            distinct_every_device=at_least("1.37"),
        )


V1_34 = Options()

STABLE, INCUBATING, EXPERIMENTAL = "stable", "incubating", "experimental"
_BASE = ("DRAAdminAccess", "DRAPrioritizedList", "DRAPartitionableDevices", "DRADeviceTaints")


def channel(at_least: Callable[[str], bool], enabled: Callable[[str], bool]) -> str:
    """Which of upstream's allocators the release's gates select (``NewAllocator``: the
    most stable one supporting every feature on).  v1.34 and v1.35: ``stable`` supports
    none, ``incubating`` admin access, prioritized lists, partitionable devices and device
    taints, ``experimental`` all (so v1.34's defaults, with DRAResourceClaimDeviceStatus,
    select it).  v1.36+: ``stable`` supports those four, ``incubating`` also binding
    conditions and consumable capacity (v1.37: and DRAFractionalCapacityRange); from v1.37
    DRAListTypeAttributes and the newer gates select ``experimental`` (v1.36's scheduler
    does not pass DRAListTypeAttributes to the allocator)."""
    if not at_least("1.35"):
        binding = enabled("DRADeviceBindingConditions") or enabled("DRAResourceClaimDeviceStatus")
    else:
        binding = enabled("DRADeviceBindingConditions") and enabled("DRAResourceClaimDeviceStatus")
    # v1.36's scheduler passes none of these to the allocator (its ``structured.Features``
    # has no DRAListTypeAttributes: the gate reaches CEL only), v1.37's all of them
    newer = [
        g
        for g in (
            "DRAListTypeAttributes",
            "DRAOptionalNodeOperations",
            "DRADerivedAttributes",
            "DRADeviceCompatibilityGroups",
        )
        if enabled(g) and at_least("1.37")
    ]
    fractional = enabled("DRAFractionalCapacityRange")
    consumable = enabled("DRAConsumableCapacity")
    if not at_least("1.36"):
        if binding or consumable:
            return EXPERIMENTAL
        return INCUBATING if any(enabled(g) for g in _BASE) else STABLE
    if newer:
        return EXPERIMENTAL
    if binding or consumable or fractional:
        return INCUBATING
    return STABLE
