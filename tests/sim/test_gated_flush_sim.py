"""A Pod gated for ever (a scheduling gate nobody removes) in the simulator: v1.37 re-runs its
PreEnqueue on the 5-minute flush, again 5 minutes after each flush; the run still sleeps
between flushes and finishes, and the Pod is reported gated."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.config.featuregates import FeatureGates
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim.driver import SimCluster
from kubesched.sim.scenario import load_scenario
from kubesched.sim.simulate import run_scenario
from kubesched.testing import make_node, make_pod


@pytest.mark.parametrize(("version", "flushes"), [("1.37", 4), ("1.36", 0)])
def test_a_pod_gated_for_ever_is_flushed_every_5_minutes_at_v137(
    version: str, flushes: int
) -> None:
    config = load_config(None, known_plugins=known_plugin_names(), gates=FeatureGates(version))
    sim = SimCluster(config)
    sim.api.create_node(make_node("n0").cap(cpu="1", memory="4Gi", pods=5).obj())
    gated = make_pod("held").gates("example.com/never").obj()
    sim.loop.call_at(0.1, lambda: sim.api.create_pod(gated))
    steps = 0
    while sim.loop.now <= 1000 and steps < 10_000 and sim.loop.step():
        steps += 1
    q = sim.scheduler.queue
    assert q.queue_of("default/held") == "gated"
    # v1.37: flushed just after 300.1, 600.1, 900.1 and 1200.1 (the step past 1000 s)
    assert q.incoming_counts[("unschedulable", "UnschedulableTimeout")] == flushes
    assert steps < 100  # it sleeps between flushes: no spinning
    assert sim.scheduler.pod_attempts.get("default/held", 0) == 0


@pytest.mark.parametrize("version", ["1.37", "1.36"])
def test_a_run_with_a_pod_gated_for_ever_finishes(tmp_path: Path, version: str) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "apiVersion: kubesched.io/v1alpha1\nkind: Scenario\nmetadata: {name: gated}\n"
        f"spec:\n  kubernetesVersion: '{version}'\n  durationSeconds: 10\n"
        "  drainSeconds: 1200\n  objects:\n"
        "  - {apiVersion: v1, kind: Node, metadata: {name: n1},"
        " status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}}\n"
        "  - {apiVersion: v1, kind: Pod, metadata: {name: held, namespace: default},"
        " spec: {schedulingGates: [{name: example.com/never}],"
        " containers: [{name: c, image: i}]}}\n"
        "  - {apiVersion: v1, kind: Pod, metadata: {name: ours, namespace: default},"
        " spec: {containers: [{name: c, image: i}]}}\n"
    )
    summary = run_scenario(load_scenario(str(scenario)))
    assert not any(summary["invariants"].values())
    assert summary["podsSubmitted"] == 2 and summary["podsScheduled"] == 1
