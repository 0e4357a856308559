"""The sweep report's predicted-throughput plot: drawn against the varied setting when every
variant has a predicted upstream Pods/s, left out otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesched.report.sweep import write_report
from kubesched.report.sweepplot import plot_predicted, varied


def result(predicted: list[float | None]) -> dict[str, Any]:
    names = [f"qps={q}" for q in (50, 100, 500)]
    variants = {
        n: {"predictedUpstreamPodsPerSecond": {"mean": p, "sd": 0.0, "n": 1},
            "queueP99": {"mean": 10.0 / (i + 1), "sd": 0.0, "n": 1},
            "flags": [], "rank": i + 1}
        for i, (n, p) in enumerate(zip(names, predicted, strict=True))
    }  # fmt: skip
    return {
        "sweep": "client",
        "class": "client",
        "seeds": [1],
        "base": {},
        "baseline": names[0],
        "variants": variants,
        "ranking": names,
        "rows": [],
        "backend": "local",
        "wallSeconds": 1.0,
        "settings": {
            n: {"client.qps": q, "client.burst": 100}
            for n, q in zip(names, (50, 100, 500), strict=True)
        },
    }


def test_the_varied_setting_is_the_x_axis(tmp_path: Path) -> None:
    r = result([50.0, 100.0, 400.0])
    assert varied(r["settings"]) == "client.qps"
    caption = plot_predicted(r, tmp_path / "p.png")
    assert caption is not None and "client.qps" in caption
    assert (tmp_path / "p.png").stat().st_size > 1000
    write_report(r, tmp_path / "report")
    assert 'src="predicted.png"' in (tmp_path / "report" / "index.html").read_text()


def test_no_plot_without_a_prediction_for_every_variant(tmp_path: Path) -> None:
    assert plot_predicted(result([50.0, None, 400.0]), tmp_path / "p.png") is None
    assert not (tmp_path / "p.png").exists()
    write_report(result([None, None, None]), tmp_path / "report")
    assert not (tmp_path / "report" / "predicted.png").exists()
