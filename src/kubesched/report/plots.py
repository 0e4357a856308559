"""PNG plots of a run, from its summary dict (what ``simulate --json-out`` saves).

The only module that imports matplotlib (through ``matplotlib.figure.Figure`` and the Agg
canvas, never pyplot: no global state, safe in threads).  Each ``plot_*`` function takes the
summary and a path, writes one PNG and returns its caption; a plot whose data the run lacks
is drawn with a note saying so, so every report has the same set of figures, except the
:data:`OPTIONAL` ones (the GPU panels), left out of a run without their data.

Series come from the timeline (``summary["timeline"]``, one point per sample interval of
simulated time); rates are differences of cumulative counts divided by the interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from kubesched.report.startupplot import plot_startup

QUEUE_COLORS = {
    "active": "#2b8cbe",
    "backoff": "#fdae6b",
    "unschedulable": "#de2d26",
    "gated": "#969696",
}
RESULT_COLORS = {"scheduled": "#31a354", "unschedulable": "#de2d26", "error": "#756bb1"}
RESOURCE_LABELS = {"cpu": "CPU", "memory": "memory", "nvidia.com/gpu": "GPUs"}
DPI = 100
SIZE = (9.0, 3.6)

PlotFn = Callable[[dict[str, Any], Path], str]


def _figure(rows: int = 1, height: float = SIZE[1]) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=(SIZE[0], height * rows), dpi=DPI, layout="constrained")
    axes = [fig.add_subplot(rows, 1, i + 1) for i in range(rows)]
    return fig, axes


def _note(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#636363")
    ax.set_xticks([])
    ax.set_yticks([])


def _timeline(summary: dict[str, Any]) -> dict[str, Any] | None:
    tl = summary.get("timeline")
    return tl if tl and len(tl.get("t", [])) >= 2 else None


def _rate(values: Sequence[float], dt: float) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Per-second rate between consecutive cumulative samples, shape ``(len - 1,)``."""
    return np.diff(np.asarray(values, dtype=np.float64)) / dt


def _window(n: int) -> int:
    """Samples per bar so that a run shows at most ~60 bars."""
    return max(1, int(np.ceil(n / 60)))


def plot_throughput(summary: dict[str, Any], path: Path) -> str:
    """Successful Pods/s (binds per simulated second) over time, with arrivals/s."""
    fig, (ax,) = _figure()
    tl = _timeline(summary)
    if tl is None:
        _note(ax, "no timeline in this run")
    else:
        t = np.asarray(tl["t"][1:])
        dt = float(tl.get("interval") or 1.0)
        # created first, wide and pale: where scheduling keeps up the two coincide, and the
        # scheduled line drawn over it must not hide it
        ax.plot(t, _rate(tl["created"], dt), color="#9ecae1", lw=4, label="created", zorder=2)
        ax.plot(
            t,
            _rate(tl["attempts"]["scheduled"], dt),
            color="#31a354",
            lw=1.2,
            label="scheduled",
            zorder=3,
        )
        ax.set_xlabel("simulated seconds")
        ax.set_ylabel("Pods / s")
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper right")
        ax.grid(alpha=0.3)
    ax.set_title("Successful Pods per second")
    fig.savefig(path)
    return "Pods scheduled (successful attempts) per simulated second, and Pods created."


def attempts_figure(summary: dict[str, Any]) -> tuple[Figure, int]:
    """The attempts figure (see :func:`plot_attempts`) and its samples per bar.

    The legend (results and the ratio line) sits above the axes, so it covers no bar and no
    point of the line; the count axis leaves headroom over the tallest bar.
    """
    fig, (ax,) = _figure()
    tl = _timeline(summary)
    w = 1
    if tl is None:
        _note(ax, "no timeline in this run")
        ax.set_title("Scheduling attempts by result, and the success ratio")
        return fig, w
    w = _window(len(tl["t"]) - 1)
    idx = np.arange(0, len(tl["t"]), w)
    if idx[-1] != len(tl["t"]) - 1:
        idx = np.append(idx, len(tl["t"]) - 1)
    t = np.asarray(tl["t"])[idx]
    width = float(np.median(np.diff(t))) * 0.9 if t.size > 1 else 1.0
    bottom = np.zeros(t.size - 1)
    per: dict[str, Any] = {}
    for result, color in RESULT_COLORS.items():
        counts = np.diff(np.asarray(tl["attempts"][result], dtype=np.float64)[idx])
        per[result] = counts
        ax.bar(t[1:], counts, width=-width, align="edge", bottom=bottom, color=color, label=result)
        bottom = bottom + counts
    ax.set_xlabel("simulated seconds")
    ax.set_ylabel(f"attempts per {w * float(tl.get('interval') or 1.0):g} s")
    ax.set_ylim(0, max(float(bottom.max(initial=0.0)), 1.0) * 1.1)
    ratio_ax = ax.twinx()
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(bottom > 0, per["scheduled"] / bottom, np.nan)
    ratio_ax.plot(t[1:] - width / 2, ratio, color="black", marker=".", lw=1, label="success ratio")
    ratio_ax.set_ylim(0, 1.05)
    ratio_ax.set_ylabel("success ratio")
    handles, labels = ax.get_legend_handles_labels()
    more_handles, more_labels = ratio_ax.get_legend_handles_labels()
    fig.legend(
        handles + more_handles,
        labels + more_labels,
        loc="outside upper center",
        ncols=len(labels) + len(more_labels),
        frameon=False,
    )
    ax.set_title("Scheduling attempts by result, and the success ratio")
    return fig, w


def plot_attempts(summary: dict[str, Any], path: Path) -> str:
    """Attempts by result per window (stacked bars) and the success ratio in that window."""
    fig, w = attempts_figure(summary)
    fig.savefig(path)
    return (
        f"Attempts per window of {w} sample(s), stacked by result; the line is "
        "scheduled / all attempts in the same window."
    )


def plot_queues(summary: dict[str, Any], path: Path) -> str:
    """Pending Pods by queue over time (stacked areas)."""
    fig, (ax,) = _figure()
    tl = _timeline(summary)
    if tl is None:
        _note(ax, "no timeline in this run")
    else:
        t = np.asarray(tl["t"])
        names = list(QUEUE_COLORS)
        ys = [np.asarray(tl["pending"][q], dtype=np.float64) for q in names]
        ax.stackplot(t, *ys, labels=names, colors=[QUEUE_COLORS[q] for q in names], alpha=0.85)
        ax.set_xlabel("simulated seconds")
        ax.set_ylabel("pending Pods")
        ax.legend(loc="upper left")
        ax.grid(alpha=0.3)
    ax.set_title("Queue composition (scheduler_pending_pods by queue)")
    fig.savefig(path)
    return "Pending Pods in activeQ, backoffQ, the unschedulable pool and gated, over time."


def plot_waiting(summary: dict[str, Any], path: Path) -> str:
    """Distribution of the ages of Pods still waiting at the end, with the oldest marked."""
    fig, (ax,) = _figure()
    waiting = summary.get("waiting") or {}
    ages = np.asarray(waiting.get("agesSeconds") or [], dtype=np.float64)
    if ages.size == 0:
        _note(ax, "no Pod was waiting at the end of the run")
    else:
        ax.hist(ages, bins=min(40, max(5, ages.size // 5)), color="#de2d26", alpha=0.8)
        oldest = waiting.get("oldest") or {}
        ax.axvline(float(ages.max()), color="black", ls="--", lw=1)
        ax.annotate(
            f"oldest: {oldest.get('pod', '?')} ({ages.max():.1f} s)",
            (float(ages.max()), 0.95),
            xycoords=("data", "axes fraction"),
            ha="right",
            va="top",
            fontsize=9,
        )
        ax.set_xlabel("age (seconds since creation, PodScheduled not True)")
        ax.set_ylabel("Pods")
        ax.set_xlim(left=0)
    ax.set_title(f"Pods still waiting at the end: {int(waiting.get('count', ages.size))}")
    fig.savefig(path)
    return "Ages of Pods still Pending at the end of the run; reasons are in the table below."


def plot_latency(summary: dict[str, Any], path: Path) -> str:
    """P99 (and P50) per extension point, observation counts beside each bar."""
    fig, (ax,) = _figure()
    points = ((summary.get("latency") or {}).get("extensionPointSeconds")) or {}
    rows = [(k, v) for k, v in points.items() if v.get("count") and v.get("p99") is not None]
    if not rows:
        _note(ax, "no extension-point durations recorded")
    else:
        rows.sort(key=lambda kv: kv[1]["p99"])
        names = [k for k, _ in rows]
        p99 = np.asarray([v["p99"] * 1e3 for _, v in rows])
        p50 = np.asarray([(v.get("p50") or 0.0) * 1e3 for _, v in rows])
        y = np.arange(len(rows))
        ax.barh(y, p99, color="#3182bd", label="P99")
        ax.scatter(p50, y, color="black", marker="|", s=200, label="P50", zorder=3)
        for i, (_, v) in enumerate(rows):
            ax.annotate(f" n={int(v['count'])}", (p99[i], y[i]), va="center", fontsize=8)
        ax.set_yticks(y, names)
        ax.set_xscale("log")
        ax.set_xlabel("milliseconds (wall clock, from histogram buckets)")
        ax.legend(loc="lower right")
        ax.set_xlim(right=float(p99.max()) * 4)
    ax.set_title("P99 per extension point")
    fig.savefig(path)
    return (
        "P99 (bar) and P50 (tick) of scheduler_framework_extension_point_duration_seconds per "
        "extension point, estimated from the histogram buckets as histogram_quantile does; "
        "n is the number of observations."
    )


def plot_resources(summary: dict[str, Any], path: Path) -> str:
    """Utilisation and fragmentation per resource, and fully idle 8-GPU nodes."""
    fig, axes = _figure(rows=3, height=2.4)
    tl = _timeline(summary)
    if tl is None:
        for ax in axes:
            _note(ax, "no timeline in this run")
    else:
        t = np.asarray(tl["t"])
        for key, ax, label in (
            ("utilization", axes[0], "utilisation %"),
            ("fragmentation", axes[1], "fragmentation %"),
        ):
            for res, values in tl[key].items():
                if values and any(v is not None for v in values):
                    ys = np.asarray([np.nan if v is None else v for v in values], dtype=float)
                    ax.plot(t, ys, label=RESOURCE_LABELS.get(res, res))
            ax.set_ylabel(label)
            ax.set_ylim(0, 100)
            ax.grid(alpha=0.3)
            ax.legend(loc="upper left", fontsize=8)
        axes[2].step(t, tl["idleGpuNodes"], where="post", color="#756bb1")
        axes[2].set_ylabel("idle 8-GPU nodes")
        axes[2].set_ylim(bottom=0)
        axes[2].grid(alpha=0.3)
        axes[2].set_xlabel("simulated seconds")
    axes[0].set_title("Utilisation and fragmentation per resource")
    fig.savefig(path)
    return (
        "Requested / allocatable per resource; fragmentation: share of free capacity on "
        "partly used nodes; fully idle nodes with 8 or more GPUs."
    )


GPU_PANELS = (
    ("fragmentationPercent", "GPU fragmentation %", "#de2d26"),
    ("idleWholeGpuNodes", "idle 8-GPU nodes", "#756bb1"),
    ("podsWaitingForWholeNode", "waiting for a\nwhole node", "#fd8d3c"),
    ("crossNumaPods", "cross-NUMA Pods", "#3182bd"),
)
"""The GPU panels: timeline key (``summary["timeline"]["gpu"]``), axis label, colour."""


def has_gpu_measures(summary: dict[str, Any]) -> bool:
    """Whether the run's timeline holds a GPU measure (GpuDevices was enabled)."""
    tl = _timeline(summary)
    gpu = (tl or {}).get("gpu") or {}
    return tl is not None and any(
        v is not None for key, _, _ in GPU_PANELS for v in gpu.get(key) or []
    )


def plot_gpu(summary: dict[str, Any], path: Path) -> str:
    """The GPU placement measures over time, one panel each (:data:`GPU_PANELS`)."""
    fig, axes = _figure(rows=len(GPU_PANELS), height=1.9)
    tl = _timeline(summary)
    gpu = (tl or {}).get("gpu") or {}
    if not has_gpu_measures(summary):
        why = (
            "no timeline in this run" if tl is None else "no GPU measures (GpuDevices not enabled)"
        )
        for ax in axes:
            _note(ax, why)
    else:
        t = np.asarray(tl["t"]) if tl is not None else np.zeros(0)
        for ax, (key, label, color) in zip(axes, GPU_PANELS, strict=True):
            ys = np.asarray([np.nan if v is None else v for v in gpu.get(key) or []], dtype=float)
            ax.step(t[: ys.size], ys, where="post", color=color)
            ax.set_ylabel(label, fontsize=9)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        axes[-1].set_xlabel("simulated seconds")
    axes[0].set_title("GPU placement (scheduler_gpu_* gauges)")
    fig.savefig(path)
    return (
        "FGD fragmentation: idle GPU capacity the common GPU task shapes cannot use, percent "
        "of all GPU capacity; nodes of 8 GPUs all idle; multi-GPU Pods waiting because no "
        "node has that many idle GPUs; Pods whose GPUs span NUMA nodes."
    )


def plot_bench_throughput(
    title: str,
    samples: Sequence[tuple[float, float]],
    path: Path,
    *,
    average: float | None = None,
    threshold: float = 0.0,
) -> str:
    """One bench phase's throughput samples ``(seconds since the phase began, pods/s)``,
    with their average and the workload's threshold as horizontal lines."""
    fig, (ax,) = _figure()
    if not samples:
        short = f"; total / elapsed: {average:.1f} Pods/s" if average is not None else ""
        _note(ax, f"no 1 s throughput sample (phase shorter than about 2 s){short}")
    else:
        t = np.asarray([s[0] for s in samples], dtype=np.float64)
        rate = np.asarray([s[1] for s in samples], dtype=np.float64)
        ax.plot(t, rate, color="#31a354", marker=".", label="sample")
        if average is not None:
            ax.axhline(average, color="#3182bd", ls="--", lw=1, label=f"average {average:.1f}")
        if threshold:
            ax.axhline(threshold, color="#de2d26", ls=":", lw=1, label=f"threshold {threshold:g}")
        ax.set_xlabel("wall-clock seconds since collection started")
        ax.set_ylabel("Pods / s")
        ax.set_ylim(bottom=0)
        ax.legend(loc="lower right")
        ax.grid(alpha=0.3)
    ax.set_title(f"Scheduling throughput: {title}")
    fig.savefig(path)
    return (
        f"{len(samples)} throughput sample(s) of {title}: measured Pods bound per second of "
        "wall time, one per 1 s tick (scheduler_perf's throughputCollector)."
    )


PLOTS: dict[str, PlotFn] = {
    "throughput.png": plot_throughput,
    "attempts.png": plot_attempts,
    "queues.png": plot_queues,
    "waiting.png": plot_waiting,
    "latency.png": plot_latency,
    "startup.png": plot_startup,
    "resources.png": plot_resources,
    "gpu.png": plot_gpu,
}
"""Every figure of the report: file name -> function, in report order."""

OPTIONAL: dict[str, Callable[[dict[str, Any]], bool]] = {"gpu.png": has_gpu_measures}
"""Figures drawn only for runs that have their data (the page says so in one line)."""


def render_all(summary: dict[str, Any], out: Path) -> dict[str, str]:
    """Write every plot the run has data for into ``out`` (:data:`OPTIONAL` ones only when
    it does); file name -> caption."""
    out.mkdir(parents=True, exist_ok=True)
    return {
        name: fn(summary, out / name)
        for name, fn in PLOTS.items()
        if name not in OPTIONAL or OPTIONAL[name](summary)
    }
