"""The GPU placement panels of the HTML report: a simulated run with GpuDevices enabled
samples the four GPU measures over time, and the report draws and tabulates them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib.image as mpimg
import pytest

from kubesched.cli import main
from kubesched.report import plots

SCENARIO = """
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: gpu-panels}
spec:
  seed: 5
  durationSeconds: 6
  drainSeconds: 4
  config:
    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    profiles:
    - schedulerName: default-scheduler
      plugins:
        preFilter: {enabled: [{name: GpuDevices}]}
        filter: {enabled: [{name: GpuDevices}]}
        reserve: {enabled: [{name: GpuDevices}]}
        preBind: {enabled: [{name: GpuDevices}]}
  objects:
  - apiVersion: v1
    kind: Node
    metadata:
      name: numa4
      labels: {nvidia.com/gpu.product: A100}
      annotations: {kubesched.io/gpu-topology: '{"numa": [0, 1, 0, 1]}'}
    status: {allocatable: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "4"}}
  nodePools:
  - name: dgx
    count: 2
    labels: {nvidia.com/gpu.product: A100}
    allocatable: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}
  workloads:
  - name: single
    count: 14
    ratePerSecond: 4
    template:
      spec:
        containers:
        - {name: c, image: t, resources: {requests: {cpu: "1", nvidia.com/gpu: "1"}}}
  - name: pair
    count: 1
    ratePerSecond: 1
    startSeconds: 5
    template:
      spec:
        containers:
        - {name: c, image: t, resources: {requests: {cpu: "1", nvidia.com/gpu: "2"}}}
  - name: whole
    count: 1
    ratePerSecond: 1
    startSeconds: 5
    template:
      spec:
        containers:
        - {name: c, image: t, resources: {requests: {cpu: "1", nvidia.com/gpu: "8"}}}
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    d = tmp_path_factory.mktemp("gpu")
    (d / "s.yaml").write_text(SCENARIO)
    rc = main(
        [
            "simulate",
            str(d / "s.yaml"),
            "--no-progress",
            "--json-out",
            str(d / "r.json"),
            "--report",
            str(d / "report"),
            "--metrics-file",
            str(d / "metrics.txt"),
        ]
    )
    assert rc == 0
    return d, json.loads((d / "r.json").read_text())


def test_timeline_samples_the_gpu_measures(report: tuple[Path, dict[str, Any]]) -> None:
    d, summary = report
    gpu = summary["timeline"]["gpu"]
    n = len(summary["timeline"]["t"])
    assert {len(v) for v in gpu.values()} == {n}
    assert gpu["idleWholeGpuNodes"][0] == 2  # nothing placed yet: both 8-GPU nodes idle
    # 16 + 4 GPUs, 14 singles and a pair: no node keeps 8 idle GPUs, so the 8-GPU Pod waits
    assert gpu["idleWholeGpuNodes"][-1] == 0
    assert gpu["podsWaitingForWholeNode"][-1] == 1
    assert max(v for v in gpu["fragmentationPercent"] if v is not None) > 0
    text = (d / "metrics.txt").read_text()
    assert "scheduler_gpu_pods_waiting_for_whole_node 1.0" in text
    assert "scheduler_gpu_idle_whole_nodes 0.0" in text
    assert "scheduler_gpu_fragmentation_ratio" in text
    assert f"scheduler_gpu_cross_numa_pods {float(gpu['crossNumaPods'][-1])}" in text


def test_report_has_the_gpu_panels(report: tuple[Path, dict[str, Any]]) -> None:
    d, _ = report
    page = (d / "report" / "index.html").read_text()
    assert "<h2>GPU placement</h2>" in page
    assert '<img src="gpu.png"' in page
    assert "Pods waiting for a whole node" in page
    img = mpimg.imread(d / "report" / "gpu.png")
    assert img.shape[0] >= 600 and img.std() > 0.01


def test_panels_say_when_a_run_has_no_gpu_measures(tmp_path: Path) -> None:
    summary = {"timeline": {"t": [0, 1, 2], "gpu": {"crossNumaPods": [None, None, None]}}}
    caption = plots.plot_gpu(summary, tmp_path / "g.png")
    assert "NUMA" in caption and (tmp_path / "g.png").stat().st_size > 5000
