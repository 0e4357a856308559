"""A real Prometheus scrapes a live kubesched replica (against the fake API server) under
kube-scheduler's job name, and the community kube-scheduler dashboard (kubernetes-mixin's
``dashboards/scheduler.libsonnet``, single-cluster) shows data: every panel whose metric
kube-scheduler v1.34 still exports answers, as do the instance variable and the component row
of ``deploy/grafana/``.  Loopback only, bounded in time; skipped without ``prometheus``."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched import metrics as m
from kubesched.live.client import connect
from kubesched.live.runner import LiveScheduler
from tests.integration.test_prometheus import (
    DASHBOARD,
    PROMETHEUS,
    _label_values,
    _query,
    _until,
    grafana_regex,
    resolve,
    scraping,
)
from tests.live.conftest import FAST, Api, make_config, node, pod, wait_for
from tests.live.fakeapi import FakeApiServer

pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason="prometheus binary not installed")

SELECTOR = 'job="kube-scheduler"'
"""The mixin's ``kubeSchedulerSelector``."""
MIXIN = {
    "Up": f"sum(up{{{SELECTOR}}})",
    "Scheduling Rate (scheduling algorithm)": (
        "sum(rate(scheduler_scheduling_algorithm_duration_seconds_count"
        f'{{{SELECTOR}, instance=~"$instance"}}[5m])) by (instance)'
    ),
    "Scheduling latency 99th Quantile (scheduling algorithm)": (
        "histogram_quantile(0.99, sum(rate(scheduler_scheduling_algorithm_duration_seconds_bucket"
        f'{{{SELECTOR},instance=~"$instance"}}[5m])) by (instance, le))'
    ),
    "Kube API Request Rate (2xx)": (
        f'sum(rate(rest_client_requests_total{{{SELECTOR}, instance=~"$instance",code=~"2.."}}'
        "[5m]))"
    ),
    "Post Request Latency 99th Quantile": (
        "histogram_quantile(0.99, sum(rate(rest_client_request_duration_seconds_bucket"
        f'{{{SELECTOR}, instance=~"$instance", verb="POST"}}[5m])) by (verb, url, le))'
    ),
    "Get Request Latency 99th Quantile": (
        "histogram_quantile(0.99, sum(rate(rest_client_request_duration_seconds_bucket"
        f'{{{SELECTOR}, instance=~"$instance", verb="GET"}}[5m])) by (verb, url, le))'
    ),
    "Memory": f'process_resident_memory_bytes{{{SELECTOR}, instance=~"$instance"}}',
    "CPU usage": f'rate(process_cpu_seconds_total{{{SELECTOR}, instance=~"$instance"}}[5m])',
}
"""The mixin's panels whose metrics v1.34 exports (its e2e, binding and volume series were
removed upstream before v1.34, and Python has no goroutines)."""
MIXIN_INSTANCES = f"process_cpu_seconds_total{{{SELECTOR}}}"
"""The mixin's instance variable: ``label_values(<this>, instance)``."""
COMPONENT_ROW = "What every Kubernetes component exports"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[str, LiveScheduler]]:
    """A leader-elected replica that has bound one Pod, scraped as job kube-scheduler."""
    fake = FakeApiServer()
    api = Api(fake)
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text(fake.kubeconfig())
    metrics = m.SchedulerMetrics()
    client = connect(kubeconfig=str(kubeconfig), metrics=metrics.rest_client)
    replica = LiveScheduler(
        make_config(),
        client,
        identity="a",
        metrics=metrics,
        timing=FAST,
        election_client=client.sibling(0, 1),
    )
    thread = threading.Thread(target=replica.run, daemon=True)
    with (
        m.MetricsServer(metrics) as server,
        scraping(tmp_path, {"kube-scheduler": server.port}) as base,
    ):
        thread.start()
        try:
            api.create(node("n1"))
            api.create(pod("p"))
            wait_for(lambda: api.node_of("p") == "n1")
            yield base, replica
        finally:
            replica.stop()
            thread.join(8)
            client.close()
            fake.close()


def _instance(base: str) -> str:
    (instance,) = _label_values(base, "instance", MIXIN_INSTANCES)
    return instance


def test_the_kubernetes_mixin_scheduler_dashboard_shows_data(
    live: tuple[str, LiveScheduler],
) -> None:
    base, _ = live
    instance = _instance(base)  # the mixin's instance variable

    def answered() -> dict[str, list[dict[str, Any]]]:
        got = {
            title: _query(base, expr.replace("$instance", grafana_regex(instance)))
            for title, expr in MIXIN.items()
        }
        # a rate needs two scrapes after the bind
        return got if all(got.values()) else {}

    got = _until(answered)
    assert float(got["Up"][0]["value"][1]) == 1
    assert float(got["Kube API Request Rate (2xx)"][0]["value"][1]) > 0
    assert float(got["Memory"][0]["value"][1]) > 1e6


def test_the_component_row_of_the_kubesched_dashboard(live: tuple[str, LiveScheduler]) -> None:
    base, replica = live
    instance = grafana_regex(_instance(base))
    panels = json.loads(DASHBOARD.read_text())["panels"]
    start = next(i for i, p in enumerate(panels) if p["title"].startswith(COMPONENT_ROW))
    row = panels[start + 1 :]
    exprs = {t["expr"] for p in row for t in p.get("targets", [])}
    assert len(exprs) >= 5

    def answered() -> dict[str, list[dict[str, Any]]]:
        got = {e: _query(base, resolve(e, "kube-scheduler", instance=instance)) for e in exprs}
        return got if all(got.values()) else {}

    got = _until(answered)
    leader = next(v for e, v in got.items() if "leader_election_master_status" in e)
    assert leader[0]["metric"]["name"] == replica.config.leader_election.resource_name
    assert float(leader[0]["value"][1]) == 1
    codes = next(v for e, v in got.items() if "rest_client_requests_total" in e)
    assert {("POST", "201"), ("GET", "200")} <= {
        (s["metric"]["method"], s["metric"]["code"]) for s in codes
    }
