"""Upstream kube-scheduler v1.34 and kubesched side by side, in one run, on this machine.

1. In-engine (``--engine``): for each workload of ``../shared/benchmarks/performance-config.yaml``,
   ``kube-oracle bench`` (upstream's scheduler over a fake clientset, Pods created in memory)
   and ``kubesched bench`` (in-memory binds), interleaved A B A B A B; medians of the
   SchedulingThroughput Average and of the SchedulingAttemptDuration Perc99.
2. Against the real API server (``--api``): ``oracle/controlplane.sh`` starts etcd and
   kube-apiserver, ``kube-oracle burst nodes`` creates the Nodes, then for each
   ``clientConnection`` qps/burst setting, each repeat and each scheduler (upstream's
   ``oracle/bin/kube-scheduler``, then ``kubesched run``): the scheduler starts, a 1-Pod
   warm-up shows it is serving, ``kube-oracle burst pods`` creates the burst through the API
   with parallel unthrottled workers and reports Pods/s from the first create to the last
   bind and each Pod's creation->bound latency; the scheduler stops; the Pods are deleted.

    PYTHONPATH=src .venv/bin/python benchmarks/upstream_side_by_side.py \\
        [--engine] [--api] [--repeats 3] [--workloads SchedulingBasic/5000Nodes_10000Pods,...] \\
        [--nodes 5000] [--pods 5000] [--qps 50:100,5000:10000] [--py-spy FILE] [--json FILE]

With neither ``--engine`` nor ``--api`` both run.  Needs ``bash oracle/build.sh`` (kube-oracle,
etcd, kube-apiserver, kube-scheduler); ``--py-spy`` needs py-spy on PATH or in the venv.
The control plane is stopped however the run ends.  Prints Markdown tables; not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / "oracle" / "bin"
CONFIG = (
    next(
        (p for p in (ROOT.parent / "shared", ROOT.parents[1] / "shared") if p.is_dir()),
        ROOT.parent / "shared",
    )
    / "benchmarks"
    / "performance-config.yaml"
)
"""``../shared/benchmarks/performance-config.yaml`` (of the main checkout or a worktree's)."""
WORKLOADS = (
    "SchedulingBasic/5000Nodes_10000Pods",
    "TopologySpreading/5000Nodes_5000Pods",
    "SchedulingPodAntiAffinity/5000Nodes_2000Pods",
    "SchedulingNodeAffinity/5000Nodes_10000Pods",
    "PreemptionBasic/500Nodes",
)
UPSTREAM, OURS = "kube-scheduler", "kubesched"


class BenchError(Exception):
    """A step failed; the message says which and why."""


def run(cmd: list[str], timeout: float, **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; a timeout is a BenchError naming the command."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        raise BenchError(f"{' '.join(cmd[:4])} ...: no answer after {timeout:g} s") from e


def kubesched_cmd() -> list[str]:
    """``kubesched`` of this checkout (PYTHONPATH=src), with the running interpreter."""
    return [sys.executable, "-c", "import sys; from kubesched.cli import main; sys.exit(main())"]


def env() -> dict[str, str]:
    src = str(ROOT / "src")
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{src}:{path}" if path else src}


# ---- in-engine ------------------------------------------------------------------------------


def bench_once(who: str, workload: str, config: Path, timeout: float) -> dict[str, Any]:
    """One workload by one scheduler: throughput Average, attempt p99 (ms), summary line."""
    case, name = workload.split("/", 1)
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        args = [str(config), "--case", case, "--workload", name, "-o", out.name]
        if who == UPSTREAM:
            cmd = [str(BIN / "kube-oracle"), "bench", *args]
        else:
            cmd = [*kubesched_cmd(), "bench", *args, "--no-progress"]
        proc = run(cmd, timeout, env=env())
        lines = proc.stdout.strip().splitlines()
        if proc.returncode not in (0, 1) or not Path(out.name).stat().st_size:
            raise BenchError(
                f"{who} bench {workload}: exit {proc.returncode}: {proc.stderr[-800:]}"
            )
        items = json.loads(Path(out.name).read_text())["dataItems"]
    metric = {i["labels"]["Metric"]: i["data"] for i in items}
    tp = metric.get("SchedulingThroughput", {}).get("Average", float("nan"))
    p99 = metric.get("SchedulingAttemptDuration", {}).get("Perc99", float("nan"))
    return {"podsPerSecond": tp, "attemptP99Ms": p99, "summary": lines[-1] if lines else ""}


def engine(workloads: list[str], repeats: int, config: Path, timeout: float) -> dict[str, Any]:
    """Each workload, upstream and kubesched interleaved ``repeats`` times."""
    table: dict[str, Any] = {}
    for w in workloads:
        runs: dict[str, list[dict[str, Any]]] = {UPSTREAM: [], OURS: []}
        for r in range(repeats):
            for who in (UPSTREAM, OURS):
                res = bench_once(who, w, config, timeout)
                runs[who].append(res)
                print(f"[engine {r + 1}/{repeats}] {who}: {res['summary']}", file=sys.stderr)
        table[w] = {who: summarise(rs, "podsPerSecond", "attemptP99Ms") for who, rs in runs.items()}
    return table


def summarise(runs: list[dict[str, Any]], *keys: str) -> dict[str, Any]:
    """Medians of ``keys`` over ``runs``, and the runs."""
    out: dict[str, Any] = {k: statistics.median(r[k] for r in runs) for k in keys}
    out["runs"] = runs
    return out


# ---- against the API server -----------------------------------------------------------------


@contextmanager
def control_plane(keep: Path | None) -> Iterator[Path]:
    """etcd + kube-apiserver in a fresh directory; stopped (and removed unless kept) at exit."""
    directory = keep or Path(tempfile.mkdtemp(prefix="upbench-"))
    script = ROOT / "oracle" / "controlplane.sh"
    proc = run(["bash", str(script), "start", str(directory)], 300)
    if proc.returncode != 0:
        run(["bash", str(script), "stop", str(directory)], 60)
        raise BenchError(f"controlplane.sh start failed:\n{proc.stderr[-1500:]}")
    try:
        yield directory
    finally:
        run(["bash", str(script), "stop", str(directory)], 60)
        if keep is None:
            shutil.rmtree(directory, ignore_errors=True)


def scheduler_config(directory: Path, who: str, qps: float, burst: int) -> tuple[Path, str]:
    """A KubeSchedulerConfiguration: this qps/burst, no leader election, one profile."""
    name = "default-scheduler" if who == UPSTREAM else "kubesched"
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {
            "kubeconfig": str(directory / "admin.kubeconfig"),
            "qps": qps,
            "burst": burst,
        },
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": name}],
    }
    path = directory / f"{who}-{qps:g}.json"
    path.write_text(json.dumps(cfg))
    return path, name


def start_scheduler(directory: Path, who: str, config: Path) -> subprocess.Popen[bytes]:
    log = open(directory / f"{who}.log", "ab")  # noqa: SIM115 (closed with the process)
    if who == UPSTREAM:
        cmd = [str(BIN / "kube-scheduler"), "--config", str(config), "--secure-port=0", "--v=1"]
    else:
        cmd = [*kubesched_cmd(), "run", "--config", str(config), "--metrics-port", "0"]
    return subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, env=env(), start_new_session=True
    )


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def burst(directory: Path, mode: str, *args: str, timeout: float) -> str:
    kubeconfig = str(directory / "admin.kubeconfig")
    cmd = [
        str(BIN / "kube-oracle"),
        "burst",
        mode,
        "--kubeconfig",
        kubeconfig,
        "--timeout",
        f"{timeout:g}",
        *args,
    ]
    proc = run(cmd, timeout + 60)
    if proc.returncode != 0:
        raise BenchError(f"kube-oracle burst {mode} {' '.join(args)}: {proc.stderr.strip()[-800:]}")
    return proc.stdout


def api_once(
    directory: Path,
    who: str,
    qps: float,
    burst_: int,
    pods: int,
    tag: str,
    timeout: float,
    spy: Path | None,
    templates: Path,
) -> dict[str, Any]:
    """One scheduler started fresh: first the backlog (Pods created before it started), then
    the burst (Pods created while it runs); returns the burst's numbers plus
    ``backlogPodsPerSecond``."""
    config, name = scheduler_config(directory, who, qps, burst_)
    pod_args = ("--template", str(templates / "pod-default.yaml"), "--scheduler-name", name)
    backlog, burst_ns = f"backlog-{tag}", f"burst-{tag}"
    burst(
        directory,
        "pods",
        *pod_args,
        "--count",
        str(pods),
        "--namespace",
        backlog,
        "--no-wait",
        timeout=timeout,
    )
    kubeconfig = str(directory / "admin.kubeconfig")
    wait = ["--kubeconfig", kubeconfig, "--namespace", backlog, "--count", str(pods)]
    waiter = subprocess.Popen(
        [str(BIN / "kube-oracle"), "burst", "wait", *wait, "--timeout", f"{timeout:g}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc = recorder = None
    try:
        assert waiter.stdout is not None
        if waiter.stdout.readline().strip() != "watching":
            raise BenchError(f"kube-oracle burst wait: {waiter.communicate(timeout=10)[1].strip()}")
        proc = start_scheduler(directory, who, config)
        out, err = waiter.communicate(timeout=timeout + 60)
        if waiter.returncode != 0:
            raise BenchError(f"backlog of {pods} Pods: {err.strip()}")
        backlog_rate = json.loads(out)["podsPerSecond"]
        if spy is not None:
            # --gil: only the thread holding the GIL, i.e. where Python spends its CPU
            record = ["record", "--format", "raw", "--gil", "-o", str(spy), "-p", str(proc.pid)]
            recorder = subprocess.Popen(
                [py_spy(), *record],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1)
        out = burst(
            directory,
            "pods",
            *pod_args,
            "--count",
            str(pods),
            "--namespace",
            burst_ns,
            timeout=timeout,
        )
        return {**json.loads(out), "backlogPodsPerSecond": backlog_rate}
    except (BenchError, subprocess.TimeoutExpired) as e:
        tail = (directory / f"{who}.log").read_text(errors="replace")[-1500:] if proc else ""
        raise BenchError(f"{who} at qps {qps:g}: {e}\n--- last lines of {who}.log:\n{tail}") from e
    finally:
        if waiter.poll() is None:
            waiter.kill()
        if recorder is not None:
            stop(recorder, signal.SIGINT)
        if proc is not None:
            stop(proc)
        for ns in (backlog, burst_ns):
            burst(directory, "delete", "--namespace", ns, timeout=300)


def py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(found).exists():
        raise BenchError("--py-spy: py-spy not found (pip install py-spy into the venv)")
    return found


def api(
    nodes: int,
    pods: int,
    settings: list[tuple[float, int]],
    repeats: int,
    timeout: float,
    spy: Path | None,
    keep: Path | None,
    templates: Path,
) -> dict[str, Any]:
    """The burst for every (qps, burst) setting and scheduler, ``repeats`` times interleaved;
    ``templates`` holds node-default.yaml and pod-default.yaml."""
    table: dict[str, Any] = {}
    with control_plane(keep) as directory:
        template = str(templates / "node-default.yaml")
        print(
            burst(
                directory, "nodes", "--template", template, "--count", str(nodes), timeout=600
            ).strip(),
            file=sys.stderr,
        )
        for qps, b in settings:
            runs: dict[str, list[dict[str, Any]]] = {UPSTREAM: [], OURS: []}
            for r in range(repeats):
                for who in (UPSTREAM, OURS):
                    profile = (
                        spy
                        if (spy is not None and who == OURS and r == 0 and (qps, b) == settings[-1])
                        else None
                    )
                    res = api_once(
                        directory,
                        who,
                        qps,
                        b,
                        pods,
                        f"{who}-{qps:g}-{r}",
                        timeout,
                        profile,
                        templates,
                    )
                    runs[who].append(res)
                    lat = res["creationToBoundMs"]
                    print(
                        f"[api {qps:g}/{b} {r + 1}/{repeats}] {who}: "
                        f"{res['podsPerSecond']:.1f} pods/s, p99 creation->bound "
                        f"{lat['Perc99']:.0f} ms, created at {res['createPodsPerSecond']:.0f}/s; "
                        f"backlog {res['backlogPodsPerSecond']:.1f} pods/s",
                        file=sys.stderr,
                    )
            for who, rs in runs.items():
                for res in rs:
                    res["p99Ms"] = res["creationToBoundMs"]["Perc99"]
                keys = ("podsPerSecond", "p99Ms", "createPodsPerSecond", "backlogPodsPerSecond")
                table[f"{qps:g}/{b}/{who}"] = summarise(rs, *keys)
    return table


# ---- py-spy and the tables ------------------------------------------------------------------


def top_frames(raw: Path, n: int = 12) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """From py-spy's raw (collapsed) output: the top ``n`` functions by share of samples on
    top of the stack (self) and anywhere on it (inclusive), line numbers dropped."""
    self_: dict[str, int] = {}
    incl: dict[str, int] = {}
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [
            f.rsplit(":", 1)[0] + ")" if f.endswith(")") and ":" in f else f
            for f in stack.split(";")
        ]
        total += int(count)
        self_[frames[-1]] = self_.get(frames[-1], 0) + int(count)
        for f in set(frames):
            incl[f] = incl.get(f, 0) + int(count)

    def top(d: dict[str, int]) -> list[tuple[str, float]]:
        return [(f, 100.0 * c / total) for f, c in sorted(d.items(), key=lambda kv: -kv[1])[:n]]

    return (top(self_), top(incl)) if total else ([], [])


def print_tables(result: dict[str, Any]) -> None:
    version = run([str(BIN / "kube-oracle"), "version"], 30).stdout.strip().rsplit(" ", 1)[-1]
    load = ", ".join(f"{x:.1f}" for x in result["loadAverageAtEnd"])
    print(f"\nload average at the start {result['loadAverageAtStart'][0]:.1f}, at the end {load}")
    if "engine" in result:
        print(
            f"\n| case / workload | kube-scheduler {version} pods/s | kubesched pods/s | ratio | "
            "p99 attempt upstream | p99 attempt kubesched |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        for w, row in result["engine"].items():
            up, us = row[UPSTREAM], row[OURS]
            print(
                f"| {w} | {up['podsPerSecond']:,.0f} | {us['podsPerSecond']:,.0f} | "
                f"{us['podsPerSecond'] / up['podsPerSecond']:.1f}× | {up['attemptP99Ms']:.2f} ms | "
                f"{us['attemptP99Ms']:.2f} ms |"
            )
    if "api" in result:
        print(
            "\n| clientConnection qps / burst | scheduler | burst: Pods/s to all bound | "
            "p99 creation→bound | Pods created per s | backlog: Pods/s | "
            f"ratio kubesched / {version} (burst, backlog) |"
        )
        print("|---|---|---:|---:|---:|---:|---:|")
        for key, row in result["api"].items():
            qps, b, who = key.split("/")
            up = result["api"][f"{qps}/{b}/{UPSTREAM}"]
            ratio = (
                f"{row['podsPerSecond'] / up['podsPerSecond']:.2f}×, "
                f"{row['backlogPodsPerSecond'] / up['backlogPodsPerSecond']:.2f}×"
                if who == OURS
                else ""
            )
            print(
                f"| {qps} / {b} | {who} | {row['podsPerSecond']:,.0f} | "
                f"{row['p99Ms'] / 1000:.2f} s | {row['createPodsPerSecond']:,.0f} | "
                f"{row['backlogPodsPerSecond']:,.0f} | {ratio} |"
            )
    for title, frames in result.get("pySpy", {}).items():
        print(f"\npy-spy, kubesched run during the burst, top frames ({title}):")
        for f, share in frames:
            print(f"  {share:5.1f}%  {f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--engine", action="store_true", help="in-engine workloads only (with --api: both)"
    )
    ap.add_argument(
        "--api", action="store_true", help="the API server burst only (with --engine: both)"
    )
    ap.add_argument("--repeats", type=int, default=3, help="runs per row; the table shows medians")
    ap.add_argument(
        "--workloads", default=",".join(WORKLOADS), help="CASE/WORKLOAD,... of --config"
    )
    ap.add_argument("--config", type=Path, default=CONFIG, help="scheduler_perf config")
    ap.add_argument("--nodes", type=int, default=5000, help="Nodes behind the API server")
    ap.add_argument("--pods", type=int, default=5000, help="Pods per burst")
    ap.add_argument("--qps", default="50:100,5000:10000", help="clientConnection QPS:BURST,...")
    ap.add_argument("--timeout", type=float, default=900, help="seconds one run may take")
    ap.add_argument(
        "--py-spy", type=Path, help="record kubesched run's last-setting burst here (raw)"
    )
    ap.add_argument("--keep", type=Path, help="control plane directory to keep (logs, configs)")
    ap.add_argument("--json", type=Path, help="write every run's numbers here")
    args = ap.parse_args(argv)
    both = not (args.engine or args.api)
    needed = ["kube-oracle"] + (
        ["etcd", "kube-apiserver", "kube-scheduler"] if args.api or both else []
    )
    missing = [b for b in needed if not (BIN / b).exists()]
    if missing:
        print(
            f"error: {', '.join(missing)} missing in {BIN}: run bash oracle/build.sh",
            file=sys.stderr,
        )
        return 2
    if not args.config.exists():
        print(f"error: {args.config}: no such file (--config)", file=sys.stderr)
        return 2
    try:
        settings = [(float(q), int(b)) for q, b in (s.split(":") for s in args.qps.split(","))]
    except ValueError:
        print(f"error: --qps {args.qps!r}: want QPS:BURST[,QPS:BURST...]", file=sys.stderr)
        return 2
    result: dict[str, Any] = {"loadAverageAtStart": os.getloadavg()}
    try:
        if args.engine or both:
            workloads = [w for w in args.workloads.split(",") if w]
            result["engine"] = engine(workloads, args.repeats, args.config, args.timeout)
        if args.api or both:
            result["api"] = api(
                *(args.nodes, args.pods, settings, args.repeats, args.timeout),
                *(args.py_spy, args.keep, args.config.parent / "templates"),
            )
            if args.py_spy is not None and args.py_spy.exists():
                self_, incl = top_frames(args.py_spy)
                result["pySpy"] = {"self": self_, "inclusive": incl}
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        result["loadAverageAtEnd"] = os.getloadavg()
        if args.json is not None:
            args.json.write_text(json.dumps(result, indent=2) + "\n")
    print_tables(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
