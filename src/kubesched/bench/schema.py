"""The field schema of scheduler_perf configs and the strict decoder that checks it.

:data:`OPS` lists every op kubesched runs with its fields and their kinds; test case and
workload fields are :data:`CASE_FIELDS` and :data:`WORKLOAD_FIELDS`.  :class:`Checker` decodes
a mapping against such a schema as upstream's strict decoder would (unknown field, wrong
type), matching field names case-insensitively like Go's ``encoding/json``, resolving file
paths against the config's folder, and collecting every problem with its path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0}
_DURATION_UNITS.update({"m": 60.0, "h": 3600.0})

# Field kinds: a type check plus, for paths, resolution against the config's folder.
INT, NUM, BOOL, STR, PARAM, PATH, PATHS, STRS, STRMAP, MAP, DURATION = (
    "an integer",
    "a number",
    "a boolean",
    "a string",
    'a "$param" string',
    "a file path",
    "a list of file paths",
    "a list of strings",
    "a string-to-string map",
    "a mapping",
    'a duration such as "1s"',
)
LABEL_STRATEGY = {"labelKey": STR, "labelValues": STRS}
UNIQUE_LABEL_STRATEGY = {"labelKey": STR}
NODE_ALLOCATABLE_STRATEGY = {
    "nodeAllocatable": STRMAP,
    "csiNodeAllocatable": MAP,
    "migratedPlugins": STRS,
}
"""Upstream's ``NodeAllocatableStrategy``: allocatable set on every Node, and a CSINode per
Node with each driver's ``VolumeNodeResources`` (``{count: N}``) and the migrated plugins."""
UNSUPPORTED = "is not supported by kubesched"

OPS: dict[str, dict[str, Any]] = {
    "createNodes": {
        "count": INT,
        "countParam": PARAM,
        "nodeTemplatePath": PATH,
        "labelNodePrepareStrategy": LABEL_STRATEGY,
        "uniqueNodeLabelStrategy": UNIQUE_LABEL_STRATEGY,
        "nodeAllocatableStrategy": NODE_ALLOCATABLE_STRATEGY,
        "templateParams": MAP,
    },
    "createNamespaces": {
        "prefix": STR,
        "count": INT,
        "countParam": PARAM,
        "namespaceTemplatePath": PATH,
    },
    "createPods": {
        "count": INT,
        "countParam": PARAM,
        "countMultiplierParam": PARAM,
        "steadyState": BOOL,
        "steadyStateParam": PARAM,
        "duration": DURATION,
        "durationParam": PARAM,
        "collectMetrics": BOOL,
        "namespace": STR,
        "podTemplatePath": PATH,
        "skipWaitToCompletion": BOOL,
        "persistentVolumeTemplatePath": PATH,
        "persistentVolumeClaimTemplatePath": PATH,
        "templateParams": MAP,
        "signatureBatchSize": INT,
        "signatureBatchSizeParam": PARAM,
    },
    "createPodSets": {
        "count": INT,
        "countParam": PARAM,
        "namespacePrefix": STR,
        "createPodsOp": None,
    },
    "deletePods": {
        "namespace": STR,
        "labelSelector": STRMAP,
        "skipWaitToCompletion": BOOL,
        "deletePodsPerSecond": INT,
    },
    "churn": {
        "mode": STR,
        "number": INT,
        "intervalMilliseconds": INT,
        "namespace": STR,
        "templatePaths": PATHS,
    },
    "barrier": {"namespaces": STRS, "labelSelector": STRMAP, "stageRequirement": STR},
    "sleep": {"duration": DURATION, "durationParam": PARAM},
    "startCollectingMetrics": {"name": STR, "namespaces": STRS, "labelSelector": STRMAP},
    "stopCollectingMetrics": {},
    "createAny": {
        "namespace": STR,
        "templatePath": PATH,
        "count": INT,
        "countParam": PARAM,
        "templateParams": MAP,
    },
    "updateAny": {
        "namespace": STR,
        "templatePath": PATH,
        "count": INT,
        "countParam": PARAM,
        "updatePerSecond": INT,
        "subresources": STRS,
    },
    "createPodGroups": {
        "namespace": STR,
        "templatePath": PATH,
        "templateParams": MAP,
        "count": INT,
        "countParam": PARAM,
    },
    "createResourceDriver": {
        "driverName": STR,
        "nodes": STR,
        "maxClaimsPerNode": INT,
        "maxClaimsPerNodeParam": PARAM,
    },
    "allocResourceClaims": {"namespace": STR},
}
"""Opcode to its fields (besides ``opcode``) and their kinds; ``createPodSets``'
``createPodsOp`` is a ``createPods`` op, decoded against that op's fields."""

UPSTREAM_ONLY_OPS = (
    "createResourceClaims",
    "startCollectingProfile",
    "stopCollectingProfile",
)
SELECTOR = {"name": STR, "labels": STRMAP, "dataBucket": STR, "expectLower": BOOL}
CASE_FIELDS: dict[str, Any] = {
    "name": STR,
    "featureGates": MAP,
    "metricsCollectorConfig": MAP,
    "workloadTemplate": None,
    "workloads": None,
    "schedulerConfigPath": PATH,
    "defaultPodTemplatePath": PATH,
    "labels": STRS,
    "defaultThresholdMetricSelector": SELECTOR,
}
WORKLOAD_FIELDS: dict[str, Any] = {
    "name": STR,
    "params": MAP,
    "labels": STRS,
    "threshold": None,
    "thresholdMetricSelector": SELECTOR,
    "featureGates": MAP,
}


def parse_duration(text: str) -> float:
    """Go's ``time.ParseDuration`` (``1h2m3.5s``, ``300ms``, ``1µs``) in seconds."""
    s = text.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    s = s[1:] if s[:1] in "+-" else s
    if s == "0":
        return 0.0
    total, pos = 0.0, 0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None:
            break
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if not s or pos < len(s):
        raise ValueError(f"time: invalid duration {text!r}")
    return sign * total


class Checker:
    """Collects problems while decoding one file."""

    def __init__(self, base_dir: str) -> None:
        self.base_dir = base_dir
        self.problems: list[tuple[str, str]] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append((path, message))

    def fields(
        self, obj: Any, path: str, schema: Mapping[str, Any], what: str, skip: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """Decode ``obj`` against ``schema``: unknown fields, types, paths, durations."""
        if not isinstance(obj, dict):
            self.add(path, f"{what} must be a mapping, got {type(obj).__name__}")
            return {}
        canonical = {k.lower(): k for k in schema}
        out: dict[str, Any] = {}
        for key, value in obj.items():
            name = canonical.get(str(key).lower())
            fpath = f"{path}.{key}"
            if name is None:
                if str(key) not in skip:
                    self.add(fpath, f'{what}: unknown field "{key}"')
                continue
            kind = schema[name]
            if kind is None:
                out[name] = value
            elif kind == UNSUPPORTED:
                self.add(fpath, f"{what}: {name} {UNSUPPORTED}")
            elif value is not None:
                decoded = self.value(value, kind, fpath, what)
                if decoded is not None:
                    out[name] = decoded
        return out

    def value(self, value: Any, kind: Any, path: str, what: str) -> Any:
        """One field's value checked against its kind (None after reporting a problem)."""
        if isinstance(kind, dict):
            return self.fields(value, path, kind, what)
        ok = {
            INT: isinstance(value, int) and not isinstance(value, bool),
            NUM: isinstance(value, int | float) and not isinstance(value, bool),
            BOOL: isinstance(value, bool),
            STR: isinstance(value, str),
            PARAM: isinstance(value, str),
            PATH: isinstance(value, str),
            DURATION: isinstance(value, str),
            MAP: isinstance(value, dict),
            STRS: isinstance(value, list) and all(isinstance(v, str) for v in value),
            PATHS: isinstance(value, list) and all(isinstance(v, str) for v in value),
            STRMAP: isinstance(value, dict)
            and all(isinstance(v, str | int | float | bool) for v in value.values()),
        }[kind]
        if not ok:
            self.add(path, f"{what}: must be {kind}, got {value!r}")
            return None
        if kind == PARAM and value and not value.startswith("$"):
            self.add(path, f'{what}: must start with "$" (a workload param), got {value!r}')
            return None
        if kind == PATH:
            return self.path(value, path, what)
        if kind == PATHS:
            return [self.path(v, f"{path}[{i}]", what) for i, v in enumerate(value)]
        if kind == STRMAP:
            return {str(k): str(v) for k, v in value.items()}
        if kind == DURATION:
            try:
                return parse_duration(value)
            except ValueError as err:
                self.add(path, f"{what}: {err}")
                return None
        return value

    def path(self, value: str, path: str, what: str) -> str:
        full = value if os.path.isabs(value) else os.path.join(self.base_dir, value)
        if not os.path.isfile(full):
            self.add(path, f"{what}: no such file {full}")
        return full
