"""Every side-by-side ratio in one command: kubesched against upstream kube-scheduler v1.34 and
against reading the input file, on this machine, in one run, interleaved.

1. **In-engine** (``kube-oracle bench`` beside ``kubesched bench``, in-memory binds): public
   scheduler_perf workloads; Pods/s, kubesched / upstream.
2. **Preemption**: PreemptionBasic/500Nodes (public set) and PreemptionAsync/5000Nodes
   (``kubesched-config.yaml``), the same way; the ratio reported is the lower of the two.
3. **Live mode** against a real kube-apiserver (``_upstream_api.py``): upstream's
   ``kube-scheduler`` and ``kubesched run`` at clientConnection qps/burst 5,000/10,000, a burst
   of Pods created while each runs; Pods/s first create -> last bind, and CPU seconds (user +
   system, all threads, waited-for children, from ``/proc/PID/stat``) per bound Pod over the
   burst.
4. **Cold start**: ``kubesched explain`` on a generated ``kubectl get nodes,pods -A -o json``
   (``make_snapshot.py``: 10,000 Nodes, 200,000 Pods) against ``json.load`` of the same file,
   each a fresh process timed spawn to exit, interleaved, medians.

    PYTHONPATH=src .venv/bin/python benchmarks/side_by_side.py [--quick] [--repeats N] [--json F]

``--quick`` runs smaller workloads (500 Nodes), a smaller live burst and snapshot and one
repeat, for a first look; the last line has the same shape.  Needs ``bash oracle/build.sh``.
Prints Markdown tables with the load average, then exactly one last line::

    side-by-side: live cpu/pod A x upstream, live pods/s B x, preemption C x, cold start D x json.load

Not a test: numbers depend on the machine (only ratios within one run mean anything).
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _upstream_api import BIN, OURS, UPSTREAM, BenchError, api
from cold_start import json_load_once
from cold_start import run_once as explain_once
from upstream_side_by_side import engine

HERE = Path(__file__).resolve().parent
PUBLIC = HERE / "upstream" / "performance-config.yaml"
OWN = HERE / "kubesched-config.yaml"


@dataclass(frozen=True)
class Plan:
    """What one run measures."""

    engine: list[str]
    """Workloads of the public set."""
    preemption: list[tuple[Path, str]]
    """(config, CASE/WORKLOAD)."""
    live_nodes: int
    live_pods: int
    snapshot_nodes: int
    snapshot_pods: int
    repeats: int


FULL = Plan(
    engine=[
        "SchedulingBasic/5000Nodes_10000Pods",
        "SchedulingPodAntiAffinity/5000Nodes_2000Pods",
        "TopologySpreading/5000Nodes_5000Pods",
        "SchedulingNodeAffinity/5000Nodes_10000Pods",
    ],
    preemption=[(PUBLIC, "PreemptionBasic/500Nodes"), (OWN, "PreemptionAsync/5000Nodes")],
    live_nodes=5000,
    live_pods=5000,
    snapshot_nodes=10000,
    snapshot_pods=200000,
    repeats=3,
)
QUICK = Plan(
    engine=["SchedulingBasic/500Nodes", "TopologySpreading/500Nodes"],
    preemption=[(PUBLIC, "PreemptionBasic/100Nodes")],
    live_nodes=500,
    live_pods=1000,
    snapshot_nodes=2000,
    snapshot_pods=40000,
    repeats=1,
)
QPS = (5000.0, 10000)


def cold_start(nodes: int, pods: int, repeats: int) -> dict[str, Any]:
    """Medians of ``kubesched explain`` and ``json.load`` on one generated snapshot."""
    with tempfile.TemporaryDirectory() as tmp:
        snap, pod = f"{tmp}/snap.json", f"{tmp}/pod.json"
        gen = [sys.executable, str(HERE / "make_snapshot.py"), "-o", snap, "--pod-out", pod]
        gen += ["--nodes", str(nodes), "--pods", str(pods)]
        subprocess.run(gen, check=True, stdout=subprocess.DEVNULL)
        size = os.path.getsize(snap)
        ours, ref, rss = [], [], []
        src = str(HERE.parent / "src")
        for r in range(max(repeats, 1)):
            secs, peak, _ = explain_once(src, snap, pod)
            ours.append(secs)
            rss.append(peak)
            ref.append(json_load_once(snap)[0])
            print(
                f"[cold start {r + 1}] explain {secs:.2f} s ({peak:.0f} MiB), "
                f"json.load {ref[-1]:.2f} s",
                file=sys.stderr,
            )
    return {
        "explainSeconds": statistics.median(ours),
        "jsonLoadSeconds": statistics.median(ref),
        "peakRssMiB": statistics.median(rss),
        "sizeBytes": size,
    }


def ratio(ours: float, theirs: float) -> float:
    return ours / theirs if theirs else float("nan")


def print_report(result: dict[str, Any]) -> None:
    start, end = result["loadAverageAtStart"], result["loadAverageAtEnd"]
    print(f"load average at the start {start[0]:.1f}, at the end {end[0]:.1f}")
    print("\n| measure | kube-scheduler | kubesched | kubesched / upstream |")
    print("|---|---:|---:|---:|")
    for w, row in {**result["engine"], **result["preemption"]}.items():
        up, us = row[UPSTREAM]["podsPerSecond"], row[OURS]["podsPerSecond"]
        print(f"| {w} Pods/s | {up:,.0f} | {us:,.0f} | {ratio(us, up):.1f}× |")
    live = result["live"]
    up, us = live[UPSTREAM], live[OURS]
    print(
        f"| live Pods/s | {up['podsPerSecond']:,.0f} | {us['podsPerSecond']:,.0f} | "
        f"{ratio(us['podsPerSecond'], up['podsPerSecond']):.2f}× |"
    )
    print(
        f"| live CPU ms per Pod | {up['cpuMsPerPod']:.2f} | {us['cpuMsPerPod']:.2f} | "
        f"{ratio(us['cpuMsPerPod'], up['cpuMsPerPod']):.2f}× |"
    )
    cs = result["coldStart"]
    print(
        f"\ncold start: explain {cs['explainSeconds']:.2f} s ({cs['peakRssMiB']:.0f} MiB), "
        f"json.load {cs['jsonLoadSeconds']:.2f} s of the same file"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller runs, one repeat")
    ap.add_argument("--repeats", type=int, help="runs per row (default 3, --quick 1)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds one run may take")
    ap.add_argument("--json", type=Path, help="write every number here")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    plan = QUICK if args.quick else FULL
    repeats = args.repeats or plan.repeats
    needed = ("kube-oracle", "etcd", "kube-apiserver", "kube-scheduler")
    missing = [b for b in needed if not (BIN / b).exists()]
    if missing:
        print(f"error: {', '.join(missing)} missing in {BIN}: run bash oracle/build.sh")
        return 2
    result: dict[str, Any] = {"loadAverageAtStart": os.getloadavg(), "quick": args.quick}
    try:
        result["engine"] = engine(plan.engine, repeats, PUBLIC, args.timeout)
        result["preemption"] = {}
        for config, workload in plan.preemption:
            result["preemption"].update(engine([workload], repeats, config, args.timeout))
        templates = HERE / "upstream" / "templates"
        table = api(
            *(plan.live_nodes, plan.live_pods, [QPS], repeats, args.timeout),
            *(None, None, templates),
        )
        result["live"] = {who: table[f"{QPS[0]:g}/{QPS[1]}/{who}"] for who in (UPSTREAM, OURS)}
        result["coldStart"] = cold_start(plan.snapshot_nodes, plan.snapshot_pods, repeats)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        result["loadAverageAtEnd"] = os.getloadavg()
        if args.json is not None:
            args.json.write_text(json.dumps(result, indent=2) + "\n")
    print_report(result)
    live = result["live"]
    cpu = ratio(live[OURS]["cpuMsPerPod"], live[UPSTREAM]["cpuMsPerPod"])
    pods = ratio(live[OURS]["podsPerSecond"], live[UPSTREAM]["podsPerSecond"])
    preempt = min(
        ratio(row[OURS]["podsPerSecond"], row[UPSTREAM]["podsPerSecond"])
        for row in result["preemption"].values()
    )
    cs = result["coldStart"]
    cold = ratio(cs["explainSeconds"], cs["jsonLoadSeconds"])
    print(
        f"side-by-side: live cpu/pod {cpu:.2f} x upstream, live pods/s {pods:.2f} x, "
        f"preemption {preempt:.1f} x, cold start {cold:.2f} x json.load"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
