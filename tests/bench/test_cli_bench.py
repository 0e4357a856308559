"""``kubesched bench``: summary lines, perf-dash JSON, exit codes."""

from __future__ import annotations

import json
import pstats
from pathlib import Path

import pytest

from kubesched.cli import main
from tests.bench.support import BENCHMARKS, basic_case, write_config

THROUGHPUT_KEYS = ["Average", "Perc50", "Perc90", "Perc95", "Perc99"]


def test_summary_and_perf_dash_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, [basic_case(threshold=1)])
    out_file = tmp_path / "results.json"
    rc = main(["bench", str(config), "-o", str(out_file), "--profile", str(tmp_path / "p.prof")])
    assert rc == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1].startswith("Basic/w, ") and "pods/s" in lines[-1]
    assert "threshold 1: ok" in lines[-1]
    doc = json.loads(out_file.read_text())
    assert doc["version"] == "v1"
    first = doc["dataItems"][0]
    assert first["unit"] == "pods/s"
    assert first["labels"] == {"Metric": "SchedulingThroughput", "Name": "Basic/w"}
    assert list(first["data"])[:5] == THROUGHPUT_KEYS
    assert first["data"]["AverageThreshold"] == 1
    units = {item["labels"]["Metric"]: item["unit"] for item in doc["dataItems"]}
    assert units["scheduler_scheduling_attempt_duration_seconds"] == "ms"
    assert units["SchedulingAttemptDuration"] == "ms"
    assert pstats.Stats(str(tmp_path / "p.prof")).get_stats_profile().total_tt > 0


def test_threshold_failure_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, [basic_case(threshold=1e9)])
    assert main(["bench", str(config)]) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "FAIL: Basic/w: expected SchedulingThroughput Average to be higher" in last
    assert "want 1e+09" in last


def test_malformed_config_exits_2_naming_case_op_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = basic_case()
    case["workloadTemplate"][1]["countParam"] = "pods"
    config = write_config(tmp_path, [case])
    assert main(["bench", str(config)]) == 2
    err = capsys.readouterr().err
    assert f"{config}: Basic.workloadTemplate[1].countParam" in err
    assert 'createPods: must start with "$"' in err


def test_undefined_param_exits_2_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, [basic_case(params={"nodes": 2})])
    assert main(["bench", str(config)]) == 2
    captured = capsys.readouterr()
    assert "Basic/w: workloadTemplate[1].countParam: parameter pods is undefined" in captured.err
    assert captured.out == ""


def test_both_binding_modes_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, [basic_case()])
    out_file = tmp_path / "r.json"
    rc = main(
        ["bench", str(config), "--binding", "both", "--client-qps", "1000", "-o", str(out_file)]
    )
    assert rc == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("Basic/w, ") and lines[1].startswith("Basic/w [api binds], ")
    assert "client 1000 qps / burst 100" in lines[1]
    bindings = {item["labels"]["Binding"] for item in json.loads(out_file.read_text())["dataItems"]}
    assert bindings == {"memory", "api"}


def test_no_matching_workload_is_a_usage_error_listing_what_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, [basic_case(labels=["fast"])])
    assert main(["bench", str(config), "--case", "nope", "--label", "performance"]) == 2
    err = capsys.readouterr().err
    assert "no workload matches the filters --case nope --label performance" in err
    assert "Basic: w [fast]" in err
    assert "Traceback" not in err


def test_public_config_by_case_and_workload(capsys: pytest.CaptureFixture[str]) -> None:
    config = str(BENCHMARKS / "performance-config.yaml")
    rc = main(["bench", config, "--case", "SchedulingBasic", "--workload", "5Nodes"])
    assert rc == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("SchedulingBasic/5Nodes, ")
