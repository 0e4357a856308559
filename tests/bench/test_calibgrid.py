"""The calibration grid: the work each point's attempts do, as upstream's scheduling cycle
counts it, and the scheduler_perf configs written for kube-oracle bench."""

from __future__ import annotations

from pathlib import Path

import yaml

from kubesched.bench.calibgrid import Point, grid, write_point


def test_empty_cluster_filters_and_scores_the_nodes_to_find() -> None:
    # 5,000 nodes, auto: max(5, 50 - 5000/125) = 10 % -> 500 feasible nodes to find.
    work = Point("default", 5000, 0, 16, 0.0, 10).attempts()["scheduled"]
    assert (work.filtered, work.scored) == (500, 500)
    assert Point("default", 5000, 100, 16, 0.0, 10).attempts()["scheduled"].filtered == 5000


def test_full_cluster_filters_past_the_rejected_nodes() -> None:
    p = Point("default", 1000, 0, 16, 0.9, 10)  # 100 feasible nodes, 100 to find (at least 100)
    assert p.small_nodes() == 900
    work = p.attempts()["scheduled"]
    assert (work.filtered, work.scored) == (1000, 100)


def test_anti_affinity_loses_a_feasible_node_per_pod() -> None:
    work = Point("affinity", 1000, 0, 16, 0.9, 100).attempts()["scheduled"]
    assert work.plugins == {"InterPodAffinity"}
    assert work.filtered == 1000
    assert work.scored == sum(k if k > 1 else 0 for k in range(100, 0, -1)) / 100


def test_preemption_attempts_dry_run_the_candidates() -> None:
    work = Point("preemption", 2000, 0, 16, 0.0, 1).attempts()
    assert work["unschedulable"].preempted
    assert work["unschedulable"].dry_run_nodes == 200  # 10 % of 2,000
    assert work["scheduled"].filtered == 1


def test_grids_hold_out_points_and_cover_the_axes() -> None:
    full = grid("full")
    assert {p.mix for p in full} == {"default", "affinity", "spread", "preemption"}
    assert {p.nodes for p in full} >= {500, 15000}
    assert {p.percentage for p in full} == {0, 10, 20, 50, 100}
    assert {p.parallelism for p in full} >= {1, 32}
    assert {p.fill for p in full} == {0.0, 0.9}
    assert 0 < sum(p.held_out for p in full) < len(full) / 2
    assert any(p.held_out for p in grid("small"))


def test_written_config_runs_one_workload_with_its_scheduler_config(tmp_path: Path) -> None:
    p = Point("preemption", 500, 20, 4, 0.0, 5)
    path = write_point(p, tmp_path)
    (case,) = yaml.safe_load(path.read_text())
    assert [op["opcode"] for op in case["workloadTemplate"]] == [
        "createNodes",
        "createPods",
        "createPods",
    ]
    assert case["workloadTemplate"][-1]["collectMetrics"] is True
    sched = yaml.safe_load((tmp_path / case["schedulerConfigPath"]).read_text())
    assert (sched["parallelism"], sched["percentageOfNodesToScore"]) == (4, 20)
    assert case["workloads"][0]["name"] == p.name
