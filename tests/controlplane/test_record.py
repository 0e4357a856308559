"""``kubesched record`` as a process against the real kube-apiserver, under
deploy/record-rbac.yaml's ServiceAccount (any 403 fails the test), then ``kubesched replay``
of what it wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kubesched.cli import main
from kubesched.record import format as fmt
from tests.controlplane.conftest import DEPLOY, NAMESPACE, VERSION, ControlPlane
from tests.live.conftest import node, pod, wait_for

pytestmark = pytest.mark.controlplane

MAIN = "import sys; from kubesched.cli import main; sys.exit(main())"


def recorder_kubeconfig(cp: ControlPlane, path: Path) -> Path:
    cp.kubectl("apply", "-f", str(DEPLOY / "record-rbac.yaml"))
    token = cp.kubectl(
        "create", "token", "kubesched-recorder", "-n", NAMESPACE, "--duration=1h"
    ).strip()
    return cp.write_sa_kubeconfig(path, cp.server, token)


def bind(cp: ControlPlane, name: str, node_name: str) -> None:
    """Another scheduler's bind (there is no kube-scheduler in this control plane)."""
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": "default"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }
    cp.kubectl("create", "-f", "-", stdin=json.dumps(binding))


def test_record_then_replay_against_kube_apiserver(
    cp: ControlPlane, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = recorder_kubeconfig(cp, tmp_path / "recorder.kubeconfig")
    cp.apply(node("n1", cpu="2"))
    out = tmp_path / "rec"
    log = tmp_path / "record.log"
    args = ["record", "--kubeconfig", str(kubeconfig), "--out", str(out), "--duration", "8"]
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-c", MAIN, *args], stderr=err, text=True)
    try:
        wait_for(lambda: (out / fmt.EVENTS).exists(), timeout=30)
        secret = pod("a", scheduler="default-scheduler")
        secret["spec"]["containers"][0]["env"] = [{"name": "P", "value": "hunter2-real"}]
        cp.apply(secret)
        cp.apply(pod("b", scheduler="default-scheduler"))
        bind(cp, "a", "n1")
        bind(cp, "b", "n1")
        cp.apply(node("n2", cpu="2"))
        cp.kubectl("delete", "pod", "a", "--force", "--grace-period=0", "--wait")
        assert proc.wait(timeout=60) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert " 403" not in text and "Forbidden" not in text, text[-2000:]
    header = json.loads((out / fmt.HEADER).read_text())
    assert header["complete"] and header["kubernetesVersion"].startswith(f"v{VERSION or '1.34'}.")
    events = [json.loads(ln) for ln in (out / fmt.EVENTS).read_text().splitlines()]
    types = [e["type"] for e in events]
    assert types.count(fmt.POD_CREATED) == 2 and types.count(fmt.POD_BOUND) == 2
    assert fmt.NODE_ADDED in types and fmt.POD_DELETED in types
    for f in out.iterdir():
        assert "hunter2-real" not in f.read_text()
    doc_path = tmp_path / "doc.json"
    assert main(["replay", str(out), "-o", str(doc_path)]) == 0
    c = json.loads(doc_path.read_text())["comparison"]
    assert c["pods"] == 2 and c["timeToBindSeconds"]["real"]["pods"] == 2
    assert c["placements"]["boundBoth"] == 2
    assert "real scheduler" in capsys.readouterr().out
