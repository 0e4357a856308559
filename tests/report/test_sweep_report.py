"""The sweep table and HTML page: ranked rows, spread, flags, denominators, skipped variants."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kubesched.report.sweep import render_html, sweep_table, write_report
from kubesched.sweep.aggregate import compare


def result() -> dict[str, Any]:
    def row(i: int, v: str, seed: int, pps: float, frag: float) -> dict[str, Any]:
        return {
            "index": i, "variant": v, "seed": seed, "podsSubmitted": 50, "gangs": 2,
            "podsScheduled": 50, "podsPerSecond": pps, "fragmentationPercent": frag,
            "attempts": {"scheduled": 50, "unschedulable": 3, "error": 0}, "successRatio": 0.94,
            "invariantsHold": True, "queueP99": 0.25,
        }  # fmt: skip

    rows = [
        row(0, "base", 1, 100.0, 10.0), row(1, "base", 2, 120.0, 10.0),
        row(2, "fast", 1, 300.0, 14.0), row(3, "fast", 2, 320.0, 15.0),
        {"index": 4, "variant": "sharded", "seed": 1, "skipped": "not wired"},
    ]  # fmt: skip
    cmp = compare(rows, ["base", "fast", "sharded"], "base")
    return {
        "sweep": "demo", "class": "search", "seeds": [1, 2], "baseline": "base",
        "base": {"kind": "scenario", "scenario": "s.yaml"}, "backend": "local",
        "wallSeconds": 1.5, "rows": rows, "settings": {"base": {}, "fast": {"x": 1}}, **cmp,
    }  # fmt: skip


def test_table_ranks_flags_and_states_denominators() -> None:
    text = sweep_table(result())
    lines = text.splitlines()
    assert "Pods submitted per seed {'1': 50, '2': 50}" in lines[1]
    assert "same for every variant: yes" in lines[1]
    body = [ln for ln in lines if ln[:1].isdigit() or ln.startswith("-  ")]
    assert body[0].startswith("1     base (baseline)")
    assert body[1].startswith("2     fast") and "faster but worse placement" in body[1]
    assert "110 ±14" in body[0]  # mean ±sd over seeds
    assert any("skipped: not wired" in ln for ln in lines)


def test_html_page_and_json(tmp_path: Path) -> None:
    r = result()
    page = render_html(r)
    assert page.count("<tr>") >= 3 and 'class="bad">faster but worse' in page
    index = write_report(r, tmp_path / "rep")
    assert index.read_text() == page
    assert json.loads((tmp_path / "rep" / "sweep.json").read_text())["ranking"] == ["base", "fast"]
