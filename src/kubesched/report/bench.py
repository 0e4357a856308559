"""The static HTML report of a ``kubesched bench`` run: ``index.html``, PNGs, ``results.json``.

Opens from disk without a server (relative image links, inline CSS, no scripts).  One
section per workload result, denominators first (Pods created, bound, left unbound;
attempts by result), then one throughput plot per measured phase (the 1 s samples the
perf-dash percentiles are taken from), the perf-dash items as a percentile table with each
item's threshold verdict, and the settings the workload ran with.  ``results.json`` is the
perf-dash document of the run (what ``bench -o`` writes).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubesched.bench.collect import THROUGHPUT
from kubesched.bench.results import ATTEMPT_METRIC, MEMORY, WorkloadResult, perf_dash
from kubesched.report import plots
from kubesched.report.html import CSS, _esc, _grid, _table, breakable

PERCENTILES = ("Average", "Perc50", "Perc90", "Perc95", "Perc99")
SPLIT_LABELS = ("result", "extension_point")
"""Labels that tell apart items of one metric (shown beside the metric name)."""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "phase"


def _num(v: Any) -> Any:
    return round(v, 3) if isinstance(v, float) else v


def denominators(r: WorkloadResult) -> list[tuple[str, Any]]:
    """What every percentile of the workload is out of."""
    return [
        ("Pods created", r.pods_created),
        ("Pods scheduled (bound)", r.pods_bound),
        ("Pods failed or still pending at the end (unbound)", r.pods_unbound),
        ("Attempts: scheduled", r.attempts.get("scheduled", 0)),
        ("Attempts: unschedulable", r.attempts.get("unschedulable", 0)),
        ("Attempts: error", r.attempts.get("error", 0)),
        ("Throughput samples", sum(len(s) for s in r.throughput_samples.values())),
        ("Wall-clock seconds", round(r.wall_seconds, 3)),
        ("Peak RSS (MiB)", round(r.peak_rss_mib, 1)),
    ]


def configuration(r: WorkloadResult) -> list[tuple[str, Any]]:
    """The settings the workload ran with."""
    rows: list[tuple[str, Any]] = [("Binding", r.api.mode)]
    if r.api.mode != MEMORY:
        rows += [
            ("API latency (s)", r.api.latency),
            ("Client QPS / burst", f"{r.api.qps:g} / {r.api.burst}"),
            ("API calls (throttled)", f"{r.api.calls} ({r.api.throttled_calls})"),
        ]
    rows.append(("Threshold (pods/s)", r.threshold or "none"))
    for key, value in r.settings.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items()) or "-"
        rows.append((key, value))
    if r.short_run:
        rows.append(("Short run", "throughput is total / elapsed (no 1 s sample)"))
    if r.parallel is not None:
        rows.append(("Shards", r.parallel.get("shards")))
    return rows


def verdict(r: WorkloadResult, item: dict[str, Any]) -> str:
    """``pass`` / ``FAIL`` for an item carrying a threshold, else ``-``."""
    data = item["data"]
    keys = [k for k in data if k.endswith("Threshold")]
    if not keys:
        return "-"
    bucket = keys[0][: -len("Threshold")]
    labels = item["labels"]
    name, metric = labels.get("Name", ""), labels.get("Metric", "")
    failed = (
        f"{name}: expected {metric} {bucket} ",
        f"{name}: no data present for {metric!r}",
    )
    return "FAIL" if any(f.startswith(failed) for f in r.failures) else "pass"


def percentile_rows(r: WorkloadResult) -> list[list[Any]]:
    """One row per perf-dash item: phase, metric, unit, percentiles, threshold, verdict."""
    rows: list[list[Any]] = []
    for item in r.items:
        labels, data = item["labels"], item["data"]
        metric = labels.get("Metric", "")
        split = [labels[k] for k in SPLIT_LABELS if k in labels]
        if split:
            metric += " {" + ", ".join(split) + "}"
        threshold = next((v for k, v in data.items() if k.endswith("Threshold")), None)
        rows.append(
            [
                labels.get("Name", r.name),
                breakable(metric),
                item.get("unit", ""),
                *(_num(data.get(k)) for k in PERCENTILES),
                threshold,
                verdict(r, item),
            ]
        )
    return rows


def percentile_table(r: WorkloadResult) -> str:
    """The perf-dash items as a table that fits the page: the phase column only when some
    item's phase is not the workload itself, metric names wrapping at ``_``."""
    if not r.items:
        return "<p>No measured phase finished.</p>"
    headers = ["phase", "metric", "unit", *PERCENTILES, "threshold", "verdict"]
    rows = percentile_rows(r)
    if all(row[0] == r.name for row in rows):
        headers, rows = headers[1:], [row[1:] for row in rows]
    return f'<div class="wide">{_grid(headers, rows)}</div>'


def _status(r: WorkloadResult) -> str:
    if r.error is not None:
        return f'<span class="bad">ERROR: {_esc(r.error)}</span>'
    if r.failures:
        return '<span class="bad">FAIL: ' + _esc("; ".join(r.failures)) + "</span>"
    return '<span class="ok">ok</span>'


def overview(results: Sequence[WorkloadResult]) -> str:
    """One row per workload: throughput, attempt latency, Pods, status."""
    rows = []
    for r in results:
        tp = r.metric(THROUGHPUT) or {}
        at = r.metric(ATTEMPT_METRIC) or {}
        rows.append(
            [
                r.name + ("" if r.api.mode == MEMORY else f" [{r.api.mode}]"),
                _num(tp.get("Average")),
                _num(tp.get("Perc50")),
                _num(at.get("Perc99")),
                r.pods_bound,
                r.pods_created,
                "ok" if r.ok else ("ERROR" if r.error else "FAIL"),
            ]
        )
    headers = ["workload", "avg pods/s", "p50 pods/s", "attempt p99 ms", "bound", "created", ""]
    return _grid(headers, rows)


def _section(r: WorkloadResult, figures: list[tuple[str, str]]) -> str:
    figs = "\n".join(
        f'<figure><img src="{html.escape(name)}" alt="{html.escape(name)}">'
        f"<figcaption>{_esc(caption)}</figcaption></figure>"
        for name, caption in figures
    )
    mode = "" if r.api.mode == MEMORY else f" [{r.api.mode} binds]"
    return f"""<h2>{_esc(r.name + mode)}</h2>
<p>{_status(r)}</p>
<h3>Denominators</h3>
{_table(denominators(r))}
<h3>Throughput</h3>
{figs}
<h3>Percentiles (perf-dash items)</h3>
{percentile_table(r)}
<h3>Configuration</h3>
{_table(configuration(r), head=("setting", "value"))}
"""


def render_html(results: Sequence[WorkloadResult], figures: Sequence[list[tuple[str, str]]]) -> str:
    """The page; ``figures[i]`` are result i's ``(png file name, caption)``."""
    title = f"kubesched bench: {len(results)} workload(s)"
    sections = "\n".join(_section(r, f) for r, f in zip(results, figures, strict=True))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>
<style>{CSS}</style></head>
<body>
<h1>{_esc(title)}</h1>
{overview(results)}
{sections}
<p><a href="results.json">results.json</a> is the perf-dash document of this run.</p>
</body></html>
"""


def _plot(r: WorkloadResult, index: int, out: Path) -> list[tuple[str, str]]:
    phases = r.throughput_samples or {r.name: []}
    figures = []
    for j, (phase, samples) in enumerate(phases.items()):
        name = f"throughput-{index}-{j}-{_slug(phase)}.png"
        average = next(
            (
                float(it["data"]["Average"])
                for it in r.items
                if it["labels"].get("Metric") == THROUGHPUT and it["labels"].get("Name") == phase
            ),
            None,
        )
        caption = plots.plot_bench_throughput(
            phase, samples, out / name, average=average, threshold=r.threshold
        )
        figures.append((name, caption))
    return figures


def write(results: Sequence[WorkloadResult], directory: str | Path) -> Path:
    """Write ``index.html``, one PNG per measured phase and ``results.json`` into
    ``directory``; the index path."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    figures = [_plot(r, i, out) for i, r in enumerate(results)]
    (out / "results.json").write_text(json.dumps(perf_dash(results), indent=2) + "\n")
    index = out / "index.html"
    index.write_text(render_html(results, figures))
    return index
