"""The in-tree plugin registry: upstream plugin name to factory.

Upstream plugins whose subject kubesched does not model would be registered as
*unmodelled* (:data:`UNMODELLED`: a known name that joins no extension point, so a
configuration naming it loads and it changes nothing); today every upstream in-tree plugin
of the default profile is modelled.

The in-tree plugins later releases add that kubesched does not implement yet
(:data:`NOT_YET_MODELLED`, none today) would be registered the same way: the default profile
of their release lists them, as upstream's does, but they decide nothing.  The
version-dependent plugins (NodeDeclaredFeatures,
ImageLocality, BalancedAllocation) read the run's release from ``handle.feature_gates`` in
their factory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.framework.interface import Handle, PluginFactory
from kubesched.plugins import (
    capacityscheduling,
    coscheduling,
    defaultbinder,
    defaultpreemption,
    deferredpodscheduling,
    devicefragmentation,
    dynamicresources,
    entrypoints,
    gangscheduling,
    gpu_bestfit,
    gpu_clustering,
    gpu_devices,
    gpu_dotproduct,
    gpu_fgd,
    gpu_kubesched,
    gpu_packing,
    gpu_random,
    imagelocality,
    interpodaffinity,
    nodeaffinity,
    nodedeclaredfeatures,
    nodename,
    nodeports,
    noderesources_balanced,
    noderesources_fit,
    nodeunschedulable,
    nodevolumelimits,
    podgrouppodscount,
    podtopologyspread,
    prioritysort,
    schedulinggates,
    tainttoleration,
    topologyaware,
    volumebinding,
    volumerestrictions,
    volumezone,
)

UNMODELLED: tuple[str, ...] = ()
"""Known upstream names that are accepted but do nothing yet (see the module docstring)."""

NOT_YET_MODELLED: tuple[str, ...] = ()
"""In-tree plugins of v1.35+ default profiles that kubesched does not implement yet: each is
registered as :class:`Unmodelled` (joins no extension point) unless a plugin of that name is
registered."""


class Unmodelled:
    """A known upstream plugin that kubesched does not model: it joins no extension point."""

    def __init__(self, name: str) -> None:
        self.name = name


def _unmodelled(name: str) -> PluginFactory:
    def factory(args: Any, handle: Handle) -> Unmodelled:
        del args, handle
        return Unmodelled(name)

    return factory


def in_tree_registry() -> dict[str, PluginFactory]:
    """Every in-tree plugin by its upstream name."""
    reg: dict[str, PluginFactory] = {
        prioritysort.NAME: prioritysort.new,
        schedulinggates.NAME: schedulinggates.new,
        nodeunschedulable.NAME: nodeunschedulable.new,
        nodename.NAME: nodename.new,
        nodedeclaredfeatures.NAME: nodedeclaredfeatures.new,
        deferredpodscheduling.NAME: deferredpodscheduling.new,
        tainttoleration.NAME: tainttoleration.new,
        nodeaffinity.NAME: nodeaffinity.new,
        nodeports.NAME: nodeports.new,
        noderesources_fit.NAME: noderesources_fit.new,
        noderesources_balanced.NAME: noderesources_balanced.new,
        imagelocality.NAME: imagelocality.new,
        interpodaffinity.NAME: interpodaffinity.new,
        podtopologyspread.NAME: podtopologyspread.new,
        defaultbinder.NAME: defaultbinder.new,
        defaultpreemption.NAME: defaultpreemption.new,
        dynamicresources.NAME: dynamicresources.new,
        devicefragmentation.NAME: devicefragmentation.new,
        coscheduling.NAME: coscheduling.new,
        gangscheduling.NAME: gangscheduling.new,
        topologyaware.NAME: topologyaware.new,
        podgrouppodscount.NAME: podgrouppodscount.new,
        capacityscheduling.NAME: capacityscheduling.new,
        gpu_devices.NAME: gpu_devices.new,
        gpu_random.NAME: gpu_random.new,
        gpu_dotproduct.NAME: gpu_dotproduct.new,
        gpu_packing.NAME: gpu_packing.new,
        gpu_clustering.NAME: gpu_clustering.new,
        gpu_bestfit.NAME: gpu_bestfit.new,
        gpu_fgd.NAME: gpu_fgd.new,
        gpu_kubesched.NAME: gpu_kubesched.new,
        volumerestrictions.NAME: volumerestrictions.new,
        nodevolumelimits.NAME: nodevolumelimits.new,
        volumebinding.NAME: volumebinding.new,
        volumezone.NAME: volumezone.new,
    }
    for name in (*UNMODELLED, *NOT_YET_MODELLED):
        reg.setdefault(name, _unmodelled(name))
    return reg


def full_registry() -> dict[str, PluginFactory]:
    """In-tree plugins plus the installed out-of-tree ones (entry-point group
    ``kubesched.plugins``, see :mod:`kubesched.plugins.entrypoints`); a name clash is a
    :class:`~kubesched.plugins.entrypoints.PluginRegistryError`.  What the scheduler,
    explain, schedule, simulate and bench use."""
    return entrypoints.merge(in_tree_registry(), entrypoints.entry_point_registry())


def known_plugin_names(extra: Mapping[str, PluginFactory] | None = None) -> frozenset[str]:
    """Names a configuration may use: :func:`full_registry` plus ``extra``."""
    names = set(full_registry())
    if extra:
        names |= set(extra)
    return frozenset(names)
