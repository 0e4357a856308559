"""KubeSchedulerConfiguration values back to the v1 mapping (for ``--dump-config`` and reports).

``load_config(config_to_dict(cfg), known_plugins=...) == cfg`` for every loaded ``cfg``
whose plugin sets hold no duplicate entries: the plugin sets written out are the merged ones,
and merging them with the defaults again changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api import fielderr as fe
from kubesched.api import objects as api
from kubesched.config import args as a
from kubesched.config import types as t


def _duration(seconds: float) -> str:
    return str(fe.go_duration(seconds))


def _refs(refs: tuple[t.PluginRef, ...]) -> list[dict[str, Any]]:
    return [{"name": r.name} | ({} if r.weight is None else {"weight": r.weight}) for r in refs]


def plugins_to_dict(plugins: t.Plugins) -> dict[str, Any]:
    """The ``plugins`` section (empty sets left out)."""
    out: dict[str, Any] = {}
    for point in t.PLUGIN_SET_FIELDS:
        pset = plugins.get(point)
        entry: dict[str, Any] = {}
        if pset.enabled:
            entry["enabled"] = _refs(pset.enabled)
        if pset.disabled:
            entry["disabled"] = _refs(pset.disabled)
        if entry:
            out[t.CAMEL[point]] = entry
    return out


def _requirements(reqs: tuple[api.Requirement, ...]) -> list[dict[str, Any]]:
    return [
        {"key": r.key, "operator": r.operator} | ({"values": list(r.values)} if r.values else {})
        for r in reqs
    ]


def _term(term: api.NodeSelectorTerm) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if term.match_expressions:
        out["matchExpressions"] = _requirements(term.match_expressions)
    if term.match_fields:
        out["matchFields"] = _requirements(term.match_fields)
    return out


def node_affinity_to_dict(na: api.NodeAffinity) -> dict[str, Any]:
    """``v1.NodeAffinity`` mapping of an :class:`api.NodeAffinity`."""
    out: dict[str, Any] = {}
    if na.required is not None:
        out["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [_term(term) for term in na.required]
        }
    if na.preferred:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": p.weight, "preference": _term(p.preference)} for p in na.preferred
        ]
    return out


def _resources(specs: tuple[a.ResourceSpec, ...]) -> list[dict[str, Any]]:
    return [{"name": s.name, "weight": s.weight} for s in specs]


def args_to_dict(args: object) -> dict[str, Any]:
    """The ``args`` mapping of typed or raw plugin args."""
    if isinstance(args, a.NodeResourcesFitArgs):
        s = args.scoring_strategy
        strategy: dict[str, Any] = {"type": s.type, "resources": _resources(s.resources)}
        if s.type == a.REQUESTED_TO_CAPACITY_RATIO or s.shape:
            strategy["requestedToCapacityRatio"] = {
                "shape": [{"utilization": p.utilization, "score": p.score} for p in s.shape]
            }
        out: dict[str, Any] = {"scoringStrategy": strategy}
        if args.ignored_resources:
            out["ignoredResources"] = list(args.ignored_resources)
        if args.ignored_resource_groups:
            out["ignoredResourceGroups"] = list(args.ignored_resource_groups)
        if args.retry_governance:
            out["retryGovernance"] = True
        return out
    if isinstance(args, a.NodeResourcesBalancedAllocationArgs):
        return {"resources": _resources(args.resources)}
    if isinstance(args, a.NodeAffinityArgs):
        if args.added_affinity is None:
            return {}
        return {"addedAffinity": node_affinity_to_dict(args.added_affinity)}
    if isinstance(args, Mapping):
        return dict(args)
    raise TypeError(f"cannot encode plugin args of type {type(args).__name__}")


def profile_to_dict(profile: t.Profile) -> dict[str, Any]:
    """One ``profiles[i]`` entry."""
    out: dict[str, Any] = {
        "schedulerName": profile.scheduler_name,
        "plugins": plugins_to_dict(profile.plugins),
        "pluginConfig": [
            {"name": name, "args": args_to_dict(args)}
            for name, args in sorted(profile.plugin_config.items())
        ],
    }
    if profile.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = profile.percentage_of_nodes_to_score
    return out


def config_to_dict(cfg: t.KubeSchedulerConfiguration) -> dict[str, Any]:
    """The whole configuration as a ``kubescheduler.config.k8s.io/v1`` mapping."""
    cc, le = cfg.client_connection, cfg.leader_election
    out: dict[str, Any] = {
        "apiVersion": t.API_VERSION,
        "kind": t.KIND,
        "parallelism": cfg.parallelism,
        "podInitialBackoffSeconds": cfg.pod_initial_backoff_seconds,
        "podMaxBackoffSeconds": cfg.pod_max_backoff_seconds,
        "profiles": [profile_to_dict(p) for p in cfg.profiles],
        "clientConnection": {
            "kubeconfig": cc.kubeconfig,
            "acceptContentTypes": cc.accept_content_types,
            "contentType": cc.content_type,
            "qps": cc.qps,
            "burst": cc.burst,
        },
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": _duration(le.lease_duration_seconds),
            "renewDeadline": _duration(le.renew_deadline_seconds),
            "retryPeriod": _duration(le.retry_period_seconds),
            "resourceLock": le.resource_lock,
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
        },
        "enableProfiling": cfg.enable_profiling,
        "enableContentionProfiling": cfg.enable_contention_profiling,
        "delayCacheUntilActive": cfg.delay_cache_until_active,
    }
    if cfg.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = cfg.percentage_of_nodes_to_score
    if cfg.extenders:
        out["extenders"] = [dict(e) for e in cfg.extenders]
    return out
