"""Live cold start: ``kubesched run`` against an API server holding a large cluster, timed
from the process's spawn to the bind of one pending Pod (lists of every kind, cache built,
first scheduling cycle: ready to schedule), with the process's peak RSS.

The API server is the test suite's fake (``tests/live/fakeapi.py``: kube-apiserver's wire
protocol on loopback: lists paged by ``limit`` except at ``resourceVersion=0``, answered
whole as kube-apiserver's watch cache does; the sorted keys kept between pages; each object
encoded once and pages joined from the encodings, as the watch cache keeps serialized
objects), filled with a snapshot written by ``make_snapshot.py``; the encodings are made
before the first run (timed, printed).  It runs in this process, so it competes with
``kubesched run`` for the machine's cores (as a real one would not).  The time its list
pages took to build is printed beside each run ("server"), so kubesched's own part can be
told apart.  Several ``--src`` trees are interleaved.

    .venv/bin/python benchmarks/make_snapshot.py -o /tmp/snap.json
    .venv/bin/python benchmarks/live_start.py --snapshot /tmp/snap.json \\
        [--src /work/main/src --src src] [--runs 1]

Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.live.fakeapi import FakeApiServer
from tests.live.fakestore import by_plural

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: kubesched
"""
MAIN = "import sys; from kubesched.cli import main; sys.exit(main())"
PROBE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "probe", "namespace": "default"},
    "spec": {
        "schedulerName": "kubesched",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
    },
}


def fill(server: FakeApiServer, snapshot: str) -> int:
    """Put the snapshot's Nodes and Pods (and the pending probe Pod) in the server's store."""
    with open(snapshot) as fh:
        items = json.load(fh)["items"]
    plural = {"Node": "nodes", "Pod": "pods", "Namespace": "namespaces"}
    namespaces = sorted({o["metadata"]["namespace"] for o in items if o["kind"] == "Pod"})
    existing = {
        o["metadata"]["name"] for o in server.store.list(by_plural("namespaces"), "", "", "")[0]
    }
    made = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        for ns in namespaces
        if ns not in existing
    ]
    for obj in [*made, *items, json.loads(json.dumps(PROBE))]:
        ns = obj["metadata"].get("namespace", "")
        server.store.create(by_plural(plural[obj["kind"]]), ns, obj)
    return len(items)


class PageTimer:
    """Wraps the store's ``page_json`` to add up the seconds during which the server was
    building at least one list page (concurrent lists counted once)."""

    def __init__(self, server: FakeApiServer) -> None:
        self.seconds = 0.0
        self.pages = 0
        self._busy = 0
        self._since = 0.0
        self._lock = threading.Lock()
        inner = server.store.page_json

        def timed(*args: Any) -> Any:
            with self._lock:
                if not self._busy:
                    self._since = time.perf_counter()
                self._busy += 1
            try:
                return inner(*args)
            finally:
                with self._lock:
                    self._busy -= 1
                    self.pages += 1
                    if not self._busy:
                        self.seconds += time.perf_counter() - self._since

        server.store.page_json = timed  # type: ignore[method-assign]


def encode(server: FakeApiServer) -> float:
    """Encode every Node and Pod once (the server keeps the encodings); the seconds taken."""
    start = time.perf_counter()
    for plural in ("nodes", "pods"):
        server.store.page_json(by_plural(plural), "", "", "", 0, 0)
    return time.perf_counter() - start


def run_once(src: str, server: FakeApiServer, workdir: Path, timeout: float) -> tuple[float, float]:
    """Seconds from spawn to the probe's bind, and peak RSS in MiB, of one ``kubesched run``."""
    pods = by_plural("pods")
    server.store.delete(pods, "default", "probe")  # pending again for this run
    server.store.create(pods, "default", json.loads(json.dumps(PROBE)))
    kubeconfig = workdir / "kubeconfig.yaml"
    kubeconfig.write_text(server.kubeconfig())
    config = workdir / "config.yaml"
    config.write_text(CONFIG)
    env = {**os.environ, "PYTHONPATH": os.path.abspath(src)}
    args = ["run", "--config", str(config), "--kubeconfig", str(kubeconfig), "--metrics-port", "0"]
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", MAIN, *args], env=env)
    try:
        while not server.store.get(pods, "default", "probe")["spec"].get("nodeName"):
            if proc.poll() is not None or time.perf_counter() - start > timeout:
                raise SystemExit(f"{src}: no bind (exit code {proc.returncode})")
            time.sleep(0.05)
        elapsed = time.perf_counter() - start
        rss = peak_rss(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    return elapsed, rss


def peak_rss(pid: int) -> float:
    """The process's peak RSS in MiB so far (``VmHWM``; not ``ru_maxrss``, which a child
    inherits from before its ``exec``: here the size of this process, fake server and all)."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--snapshot", required=True)
    ap.add_argument("--src", action="append", help="source tree to time (repeatable)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900.0)
    args = ap.parse_args()
    srcs = args.src or ["src"]
    server = FakeApiServer()
    pages = PageTimer(server)
    try:
        print(f"{fill(server, args.snapshot)} objects served at {server.url}", flush=True)
        print(f"server: objects encoded in {encode(server):.1f} s", flush=True)
        results: dict[str, list[tuple[float, float]]] = {s: [] for s in srcs}
        print(f"load average before: {os.getloadavg()}", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(args.runs):
                for src in srcs:
                    before = (pages.seconds, pages.pages)
                    secs, rss = run_once(src, server, Path(tmp), args.timeout)
                    results[src].append((secs, rss))
                    load = os.getloadavg()[0]
                    served = pages.seconds - before[0], pages.pages - before[1]
                    print(
                        f"run {i + 1} {src}: {secs:.1f} s to the first bind, {rss:.0f} MiB, "
                        f"load {load:.1f} (server: {served[1]} pages in {served[0]:.1f} s)",
                        flush=True,
                    )
        for src in srcs:
            secs = statistics.median(r[0] for r in results[src])
            rss = statistics.median(r[1] for r in results[src])
            print(f"{src}: median {secs:.1f} s to the first bind, {rss:.0f} MiB peak RSS")
    finally:
        server.close()


if __name__ == "__main__":
    main()
