"""The shipped entry point, ``kubesched run`` as a process, against the real kube-apiserver
under deploy/rbac.yaml's ServiceAccount: binds, serves its probes, stops on SIGTERM and
releases its Lease."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.controlplane.conftest import NAMESPACE, ControlPlane
from tests.live.conftest import node, pod, wait_for

pytestmark = pytest.mark.controlplane

CONFIG = f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaseDuration: 6s
  renewDeadline: 4s
  retryPeriod: 500ms
  resourceName: kubesched
  resourceNamespace: {NAMESPACE}
profiles:
- schedulerName: kubesched
"""
MAIN = "import sys; from kubesched.cli import main; sys.exit(main())"


def test_kubesched_run_binds_and_releases_its_lease(cp: ControlPlane, tmp_path: Path) -> None:
    cfg = tmp_path / "ksc.yaml"
    cfg.write_text(CONFIG)
    cp.apply(node("n1"))
    args = ["run", "--config", str(cfg), "--kubeconfig", str(cp.sa), "--metrics-port", "0"]
    log = tmp_path / "run.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-c", MAIN, *args], stderr=out, text=True)
    try:
        found = wait_for(lambda: re.search(r"at (http://127\.0\.0\.1:\d+)", log.read_text()), 30)
        cp.apply(pod("p"))
        try:
            wait_for(lambda: cp.node_of("p") == "n1", timeout=30)
        except AssertionError as e:
            said = log.read_text()[-3000:]
            raise AssertionError(f"not bound; kubesched run said:\n{said}") from e
        with urllib.request.urlopen(found.group(1) + "/readyz", timeout=5) as r:
            assert r.status == 200
        lease = cp.get("lease", "kubesched", NAMESPACE)
        assert lease is not None and lease["spec"].get("holderIdentity")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        text = log.read_text()
        assert " 403" not in text and "Forbidden" not in text, text[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    lease = cp.get("lease", "kubesched", NAMESPACE)
    assert lease is not None and not lease["spec"].get("holderIdentity")  # released
