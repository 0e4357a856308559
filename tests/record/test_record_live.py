"""``kubesched record`` against live mode's fake API server, then ``kubesched replay`` of what
it wrote: a short session where Pods are created, bound by another scheduler (the test),
refused once, deleted, and a Node is added."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kubesched.cli import main
from kubesched.record import format as fmt
from tests.live import rbac
from tests.live.conftest import Api, node, pod, wait_for
from tests.live.fakestore import by_plural
from tests.record.conftest import AGENT, Session

ROOT = Path(__file__).resolve().parents[2]
SECRET = "hunter2-do-not-record"


def bind(api: Api, name: str, node_name: str) -> None:
    """What another scheduler does: the binding subresource."""
    api.store.bind("default", name, {"target": {"name": node_name}}, "other-scheduler", time.time())


def refuse(api: Api, name: str, message: str) -> None:
    """What another scheduler writes for a Pod it cannot place."""
    cond = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": message,
    }
    api.store.patch(
        by_plural("pods"), "default", name, {"status": {"conditions": [cond]}}, False, True
    )


def secret_pod(name: str, cpu: str = "100m") -> dict[str, Any]:
    """A Pod carrying secrets in every place a manifest can."""
    m = pod(name, cpu=cpu, scheduler="default-scheduler")
    c = m["spec"]["containers"][0]
    c["env"] = [
        {"name": "PASSWORD", "value": SECRET},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": SECRET, "key": "k"}}},
    ]
    c["envFrom"] = [{"secretRef": {"name": SECRET}}]
    c["args"] = [f"--password={SECRET}"]
    c["livenessProbe"] = {
        "httpGet": {"path": "/", "port": 80, "httpHeaders": [{"name": "A", "value": SECRET}]}
    }
    m["spec"]["volumes"] = [{"name": "s", "secret": {"secretName": SECRET}}]
    m["spec"]["imagePullSecrets"] = [{"name": SECRET}]
    m["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps({"env": SECRET}),
        "kubesched.io/gpu-model": "A100",
    }
    return m


def session(api: Api, record: Callable[..., Session], linger: float = 0.0) -> Session:
    """The recorded session (see the module docstring); the recorder stopped ``linger``
    seconds after the last change."""
    api.create(node("n1", cpu="2"))
    api.create(node("n2", cpu="2"))
    api.create(pod("running", scheduler="default-scheduler"))
    bind(api, "running", "n1")
    api.create(pod("early", scheduler="default-scheduler"))  # Pending at time 0
    api.create(pod("theirs", scheduler="other"))  # another scheduler's Pod
    s = record()
    for i in range(3):
        api.create(secret_pod(f"p{i}"))
    api.create(pod("big", cpu="8", scheduler="default-scheduler"))
    time.sleep(0.2)
    for name in ("early", "p0", "p1", "p2"):  # the real scheduler packs everything on n1
        bind(api, name, "n1")
    bind(api, "theirs", "n1")
    refuse(api, "big", "0/2 nodes are available: 2 Insufficient cpu.")
    api.store.delete(by_plural("pods"), "default", "p0")
    api.create(node("n3", cpu="4"))
    wait_for(lambda: s.recorder.progress().counts.get(fmt.NODE_ADDED))
    wait_for(lambda: s.recorder.progress().counts.get(fmt.POD_DELETED))
    time.sleep(linger)
    s.stop()
    return s


def test_a_session_is_recorded_in_order_and_stripped(
    api: Api, record: Callable[..., Session]
) -> None:
    s = session(api, record)
    header = json.loads((s.out / fmt.HEADER).read_text())
    assert header["complete"] is True and header["formatVersion"] == 1
    assert header["kubernetesVersion"] and header["stopReason"] == "interrupted"
    events = s.events()
    assert header["events"] == len(events) and [e["seq"] for e in events] == list(
        range(1, len(events) + 1)
    )
    ts = [e["t"] for e in events]
    assert ts == sorted(ts)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        by_type.setdefault(e["type"], []).append(e)
    created = [e["object"]["metadata"]["name"] for e in by_type[fmt.POD_CREATED]]
    assert created == ["p0", "p1", "p2", "big"]
    bound = {e["pod"]: e for e in by_type[fmt.POD_BOUND]}
    assert set(bound) == {
        "default/early",
        "default/p0",
        "default/p1",
        "default/p2",
        "default/theirs",
    }
    assert bound["default/p1"]["node"] == "n1" and bound["default/theirs"]["scheduler"] == "other"
    assert all(e["bindSeconds"] is not None and e["bindSeconds"] > 0 for e in bound.values())
    (refused,) = by_type[fmt.POD_UNSCHEDULABLE]
    assert refused["pod"] == "default/big" and "Insufficient cpu" in refused["message"]
    (deleted,) = by_type[fmt.POD_DELETED]
    assert deleted["pod"] == "default/p0" and deleted["uid"] == bound["default/p0"]["uid"]
    (added,) = by_type[fmt.NODE_ADDED]
    assert added["object"]["metadata"]["name"] == "n3"
    snapshot = json.loads((s.out / fmt.SNAPSHOT).read_text())
    names = {(o["kind"], o["metadata"]["name"]) for o in snapshot["items"]}
    assert {("Node", "n1"), ("Pod", "running"), ("Pod", "early"), ("Namespace", "default")} <= names
    # Nothing secret anywhere, whichever file.
    for f in s.out.iterdir():
        assert SECRET not in f.read_text(), f
    p1 = by_type[fmt.POD_CREATED][1]["object"]
    c = p1["spec"]["containers"][0]
    assert c["env"] == [{"name": "PASSWORD"}, {"name": "TOKEN"}]
    assert "envFrom" not in c and "args" not in c and "livenessProbe" not in c
    assert p1["spec"]["volumes"] == [{"name": "s", "secret": {}}]
    assert p1["metadata"]["annotations"] == {"kubesched.io/gpu-model": "A100"}
    # The shipped schema accepts what the recorder wrote.
    schema = fmt.schema()
    jsonschema.validate(header, {**schema, "$ref": "#/$defs/header"})
    jsonschema.validate(snapshot, {**schema, "$ref": "#/$defs/snapshot"})
    for e in events:
        jsonschema.validate(e, {**schema, "$ref": "#/$defs/event"})


def test_the_recorder_asks_only_what_deploy_record_rbac_grants(
    api: Api, record: Callable[..., Session]
) -> None:
    session(api, record)
    made = rbac.calls_of(api.store.stats, AGENT)
    assert {("list", "", "pods", ""), ("watch", "", "nodes", "")} <= made
    assert {verb for verb, *_ in made} <= {"get", "list", "watch"}
    objs = rbac.manifests(ROOT / "deploy")
    assert rbac.denied(rbac.rules_of(objs, "kubesched-recorder"), made) == []
    rules = rbac.rules_of(objs, "kubesched-recorder")
    assert {v for r in rules for v in r["verbs"]} == {"list", "watch"}
    assert not any({"secrets", "configmaps"} & set(r["resources"]) for r in rules)


def test_replay_compares_kubesched_with_the_recorded_scheduler(
    api: Api, record: Callable[..., Session], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = session(api, record, linger=2.5)  # a sample (one a second) after the last change
    out, report = tmp_path / "doc.json", tmp_path / "report"
    assert main(["replay", str(s.out), "-o", str(out), "--report", str(report)]) == 0
    text = capsys.readouterr().out
    assert "real scheduler" in text and "placements that differ" in text
    doc = json.loads(out.read_text())
    assert (
        doc["recording"]["nodesAtStart"] == 2 and doc["replayedAs"]["kubernetesVersion"] == "1.34"
    )
    c = doc["comparison"]
    assert c["pods"] == 5  # early, p0, p1, p2, big: not theirs (other), not running (bound)
    p = c["placements"]
    assert p["boundBoth"] == 4 and p["boundOnlyByKubesched"] == 0 and p["boundByNeither"] == 1
    # The real scheduler packed n1; kubesched's default scoring spreads.
    assert p["different"] >= 1 and {d["real"] for d in p["differences"]} == {"n1"}
    ttb = c["timeToBindSeconds"]
    assert ttb["real"]["pods"] == ttb["replay"]["pods"] == 4
    assert ttb["replay"]["p50"] < ttb["real"]["p50"]
    assert c["attempts"]["real"] == {"scheduled": 4, "unschedulable": 1, "observed": 5}
    assert c["successRatio"]["real"] == 0.8
    assert (
        c["attempts"]["replay"]["scheduled"] == 4 and c["attempts"]["replay"]["unschedulable"] >= 1
    )
    assert c["queueingSeconds"]["replay"]["pods"] == 4 and c["queueingSeconds"]["real"] is None
    # Both runs end with the same Pods bound (p0 deleted, big nowhere): the same utilisation;
    # the real packing fragments CPU less than kubesched's spreading.
    util = c["utilizationPercent"]
    assert util["real"]["cpu"]["end"] == util["replay"]["cpu"]["end"] > 0
    frag = c["fragmentationPercent"]
    assert frag["real"]["cpu"]["end"] < frag["replay"]["cpu"]["end"]
    assert not any(c["invariants"].values())
    page = (report / "index.html").read_text()
    assert "Replay beside the real scheduler" in page and "replay-time-to-bind.png" in page
    assert (report / "replay-space.png").stat().st_size > 0
    assert json.loads((report / "replay.json").read_text())["comparison"] == c


def test_a_watch_that_cannot_resume_relists_and_the_gap_is_recorded(
    api: Api, record: Callable[..., Session]
) -> None:
    api.create(node("n1"))
    api.create(pod("kept", scheduler="default-scheduler"))
    api.create(pod("removed", scheduler="default-scheduler"))
    s = record()
    wait_for(lambda: api.store.stats.requests["GET pods"] >= 3)  # preflight, list, watch
    api.store.drop_watches()
    api.store.delete(by_plural("pods"), "default", "removed")
    api.create(pod("new", scheduler="default-scheduler"))
    api.store.compact()  # the watch resumes at a compacted version: 410, a relist
    wait_for(lambda: ("Relisted", "Pod") in kinds_relisted(s))
    api.create(pod("after", scheduler="default-scheduler"))
    wait_for(lambda: s.recorder.progress().counts.get(fmt.POD_CREATED) == 2)
    s.stop()
    seen = [
        (e["type"], e.get("pod") or e.get("kind") or e["object"]["metadata"]["name"])
        for e in s.events()
    ]
    assert ("PodDeleted", "default/removed") in seen and (fmt.POD_CREATED, "new") in seen
    assert (fmt.POD_CREATED, "after") in seen
    assert (fmt.RELISTED, "Pod") in seen
    assert main(["replay", str(s.out), "--format", "json"]) == 0


def kinds_relisted(s: Session) -> set[tuple[str, str]]:
    return {(e["type"], e["kind"]) for e in s.events() if e["type"] == fmt.RELISTED}


def test_events_reach_the_disk_while_recording(api: Api, record: Callable[..., Session]) -> None:
    """Events are streamed (flushed every second), not held until the end."""
    s = record()
    api.create(pod("a", scheduler="default-scheduler"))
    wait_for(lambda: "PodCreated" in (s.out / fmt.EVENTS).read_text(), timeout=10)
    assert json.loads((s.out / fmt.HEADER).read_text())["complete"] is False
    s.stop()
    assert json.loads((s.out / fmt.HEADER).read_text())["complete"] is True


def _cli(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    return subprocess.Popen(
        [sys.executable, "-c", "from kubesched.cli import entry; entry()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_cli_stops_cleanly_on_sigint_and_on_duration(
    api: Api, kubeconfig: Path, tmp_path: Path
) -> None:
    api.create(node("n1"))
    timed = _cli(
        "record", "--kubeconfig", str(kubeconfig), "--out", str(tmp_path / "a"), "--duration", "1"
    )
    assert timed.wait(60) == 0, timed.stderr.read() if timed.stderr else ""
    header = json.loads((tmp_path / "a" / fmt.HEADER).read_text())
    assert header["complete"] and header["stopReason"] == "duration"
    assert 1.0 <= header["durationSeconds"] < 5
    out = tmp_path / "b"
    p = _cli("record", "--kubeconfig", str(kubeconfig), "--out", str(out))
    wait_for(lambda: (out / fmt.EVENTS).exists(), timeout=30)
    api.create(pod("x", scheduler="default-scheduler"))
    wait_for(lambda: "PodCreated" in (out / fmt.EVENTS).read_text(), timeout=10)
    p.send_signal(signal.SIGINT)
    assert p.wait(30) == 0
    err = p.stderr.read() if p.stderr else ""
    assert (
        "Traceback" not in err and "recorded 1 events" in err and f"kubesched replay {out}" in err
    )
    header = json.loads((out / fmt.HEADER).read_text())
    assert header["complete"] and header["stopReason"] == "interrupted" and header["events"] == 1


def test_cli_refuses_a_directory_holding_a_recording(
    kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / fmt.HEADER).write_text("{}")
    assert main(["record", "--kubeconfig", str(kubeconfig), "--out", str(tmp_path / "old")]) == 2
    assert "--out" in capsys.readouterr().err


def test_a_refused_list_names_the_kind_and_the_rbac_file(
    api: Api, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.server.fail(r"GET /api/v1/nodes\?limit=1 ", 403)
    assert main(["record", "--kubeconfig", str(kubeconfig), "--out", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert "/api/v1/nodes" in err and "403" in err and "deploy/record-rbac.yaml" in err
