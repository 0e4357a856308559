"""Fixtures for live mode: the fake API server, kubeconfigs, replicas of ``kubesched run``.

Everything is loopback; every wait is bounded (:func:`wait_for`), every thread a daemon.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched.config.featuregates import FeatureGates
from kubesched.config.load import load_config
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.live.client import KubeClient, connect
from kubesched.live.coordinator import CoordinatorScheduler
from kubesched.live.informer import Timing
from kubesched.live.roles import COORDINATOR, SHARD, LiveCoordinator, make_replica
from kubesched.live.runner import LiveScheduler
from kubesched.live.shard import LiveShard
from kubesched.plugins.registry import known_plugin_names
from tests.live.fakeapi import FakeApiServer
from tests.live.fakestore import Obj, by_plural

FAST = Timing(backoff_initial=0.05, backoff_max=0.5, watch_timeout=5.0, page_size=500)
KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


def wait_for(cond: Callable[[], Any], timeout: float = 20.0, step: float = 0.02) -> Any:
    """Poll ``cond`` until truthy; its value, or AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {cond}")
        time.sleep(step)


STEADY_LEASE = ("15s", "10s", "100ms")
"""Lease timings with no failover on a loaded machine (the 1 s test default loses the Lease
to a few slow requests), for tests that do not test failover."""


def make_config(
    *,
    leader: bool = True,
    lease: tuple[str, str, str] = ("1s", "600ms", "100ms"),
    namespace: str = "kube-system",
    kubernetes_version: str | None = None,
    gates: FeatureGates | None = None,
) -> KubeSchedulerConfiguration:
    """Profiles ``kubesched`` (the one under test); a short Lease; the default profile of
    ``kubernetes_version`` (None: the default release), as ``kubesched run`` takes it from
    the API server's ``/version``, or of ``gates`` (a release with ``--feature-gates``)."""
    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {
            "leaderElect": leader,
            "leaseDuration": lease[0],
            "renewDeadline": lease[1],
            "retryPeriod": lease[2],
            "resourceName": "kubesched",
            "resourceNamespace": namespace,
        },
        "profiles": [{"schedulerName": "kubesched"}],
    }
    if gates is None and kubernetes_version is not None:
        gates = FeatureGates(kubernetes_version)
    return load_config(raw, known_plugins=known_plugin_names(), gates=gates)


def node(name: str, cpu: str = "4", **labels: str) -> Obj:
    """A Node manifest."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str = "100m", scheduler: str = "kubesched", ns: str = "default") -> Obj:
    """An unbound Pod manifest."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


class Api:
    """Direct access to the fake server's store (test-side writes and reads)."""

    def __init__(self, server: FakeApiServer) -> None:
        self.server = server
        self.store = server.store

    def create(self, obj: Obj) -> Obj:
        plural = {"Pod": "pods", "Node": "nodes", "Namespace": "namespaces"}[obj["kind"]]
        ns = obj["metadata"].get("namespace", "")
        return self.store.create(by_plural(plural), ns, obj)

    def pod(self, name: str, ns: str = "default") -> Obj:
        return self.store.get(by_plural("pods"), ns, name)

    def node_of(self, name: str, ns: str = "default") -> str:
        return str(self.pod(name, ns)["spec"].get("nodeName") or "")

    def events(self, reason: str) -> list[Obj]:
        items, _ = self.store.list(by_plural("events", "events.k8s.io"), "", "", "")
        return [e for e in items if e.get("reason") == reason]


def kubectl(server: FakeApiServer, *args: str, stdin: str | None = None) -> str:
    """Run the real kubectl against the fake server; stdout (raises on failure)."""
    assert KUBECTL is not None
    out = subprocess.run(
        [KUBECTL, "--server", server.url, "--request-timeout=5s", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=20,
    )
    if out.returncode != 0:
        raise subprocess.CalledProcessError(out.returncode, args, out.stdout, out.stderr)
    return out.stdout


class Replica:
    """One in-process ``kubesched run`` replica on a thread."""

    def __init__(
        self,
        kubeconfig: Path,
        identity: str,
        config: KubeSchedulerConfiguration | None = None,
    ) -> None:
        self.client: KubeClient = connect(
            kubeconfig=str(kubeconfig), user_agent=f"kubesched-test ({identity})"
        )
        self.live = LiveScheduler(
            config or make_config(lease=STEADY_LEASE),
            self.client,
            identity=identity,
            timing=FAST,
            election_client=self.client.sibling(0, 1),
        )
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, name=f"replica-{identity}", daemon=True)

    def _run(self) -> None:
        self.code = self.live.run()

    def start(self) -> Replica:
        self.thread.start()
        return self

    def stop(self, timeout: float = 8.0) -> int | None:
        self.live.stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "replica did not stop"
        self.client.close()
        return self.code


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    s = FakeApiServer()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def api(server: FakeApiServer) -> Api:
    return Api(server)


@pytest.fixture
def kubeconfig(server: FakeApiServer, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig.yaml"
    path.write_text(server.kubeconfig())
    return path


@pytest.fixture
def replicas(kubeconfig: Path) -> Iterator[Callable[..., Replica]]:
    """Factory of started replicas; all are stopped at teardown."""
    made: list[Replica] = []

    def make(identity: str = "a", config: KubeSchedulerConfiguration | None = None) -> Replica:
        r = Replica(kubeconfig, identity, config)
        made.append(r)
        return r.start()

    yield make
    for r in made:
        if r.thread.is_alive():
            r.stop()


# --------------------------------------------------------------------------- sharded roles
class Role:
    """One in-process replica of a role on a thread."""

    def __init__(
        self,
        kubeconfig: Path,
        role: str,
        identity: str,
        config: KubeSchedulerConfiguration | None = None,
        **kw: Any,
    ) -> None:
        self.client: KubeClient = connect(
            kubeconfig=str(kubeconfig), user_agent=f"kubesched-test ({identity})"
        )
        self.live: LiveScheduler = make_replica(
            role,
            config or make_config(),
            self.client,
            identity=identity,
            timing=FAST,
            election_client=self.client.sibling(0, 1),
            **kw,
        )
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, name=identity, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.code = self.live.run()

    @property
    def coordinator(self) -> CoordinatorScheduler:
        assert isinstance(self.live, LiveCoordinator)
        return self.live.coordinator

    @property
    def shard(self) -> LiveShard:
        assert isinstance(self.live, LiveShard)
        return self.live

    def stop(self) -> None:
        if self.thread.is_alive():
            self.live.stop()
            self.thread.join(8)
            assert not self.thread.is_alive(), "replica did not stop"
        self.client.close()


@pytest.fixture
def roles(kubeconfig: Path) -> Iterator[Callable[..., Role]]:
    made: list[Role] = []

    def make(
        role: str, identity: str, config: KubeSchedulerConfiguration | None = None, **kw: Any
    ) -> Role:
        r = Role(kubeconfig, role, identity, config, **kw)
        made.append(r)
        return r

    yield make
    for r in made:
        r.stop()


def start(
    roles: Callable[..., Role], shards: int = 2, config: KubeSchedulerConfiguration | None = None
) -> tuple[Role, list[Role]]:
    """A coordinator and its shards, all live (``config``: steady Leases unless given)."""
    config = config or make_config(lease=STEADY_LEASE)
    c = roles(COORDINATOR, "coordinator", config, shards=shards)
    s = [roles(SHARD, f"shard-{i}", config, shards=shards, shard_index=i) for i in range(shards)]
    wait_for(lambda: c.coordinator.live == list(range(shards)), timeout=10)
    return c, s
