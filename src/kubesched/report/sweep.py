"""A sweep's comparison as a terminal table and a static HTML page.

One row per variant, ranked (:mod:`kubesched.sweep.aggregate`): every cell is the mean over
seeds with its standard deviation, the denominators (Pods submitted and gangs per seed, equal
for every row) stated above the table, and the flags beside the numbers.  The HTML page
(``index.html`` + ``sweep.json``, no scripts) adds a bar per cell so differences show at a
glance, and every task's row; when every variant has a predicted upstream Pods/s (a scenario
timed by upstream's cost model) it also plots that against the variable (``predicted.png``,
:mod:`kubesched.report.sweepplot`).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from kubesched.report import html as run_html
from kubesched.report.sweepplot import plot_predicted
from kubesched.report.text import _table

COLUMNS: list[tuple[str, str, str]] = [
    ("podsPerSecond", "PODS/S", "successful Pods per scheduler wall-clock second"),
    ("podsPerSimSecond", "PODS/SIM-S", "successful Pods per simulated second"),
    (
        "predictedUpstreamPodsPerSecond",
        "UPSTREAM PODS/S",
        "predicted upstream kube-scheduler Pods/s (timing.costModel: upstream)",
    ),
    ("queueP99", "QUEUE P99 S", "creation to bind, every submitted Pod (Pending: age at end)"),
    ("attempts.scheduled", "SCHED", "attempts: scheduled"),
    ("attempts.unschedulable", "UNSCHED", "attempts: unschedulable"),
    ("attempts.error", "ERR", "attempts: error"),
    ("successRatio", "SUCCESS", "scheduled / all attempts"),
    ("podsScheduled", "BOUND", "Pods bound"),
    ("fragmentationPercent", "FRAG %", "free capacity on partly used nodes, mean over the run"),
    ("idleWholeGpuNodes", "IDLE GPU NODES", "8-GPU nodes with no GPU used, mean over the run"),
    ("gangTtcP50", "GANG TTC P50 S", "gang first Pod to minMember bound, median"),
    ("gangsComplete", "GANGS DONE", "gangs that reached minMember bound"),
    ("preemptionVictims", "PREEMPTED", "Pods preempted"),
]


def _cell(stat: dict[str, Any] | None) -> str:
    """``mean ±sd`` with the decimals the mean's size calls for (sd left out when 0)."""
    if not stat or stat.get("mean") is None:
        return "-"
    mean, sd = float(stat["mean"]), float(stat.get("sd") or 0.0)
    size = abs(mean)
    digits = 0 if size >= 100 or mean.is_integer() else 1 if size >= 10 else 2 if size >= 1 else 4
    text = f"{mean:.{digits}f}"
    return text + (f" ±{sd:.{digits}f}" if stat.get("n", 0) > 1 and sd else "")


def _head(result: dict[str, Any]) -> list[str]:
    d = result.get("denominators") or {}
    pods = d.get("podsSubmittedPerSeed") or {}
    gangs = d.get("gangsPerSeed") or {}
    same = "yes" if d.get("sameForEveryVariant") else "NO"
    base = result.get("base") or {}
    what = base.get("scenario") or base.get("config") or base.get("pods") or ""
    return [
        f"sweep {result['sweep']}: {len(result['variants'])} variants of class "
        f"{result['class']} x seeds {result['seeds']} on {base.get('kind')} {what}",
        f"every row: Pods submitted per seed {pods}, gangs per seed {gangs} "
        f"(same for every variant: {same}); mean ±sd over seeds; baseline {result['baseline']}",
        "",
    ]


def sweep_table(result: dict[str, Any]) -> str:
    """The ranked comparison for a terminal."""
    variants = result["variants"]
    order = list(result["ranking"]) + [v for v in variants if v not in result["ranking"]]
    rows = []
    for name in order:
        v = variants[name]
        rank = str(v["rank"]) if v.get("rank") else "-"
        label = name + (" (baseline)" if v.get("baseline") else "")
        if "skipped" in v:
            rows.append([rank, label, *(["-"] * len(COLUMNS)), "skipped: " + v["skipped"]])
            continue
        rows.append([rank, label, *(_cell(v.get(c)) for c, _, _ in COLUMNS), "; ".join(v["flags"])])
    headers = ["RANK", "VARIANT", *(h for _, h, _ in COLUMNS), "FLAGS"]
    table = _table(headers, rows, right=tuple(range(2, 2 + len(COLUMNS))))
    tail = (
        f"\n\n{len(result['rows'])} runs on {result['backend']} in {result['wallSeconds']} s. "
        "PODS/S is wall-clock (machine-dependent); every other column is reproducible per seed."
    )
    return "\n".join(_head(result)) + table + tail


def _bar(stat: dict[str, Any] | None, top: float) -> str:
    if not stat or stat.get("mean") is None:
        return "-"
    width = 0 if top <= 0 else max(1, round(80 * float(stat["mean"]) / top))
    return (
        f'<div style="background:#9ecae1;width:{width}px;height:8px"></div>'
        f"{html.escape(_cell(stat))}"
    )


def render_html(result: dict[str, Any], figure: str | None = None) -> str:
    """The report page (``figure``: the caption of ``predicted.png``, when drawn)."""
    variants = result["variants"]
    order = list(result["ranking"]) + [v for v in variants if v not in result["ranking"]]
    tops = {
        c: max((abs(variants[n].get(c, {}).get("mean") or 0.0) for n in order), default=0.0)
        for c, _, _ in COLUMNS
    }
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ("Rank", "Variant"))
    head += "".join(f'<th title="{html.escape(t)}">{html.escape(h)}</th>' for _, h, t in COLUMNS)
    body = []
    for name in order:
        v = variants[name]
        cells = [str(v.get("rank") or "-"), name + (" (baseline)" if v.get("baseline") else "")]
        tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells)
        if "skipped" in v:
            tds += f'<td colspan="{len(COLUMNS) + 1}">skipped: {html.escape(v["skipped"])}</td>'
        else:
            tds += "".join(f'<td class="num">{_bar(v.get(c), tops[c])}</td>' for c, _, _ in COLUMNS)
            flags = "; ".join(v["flags"])
            tds += f'<td class="bad">{html.escape(flags)}</td>' if flags else "<td></td>"
        body.append(f"<tr>{tds}</tr>")
    legend = run_html._table([(h, t) for _, h, t in COLUMNS], head=("column", "meaning"))
    runs = run_html._grid(
        ["task", "variant", "seed", "pods/s", "queue p99 s", "frag %", "invariants"],
        [
            [r["index"], r["variant"], r["seed"], r.get("podsPerSecond"), r.get("queueP99"),
             r.get("fragmentationPercent"),
             "skipped" if r.get("skipped") else ("hold" if r.get("invariantsHold") else "VIOLATED")]
            for r in result["rows"]
        ],
    )  # fmt: skip
    title = f"kubesched sweep: {result['sweep']}"
    intro = "".join(f"<p>{html.escape(line)}</p>" for line in _head(result) if line)
    settings = run_html._table(
        [(n, json.dumps(s)) for n, s in (result.get("settings") or {}).items()],
        head=("variant", "settings"),
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{run_html.CSS} body {{ max-width: none; margin: 2em; }}
td div {{ margin-bottom: 2px; }}</style></head>
<body>
<h1>{html.escape(title)}</h1>
{intro}
<h2>Comparison (ranked; flagged variants last)</h2>
<table><tr>{head}<th>Flags</th></tr>
{"".join(body)}
</table>
{_figure(figure)}
<p>A variant that is faster but worse on placement quality than the baseline is flagged and
ranked after every unflagged one.  Pods/s is wall-clock; every other number is reproducible
for its seed.</p>
<h2>Columns</h2>
{legend}
<h2>Variants</h2>
{settings}
<h2>Every run</h2>
{runs}
<p><a href="sweep.json">sweep.json</a> holds every number above.</p>
</body></html>
"""


def _figure(caption: str | None) -> str:
    if caption is None:
        return ""
    return (
        f'<figure><img src="predicted.png" alt="{html.escape(caption)}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def write_report(result: dict[str, Any], out: str | Path) -> Path:
    """Write ``index.html``, ``sweep.json`` and (see the module docstring) ``predicted.png``
    into ``out``; the index path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").write_text(json.dumps(result, indent=2))
    caption = plot_predicted(result, out / "predicted.png")
    index = out / "index.html"
    index.write_text(render_html(result, caption))
    return index
