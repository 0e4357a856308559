"""From task rows to the comparison: spread over seeds, the baseline, flags and the ranking.

Per variant and measure: the mean and sample standard deviation over seeds (``sd`` 0 for one
seed).  Every variant ran on the same inputs per seed, so ``podsSubmitted`` and the gang
count are the same denominators on every row (:func:`compare` checks it).

Ranking: a variant is *faster* when its mean ``podsPerSecond`` beats the baseline's (its
``predictedUpstreamPodsPerSecond`` when every variant has one: the scenario times attempts
with upstream's cost model, so the prediction, not our engine's speed, is the question); it is
*worse on placement* when any quality measure is worse than the baseline's by more than its
tolerance (:data:`QUALITY`, overridable per sweep).  A faster-but-worse variant is flagged and
ranked after every unflagged one, as is a variant whose invariants failed; within each group
variants are ordered by throughput.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kubesched.sweep.tasks import NONDETERMINISTIC

THROUGHPUT = "podsPerSecond"
PREDICTED = "predictedUpstreamPodsPerSecond"
QUALITY: dict[str, tuple[int, float]] = {
    "fragmentationPercent": (-1, 0.5),
    "idleWholeGpuNodes": (+1, 0.5),
    "podsScheduled": (+1, 0.0),
    "successRatio": (+1, 0.01),
    "gangsComplete": (+1, 0.0),
    "gangTtcP50": (-1, 0.5),
    "preemptionVictims": (-1, 0.0),
}
"""Placement-quality measures: direction (+1 higher is better) and default tolerance."""
SPEED = (
    "podsPerSecond",
    "podsPerSimSecond",
    "predictedUpstreamPodsPerSecond",
    "queueP50",
    "queueP99",
)
NUMERIC = (
    "podsSubmitted", "podsScheduled", "podsPending", "successRatio", "podsPerSecond",
    "podsPerSimSecond", "predictedUpstreamPodsPerSecond", "queueP50", "queueP99",
    "fragmentationPercent", "idleWholeGpuNodes", "gangs", "gangsComplete", "gangTtcP50",
    "gangTtcMax", "preemptionAttempts", "preemptionVictims", "wallSeconds",
)  # fmt: skip


def fingerprint(row: Mapping[str, Any]) -> str:
    """A digest of a row's deterministic measures (equal rows, equal digests)."""
    keep = {k: v for k, v in sorted(row.items()) if k not in NONDETERMINISTIC}
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]


def _spread(values: Sequence[Any]) -> dict[str, Any]:
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return {"mean": None, "sd": None, "n": 0}
    sd = float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0
    return {"mean": round(float(np.mean(vals)), 4), "sd": round(sd, 4), "n": len(vals)}


def summarize_variant(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and sd over seeds of every numeric measure, attempts by result, invariants."""
    out: dict[str, Any] = {m: _spread([r.get(m) for r in rows]) for m in NUMERIC}
    for result in ("scheduled", "unschedulable", "error"):
        out[f"attempts.{result}"] = _spread([(r.get("attempts") or {}).get(result) for r in rows])
    out["invariantsHold"] = all(r.get("invariantsHold", True) for r in rows)
    out["fragmentationResource"] = next(
        (r["fragmentationResource"] for r in rows if r.get("fragmentationResource")), None
    )
    return out


def _worse(
    measure: str, v: dict[str, Any], b: dict[str, Any], tolerance: Mapping[str, float]
) -> str | None:
    direction, default = QUALITY[measure]
    tol = tolerance.get(measure, default)
    vm, bm = v[measure]["mean"], b[measure]["mean"]
    if vm is None or bm is None:
        return None
    delta = (vm - bm) * direction
    if delta < -tol - 1e-9:
        return f"{measure} {vm:g} vs {bm:g}"
    return None


def compare(
    rows: list[dict[str, Any]],
    variants: Sequence[str],
    baseline: str,
    tolerance: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The comparison of a finished sweep: per variant its spread, flags and rank."""
    tolerance = tolerance or {}
    by: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    skipped: dict[str, str] = {}
    for r in sorted(rows, key=lambda r: r["index"]):
        if r.get("skipped"):
            skipped[r["variant"]] = r["skipped"]
        else:
            by[r["variant"]].append(r)
    stats = {v: summarize_variant(rs) for v, rs in by.items() if rs}
    predicted = bool(stats) and all(s[PREDICTED]["mean"] is not None for s in stats.values())
    speed = PREDICTED if predicted else THROUGHPUT
    base = stats.get(baseline)
    out: dict[str, Any] = {}
    for v in variants:
        if v not in stats:
            out[v] = {"skipped": skipped.get(v, "no result"), "flags": [], "rank": None}
            continue
        s = stats[v]
        flags: list[str] = []
        if not s["invariantsHold"]:
            flags.append("invariants violated")
        faster = False
        if base is not None and v != baseline:
            worse = [w for m in QUALITY if (w := _worse(m, s, base, tolerance)) is not None]
            tv, tb = s[speed]["mean"], base[speed]["mean"]
            faster = tv is not None and tb is not None and tv > tb
            if worse and faster:
                flags.append("faster but worse placement: " + "; ".join(worse))
            elif worse:
                flags.append("worse placement: " + "; ".join(worse))
        out[v] = {**s, "flags": flags, "faster": faster, "baseline": v == baseline}
    ranked = sorted(
        (v for v in variants if v in stats),
        key=lambda v: (bool(out[v]["flags"]), -(out[v][speed]["mean"] or 0.0), v),
    )
    for i, v in enumerate(ranked, 1):
        out[v]["rank"] = i
    return {
        "variants": out,
        "ranking": ranked,
        "denominators": _denominators(by),
        "fingerprints": {str(r["index"]): fingerprint(r) for r in rows if not r.get("skipped")},
    }


def _denominators(by: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Pods submitted and gangs per seed, and whether every variant had the same."""
    per_seed: dict[int, set[tuple[Any, Any]]] = {}
    for rs in by.values():
        for r in rs:
            per_seed.setdefault(r["seed"], set()).add((r.get("podsSubmitted"), r.get("gangs")))
    same = all(len(v) == 1 for v in per_seed.values())
    pods = {str(s): sorted(v, key=str)[0][0] for s, v in per_seed.items()}
    gangs = {str(s): sorted(v, key=str)[0][1] for s, v in per_seed.items()}
    return {"podsSubmittedPerSeed": pods, "gangsPerSeed": gangs, "sameForEveryVariant": same}
