"""A real control plane (etcd + kube-apiserver v1.34, ``oracle/controlplane.sh``) for the
tests marked ``controlplane``: started once per session, on loopback.
``ORACLE_KUBERNETES_VERSION=1.37`` runs them against ``oracle/bin/v1.37/``'s instead (any
version ``oracle/build.sh`` built a control plane of; ``controlplane.sh`` reads it too).

kubesched runs in it under ``deploy/rbac.yaml``'s ServiceAccount (the sharded roles' test
adds ``deploy/sharded/rbac.yaml`` for its duration): the test applies the manifests as
admin, mints a token with ``kubectl create token`` and writes a kubeconfig with it, so the
API server's own authorizer checks every call kubesched makes; a 403 fails the test
(:func:`no_forbidden`).  Test-side writes (Nodes, Pods, PriorityClasses) go through
``kubectl`` as admin.

When ``oracle/build.sh`` built kube-controller-manager too, it runs with its volume
controllers (``CONTROLLER_MANAGER=1``: the PV binder binds what VolumeBinding's PreBind
prepared; :attr:`ControlPlane.controller_manager`).

Without the binaries (``bash oracle/build.sh`` builds them) the tests skip, except in CI
(``CI=true``), where a missing binary is a failure.  Each test starts from a cluster without
Nodes or Pods (see :func:`clean`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kubesched.live import client as live_client
from tests.live.conftest import make_config

ROOT = Path(__file__).resolve().parents[2]
VERSION = os.environ.get("ORACLE_KUBERNETES_VERSION", "").removeprefix("v")
BIN = ROOT / "oracle" / "bin" / (f"v{VERSION}" if VERSION else "")
SCRIPT = ROOT / "oracle" / "controlplane.sh"
DEPLOY = ROOT / "deploy"
NAMESPACE = "kubesched-system"
LEASE = ("6s", "4s", "500ms")
"""Lease timings for the tests: a bind may take leaseDuration - renewDeadline = 2 s."""


def config(leader: bool = True) -> Any:
    """The profile ``kubesched``, its Lease in kubesched-system (where the Role grants it),
    for the control plane's release (what ``kubesched run`` reads from ``/version``)."""
    return make_config(
        leader=leader, lease=LEASE, namespace=NAMESPACE, kubernetes_version=VERSION or "1.34"
    )


class ControlPlane:
    """A started control plane: kubectl as admin, and a kubeconfig as kubesched's SA."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.admin = directory / "admin.kubeconfig"
        self.sa = directory / "kubesched.kubeconfig"
        self.token = ""
        self.controller_manager = (directory / "controller-manager.pid").exists()
        """kube-controller-manager's volume controllers run (the binary was built)."""

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        """kubectl as admin; stdout."""
        out = subprocess.run(
            ["kubectl", "--kubeconfig", str(self.admin), "--request-timeout=20s", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and out.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {out.stderr.strip()}")
        return out.stdout

    def apply(self, manifest: dict[str, Any] | str) -> None:
        """``kubectl apply -f -`` of a manifest (dict or YAML/JSON text)."""
        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        self.kubectl("apply", "-f", "-", stdin=text)

    def get(self, kind: str, name: str, namespace: str = "default") -> dict[str, Any] | None:
        """The object as JSON, None when it does not exist."""
        out = subprocess.run(
            [
                *("kubectl", "--kubeconfig", str(self.admin), "-n", namespace),
                *("get", kind, name, "-o", "json", "--ignore-not-found"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if out.returncode != 0:
            raise AssertionError(out.stderr)
        return json.loads(out.stdout) if out.stdout.strip() else None

    def node_of(self, pod: str, namespace: str = "default") -> str:
        obj = self.get("pod", pod, namespace)
        return "" if obj is None else str(obj["spec"].get("nodeName") or "")

    def events(self, reason: str, namespace: str = "default") -> list[dict[str, Any]]:
        """events.k8s.io/v1 Events with this reason."""
        out = self.kubectl("get", "events.v1.events.k8s.io", "-n", namespace, "-o", "json")
        return [e for e in json.loads(out)["items"] if e.get("reason") == reason]

    def grant_kubesched(self) -> None:
        """The shipped ServiceAccount and RBAC, and a kubeconfig with a token for it."""
        for f in ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml"):
            self.kubectl("apply", "-f", str(DEPLOY / f))
        self.token = self.kubectl(
            "create", "token", "kubesched", "-n", NAMESPACE, "--duration=2h"
        ).strip()
        self.write_sa_kubeconfig(self.sa, self.server)

    @property
    def server(self) -> str:
        """The API server's URL (https://127.0.0.1:PORT)."""
        admin = self.admin.read_text()
        return next(ln.split()[-1] for ln in admin.splitlines() if "server:" in ln)

    def write_sa_kubeconfig(self, path: Path, server: str, token: str | None = None) -> Path:
        """A kubeconfig with kubesched's ServiceAccount token (or ``token``) for ``server``."""
        ca = f"    certificate-authority: {self.dir / 'pki' / 'ca.crt'}\n"
        path.write_text(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: cp\n  cluster:\n"
            f"    server: {server}\n{ca if server.startswith('https') else ''}"
            "users:\n- name: kubesched\n  user:\n"
            f"    token: {token or self.token}\n"
            "contexts:\n- name: kubesched\n  context: {cluster: cp, user: kubesched}\n"
            "current-context: kubesched\n"
        )
        return path

    def clean(self) -> None:
        """No Pods, Nodes or PriorityClasses of ours left (Pods force-deleted: no kubelet)."""
        self.kubectl(
            "delete", "pods", "--all", "-n", "default", "--force", "--grace-period=0", "--wait"
        )
        self.kubectl("delete", "nodes", "--all", "--wait")
        self.kubectl("delete", "priorityclass", "-l", "kubesched-test=yes", "--wait")
        self.kubectl("delete", "events.v1.events.k8s.io", "--all", "-n", "default")


def _binaries_or_skip(*more: str) -> None:
    """Skip (in CI: fail) unless etcd, kube-apiserver, ``more`` and kubectl are there."""
    missing = [b for b in ("etcd", "kube-apiserver", *more) if not (BIN / b).exists()]
    if shutil.which("kubectl") is None:
        missing.append("kubectl (on PATH)")
    if not missing:
        return
    msg = f"control plane not built ({', '.join(missing)} missing): run bash oracle/build.sh"
    if os.environ.get("CI") == "true":
        pytest.fail(msg)
    pytest.skip(msg)


@contextmanager
def v137_api_server(directory: Path, gates: Mapping[str, bool], runtime: str) -> Iterator[Path]:
    """etcd and kube-apiserver v1.37.2 (``oracle/controlplane.sh``) in ``directory`` with
    ``gates`` on its ``--feature-gates`` and ``runtime`` its ``--runtime-config``; stopped
    when the block ends."""
    flags = ",".join(f"{k}={str(v).lower()}" for k, v in sorted(gates.items()))
    env = {k: v for k, v in os.environ.items() if k not in ("CONTROLLER_MANAGER", "ORACLE_BIN")}
    env["ORACLE_KUBERNETES_VERSION"] = "1.37"
    env["APISERVER_EXTRA_ARGS"] = f"--feature-gates={flags} --runtime-config={runtime}"
    out = subprocess.run(
        ["bash", str(SCRIPT), "start", str(directory)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if out.returncode != 0:
        pytest.fail(f"controlplane.sh start failed:\n{out.stderr}")
    try:
        yield directory
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", str(directory)], timeout=60, check=False)


@pytest.fixture(scope="session")
def controlplane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    _binaries_or_skip()
    directory = tmp_path_factory.mktemp("controlplane")
    t0 = time.monotonic()
    env = dict(os.environ)
    if (BIN / "kube-controller-manager").exists():
        env["CONTROLLER_MANAGER"] = "1"
    out = subprocess.run(
        ["bash", str(SCRIPT), "start", str(directory)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    if out.returncode != 0:
        pytest.fail(f"controlplane.sh start failed:\n{out.stderr}")
    print(f"\ncontrol plane ready in {time.monotonic() - t0:.1f} s ({directory})")
    cp = ControlPlane(directory)
    try:
        cp.grant_kubesched()
        yield cp
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", str(directory)], timeout=60, check=False)


@pytest.fixture
def cp(controlplane: ControlPlane) -> Iterator[ControlPlane]:
    """The control plane, emptied of Nodes and Pods before and after the test."""
    controlplane.clean()
    yield controlplane
    controlplane.clean()


@pytest.fixture
def pv_controller(cp: ControlPlane) -> ControlPlane:
    """:func:`cp` with kube-controller-manager's PV binder running (skipped, in CI failed,
    when ``oracle/build.sh`` did not build kube-controller-manager)."""
    _binaries_or_skip("kube-controller-manager")
    assert cp.controller_manager, "kube-controller-manager was built after the session began"
    return cp


@pytest.fixture(autouse=True)
def no_forbidden(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail the test if the API server answered kubesched 403 anywhere (a permission the
    shipped RBAC lacks): every error answer of kubesched's client passes ``_status_error``."""
    forbidden: list[str] = []
    original = live_client._status_error

    def spy(status: int, data: bytes, headers: Any) -> live_client.ApiError:
        err = original(status, data, headers)
        if status == 403:
            forbidden.append(str(err))
        return err

    monkeypatch.setattr(live_client, "_status_error", spy)
    yield
    assert not forbidden, f"forbidden by the shipped RBAC: {forbidden[:3]}"
