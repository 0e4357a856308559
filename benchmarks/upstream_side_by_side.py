"""Upstream kube-scheduler v1.34 and kubesched side by side, in one run, on this machine.

1. In-engine (``--engine``): for each workload of ``benchmarks/upstream/performance-config.yaml``,
   ``kube-oracle bench`` (upstream's scheduler over a fake clientset, Pods created in memory)
   and ``kubesched bench`` (in-memory binds), interleaved A B A B A B; medians of the
   SchedulingThroughput Average and of the SchedulingAttemptDuration Perc99.  With
   ``--kubernetes-version 1.37`` (in-engine only) ``oracle/bin/v1.37/kube-oracle`` beside
   ``kubesched bench --kubernetes-version 1.37``; a workload may name its own config as
   ``CONFIG:CASE/WORKLOAD`` (a path relative to the current directory), so the v1.37 suites
   of ``benchmarks/upstream-1.37/`` run in one table.  A thresholded workload's row says
   whether kubesched reached 10× its threshold (issue 29 item 5).
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
    PYTHONPATH=src .venv/bin/python benchmarks/upstream_side_by_side.py --engine \\
        --kubernetes-version 1.37 --repeats 1 --workloads \\
        benchmarks/upstream-1.37/misc/performance-config.yaml:SchedulingBasic/5000Nodes_50000Pods

With neither ``--engine`` nor ``--api`` both run.  Needs ``bash oracle/build.sh`` (kube-oracle,
etcd, kube-apiserver, kube-scheduler); ``--py-spy`` needs py-spy on PATH or in the venv.
The control plane is stopped however the run ends.  Prints Markdown tables; not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

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
VERSIONS = ("1.34", "1.37")
"""The releases whose kube-oracle the in-engine half can run (``--kubernetes-version``)."""

# ---- in-engine ------------------------------------------------------------------------------


def oracle_binary(version: str) -> Path:
    """``kube-oracle`` of ``version``: the top level of :data:`BIN` is the default release's."""
    return BIN / "kube-oracle" if version == RELEASE else BIN / f"v{version}" / "kube-oracle"


def split_workload(spec: str, default: Path) -> tuple[Path, str]:
    """``[CONFIG:]CASE/WORKLOAD`` as the config and ``CASE/WORKLOAD``."""
    config, sep, workload = spec.rpartition(":")
    return (Path(config), workload) if sep else (default, spec)


def threshold(config: Path, workload: str) -> float:
    """The workload's threshold in ``config`` (0: none).  A topic map (upstream's
    ``thresholds``: suite name -> value) counts by its one value: each suite that writes one
    names only its own topic."""
    case, name = workload.split("/", 1)
    for c in yaml.safe_load(config.read_text()):
        if c.get("name") != case:
            continue
        for w in c.get("workloads") or []:
            if w.get("name") == name:
                t = w.get("threshold") or 0
                if isinstance(t, dict):
                    return float(next(iter(t.values()))) if len(t) == 1 else float(t.get("", 0))
                return float(t)
    return 0.0


def bench_once(
    who: str, workload: str, config: Path, timeout: float, version: str = RELEASE
) -> dict[str, Any]:
    """One workload by one scheduler: throughput Average, attempt p99 (ms), summary line."""
    case, name = workload.split("/", 1)
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        args = [str(config), "--case", case, "--workload", name, "-o", out.name]
        if who == UPSTREAM:
            cmd = [str(oracle_binary(version)), "bench", *args]
        else:
            cmd = [*kubesched_cmd(), "bench", *args, "--no-progress"]
            cmd += ["--kubernetes-version", version]
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


def engine(
    workloads: list[str], repeats: int, config: Path, timeout: float, version: str = RELEASE
) -> dict[str, Any]:
    """Each workload (``[CONFIG:]CASE/WORKLOAD``), upstream and kubesched interleaved
    ``repeats`` times; each row with the workload's threshold and the load average."""
    table: dict[str, Any] = {}
    for spec in workloads:
        cfg, w = split_workload(spec, config)
        runs: dict[str, list[dict[str, Any]]] = {UPSTREAM: [], OURS: []}
        for r in range(repeats):
            for who in (UPSTREAM, OURS):
                res = bench_once(who, w, cfg, timeout, version)
                runs[who].append(res)
                print(f"[engine {r + 1}/{repeats}] {who}: {res['summary']}", file=sys.stderr)
        row: dict[str, Any] = {
            who: summarise(rs, "podsPerSecond", "attemptP99Ms") for who, rs in runs.items()
        }
        row["threshold"] = threshold(cfg, w)
        row["loadAverage"] = os.getloadavg()[0]
        table[w] = row
    return table


# ---- the tables ------------------------------------------------------------------------------


def print_tables(result: dict[str, Any]) -> None:
    binary = oracle_binary(result.get("kubernetesVersion", RELEASE))
    version = run([str(binary), "version"], 30).stdout.strip().rsplit(" ", 1)[-1]
    load = ", ".join(f"{x:.1f}" for x in result["loadAverageAtEnd"])
    print(f"\nload average at the start {result['loadAverageAtStart'][0]:.1f}, at the end {load}")
    if "engine" in result:
        print(
            f"\n| case / workload | kube-scheduler {version} pods/s | kubesched pods/s | "
            "kubesched / upstream | p99 attempt upstream | p99 attempt kubesched | "
            "threshold × 10 | reached | load |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---|---:|")
        for w, row in result["engine"].items():
            up, us = row[UPSTREAM], row[OURS]
            limit = 10 * row.get("threshold", 0.0)
            reached = ("yes" if us["podsPerSecond"] >= limit else "**no**") if limit else "—"
            print(
                f"| {w} | {up['podsPerSecond']:,.0f} | {us['podsPerSecond']:,.0f} | "
                f"{us['podsPerSecond'] / up['podsPerSecond']:.1f}× | {up['attemptP99Ms']:.2f} ms | "
                f"{us['attemptP99Ms']:.2f} ms | {limit:,.0f} | {reached} | "
                f"{row.get('loadAverage', float('nan')):.1f} |"
            )
    if "api" in result:
        print(
            "\n| clientConnection qps / burst | scheduler | burst: Pods/s to all bound | "
            "p99 creation→bound | Pods created per s | backlog: Pods/s | "
            "backlog: CPU ms per Pod | burst: CPU ms per Pod | Events written (backlog, burst) | "
            f"ratio kubesched / {version} (burst, backlog, backlog CPU, burst CPU) |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
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
                f"{row['cpuMsPerPod']:.2f} | {events(row)} | {ratio} |"
            )
    for title, frames in result.get("pySpy", {}).items():
        print(f"\npy-spy, kubesched run during the burst, top frames ({title}):")
        for f, share in frames:
            print(f"  {share:5.1f}%  {f}")


def events(row: dict[str, Any]) -> str:
    """The medians of the Events a scheduler wrote per run (backlog, burst)."""
    runs = row.get("runs") or [row]
    if not all("burstEvents" in r for r in runs):
        return "—"
    backlog = statistics.median(r["backlogEvents"] for r in runs)
    burst = statistics.median(r["burstEvents"] for r in runs)
    return f"{backlog:,.0f}, {burst:,.0f}"


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
    ap.add_argument(
        "--kubernetes-version",
        choices=VERSIONS,
        default=RELEASE,
        help="the release of both sides (in-engine; the API server half is v1.34's)",
    )
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
    if args.kubernetes_version != RELEASE and (args.api or both):
        print("error: --kubernetes-version other than 1.34 needs --engine only", file=sys.stderr)
        return 2
    needed = [oracle_binary(args.kubernetes_version)] + (
        [BIN / b for b in ("etcd", "kube-apiserver", "kube-scheduler")] if args.api or both else []
    )
    missing = [b.name for b in needed if not b.exists()]
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
    result: dict[str, Any] = {
        "loadAverageAtStart": os.getloadavg(),
        "kubernetesVersion": args.kubernetes_version,
    }
    try:
        if args.engine or both:
            workloads = [w for w in args.workloads.split(",") if w]
            result["engine"] = engine(
                workloads, args.repeats, args.config, args.timeout, args.kubernetes_version
            )
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
