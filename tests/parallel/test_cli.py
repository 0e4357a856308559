"""``bench --shards N`` and ``simulate --shards N``: same results format, parallel numbers added."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kubesched.cli import main
from kubesched.config.load import load_config
from kubesched.parallel import factory
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim.scenario import build_scenario
from kubesched.sim.simulate import invariants_hold, run_scenario
from tests.bench.support import basic_case, write_config
from tests.sim.test_simulate import small


def test_bench_with_shards_keeps_the_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, [basic_case(params={"nodes": 6, "pods": 40})])
    out = tmp_path / "out.json"
    assert main(["bench", str(config), "--shards", "2", "-o", str(out), "--no-progress"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("Basic/w, ") and "40 pods bound" in line and "2 shards: " in line
    items = json.loads(out.read_text())["dataItems"]
    assert {i["labels"]["Shards"] for i in items} == {"2"}
    assert any(i["labels"]["Metric"] == "SchedulingThroughput" for i in items)


def test_simulate_with_shards_matches_serial_outcomes() -> None:
    doc = small()
    serial = run_scenario(build_scenario(doc))
    parallel = run_scenario(build_scenario(doc), shards=2)
    assert invariants_hold(parallel), parallel["invariants"]
    assert parallel["podsScheduled"] == serial["podsScheduled"]
    assert parallel["parallel"]["shards"] == 2
    assert "parallel" not in serial


def test_simulate_cli_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(small()))
    assert main(["simulate", str(scenario), "--shards", "2", "-o", "json", "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["parallel"]["binder"]["conflictRate"] < 0.05


def test_make_scheduler_rejects_zero_shards() -> None:
    cfg = load_config(None, known_plugins=known_plugin_names())
    with pytest.raises(ValueError, match="at least 1"):
        factory.make_scheduler(cfg, shards=0, clock=lambda: 0.0)


def test_shards_auto_and_routing_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, [basic_case(params={"nodes": 6, "pods": 40})])
    args = ["bench", str(config), "--shards", "auto", "--no-progress"]
    assert main(args) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert f"{factory.auto_shards()} shards: " in line and "40 pods bound" in line
    assert "0.00% of 40 proposals" in line  # by default every Pod goes to a shard
    assert main([*args, "--shard-routing", "auto"]) == 0
    assert "40 pods bound" in capsys.readouterr().out.strip().splitlines()[-1]


def test_bad_shards_value_is_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, [basic_case(params={"nodes": 6, "pods": 4})])
    with pytest.raises(SystemExit) as exc:
        main(["bench", str(config), "--shards", "many"])
    assert exc.value.code == 2
    assert "--shards: a number >= 1 or auto, got 'many'" in capsys.readouterr().err


def test_make_scheduler_routes_only_when_asked() -> None:
    """The pipeline alone by default (deterministic, what `simulate --shards N` runs);
    the router only with routing="auto"."""
    cfg = load_config(None, known_plugins=known_plugin_names())
    sched = factory.make_scheduler(cfg, shards=2, clock=lambda: 0.0, transport_kind="inline")
    try:
        summary = factory.summary(sched)
        assert summary is not None and "routing" not in summary
    finally:
        factory.close(sched)
    sched = factory.make_scheduler(
        cfg, shards=2, clock=lambda: 0.0, transport_kind="inline", routing="auto"
    )
    try:
        summary = factory.summary(sched)
        assert summary is not None and "routing" in summary
    finally:
        factory.close(sched)
