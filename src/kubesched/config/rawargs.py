"""Validation of the plugin args we keep as raw mappings (upstream rules and messages).

DefaultPreemption, InterPodAffinity, PodTopologySpread, VolumeBinding and DynamicResources
args are checked strictly (unknown keys, wrong types) and with upstream's
``validation_pluginargs.go`` rules, on the already-defaulted mapping, but not converted to
classes: the plugins that use them read the mapping.  DynamicResources follows the run's
gates: ``filterTimeout`` is forbidden with ``DRASchedulerFilterTimeout`` off, and
``bindingTimeout`` (a field from v1.35) needs DRADeviceBindingConditions and
DRAResourceClaimDeviceStatus.  VolumeBinding ``shape`` follows
``StorageCapacityScoring`` (Beta and on from v1.37): validated as upstream's
``validateFunctionShape`` with the gate on, refused with it off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api import fielderr as fe
from kubesched.config import args as a
from kubesched.config import names
from kubesched.config.decode import Decoder
from kubesched.config.defaults import binding_conditions
from kubesched.config.featuregates import FeatureGates

_FIELDS: Mapping[str, tuple[str, ...]] = {
    names.DEFAULT_PREEMPTION: ("minCandidateNodesPercentage", "minCandidateNodesAbsolute"),
    names.INTER_POD_AFFINITY: ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"),
    names.POD_TOPOLOGY_SPREAD: ("defaultConstraints", "defaultingType"),
    names.VOLUME_BINDING: ("bindTimeoutSeconds", "shape"),
    names.DYNAMIC_RESOURCES: ("filterTimeout",),
}
_CONSTRAINT_FIELDS = (
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
)
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")


def validate(
    dec: Decoder, name: str, args: Mapping[str, Any], path: str, gates: FeatureGates | None = None
) -> None:
    """Check the defaulted raw ``args`` of plugin ``name`` at ``path`` under ``gates`` (None:
    the default version's); problems go to ``dec``."""
    gates = gates or FeatureGates()
    fields = _FIELDS.get(name, tuple(args))
    if name == names.DYNAMIC_RESOURCES and gates.version != "1.34":
        fields = (*fields, "bindingTimeout")
    r = dec.obj(args, path, fields) or {}
    if name == names.DEFAULT_PREEMPTION:
        _default_preemption(dec, r, path)
    elif name == names.INTER_POD_AFFINITY:
        p = fe.join(path, "hardPodAffinityWeight")
        w = dec.integer(r.get("hardPodAffinityWeight"), p)
        if w is not None and not 0 <= w <= 100:
            dec.problems.append(fe.invalid(p, w, "not in valid range [0, 100]"))
        dec.boolean(
            r.get("ignorePreferredTermsOfExistingPods"),
            fe.join(path, "ignorePreferredTermsOfExistingPods"),
        )
    elif name == names.POD_TOPOLOGY_SPREAD:
        _pod_topology_spread(dec, r, path)
    elif name == names.VOLUME_BINDING:
        p = fe.join(path, "bindTimeoutSeconds")
        timeout = dec.integer(r.get("bindTimeoutSeconds"), p, fe.INT64_MIN, fe.INT64_MAX)
        if timeout is not None and timeout < 0:
            msg = "invalid BindTimeoutSeconds, should not be a negative value"
            dec.problems.append(fe.invalid(p, timeout, msg))
        if gates.enabled("StorageCapacityScoring"):
            if r.get("shape"):  # absent or empty: upstream's default shape
                sp = fe.join(path, "shape")
                points = decode_shape(dec, r["shape"], sp)
                dec.problems += validate_shape(tuple(points), sp)
        elif r.get("shape") is not None:
            msg = "unexpected field `shape`, remove it or turn on the feature gate "
            dec.problems.append(
                fe.invalid(fe.join(path, "shape"), r["shape"], msg + "StorageCapacityScoring")
            )
    elif name == names.DYNAMIC_RESOURCES:
        _dynamic_resources(dec, r, path, gates)


def _dynamic_resources(dec: Decoder, r: Mapping[str, Any], path: str, gates: FeatureGates) -> None:
    """Upstream ``ValidateDynamicResourcesArgs``: fields of a disabled feature are errors."""
    p = fe.join(path, "filterTimeout")
    timeout_s = dec.duration(r.get("filterTimeout"), p)
    if not gates.enabled("DRASchedulerFilterTimeout"):
        if r.get("filterTimeout") is not None:
            dec.problems.append(
                fe.forbidden(p, "DRASchedulingFilterTimeout feature gate is disabled")
            )
    elif timeout_s is not None and timeout_s < 0:
        dec.problems.append(fe.invalid(p, r["filterTimeout"], "must be zero or positive"))
    bp = fe.join(path, "bindingTimeout")
    binding_s = dec.duration(r.get("bindingTimeout"), bp)
    if not binding_conditions(gates):
        if r.get("bindingTimeout") is not None:
            gates_named = "DRADeviceBindingConditions or DRAResourceClaimDeviceStatus"
            detail = f"{gates_named} feature gate is disabled"
            dec.problems.append(fe.forbidden(bp, detail))
    elif binding_s is not None and binding_s < 1:
        dec.problems.append(fe.invalid(bp, r["bindingTimeout"], "must be at least 1 second"))


def _default_preemption(dec: Decoder, r: Mapping[str, Any], path: str) -> None:
    pp = fe.join(path, "minCandidateNodesPercentage")
    ap = fe.join(path, "minCandidateNodesAbsolute")
    pct = dec.integer(r.get("minCandidateNodesPercentage"), pp)
    absolute = dec.integer(r.get("minCandidateNodesAbsolute"), ap)
    if pct is not None and not 0 <= pct <= 100:
        dec.problems.append(fe.invalid(pp, pct, "not in valid range [0, 100]"))
    if absolute is not None and absolute < 0:
        dec.problems.append(fe.invalid(ap, absolute, "not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        dec.problems.append(
            fe.invalid(pp, 0, "cannot be zero at the same time as minCandidateNodesAbsolute")
        )
        dec.problems.append(
            fe.invalid(ap, 0, "cannot be zero at the same time as minCandidateNodesPercentage")
        )


def _pod_topology_spread(dec: Decoder, r: Mapping[str, Any], path: str) -> None:
    cp = fe.join(path, "defaultConstraints")
    constraints = dec.lst(r.get("defaultConstraints"), cp)
    tp = fe.join(path, "defaultingType")
    defaulting = dec.string(r.get("defaultingType"), tp)
    if defaulting is not None and defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        dec.problems.append(fe.not_supported(tp, defaulting, (SYSTEM_DEFAULTING, LIST_DEFAULTING)))
    elif defaulting == SYSTEM_DEFAULTING and constraints:
        dec.problems.append(fe.invalid(tp, defaulting, "when .defaultConstraints are not empty"))
    seen: list[tuple[str, str]] = []
    for i, item in enumerate(constraints):
        p = fe.index(cp, i)
        c = dec.obj(item, p, _CONSTRAINT_FIELDS) or {}
        skew = dec.integer(c.get("maxSkew"), fe.join(p, "maxSkew")) or 0
        if skew <= 0:
            dec.problems.append(
                fe.invalid(fe.join(p, "maxSkew"), skew, "not in valid range (0, inf)")
            )
        key = dec.string(c.get("topologyKey"), fe.join(p, "topologyKey")) or ""
        if not key:
            dec.problems.append(fe.required(fe.join(p, "topologyKey"), "can not be empty"))
        else:
            dec.problems.extend(fe.validate_label_name(fe.join(p, "topologyKey"), key))
        wp = fe.join(p, "whenUnsatisfiable")
        when = dec.string(c.get("whenUnsatisfiable"), wp) or ""
        if not when:
            dec.problems.append(fe.required(wp, "can not be empty"))
        elif when not in _WHEN_UNSATISFIABLE:
            dec.problems.append(fe.not_supported(wp, when, _WHEN_UNSATISFIABLE))
        if c.get("labelSelector") is not None:
            dec.problems.append(
                fe.forbidden(
                    fe.join(p, "labelSelector"),
                    "constraint must not define a selector, as they deduced for each pod",
                )
            )
        if (key, when) in seen:
            dec.problems.append(fe.duplicate(p, f"{{{key}, {when}}}"))
        seen.append((key, when))


MAX_CUSTOM_PRIORITY_SCORE = 10
"""Upper bound of a RequestedToCapacityRatio shape score (upstream ``MaxCustomPriorityScore``)."""


def decode_shape(dec: Decoder, raw: Any, path: str) -> list[a.UtilizationShapePoint]:
    """A ``shape`` list of ``{utilization, score}`` points (RequestedToCapacityRatio's,
    VolumeBinding's), each field checked at its path."""
    shape = []
    for i, item in enumerate(dec.lst(raw, path)):
        p = fe.index(path, i)
        pt = dec.obj(item, p, ("utilization", "score")) or {}
        util = dec.integer(pt.get("utilization"), fe.join(p, "utilization")) or 0
        score = dec.integer(pt.get("score"), fe.join(p, "score")) or 0
        shape.append(a.UtilizationShapePoint(util, score))
    return shape


def validate_shape(shape: tuple[a.UtilizationShapePoint, ...], path: str) -> list[fe.Problem]:
    """Upstream ``validateFunctionShape``: non-empty, strictly increasing utilization in
    [0, 100], score in [0, 10]."""
    if not shape:
        return [fe.required(path, "at least one point must be specified")]
    problems = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            problems.append(
                fe.invalid(
                    fe.join(fe.index(path, i), "utilization"),
                    shape[i].utilization,
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= 100:
            problems.append(
                fe.invalid(
                    fe.join(fe.index(path, i), "utilization"),
                    point.utilization,
                    "not in valid range [0, 100]",
                )
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            problems.append(
                fe.invalid(
                    fe.join(fe.index(path, i), "score"),
                    point.score,
                    f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
                )
            )
    return problems
