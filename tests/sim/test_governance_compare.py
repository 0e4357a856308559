"""``kubesched simulate --compare-governance``: the same scenario and seed with NodeResourcesFit
``retryGovernance`` off and on, side by side in the summary, the text and the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli import main
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim import governance
from tests.sim.test_observability import SCENARIO


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    d = tmp_path_factory.mktemp("gov")
    (d / "s.yaml").write_text(SCENARIO)
    rc = main(
        [
            "simulate",
            str(d / "s.yaml"),
            "--no-progress",
            "--compare-governance",
            "--json-out",
            str(d / "r.json"),
            "--report",
            str(d / "report"),
        ]
    )
    assert rc == 0
    return d, json.loads((d / "r.json").read_text()), (d / "report" / "index.html").read_text()


def test_both_runs_side_by_side(compared: tuple[Path, dict[str, Any], str]) -> None:
    _, s, _ = compared
    c = s["retryGovernanceComparison"]
    off, on = c["off"], c["on"]
    assert s["config"]["retryGovernance"] is True  # the summary is the governed run
    assert off["podsScheduled"] == on["podsScheduled"] == 150 and c["samePodsScheduled"]
    assert off["attempts"]["scheduled"] == on["attempts"]["scheduled"]
    # the 3 Pods larger than every node: retried on every completion without governance
    assert off["attempts"]["unschedulable"] > 100 and on["attempts"]["unschedulable"] == 3
    assert c["attemptsSaved"] == off["attempts"]["unschedulable"] - 3
    assert on["successRatio"] > off["successRatio"]


def test_the_text_and_the_report_show_the_comparison(
    compared: tuple[Path, dict[str, Any], str], capsys: pytest.CaptureFixture[str]
) -> None:
    d, s, page = compared
    assert "<h2>Retry governance: off and on, same seed</h2>" in page
    assert f"Attempts saved: {s['retryGovernanceComparison']['attemptsSaved']}" in page
    assert main(["report", str(d / "r.json"), "--out", str(d / "again")]) == 0
    from kubesched.report.text import simulate_summary

    text = simulate_summary(s)
    assert "retry governance, same seed: off vs on" in text
    assert "Success ratio" in text and "last capacity release to bound" in text


def test_without_the_flag_nothing_is_compared(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO)
    out = tmp_path / "r.json"
    assert (
        main(["simulate", str(tmp_path / "s.yaml"), "--no-progress", "--json-out", str(out)]) == 0
    )
    s = json.loads(out.read_text())
    assert "retryGovernanceComparison" not in s and s["config"]["retryGovernance"] is False
    assert s["attempts"]["unschedulable"] > 100  # upstream's behaviour stays the default


def test_waited_pods_are_measured_from_creation_and_from_the_last_release() -> None:
    got = governance.waited(
        {"a": 3, "b": 1, "c": 2},
        {"a": 0.0, "b": 0.0, "c": 1.0},
        {"a": 10.0, "b": 1.0, "c": 4.0},
        [9.5, 2.0, 3.0, 11.0],
    )
    assert got["timeToScheduleSeconds"] == {"pods": 2, "p50": 6.5, "p99": 9.93}  # 10 and 3 s
    assert got["afterReleaseSeconds"]["pods"] == 2  # a: 10 - 9.5, c: 4 - 3
    assert got["afterReleaseSeconds"]["p50"] == 0.75


def test_forcing_the_setting_changes_every_profile() -> None:
    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}],
    }
    cfg = load_config(raw, known_plugins=known_plugin_names())
    assert not governance.governed(cfg)
    on = governance.with_retry_governance(cfg, True)
    assert all(p.plugin_config["NodeResourcesFit"].retry_governance for p in on.profiles)  # type: ignore[attr-defined]
    assert not governance.governed(governance.with_retry_governance(on, False))
