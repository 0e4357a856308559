"""Upstream kube-scheduler v1.34 and kubesched side by side, in one run, on this machine.

1. In-engine (``--engine``): for each workload of ``benchmarks/upstream/performance-config.yaml``,
   ``kube-oracle bench`` (upstream's scheduler over a fake clientset, Pods created in memory)
   and ``kubesched bench`` (in-memory binds), interleaved A B A B A B; medians of the
   SchedulingThroughput Average and of the SchedulingAttemptDuration Perc99.
2. Against the real API server (``--api``, ``_upstream_api.py``): a control plane with the
   Nodes; per ``clientConnection`` qps/burst, repeat and scheduler (upstream's
   ``kube-scheduler``, then ``kubesched run``, interleaved): a backlog of Pods created before
   the scheduler starts (Pods/s first bind -> last bind, whatever the creation rate), then a
   burst created through the API while it runs (Pods/s first create -> last bind, p99
   creation->bound, and the creation rate), medians; and each scheduler's process CPU (user +
   system, every thread and waited-for child, from ``/proc``) per Pod: from its start to the
   backlog's last bind (start-up included) and during the burst.

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
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

# benchmarks/ is on sys.path as the script dir
from _upstream_api import (
    BIN,
    OURS,
    RELEASE,
    UPSTREAM,
    BenchError,
    api,
    env,
    kubesched_cmd,
    run,
    summarise,
    top_frames,
)

CONFIG = Path(__file__).resolve().parent / "upstream" / "performance-config.yaml"
"""``benchmarks/upstream/performance-config.yaml`` (of the main checkout or a worktree's)."""
WORKLOADS = (
    "SchedulingBasic/5000Nodes_10000Pods",
    "TopologySpreading/5000Nodes_5000Pods",
    "SchedulingPodAntiAffinity/5000Nodes_2000Pods",
    "SchedulingNodeAffinity/5000Nodes_10000Pods",
    "PreemptionBasic/500Nodes",
)
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
            cmd += ["--kubernetes-version", RELEASE]
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


# ---- the tables ------------------------------------------------------------------------------


def print_tables(result: dict[str, Any]) -> None:
    version = run([str(BIN / "kube-oracle"), "version"], 30).stdout.strip().rsplit(" ", 1)[-1]
    load = ", ".join(f"{x:.1f}" for x in result["loadAverageAtEnd"])
    print(f"\nload average at the start {result['loadAverageAtStart'][0]:.1f}, at the end {load}")
    if "engine" in result:
        print(
            f"\n| case / workload | kube-scheduler {version} pods/s | kubesched pods/s | "
            "kubesched / upstream | p99 attempt upstream | p99 attempt kubesched |"
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
            "backlog: CPU ms per Pod | burst: CPU ms per Pod | "
            f"ratio kubesched / {version} (burst, backlog, backlog CPU, burst CPU) |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for key, row in result["api"].items():
            qps, b, who = key.split("/")
            up = result["api"][f"{qps}/{b}/{UPSTREAM}"]
            ratio = (
                f"{row['podsPerSecond'] / up['podsPerSecond']:.2f}×, "
                f"{row['backlogPodsPerSecond'] / up['backlogPodsPerSecond']:.2f}×, "
                f"{row['backlogCpuMsPerPod'] / up['backlogCpuMsPerPod']:.2f}×, "
                f"{row['cpuMsPerPod'] / up['cpuMsPerPod']:.2f}×"
                if who == OURS
                else ""
            )
            print(
                f"| {qps} / {b} | {who} | {row['podsPerSecond']:,.0f} | "
                f"{row['p99Ms'] / 1000:.2f} s | {row['createPodsPerSecond']:,.0f} | "
                f"{row['backlogPodsPerSecond']:,.0f} | {row['backlogCpuMsPerPod']:.2f} | "
                f"{row['cpuMsPerPod']:.2f} | {ratio} |"
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
    # SIGTERM unwinds like Ctrl-C, so the control plane and the schedulers are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
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
