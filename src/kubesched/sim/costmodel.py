"""Upstream kube-scheduler's speed as a cost model, calibrated against the real scheduler.

The simulator can charge each scheduling attempt what upstream's kube-scheduler v1.34 would
take for it on a measured machine, instead of the constant ``timing.cycleSeconds``. The model
(``docs/tuning.md`` derives it and gives its error) is, in seconds of one attempt::

    fixed + ( F * (filter.default + sum filter.P)
            + S * (score.default  + sum score.P)
            + N * (allNodes.default + sum allNodes.P)
            + D * preemption.dryRunNode ) * (s + (1 - s) / min(parallelism, cores))
          + N * sum oversubscribed.P * max(0, parallelism - cores)
          + preemption.fixed * [the attempt ran preemption]
          + apiSecondsPerPod * [the attempt found a node]

where ``F`` is the number of nodes filtered (upstream stops once ``numFeasibleNodesToFind``
nodes passed), ``S`` the number scored (none when one node passed), ``N`` every node of the
cluster (the search's per-node slices; PreFilter/PreScore of InterPodAffinity and
PodTopologySpread visit them all), ``D`` the nodes DefaultPreemption's dry run visited, ``P``
each costly plugin that had work for the Pod (``InterPodAffinity``, ``PodTopologySpread``)
and ``s`` the serial fraction (``serialFraction``: the part of the per-node work that two
cores do not share; upstream's ``Parallelizer`` gains little from a second core); the
``oversubscribed.P`` term is what each worker beyond the cores adds per node to the
whole-cluster passes of InterPodAffinity and PodTopologySpread (their goroutines contend
for shared counters: with 16 workers on 2 cores the spread mix measured ~70 % slower than
with 2). The
attempt after a preemption filters the nominated node alone (``F`` = 1). Binds go through
the client's token bucket (``clientQPS``/``clientBurst``, ``requestsPerBind`` requests each)
and take ``requestLatencySeconds``; ``apiSecondsPerPod`` is the API server's work per Pod on
the same cores, and ``apiSecondsPerCreate`` its work per Pod created, which delays the
scheduling loop when a Pod arrives (the simulator's driver charges it).

A calibration file (YAML, written by ``kubesched calibrate``, :mod:`kubesched.bench.calibrate`)
holds the machine, the versions, the coefficients and the fit's error; one ships with the
package (``sim/calibration/default.yaml``). This module reads and writes it and evaluates the
model, and fits it (:func:`fit`): least squares on *relative* error (each row divided by its
measurement), since the goal is a bounded percentage error from 0.1 ms attempts to 100 ms
ones; coefficients are kept non-negative (a cost cannot be negative) by refitting without the
ones that come out below zero until none does. Columns no measured point exercises are not
fitted: they keep the value of ``fallback`` (the shipped calibration) and are listed as such.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np
import yaml

from kubesched.api.errors import InputError
from kubesched.api.source import load_text, read_text
from kubesched.config import names
from kubesched.scheduler.types import AttemptWork

KIND = "UpstreamCostCalibration"
API_VERSION = "kubesched.io/v1alpha1"
COSTLY_PLUGINS = (names.INTER_POD_AFFINITY, names.POD_TOPOLOGY_SPREAD)
COEFFICIENTS = (
    "fixed",
    "filter.default",
    "score.default",
    "allNodes.default",
    "filter.InterPodAffinity",
    "score.InterPodAffinity",
    "allNodes.InterPodAffinity",
    "filter.PodTopologySpread",
    "score.PodTopologySpread",
    "allNodes.PodTopologySpread",
    "preemption.fixed",
    "preemption.dryRunNode",
    "oversubscribed.InterPodAffinity",
    "oversubscribed.PodTopologySpread",
)
"""Names of the attempt coefficients (seconds; per node where the name says so), in the
order of :func:`features`' columns."""
OPTIONAL = ("oversubscribed.InterPodAffinity", "oversubscribed.PodTopologySpread")
"""Coefficients a calibration file may leave out (0: files written before they existed)."""
SERIAL = "serialFraction"
"""The attempt parameter that is not a cost: the fraction of per-node work that does not
spread over the workers (:func:`divisor`), fitted by :func:`fit` between 0 and 1."""
SERIAL_GRID = np.linspace(0.0, 1.0, 101)
"""The serial fractions :func:`fit` tries."""

BINDING_DEFAULTS: dict[str, float] = {
    "clientQPS": 50.0,
    "clientBurst": 100.0,
    "requestLatencySeconds": 0.005,
    "requestsPerBind": 1.0,
    "apiSecondsPerPod": 0.0,
    "apiSecondsPerCreate": 0.0,
}
"""kube-scheduler's client defaults (KubeSchedulerConfiguration ``clientConnection``: qps 50,
burst 100); one bind is one request (the binding subresource); the latency a placeholder and
no API server work per Pod until ``kubesched calibrate --binding`` measures them
(:mod:`kubesched.bench.calibbind`)."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """The work of one scheduling attempt, as the model counts it."""

    nodes: int
    """N: every node of the cluster."""
    filtered: float
    """F: nodes that ran Filter."""
    scored: float
    """S: nodes that ran Score (0 when at most one node passed)."""
    plugins: frozenset[str] = frozenset()
    """Costly plugins with work for this Pod (of :data:`COSTLY_PLUGINS`)."""
    dry_run_nodes: float = 0.0
    """D: nodes DefaultPreemption's dry run visited."""
    preempted: bool = False
    """Whether PostFilter ran preemption."""


PREEMPTION_CANDIDATES = (10, 100)
"""DefaultPreemption's defaults: minCandidateNodesPercentage, minCandidateNodesAbsolute."""


def dry_run_nodes(nodes: int, busy: int = 0) -> float:
    """Nodes DefaultPreemption's dry run visits: ``calculateNumCandidates`` (10 % of the
    nodes, at least 100, at most all), more when ``busy`` nodes yield no candidate."""
    pct, least = PREEMPTION_CANDIDATES
    candidates = min(nodes, max(nodes * pct // 100, least))
    return float(min(nodes, candidates * nodes / max(1, nodes - busy)))


def divisor(parallelism: int, cores: int, serial: float) -> float:
    """What one second of per-node work costs with ``parallelism`` workers on ``cores``:
    ``serial + (1 - serial) / min(parallelism, cores)`` (Amdahl's law: the ``serial``
    fraction of the work does not spread over the workers)."""
    w = float(max(1, min(parallelism, cores)))
    return serial + (1.0 - serial) / w


def features(
    attempts: Iterable[Attempt], parallelism: Iterable[int], cores: int, serial: float = 0.0
) -> np.ndarray:
    """The model's design matrix: float64 ``[A, len(COEFFICIENTS)]``, one row per attempt,
    each column the work that multiplies one coefficient (per-node work already multiplied
    by :func:`divisor`)."""
    rows = []
    for a, par in zip(attempts, parallelism, strict=True):
        d = divisor(par, cores, serial)
        row = [1.0, a.filtered * d, a.scored * d, a.nodes * d]
        for plugin in COSTLY_PLUGINS:
            on = d if plugin in a.plugins else 0.0
            row += [on * a.filtered, on * a.scored, on * a.nodes]
        row += [1.0 if a.preempted else 0.0, a.dry_run_nodes * d]
        extra = float(max(0, par - cores))
        row += [a.nodes * extra if p in a.plugins else 0.0 for p in COSTLY_PLUGINS]
        rows.append(row)
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(COEFFICIENTS))


@dataclass(slots=True)
class CostModel:
    """A calibration: attempt coefficients, binding parameters and where they came from."""

    coefficients: dict[str, float]
    binding: dict[str, float] = field(default_factory=lambda: dict(BINDING_DEFAULTS))
    cores: int = 2
    serial: float = 0.0
    """:data:`SERIAL`: the fraction of per-node work that does not spread over the workers."""
    document: dict[str, Any] = field(default_factory=dict)
    """The whole calibration file as read (machine, versions, fit), for reports."""

    def attempt_seconds(self, attempt: Attempt, parallelism: int) -> float:
        """Predicted seconds of one upstream scheduling attempt."""
        row = features([attempt], [parallelism], self.cores, self.serial)[0]
        return float(sum(self.coefficients[c] * x for c, x in zip(COEFFICIENTS, row, strict=True)))

    def seconds_of(self, work: AttemptWork, parallelism: int) -> float:
        """Predicted seconds of the attempt the scheduler recorded as ``work``, and when it
        found a node, the API server's work for that Pod on the same cores
        (``binding.apiSecondsPerPod``)."""
        dry = dry_run_nodes(work.nodes) if work.preempted else 0.0
        attempt = Attempt(work.nodes, work.filtered, work.scored, work.plugins, dry, work.preempted)
        api = self.binding.get("apiSecondsPerPod", 0.0) if work.bound else 0.0
        return self.attempt_seconds(attempt, parallelism) + api

    def throughput(self, attempt_seconds: float) -> float:
        """Predicted Pods/s of a steady stream whose attempts take ``attempt_seconds``: the
        scheduling loop is serial (each Pod also costs ``apiSecondsPerPod`` of the API
        server's work on the same cores) and binds overlap it, so the slower of the loop and
        the client's token bucket sets the pace."""
        per_pod = attempt_seconds + self.binding.get("apiSecondsPerPod", 0.0)
        loop = 1.0 / per_pod if per_pod > 0 else float("inf")
        qps = self.binding["clientQPS"] / self.binding["requestsPerBind"]
        return min(loop, qps) if qps > 0 else loop


def default_calibration_text() -> str:
    """The calibration shipped with the package."""
    return resources.files("kubesched.sim").joinpath("calibration/default.yaml").read_text()


def load_calibration(path: str | None) -> CostModel:
    """Reads a calibration file (None: the shipped default); errors name the file and field."""
    if path is None:
        return parse_calibration(yaml.safe_load(default_calibration_text()), "<default>")
    docs = load_text(read_text(path), path)
    if len(docs) != 1:
        raise InputError(f"{path}: want one calibration document, got {len(docs)}")
    return parse_calibration(docs[0], path)


def parse_calibration(doc: Any, source: str) -> CostModel:
    """A calibration document as :class:`CostModel`, checked field by field."""
    if not isinstance(doc, Mapping):
        raise InputError("a calibration must be a mapping", file=source)
    if doc.get("kind") != KIND:
        raise InputError([("kind", f"want {KIND}, got {doc.get('kind')!r}")], file=source)
    attempt = _mapping(doc, "attempt", source)
    unknown = sorted(set(attempt) - {*COEFFICIENTS, SERIAL})
    if unknown:
        raise InputError([(f"attempt.{unknown[0]}", "unknown coefficient")], file=source)
    coefficients = {
        c: _number(attempt, c, "attempt", source)
        for c in COEFFICIENTS
        if c in attempt or c not in OPTIONAL
    }
    coefficients.update({c: 0.0 for c in OPTIONAL if c not in coefficients})
    serial = _number(attempt, SERIAL, "attempt", source) if SERIAL in attempt else 0.0
    if serial > 1:
        raise InputError([(f"attempt.{SERIAL}", f"want 0 to 1, got {serial!r}")], file=source)
    binding = dict(BINDING_DEFAULTS)
    if doc.get("binding") is not None:
        b = _mapping(doc, "binding", source)
        binding.update({k: _number(b, k, "binding", source) for k in BINDING_DEFAULTS if k in b})
    if binding["requestsPerBind"] <= 0:
        raise InputError([("binding.requestsPerBind", "must be positive")], file=source)
    machine = doc.get("machine") or {}
    cores = machine.get("cores", 2) if isinstance(machine, Mapping) else 2
    if not isinstance(cores, int) or isinstance(cores, bool) or cores < 1:
        raise InputError(
            [("machine.cores", f"want a positive integer, got {cores!r}")], file=source
        )
    return CostModel(coefficients, binding, cores, serial, dict(doc))


def _mapping(doc: Mapping[str, Any], key: str, source: str) -> Mapping[str, Any]:
    value = doc.get(key)
    if not isinstance(value, Mapping):
        raise InputError([(key, f"want a mapping, got {value!r}")], file=source)
    return value


def _number(m: Mapping[str, Any], key: str, parent: str, source: str) -> float:
    path = f"{parent}.{key}"
    if key not in m:
        raise InputError([(path, "required")], file=source)
    v = m[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < float("inf"):
        raise InputError([(path, f"want a finite number >= 0, got {v!r}")], file=source)
    return float(v)


def dump_calibration(doc: Mapping[str, Any]) -> str:
    """A calibration document as YAML, keys in the order given."""
    return yaml.safe_dump(dict(doc), sort_keys=False, default_flow_style=None, width=100)


@dataclass(frozen=True, slots=True)
class Fit:
    """A fit's coefficients, serial fraction and which of them the data determined."""

    coefficients: dict[str, float]
    fitted: tuple[str, ...]
    """Coefficients the measurements determined (the others came from the fallback);
    :data:`SERIAL` among them when both one worker and several were measured."""
    serial: float = 0.0


def fit(
    attempts: Sequence[Attempt],
    parallelism: Sequence[int],
    cores: int,
    y: np.ndarray,
    fallback: Mapping[str, float] | None = None,
) -> Fit:
    """Coefficients and serial fraction minimising the relative error of the model of
    ``attempts`` (run with ``parallelism`` workers on ``cores``) against ``y``, float64
    ``[P]`` measured seconds, all positive.

    For each serial fraction of :data:`SERIAL_GRID` the coefficients come from
    :func:`fit_linear`; the fraction with the smallest sum of squared relative errors wins.
    When every point ran with the same number of effective workers the fraction cannot be
    told from the costs: the fallback's (else 0) is kept.
    """
    base = dict(fallback or {})
    workers = {max(1, min(p, cores)) for p in parallelism}
    grid = SERIAL_GRID if len(workers) > 1 else np.array([base.get(SERIAL, 0.0)])
    best: tuple[float, Fit] | None = None
    for serial in grid:
        x = features(attempts, parallelism, cores, float(serial))
        got = fit_linear(x, y, base)
        err = float(np.sum(((predict(x, got.coefficients) - y) / y) ** 2))
        if best is None or err < best[0]:
            fitted = got.fitted + ((SERIAL,) if len(workers) > 1 else ())
            best = (err, Fit(got.coefficients, fitted, float(serial)))
    assert best is not None
    return best[1]


def fit_linear(x: np.ndarray, y: np.ndarray, fallback: Mapping[str, float] | None = None) -> Fit:
    """Coefficients minimising the relative error of ``x @ c`` against ``y``.

    ``x``: float64 ``[P, len(COEFFICIENTS)]`` (:func:`~kubesched.sim.costmodel.features`);
    ``y``: float64 ``[P]`` measured seconds, all positive.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or x.shape != (len(y), len(COEFFICIENTS)):
        raise ValueError(f"x is {x.shape}, want ({len(y)}, {len(COEFFICIENTS)})")
    if len(y) == 0 or not np.all(y > 0):
        raise ValueError("measurements must be positive")
    base = dict(fallback or {})
    active = [j for j in range(x.shape[1]) if np.any(x[:, j] != 0)]
    fixed_cols = [j for j in range(x.shape[1]) if j not in active]
    # What the unfitted columns predict is taken off the target first.
    rest = np.zeros(len(y))
    for j in fixed_cols:
        rest += x[:, j] * base.get(COEFFICIENTS[j], 0.0)
    a = x / y[:, None]
    b = (y - rest) / y
    coef = np.zeros(x.shape[1])
    while active:
        sol, *_ = np.linalg.lstsq(a[:, active], b, rcond=None)
        if np.all(sol >= 0):
            coef[active] = sol
            break
        active = [j for j, v in zip(active, sol, strict=True) if v > 0]
    out = {
        name: float(coef[j]) if np.any(x[:, j] != 0) else float(base.get(name, 0.0))
        for j, name in enumerate(COEFFICIENTS)
    }
    fitted = tuple(COEFFICIENTS[j] for j in range(x.shape[1]) if np.any(x[:, j] != 0))
    return Fit(out, fitted)


def predict(x: np.ndarray, coefficients: Mapping[str, float]) -> np.ndarray:
    """Predicted seconds, float64 ``[P]``, for design matrix ``x`` ``[P, C]``."""
    c = np.array([coefficients[name] for name in COEFFICIENTS], dtype=np.float64)
    result: np.ndarray = np.asarray(x, dtype=np.float64) @ c
    return result


def errors_percent(
    predicted: Sequence[float] | np.ndarray, measured: Sequence[float] | np.ndarray
) -> np.ndarray:
    """Signed error of each prediction in percent of its measurement, float64 ``[P]``."""
    p = np.asarray(predicted, dtype=np.float64)
    m = np.asarray(measured, dtype=np.float64)
    result: np.ndarray = (p - m) / m * 100.0
    return result


def summary(errors: np.ndarray) -> dict[str, float]:
    """Median and worst absolute error (percent) of ``errors`` ``[P]``; zeros when empty."""
    if len(errors) == 0:
        return {"medianAbsErrorPercent": 0.0, "maxAbsErrorPercent": 0.0}
    e = np.abs(errors)
    return {
        "medianAbsErrorPercent": round(float(np.median(e)), 1),
        "maxAbsErrorPercent": round(float(np.max(e)), 1),
    }
