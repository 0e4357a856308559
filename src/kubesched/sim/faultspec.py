"""Fault drill declarations: the kinds, their fields and defaults, and the parsing of a
scenario's ``spec.faults`` into :class:`Fault` values with every problem reported by field
path (:mod:`kubesched.sim.faults` documents the kinds and arms them)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from kubesched.api import objects as api
from kubesched.api.errors import InputError, excerpt

KINDS: dict[str, dict[str, Any]] = {
    "bindFailures": {"rate": 0.2},
    "apiStorm": {"code": 429, "rate": 1.0},
    "latencySpike": {"bindLatencySeconds": 0.5, "watchDelaySeconds": None},
    "nodeLoss": {"nodes": None, "count": 1, "recreatePods": True, "restoreAfterSeconds": None},
    "nodeReregister": {"nodes": None, "count": 1},
    "zoneLoss": {"zone": None, "recreatePods": True, "restoreAfterSeconds": None},
    "leaderFailover": {"takeoverSeconds": 15.0},
    "shardCrash": {"shard": 0},
    "bulkRelease": {"fraction": None, "count": None, "selector": {}},
}
"""Each kind's own fields and their defaults."""
ZONE_LABEL = "topology.kubernetes.io/zone"
COMMON = ("kind", "name", "atSeconds", "durationSeconds")
NODE_PICKS = ("nodeLoss", "nodeReregister")
"""The kinds that pick nodes by ``nodes`` (names) or ``count`` (a seeded pick)."""
WINDOWED = ("bindFailures", "apiStorm", "latencySpike", "nodeReregister")


@dataclass(frozen=True, slots=True)
class Fault:
    """One declared fault, defaults filled in."""

    kind: str
    name: str
    at: float
    duration: float
    params: Mapping[str, Any]


def parse_faults(raw: Any, path: str = "spec.faults") -> list[Fault]:
    """Validate ``spec.faults``; every problem is an :class:`InputError` with its field path."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError([(path, "must be a list")])
    problems: list[tuple[str, str]] = []
    out = []
    for i, item in enumerate(raw):
        p = f"{path}[{i}]"
        if not isinstance(item, dict):
            problems.append((p, "must be a map"))
            continue
        kind = item.get("kind")
        if kind not in KINDS:
            problems.append(
                (f"{p}.kind", f"must be one of {', '.join(KINDS)}, got {excerpt(kind)}")
            )
            continue
        for key in item:
            if key not in COMMON and key not in KINDS[kind]:
                problems.append((f"{p}.{key}", f"unknown field for {kind}"))
        at, dur = item.get("atSeconds"), item.get("durationSeconds", 0.0)
        for key, v in (("atSeconds", at), ("durationSeconds", dur)):
            if not _finite(v) or v < 0:
                problems.append((f"{p}.{key}", f"must be a finite number >= 0, got {excerpt(v)}"))
        params = {**KINDS[kind], **{k: v for k, v in item.items() if k in KINDS[kind]}}
        problems += _check_params(kind, params, p)
        if kind in WINDOWED and not (isinstance(dur, int | float) and dur > 0):
            problems.append((f"{p}.durationSeconds", f"{kind} needs a window > 0"))
        out.append(Fault(kind, str(item.get("name") or f"{kind}-{i}"), _f(at), _f(dur), params))
    if problems:
        raise InputError(problems)
    return out


def check_targets(
    faults: Sequence[Fault], nodes: Sequence[api.Node], pods: Sequence[api.Pod], path: str
) -> None:
    """Every fault's target exists in the scenario: named nodes, a zone some node is in, a
    node count the cluster has, a selector some Pod matches (a drill that hits nothing would
    report a recovery that never happened).  ``faults`` are in ``spec.faults`` order."""
    names = {n.name for n in nodes}
    zones = sorted({z for n in nodes if (z := n.labels.get(ZONE_LABEL)) is not None})
    problems: list[tuple[str, str]] = []
    for i, f in enumerate(faults):
        p, prm = f"{path}[{i}]", f.params
        if f.kind in NODE_PICKS and prm["nodes"] is not None:
            problems += [
                (f"{p}.nodes[{j}]", f"no node named {excerpt(n)} in the scenario")
                for j, n in enumerate(prm["nodes"])
                if n not in names
            ]
        elif f.kind in NODE_PICKS and prm["count"] > len(names):
            problems.append((f"{p}.count", f"the scenario has {len(names)} nodes"))
        if f.kind == "zoneLoss" and prm["zone"] not in zones:
            known = ", ".join(zones) or "none"
            problems.append((f"{p}.zone", f"matches no node's {ZONE_LABEL} (zones: {known})"))
        if f.kind == "bulkRelease":
            sel = prm["selector"]
            if not any(all(pod.labels.get(k) == v for k, v in sel.items()) for pod in pods):
                problems.append((f"{p}.selector", "matches no Pod of the scenario"))
    if problems:
        raise InputError(problems)


def _finite(v: Any) -> TypeGuard[float]:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _f(v: Any) -> float:
    return float(v) if isinstance(v, int | float) else 0.0


def _check_params(kind: str, prm: dict[str, Any], p: str) -> list[tuple[str, str]]:
    bad: list[tuple[str, str]] = []

    def num(key: str, low: float = 0.0, high: float | None = None, none_ok: bool = False) -> None:
        v: Any = prm.get(key)
        if v is None and none_ok:
            return
        if not _finite(v) or v < low or (high is not None and v > high):
            bound = f" and <= {high}" if high is not None else ""
            bad.append((f"{p}.{key}", f"must be a finite number >= {low}{bound}, got {excerpt(v)}"))

    if "rate" in prm:
        num("rate", 0.0, 1.0)
    if kind == "apiStorm" and prm["code"] not in (429, 500):
        bad.append((f"{p}.code", f"must be 429 or 500, got {excerpt(prm['code'])}"))
    if kind == "latencySpike":
        num("bindLatencySeconds")
        num("watchDelaySeconds", none_ok=True)
    if kind in ("nodeLoss", "zoneLoss"):
        num("restoreAfterSeconds", none_ok=True)
        if not isinstance(prm["recreatePods"], bool):
            bad.append((f"{p}.recreatePods", "must be true or false"))
    if kind in NODE_PICKS:
        nodes = prm["nodes"]
        names_ok = isinstance(nodes, list) and all(isinstance(n, str) for n in nodes)
        if nodes is not None and not names_ok:
            bad.append((f"{p}.nodes", "must be a list of node names"))
        num("count", 1)
    if kind == "zoneLoss" and not isinstance(prm["zone"], str):
        bad.append((f"{p}.zone", "required: the zone label value"))
    if kind == "leaderFailover":
        num("takeoverSeconds")
    if kind == "shardCrash":
        num("shard")
    if kind == "bulkRelease":
        num("fraction", 0.0, 1.0, none_ok=True)
        num("count", 1, none_ok=True)
        if not isinstance(prm["selector"], dict):
            bad.append((f"{p}.selector", "must be a map of labels"))
    return bad
