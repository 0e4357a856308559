"""The schema of a saved run (``simulate --json-out``), checked before a report is drawn.

``kubesched report RUN.json`` draws a file that may have been edited by hand.  Every field
the report reads is described here (JSON Schema draft 2020-12, checked by the ``jsonschema``
library): its type, whether it may be null, and for maps of names (plugins, resources,
namespaces) the shape of each value.  Fields the report does not read may be anything, and
new fields are allowed, so a file written by a newer kubesched still draws.  One rule JSON
Schema cannot say is checked beside it: every series of the timeline has one value per time
in ``timeline.t``.  A violation is an :class:`~kubesched.api.errors.InputError` naming the
field (``latency.attemptSeconds.scheduled.p99: 'x' is not of type 'number', 'null'``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema

from kubesched.api.errors import InputError
from kubesched.api.fields import join

_INT: dict[str, Any] = {"type": "integer", "minimum": 0}
_NUM: dict[str, Any] = {"type": "number"}
_NUM_OR_NULL: dict[str, Any] = {"type": ["number", "null"]}
_STR: dict[str, Any] = {"type": "string"}


def _obj(props: Mapping[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": dict(props), "required": list(required)}


def _map(value: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": dict(value)}


def _list(item: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": dict(item)}


_QUANTILES = _obj({"pods": _INT, "p50": _NUM_OR_NULL, "p99": _NUM_OR_NULL, "max": _NUM_OR_NULL})
_HISTOGRAM = _obj({"count": _NUM, "p50": _NUM_OR_NULL, "p99": _NUM_OR_NULL})
_SERIES = _list(_NUM)
_SERIES_OR_NULL = _list(_NUM_OR_NULL)

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "kubesched simulate --json-out",
    **_obj(
        {
            "scenario": _STR,
            "seed": {"type": "integer"},
            "kubernetesVersion": _STR,
            "nodes": _INT,
            "podsSubmitted": _INT,
            "podsForOtherSchedulers": _INT,
            "mostRetried": _list(
                _obj(
                    {"pod": _STR, "failedAttempts": _INT, "bound": {"type": "boolean"}},
                    required=("pod", "failedAttempts", "bound"),
                )
            ),
            "podsScheduled": _INT,
            "podsPending": _INT,
            "attempts": _map(_INT),
            "successRatio": _NUM_OR_NULL,
            "virtualSeconds": _NUM,
            "scheduledPodsPerVirtualSecond": _NUM_OR_NULL,
            "wallSeconds": _NUM,
            "schedulerWallSeconds": _NUM,
            "attemptsPerWallSecond": _NUM_OR_NULL,
            "queueingSeconds": _QUANTILES,
            "queueingSecondsAllSubmitted": _QUANTILES,
            "preemptionLatencySeconds": _obj(
                {"preemptors": _INT, "bound": _INT, "p50": _NUM_OR_NULL, "p99": _NUM_OR_NULL}
            ),
            "podStartupSeconds": _map(_QUANTILES),
            "pendingPods": _map(_INT),
            "utilization": _map(_NUM),
            "invariants": _map({"type": "array"}),
            "config": {"type": "object"},
            "waiting": _obj(
                {
                    "count": _INT,
                    "byReason": _map(_INT),
                    "agesSeconds": _SERIES,
                    "oldest": {"type": ["object", "null"]},
                    "volumes": _list(
                        _obj(
                            {"pod": _STR, "message": _STR, "claims": {"type": "array"}},
                            required=("pod", "claims"),
                        )
                    ),
                    "capacity": _list(
                        _obj(
                            {
                                "pod": _STR,
                                "message": _STR,
                                "capacity": _obj(
                                    {"verdict": _STR, "eligibleNodes": _INT, "message": _STR},
                                    required=("verdict", "eligibleNodes", "message"),
                                ),
                            },
                            required=("capacity",),
                        )
                    ),
                }
            ),
            "latency": _obj(
                {
                    "attemptSeconds": _map(_HISTOGRAM),
                    "extensionPointSeconds": _map(_HISTOGRAM),
                    "pluginSeconds": _map(_HISTOGRAM),
                    "sliSeconds": _map(_HISTOGRAM),
                }
            ),
            "timeline": _obj(
                {
                    "interval": _NUM,
                    "pace": _NUM_OR_NULL,
                    "t": _SERIES,
                    "pending": _map(_SERIES),
                    "attempts": _map(_SERIES),
                    "created": _SERIES,
                    "bound": _SERIES,
                    "running": _SERIES,
                    "utilization": _map(_SERIES),
                    "fragmentation": _map(_SERIES),
                    "idleGpuNodes": _SERIES,
                    "gpu": _map(_SERIES_OR_NULL),
                }
            ),
            "workloads": _map({"type": "object"}),
            "clusterQueues": _map({"type": "object"}),
            "gangs": {"type": "object"},
            "podGroups": {"type": "object"},
            "gangCompletion": {"type": "object"},
            "gangPathComparison": _obj({"runs": _map({"type": "object"})}, ["runs"]),
            "quotas": _map({"type": "object"}),
            "namespaces": _map(
                _obj(
                    {
                        "pods": _INT,
                        "bound": _INT,
                        "attempts": _INT,
                        "failedAttempts": _INT,
                        "successRatio": _NUM_OR_NULL,
                        "queueingSeconds": _QUANTILES,
                    }
                )
            ),
            "retryWaited": _map(_QUANTILES),
        },
        required=("podsSubmitted",),
    ),
}
"""The saved run, as far as the report reads it."""

_VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
_MAX_PROBLEMS = 20


def _path(parts: Sequence[str | int]) -> str:
    return functools.reduce(join, parts, "")


def _series(timeline: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Every series of the timeline, with its field path."""
    out: list[tuple[str, Any]] = []
    for key, value in timeline.items():
        if key in ("t", "interval", "pace"):
            continue
        if isinstance(value, list):
            out.append((f"timeline.{key}", value))
        elif isinstance(value, Mapping):
            out.extend((f"timeline.{key}.{k}", v) for k, v in value.items())
    return out


def check_results(data: object, file: str | None = None) -> dict[str, Any]:
    """``data`` if it is a saved run the report can draw, else an :class:`InputError` naming
    each field that is not (at most twenty), and the file."""
    if not isinstance(data, dict) or "podsSubmitted" not in data:
        raise InputError([("", "not a run summary (simulate --json-out)")], file=file)
    errors = sorted(_VALIDATOR.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    problems = [(_path(list(e.absolute_path)), e.message) for e in errors[:_MAX_PROBLEMS]]
    timeline = data.get("timeline")
    if not problems and isinstance(timeline, Mapping):
        length = len(timeline.get("t") or [])
        for path, values in _series(timeline):
            if len(values) != length:
                problems.append((path, f"has {len(values)} values for {length} times (timeline.t)"))
    if problems:
        raise InputError(problems, file=file)
    return data
