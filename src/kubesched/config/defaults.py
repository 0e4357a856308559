"""Upstream v1.34 defaults: the default plugin set and ``mergePlugins`` (plugin names are in
:mod:`kubesched.config.names`).

Source: ``pkg/scheduler/apis/config/v1/default_plugins.go`` and ``defaults.go``.  In v1.34 the
``DynamicResourceAllocation`` feature is GA and on, so ``applyFeatureGates`` inserts
``DynamicResources`` (no weight) just before ``DefaultPreemption``; the in-tree volume-limit
plugins (EBSLimits, GCEPDLimits, AzureDiskLimits, CinderLimits) are gone and rejected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.config import args as plugin_args
from kubesched.config import pluginsets as t
from kubesched.config.names import (
    DEFAULT_BINDER,
    DEFAULT_PREEMPTION,
    DYNAMIC_RESOURCES,
    IMAGE_LOCALITY,
    INTER_POD_AFFINITY,
    NODE_AFFINITY,
    NODE_NAME,
    NODE_PORTS,
    NODE_RESOURCES_BALANCED_ALLOCATION,
    NODE_RESOURCES_FIT,
    NODE_UNSCHEDULABLE,
    NODE_VOLUME_LIMITS,
    POD_TOPOLOGY_SPREAD,
    PRIORITY_SORT,
    SCHEDULING_GATES,
    TAINT_TOLERATION,
    VOLUME_BINDING,
    VOLUME_RESTRICTIONS,
    VOLUME_ZONE,
)

DEFAULT_MULTI_POINT: tuple[t.PluginRef, ...] = (
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
    t.PluginRef(DYNAMIC_RESOURCES),
    t.PluginRef(DEFAULT_PREEMPTION),
    t.PluginRef(NODE_RESOURCES_BALANCED_ALLOCATION, 1),
    t.PluginRef(IMAGE_LOCALITY, 1),
    t.PluginRef(DEFAULT_BINDER),
)
"""Upstream ``getDefaultPlugins().MultiPoint.Enabled`` for v1.34, in order, with weights."""

DEFAULT_PLUGINS = t.Plugins(multi_point=t.PluginSet(enabled=DEFAULT_MULTI_POINT))
"""The default plugin set before any user change: everything is enabled through multiPoint."""

UPSTREAM_PLUGIN_NAMES: frozenset[str] = frozenset(p.name for p in DEFAULT_MULTI_POINT)
"""Every in-tree plugin name upstream v1.34 registers (all of them are in the default set)."""

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


def default_raw_args(name: str, given: Mapping[str, Any]) -> Mapping[str, Any]:
    """``given`` with upstream's defaults filled in for missing keys (read-only copy)."""
    merged = dict(RAW_ARGS_DEFAULTS.get(name, {}))
    merged.update(given)
    return t.frozen_mapping(merged)


def plugin_names(plugins: t.Plugins) -> list[str]:
    """Sorted names enabled anywhere in ``plugins`` (upstream ``pluginsNames``)."""
    names: set[str] = set()
    for point in t.PLUGIN_SET_FIELDS:
        names.update(p.name for p in plugins.get(point).enabled)
    return sorted(names)


def default_plugin_config(
    plugins: t.Plugins, configured: Mapping[str, object]
) -> Mapping[str, object]:
    """``configured`` plus upstream-default args for each enabled plugin that has an args
    type and no entry yet (upstream ``setDefaults_KubeSchedulerProfile``)."""
    result = dict(configured)
    for name in plugin_names(plugins):
        if name in result or name not in ARGS_PLUGINS:
            continue
        if name in TYPED_ARGS_PLUGINS:
            result[name] = default_typed_args(name)
        else:
            result[name] = default_raw_args(name, {})
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
