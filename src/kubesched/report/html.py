"""The static HTML report of a run: ``index.html`` beside its PNG plots and ``summary.json``.

Opens from disk without a server (relative image links, inline CSS, no scripts).
:func:`write_report` takes the summary dict that ``simulate --json-out`` saves (and that
``kubesched report RESULTS.json`` reads back); sections whose data a run lacks are left out
of the tables, and plots say so.  Denominators come first: an operator reads "P99 of what,
out of how many Pods" before any percentile.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from kubesched.api import source
from kubesched.report import plots
from kubesched.report.resultschema import check_results
from kubesched.sim import gangpaths, governance

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1000px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.92em; }
td, th { border: 1px solid #ccc; padding: 3px 10px; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption, p.note { font-size: 0.85em; color: #555; }
.bad { color: #b30000; font-weight: bold; } .ok { color: #2a7a2a; }
div.wide { max-width: 100%; overflow-x: auto; }
"""


class Markup(str):
    """Text that is already HTML (not escaped again by the table helpers)."""


def breakable(name: str) -> Markup:
    """``name`` escaped, with a line-break opportunity after each ``_`` (long metric names
    then wrap inside their cell instead of widening the table)."""
    return Markup(html.escape(name).replace("_", "_<wbr>"))


def _esc(v: Any) -> str:
    if isinstance(v, Markup):
        return str(v)
    return html.escape("-" if v is None else str(v))


def _table(rows: list[tuple[str, Any]], head: tuple[str, str] | None = None) -> str:
    out = ["<table>"]
    if head:
        out.append(f"<tr><th>{_esc(head[0])}</th><th>{_esc(head[1])}</th></tr>")
    for k, v in rows:
        cls = ' class="num"' if isinstance(v, int | float) else ""
        out.append(f"<tr><td>{_esc(k)}</td><td{cls}>{_esc(v)}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def _grid(headers: list[str], rows: list[list[Any]]) -> str:
    out = ["<table>", "<tr>" + "".join(f"<th>{_esc(h)}</th>" for h in headers) + "</tr>"]
    for row in rows:
        cells = []
        for v in row:
            cls = ' class="num"' if isinstance(v, int | float) else ""
            cells.append(f"<td{cls}>{_esc(v)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1e3:.3f}"


def denominators(s: dict[str, Any]) -> list[tuple[str, Any]]:
    """Pods created, scheduled, failed (last attempt an error), timed out (still Pending when
    the run stopped), and attempts by result."""
    waiting = s.get("waiting") or {}
    by_reason = waiting.get("byReason") or {}
    attempts = s.get("attempts") or {}
    return [
        ("Pods created", s.get("podsSubmitted")),
        ("Pods scheduled", s.get("podsScheduled")),
        ("Pods failed (scheduler error)", by_reason.get("SchedulerError", 0)),
        ("Pods timed out (still Pending at the end)", s.get("podsPending")),
        ("Attempts: scheduled", attempts.get("scheduled")),
        ("Attempts: unschedulable", attempts.get("unschedulable")),
        ("Attempts: error", attempts.get("error")),
        ("Success ratio (scheduled / attempts)", s.get("successRatio")),
        *_preemption_rows(s.get("preemptionLatencySeconds") or {}),
    ]


def _preemption_rows(p: dict[str, Any]) -> list[tuple[str, Any]]:
    """Preemptors and their latency from nomination to bind (simulated seconds)."""
    if not p.get("preemptors"):
        return []
    return [
        ("Preemptors (bound / all)", f"{p.get('bound')} / {p.get('preemptors')}"),
        ("Preemption latency, nominated to bound, P50 / P99 s", f"{p.get('p50')} / {p.get('p99')}"),
    ]


def configuration(s: dict[str, Any]) -> list[tuple[str, Any]]:
    """The run's identity and settings."""
    rows: list[tuple[str, Any]] = [
        ("Scenario", s.get("scenario")),
        ("Seed", s.get("seed")),
        ("Kubernetes version", s.get("kubernetesVersion")),
        ("Nodes", s.get("nodes")),
        ("Simulated seconds", s.get("virtualSeconds")),
        ("Wall-clock seconds", s.get("wallSeconds")),
        ("Scheduler wall-clock seconds", s.get("schedulerWallSeconds")),
        ("Attempts per wall-clock second", s.get("attemptsPerWallSecond")),
        ("Successful Pods per simulated second", s.get("scheduledPodsPerVirtualSecond")),
    ]
    for k, v in (s.get("config") or {}).items():
        rows.append((k, ", ".join(map(str, v)) if isinstance(v, list) else v))
    tl = s.get("timeline") or {}
    if tl:
        rows.append(("Sample interval (simulated s)", tl.get("interval")))
    return rows


def _latency_tables(s: dict[str, Any]) -> str:
    lat = s.get("latency") or {}
    parts = []
    for key, title in (
        ("extensionPointSeconds", "Extension points (scheduler_framework_extension_point_…)"),
        ("attemptSeconds", "Attempts by result (scheduler_scheduling_attempt_duration_seconds)"),
        ("pluginSeconds", "Plugins, sampled cycles (scheduler_plugin_execution_duration_…)"),
        ("sliSeconds", "Pod scheduling SLI, simulated time (…_pod_scheduling_sli_…)"),
    ):
        data = lat.get(key) or {}
        if not data:
            continue
        rows = [
            [name or "all", int(v.get("count") or 0), _ms(v.get("p50")), _ms(v.get("p99"))]
            for name, v in data.items()
        ]
        parts.append(f"<h3>{_esc(title)}</h3>")
        parts.append(_grid(["", "observations", "P50 ms", "P99 ms"], rows))
    return "\n".join(parts)


STARTUP_ROWS = (
    ("admission", "created to ungated (admission, gates)"),
    ("scheduling", "ungated to scheduled (queue, scheduling attempts)"),
    ("binding", "scheduled to bound (binding cycle, API)"),
    ("node", "bound to Ready (node side)"),
    ("total", "created to Ready"),
)


def _startup_table(s: dict[str, Any]) -> str:
    """Per startup segment: the Pods that completed it, P50 and P99 seconds."""
    seg = s.get("podStartupSeconds") or {}
    if not seg:
        return ""
    rows = [
        [f"{key}: {label}", (seg.get(key) or {}).get("pods"), *_quantiles(seg.get(key))]
        for key, label in STARTUP_ROWS
    ]
    return _grid(["segment", "Pods", "P50 s", "P99 s"], rows)


def _quantiles(v: dict[str, Any] | None) -> list[Any]:
    return [(v or {}).get("p50"), (v or {}).get("p99")]


def _waiting(s: dict[str, Any]) -> str:
    w = s.get("waiting") or {}
    rows = [[reason, n] for reason, n in (w.get("byReason") or {}).items()]
    out = [_grid(["PodScheduled reason", "Pods"], rows) if rows else "<p>None.</p>"]
    oldest = w.get("oldest")
    if oldest:
        out.append(
            _table(
                [
                    ("Oldest waiting Pod", oldest.get("pod")),
                    ("Age (s)", oldest.get("ageSeconds")),
                    ("Reason", oldest.get("reason")),
                    ("Message", oldest.get("message")),
                ]
            )
        )
    caps = w.get("capacity") or []
    if caps:  # the oldest Unschedulable Pods: short of capacity, or fragmented, or neither
        out.append("<p>Short of capacity or fragmented (the oldest Unschedulable Pods):</p>")
        rows = [
            [
                c["pod"],
                c["capacity"]["verdict"],
                c["capacity"]["eligibleNodes"],
                c["capacity"]["message"],
            ]
            for c in caps
        ]
        out.append(_grid(["Pod", "Capacity", "Eligible nodes", "Why"], rows))
    return "\n".join(out)


def _invariants(s: dict[str, Any]) -> str:
    inv = s.get("invariants") or {}
    if not inv:
        return "<p>Not checked.</p>"
    rows = []
    for k, v in inv.items():
        ok = not v
        mark = '<span class="ok">holds</span>' if ok else f'<span class="bad">{len(v)}</span>'
        rows.append(f"<tr><td>{_esc(k)}</td><td>{mark}</td></tr>")
    return "<table>" + "".join(rows) + "</table>"


def _gpu_table(s: dict[str, Any]) -> str:
    """The GPU measures at the end of the run (the last timeline sample), if any."""
    gpu = (s.get("timeline") or {}).get("gpu") or {}
    last = {k: v[-1] for k, v in gpu.items() if v and v[-1] is not None}
    if not last:
        return ""
    rows = [
        ("GPU fragmentation % (scheduler_gpu_fragmentation_ratio × 100)", "fragmentationPercent"),
        ("Idle 8-GPU nodes (scheduler_gpu_idle_whole_nodes)", "idleWholeGpuNodes"),
        (
            "Pods waiting for a whole node (scheduler_gpu_pods_waiting_for_whole_node)",
            "podsWaitingForWholeNode",
        ),
        ("Cross-NUMA Pods (scheduler_gpu_cross_numa_pods)", "crossNumaPods"),
    ]
    return _table([(label, last.get(key)) for label, key in rows], head=("at the end", "value"))


def _governance(s: dict[str, Any]) -> str:
    """``simulate --compare-governance``: both runs side by side (this page is the run with
    retryGovernance on)."""
    c = s.get("retryGovernanceComparison")
    if not c:
        return ""
    rows = [[label, off, on] for label, off, on in governance.rows(c)]
    return (
        "<h2>Retry governance: off and on, same seed</h2>\n"
        f"<p>Attempts saved: {_esc(c.get('attemptsSaved'))}. The plots below are the run "
        "with <code>retryGovernance</code> on.</p>\n" + _grid(["", "off (upstream)", "on"], rows)
    )


def _gang_paths(s: dict[str, Any]) -> str:
    """``simulate --compare-gangs``: the same jobs as Coscheduling and as Workload API
    gangs (this page is the run as written)."""
    c = s.get("gangPathComparison")
    if not c:
        return ""
    table = gangpaths.rows(c)
    return (
        "<h2>Gang paths: the same jobs as Coscheduling and as Workload API gangs</h2>\n"
        "<p>Times run from a gang's first member created to its last member bound or "
        "Ready, p50 / p99 over gangs. The plots below are the run as written.</p>\n"
        + _grid(list(table[0]), [list(r) for r in table[1:]])
    )


def _retried(s: dict[str, Any]) -> str:
    """The Pods that made the most unschedulable attempts, and what answers them."""
    top = s.get("mostRetried") or []
    if not top:
        return ""
    failed = (s.get("attempts") or {}).get("unschedulable", 0)
    rows = [[p["pod"], p["failedAttempts"], "bound" if p["bound"] else "pending"] for p in top]
    share = sum(p["failedAttempts"] for p in top)
    return (
        "<h2>Most retried Pods</h2>\n"
        f"<p>{_esc(share)} of {_esc(failed)} unschedulable attempts came from these Pods. "
        "Upstream retries a Pod rejected for resources on every Pod deletion in the cluster; "
        "NodeResourcesFit's <code>retryGovernance</code> wakes it only when the event's node "
        "has room for it (<code>kubesched simulate --compare-governance</code> runs both ways "
        "with the same seed).</p>\n" + _grid(["Pod", "failed attempts", "at the end"], rows)
    )


def render_html(s: dict[str, Any], captions: dict[str, str]) -> str:
    """The page, referring to the PNGs by their file names."""
    title = f"kubesched simulate: {s.get('scenario', 'run')} (seed {s.get('seed', '-')})"
    if s.get("kubernetesVersion"):
        title += f", Kubernetes {s['kubernetesVersion']}"

    def fig(name: str, absent: str = "") -> str:
        if name not in captions:
            return f'<p class="note">{_esc(absent)}</p>'
        return (
            f'<figure><img src="{html.escape(name)}" alt="{html.escape(name)}">'
            f"<figcaption>{_esc(captions.get(name, ''))}</figcaption></figure>"
        )

    pending = ", ".join(f"{k} {v}" for k, v in (s.get("pendingPods") or {}).items())
    util = ", ".join(f"{k} {v}%" for k, v in (s.get("utilization") or {}).items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>
<style>{CSS}</style></head>
<body>
<h1>{_esc(title)}</h1>
<h2>Denominators</h2>
{_table(denominators(s))}
<p>Pending by queue at the end: {_esc(pending or "-")}.
Utilisation at the end: {_esc(util or "-")}.</p>
{_governance(s)}
{_gang_paths(s)}
{_retried(s)}
<h2>Throughput and attempts</h2>
{fig("throughput.png")}
{fig("attempts.png")}
<h2>Queue</h2>
{fig("queues.png")}
<h2>Pods still waiting</h2>
{fig("waiting.png")}
{_waiting(s)}
<h2>Latency</h2>
{fig("latency.png")}
{_latency_tables(s)}
<h2>Startup: created to Ready</h2>
{fig("startup.png")}
{_startup_table(s)}
<h2>Resources</h2>
{fig("resources.png")}
<h2>GPU placement</h2>
{fig("gpu.png", "No GPU measures in this run: no GPU panels (they need GpuDevices enabled).")}
{_gpu_table(s)}
<h2>Invariants</h2>
{_invariants(s)}
<h2>Configuration</h2>
{_table(configuration(s), head=("setting", "value"))}
<p><a href="summary.json">summary.json</a> holds every number above.</p>
</body></html>
"""


def write_report(summary: dict[str, Any], out: str | Path) -> Path:
    """Write ``index.html``, the PNG plots and ``summary.json`` into ``out``; the index path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    captions = plots.render_all(summary, out)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    index = out / "index.html"
    index.write_text(render_html(summary, captions))
    return index


def load_results(path: str | Path) -> dict[str, Any]:
    """A saved summary (``simulate --json-out``); :class:`InputError` naming the fields if it
    is not one the report can draw (:mod:`kubesched.report.resultschema`)."""
    docs = source.load_text(source.read_text(str(path)), str(path))
    return check_results(docs[0] if len(docs) == 1 else None, file=str(path))
