"""The comparison: spread over seeds, flags for faster-but-worse, ranking, denominators."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.sweep.aggregate import compare, fingerprint


def row(i: int, variant: str, seed: int, **m: Any) -> dict[str, Any]:
    base = {
        "index": i, "variant": variant, "seed": seed, "podsSubmitted": 100, "gangs": 4,
        "podsScheduled": 100, "podsPerSecond": 1000.0, "fragmentationPercent": 20.0,
        "idleWholeGpuNodes": 10.0, "successRatio": 1.0, "gangsComplete": 4, "gangTtcP50": 1.0,
        "preemptionVictims": 0, "attempts": {"scheduled": 100, "unschedulable": 0, "error": 0},
        "invariantsHold": True, "wallSeconds": 1.0,
    }  # fmt: skip
    return {**base, **m}


def sweep(**variants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows, i = [], 0
    for name, per_seed in variants.items():
        for seed, m in enumerate(per_seed, 1):
            rows.append(row(i, name, seed, **m))
            i += 1
    return rows


def test_spread_over_seeds() -> None:
    rows = sweep(base=[{"podsPerSecond": 900.0}, {"podsPerSecond": 1100.0}])
    v = compare(rows, ["base"], "base")["variants"]["base"]
    assert v["podsPerSecond"] == {"mean": 1000.0, "sd": pytest.approx(141.4214), "n": 2}
    assert v["attempts.scheduled"]["mean"] == 100


def test_faster_but_worse_is_flagged_and_ranked_after_slower_good_ones() -> None:
    rows = sweep(
        base=[{}, {}],
        fast_bad=[{"podsPerSecond": 3000.0, "fragmentationPercent": 30.0}] * 2,
        fast_good=[{"podsPerSecond": 2000.0}] * 2,
        slow=[{"podsPerSecond": 500.0}] * 2,
    )
    out = compare(rows, ["base", "fast_bad", "fast_good", "slow"], "base")
    assert out["ranking"] == ["fast_good", "base", "slow", "fast_bad"]
    flags = out["variants"]["fast_bad"]["flags"]
    assert flags == ["faster but worse placement: fragmentationPercent 30 vs 20"]
    assert out["variants"]["fast_good"]["flags"] == []


@pytest.mark.parametrize(
    ("measure", "value", "flagged"),
    [
        ("fragmentationPercent", 20.4, False),  # within the 0.5 point tolerance
        ("fragmentationPercent", 20.6, True),
        ("idleWholeGpuNodes", 9.0, True),
        ("podsScheduled", 99, True),
        ("gangsComplete", 3, True),
        ("preemptionVictims", 2, True),
        ("successRatio", 0.995, False),
        ("queueP99", 9.0, False),  # speed, not placement quality
    ],
)
def test_quality_measures_and_tolerances(measure: str, value: Any, flagged: bool) -> None:
    rows = sweep(base=[{}], other=[{measure: value, "podsPerSecond": 2000.0}])
    flags = compare(rows, ["base", "other"], "base")["variants"]["other"]["flags"]
    assert bool(flags) is flagged, flags


def test_tolerance_can_be_overridden() -> None:
    rows = sweep(base=[{}], other=[{"fragmentationPercent": 22.0}])
    out = compare(rows, ["base", "other"], "base", {"fragmentationPercent": 5.0})
    assert out["variants"]["other"]["flags"] == []


def test_invariant_violation_flags_and_ranks_last() -> None:
    rows = sweep(base=[{}], broken=[{"invariantsHold": False, "podsPerSecond": 9e9}])
    out = compare(rows, ["base", "broken"], "base")
    assert out["ranking"][-1] == "broken"
    assert "invariants violated" in out["variants"]["broken"]["flags"]


def test_skipped_variants_stay_out_of_the_ranking() -> None:
    rows = [row(0, "base", 1), {"index": 1, "variant": "sharded", "seed": 1, "skipped": "why"}]
    out = compare(rows, ["base", "sharded"], "base")
    assert out["ranking"] == ["base"]
    assert out["variants"]["sharded"]["skipped"] == "why"


def test_denominators_per_seed() -> None:
    rows = sweep(a=[{}, {"podsSubmitted": 90}], b=[{}, {"podsSubmitted": 90}])
    d = compare(rows, ["a", "b"], "a")["denominators"]
    assert d == {"podsSubmittedPerSeed": {"1": 100, "2": 90}, "gangsPerSeed": {"1": 4, "2": 4},
                 "sameForEveryVariant": True}  # fmt: skip
    rows[1]["podsSubmitted"] = 91
    assert not compare(rows, ["a", "b"], "a")["denominators"]["sameForEveryVariant"]


def test_fingerprint_ignores_wall_clock_only() -> None:
    a = row(0, "x", 1)
    assert fingerprint(a) == fingerprint({**a, "podsPerSecond": 1.0, "wallSeconds": 9.0})
    assert fingerprint(a) != fingerprint({**a, "queueP99": 1.0})
