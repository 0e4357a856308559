"""The startup figure: each Pod's time from creation to Ready, split into its segments and
stacked, at the P50 and at the P99 (the summary's ``podStartupSeconds``).

Segments (:mod:`kubesched.sim.startup`): ``admission`` (created to ungated), ``scheduling``
(ungated to the scheduling cycle's decision), ``binding`` (to PodScheduled=True), ``node``
(to Ready).  Percentiles do not add up: the P99 of the total is drawn as its own mark beside
the stack of the segments' P99s.  Uses ``matplotlib.figure.Figure`` and the Agg canvas only
(no pyplot), like :mod:`kubesched.report.plots`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

SEGMENTS = (
    ("admission", "admission, gates", "#969696"),
    ("scheduling", "queue + scheduling attempts", "#2b8cbe"),
    ("binding", "binding cycle, API", "#fdae6b"),
    ("node", "node: image pull, volumes, devices", "#31a354"),
)
"""Segment key, legend label, colour; in stacking order."""
SIZE = (9.0, 3.6)
DPI = 100


def plot_startup(summary: dict[str, Any], path: Path) -> str:
    """Write the stacked segments at P50 and P99 to ``path`` (PNG); returns its caption."""
    fig = Figure(figsize=SIZE, dpi=DPI, layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    seg = summary.get("podStartupSeconds") or {}
    total = seg.get("total") or {}
    if not total.get("pods"):
        ax.text(
            0.5,
            0.5,
            "no Pod became Ready in this run" if seg else "no startup segments in this run",
            ha="center",
            va="center",
            transform=ax.transAxes,
            color="#636363",
        )
        ax.set_xticks([])
        ax.set_yticks([])
    else:
        rows = ("p99", "p50")
        widest = 0.0
        for y, q in enumerate(rows):
            left = 0.0
            for key, label, color in SEGMENTS:
                width = float((seg.get(key) or {}).get(q) or 0.0)
                ax.barh(
                    y,
                    width,
                    left=left,
                    color=color,
                    height=0.55,
                    label=_legend(key, label, seg.get(key)) if y == 0 else None,
                )
                left += width
            mark = total.get(q)
            widest = max(widest, left, float(mark or 0.0))
            if mark is not None:
                ax.plot([mark, mark], [y - 0.35, y + 0.35], color="black", lw=2)
                ax.annotate(
                    f" created to Ready {mark:.3g} s",
                    (float(mark), y + 0.3),
                    fontsize=8,
                    va="bottom",
                )
        ax.set_yticks(range(len(rows)), [q.upper() for q in rows])
        ax.set_xlabel("simulated seconds")
        ax.set_xlim(0, (widest or 1.0) * 1.3)  # room for the marks' labels
        ax.set_ylim(-0.6, len(rows) - 0.1)
        fig.legend(loc="outside lower center", ncol=2, fontsize=8)
        ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"Startup split into segments: {int(total.get('pods') or 0)} Pods Ready")
    fig.savefig(path)
    return (
        "Created to Ready, stacked by segment: each bar stacks the segments' P50 (or P99); "
        "the black mark is the P50 (P99) of the whole, which percentiles of parts need not "
        "add up to. The scheduler acts on the scheduling and binding segments; the node "
        "segment is the kubelet's."
    )


def _legend(key: str, label: str, v: dict[str, Any] | None) -> str:
    """``node (image pull, ...): P50 0.98 s, P99 4.8 s`` (percentiles unrounded to 3 digits)."""
    v = v or {}

    def fmt(x: Any) -> str:
        return "-" if x is None else f"{float(x):.3g} s"

    return f"{key} ({label}): P50 {fmt(v.get('p50'))}, P99 {fmt(v.get('p99'))}"
