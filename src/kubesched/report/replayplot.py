"""PNG plots of a recording's replay beside the real scheduler (:mod:`kubesched.report.replay`):
time to bind as two cumulative distributions, and fragmentation and utilisation over time
of the as-recorded and kubesched runs.  matplotlib through ``Figure`` and the Agg canvas,
never pyplot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from kubesched.report.plots import DPI, RESOURCE_LABELS, SIZE

SIDES = (("recorded", "real scheduler", "#636363"), ("replay", "kubesched", "#2b8cbe"))


def plot_time_to_bind(doc: dict[str, Any], path: Path) -> str:
    """Cumulative share of the compared Pods bound within x seconds, per side."""
    fig = Figure(figsize=SIZE, dpi=DPI, layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    comparison = doc.get("comparison") or {}
    samples = comparison.get("timeToBindSamples") or {}
    pods = max(1, int(comparison.get("pods") or 0))
    drawn = False
    for key, label, color in (
        ("real", "real scheduler", "#636363"),
        ("replay", "kubesched", "#2b8cbe"),
    ):
        xs = np.sort(np.asarray(samples.get(key) or [], dtype=float))
        bound = int(((comparison.get("timeToBindSeconds") or {}).get(key) or {}).get("pods") or 0)
        if xs.size:
            share = np.arange(1, xs.size + 1) / xs.size * (bound / pods)
            ax.step(xs, 100 * share, where="post", label=f"{label} ({bound} bound)", color=color)
            drawn = True
    if drawn:
        ax.set_xscale("symlog", linthresh=0.01)
        ax.legend(loc="lower right", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no Pod was bound", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("seconds from creation (or time 0) to bind")
    ax.set_ylabel("% of compared Pods")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.set_title("Time to bind")
    fig.savefig(path)
    return (
        "Share of the Pods kubesched scheduled that were bound within x seconds, by the real "
        "scheduler (as recorded) and by kubesched (replayed); Pods never bound in the window "
        "keep a curve below 100 %."
    )


def plot_space(doc: dict[str, Any], path: Path) -> str:
    """Fragmentation and utilisation per resource over time, both runs."""
    fig = Figure(figsize=(SIZE[0], 2 * 2.6), dpi=DPI, layout="constrained")
    axes = [fig.add_subplot(2, 1, i + 1) for i in range(2)]
    for key, ax, label in (
        ("fragmentation", axes[0], "fragmentation %"),
        ("utilization", axes[1], "utilisation %"),
    ):
        for side, who, color in SIDES:
            tl = (doc.get(side) or {}).get("timeline") or {}
            t = np.asarray(tl.get("t") or [], dtype=float)
            for res, values in (tl.get(key) or {}).items():
                if not values or all(v is None for v in values) or len(values) != t.size:
                    continue
                ys = np.asarray([np.nan if v is None else v for v in values], dtype=float)
                style = "-" if res == "cpu" else ("--" if res == "memory" else ":")
                ax.plot(t, ys, style, color=color, label=f"{who}: {RESOURCE_LABELS.get(res, res)}")
        ax.set_ylabel(label)
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize=7, ncol=2)
    axes[1].set_xlabel("seconds since the recording's time 0")
    axes[0].set_title("Fragmentation and utilisation: real placements and kubesched's")
    fig.savefig(path)
    return (
        "Per resource (CPU solid, memory dashed, GPUs dotted): the share of free capacity on "
        "partly used nodes, and requested / allocatable, for the placements the real "
        "scheduler made (grey) and kubesched's (blue)."
    )
