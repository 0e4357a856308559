"""Pod startup in four segments: the node side's latency model and the split of a run.

"Why did my Pod take 40 s to be Ready?" has an answer in four parts, each ending at a
timestamp the Pod itself carries:

====================  =========================================  ==========================
segment               from -> to                                 what it is
====================  =========================================  ==========================
``admission``         created -> ungated (schedulingGates empty)  admission, quota, gates
``scheduling``        ungated -> scheduled (the cycle chose a     the queue and every
                      node, Permit passed)                        scheduling attempt
``binding``           scheduled -> bound (PodScheduled=True)      binding cycle (PreBind's
                                                                  wait for volume binding
                                                                  and provisioning), API
``node``              bound -> Ready                              image pull, volumes,
                                                                  devices, probes
====================  =========================================  ==========================

``total`` is created -> Ready.  The scheduler can shorten ``scheduling`` and ``binding``
(and ``admission`` only through the admission it runs); ``node`` is the kubelet's.

The node side is modelled by a per-workload latency distribution (the scenario's
``nodeStartupSeconds``, :func:`parse_latency`): a Pod becomes Ready that long after its
bind, unless it is deleted or finishes first.  The draws come from their own random stream
(the seed and :data:`STREAM`), so the latency model never changes a placement.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api.errors import InputError

SEGMENTS = ("admission", "scheduling", "binding", "node")
"""The four segments, in order; with ``total`` they are the summary's keys."""
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "constant": ("seconds",),
    "exponential": ("meanSeconds",),
    "uniform": ("minSeconds", "maxSeconds"),
    "lognormal": ("medianSeconds", "p99Seconds"),
}
"""``distribution`` -> its required parameters (all in seconds)."""
MAX_SECONDS = 86400.0
"""No parameter may exceed a day (a typo, not a startup)."""
STREAM = 0x57A7
"""Mixed with the scenario seed for the startup draws' own generator."""
Z99 = 2.3263478740408408
"""The standard normal's 99th percentile (lognormal ``p99Seconds`` to sigma)."""


@dataclass(frozen=True, slots=True)
class Latency:
    """A startup latency distribution: ``kind`` and its parameters in seconds."""

    kind: str
    params: tuple[float, ...]

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray[Any, np.dtype[np.float64]]:
        """``n`` latencies in seconds, shape ``(n,)``, float64, all >= 0."""
        p = self.params
        if self.kind == "constant":
            return np.full(n, p[0], dtype=np.float64)
        if self.kind == "exponential":
            return rng.exponential(p[0], size=n)
        if self.kind == "uniform":
            return rng.uniform(p[0], p[1], size=n)
        sigma = math.log(p[1] / p[0]) / Z99
        return rng.lognormal(math.log(p[0]), sigma, size=n)


DEFAULT = Latency("lognormal", (1.0, 5.0))
"""Without ``nodeStartupSeconds``: median 1 s, p99 5 s (a cached image, no volumes)."""


def parse_latency(value: Any, path: str) -> Latency:
    """``nodeStartupSeconds``: a number (constant seconds) or a map ``{distribution: constant
    | exponential | uniform | lognormal, <its parameters>}`` (see :data:`DISTRIBUTIONS`);
    :class:`InputError` naming ``path`` and the field otherwise."""
    if value is None:
        return DEFAULT
    if _number(value):
        return Latency("constant", (_seconds(value, path),))
    if not isinstance(value, Mapping):
        raise InputError([(path, f"must be a number of seconds or a map, got {value!r}")])
    kind = value.get("distribution")
    if not isinstance(kind, str) or kind not in DISTRIBUTIONS:
        choices = ", ".join(DISTRIBUTIONS)
        raise InputError([(f"{path}.distribution", f"must be one of {choices}, got {kind!r}")])
    names = DISTRIBUTIONS[kind]
    for key in value:
        if key != "distribution" and key not in names:
            raise InputError([(f"{path}.{key}", f"unknown field for distribution {kind}")])
    params = []
    for name in names:
        if name not in value:
            raise InputError([(f"{path}.{name}", "required field is missing")])
        params.append(_seconds(value[name], f"{path}.{name}"))
    if kind == "exponential" and params[0] <= 0:
        raise InputError([(f"{path}.meanSeconds", "must be positive")])
    if kind == "uniform" and params[1] < params[0]:
        raise InputError([(f"{path}.maxSeconds", "must be at least minSeconds")])
    if kind == "lognormal":
        if params[0] <= 0:
            raise InputError([(f"{path}.medianSeconds", "must be positive")])
        if params[1] < params[0]:
            raise InputError([(f"{path}.p99Seconds", "must be at least medianSeconds")])
        if params[1] == params[0]:  # no spread: a constant
            return Latency("constant", (params[0],))
    return Latency(kind, tuple(params))


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _seconds(v: Any, path: str) -> float:
    if not _number(v):
        raise InputError([(path, f"must be a number of seconds, got {v!r}")])
    f = float(v)
    if not math.isfinite(f) or f < 0:
        raise InputError([(path, f"must be a finite number of seconds >= 0, got {v!r}")])
    if f > MAX_SECONDS:
        raise InputError([(path, f"must be at most {MAX_SECONDS:g} seconds, got {v!r}")])
    return f


def rng_for(seed: int) -> np.random.Generator:
    """The startup draws' generator for a scenario seed (independent of placements)."""
    return np.random.default_rng([STREAM, abs(int(seed))])


@dataclass(slots=True)
class Timestamps:
    """Per Pod key, the virtual time each segment ended (what the Pod's status would say)."""

    created: Mapping[str, float]
    ungated: Mapping[str, float]
    scheduled: Mapping[str, float]
    bound: Mapping[str, float]
    ready: Mapping[str, float]


def segments(ts: Timestamps) -> dict[str, dict[str, Any]]:
    """Per segment and ``total``: ``pods`` that completed it and p50 / p99 seconds (None
    without any).  A Pod counts in a segment when both of its ends are known and in order
    after the Pod's creation (a Pod recreated under the same name starts afresh)."""
    bounds = (ts.created, ts.ungated, ts.scheduled, ts.bound, ts.ready)
    spans: dict[str, list[float]] = {name: [] for name in (*SEGMENTS, "total")}
    for key, created in ts.created.items():
        points = [m.get(key) for m in bounds]
        for i, name in enumerate(SEGMENTS):
            start, end = points[i], points[i + 1]
            if start is not None and end is not None and created <= start <= end:
                spans[name].append(end - start)
        ready = points[-1]
        if ready is not None and ready >= created:
            spans["total"].append(ready - created)
    return {name: summarize(values) for name, values in spans.items()}


def summarize(values: list[float]) -> dict[str, Any]:
    """``{"pods", "p50", "p99"}`` of durations in seconds (rounded to 0.1 ms)."""
    if not values:
        return {"pods": 0, "p50": None, "p99": None}
    arr = np.asarray(values, dtype=np.float64)
    p50, p99 = (round(float(np.percentile(arr, q)), 4) for q in (50, 99))
    return {"pods": len(values), "p50": p50, "p99": p99}
