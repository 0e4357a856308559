"""``pluginConfig[].args``: strict decoding, upstream defaulting and upstream validation.

NodeResourcesFit, NodeResourcesBalancedAllocation and NodeAffinity decode into the typed
classes of :mod:`kubesched.config.args`; the other plugins upstream gives an args type
(DefaultPreemption, InterPodAffinity, PodTopologySpread, VolumeBinding, DynamicResources)
stay read-only mappings, defaulted and validated like upstream
(``pkg/scheduler/apis/config/validation/validation_pluginargs.go``).  Args of plugins upstream
has no args type for are kept as given.

Upstream only checks NodeResourcesFit args when the plugin is built; we check them at load
time with the same messages, when the profile enables the plugin (a profile that does not
may carry any values, as upstream).  The validators on typed args are public, so plugins and tests
can run them on args built in code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api import fielderr as fe
from kubesched.config import affinity, names, rawargs
from kubesched.config import args as a
from kubesched.config import defaults as d
from kubesched.config import types as t
from kubesched.config.decode import Decoder
from kubesched.config.featuregates import FeatureGates
from kubesched.config.rawargs import decode_shape, validate_shape


def validate_fit_args(
    args: a.NodeResourcesFitArgs, path: str = "", *, ratio_given: bool | None = None
) -> list[fe.Problem]:
    """Upstream ``ValidateNodeResourcesFitArgs``.  ``ratio_given`` says whether
    ``scoringStrategy.requestedToCapacityRatio`` was present (default: inferred)."""
    problems: list[fe.Problem] = []
    for i, res in enumerate(args.ignored_resources):
        problems += fe.validate_label_name(fe.index(fe.join(path, "ignoredResources"), i), res)
    for i, group in enumerate(args.ignored_resource_groups):
        p = fe.index(fe.join(path, "ignoredResourceGroups"), i)
        if "/" in group:
            problems.append(fe.invalid(p, group, "resource group name can't contain '/'"))
        problems += fe.validate_label_name(p, group)
    strategy = args.scoring_strategy
    sp = fe.join(path, "scoringStrategy")
    if strategy.type not in a.SCORING_STRATEGIES:
        problems.append(fe.not_supported(fe.join(sp, "type"), strategy.type, a.SCORING_STRATEGIES))
    for i, spec in enumerate(strategy.resources):
        if not 0 < spec.weight <= 100:
            problems.append(
                fe.invalid(
                    fe.join(fe.index(fe.join(sp, "resources"), i), "weight"),
                    spec.weight,
                    f"resource weight of {spec.name} not in valid range (0, 100]",
                )
            )
    if ratio_given is None:
        ratio_given = bool(strategy.shape) or strategy.type == a.REQUESTED_TO_CAPACITY_RATIO
    ratio_path = fe.join(sp, "requestedToCapacityRatio")
    if strategy.type == a.REQUESTED_TO_CAPACITY_RATIO:
        if not ratio_given:
            problems.append(
                fe.required(ratio_path, "must be specified when type is RequestedToCapacityRatio")
            )
        else:
            problems += validate_shape(strategy.shape, fe.join(ratio_path, "shape"))
    elif ratio_given:
        problems.append(
            fe.forbidden(ratio_path, "must be nil when type is not RequestedToCapacityRatio")
        )
    return problems


def validate_balanced_allocation_args(
    args: a.NodeResourcesBalancedAllocationArgs, path: str = ""
) -> list[fe.Problem]:
    """Upstream ``ValidateNodeResourcesBalancedAllocationArgs``: unique names, weight 1."""
    problems: list[fe.Problem] = []
    seen: set[str] = set()
    for i, res in enumerate(args.resources):
        p = fe.index(fe.join(path, "resources"), i)
        if res.name in seen:
            problems.append(fe.duplicate(fe.join(p, "name"), res.name))
        seen.add(res.name)
        if res.weight != 1:
            problems.append(fe.invalid(fe.join(p, "weight"), res.weight, "must be 1"))
    return problems


# --- decoding -------------------------------------------------------------------------------


def _resources(dec: Decoder, value: Any, path: str) -> tuple[a.ResourceSpec, ...]:
    """``[{name, weight}]`` with upstream defaulting (empty -> cpu+memory, weight 0 -> 1)."""
    specs = []
    for i, item in enumerate(dec.lst(value, path)):
        p = fe.index(path, i)
        r = dec.obj(item, p, ("name", "weight")) or {}
        name = dec.string(r.get("name"), fe.join(p, "name")) or ""
        weight = dec.integer(r.get("weight"), fe.join(p, "weight")) or 1
        specs.append(a.ResourceSpec(name, weight))
    return tuple(specs) or a.DEFAULT_RESOURCES


def _fit(
    dec: Decoder, raw: Mapping[str, Any], path: str, validate: bool = True
) -> a.NodeResourcesFitArgs:
    fields = ("ignoredResources", "ignoredResourceGroups", "scoringStrategy", "retryGovernance")
    r = dec.obj(raw, path, fields) or {}

    def strings(key: str) -> tuple[str, ...]:
        p = fe.join(path, key)
        items = (dec.string(v, fe.index(p, i)) for i, v in enumerate(dec.lst(r.get(key), p)))
        return tuple(s for s in items if s is not None)

    ignored, groups = strings("ignoredResources"), strings("ignoredResourceGroups")
    sp = fe.join(path, "scoringStrategy")
    s = dec.obj(r.get("scoringStrategy"), sp, ("type", "resources", "requestedToCapacityRatio"))
    ratio_given = False
    if s is None:
        strategy = a.ScoringStrategy()
    else:
        rp = fe.join(sp, "requestedToCapacityRatio")
        ratio = dec.obj(s.get("requestedToCapacityRatio"), rp, ("shape",))
        ratio_given = ratio is not None
        shape = decode_shape(dec, (ratio or {}).get("shape"), fe.join(rp, "shape"))
        strategy = a.ScoringStrategy(
            type=dec.string(s.get("type"), fe.join(sp, "type")) or "",
            resources=_resources(dec, s.get("resources"), fe.join(sp, "resources")),
            shape=tuple(shape),
        )
    governance = dec.boolean(r.get("retryGovernance"), fe.join(path, "retryGovernance"))
    result = a.NodeResourcesFitArgs(ignored, groups, strategy, bool(governance))
    if validate:
        dec.problems += validate_fit_args(result, path, ratio_given=ratio_given)
    return result


def _balanced(
    dec: Decoder, raw: Mapping[str, Any], path: str
) -> a.NodeResourcesBalancedAllocationArgs:
    r = dec.obj(raw, path, ("resources",)) or {}
    result = a.NodeResourcesBalancedAllocationArgs(
        _resources(dec, r.get("resources"), fe.join(path, "resources"))
    )
    dec.problems += validate_balanced_allocation_args(result, path)
    return result


def _node_affinity(dec: Decoder, raw: Mapping[str, Any], path: str) -> a.NodeAffinityArgs:
    r = dec.obj(raw, path, ("addedAffinity",)) or {}
    added = affinity.parse_added_affinity(
        dec, r.get("addedAffinity"), fe.join(path, "addedAffinity")
    )
    return a.NodeAffinityArgs(added)


def decode_args(
    dec: Decoder,
    name: str,
    raw: Mapping[str, Any] | None,
    path: str,
    enabled: bool = True,
    gates: FeatureGates | None = None,
) -> object:
    """The defaulted args of plugin ``name`` from ``raw`` (the ``args`` mapping at ``path``);
    problems go to ``dec``.  Typed for :data:`~kubesched.config.defaults.TYPED_ARGS_PLUGINS`,
    a read-only mapping otherwise.  NodeResourcesFit's values are validated only when the
    profile ``enabled`` it (upstream validates them when it builds the plugin: its config
    validation looks them up under the wrong name, ``NodeResourcesFitArgs``); strict
    decoding applies either way.  ``gates`` (None: the default version's) decide the
    gate-dependent defaults and checks (:mod:`kubesched.config.rawargs`)."""
    given = dict(raw or {})
    if name not in d.ARGS_PLUGINS:
        return t.frozen_mapping(given)
    api_version, kind = given.pop("apiVersion", None), given.pop("kind", None)
    if api_version is not None and api_version != t.API_VERSION:
        dec.problems.append(
            fe.not_supported(fe.join(path, "apiVersion"), api_version, (t.API_VERSION,))
        )
    if kind is not None and kind != f"{name}Args":
        dec.problems.append(
            fe.invalid(fe.join(path, "kind"), kind, f"args for plugin {name} must be {name}Args")
        )
    if name == names.NODE_RESOURCES_FIT:
        return _fit(dec, given, path, validate=enabled)
    if name == names.NODE_RESOURCES_BALANCED_ALLOCATION:
        return _balanced(dec, given, path)
    if name == names.NODE_AFFINITY:
        return _node_affinity(dec, given, path)
    gates = gates or FeatureGates()
    merged = d.default_raw_args(name, given, gates)
    rawargs.validate(dec, name, merged, path, gates)
    return merged
