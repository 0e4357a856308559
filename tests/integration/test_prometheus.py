"""A real Prometheus scrapes kubesched's /metrics during a paced simulation, beside a second
scheduler under another job (kube-scheduler in the canary plan), then answers the queries an
operator's dashboard starts with (issue 5) and every query of ``deploy/grafana/`` with its
template variables resolved as Grafana does (issue 20): one job's numbers never include the
other's.  Loopback only, bounded in time; skipped where Debian's ``prometheus`` binary is not
installed (``.ci/run`` installs it)."""

from __future__ import annotations

import contextlib
import json
import re
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

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy/grafana/kubesched-dashboard.json"

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason="prometheus binary not installed")

PACE = 4.0
"""Simulated seconds per wall second: 16 simulated seconds take 4 s."""
DEADLINE = 20.0

SELECT = 'job="$job", instance=~"$instance"'
"""The dashboard's template variables: every series is of one job and its chosen instances."""
PROFILES = SELECT + ', profile=~"$profile"'
THROUGHPUT = (
    "sum by (profile) (rate(scheduler_schedule_attempts_total"
    f'{{{PROFILES}, result="scheduled"}}[$__rate_interval]))'
)
QUEUES = f"sum by (queue) (scheduler_pending_pods{{{SELECT}}})"
P99_ATTEMPT = (
    "histogram_quantile(0.99, sum by (le, profile) "
    f'(rate(scheduler_scheduling_attempt_duration_seconds_bucket{{{PROFILES}, result="scheduled"}}'
    "[$__rate_interval])))"
)
P99_POINTS = (
    "histogram_quantile(0.99, sum by (le, extension_point) "
    f"(rate(scheduler_framework_extension_point_duration_seconds_bucket{{{PROFILES}}}"
    "[$__rate_interval])))"
)
JOB, OTHER_JOB = "kubesched", "kube-scheduler"


def resolve(
    expr: str, job: str = "", instance: str = ".+", profile: str = ".+", rate_interval: str = "1m"
) -> str:
    """``expr`` with the dashboard's variables as Grafana substitutes them (a multi-value
    variable set to All is its ``allValue``, ``.+``)."""
    expr = expr.replace("$__rate_interval", rate_interval)
    return expr.replace("$job", job).replace("$instance", instance).replace("$profile", profile)


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


@contextlib.contextmanager
def scraping(tmp_path: Path, targets: dict[str, int]) -> Iterator[str]:
    """A Prometheus scraping ``{job: port}`` on loopback every second; yields its API URL."""
    jobs = "".join(
        f"- job_name: {job}\n  static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n"
        for job, port in targets.items()
    )
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n" + jobs
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
        # the first scrape of each idle target, so rate() sees the run start from zero
        for job in targets:
            _until(lambda job=job: _query(base, f'up{{job="{job}"}} == 1'))
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[str, m.SchedulerMetrics, m.SchedulerMetrics]]:
    """Prometheus scraping a fresh SchedulerMetrics as job kubesched and another as job
    kube-scheduler; yields (api url, kubesched's metrics, the other's)."""
    ours, other = m.SchedulerMetrics(), m.SchedulerMetrics()
    other.start_profiles(["default-scheduler"])  # scraped at zero before its busy minute
    with (
        m.MetricsServer(ours) as a,
        m.MetricsServer(other) as b,
        scraping(tmp_path, {JOB: a.port, OTHER_JOB: b.port}) as base,
    ):
        yield base, ours, other


def _query(base: str, promql: str) -> list[dict[str, Any]]:
    data = _get(base + "/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
    assert data["status"] == "success", data
    result: list[dict[str, Any]] = data["data"]["result"]
    return result


def _by(result: list[dict[str, Any]], label: str) -> dict[str, float]:
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in result}


def grafana_regex(value: str) -> str:
    """One value of a multi-value variable as Grafana puts it into a PromQL regex matcher:
    regex-escaped, then each backslash doubled for the string literal."""
    return re.escape(value).replace("\\", "\\\\")


def _label_values(base: str, label: str, match: str) -> set[str]:
    """Grafana's ``label_values(match, label)``, through Prometheus's label values API."""
    query = urllib.parse.urlencode({"match[]": match})
    data = _get(f"{base}/api/v1/label/{label}/values?{query}")
    assert data["status"] == "success", data
    return set(data["data"])


def _the_other_scheduler_works(other: m.SchedulerMetrics) -> None:
    """Another scheduler's busy minute, with the same profile name: 500 Pods bound, 7 queued."""
    for _ in range(500):
        other.record_attempt("scheduled", "default-scheduler", 0.5)
    other.observe_extension_point("default-scheduler")("Filter", "Success", 0.1)
    other.sync(pending={"active": 7})


def test_dashboard_queries_through_a_real_prometheus(
    prometheus: tuple[str, m.SchedulerMetrics, m.SchedulerMetrics], tmp_path: Path
) -> None:
    base, metrics, other = prometheus
    _the_other_scheduler_works(other)
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO)
    summary = run_scenario(load_scenario(str(path)), metrics=metrics, pace=PACE)
    assert summary["podsScheduled"] == 150

    # the final state reaches Prometheus at the next scrape
    final = f'scheduler_schedule_attempts_total{{job="{JOB}", result="scheduled"}} == 150'
    _until(lambda: _query(base, final))
    queues = _by(_until(lambda: _query(base, resolve(QUEUES, JOB))), "queue")
    # v1.37 (the default release) also shows its PodGroup holding areas, at 0 from the start
    assert queues == {
        "active": 0,
        "backoff": 0,
        "unschedulable": 3,
        "gated": 0,
        "incomplete": 0,
        "pending": 0,
    }

    throughput = _by(_query(base, resolve(THROUGHPUT, JOB)), "profile")["default-scheduler"]
    # rate() divides by the whole 1m window and the run fits inside it, so the window's rate
    # times 60 is the Pods bound (up to Prometheus's edge extrapolation); the other job's
    # 500 Pods of the same profile are not in it
    assert 100 < throughput * 60 < 200

    p99 = _by(_query(base, resolve(P99_ATTEMPT, JOB)), "profile")["default-scheduler"]
    assert 0 < p99 <= m.ATTEMPT_BUCKETS[-1]

    points = _by(_query(base, resolve(P99_POINTS, JOB)), "extension_point")
    assert {"PreFilter", "Filter", "Score", "Bind"} <= set(points)
    for point, value in points.items():
        assert 0 < value <= m.EXTENSION_POINT_BUCKETS[-1], point

    # the other job, on its own, is the other scheduler
    assert _by(_query(base, resolve(QUEUES, OTHER_JOB)), "queue")["active"] == 7
    theirs = _by(_query(base, resolve(THROUGHPUT, OTHER_JOB)), "profile")["default-scheduler"]
    assert theirs * 60 > 400


def _dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


NOT_IN_THIS_RUN = (
    "scheduler_binder_conflicts_total",
    "scheduler_gang_attempts_total",
    "scheduler_quota_",
    "scheduler_preemption_victims_sum",
    "leader_election_master_status",
    "rest_client_",
)
"""Dashboard series the simulated run does not make (no shards, gangs, quotas, victims, API
client or Lease); a label-less or zero-started counter still answers."""


def test_every_dashboard_query_answers_for_one_job(
    prometheus: tuple[str, m.SchedulerMetrics, m.SchedulerMetrics], tmp_path: Path
) -> None:
    base, metrics, other = prometheus
    _the_other_scheduler_works(other)
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO)
    run_scenario(load_scenario(str(path)), metrics=metrics, pace=PACE)
    _until(lambda: _query(base, f'scheduler_pod_scheduling_attempts_count{{job="{JOB}"}} == 150'))

    variables = {v["name"]: v for v in _dashboard()["templating"]["list"]}
    assert {"datasource", "job", "instance", "profile"} <= set(variables)
    assert not variables["job"]["multi"] and not variables["job"]["includeAll"]

    def label_values(name: str, **values: str) -> set[str]:
        found = re.fullmatch(r"label_values\((.+), (\w+)\)", variables[name]["query"]["query"])
        assert found, variables[name]
        return _label_values(base, found.group(2), resolve(found.group(1), **values))

    assert label_values("job") == {JOB, OTHER_JOB}
    (instance,) = label_values("instance", job=JOB)
    profiles = label_values("profile", job=JOB, instance=grafana_regex(instance))
    assert profiles == {"default-scheduler"}

    empty = []
    for panel in _dashboard()["panels"]:
        for target in panel.get("targets", []):
            expr = resolve(target["expr"], JOB, instance=grafana_regex(instance))
            result = _query(base, expr)
            for series in result:
                assert series["metric"].get("job", JOB) == JOB, expr
            if not result and not any(n in expr for n in NOT_IN_THIS_RUN):
                empty.append((panel["title"], expr))
    assert empty == []
