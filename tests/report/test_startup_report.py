"""The report's startup section: segments stacked at P50 and P99, and their table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.image as mpimg
import numpy as np

from kubesched.report import html, plots

SEGMENTS: dict[str, Any] = {
    "admission": {"pods": 40, "p50": 2.0, "p99": 30.0},
    "scheduling": {"pods": 40, "p50": 0.5, "p99": 4.0},
    "binding": {"pods": 40, "p50": 0.01, "p99": 0.2},
    "node": {"pods": 38, "p50": 6.0, "p99": 25.0},
    "total": {"pods": 38, "p50": 9.0, "p99": 41.0},
}


def _summary(**over: Any) -> dict[str, Any]:
    return {"scenario": "t", "seed": 1, "podsSubmitted": 40, **over}


def _colour_share(png: Path, rgb: tuple[int, int, int]) -> float:
    img = mpimg.imread(png)[..., :3]
    target = np.asarray(rgb, dtype=np.float64) / 255.0
    return float((np.abs(img - target).max(axis=2) < 0.02).mean())


def test_the_report_stacks_the_startup_segments(tmp_path: Path) -> None:
    index = html.write_report(_summary(podStartupSeconds=SEGMENTS), tmp_path)
    page = index.read_text()
    assert '<img src="startup.png"' in page and "startup.png" in plots.PLOTS
    assert "<td>node: bound to Ready (node side)</td>" in page
    assert '<td class="num">38</td><td class="num">6.0</td><td class="num">25.0</td>' in page
    png = tmp_path / "startup.png"
    # every segment's colour is drawn (the stacks), node and admission the widest
    for colour in ((0x96, 0x96, 0x96), (0x2B, 0x8C, 0xBE), (0x31, 0xA3, 0x54)):
        assert _colour_share(png, colour) > 0.003, colour
    assert _colour_share(png, (0x31, 0xA3, 0x54)) > _colour_share(png, (0x2B, 0x8C, 0xBE))


def test_a_run_without_segments_says_so(tmp_path: Path) -> None:
    caption = plots.PLOTS["startup.png"](_summary(), tmp_path / "s.png")
    assert "stacked by segment" in caption
    page = html.write_report(_summary(), tmp_path / "r").read_text()
    assert "<td>node: bound to Ready" not in page  # no table without data
    assert _colour_share(tmp_path / "s.png", (0x31, 0xA3, 0x54)) == 0.0
