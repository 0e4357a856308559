"""The Grafana dashboard: built on the PromQL the Prometheus integration test evaluates, every
metric it names is one kubesched exports, percentiles sit beside observation counts, and every
query parses (``promtool check rules``, where Debian's prometheus package is installed)."""

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

DASHBOARD = Path(__file__).resolve().parent.parent / "deploy/grafana/kubesched-dashboard.json"


def _panels() -> list[dict[str, Any]]:
    data = json.loads(DASHBOARD.read_text())
    return [p for p in data["panels"] if p["type"] != "row"]


def _exprs() -> list[str]:
    return [t["expr"] for p in _panels() for t in p["targets"]]


@pytest.mark.parametrize("query", ["THROUGHPUT", "QUEUES", "P99_ATTEMPT", "P99_POINTS"])
def test_operator_queries_are_on_the_dashboard(query: str) -> None:
    assert getattr(dashboard_queries, query) in _exprs()


def test_every_metric_is_exported() -> None:
    known = set(m.UPSTREAM_METRICS) | set(m.OWN_METRICS)
    for expr in _exprs():
        for name in re.findall(r"\bscheduler_[a-z_]+", expr):
            base = re.sub(r"_(bucket|count|sum)$", "", name)
            assert base in known, (name, expr)


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
                "rules": [{"record": f"kubesched:q{i}", "expr": e} for i, e in enumerate(_exprs())],
            }
        ]
    }
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    out = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stdout + out.stderr
