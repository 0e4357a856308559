"""Serial vs parallel (dispatcher + N shard processes + binder) throughput, in the same run.

    .venv/bin/python benchmarks/parallel.py [--shards 1,2,4] [--runs 3]
        [--workload 5000Nodes_50000Pods] [--batching on|off] [--skip-basic] [--skip-high]
        [--routing auto|all] [--also CASE/WORKLOAD ...] [--table large|small]

``--table large`` runs every case of the public set (benchmarks/upstream/performance-config.yaml)
(each workload labelled ``performance`` and not ``short``; ``small``: each case's short one)
with every shard count, interleaved, and prints the markdown table of benchmarks/RESULTS.md
("Parallel scheduling": pods/s, × serial, conflicts, the share of Pods the coordinator
scheduled itself).
``--routing all`` sends every Pod to the shards (the pipeline alone); the default ``auto``
lets the coordinator schedule the signatures too cheap for the pipeline itself.

Two cases, each run ``--runs`` times per shard count (interleaved, so a busy neighbour
slows every variant alike; each run in a process forked from the young parent, so no run
inherits an earlier one's heap), medians reported:

- **SchedulingBasic** (upstream scheduler_perf, from ``benchmarks/upstream/performance-config
  .yaml`` when present, else an identical config written here): 5,000 nodes 4 CPU / 32Gi /
  110 Pods, 5,000 initial + 50,000 measured Pods of 100m / 500Mi;
- **HighUtilization**: 1,000 such nodes 90 % full (3,600 initial Pods of 1 CPU), then 380
  measured Pods of 1 CPU for the last 400 free slots: shards run out of room in their
  partitions and reach into each other's, the case where conflicts happen.

Besides wall-clock throughput it prints the CPU each stage spent per Pod (coordinator =
dispatcher + binder + the in-process API server; shard = scheduling cycle; replica =
applying the commit stream), measured with ``time.process_time`` in each process -- for
the coordinator (and the serial scheduler) also *while scheduling*, without setup and Pod
creation (in brackets), with its minor page faults and wall-clock time per Pod likewise
(``hubMinFltPerPod``, ``hubSteady*``) -- and what they predict for 2 and 16 free cores.  Not a test:
numbers depend on the machine and on whatever else runs on it (a busy machine hurts three
processes more than one: compare the CPU columns too).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from kubesched.bench import params
from kubesched.bench.config import load_test_cases
from kubesched.bench.results import WorkloadResult
from kubesched.bench.runner import RunOptions, run_workload

ROOT = Path(__file__).resolve().parents[1]
NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"generateName": "node-"},
    "status": {"capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"}},
}


def _pod(cpu: str, memory: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "pod-"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ]
        },
    }


def _case(name: str, pod: str, workload: str, nodes: int, init: int, measure: int) -> Any:
    return {
        "name": name,
        "defaultPodTemplatePath": pod,
        "workloadTemplate": [
            {"opcode": "createNodes", "countParam": "$initNodes", "nodeTemplatePath": "node.yaml"},
            {"opcode": "createPods", "countParam": "$initPods"},
            {"opcode": "createPods", "countParam": "$measurePods", "collectMetrics": True},
        ],
        "workloads": [
            {
                "name": workload,
                "params": {"initNodes": nodes, "initPods": init, "measurePods": measure},
            }
        ],
    }


def write_configs(tmp: Path) -> tuple[Path, Path]:
    """SchedulingBasic (a copy, if benchmarks/upstream/ is absent) and HighUtilization."""
    (tmp / "node.yaml").write_text(yaml.safe_dump(NODE))
    (tmp / "pod-default.yaml").write_text(yaml.safe_dump(_pod("100m", "500Mi")))
    (tmp / "pod-1cpu.yaml").write_text(yaml.safe_dump(_pod("1", "1Gi")))
    basic = tmp / "basic.yaml"
    basic.write_text(
        yaml.safe_dump(
            [_case("SchedulingBasic", "pod-default.yaml", "5000Nodes_50000Pods", 5000, 5000, 50000)]
        )
    )
    high = tmp / "high.yaml"
    high.write_text(
        yaml.safe_dump(
            [_case("HighUtilization", "pod-1cpu.yaml", "1000Nodes_90pct", 1000, 3600, 380)]
        )
    )
    return basic, high


def _shared_basic() -> Path | None:
    path = Path(__file__).resolve().parent / "upstream" / "performance-config.yaml"
    return path if path.is_file() else None


def run_one(
    path: Path,
    case: str,
    workload: str,
    shards: int,
    batching: bool | None,
    routing: str = "auto",
) -> dict[str, Any]:
    """One run: throughput, conflicts and CPU per stage."""
    cases = load_test_cases(str(path))
    [(tc, w)] = params.select(cases, case=case, workload=workload)
    steps = params.resolve(tc, w)
    samples: list[tuple[int, float, float]] = []
    faults: list[tuple[int, int]] = []

    def sample(done: int) -> None:
        samples.append((done, time.process_time(), time.perf_counter()))
        faults.append((done, resource.getrusage(resource.RUSAGE_SELF).ru_minflt))

    def progress(label: str, total: int) -> Any:
        del label, total
        return sample

    c0 = time.process_time()
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    result: WorkloadResult = run_workload(
        tc,
        w,
        steps,
        RunOptions(shards=shards, batching=batching, progress=progress, routing=routing),
    )
    hub_cpu = time.process_time() - c0
    hub_faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    if result.error:
        raise SystemExit(f"{case}/{workload} with {shards} shard(s) failed: {result.error}")
    tp = result.metric("SchedulingThroughput") or {"Average": 0.0}
    pods = max(1, result.pods_bound)
    out: dict[str, Any] = {
        "podsPerSecond": tp["Average"],
        "hubCpuUsPerPod": 1e6 * hub_cpu / pods,
        "conflictRate": 0.0,
        "hubSteadyUsPerPod": _steady(samples),
        "hubSteadyWallUsPerPod": _steady([(n, w, 0.0) for n, _, w in samples]),
        "hubMinFltPerPod": hub_faults / pods,
        "hubSteadyMinFltPerPod": _steady([(n, f / 1e6, 0.0) for n, f in faults]),
    }
    if result.parallel is not None:
        b = result.parallel["binder"]
        shards_cpu = [s["cpuSeconds"] for s in result.parallel["perShard"]]
        apply_cpu = [s["applyCpuSeconds"] for s in result.parallel["perShard"]]
        out["conflictRate"] = b["conflictRate"]
        out["conflicts"] = b["conflicts"]
        out["committed"] = b["committed"]
        out["shardCpuUsPerPod"] = 1e6 * (sum(shards_cpu) - sum(apply_cpu)) / pods
        out["applyCpuUsPerPod"] = 1e6 * statistics.mean(apply_cpu) / pods
        out["routing"] = result.parallel.get("routing")
        routed = (out["routing"] or {}).get("pods", {})
        if routed:
            out["serialShare"] = routed.get("serial", 0) / max(1, sum(routed.values()))
    return out


def isolated(*args: Any) -> dict[str, Any]:
    """:func:`run_one` in a child forked from this (young) process: every run starts from
    the same heap.  In one long-lived process each run inherits the garbage and fragmented
    arenas of the runs before it, and its CPU per Pod grows run after run (SchedulingBasic
    serial: 51, 63, 74 µs in three rounds), so whichever variant runs second in a round
    pays more."""
    ctx: Any = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    here, there = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(there, args))
    child.start()
    there.close()
    out: dict[str, Any] = here.recv()
    child.join()
    if "error" in out:
        raise SystemExit(out["error"])
    return out


def _child(conn: Any, args: tuple[Any, ...]) -> None:
    try:
        conn.send(run_one(*args))
    except SystemExit as e:
        conn.send({"error": str(e)})


def _progress(r: int, case: str, workload: str, shards: int, one: dict[str, Any]) -> None:
    """One run's figures, with the load average at its end (a busy machine scatters them)."""
    load = os.getloadavg()[0]
    print(f"  run {r + 1} {case}/{workload} shards={shards} (load {load:.1f}): {one}", flush=True)


def _steady(samples: list[tuple[int, float, float]]) -> float:
    """Coordinator CPU per Pod bound while the measured Pods are being scheduled: the slope
    of process time over Pods bound between the progress samples at 10 % and 90 % of the
    binds (Pod creation and setup excluded)."""
    if len(samples) < 2:
        return 0.0
    last = samples[-1][0]
    inner = [s for s in samples if 0.1 * last <= s[0] <= 0.9 * last]
    if len(inner) < 2 or inner[-1][0] == inner[0][0]:
        inner = [samples[0], samples[-1]]
    (n0, c0, _), (n1, c1, _) = inner[0], inner[-1]
    return 1e6 * (c1 - c0) / (n1 - n0) if n1 > n0 else 0.0


def model(c_h: float, c_s: float, c_f: float, shards: int, cores: int) -> float:
    """Pods/s the per-stage CPU costs (microseconds) allow: the coordinator is one process,
    each shard schedules 1/N of the Pods and applies every commit, all share ``cores``."""
    hub = 1e6 / c_h
    shard = 1e6 * shards / (c_s + shards * c_f)
    machine = 1e6 * cores / (c_h + c_s + shards * c_f)
    return min(hub, shard, machine)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--shards", default="1,2,4")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workload", default="5000Nodes_50000Pods")
    ap.add_argument("--batching", choices=("on", "off"))
    ap.add_argument("--skip-basic", action="store_true")
    ap.add_argument("--skip-high", action="store_true")
    ap.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="CASE/WORKLOAD",
        help="another case of the public set, e.g. TopologySpreading/500Nodes",
    )
    ap.add_argument("--routing", choices=("auto", "all"), default="auto")
    ap.add_argument("--table", choices=("large", "small"))
    args = ap.parse_args()
    counts = [int(x) for x in args.shards.split(",")]
    batching = None if args.batching is None else args.batching == "on"
    if args.table:
        table(counts, args.runs, batching, args.routing, args.table)
        return
    with tempfile.TemporaryDirectory() as tmp:
        basic, high = write_configs(Path(tmp))
        shared = _shared_basic()
        cases = []
        if not args.skip_basic:
            cases.append((shared or basic, "SchedulingBasic", args.workload))
        if not args.skip_high:
            cases.append((high, "HighUtilization", "1000Nodes_90pct"))
        for extra in args.also:
            if shared is None:
                raise SystemExit("--also needs benchmarks/upstream/performance-config.yaml")
            case, workload = extra.split("/", 1)
            cases.append((shared, case, workload))
        for path, case, workload in cases:
            runs: dict[int, list[dict[str, Any]]] = {n: [] for n in counts}
            for r in range(args.runs):
                for n in counts:
                    one = isolated(path, case, workload, n, batching, args.routing)
                    runs[n].append(one)
                    _progress(r, case, workload, n, one)
            report(case, workload, runs)


def public_workloads(path: Path, size: str) -> list[tuple[str, str]]:
    """Every case of the performance config with its ``large`` workloads (labelled
    ``performance``, not ``short``) or its ``small`` one (``performance`` and ``short``,
    else ``fast``)."""
    out = []
    for tc in load_test_cases(str(path)):
        if size == "large":
            out += [
                (tc.name, w.name)
                for w in tc.workloads
                if "performance" in w.labels and "short" not in w.labels
            ]
            continue
        short = [w for w in tc.workloads if {"performance", "short"} <= set(w.labels)]
        fast = [w for w in tc.workloads if "fast" in w.labels]
        if short or fast:
            out.append((tc.name, (short or fast)[0].name))
    return out


def table(counts: list[int], runs: int, batching: bool | None, routing: str, size: str) -> None:
    """Every public case with every shard count, ``runs`` interleaved rounds, as one
    markdown table of medians."""
    path = _shared_basic()
    if path is None:
        raise SystemExit("--table needs benchmarks/upstream/performance-config.yaml")
    rows = []
    for case, workload in public_workloads(path, size):
        got: dict[int, list[dict[str, Any]]] = {n: [] for n in counts}
        for r in range(runs):
            for n in counts:
                one = isolated(path, case, workload, n, batching, routing)
                got[n].append(one)
                _progress(r, case, workload, n, one)
        rows.append((case, workload, got))
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nmedians of {runs} runs, routing {routing}, load average {load}\n")
    head = ["case/workload", *(f"{n} shard{'s' if n > 1 else ''} pods/s" for n in counts)]
    head += [f"conflicts ({n})" for n in counts if n > 1]
    head += [f"coordinator's own ({n})" for n in counts if n > 1]
    print("| " + " | ".join(head) + " |")
    print("|---" + "|---:" * (len(head) - 1) + "|")
    for case, workload, got in rows:

        def med(n: int, key: str, got: dict[int, list[dict[str, Any]]] = got) -> float:
            return statistics.median(r.get(key, 0.0) for r in got[n])

        serial = med(counts[0], "podsPerSecond") if counts[0] == 1 else 0.0
        cells = [f"{case}/{workload}"]
        for n in counts:
            tp = med(n, "podsPerSecond")
            ratio = f" ({tp / serial:.2f}×)" if serial and n > 1 else ""
            cells.append(f"{tp:,.0f}{ratio}")
        cells += [f"{100 * med(n, 'conflictRate'):.2f} %" for n in counts if n > 1]
        cells += [f"{100 * med(n, 'serialShare'):.0f} %" for n in counts if n > 1]
        print("| " + " | ".join(cells) + " |")


def report(case: str, workload: str, runs: dict[int, list[dict[str, Any]]]) -> None:
    """Medians per shard count, the ratio to serial, and the 16-core model."""

    def med(n: int, key: str) -> float:
        return statistics.median(r.get(key, 0.0) for r in runs[n])

    serial = med(1, "podsPerSecond") if 1 in runs else None
    print(f"\n{case}/{workload} (medians of {len(next(iter(runs.values())))} runs)")
    print(
        "shards  pods/s   x serial  conflicts  coord us/pod (steady)  shards us/pod  replica us/pod"
    )
    for n in sorted(runs):
        tp = med(n, "podsPerSecond")
        ratio = f"{tp / serial:6.2f}" if serial else "   n/a"
        print(
            f"{n:>6}  {tp:7.0f}  {ratio}    {100 * med(n, 'conflictRate'):6.2f}%  "
            f"{med(n, 'hubCpuUsPerPod'):12.0f} ({med(n, 'hubSteadyUsPerPod'):6.0f})  "
            f"{med(n, 'shardCpuUsPerPod'):13.0f}  {med(n, 'applyCpuUsPerPod'):14.0f}"
        )
    parallel = [n for n in runs if n > 1]
    if serial is None or not parallel:
        return
    n0 = 2 if 2 in parallel else max(parallel)
    c_h = med(n0, "hubSteadyUsPerPod") or med(n0, "hubCpuUsPerPod")
    c_s = med(n0, "shardCpuUsPerPod")
    c_f = med(n0, "applyCpuUsPerPod")
    c_1 = med(1, "hubSteadyUsPerPod") or med(1, "hubCpuUsPerPod")
    if not c_s or not c_h:  # every Pod stayed in the coordinator (auto routing): no model
        return
    print(
        f"model (N={n0}: coordinator {c_h:.0f} us/pod while scheduling, scheduling {c_s:.0f} "
        f"us/pod, replica {c_f:.0f} us/pod per shard; serial {c_1:.0f} us/pod while "
        "scheduling), pods/s by shards N and cores:"
    )
    for cores in (2, 16):
        ns = sorted({1, 2, 4, 8, cores - 1} - {0})
        row = ", ".join(f"N={n}: {model(c_h, c_s, c_f, n, cores):.0f}" for n in ns)
        print(f"  {cores:>2} cores: {row} pods/s (serial on one free core: {1e6 / c_1:.0f})")


if __name__ == "__main__":
    main()
