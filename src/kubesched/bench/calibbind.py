"""The binding half of the cost model, measured through a real API server
(``kubesched calibrate --binding``).

Upstream's ``kube-scheduler`` (``oracle/bin``, v1.34.4) runs against a control plane
(``oracle/controlplane.sh``: etcd and kube-apiserver on loopback) holding ``nodes`` Nodes of
the calibration grid's template, its ``clientConnection`` set to each ``(qps, burst)``, and
``kube-oracle burst`` brings the Pods:

- the **probe**: 200 Pods created one after another (one creator) while the scheduler
  (QPS 5,000) keeps up; the median creation→bound latency less the model's attempt is
  ``requestLatencySeconds``, what the simulator charges from a cycle's end to the bind;
- the **backlog**, per setting: ``pods`` Pods created before the scheduler starts, Pods/s
  from the first bind to the last. At QPS 50 it is the client's token bucket:
  ``requestsPerBind`` is the number of requests per Pod that makes the bucket give that
  rate. At QPS 5,000 the bucket does not bind, and what the rate lacks against the model's
  attempts alone is ``apiSecondsPerPod``, the API server's work per bound Pod (the bind and
  its watch events) on the same cores, charged to each scheduled attempt; the rate at which
  the API server created the backlog with no scheduler running gives
  ``apiSecondsPerCreate``, the same cores' work per Pod created, charged to the scheduling
  loop when a Pod arrives;
- the **burst**, per setting, the validation: ``pods`` Pods created through the API while the
  scheduler runs, Pods/s from the first create to the last bind, against what the simulator
  predicts for the same Nodes and Pods arriving at the measured creation rate.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from kubesched.bench.calibgrid import NODE_TEMPLATE, POD_TEMPLATES, Point
from kubesched.sim.costmodel import CostModel

SETTINGS = ((50.0, 100), (5000.0, 10000))
"""``clientConnection`` (qps, burst): kube-scheduler's default and one that never binds."""
BINARIES = ("etcd", "kube-apiserver", "kube-scheduler")
"""What ``oracle/build.sh`` builds beside ``kube-oracle`` and the measurement runs."""
PROBE_PODS = 200
POD_CPU = "100m"


class BindingError(RuntimeError):
    """A step of the binding measurement failed; the message says which."""


def _run(cmd: list[str], timeout: float) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        raise BindingError(f"{' '.join(cmd[:3])}: no answer after {timeout:g} s") from e
    if proc.returncode != 0:
        raise BindingError(f"{' '.join(cmd[:3])}: {proc.stderr.strip()[-600:]}")
    return proc.stdout


@contextmanager
def control_plane(oracle: Path, folder: Path) -> Iterator[Path]:
    """etcd and kube-apiserver (``controlplane.sh`` beside ``oracle``'s ``bin/``); yields the
    admin kubeconfig and stops both however the block ends."""
    script = oracle.resolve().parent.parent / "controlplane.sh"
    if not script.exists():
        script = oracle.parent.parent / "controlplane.sh"
    try:
        _run(["bash", str(script), "start", str(folder)], 300)
        yield folder / "admin.kubeconfig"
    finally:
        subprocess.run(["bash", str(script), "stop", str(folder)], capture_output=True, timeout=60)


class Bursts:
    """One control plane with the Nodes; schedulers started per setting."""

    def __init__(self, oracle: Path, folder: Path, kubeconfig: Path, timeout: float) -> None:
        self.oracle, self.folder, self.kubeconfig, self.timeout = (
            oracle,
            folder,
            kubeconfig,
            timeout,
        )
        self.pod = folder / "pod.yaml"
        self.pod.write_text(yaml.safe_dump(POD_TEMPLATES["default"]))

    def burst(self, mode: str, *args: str) -> dict[str, Any]:
        base = [str(self.oracle), "burst", mode, "--kubeconfig", str(self.kubeconfig)]
        out = _run([*base, "--timeout", f"{self.timeout:g}", *args], self.timeout + 120)
        return json.loads(out) if out.strip().startswith("{") else {}

    def nodes(self, count: int) -> None:
        template = self.folder / "node.yaml"
        # Named by index: 5,000 random generateName suffixes of 5 characters collide.
        named = NODE_TEMPLATE.replace("generateName: calib-", "name: calib-{{ .Index }}")
        template.write_text(named.replace("FILL", "0"))
        self.burst("nodes", "--template", str(template), "--count", str(count))

    @contextmanager
    def scheduler(self, qps: float, burst: int) -> Iterator[None]:
        """Upstream's kube-scheduler with this client, stopped at the end."""
        config = self.folder / f"scheduler-{qps:g}.json"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "clientConnection": {
                        "kubeconfig": str(self.kubeconfig),
                        "qps": qps,
                        "burst": burst,
                    },
                    "leaderElection": {"leaderElect": False},
                }
            )
        )
        binary = self.oracle.parent / "kube-scheduler"
        with open(self.folder / "kube-scheduler.log", "ab") as log:
            proc = subprocess.Popen(
                [str(binary), "--config", str(config), "--secure-port=0", "--v=1"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            yield
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)

    def pods(self, namespace: str, count: int, *extra: str) -> dict[str, Any]:
        args = ["--template", str(self.pod), "--count", str(count), "--namespace", namespace]
        return self.burst("pods", *args, *extra)

    def delete(self, namespace: str) -> None:
        self.burst("delete", "--namespace", namespace)

    def probe(self) -> float:
        """Median creation→bound seconds of Pods created one at a time (QPS 5,000), once a
        first Pod bound says the scheduler is up."""
        with self.scheduler(*SETTINGS[-1]):
            self.pods("warmup", 1)
            got = self.pods("probe", PROBE_PODS, "--workers", "1")
        for namespace in ("warmup", "probe"):
            self.delete(namespace)
        return float(got["creationToBoundMs"]["Perc50"]) / 1000

    def backlog_and_burst(self, qps: float, burst: int, pods: int, tag: str) -> dict[str, float]:
        """Backlog Pods/s (first bind to last) and burst Pods/s (first create to last bind)
        with its creation rate, for one client setting."""
        backlog, ns = f"backlog-{tag}", f"burst-{tag}"
        created = self.pods(backlog, pods, "--no-wait")
        wait = [str(self.oracle), "burst", "wait", "--kubeconfig", str(self.kubeconfig)]
        wait += ["--namespace", backlog, "--count", str(pods), "--timeout", f"{self.timeout:g}"]
        waiter = subprocess.Popen(wait, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert waiter.stdout is not None
            if waiter.stdout.readline().strip() != "watching":
                raise BindingError(f"kube-oracle burst wait: {waiter.communicate(timeout=10)[1]}")
            with self.scheduler(qps, burst):
                out, err = waiter.communicate(timeout=self.timeout + 60)
                if waiter.returncode != 0:
                    raise BindingError(f"backlog of {pods} Pods: {err.strip()[-600:]}")
                got = self.pods(ns, pods)
        finally:
            if waiter.poll() is None:
                waiter.kill()
        for namespace in (backlog, ns):
            self.delete(namespace)
        return {
            "backlogPodsPerSecond": float(json.loads(out)["podsPerSecond"]),
            "burstPodsPerSecond": float(got["podsPerSecond"]),
            "createPodsPerSecond": float(got["createPodsPerSecond"]),
            "backlogCreatePodsPerSecond": float(created["createPodsPerSecond"]),
        }


def measure(
    oracle: Path,
    *,
    nodes: int,
    pods: int,
    repeat: int,
    timeout: float,
    keep: Path | None,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """The probe and, per setting, the backlog and burst (the setting that never binds
    ``repeat`` times, the fastest backlog kept with its burst)."""
    if keep is None:
        with tempfile.TemporaryDirectory(prefix="kubesched-binding-") as tmp:
            return measure(
                oracle, nodes=nodes, pods=pods, repeat=repeat, timeout=timeout, keep=Path(tmp),
                log=log,
            )  # fmt: skip
    folder = keep
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"nodes": nodes, "pods": pods, "settings": []}
    out["loadAverage"] = {"start": [round(x, 2) for x in os.getloadavg()]}
    with control_plane(oracle, folder) as kubeconfig:
        b = Bursts(oracle, folder, kubeconfig, timeout)
        b.nodes(nodes)
        out["probeSeconds"] = b.probe()
        log(f"calibrate --binding: probe creation->bound p50 {out['probeSeconds'] * 1000:.1f} ms")
        for qps, burst in SETTINGS:
            runs = []
            for r in range(1 if qps == SETTINGS[0][0] else repeat):
                got = b.backlog_and_burst(qps, burst, pods, f"{qps:g}-{r}")
                log(f"calibrate --binding: qps {qps:g}/{burst} run {r + 1}: {got}")
                runs.append(got)
            best = max(runs, key=lambda g: g["backlogPodsPerSecond"])
            out["settings"].append({"qps": qps, "burst": burst, **best})
    out["loadAverage"]["end"] = [round(x, 2) for x in os.getloadavg()]
    return out


def scenario(
    calibration: Path, nodes: int, pods: int, qps: float, burst: int, rate: float
) -> dict[str, Any]:
    """The measured cluster as a simulator scenario: ``pods`` of the grid's Pods arriving at
    ``rate`` per second on ``nodes`` of its Nodes, timed by ``calibration``."""
    return {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Scenario",
        "spec": {
            "durationSeconds": pods / rate,
            "drainSeconds": 3600,
            "timing": {
                "costModel": "upstream",
                "calibration": str(calibration),
                "clientQPS": qps,
                "clientBurst": burst,
            },
            "nodePools": [
                {
                    "name": "calib",
                    "count": nodes,
                    "zones": ["zone-0", "zone-1", "zone-2"],
                    "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                }
            ],
            "workloads": [
                {
                    "name": "pod",
                    "count": pods,
                    "ratePerSecond": rate,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "pause",
                                    "resources": {"requests": {"cpu": POD_CPU, "memory": "500Mi"}},
                                }
                            ]
                        }
                    },
                }
            ],
        },
    }


def predicted_rate(
    calibration: Path, nodes: int, pods: int, qps: float, burst: int, rate: float
) -> float:
    """Pods/s the simulator predicts (first create to last bind) for the scenario."""
    from kubesched.sim.scenario import build_scenario
    from kubesched.sim.simulate import run_scenario

    s = run_scenario(build_scenario(scenario(calibration, nodes, pods, qps, burst, rate)))
    return float(s["scheduledPodsPerVirtualSecond"] or 0.0)


def predicted_backlog(calibration: Path, nodes: int, pods: int, qps: float, burst: int) -> float:
    """Pods/s the simulator predicts for a backlog: the Pods all there at once, their creation
    (before the scheduler started, outside the measured window) not charged."""
    from kubesched.sim.costmodel import dump_calibration

    doc = yaml.safe_load(calibration.read_text())
    doc["binding"] = {**doc["binding"], "apiSecondsPerCreate": 0.0}
    path = calibration.with_name("backlog-" + calibration.name)
    path.write_text(dump_calibration(doc))
    return predicted_rate(path, nodes, pods, qps, burst, 1e6)


def fit(model: CostModel, measured: dict[str, Any]) -> dict[str, float]:
    """The binding parameters from the probe and the backlogs (see the module docstring)."""
    nodes, pods = measured["nodes"], measured["pods"]
    attempt = model.attempt_seconds(
        Point("default", nodes, 0, 16, 0.0, 1).attempts()["scheduled"], 16
    )
    by_qps = {s["qps"]: s for s in measured["settings"]}
    qps, burst = SETTINGS[0]
    drain = (pods - 1) / by_qps[qps]["backlogPodsPerSecond"]
    per_bind = max(1.0, qps * drain / max(1, pods - burst))
    fast = by_qps[SETTINGS[-1][0]]["backlogPodsPerSecond"]
    creates = sorted(s["backlogCreatePodsPerSecond"] for s in measured["settings"])
    return {
        "requestLatencySeconds": round(max(0.0, measured["probeSeconds"] - attempt), 5),
        "requestsPerBind": round(per_bind, 3),
        "apiSecondsPerPod": float(f"{max(0.0, 1.0 / fast - attempt):.4g}"),
        "apiSecondsPerCreate": float(f"{1.0 / creates[len(creates) // 2]:.4g}"),
    }


def section(doc: dict[str, Any], measured: dict[str, Any]) -> dict[str, Any]:
    """The calibration's ``binding`` (its attempt coefficients from ``doc``, the binding
    parameters fitted from ``measured``) with ``validation``: every setting's measured
    backlog and burst against the simulator's prediction (the burst is not in the fit)."""
    from kubesched.sim.costmodel import BINDING_DEFAULTS, dump_calibration, parse_calibration

    binding: dict[str, Any] = dict(BINDING_DEFAULTS)
    binding.update(fit(parse_calibration(doc, "<fitted>"), measured))
    nodes, pods = measured["nodes"], measured["pods"]
    load = measured.get("loadAverage", {})
    binding["source"] = (
        f"measured: upstream kube-scheduler behind kube-apiserver, {nodes} Nodes, "
        f"{pods}-Pod backlogs and bursts, probe creation->bound "
        f"{measured['probeSeconds'] * 1000:.1f} ms; load average "
        f"{load.get('start', ['?'])[0]} at the start, {load.get('end', ['?'])[0]} at the end"
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "calibration.yaml"
        path.write_text(dump_calibration({**doc, "binding": binding}))
        for s in measured["settings"]:
            qps, burst = s["qps"], s["burst"]
            for what, rate, got in (
                ("backlog", 1e6, s["backlogPodsPerSecond"]),
                ("burst", s["createPodsPerSecond"], s["burstPodsPerSecond"]),
            ):
                if what == "backlog":
                    want = predicted_backlog(path, nodes, pods, qps, burst)
                else:
                    want = predicted_rate(path, nodes, pods, qps, burst, rate)
                rows.append(
                    {
                        "qps": qps,
                        "burst": burst,
                        "pods": what,
                        "createPodsPerSecond": round(rate, 1) if what == "burst" else None,
                        "fitted": what == "backlog",
                        "measuredPodsPerSecond": round(got, 1),
                        "predictedPodsPerSecond": round(want, 1),
                        "errorPercent": round((want - got) / got * 100, 1),
                    }
                )
    return {**binding, "validation": rows}
