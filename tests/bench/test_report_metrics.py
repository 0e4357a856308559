"""``kubesched bench --report DIR`` and ``--metrics-file``: the HTML page and exposition."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubesched.bench.collect import ThroughputCollector
from kubesched.bench.results import WorkloadResult
from kubesched.cli import main
from kubesched.report import bench as report_bench
from tests.bench.support import BENCHMARKS, basic_case, write_config

FAST = ["--case", "SchedulingBasic", "--workload", "100Nodes"]


def _scheduled_count(exposition: str) -> float:
    total = 0.0
    for line in exposition.splitlines():
        if line.startswith("scheduler_schedule_attempts_total{") and 'result="scheduled"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def _images(page: str) -> list[str]:
    return re.findall(r'<img src="([^"]+)"', page)


def test_fast_workload_report_and_metrics_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(BENCHMARKS / "performance-config.yaml")
    report, metrics = tmp_path / "report", tmp_path / "metrics.txt"
    args = ["bench", config, *FAST, "--report", str(report), "--metrics-file", str(metrics)]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "report written to" in captured.err
    page = (report / "index.html").read_text()
    pngs = _images(page)
    assert pngs, "the page shows at least one throughput plot"
    for name in pngs:
        png = report / name
        assert png.is_file() and png.stat().st_size > 1000
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "SchedulingBasic/100Nodes" in page
    for header in ("Average", "Perc50", "Perc90", "Perc95", "Perc99", "threshold", "verdict"):
        assert f"<th>{header}</th>" in page
    assert '<td>Pods created</td><td class="num">300</td>' in page  # 100 init + 200 measured
    assert '<td>Pods scheduled (bound)</td><td class="num">300</td>' in page
    assert (report / "results.json").is_file()
    text = metrics.read_text()
    assert "scheduler_schedule_attempts_total" in text
    assert _scheduled_count(text) == 300
    assert re.search(r'scheduler_pending_pods\{queue="active"\} 0\.0', text)


def test_metrics_file_counts_every_workload(tmp_path: Path) -> None:
    """One registry across workloads: scheduled attempts add up over both binding modes."""
    config = write_config(tmp_path, [basic_case(params={"nodes": 3, "pods": 7})])
    metrics = tmp_path / "m.txt"
    rc = main(["bench", str(config), "--binding", "both", "--metrics-file", str(metrics)])
    assert rc == 0
    assert _scheduled_count(metrics.read_text()) == 14


def test_threshold_failure_is_marked_in_the_report(tmp_path: Path) -> None:
    config = write_config(tmp_path, [basic_case(threshold=1e9)])
    report = tmp_path / "r"
    assert main(["bench", str(config), "--report", str(report)]) == 1
    page = (report / "index.html").read_text()
    assert "FAIL: Basic/w: expected SchedulingThroughput Average to be higher" in page
    assert "<td>FAIL</td>" in page and "<td>pass</td>" not in page
    for name in _images(page):
        assert (report / name).stat().st_size > 0


def test_report_without_samples_still_draws_a_plot(tmp_path: Path) -> None:
    result = WorkloadResult("C", "w/x", error="timed out", pods_created=5, pods_unbound=5)
    index = report_bench.write([result], tmp_path)
    page = index.read_text()
    (png,) = _images(page)
    assert "/" not in png and (tmp_path / png).stat().st_size > 0
    assert "ERROR: timed out" in page
    assert "No measured phase finished." in page


@pytest.mark.parametrize(
    ("ticks", "want_times"),
    [
        # first tick starts the count; then one sample per tick with new binds
        ([(1.0, 5), (2.0, 15), (3.0, 25)], [2.0, 3.0]),
        # a tick with no new bind stretches the next sample over both intervals
        ([(1.0, 5), (2.0, 5), (3.0, 25)], [2.0, 3.0]),
    ],
)
def test_throughput_sample_times(ticks: list[tuple[float, int]], want_times: list[float]) -> None:
    c = ThroughputCollector(["ns"], None, 0.0)
    for now, scheduled in ticks:
        c.scheduled = scheduled
        c.tick(now)
    assert c.sample_times == pytest.approx(want_times)
    assert len(c.samples) == len(c.sample_times)
