"""A real Prometheus scrapes kubesched's /metrics during a paced simulation, then answers the
four queries an operator's dashboard starts with (issue 5).  Loopback only, bounded in time;
skipped where Debian's ``prometheus`` binary is not installed (``.ci/run`` installs it)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched import metrics as m
from kubesched.sim.scenario import load_scenario
from kubesched.sim.simulate import run_scenario
from tests.sim.test_observability import SCENARIO

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason="prometheus binary not installed")

PACE = 4.0
"""Simulated seconds per wall second: 16 simulated seconds take 4 s."""
DEADLINE = 20.0

THROUGHPUT = 'sum by (profile) (rate(scheduler_schedule_attempts_total{result="scheduled"}[1m]))'
QUEUES = "sum by (queue) (scheduler_pending_pods)"
P99_ATTEMPT = (
    "histogram_quantile(0.99, sum by (le, profile) "
    '(rate(scheduler_scheduling_attempt_duration_seconds_bucket{result="scheduled"}[1m])))'
)
P99_POINTS = (
    "histogram_quantile(0.99, sum by (le, extension_point) "
    "(rate(scheduler_framework_extension_point_duration_seconds_bucket[1m])))"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def _until(what: Callable[[], Any], timeout: float = DEADLINE) -> Any:
    end = time.monotonic() + timeout
    while True:
        try:
            got = what()
            if got:
                return got
        except OSError:
            pass
        if time.monotonic() > end:
            raise AssertionError("timed out waiting for Prometheus")
        time.sleep(0.25)


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[str, m.SchedulerMetrics]]:
    """Prometheus scraping a fresh SchedulerMetrics every second; yields (api url, metrics)."""
    metrics = m.SchedulerMetrics()
    with m.MetricsServer(metrics, "127.0.0.1", 0) as server:
        cfg = tmp_path / "prometheus.yml"
        cfg.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "- job_name: kubesched\n"
            f"  static_configs: [{{targets: ['127.0.0.1:{server.port}']}}]\n"
        )
        port = _free_port()
        assert PROMETHEUS is not None
        proc = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={cfg}",
                f"--storage.tsdb.path={tmp_path / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            _until(lambda: urllib.request.urlopen(base + "/-/ready", timeout=2).status == 200)
            yield base, metrics
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _query(base: str, promql: str) -> list[dict[str, Any]]:
    data = _get(base + "/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
    assert data["status"] == "success", data
    result: list[dict[str, Any]] = data["data"]["result"]
    return result


def _by(result: list[dict[str, Any]], label: str) -> dict[str, float]:
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in result}


def test_dashboard_queries_through_a_real_prometheus(
    prometheus: tuple[str, m.SchedulerMetrics], tmp_path: Path
) -> None:
    base, metrics = prometheus
    # wait for the first scrape of the idle scheduler, so rate() sees the run start from zero
    _until(lambda: _query(base, 'up{job="kubesched"} == 1'))
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO)
    summary = run_scenario(load_scenario(str(path)), metrics=metrics, pace=PACE)
    assert summary["podsScheduled"] == 150

    # the final state reaches Prometheus at the next scrape
    final = 'scheduler_schedule_attempts_total{result="scheduled"} == 150'
    _until(lambda: _query(base, final))
    queues = _by(_until(lambda: _query(base, QUEUES)), "queue")
    assert queues == {"active": 0, "backoff": 0, "unschedulable": 3, "gated": 0}

    throughput = _by(_query(base, THROUGHPUT), "profile")["default-scheduler"]
    # rate() divides by the whole 1m window and the run fits inside it, so the window's rate
    # times 60 is the Pods bound (up to Prometheus's edge extrapolation)
    assert 100 < throughput * 60 < 200

    p99 = _by(_query(base, P99_ATTEMPT), "profile")["default-scheduler"]
    assert 0 < p99 <= m.ATTEMPT_BUCKETS[-1]

    points = _by(_query(base, P99_POINTS), "extension_point")
    assert {"PreFilter", "Filter", "Score", "Bind"} <= set(points)
    for point, value in points.items():
        assert 0 < value <= m.EXTENSION_POINT_BUCKETS[-1], point
