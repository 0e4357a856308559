"""Terminal tables of explain and schedule: one column per score plugin, numbers aligned."""

from __future__ import annotations

from typing import Any

from kubesched.report import text

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
