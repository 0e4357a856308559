"""``kubesched calibrate``'s fitting side without the oracle: what it reads from a
``kube-oracle bench`` result, the binding parameters from bursts of known shape, and the
validation table's verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.bench import calibbind
from kubesched.bench.calibgrid import Point
from kubesched.bench.calibrate import parse
from kubesched.bench.calibtable import validation_table
from kubesched.cli import main
from kubesched.sim.costmodel import BINDING_DEFAULTS, dump_calibration, load_calibration


def item(metric: str, result: str, **data: float) -> dict[str, Any]:
    return {"data": data, "unit": "ms", "labels": {"Metric": metric, "result": result}}


def test_parse_takes_the_quantile_and_upstreams_node_counts(tmp_path: Path) -> None:
    items = [
        item("SchedulingAttemptDuration", "", Perc50=9.0),
        item("SchedulingAttemptDurationByResult", "scheduled", Perc10=0.04, Perc50=0.05),
        item("EvaluatedNodes", "scheduled", Average=1.0),
        item("FeasibleNodes", "scheduled", Average=1.0),
        item("SchedulingAttemptDurationByResult", "unschedulable", Perc10=3.0, Perc50=4.0),
        item("EvaluatedNodes", "unschedulable", Average=1000.0),
        item("FeasibleNodes", "unschedulable", Average=0.0),
    ]
    path = tmp_path / "p-r1.json"
    path.write_text(json.dumps({"dataItems": items}))
    got = parse(path)
    assert got["scheduled"].seconds == pytest.approx(5e-5)
    assert got["scheduled"].filtered == 1 and got["scheduled"].scored == 0  # one node: no scoring
    assert got["unschedulable"].filtered == 1000
    assert parse(path, 10)["unschedulable"].seconds == pytest.approx(3e-3)


def measured(backlog_50: float, backlog_fast: float, probe: float) -> dict[str, Any]:
    settings = [
        {"qps": 50.0, "burst": 100, "backlogPodsPerSecond": backlog_50,
         "backlogCreatePodsPerSecond": 250.0},
        {"qps": 5000.0, "burst": 10000, "backlogPodsPerSecond": backlog_fast,
         "backlogCreatePodsPerSecond": 200.0},
    ]  # fmt: skip
    return {"nodes": 5000, "pods": 5000, "probeSeconds": probe, "settings": settings}


def test_binding_parameters_from_the_probe_and_the_backlogs() -> None:
    model = load_calibration(None)
    attempt = model.attempt_seconds(
        Point("default", 5000, 0, 16, 0.0, 1).attempts()["scheduled"], 16
    )
    # 4,900 Pods after the burst of 100 at 50/s take 98 s: 5,000 Pods bound at 51/s.
    got = calibbind.fit(model, measured(4999 / 98, 1 / (attempt + 0.003), attempt + 0.02))
    assert got["requestsPerBind"] == pytest.approx(1.0, abs=0.01)
    assert got["apiSecondsPerPod"] == pytest.approx(0.003, rel=0.01)
    assert got["requestLatencySeconds"] == pytest.approx(0.02, abs=1e-4)
    assert got["apiSecondsPerCreate"] == pytest.approx(1 / 250)  # the median of the two
    # Two requests per Pod halve the rate the same bucket gives.
    assert calibbind.fit(model, measured(4999 / 196, 100, 0.1))["requestsPerBind"] == pytest.approx(
        2.0, abs=0.02
    )


def row(held: bool, error: float) -> dict[str, Any]:
    return {"mix": "default", "nodes": 5000, "percentageOfNodesToScore": 0, "parallelism": 16,
            "fill": 0.0, "result": "scheduled", "heldOut": held, "measuredMs": 1.0,
            "predictedMs": 1.0 + error / 100, "errorPercent": error}  # fmt: skip


def burst(fitted: bool, error: float) -> dict[str, Any]:
    return {"qps": 50.0, "burst": 100, "pods": "backlog" if fitted else "burst",
            "createPodsPerSecond": None if fitted else 300.0, "fitted": fitted,
            "measuredPodsPerSecond": 50.0, "predictedPodsPerSecond": 50.0 * (1 + error / 100),
            "errorPercent": error}  # fmt: skip


def test_the_table_judges_held_out_points_and_unfitted_bursts_only() -> None:
    bursts = [burst(True, 80.0), burst(False, 5.0)]
    doc: dict[str, Any] = {
        "points": [row(True, 10.0), row(True, -20.0), row(False, 90.0)],
        "binding": {**BINDING_DEFAULTS, "validation": bursts},
    }
    table = validation_table(doc)
    assert table.count("| default |") == 2  # the fitted point is not shown
    assert "| 50 / 100 | burst | 300 | no | 50.0 | 52.5 | +5 % |" in table
    assert table.endswith(
        "median |error| 10.0 %, worst 20.0 %; goal (median <= 15 %, worst <= 30 %) met"
    )
    bursts[1]["errorPercent"] = 31.0
    assert validation_table(doc).endswith("missed")


def test_the_simulator_predicts_a_burst_through_the_clients_token_bucket(tmp_path: Path) -> None:
    path = tmp_path / "cal.yaml"
    doc = load_calibration(None).document
    per_pod = {"apiSecondsPerPod": 0.01, "apiSecondsPerCreate": 0.0}
    path.write_text(dump_calibration({**doc, "binding": {**doc["binding"], **per_pod}}))
    # 300 Pods at once: 100 on the burst, 200 more at 50/s.
    slow = calibbind.predicted_rate(path, 100, 300, 50.0, 100, 1e6)
    assert slow == pytest.approx(300 / 4, rel=0.1)
    # A client that never waits: the loop, each Pod 10 ms of API server work plus its attempt.
    fast = calibbind.predicted_rate(path, 100, 300, 5000.0, 10000, 1e6)
    assert 80 < fast < 100
    # Each Pod's creation taking 10 ms of the same cores: its arrival delays the loop, but
    # not in a backlog (created before the scheduler started).
    binding = {**doc["binding"], "apiSecondsPerPod": 0.0, "apiSecondsPerCreate": 0.01}
    path.write_text(dump_calibration({**doc, "binding": binding}))
    assert 80 < calibbind.predicted_rate(path, 100, 300, 5000.0, 10000, 1e6) < 100
    assert calibbind.predicted_backlog(path, 100, 300, 5000.0, 10000) > 300
    path.write_text(dump_calibration({**doc, "binding": {**binding, "apiSecondsPerCreate": 0.0,
                                                         "apiSecondsPerPod": 0.01}}))  # fmt: skip
    # Pods arriving slower than that (Poisson, the simulator's arrivals): they set the pace.
    assert calibbind.predicted_rate(path, 100, 300, 5000.0, 10000, 30.0) == pytest.approx(
        30, rel=0.15
    )


def test_binding_without_the_control_plane_binaries_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oracle = tmp_path / "bin" / "kube-oracle"
    oracle.parent.mkdir()
    oracle.write_text("#!/bin/sh\nexit 0\n")
    oracle.chmod(0o755)
    (oracle.parent / "etcd").write_text("")
    rc = main(["calibrate", "--binding", "--oracle", str(oracle), "-o", str(tmp_path / "c.yaml")])
    assert rc == 2
    assert "--binding: kube-apiserver, kube-scheduler missing beside" in capsys.readouterr().err
    assert not (tmp_path / "c.yaml").exists()
