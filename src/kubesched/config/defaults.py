"""Upstream's defaults per Kubernetes version: the default plugin set and ``mergePlugins``
(plugin names are in :mod:`kubesched.config.names`).

Source: each supported release's ``pkg/scheduler/apis/config/v1/default_plugins.go`` and
``defaults.go``.  ``getDefaultPlugins`` lists the same plugins in every release (v1.37 puts
``NodeName`` before ``NodeUnschedulable``), then ``applyFeatureGates`` adds, under that
release's gates (:func:`default_multi_point`):

- ``NodeDeclaredFeatures`` at the end (v1.35+, gate NodeDeclaredFeatures);
- ``DeferredPodScheduling`` just before ``NodeResourcesFit`` (v1.37, gate
  InPlacePodVerticalScalingSchedulerPreemption);
- ``DynamicResources`` just before ``DefaultPreemption`` (gate DynamicResourceAllocation, GA
  and on in all of them): no weight in v1.34, weight 2 from v1.35;
- ``GangScheduling`` at the end (v1.35-1.36 gate GangScheduling, v1.37 GenericWorkload);
- ``TopologyPlacementGenerator`` and ``PodGroupPodsCount`` (weight 1) at the end (v1.36+,
  gate TopologyAwareWorkloadScheduling).

The in-tree volume-limit plugins (EBSLimits, GCEPDLimits, AzureDiskLimits, CinderLimits) are
gone and rejected in every supported release.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.config import args as plugin_args
from kubesched.config import pluginsets as t
from kubesched.config.featuregates import FeatureGates
from kubesched.config.names import (
    DEFAULT_BINDER,
    DEFAULT_PREEMPTION,
    DEFERRED_POD_SCHEDULING,
    DYNAMIC_RESOURCES,
    GANG_SCHEDULING,
    IMAGE_LOCALITY,
    INTER_POD_AFFINITY,
    NODE_AFFINITY,
    NODE_DECLARED_FEATURES,
    NODE_NAME,
    NODE_PORTS,
    NODE_RESOURCES_BALANCED_ALLOCATION,
    NODE_RESOURCES_FIT,
    NODE_UNSCHEDULABLE,
    NODE_VOLUME_LIMITS,
    POD_GROUP_PODS_COUNT,
    POD_TOPOLOGY_SPREAD,
    PRIORITY_SORT,
    SCHEDULING_GATES,
    TAINT_TOLERATION,
    TOPOLOGY_PLACEMENT_GENERATOR,
    VOLUME_BINDING,
    VOLUME_RESTRICTIONS,
    VOLUME_ZONE,
)

_BASE_MULTI_POINT: tuple[t.PluginRef, ...] = (
    t.PluginRef(SCHEDULING_GATES),
    t.PluginRef(PRIORITY_SORT),
    t.PluginRef(NODE_UNSCHEDULABLE),
    t.PluginRef(NODE_NAME),
    t.PluginRef(TAINT_TOLERATION, 3),
    t.PluginRef(NODE_AFFINITY, 2),
    t.PluginRef(NODE_PORTS),
    t.PluginRef(NODE_RESOURCES_FIT, 1),
    t.PluginRef(VOLUME_RESTRICTIONS),
    t.PluginRef(NODE_VOLUME_LIMITS),
    t.PluginRef(VOLUME_BINDING),
    t.PluginRef(VOLUME_ZONE),
    t.PluginRef(POD_TOPOLOGY_SPREAD, 2),
    t.PluginRef(INTER_POD_AFFINITY, 2),
    t.PluginRef(DEFAULT_PREEMPTION),
    t.PluginRef(NODE_RESOURCES_BALANCED_ALLOCATION, 1),
    t.PluginRef(IMAGE_LOCALITY, 1),
    t.PluginRef(DEFAULT_BINDER),
)
"""Upstream ``getDefaultPlugins``' list before ``applyFeatureGates`` (v1.34-v1.36 order)."""


def _insert_before(refs: list[t.PluginRef], anchor: str, ref: t.PluginRef) -> None:
    names = [r.name for r in refs]
    refs.insert(names.index(anchor) if anchor in names else len(refs), ref)


def _since(version: str, minor: str) -> bool:
    return tuple(map(int, version.split("."))) >= tuple(map(int, minor.split(".")))


def default_multi_point(gates: FeatureGates) -> tuple[t.PluginRef, ...]:
    """Upstream ``getDefaultPlugins().MultiPoint.Enabled`` of ``gates.version`` under
    ``gates``, in order, with weights (see the module docstring)."""
    version = gates.version
    refs = list(_BASE_MULTI_POINT)
    if _since(version, "1.37"):
        refs[2], refs[3] = refs[3], refs[2]  # NodeName, then NodeUnschedulable
    if _since(version, "1.35") and gates.enabled("NodeDeclaredFeatures"):
        refs.append(t.PluginRef(NODE_DECLARED_FEATURES))
    if _since(version, "1.37") and gates.enabled("InPlacePodVerticalScalingSchedulerPreemption"):
        _insert_before(refs, NODE_RESOURCES_FIT, t.PluginRef(DEFERRED_POD_SCHEDULING))
    if gates.enabled("DynamicResourceAllocation"):
        weight = None if version == "1.34" else 2
        _insert_before(refs, DEFAULT_PREEMPTION, t.PluginRef(DYNAMIC_RESOURCES, weight))
    gang_gate = "GenericWorkload" if _since(version, "1.37") else "GangScheduling"
    if _since(version, "1.35") and gates.enabled(gang_gate):
        refs.append(t.PluginRef(GANG_SCHEDULING))
    if _since(version, "1.36") and gates.enabled("TopologyAwareWorkloadScheduling"):
        refs += [t.PluginRef(TOPOLOGY_PLACEMENT_GENERATOR), t.PluginRef(POD_GROUP_PODS_COUNT, 1)]
    return tuple(refs)


def default_plugins(gates: FeatureGates) -> t.Plugins:
    """The default plugin set of ``gates``' version and gates, before any user change:
    everything is enabled through multiPoint."""
    return t.Plugins(multi_point=t.PluginSet(enabled=default_multi_point(gates)))


DEFAULT_MULTI_POINT: tuple[t.PluginRef, ...] = default_multi_point(FeatureGates())
"""The default version's (:data:`~kubesched.config.versions.DEFAULT_VERSION`) default list."""

DEFAULT_PLUGINS = t.Plugins(multi_point=t.PluginSet(enabled=DEFAULT_MULTI_POINT))
"""The default version's default plugin set."""

LATER_PLUGIN_NAMES: Mapping[str, str] = {
    NODE_DECLARED_FEATURES: "1.35",
    GANG_SCHEDULING: "1.35",
    TOPOLOGY_PLACEMENT_GENERATOR: "1.36",
    POD_GROUP_PODS_COUNT: "1.36",
    DEFERRED_POD_SCHEDULING: "1.37",
}
"""In-tree plugins upstream registers from a later release than v1.34 on, with that release
(``pkg/scheduler/framework/plugins/registry.go`` of each)."""

UPSTREAM_PLUGIN_NAMES: frozenset[str] = frozenset(
    {p.name for p in _BASE_MULTI_POINT} | {DYNAMIC_RESOURCES} | set(LATER_PLUGIN_NAMES)
)
"""Every in-tree plugin name some supported release registers."""


def unregistered_in(version: str) -> frozenset[str]:
    """In-tree plugin names upstream ``version`` does not register yet."""
    return frozenset(n for n, since in LATER_PLUGIN_NAMES.items() if not _since(version, since))


REMOVED_PLUGIN_NAMES = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")
"""Plugins upstream's v1 validation rejects as ``was invalid in version ...``."""

TYPED_ARGS_PLUGINS = (NODE_RESOURCES_FIT, NODE_RESOURCES_BALANCED_ALLOCATION, NODE_AFFINITY)
"""Plugins whose args we decode into :mod:`kubesched.config.args` classes."""

RAW_ARGS_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    DEFAULT_PREEMPTION: {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
    INTER_POD_AFFINITY: {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
    POD_TOPOLOGY_SPREAD: {"defaultingType": "System"},
    VOLUME_BINDING: {"bindTimeoutSeconds": 600},
    DYNAMIC_RESOURCES: {},
}
"""Upstream ``SetDefaults_*Args`` for the plugins whose args we keep as raw mappings: a
missing key takes this value."""

ARGS_PLUGINS = frozenset((*TYPED_ARGS_PLUGINS, *RAW_ARGS_DEFAULTS))
"""Plugins that upstream gives an ``<Name>Args`` type (so defaulting appends their args)."""


def default_typed_args(name: str) -> object:
    """Upstream-defaulted typed args of a plugin of :data:`TYPED_ARGS_PLUGINS`."""
    if name == NODE_RESOURCES_FIT:
        return plugin_args.NodeResourcesFitArgs()
    if name == NODE_RESOURCES_BALANCED_ALLOCATION:
        return plugin_args.NodeResourcesBalancedAllocationArgs()
    if name == NODE_AFFINITY:
        return plugin_args.NodeAffinityArgs()
    raise KeyError(name)


DRA_BINDING_TIMEOUT = "10m0s"
"""v1.35+ ``DynamicResourcesBindingTimeoutDefault`` (600 s), as the v1 file writes it."""


def binding_conditions(gates: FeatureGates) -> bool:
    """Whether DynamicResources has a ``bindingTimeout`` (v1.35+, both gates on)."""
    return (
        _since(gates.version, "1.35")
        and gates.enabled("DRADeviceBindingConditions")
        and gates.enabled("DRAResourceClaimDeviceStatus")
    )


def default_raw_args(
    name: str, given: Mapping[str, Any], gates: FeatureGates | None = None
) -> Mapping[str, Any]:
    """``given`` with upstream's defaults filled in for missing keys (read-only copy); the
    gate-dependent ones (DynamicResources ``bindingTimeout``) under ``gates`` (None: the
    default version's)."""
    merged = dict(RAW_ARGS_DEFAULTS.get(name, {}))
    if name == DYNAMIC_RESOURCES and binding_conditions(gates or FeatureGates()):
        merged["bindingTimeout"] = DRA_BINDING_TIMEOUT
    merged.update(given)
    return t.frozen_mapping(merged)


def plugin_names(plugins: t.Plugins) -> list[str]:
    """Sorted names enabled anywhere in ``plugins`` (upstream ``pluginsNames``)."""
    names: set[str] = set()
    for point in t.PLUGIN_SET_FIELDS:
        names.update(p.name for p in plugins.get(point).enabled)
    return sorted(names)


def default_plugin_config(
    plugins: t.Plugins, configured: Mapping[str, object], gates: FeatureGates | None = None
) -> Mapping[str, object]:
    """``configured`` plus upstream-default args for each enabled plugin that has an args
    type and no entry yet (upstream ``setDefaults_KubeSchedulerProfile``), under ``gates``."""
    result = dict(configured)
    for name in plugin_names(plugins):
        if name in result or name not in ARGS_PLUGINS:
            continue
        if name in TYPED_ARGS_PLUGINS:
            result[name] = default_typed_args(name)
        else:
            result[name] = default_raw_args(name, {}, gates)
    return t.frozen_mapping(result)


def merge_plugin_set(default: t.PluginSet, custom: t.PluginSet) -> t.PluginSet:
    """Upstream ``mergePluginSet``: the user's set applied on top of the default one.

    Disabled defaults drop out (``*`` drops all); a default the user enables again is
    replaced in place (keeping the default's position, taking the user's weight; the last
    such user entry wins); the user's other enabled entries follow in their order
    (duplicates kept, for the framework to reject).  Both disabled lists are kept, because
    multiPoint expansion reads them.
    """
    disabled = (*custom.disabled, *default.disabled)
    disabled_names = {p.name for p in disabled}
    custom_by_name = {p.name: (i, p) for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[t.PluginRef] = []
    if "*" not in disabled_names:
        for plugin in default.enabled:
            if plugin.name in disabled_names:
                continue
            if plugin.name in custom_by_name:
                index, plugin = custom_by_name[plugin.name]
                replaced.add(index)
            enabled.append(plugin)
    enabled.extend(p for i, p in enumerate(custom.enabled) if i not in replaced)
    return t.PluginSet(
        enabled=tuple(enabled), disabled=tuple(t.PluginRef(p.name) for p in disabled)
    )


def merge_plugins(default: t.Plugins, custom: t.Plugins | None) -> t.Plugins:
    """Upstream ``mergePlugins``: :func:`merge_plugin_set` on every extension point."""
    if custom is None:
        return default
    merged = {
        point: merge_plugin_set(default.get(point), custom.get(point))
        for point in t.PLUGIN_SET_FIELDS
    }
    return t.Plugins(**merged)
