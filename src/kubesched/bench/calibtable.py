"""The validation table ``kubesched calibrate`` prints and ``docs/tuning.md`` quotes: every
held-out grid point and every burst through the real API server, measured against
predicted, and the error goal's verdict (median absolute error at most 15 %, worst 30 %)."""

from __future__ import annotations

from typing import Any

import numpy as np

GOAL_MEDIAN, GOAL_WORST = 15.0, 30.0


def _pct(p: int) -> str:
    return "auto" if p == 0 else str(p)


def validation_table(doc: dict[str, Any]) -> str:
    """Markdown: the held-out attempts, the bursts, and one verdict line over both."""
    lines = [
        "| mix | nodes | % | parallelism | full | result | measured ms | predicted ms | error |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    errors = []
    for q in doc["points"]:
        if not q["heldOut"]:
            continue
        errors.append(q["errorPercent"])
        lines.append(
            f"| {q['mix']} | {q['nodes']:,} | {_pct(q['percentageOfNodesToScore'])} | "
            f"{q['parallelism']} | {round(q['fill'] * 100)} % | {q['result']} | "
            f"{q['measuredMs']:.2f} | {q['predictedMs']:.2f} | {q['errorPercent']:+.0f} % |"
        )
    bursts = doc.get("binding", {}).get("validation") or []
    if bursts:
        lines += [
            "",
            "| client qps / burst | Pods | created per s | in the fit | measured Pods/s | "
            "predicted Pods/s | error |",
            "|---|---|---:|---|---:|---:|---:|",
        ]
    for b in bursts:
        if not b["fitted"]:
            errors.append(b["errorPercent"])
        rate = f"{b['createPodsPerSecond']:,.0f}" if b["createPodsPerSecond"] else "before"
        lines.append(
            f"| {b['qps']:g} / {b['burst']:g} | {b['pods']} | {rate} | "
            f"{'yes' if b['fitted'] else 'no'} | {b['measuredPodsPerSecond']:,.1f} | "
            f"{b['predictedPodsPerSecond']:,.1f} | {b['errorPercent']:+.0f} % |"
        )
    e = np.abs(np.asarray(errors, dtype=np.float64))
    if len(e):
        med, worst = float(np.median(e)), float(np.max(e))
        met = med <= GOAL_MEDIAN and worst <= GOAL_WORST
        lines += [
            "",
            f"validation ({len(e)} predictions not in the fit): median |error| {med:.1f} %, "
            f"worst {worst:.1f} %; goal (median <= {GOAL_MEDIAN:g} %, worst <= "
            f"{GOAL_WORST:g} %) {'met' if met else 'missed'}",
        ]
    return "\n".join(lines)
