"""``kubesched run`` as a process: binds, serves probes and metrics, stops on SIGTERM."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from tests.live.conftest import Api, node, pod, wait_for
from tests.live.fakestore import by_plural

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaseDuration: 2s
  renewDeadline: 1s
  retryPeriod: 200ms
  resourceName: kubesched
  resourceNamespace: kube-system
profiles:
- schedulerName: kubesched
"""
MAIN = "import sys; from kubesched.cli import main; sys.exit(main())"


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def kubeconfig_host(path: Path) -> str:
    found = re.search(r"server: http://([^\s/]+)", path.read_text())
    assert found, path.read_text()
    return found.group(1)


def test_run_binds_serves_probes_and_stops_on_sigterm(
    api: Api, kubeconfig: Path, tmp_path: Path
) -> None:
    cfg = tmp_path / "ksc.yaml"
    cfg.write_text(CONFIG)
    api.create(node("n1"))
    args = ["run", "--config", str(cfg), "--kubeconfig", str(kubeconfig), "--metrics-port", "0"]
    proc = subprocess.Popen([sys.executable, "-c", MAIN, *args], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        banner = proc.stderr.readline()
        found = re.search(r"at (http://127\.0\.0\.1:\d+)", banner)
        assert found, banner
        base = found.group(1)
        api.create(pod("p"))
        wait_for(lambda: api.node_of("p") == "n1", timeout=10)
        assert get(base + "/healthz") == (200, "ok")
        assert get(base + "/readyz") == (200, "ok")
        code, text = get(base + "/metrics")
        assert code == 200
        assert 'scheduler_schedule_attempts_total{profile="kubesched",result="scheduled"}' in text
        # what every Kubernetes component exports (kubernetes-mixin's scheduler dashboard)
        host = kubeconfig_host(kubeconfig)
        assert "process_cpu_seconds_total " in text and "process_resident_memory_bytes " in text
        assert 'leader_election_master_status{name="kubesched"} 1.0' in text
        assert f'rest_client_requests_total{{code="201",host="{host}",method="POST"}}' in text
        assert f'rest_client_request_duration_seconds_count{{host="{host}",verb="GET"}}' in text
        assert get(base + "/nope")[0] == 404
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    lease = api.store.get(by_plural("leases"), "kube-system", "kubesched")
    assert "holderIdentity" not in lease["spec"]  # released on the way out


def test_run_requires_a_config(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", MAIN, "run"], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 2 and "--config" in out.stderr


def test_run_reports_unreadable_credentials(tmp_path: Path) -> None:
    cfg = tmp_path / "ksc.yaml"
    cfg.write_text(CONFIG)
    args = ["run", "--config", str(cfg), "--kubeconfig", str(tmp_path / "missing")]
    out = subprocess.run(
        [sys.executable, "-c", MAIN, *args], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 2 and "cannot load API server credentials" in out.stderr
