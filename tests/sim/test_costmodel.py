"""The upstream cost model: the fit recovers known coefficients, the calibration file is
checked field by field, and predictions follow the documented formula."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kubesched.api.errors import InputError
from kubesched.sim import costmodel
from kubesched.sim.costmodel import (
    COEFFICIENTS,
    Attempt,
    CostModel,
    dump_calibration,
    features,
    load_calibration,
)

TRUE = {
    "fixed": 4e-4,
    "filter.default": 3e-6,
    "score.default": 5e-6,
    "filter.InterPodAffinity": 2e-6,
    "score.InterPodAffinity": 1e-6,
    "allNodes.InterPodAffinity": 4e-7,
    "filter.PodTopologySpread": 1e-6,
    "score.PodTopologySpread": 2e-6,
    "allNodes.PodTopologySpread": 3e-7,
    "preemption.fixed": 2e-3,
    "preemption.dryRunNode": 8e-6,
}


def synthetic(rng: np.random.Generator, n: int) -> tuple[list[Attempt], list[int]]:
    attempts, pars = [], []
    for _ in range(n):
        nodes = int(rng.integers(100, 15000))
        filtered = float(rng.integers(100, nodes + 1))
        scored = float(rng.integers(0, int(filtered) + 1))
        plugins = frozenset(
            p for p in ("InterPodAffinity", "PodTopologySpread") if rng.random() < 0.4
        )
        preempted = bool(rng.random() < 0.2)
        dry = float(rng.integers(100, nodes + 1)) if preempted else 0.0
        attempts.append(Attempt(nodes, filtered, scored, plugins, dry, preempted))
        pars.append(int(rng.choice([1, 2, 4, 16])))
    return attempts, pars


def test_fit_recovers_known_coefficients() -> None:
    rng = np.random.default_rng(7)
    attempts, pars = synthetic(rng, 200)
    x = features(attempts, pars, cores=2)
    y = costmodel.predict(x, TRUE) * rng.normal(1.0, 0.01, len(attempts))
    got = costmodel.fit(x, y)
    assert set(got.fitted) == set(COEFFICIENTS)
    for name, want in TRUE.items():
        assert got.coefficients[name] == pytest.approx(want, rel=0.1), name


def test_fit_keeps_costs_non_negative_and_falls_back_for_unexercised_columns() -> None:
    rng = np.random.default_rng(3)
    # Only the default mix: no plugin or preemption column is exercised.
    attempts = [Attempt(n, f, f, frozenset()) for n, f in ((500, 100), (5000, 500), (5000, 5000))]
    attempts += [Attempt(15000, 750, 750), Attempt(1000, 1000, 100)]
    pars = [1, 16, 2, 16, 1]
    x = features(attempts, pars, cores=2)
    y = costmodel.predict(x, TRUE) * rng.normal(1.0, 0.01, len(attempts))
    got = costmodel.fit(x, y, fallback={"preemption.fixed": 0.5})
    assert set(got.fitted) == {"fixed", "filter.default", "score.default"}
    assert got.coefficients["preemption.fixed"] == 0.5
    assert got.coefficients["filter.InterPodAffinity"] == 0.0
    assert all(v >= 0 for v in got.coefficients.values())


def test_parallelism_divides_per_node_work_up_to_the_cores() -> None:
    m = CostModel(dict(TRUE), cores=2)
    a = Attempt(5000, 1000, 500)
    one, two, many = (m.attempt_seconds(a, p) for p in (1, 2, 32))
    per_node = 1000 * TRUE["filter.default"] + 500 * TRUE["score.default"]
    assert one == pytest.approx(TRUE["fixed"] + per_node)
    assert two == pytest.approx(TRUE["fixed"] + per_node / 2)
    assert many == two


def test_throughput_is_capped_by_the_client_token_bucket() -> None:
    m = CostModel(
        dict(TRUE),
        binding={
            "clientQPS": 50.0,
            "clientBurst": 100.0,
            "requestLatencySeconds": 0.005,
            "requestsPerBind": 1.0,
        },
    )
    assert m.throughput(0.001) == 50.0
    assert m.throughput(0.1) == pytest.approx(10.0)


def test_shipped_default_loads() -> None:
    m = load_calibration(None)
    assert set(m.coefficients) == set(COEFFICIENTS)
    assert m.cores >= 1


def test_calibration_errors_name_the_field(tmp_path: Path) -> None:
    doc = {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "UpstreamCostCalibration",
        "attempt": {**TRUE, "score.default": -1},
    }
    f = tmp_path / "cal.yaml"
    f.write_text(dump_calibration(doc))
    with pytest.raises(InputError, match=r"attempt\.score\.default: want a finite number >= 0"):
        load_calibration(str(f))
    doc["attempt"] = {k: v for k, v in TRUE.items() if k != "fixed"}
    f.write_text(dump_calibration(doc))
    with pytest.raises(InputError, match=r"attempt\.fixed: required"):
        load_calibration(str(f))
    doc["attempt"] = {**TRUE, "filter.Typo": 1.0}
    f.write_text(dump_calibration(doc))
    with pytest.raises(InputError, match=r"attempt\.filter\.Typo: unknown coefficient"):
        load_calibration(str(f))
