"""The GPU trace replay figure: unallocated GPU % against arrived workload, one line per
policy (the FGD paper's headline plot), from ``kubesched replay`` documents.

Uses ``matplotlib.figure.Figure`` and the Agg canvas only (no pyplot), like
:mod:`kubesched.report.plots`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

POLICY_COLORS = {
    "random": "#969696",
    "dotproduct": "#fdae6b",
    "gpupacking": "#9e9ac8",
    "gpuclustering": "#74c476",
    "bestfit": "#6baed6",
    "fgd": "#de2d26",
    "kubesched": "#08306b",
}


def plot_unallocated(
    docs: Sequence[dict[str, Any]], path: str | Path, title: str = "", zoom: bool = True
) -> str:
    """Write the figure to ``path`` (PNG); returns its caption.

    ``docs`` are replay documents (``{"policy", "seeds", "curve": [...]}``).  With ``zoom``
    a second panel shows 80-130 % arrived, where the policies part ways.
    """
    panels = 2 if zoom else 1
    fig = Figure(figsize=(6.0 * panels, 4.2), dpi=100, layout="constrained")
    for i in range(panels):
        ax = fig.add_subplot(1, panels, i + 1)
        for doc in docs:
            pts = doc.get("curve", [])
            xs = [p["arrivedPercent"] for p in pts]
            ys = [p["unallocatedGpuPercent"] for p in pts]
            policy = str(doc.get("policy", "?"))
            ax.plot(xs, ys, label=policy, color=POLICY_COLORS.get(policy), lw=1.6)
        ax.set_xlabel("arrived workload (% of GPU capacity)")
        ax.set_ylabel("unallocated GPUs (%)")
        ax.grid(alpha=0.3)
        if i == 1:
            tail = [
                p["unallocatedGpuPercent"]
                for d in docs
                for p in d.get("curve", [])
                if p["arrivedPercent"] >= 80
            ]
            ax.set_xlim(80, 130)
            ax.set_ylim(0, max(tail, default=20.0) * 1.1 or 1.0)
            ax.set_title("zoom: 80-130 %")
        else:
            ax.axvline(100, color="#636363", ls="--", lw=0.8)
            ax.set_title(title or "GPU trace replay")
            ax.legend(loc="upper right")
    fig.savefig(path)
    seeds = sorted({s for d in docs for s in d.get("seeds", [])})
    names = ", ".join(str(d.get("policy")) for d in docs)
    return (
        f"Unallocated GPU % against arrived workload for {names}"
        f" (mean over seeds {', '.join(map(str, seeds))})."
    )
