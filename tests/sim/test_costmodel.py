"""The upstream cost model: the fit recovers known coefficients, the calibration file is
checked field by field, and predictions follow the documented formula."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from kubesched.api.errors import InputError
from kubesched.scheduler.types import AttemptWork
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
    "allNodes.default": 5e-8,
    "filter.InterPodAffinity": 2e-6,
    "score.InterPodAffinity": 1e-6,
    "allNodes.InterPodAffinity": 4e-7,
    "filter.PodTopologySpread": 1e-6,
    "score.PodTopologySpread": 2e-6,
    "allNodes.PodTopologySpread": 3e-7,
    "preemption.fixed": 2e-3,
    "preemption.dryRunNode": 8e-6,
    "oversubscribed.InterPodAffinity": 1e-8,
    "oversubscribed.PodTopologySpread": 3e-8,
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


SERIAL = 0.6


def measured(attempts: list[Attempt], pars: list[int], serial: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = features(attempts, pars, cores=2, serial=serial)
    return costmodel.predict(x, TRUE) * rng.normal(1.0, 0.01, len(attempts))


def test_fit_recovers_known_coefficients_and_serial_fraction() -> None:
    attempts, pars = synthetic(np.random.default_rng(7), 200)
    got = costmodel.fit(attempts, pars, 2, measured(attempts, pars, SERIAL, 1))
    assert set(got.fitted) == {*COEFFICIENTS, costmodel.SERIAL}
    assert got.serial == pytest.approx(SERIAL, abs=0.05)
    for name, want in TRUE.items():
        assert got.coefficients[name] == pytest.approx(want, rel=0.1), name


def test_without_the_serial_fraction_the_fit_misses_parallelism() -> None:
    """One worker is not twice as slow as two when part of the work stays serial: dividing
    everything by the workers (serial fraction 0) cannot fit both."""
    attempts, pars = synthetic(np.random.default_rng(5), 200)
    y = measured(attempts, pars, SERIAL, 2)
    full = costmodel.fit(attempts, pars, 2, y)
    naive = costmodel.fit_linear(features(attempts, pars, cores=2), y)
    for coefficients, serial, worst in (
        (full.coefficients, full.serial, 5),
        (naive.coefficients, 0.0, None),
    ):
        x = features(attempts, pars, cores=2, serial=serial)
        err = np.abs(costmodel.errors_percent(costmodel.predict(x, coefficients), y))
        if worst is not None:
            assert err.max() < worst
        else:
            assert err.max() > 15


def test_without_the_oversubscribed_term_the_fit_misses_many_workers() -> None:
    """Workers beyond the cores cost the whole-cluster passes of the costly plugins per node
    (16 workers on 2 cores slower than 2): without that column the fit cannot follow both."""
    attempts, pars = synthetic(np.random.default_rng(11), 200)
    y = measured(attempts, pars, SERIAL, 4)
    full = costmodel.fit(attempts, pars, 2, y)
    assert full.coefficients["oversubscribed.PodTopologySpread"] == pytest.approx(3e-8, rel=0.2)
    x = features(attempts, pars, cores=2, serial=SERIAL)
    columns = [COEFFICIENTS.index(c) for c in costmodel.OPTIONAL]
    blind = x.copy()
    blind[:, columns] = 0.0  # not fitted: taken as 0
    without = costmodel.fit_linear(blind, y)
    for coefficients, worst in ((full.coefficients, 5.0), (without.coefficients, None)):
        x = features(attempts, pars, cores=2, serial=full.serial)
        err = np.abs(costmodel.errors_percent(costmodel.predict(x, coefficients), y))
        if worst is not None:
            assert err.max() < worst
        else:
            assert err.max() > 15


def test_a_calibration_without_the_oversubscribed_coefficients_reads_them_as_zero(
    tmp_path: Path,
) -> None:
    doc = yaml.safe_load(costmodel.default_calibration_text())
    for name in costmodel.OPTIONAL:
        del doc["attempt"][name]
    model = costmodel.parse_calibration(doc, "old.yaml")
    assert all(model.coefficients[name] == 0.0 for name in costmodel.OPTIONAL)
    del doc["attempt"]["fixed"]
    with pytest.raises(InputError, match=r"attempt\.fixed"):
        costmodel.parse_calibration(doc, "old.yaml")


def test_the_all_nodes_term_is_fitted_from_the_cluster_size() -> None:
    """The same search (500 nodes filtered and scored) costs more in a larger cluster."""
    attempts = [Attempt(n, 500, 500) for n in (1000, 2000, 5000, 10000, 15000)]
    attempts += [Attempt(5000, f, f) for f in (1000, 2500)]
    pars = [16] * len(attempts)
    got = costmodel.fit(attempts, pars, 2, measured(attempts, pars, 0.0, 3))
    assert got.coefficients["allNodes.default"] == pytest.approx(TRUE["allNodes.default"], rel=0.2)


def test_fit_keeps_costs_non_negative_and_falls_back_for_unexercised_columns() -> None:
    rng = np.random.default_rng(3)
    # Only the default mix: no plugin or preemption column is exercised.
    attempts = [Attempt(n, f, f, frozenset()) for n, f in ((500, 100), (5000, 500), (5000, 5000))]
    attempts += [Attempt(15000, 750, 750), Attempt(1000, 1000, 100)]
    pars = [1, 16, 2, 16, 1]
    x = features(attempts, pars, cores=2)
    y = costmodel.predict(x, TRUE) * rng.normal(1.0, 0.01, len(attempts))
    got = costmodel.fit_linear(x, y, fallback={"preemption.fixed": 0.5})
    assert set(got.fitted) == {"fixed", "filter.default", "score.default", "allNodes.default"}
    assert got.coefficients["preemption.fixed"] == 0.5
    assert got.coefficients["filter.InterPodAffinity"] == 0.0
    assert all(v >= 0 for v in got.coefficients.values())


def test_the_serial_fraction_falls_back_when_one_worker_count_was_measured() -> None:
    attempts = [Attempt(n, 500, 500) for n in (1000, 5000, 15000)]
    got = costmodel.fit(attempts, [16, 16, 2], 2, np.array([1e-3, 2e-3, 3e-3]),
                        fallback={costmodel.SERIAL: 0.4})  # fmt: skip
    assert got.serial == 0.4
    assert costmodel.SERIAL not in got.fitted


def test_parallelism_divides_the_parallel_part_of_per_node_work_up_to_the_cores() -> None:
    m = CostModel(dict(TRUE), cores=2, serial=0.5)
    a = Attempt(5000, 1000, 500)
    one, two, many = (m.attempt_seconds(a, p) for p in (1, 2, 32))
    per_node = 1000 * TRUE["filter.default"] + 500 * TRUE["score.default"]
    per_node += 5000 * TRUE["allNodes.default"]
    assert one == pytest.approx(TRUE["fixed"] + per_node)
    assert two == pytest.approx(TRUE["fixed"] + per_node * 0.75)
    assert many == two
    assert costmodel.divisor(4, 2, 0.0) == 0.5


def test_the_api_servers_work_is_charged_to_attempts_that_bind() -> None:
    m = CostModel(dict(TRUE), binding={**costmodel.BINDING_DEFAULTS, "apiSecondsPerPod": 0.002})
    work = AttemptWork(5000, 500, 500, frozenset())
    bound = AttemptWork(5000, 500, 500, frozenset(), bound=True)
    assert m.seconds_of(bound, 16) == pytest.approx(m.seconds_of(work, 16) + 0.002)
    assert m.throughput(0.002) == pytest.approx(50.0)  # the client, still
    fast = CostModel(dict(TRUE), binding={**m.binding, "clientQPS": 1e6})
    assert fast.throughput(0.002) == pytest.approx(1 / 0.004)


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
    doc["attempt"] = {**TRUE, "serialFraction": 1.5}
    f.write_text(dump_calibration(doc))
    with pytest.raises(InputError, match=r"attempt\.serialFraction: want 0 to 1"):
        load_calibration(str(f))
    doc["attempt"] = {**TRUE, "filter.Typo": 1.0}
    f.write_text(dump_calibration(doc))
    with pytest.raises(InputError, match=r"attempt\.filter\.Typo: unknown coefficient"):
        load_calibration(str(f))
