"""Typed readers for Scenario fields, with the scenario's documented limits.

Each reader takes the parent mapping, the key and the parent's path, and raises
:class:`~kubesched.api.errors.InputError` with the field path for a missing required field,
a wrong type, a number that is not finite (``.nan``, ``.inf``) or one outside its bounds.
Sizes are bounded (``docs/input-limits.md``) and checked before anything is allocated, so
``count: 10**15`` is an error message, not an attempt to allocate petabytes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.api.errors import InputError, excerpt

MAX_NODES = 100_000
"""Most simulated nodes a scenario may declare, over every pool and literal object."""
MAX_PODS = 1_000_000
"""Most Pods a scenario may generate, over every workload and literal object."""
MAX_GPU_CHOICES = 256
"""Distinct values in one workload's ``gpuChoices`` (a Pod is parsed for each; a value may
repeat, to weigh it)."""
MAX_SECONDS = 7 * 24 * 3600.0
"""Longest virtual time (a week) of ``durationSeconds``, ``drainSeconds``, any start, lifetime,
timing or fault time: the run steps through virtual seconds, so this bounds its length."""
MAX_SEED = 2**63 - 1
"""Seeds are 0..2^63-1 (numpy's generators take non-negative seeds)."""

SPEC_FIELDS = (
    "seed",
    "kubernetesVersion",
    "featureGates",
    "durationSeconds",
    "drainSeconds",
    "timing",
    "config",
    "nodePools",
    "workloads",
    "objects",
    "admission",
    "faults",
    "provisioningSeconds",
)
TIMING_FIELDS = (
    "cycleSeconds",
    "bindLatencySeconds",
    "watchDelaySeconds",
    "clientQPS",
    "clientBurst",
    "costModel",
    "calibration",
)
POOL_FIELDS = ("name", "count", "zones", "labels", "taints", "allocatable")
WORKLOAD_FIELDS = (
    "name",
    "count",
    "ratePerSecond",
    "startSeconds",
    "lifetimeSeconds",
    "gpuChoices",
    "volumeClaimTemplates",
    "template",
    "podGroup",
    "nodeStartupSeconds",
)
POD_GROUP_FIELDS = ("size", "minMember", "scheduleTimeoutSeconds", "api", "topologyKey")
ADMISSION_FIELDS = ("enabled", "fairSharing", "configuration")

_NAMES = {int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a map"}


def fail(path: str, message: str) -> InputError:
    """An :class:`InputError` with one problem (to ``raise``)."""
    return InputError([(path, message)])


def known(obj: Mapping[str, Any], allowed: Iterable[str], path: str) -> None:
    """Every key of ``obj`` is one of ``allowed`` (upstream's strict decoding of a kind)."""
    allowed = tuple(allowed)
    unknown = [str(k) for k in obj if k not in allowed]
    if unknown:
        raise InputError(
            [
                (f"{path}.{k}" if path else k, f"unknown field; known: {', '.join(allowed)}")
                for k in unknown
            ]
        )


def req(obj: Mapping[str, Any], key: str, path: str, kind: type | tuple[type, ...]) -> Any:
    """A required field of type ``kind`` (booleans are not numbers)."""
    if key not in obj:
        raise fail(f"{path}.{key}", "required field is missing")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        want = " or ".join(_NAMES.get(k, k.__name__) for k in kinds)
        raise fail(f"{path}.{key}", f"must be {want}, got {excerpt(value)}")
    return value


def opt(
    obj: Mapping[str, Any], key: str, path: str, kind: type | tuple[type, ...], default: Any
) -> Any:
    """An optional field (absent or null: ``default``)."""
    if key not in obj or obj[key] is None:
        return default
    return req(obj, key, path, kind)


def integer(
    obj: Mapping[str, Any],
    key: str,
    path: str,
    *,
    low: int = 0,
    high: int,
    default: int | None = None,
    limit: str = "",
) -> int:
    """An integer in ``low..high`` (required when ``default`` is None)."""
    value = req(obj, key, path, int) if default is None else opt(obj, key, path, int, default)
    if value < low:
        raise fail(f"{path}.{key}", f"must be >= {low}, got {value}")
    if value > high:
        raise fail(f"{path}.{key}", f"must be at most {high}{limit}, got {value}")
    return int(value)


def number(
    obj: Mapping[str, Any],
    key: str,
    path: str,
    *,
    low: float = 0.0,
    high: float = MAX_SECONDS,
    default: float | None = None,
    positive: bool = False,
) -> float:
    """A finite number in ``low..high`` (``> low`` when ``positive``)."""
    num = (int, float)
    value = req(obj, key, path, num) if default is None else opt(obj, key, path, num, default)
    return check_number(value, f"{path}.{key}", low=low, high=high, positive=positive)


def optional_number(
    obj: Mapping[str, Any], key: str, path: str, *, high: float = MAX_SECONDS
) -> float | None:
    """A finite number in ``0..high``, or None when absent."""
    if obj.get(key) is None:
        return None
    return number(obj, key, path, high=high)


def check_number(
    value: Any, path: str, *, low: float = 0.0, high: float = MAX_SECONDS, positive: bool = False
) -> float:
    """``value`` as a finite float in bounds; InputError at ``path`` otherwise."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise fail(path, f"must be a number, got {excerpt(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise fail(path, f"must be a finite number, got {value}")
    if value < low or (positive and value == low):
        raise fail(path, f"must be {'>' if positive else '>='} {low:g}, got {value}")
    if value > high:
        raise fail(path, f"must be at most {high:g}, got {value}")
    return float(value)


def unique_name(obj: Mapping[str, Any], path: str, seen: dict[str, str]) -> str:
    """``obj``'s required ``name``, which no earlier sibling (``seen``: name -> path) has."""
    name: str = req(obj, "name", path, str)
    if name in seen:
        raise fail(f"{path}.name", f"duplicate name {excerpt(name)} (first at {seen[name]})")
    seen[name] = path
    return name
