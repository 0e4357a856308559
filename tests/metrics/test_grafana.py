"""The Grafana dashboard: built on the PromQL the Prometheus integration test evaluates, every
metric it names is one kubesched exports, every series is chosen by the ``job``, ``instance``
and ``profile`` variables (so kubesched and kube-scheduler side by side are never summed
together), rate windows are ``$__rate_interval``, percentiles sit beside observation counts,
and every query parses (``promtool check rules``, where Debian's prometheus package is
installed)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched import metrics as m
from tests.integration import test_prometheus as dashboard_queries

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy/grafana/kubesched-dashboard.json"


def _panels() -> list[dict[str, Any]]:
    data = json.loads(DASHBOARD.read_text())
    return [p for p in data["panels"] if p["type"] != "row"]


def _exprs() -> list[str]:
    return [t["expr"] for p in _panels() for t in p["targets"]]


@pytest.mark.parametrize("query", ["THROUGHPUT", "QUEUES", "P99_ATTEMPT", "P99_POINTS"])
def test_operator_queries_are_on_the_dashboard(query: str) -> None:
    assert getattr(dashboard_queries, query) in _exprs()


METRIC = re.compile(r"\b((?:scheduler|rest_client|leader_election|process)_[a-z_]+)(\{[^}]*\})?")
PROCESS = ("process_cpu_seconds_total", "process_resident_memory_bytes")
"""The process collector's series the dashboard plots (as kubernetes-mixin's does)."""


def _base(name: str) -> str:
    known = {*m.UPSTREAM_METRICS, *m.OWN_METRICS, *m.COMPONENT_METRICS, *PROCESS}
    if name in known:
        return name
    return re.sub(r"_(bucket|count|sum)$", "", name)


def test_every_metric_is_exported() -> None:
    known = {*m.UPSTREAM_METRICS, *m.OWN_METRICS, *m.COMPONENT_METRICS}
    exported = {name for name, _ in m.SchedulerMetrics().samples()}
    for expr in _exprs():
        for name, _ in METRIC.findall(expr):
            assert _base(name) in known or name in exported, (name, expr)


def test_every_series_is_chosen_by_job_instance_and_profile() -> None:
    catalog = {**m.UPSTREAM_METRICS, **m.OWN_METRICS, **m.COMPONENT_METRICS}
    seen = 0
    for expr in _exprs():
        for name, braces in METRIC.findall(expr):
            seen += 1
            assert 'job="$job"' in braces and 'instance=~"$instance"' in braces, (name, expr)
            spec = catalog.get(_base(name))
            if spec is not None and "profile" in spec[1]:
                assert 'profile=~"$profile"' in braces, (name, expr)
    assert seen >= len(_exprs())


def test_template_variables() -> None:
    data = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in data["templating"]["list"]}
    assert list(variables) == ["datasource", "job", "instance", "profile"]
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    job = variables["job"]
    assert (job["multi"], job["includeAll"]) == (False, False)  # one scheduler at a time
    for name in ("instance", "profile"):
        v = variables[name]
        assert v["multi"] and v["includeAll"] and v["allValue"] == ".+", name
        assert 'job="$job"' in v["query"]["query"], name
    assert 'instance=~"$instance"' in variables["profile"]["query"]["query"]
    for v in list(variables.values())[1:]:
        assert v["type"] == "query" and v["datasource"]["uid"] == "${datasource}"
    for p in _panels():
        assert p["datasource"]["uid"] == "${datasource}", p["title"]
        assert all(t["datasource"]["uid"] == "${datasource}" for t in p["targets"]), p["title"]


def test_rate_windows_are_the_rate_interval() -> None:
    for expr in _exprs():
        windows = re.findall(r"\[([^\]]*)\]", expr)
        assert all(w == "$__rate_interval" for w in windows), expr
        if re.search(r"\b(rate|increase)\(", expr):
            assert windows, expr


def test_the_component_row_plots_what_every_component_exports() -> None:
    names = {_base(n) for e in _exprs() for n, _ in METRIC.findall(e)}
    assert set(m.COMPONENT_METRICS) | set(PROCESS) <= names


def test_percentiles_come_with_observation_counts() -> None:
    quantile_panels = [
        p for p in _panels() if any("histogram_quantile" in t["expr"] for t in p["targets"])
    ]
    assert len(quantile_panels) >= 4
    for p in quantile_panels:
        counts = [t for t in p["targets"] if re.search(r"_seconds_count\b", t["expr"])]
        assert counts and all("observations" in t["legendFormat"] for t in counts), p["title"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_every_query_parses(tmp_path: Path) -> None:
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"kubesched:q{i}", "expr": dashboard_queries.resolve(e, "kubesched")}
                    for i, e in enumerate(_exprs())
                ],
            }
        ]
    }
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    out = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stdout + out.stderr
