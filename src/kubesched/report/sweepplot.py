"""The sweep report's plot: predicted upstream Pods/s (and queue p99) against the variable.

Drawn when every variant of a sweep has ``predictedUpstreamPodsPerSecond`` (its scenario
times attempts with upstream's calibrated cost model, :mod:`kubesched.sim.costmodel`): the
operator's question, what kube-scheduler will do with each setting, as one picture. Like
:mod:`kubesched.report.plots`, matplotlib through ``Figure`` and the Agg canvas only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

PREDICTED = "predictedUpstreamPodsPerSecond"


def varied(settings: dict[str, dict[str, Any]]) -> str | None:
    """The first path whose value differs between variants (None when none does)."""
    paths = [k for s in settings.values() for k in s]
    for path in dict.fromkeys(paths):
        if len({repr(s.get(path)) for s in settings.values()}) > 1:
            return path
    return None


def plot_predicted(result: dict[str, Any], path: Path) -> str | None:
    """Writes the plot to ``path`` and returns its caption; None (no file) when some variant
    has no prediction."""
    variants = result["variants"]
    names = [n for n in result.get("settings") or variants if n in variants]
    stats = [variants[n].get(PREDICTED) or {} for n in names]
    if not names or any(s.get("mean") is None for s in stats):
        return None
    settings = {n: (result.get("settings") or {}).get(n, {}) for n in names}
    var = varied(settings) or "variant"
    xs = [settings[n].get(var, n) for n in names]
    numeric = all(isinstance(x, int | float) and not isinstance(x, bool) for x in xs)
    pos = list(xs) if numeric else list(range(len(xs)))
    fig = Figure(figsize=(7.0, 3.6), dpi=100, layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    means, sds = [s["mean"] for s in stats], [s.get("sd") or 0 for s in stats]
    ax.errorbar(pos, means, yerr=sds, marker="o", color="#31a354", capsize=3, label="Pods/s")
    ax.set_ylabel("predicted upstream Pods/s")
    ax.set_ylim(bottom=0)
    ax.set_xlabel(var)
    if not numeric:
        ax.set_xticks(pos, [str(x) for x in xs])
    elif min(pos) > 0 and max(pos) / min(pos) > 20:
        ax.set_xscale("log")
    q99 = [(variants[n].get("queueP99") or {}).get("mean") for n in names]
    if all(q is not None for q in q99):
        twin = ax.twinx()
        twin.plot(
            pos,
            [float(q) for q in q99 if q is not None],
            marker="s",
            ls="--",
            color="#de2d26",
            label="queue p99 s",
        )
        twin.set_ylabel("queue p99 (s)")
        twin.set_ylim(bottom=0)
        fig.legend(loc="outside lower center", ncols=2)
    ax.grid(alpha=0.3)
    ax.set_title(f"{result['sweep']}: predicted upstream throughput", fontsize=10)
    fig.savefig(path)
    return (
        f"Predicted upstream kube-scheduler Pods/s (mean ± sd over seeds) and queue p99 "
        f"against {var}."
    )
