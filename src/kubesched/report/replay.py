"""A recording's replay beside the real scheduler: the text table ``kubesched replay DIR``
prints, and the HTML report (``--report OUT/``) showing both sides.

The report's first section is the comparison (:func:`kubesched.record.replay.compare`):
denominators, placements, time to bind and queueing time, attempts and success ratio,
fragmentation and utilisation, real beside kubesched, with two plots
(:mod:`kubesched.report.replayplot`); the rest is the kubesched run's own report
(:func:`kubesched.report.html.render_html`).  ``replay.json`` beside it holds the whole
document, ``summary.json`` the kubesched run's summary.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from kubesched.report import html as page
from kubesched.report import plots, replayplot

Obj = dict[str, Any]


def _esc(v: Any) -> str:
    return html.escape("-" if v is None else str(v))


def _q(d: Obj | None, key: str) -> Any:
    return None if d is None else d.get(key)


def rows(doc: Obj) -> list[tuple[str, Any, Any]]:
    """(measure, real scheduler, kubesched) rows of the comparison."""
    c = doc["comparison"]
    p = c["placements"]
    ttb, queue = c["timeToBindSeconds"], c["queueingSeconds"]
    att = c["attempts"]
    out: list[tuple[str, Any, Any]] = [
        ("Pods compared (kubesched's profiles, created unbound)", c["pods"], c["pods"]),
        ("Pods bound in the window", ttb["real"]["pods"], ttb["replay"]["pods"]),
        (
            "Bound by one side only",
            p["boundOnlyByRealScheduler"],
            p["boundOnlyByKubesched"],
        ),
        ("Bound by both: same node / different node", p["same"], p["different"]),
    ]
    for q in ("p50", "p90", "p99", "max"):
        out.append((f"Time to bind {q}, s", _q(ttb["real"], q), _q(ttb["replay"], q)))
    for q in ("p50", "p99"):
        out.append((f"Queueing (to the decision) {q}, s", "not observable", _q(queue["replay"], q)))
    out += [
        ("Attempts: scheduled", att["real"]["scheduled"], att["replay"]["scheduled"]),
        ("Attempts: unschedulable", att["real"]["unschedulable"], att["replay"]["unschedulable"]),
        ("Attempts: error", "-", att["replay"]["error"]),
        (
            "Success ratio (scheduled / attempts)",
            c["successRatio"]["real"],
            c["successRatio"]["replay"],
        ),
    ]
    for what, label in (
        ("fragmentationPercent", "Fragmentation"),
        ("utilizationPercent", "Utilisation"),
    ):
        real, ours = c[what]["real"], c[what]["replay"]
        for res in sorted(set(real) | set(ours)):
            for stat in ("mean", "end"):
                out.append(
                    (
                        f"{label} {res} %, {stat}",
                        _q(real.get(res), stat),
                        _q(ours.get(res), stat),
                    )
                )
    return out


def comparison_text(doc: Obj) -> str:
    """The comparison as aligned text, headed by what was replayed how."""
    r, how, c = doc["recording"], doc["replayedAs"], doc["comparison"]
    head = [
        f"replay of {r['directory']}: {r['durationSeconds']} s recorded on "
        f"{r['server'] or 'an API server'} ({r['kubernetesVersion'] or 'version unknown'}), "
        f"{r['events']} events, {r['nodesAtStart']} Nodes and {r['podsAtStart']} Pods at time 0",
        f"replayed as Kubernetes {how['kubernetesVersion']}, configuration "
        f"{how['config']} (profiles {', '.join(how['profiles'])}), seed {how['seed']}",
        "",
    ]
    table = [("", "real scheduler", "kubesched"), *rows(doc)]
    cells = [[str("-" if v is None else v) for v in row] for row in table]
    widths = [max(len(row[i]) for row in cells) for i in range(3)]
    lines = [
        f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}" for row in cells
    ]
    diffs = c["placements"]["differences"]
    tail = []
    if diffs:
        tail.append("")
        tail.append(f"placements that differ ({c['placements']['different']}; first {len(diffs)}):")
        tail += [f"  {d['pod']}: real {d['real']}, kubesched {d['replay']}" for d in diffs[:20]]
    bad = {k: v for k, v in (c.get("invariants") or {}).items() if v}
    if bad:
        tail.append("")
        tail.append(
            "invariants violated in the kubesched run: "
            + ", ".join(f"{k} ({len(v)})" for k, v in bad.items())
        )
    return "\n".join(head + lines + tail)


def _section(doc: Obj, captions: dict[str, str]) -> str:
    r, how, c = doc["recording"], doc["replayedAs"], doc["comparison"]
    table = ["<table>", "<tr><th></th><th>real scheduler</th><th>kubesched</th></tr>"]
    for label, real, ours in rows(doc):
        cells = "".join(
            f'<td class="num">{_esc(v)}</td>'
            if isinstance(v, int | float)
            else f"<td>{_esc(v)}</td>"
            for v in (real, ours)
        )
        table.append(f"<tr><td>{_esc(label)}</td>{cells}</tr>")
    table.append("</table>")
    figs = "\n".join(
        f'<figure><img src="{html.escape(name)}" alt="{html.escape(name)}">'
        f"<figcaption>{_esc(cap)}</figcaption></figure>"
        for name, cap in captions.items()
    )
    diffs = c["placements"]["differences"]
    diff_table = ""
    if diffs:
        diff_table = (
            f"<h3>Placements that differ ({c['placements']['different']}; "
            f"the first {len(diffs)})</h3>\n"
            + "<table><tr><th>Pod</th><th>real scheduler</th><th>kubesched</th></tr>"
            + "".join(
                f"<tr><td>{_esc(d['pod'])}</td><td>{_esc(d['real'])}</td>"
                f"<td>{_esc(d['replay'])}</td></tr>"
                for d in diffs
            )
            + "</table>"
        )
    return f"""<h2>Replay beside the real scheduler</h2>
<p>Recording <code>{_esc(r["directory"])}</code>: {_esc(r["durationSeconds"])} s on
{_esc(r["server"] or "an API server")} ({_esc(r["kubernetesVersion"] or "version unknown")}),
{_esc(r["events"])} events, {_esc(r["nodesAtStart"])} Nodes and
{_esc(r["podsAtStart"])} Pods at time 0. Replayed as Kubernetes
{_esc(how["kubernetesVersion"])} with {_esc(how["config"])} (profiles
{_esc(", ".join(how["profiles"]))}). Compared: the Pods of these profiles created
unbound, within the recorded window; the real scheduler's attempts are those the recording
saw (a lower bound).</p>
{"".join(table)}
{figs}
{diff_table}
<h2>The kubesched run</h2>
<p class="note">Everything below is the replay through kubesched, as a
<code>simulate</code> report shows a run.</p>
"""


def write_replay_report(doc: Obj, out: str | Path) -> Path:
    """Write ``index.html``, the plots, ``replay.json`` and ``summary.json`` into ``out``;
    the index path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = doc["replay"]
    captions = plots.render_all(summary, out)
    ours = {
        "replay-time-to-bind.png": replayplot.plot_time_to_bind(
            doc, out / "replay-time-to-bind.png"
        ),
        "replay-space.png": replayplot.plot_space(doc, out / "replay-space.png"),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    (out / "replay.json").write_text(json.dumps(doc, indent=2))
    body = page.render_html(summary, captions)
    title = f"kubesched replay: {doc['recording']['directory']}"
    body = body.replace("<title>", f"<title>{html.escape(title)} — ", 1)
    at = body.find("<h2>")
    body = body[:at] + _section(doc, ours) + body[at:]
    index = out / "index.html"
    index.write_text(body)
    return index
