"""``--metrics-file`` / ``--metrics-port`` on the commands: the exposition agrees with the run."""

from __future__ import annotations

import json
import threading
import urllib.request
from pathlib import Path

import pytest

from kubesched.cli import main
from tests.explainer.test_explain import as_list, node

POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: NAME}\nspec:\n  containers:\n"
    "  - name: c\n    image: nginx\n    resources: {requests: {cpu: 'CPU'}}\n"
)


def test_schedule_writes_the_final_exposition(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps(as_list(node("a", cpu="1"), node("b", cpu="4"))))
    pods = tmp_path / "pods.yaml"
    docs = [
        POD.replace("NAME", "p1").replace("CPU", "2"),
        POD.replace("NAME", "p2").replace("CPU", "8"),
    ]
    pods.write_text("---\n".join(docs))
    out = tmp_path / "metrics.txt"
    argv = ["schedule", "--cluster", str(cluster), "--pods", str(pods), "-o", "json"]
    assert main([*argv, "--metrics-file", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    text = out.read_text()
    assert summary["scheduled"] == 1 and summary["unschedulable"] == 1
    assert (
        'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0'
        in text
    )
    assert 'scheduler_pending_pods{queue="unschedulable"} 1.0' in text
    assert (
        'scheduler_unschedulable_pods{plugin="NodeResourcesFit",profile="default-scheduler"} 1.0'
        in text
    )


def test_metrics_port_serves_while_the_command_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps(as_list(node("a", cpu="4"))))
    pods = tmp_path / "pods.yaml"
    pods.write_text(POD.replace("NAME", "p1").replace("CPU", "1"))
    argv = ["schedule", "--cluster", str(cluster), "--pods", str(pods), "-o", "json"]
    result: list[int] = []
    t = threading.Thread(
        target=lambda: result.append(main([*argv, "--metrics-port", "0", "--metrics-hold", "3"]))
    )
    t.start()
    url = ""
    for _ in range(100):
        err = capsys.readouterr().err
        if "serving metrics at " in err:
            url = err.split("serving metrics at ", 1)[1].split()[0]
            break
        t.join(0.05)
    assert url.startswith("http://127.0.0.1:")
    body = ""
    for _ in range(40):  # the run itself is short; the endpoint stays up for --metrics-hold
        body = urllib.request.urlopen(url, timeout=5).read().decode()
        if 'result="scheduled"} 1.0' in body:
            break
        t.join(0.05)
    assert (
        'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0'
        in body
    )
    assert urllib.request.urlopen(url.replace("/metrics", "/healthz"), timeout=5).read() == b"ok"
    t.join(10)
    assert result == [0]
