"""``kubesched replay DIR`` on recordings written by hand: what each event does in the
replay, ``--kubernetes-version``, and bad recordings (exit 2, the file and the line or field
named, no traceback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli import main
from kubesched.record import format as fmt
from kubesched.record.reader import load_recording
from kubesched.record.replay import check_kubernetes_version, run_replay
from tests.record.builders import bound, node, pod, write


def replay(directory: Path, *extra: str, tmp: Path) -> dict[str, Any]:
    out = tmp / "doc.json"
    assert main(["replay", str(directory), "-o", str(out), *extra]) == 0
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def test_a_node_added_later_lets_a_pending_pod_schedule_and_deletions_free_room(
    tmp_path: Path,
) -> None:
    """n1 is full at time 0 (a running Pod of another scheduler); ``wait`` fits nowhere until
    n2 arrives at t=5; ``later`` fits only after ``hog`` is deleted at t=8."""
    d = write(
        tmp_path / "rec",
        [
            node("n1", cpu="1"),
            pod("hog", cpu="1", scheduler="other", on="n1"),
            pod("wait", cpu="1"),
        ],
        [
            {"t": 5.0, "type": fmt.NODE_ADDED, "object": node("n2", cpu="1")},
            bound(5.5, "wait", "n2"),
            {"t": 6.0, "type": fmt.POD_CREATED, "object": pod("later", cpu="1")},
            {"t": 8.0, "type": fmt.POD_DELETED, "pod": "default/hog", "uid": "uid-hog"},
            bound(8.2, "later", "n1"),
        ],
    )
    c = replay(d, tmp=tmp_path)["comparison"]
    p = c["placements"]
    assert c["pods"] == 2 and p["same"] == 2 and p["different"] == 0
    ttb = c["timeToBindSeconds"]["replay"]
    # wait: created at 0, n2 at 5 -> bound just after 5; later: created at 6, room at 8.
    assert 5.0 <= ttb["max"] < 5.1 and 2.0 <= ttb["p50"] <= 5.1
    assert c["attempts"]["replay"]["unschedulable"] >= 2


def test_pods_of_other_schedulers_are_placed_as_recorded(tmp_path: Path) -> None:
    """``theirs`` (another scheduler) takes n1 at t=1 as recorded, so kubesched must put
    ``mine`` (created at 2) on n2, as the real scheduler did."""
    d = write(
        tmp_path / "rec",
        [node("n1", cpu="1"), node("n2", cpu="1")],
        [
            {"t": 0.5, "type": fmt.POD_CREATED, "object": pod("theirs", cpu="1", scheduler="x")},
            bound(1.0, "theirs", "n1", scheduler="x"),
            {"t": 2.0, "type": fmt.POD_CREATED, "object": pod("mine", cpu="1")},
            bound(2.5, "mine", "n2"),
        ],
    )
    c = replay(d, tmp=tmp_path)["comparison"]
    assert c["pods"] == 1 and c["placements"]["same"] == 1


def test_a_configuration_decides_whose_pods_kubesched_schedules(tmp_path: Path) -> None:
    d = write(
        tmp_path / "rec",
        [node("n1")],
        [
            {"t": 1.0, "type": fmt.POD_CREATED, "object": pod("a", scheduler="kubesched")},
            {"t": 1.0, "type": fmt.POD_CREATED, "object": pod("b")},
            bound(2.0, "b", "n1"),
        ],
    )
    ksc = tmp_path / "ksc.yaml"
    ksc.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: kubesched\n"
    )
    doc = replay(d, "--config", str(ksc), tmp=tmp_path)
    assert doc["replayedAs"]["profiles"] == ["kubesched"]
    c = doc["comparison"]
    assert c["pods"] == 1 and c["placements"]["boundOnlyByKubesched"] == 1  # a; b as recorded


def test_the_comparison_stops_at_the_recordings_end(tmp_path: Path) -> None:
    """A bind during the drain (after the recorded window) is not compared."""
    d = write(
        tmp_path / "rec",
        [node("n1", cpu="1"), pod("hog", cpu="1", scheduler="x", on="n1"), pod("p", cpu="1")],
        [{"t": 3.0, "type": fmt.POD_DELETED, "pod": "default/hog", "uid": "uid-hog"}],
        duration=3.0,
    )
    rec = load_recording(str(d))
    doc = run_replay(rec, None, drain=5.0)
    assert doc["comparison"]["placements"]["boundByNeither"] == 1
    assert doc["replay"]["podsScheduled"] == 1  # bound in the drain, after t=3


@pytest.mark.parametrize("given", ["1.34", "v1.34", "v1.34.4", " 1.34.0"])
def test_kubernetes_version_accepts_1_34(given: str | None) -> None:
    assert check_kubernetes_version(given) == "1.34"


def test_kubernetes_version_defaults_to_the_newest_and_takes_the_supported() -> None:
    assert check_kubernetes_version(None) == "1.37"
    assert check_kubernetes_version("v1.35.0") == "1.35"


@pytest.mark.parametrize("given", ["1.33", "v1.38.0", "latest", "1", ""])
def test_kubernetes_version_refuses_others_naming_the_supported(
    given: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = write(tmp_path / "rec", [node("n1")], [])
    assert main(["replay", str(d), "--kubernetes-version", given]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --kubernetes-version:") and "1.34" in err
    assert "Traceback" not in err


# --------------------------------------------------------------------------- bad recordings
def _events(d: Path, lines: list[str]) -> None:
    (d / fmt.EVENTS).write_text("".join(lines))


def _good(tmp: Path) -> Path:
    return write(
        tmp / "rec",
        [node("n1")],
        [
            {"t": 1.0, "type": fmt.POD_CREATED, "object": pod("a")},
            bound(2.0, "a", "n1"),
        ],
    )


def _error(d: Path | str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["replay", str(d)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    return err


def test_a_recording_of_another_format_version_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _good(tmp_path)
    h = json.loads((d / fmt.HEADER).read_text())
    (d / fmt.HEADER).write_text(json.dumps({**h, "formatVersion": 2}))
    err = _error(d, capsys)
    assert f"{d / fmt.HEADER}: formatVersion: 2 is not a format this kubesched reads" in err


def test_a_truncated_events_file_names_its_last_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _good(tmp_path)
    text = (d / fmt.EVENTS).read_text()
    (d / fmt.EVENTS).write_text(text[: len(text) - 20])  # cut inside line 2
    err = _error(d, capsys)
    assert f"{d / fmt.EVENTS}: line 2: truncated" in err


def test_lines_missing_at_the_end_are_noticed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _good(tmp_path)
    first = (d / fmt.EVENTS).read_text().splitlines(keepends=True)[0]
    _events(d, [first])
    err = _error(d, capsys)
    assert "says 2 events were written, the file has 1 lines" in err


def test_a_missing_snapshot_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _good(tmp_path)
    (d / fmt.SNAPSHOT).unlink()
    err = _error(d, capsys)
    assert f"{d / fmt.SNAPSHOT}: no such file" in err


def test_not_a_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "no such recording directory" in _error(tmp_path / "nowhere", capsys)
    (tmp_path / "empty").mkdir()
    assert "not a recording (no header)" in _error(tmp_path / "empty", capsys)


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"seq": 2, "t": 1, "type": "NodeDeleted", "node": "n"}', "line 1: seq: want 1"),
        ('{"seq": 1, "t": -1, "type": "NodeDeleted", "node": "n"}', "line 1: t: want seconds >= 0"),
        ('{"seq": 1, "t": 1, "type": "PodMoved"}', "line 1: type: unknown event type 'PodMoved'"),
        ('{"seq": 1, "t": 1, "type": "NodeDeleted"}', "line 1: node: required field"),
        ('{"seq": 1, "t": 1, "type": "NodeDeleted", "node": 3}', "line 1: node: want a string"),
        ('{"seq": 1, "t": 1, "type": "PodCreated", "object": {"kind": "Node"}}', "object.kind"),
        ("[1, 2]", "line 1: an event is a JSON object"),
        ("{oops}\n", "line 1: not JSON"),
    ],
)
def test_a_bad_event_names_the_line_and_field(
    line: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = write(tmp_path / "rec", [node("n1")], [], header={"events": 1})
    _events(d, [line if line.endswith("\n") else line + "\n"])
    err = _error(d, capsys)
    assert f"{d / fmt.EVENTS}: " in err and says in err


def test_a_pod_that_does_not_parse_names_the_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = pod("a", cpu="lots")
    d = write(tmp_path / "rec", [node("n1")], [{"t": 1.0, "type": fmt.POD_CREATED, "object": bad}])
    err = _error(d, capsys)
    assert "line 1: object.spec.containers[0].resources.requests" in err


def test_events_out_of_order_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = write(
        tmp_path / "rec",
        [node("n1")],
        [
            {"t": 2.0, "type": fmt.NODE_DELETED, "node": "n1"},
            {"t": 1.0, "type": fmt.NODE_ADDED, "object": node("n1")},
        ],
    )
    assert "line 2: t: 1.0 is before the previous event's 2.0" in _error(d, capsys)
