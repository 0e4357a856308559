"""``kubesched schedule`` with Pods the snapshot already lists (issue 34, issue 31 item 8):
the canary plan's first step passes ``kubectl get pods --field-selector=status.phase=Pending
-o json`` beside the snapshot those Pods are in.  No traceback; every Pod scheduled is
reported, whichever file it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import kubesched
from kubesched.cli import main
from tests.explainer.test_explain import as_list, node, pod


def test_pods_pending_in_both_files_are_submitted_once_and_reported() -> None:
    waiting = pod("waiting", cpu="1")
    waiting["status"] = {"phase": "Pending"}
    cluster = as_list(node("a", cpu="2"), pod("running", cpu="1", node_name="a"), waiting)
    out = kubesched.schedule(cluster, as_list(waiting))
    assert out["pods"]["default/waiting"]["result"] == "Scheduled"
    assert out["pods"]["default/waiting"]["source"] == "pods"
    assert out["summary"]["overlap"] == 1
    assert out["summary"]["pods"] == 1
    assert "default/running" not in out["pods"]


def test_the_snapshots_own_pending_pods_are_reported() -> None:
    own = pod("own", cpu="1")
    cluster = as_list(node("a", cpu="2"), own, pod("other", schedulerName="someone-else"))
    out = kubesched.schedule(cluster, as_list(pod("new", cpu="1")))
    assert out["pods"]["default/own"]["result"] == "Scheduled"
    assert out["pods"]["default/own"]["source"] == "cluster"
    assert out["pods"]["default/new"]["source"] == "pods"
    assert out["summary"]["fromCluster"] == 1
    assert out["summary"]["scheduled"] == 2
    assert "default/other" not in out["pods"]  # another scheduler's: not ours to report


def test_a_pod_the_snapshot_has_bound_is_not_submitted_again() -> None:
    cluster = as_list(node("a", cpu="2"), pod("placed", cpu="1", node_name="a"))
    out = kubesched.schedule(cluster, as_list(pod("placed", cpu="1")))
    entry = out["pods"]["default/placed"]
    assert entry["result"] == "Scheduled" and entry["node"] == "a" and entry["attempts"] == 0
    assert "already bound to a" in entry["message"]
    assert out["summary"]["alreadyBound"] == 1


def test_a_pod_listed_twice_in_the_pods_file_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "c.json").write_text(json.dumps(as_list(node("a"))))
    (tmp_path / "p.json").write_text(json.dumps(as_list(pod("x"), pod("x"))))
    args = ["schedule", "--cluster", str(tmp_path / "c.json"), "--pods", str(tmp_path / "p.json")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "items[1]" in err and "duplicate Pod default/x" in err and "Traceback" not in err


def test_the_cli_overlap_exits_0_and_says_where_each_pod_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pending = [pod(f"p{i}", cpu="1") for i in range(3)]
    for p in pending:
        p["status"] = {"phase": "Pending"}
    (tmp_path / "dump.json").write_text(json.dumps(as_list(node("a", cpu="4"), *pending)))
    (tmp_path / "pending.json").write_text(json.dumps(as_list(*pending[:2])))
    args = ["schedule", "--cluster", str(tmp_path / "dump.json")]
    args += ["--pods", str(tmp_path / "pending.json")]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "FROM" in text and "cluster" in text
    assert "1 of them from the cluster snapshot" in text and "2 in both files" in text
    assert main([*args, "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {k: v["source"] for k, v in out["pods"].items()} == {
        "default/p0": "pods",
        "default/p1": "pods",
        "default/p2": "cluster",
    }
    assert out["summary"]["scheduled"] == 3
