"""The HTML report: every plot present and a valid PNG, the page refers to each, and the
numbers in its tables are the run's."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import matplotlib.image as mpimg
import pytest

from kubesched.api.errors import InputError
from kubesched.cli import main
from kubesched.report import html, plots, resultschema
from tests.mutations import mutated, paths
from tests.sim.test_observability import SCENARIO

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    d = tmp_path_factory.mktemp("run")
    (d / "scenario.yaml").write_text(SCENARIO)
    results = d / "results.json"
    rc = main(
        [
            "simulate",
            str(d / "scenario.yaml"),
            "--no-progress",
            "--json-out",
            str(results),
            "--report",
            str(d / "report"),
            "--metrics-file",
            str(d / "metrics.txt"),
        ]
    )
    assert rc == 0
    return d, json.loads(results.read_text())


def _check_report(out: Path) -> str:
    """Every figure is drawn, but the GPU panels only for a run with GPU measures (none of
    these runs has any: one line says so instead)."""
    page = (out / "index.html").read_text()
    drawn = [name for name in plots.PLOTS if name not in plots.OPTIONAL]
    assert not (out / "gpu.png").exists() and "No GPU measures in this run" in page
    for name in drawn:
        data = (out / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000, name
        img = mpimg.imread(out / name)
        assert img.shape[0] >= 300 and img.shape[1] >= 800, name
        assert img.std() > 0.01, name  # not a blank canvas
        assert f'<img src="{name}"' in page
    assert len(re.findall(r"<img ", page)) == len(drawn)
    return page


def test_simulate_report_has_every_plot(saved: tuple[Path, dict[str, Any]]) -> None:
    d, summary = saved
    page = _check_report(d / "report")
    assert '<td>Pods created</td><td class="num">153</td>' in page
    assert '<td>Pods scheduled</td><td class="num">150</td>' in page
    assert "default/huge-000000" in page  # the oldest waiting Pod
    assert "Filter" in page and "observations" in page
    assert json.loads((d / "report" / "summary.json").read_text()) == summary
    text = (d / "metrics.txt").read_text()
    assert 'scheduler_pending_pods{queue="unschedulable"} 3.0' in text


def test_report_command_renders_a_saved_run(
    saved: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d, _ = saved
    assert main(["report", str(d / "results.json"), "--out", str(tmp_path / "r")]) == 0
    assert capsys.readouterr().out.strip().endswith("index.html")
    _check_report(tmp_path / "r")


def test_a_run_without_timeline_still_gets_every_figure(
    saved: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    _, summary = saved
    bare = {k: v for k, v in summary.items() if k not in ("timeline", "waiting", "latency")}
    html.write_report(bare, tmp_path)
    page = _check_report(tmp_path)
    assert "Pods created" in page


def test_report_rejects_a_file_that_is_not_a_run(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"kind": "Pod"}')
    assert main(["report", str(bad)]) == 2


class _Reads(dict[str, Any]):
    """A summary that notes which of its top-level fields are read: by name (``get``, ``[]``,
    ``in``), or every one by any walk over it (``dict(...)``, ``{**...}`` and ``json`` walk
    a dict subclass through ``keys`` or ``items``)."""

    def __init__(self, summary: dict[str, Any]) -> None:
        super().__init__(summary)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return super().__contains__(key)

    def _all(self) -> None:
        self.read.update(dict.keys(self))

    def __iter__(self) -> Iterator[str]:
        self._all()
        return super().__iter__()

    def keys(self) -> Any:
        self._all()
        return super().keys()

    def values(self) -> Any:
        self._all()
        return super().values()

    def items(self) -> Any:
        self._all()
        return super().items()


def _draws_or_is_refused(summary: dict[str, Any], every: int, out: Path) -> int:
    """Each single-field mutation of ``summary`` (every ``every``-th field) is refused naming
    a field, or drawn without an exception; the number refused.  A mutation redraws the
    plots that read its top-level field (and the page): a plot that does not read it gets
    the run's own input and draws as it does for the run, which this drew first.  A plot
    reads the same fields of a mutated summary as of the run up to its first read of the
    mutated one, so one that never reads it on the run never does on the mutation."""
    reads: dict[str, set[str]] = {}
    captions: dict[str, str] = {}
    for name, fn in plots.PLOTS.items():
        tracked = _Reads(summary)
        if name not in plots.OPTIONAL or plots.OPTIONAL[name](tracked):
            captions[name] = fn(tracked, out / name)
        reads[name] = tracked.read
    refused = 0
    for where in list(paths(summary, items=1))[::every]:
        for value in (None, "x", [1]):
            doc = mutated(summary, where, value)
            try:
                resultschema.check_results(doc)
            except InputError as err:
                assert all(path for path, _ in err.problems), err
                refused += 1
                continue
            drawn = dict(captions)
            for name, fn in plots.PLOTS.items():
                if str(where[0]) not in reads[name]:
                    continue
                drawn.pop(name, None)
                if name not in plots.OPTIONAL or plots.OPTIONAL[name](doc):
                    drawn[name] = fn(doc, out / name)
            html.render_html(doc, drawn)
    return refused


def test_a_hand_edited_run_is_drawn_or_refused_by_field(
    saved: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    _, summary = saved
    assert _draws_or_is_refused(summary, 25, tmp_path) > 0


@pytest.mark.slow
def test_every_field_of_a_runmutated(saved: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    _draws_or_is_refused(saved[1], 1, tmp_path)


def test_report_names_the_field_and_exits_2(
    saved: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, summary = saved
    edited = tmp_path / "edited.json"
    doc = mutated(summary, ("latency", "attemptSeconds", "scheduled", "p99"), "x")
    edited.write_text(json.dumps(doc))
    assert main(["report", str(edited), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "latency.attemptSeconds.scheduled.p99: 'x' is not of type" in err
    assert "Traceback" not in err
    short = mutated(summary, ("timeline", "bound"), summary["timeline"]["bound"][:-1])
    with pytest.raises(InputError, match=r"timeline\.bound: has \d+ values for \d+ times"):
        resultschema.check_results(short)


def test_the_page_names_the_most_retried_pods_and_says_what_answers_them(
    saved: tuple[Path, dict[str, Any]],
) -> None:
    """Issue 34: a low success ratio that is five oversized Pods retried on every deletion
    says so, and points to retryGovernance; the title says what made the run."""
    _, summary = saved
    doc = json.loads(json.dumps(summary))
    doc["attempts"] = {"scheduled": 10, "unschedulable": 30, "error": 0}
    doc["mostRetried"] = [{"pod": "default/huge", "failedAttempts": 29, "bound": False}]
    page = html.render_html(doc, {})
    assert "<h1>kubesched simulate: " in page and "kubesched run:" not in page
    assert "Most retried Pods" in page and "default/huge" in page
    assert "retryGovernance" in page and "--compare-governance" in page
    from kubesched.report.text import simulate_summary

    lines = simulate_summary(doc)
    assert "1 Pods made 29 of 30 unschedulable attempts: default/huge (29)" in lines
    assert "retryGovernance" in lines


def test_most_retried_counts_failed_attempts_only() -> None:
    from kubesched.sim.simulate import most_retried

    got = most_retried({"a": 5, "b": 1, "c": 3}, {"b": 1.0, "c": 2.0})
    assert got == [
        {"pod": "a", "failedAttempts": 5, "bound": False},
        {"pod": "c", "failedAttempts": 2, "bound": True},
    ]
