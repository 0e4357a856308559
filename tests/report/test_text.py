"""Terminal tables of explain and schedule: one column per score plugin, numbers aligned."""

from __future__ import annotations

from typing import Any

from kubesched.report import html, text

EXPLAIN: dict[str, Any] = {
    "pod": "shop/web",
    "profile": "default-scheduler",
    "result": "Scheduled",
    "selectedNode": "node-c",
    "message": "2/3 nodes are feasible; selected node-c with score 474",
    "nodes": {
        "node-a": {
            "feasible": False,
            "plugin": "NodeResourcesFit",
            "reasons": ["Insufficient cpu"],
            "score": 0,
            "scores": {},
        },
        "node-b": {
            "feasible": True,
            "plugin": None,
            "reasons": [],
            "score": 49,
            "scores": {"TaintToleration": 100, "NodeResourcesFit": 7},
        },
        "node-c": {
            "feasible": True,
            "plugin": None,
            "reasons": [],
            "score": 474,
            "scores": {"TaintToleration": 100, "NodeResourcesFit": 85},
        },
    },
}


def test_explain_has_a_column_per_score_plugin_and_sorted_rows() -> None:
    out = text.explain_table(EXPLAIN)
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("NODE"))
    assert lines[header].split() == [
        "NODE",
        "VERDICT",
        "TOTAL",
        "TaintToleration",
        "NodeResourcesFit",
        "REASONS",
    ]
    rows = lines[header + 2 : header + 5]
    assert rows[0].startswith("*node-c") and rows[1].startswith(" node-b")
    assert rows[2].split()[:4] == ["node-a", "rejected", "by", "NodeResourcesFit"]
    assert rows[2].endswith("Insufficient cpu")
    total_end = lines[header].index("TOTAL") + len("TOTAL")
    assert rows[0][:total_end].endswith("474") and rows[1][:total_end].endswith(" 49")
    assert "Feasible: 2/3 nodes" in out and lines[header - 1] == ""


def test_schedule_right_aligns_attempts() -> None:
    result = {
        "pods": {
            "a/x": {"result": "Scheduled", "node": "n1", "attempts": 1, "message": "ok"},
            "a/y": {"result": "Unschedulable", "node": None, "attempts": 12, "message": "no"},
        },
        "summary": {
            "pods": 2,
            "scheduled": 1,
            "unschedulable": 1,
            "gated": 0,
            "error": 0,
            "ignored": 0,
        },
    }
    lines = text.schedule_table(result).splitlines()
    end = lines[0].index("ATTEMPTS") + len("ATTEMPTS")
    assert lines[2][:end].endswith(" 1") and lines[3][:end].endswith("12")
    assert lines[-1].startswith("2 pods: 1 scheduled, 1 unschedulable")


def test_schedule_table_and_html_report_show_preemption_latency_when_pods_preempted() -> None:
    latency = {"preemptors": 2, "bound": 1, "p50": 30.0105, "p99": 30.0105}
    summary = {"pods": 3, "scheduled": 2, "unschedulable": 1, "gated": 0, "error": 0}
    result = {"pods": {}, "summary": {**summary, "ignored": 0}}
    assert "preemption" not in text.schedule_table(result)
    result["summary"]["preemptionLatencySeconds"] = latency
    assert text.schedule_table(result).splitlines()[-1] == (
        "preemption latency    p50 30.0105 s, p99 30.0105 s nominated to bound "
        "(1/2 preemptors bound)"
    )
    html_rows = dict(html.denominators({"preemptionLatencySeconds": latency}))
    assert html_rows["Preemption latency, nominated to bound, P50 / P99 s"] == "30.0105 / 30.0105"
    assert "Preemptors (bound / all)" not in dict(html.denominators({}))
