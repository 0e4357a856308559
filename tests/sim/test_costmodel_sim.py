"""``timing.costModel: upstream``: each simulated attempt takes what the calibrated model says
for the nodes it filtered and scored and the configuration's parallelism; binds follow the
calibration's client QPS; bad fields name their path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api.errors import InputError
from kubesched.sim.costmodel import COEFFICIENTS, KIND, load_calibration
from kubesched.sim.scenario import build_scenario, load_scenario, with_cost_model
from kubesched.sim.simulate import run_scenario

FILTER, FIXED = 1e-5, 1e-3


def calibration(tmp_path: Path, qps: float = 1e6) -> Path:
    coef = dict.fromkeys(COEFFICIENTS, 0.0)
    coef.update({"fixed": FIXED, "filter.default": FILTER})
    doc = {"apiVersion": "kubesched.io/v1alpha1", "kind": KIND, "machine": {"cores": 2},
           "attempt": coef, "binding": {"clientQPS": qps, "clientBurst": 1,
                                        "requestLatencySeconds": 0.0}}  # fmt: skip
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def scenario(timing: dict[str, Any], pct: int, parallelism: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Scenario",
        "spec": {
            "durationSeconds": 1,
            "drainSeconds": 100,
            "timing": timing,
            "config": {"apiVersion": "kubescheduler.config.k8s.io/v1",
                       "kind": "KubeSchedulerConfiguration",
                       "percentageOfNodesToScore": pct, "parallelism": parallelism},
            "nodePools": [
                {"name": "n", "count": 1000, "allocatable": {"cpu": "64", "pods": "110"}}
            ],
            "workloads": [{"name": "w", "count": 50, "ratePerSecond": 1e6, "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}],
        },
    }  # fmt: skip


def busy_seconds(doc: dict[str, Any]) -> float:
    s = run_scenario(build_scenario(doc))
    assert s["podsScheduled"] == 50
    return 50 / s["scheduledPodsPerVirtualSecond"]


def test_attempts_cost_the_nodes_they_filter(tmp_path: Path) -> None:
    timing = {"costModel": "upstream", "calibration": str(calibration(tmp_path))}
    # 1,000 nodes, all feasible: 100 % filters 1,000 nodes, 10 % stops at 100 found.
    wide, narrow = busy_seconds(scenario(timing, 100)), busy_seconds(scenario(timing, 10))
    assert wide == pytest.approx(50 * (FIXED + 1000 * FILTER), rel=0.05)
    assert narrow == pytest.approx(50 * (FIXED + 100 * FILTER), rel=0.05)
    # Two workers (the calibrated machine's cores) halve the per-node work; 32 no more.
    two = busy_seconds(scenario(timing, 100, parallelism=2))
    assert two == pytest.approx(50 * (FIXED + 1000 * FILTER / 2), rel=0.05)
    assert busy_seconds(scenario(timing, 100, parallelism=32)) == pytest.approx(two)
    # The constant model charges cycleSeconds whatever the search.
    const = {"cycleSeconds": 0.002}
    assert busy_seconds(scenario(const, 100)) == pytest.approx(busy_seconds(scenario(const, 10)))


def test_binds_follow_the_calibrations_client_qps(tmp_path: Path) -> None:
    timing = {"costModel": "upstream", "calibration": str(calibration(tmp_path, qps=10.0))}
    assert busy_seconds(scenario(timing, 10)) == pytest.approx(50 / 10, rel=0.1)


def test_bad_cost_model_fields_name_their_path(tmp_path: Path) -> None:
    with pytest.raises(
        InputError, match=r"spec\.timing\.costModel: want one of constant, upstream"
    ):
        build_scenario(scenario({"costModel": "fast"}, 10))
    with pytest.raises(
        InputError, match=r"spec\.timing\.calibration: only with costModel: upstream"
    ):
        build_scenario(scenario({"calibration": "x.yaml"}, 10))
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"kind: {KIND}\nattempt: {{fixed: -1}}\n")
    with pytest.raises(InputError, match=r"spec\.timing\.calibration: .*bad\.yaml: attempt\.fixed"):
        build_scenario(scenario({"costModel": "upstream", "calibration": str(bad)}, 10))


def test_relative_calibration_is_found_beside_the_scenario(tmp_path: Path) -> None:
    calibration(tmp_path)
    path = tmp_path / "sc.yaml"
    path.write_text(
        yaml.safe_dump(scenario({"costModel": "upstream", "calibration": "cal.yaml"}, 10))
    )
    assert load_scenario(str(path)).timing.cost_model is not None


def test_simulate_flag_switches_to_the_shipped_calibration() -> None:
    sc = build_scenario(scenario({}, 10))
    with_cost_model(sc, "upstream", None)
    assert sc.timing.cost_model is not None
    assert sc.timing.client_qps == 50.0  # kube-scheduler's default client QPS


def test_simulate_flag_brings_the_request_latency_unless_the_scenario_set_one() -> None:
    calibrated = load_calibration(None).binding["requestLatencySeconds"]
    assert calibrated != 0.005
    sc = build_scenario(scenario({}, 10))
    with_cost_model(sc, "upstream", None)
    assert sc.timing.bind_latency == calibrated
    sc = build_scenario(scenario({"bindLatencySeconds": 0.005}, 10))
    with_cost_model(sc, "upstream", None)
    assert sc.timing.bind_latency == 0.005


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink"])
def test_a_calibration_outside_the_scenarios_folder_is_refused(tmp_path: Path, how: str) -> None:
    """A scenario names no file outside its folder (``../``, an absolute path elsewhere, a
    symbolic link out of it): the message says where it points; ``--calibration`` may."""
    outside = calibration(tmp_path)
    folder = tmp_path / "scenarios"
    folder.mkdir()
    name = {"dotdot": "../cal.yaml", "absolute": str(outside), "symlink": "link.yaml"}[how]
    if how == "symlink":
        (folder / "link.yaml").symlink_to(outside)
    path = folder / "sc.yaml"
    path.write_text(yaml.safe_dump(scenario({"costModel": "upstream", "calibration": name}, 10)))
    with pytest.raises(InputError) as err:
        load_scenario(str(path))
    assert "spec.timing.calibration" in str(err.value)
    assert f"is outside the scenario's folder {folder} (to {outside})" in str(err.value)
    inside = folder / "cal.yaml"
    inside.write_text(outside.read_text())
    path.write_text(
        yaml.safe_dump(scenario({"costModel": "upstream", "calibration": str(inside)}, 10))
    )
    assert load_scenario(str(path)).timing.cost_model is not None  # absolute, but inside
