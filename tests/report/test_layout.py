"""Layout of the reports as a person sees them: the attempts plot's legend covers neither the
success-ratio line nor the bars, the tallest bar is inside the axes, the throughput plot's
"created" curve shows where it coincides with "scheduled", a run without GPU
measures has no empty GPU panels, and the bench percentile table fits the page's body."""

from __future__ import annotations

import html as htmllib
import re
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.patches import Rectangle

from kubesched.bench.results import WorkloadResult
from kubesched.report import bench as report_bench
from kubesched.report import html, plots

BODY_PX = 1000
"""``max-width`` of the page body (``html.CSS``): what a 1400 px window shows of it."""
CHAR_PX = 8.0
CELL_PAD_PX = 21.0
"""Average glyph width at the tables' 0.92em, and padding plus border of one cell."""


def _timeline(n: int = 40) -> dict[str, Any]:
    """Successful early windows (ratio 1.0 where an upper-left legend would sit) and a
    burst of unschedulable attempts making the tallest bars late in the run."""
    scheduled = np.cumsum(np.full(n, 10))
    unsched = np.cumsum(np.where(np.arange(n) > n // 2, 90, 0))
    zeros = [0] * n
    return {
        "interval": 1.0,
        "t": list(range(n)),
        "created": scheduled.tolist(),
        "attempts": {
            "scheduled": scheduled.tolist(),
            "unschedulable": unsched.tolist(),
            "error": zeros,
        },
        "pending": dict.fromkeys(plots.QUEUE_COLORS, zeros),
        "utilization": {"cpu": [50] * n},
        "fragmentation": {"cpu": [10] * n},
        "idleGpuNodes": zeros,
    }


def test_attempts_legend_covers_neither_the_ratio_line_nor_bars() -> None:
    fig, _ = plots.attempts_figure({"timeline": _timeline()})
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    legends = [*fig.legends, *(a.get_legend() for a in fig.axes if a.get_legend() is not None)]
    assert legends
    boxes = [lg.get_window_extent(renderer) for lg in legends]
    count_ax, ratio_ax = fig.axes
    (line,) = ratio_ax.get_lines()
    assert line.get_label() == "success ratio"
    assert "success ratio" in [t.get_text() for lg in legends for t in lg.get_texts()]
    points = line.get_transform().transform(np.asarray(line.get_xydata()))
    for box in boxes:
        assert not any(box.contains(x, y) for x, y in points if np.isfinite(y))
        for bar in (p for p in count_ax.patches if isinstance(p, Rectangle)):
            assert not box.overlaps(bar.get_window_extent(renderer))


def test_tallest_bar_is_inside_the_axes_with_headroom() -> None:
    fig, _ = plots.attempts_figure({"timeline": _timeline()})
    count_ax = fig.axes[0]
    tops = [p.get_y() + p.get_height() for p in count_ax.patches if isinstance(p, Rectangle)]
    assert max(tops) == 100.0  # 10 scheduled + 90 unschedulable
    assert count_ax.get_ylim()[1] >= 1.05 * max(tops)


def test_a_run_without_gpu_measures_has_no_gpu_panels(tmp_path: Path) -> None:
    summary = {"podsSubmitted": 1, "timeline": {**_timeline(), "gpu": {"crossNumaPods": []}}}
    index = html.write_report(summary, tmp_path)
    page = index.read_text()
    assert not (tmp_path / "gpu.png").exists() and "gpu.png" not in page
    assert "No GPU measures in this run" in page
    assert (tmp_path / "attempts.png").exists()


def test_a_run_with_gpu_measures_keeps_the_gpu_panels(tmp_path: Path) -> None:
    gpu = {key: [0, 1] + [2] * 38 for key, _, _ in plots.GPU_PANELS}
    summary = {"podsSubmitted": 1, "timeline": {**_timeline(), "gpu": gpu}}
    page = html.write_report(summary, tmp_path).read_text()
    assert (tmp_path / "gpu.png").exists() and '<img src="gpu.png"' in page


def _min_width(table: str) -> float:
    """Narrowest the browser can lay ``table`` out: per column the longest run of text
    without a break opportunity (space or ``<wbr>``), in pixels."""
    widths: dict[int, float] = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.S):
        for j, cell in enumerate(re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)):
            words = re.split(r"\s+|<wbr>", cell)
            longest = max(len(htmllib.unescape(re.sub(r"<[^>]+>", "", w))) for w in words)
            widths[j] = max(widths.get(j, 0.0), longest * CHAR_PX + CELL_PAD_PX)
    return sum(widths.values())


def test_bench_percentile_table_fits_the_page_body() -> None:
    result = WorkloadResult("SchedulingBasic", "5000Nodes_10000Pods")
    name = result.name
    for point in ("PreFilter", "Filter", "PreScore", "Score", "Bind"):
        result.items.append(
            {
                "data": {
                    "Average": 0.123,
                    "Perc50": 0.1,
                    "Perc90": 0.2,
                    "Perc95": 0.3,
                    "Perc99": 9.9,
                },
                "unit": "ms",
                "labels": {
                    "Metric": "scheduler_framework_extension_point_duration_seconds",
                    "Name": name,
                    "extension_point": point,
                },
            }
        )
    table = report_bench.percentile_table(result)
    assert "Perc99" in table and "PreFilter" in table
    assert _min_width(table) <= BODY_PX, _min_width(table)
    assert 'class="wide"' in table  # and scrolls inside the body if a font is wider


def test_bench_percentile_table_keeps_the_phase_when_phases_differ() -> None:
    result = WorkloadResult("C", "w")
    for phase in ("C/w", "C/w/second"):
        result.items.append(
            {"data": {"Average": 1.0}, "unit": "pods/s", "labels": {"Metric": "M", "Name": phase}}
        )
    table = report_bench.percentile_table(result)
    assert "<th>phase</th>" in table and "C/w/second" in table


def test_created_shows_where_it_coincides_with_scheduled(tmp_path: Path, monkeypatch: Any) -> None:
    """Issue 34: where scheduling keeps up, "created" and "scheduled" are the same curve; the
    created one is a band wider than the scheduled line, drawn under it, so it shows on both
    sides (it used to be a thin line the scheduled one hid)."""
    drawn: list[Any] = []
    monkeypatch.setattr(plots.Figure, "savefig", lambda fig, *a, **k: drawn.append(fig))
    plots.plot_throughput({"timeline": _timeline()}, tmp_path / "throughput.png")
    (fig,) = drawn
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    created, scheduled = lines["created"], lines["scheduled"]
    assert np.array_equal(created.get_ydata(), scheduled.get_ydata())  # the case in point
    assert created.get_linewidth() >= scheduled.get_linewidth() + 2
    assert created.get_zorder() < scheduled.get_zorder()
