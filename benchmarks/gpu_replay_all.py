"""The GPU trace benchmark: every policy on every pod list of the Alibaba 2023 GPU trace,
seeds 42-51, under the FGD paper's protocol; writes ``benchmarks/GPU_RESULTS.md``.

    .venv/bin/python benchmarks/gpu_replay_all.py [--data DIR] [--jobs 2]
        [--policies random,...,kubesched] [--traces default,...] [--seeds 42-51]
        [--cache benchmarks/gpu_results.json] [--out benchmarks/GPU_RESULTS.md]
        [--rerun kubesched]

Each replay's result (unallocated and fragmentation % at 100 % and 130 % arrived, failed
tasks, seconds) is cached in ``--cache`` as soon as it is done, so an interrupted run resumes
where it stopped, and results already cached are reused (``--rerun P,...`` drops the cached
results of those policies first, e.g. after changing kubesched's policy, so the others are
not recomputed).  The published numbers come from ``fgd-expected-results/`` next to the data.
Long: about 1,750 replays of 1-5 s each.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from kubesched.devices.policies import POLICIES
from kubesched.sim.gpureplay import replay, traces

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("GPU_TRACE", ROOT / "data" / "gpu-v2023"))
"""The trace's CSV folder: ``$GPU_TRACE``, else ``data/gpu-v2023`` in the checkout (not
committed; see ``benchmarks/GPU_RESULTS.md`` for where to download it)."""
NODES = "openb_node_list_gpu_node.csv"
PUBLISHED_NAMES = {
    "random": "01-Random",
    "dotproduct": "02-DotProd",
    "gpuclustering": "03-GpuClustering",
    "gpupacking": "04-GpuPacking",
    "bestfit": "05-BestFit",
    "fgd": "06-FGD",
}


def _run(data: str, trace: str, policy: str, seed: int) -> dict[str, Any]:
    start = time.perf_counter()
    nodes = traces.load_nodes(Path(data) / NODES)
    pods = traces.load_pods(Path(data) / f"openb_pod_list_{trace}.csv")
    result = replay.replay(nodes, pods, policy, seed)
    curve = {p.arrived_percent: p for p in result.curve()}
    return {
        "trace": trace,
        "policy": policy,
        "seed": seed,
        "u100": curve[100].unallocated_gpu_percent,
        "u130": curve[130].unallocated_gpu_percent,
        "f100": curve[100].fragmentation_percent,
        "failed": result.failed,
        "seconds": round(time.perf_counter() - start, 2),
    }


def _published(data: Path) -> dict[tuple[str, str], tuple[float, float]]:
    path = data.parent / "fgd-expected-results" / "analysis_allo_discrete.csv"
    if not path.exists():
        return {}
    acc: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    with path.open() as f:
        for row in csv.DictReader(f):
            trace = row["workload"].replace("openb_pod_list_", "")
            acc[(trace, row["sc_policy"])].append(
                (100 - float(row["100"]), 100 - float(row["130"]))
            )
    return {
        k: (statistics.mean(a for a, _ in v), statistics.mean(b for _, b in v))
        for k, v in acc.items()
    }


def _fmt(values: list[float]) -> str:
    if not values:
        return "–"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.2f} ± {sd:.2f}"


def _mean(by: dict[tuple[str, str], list[dict[str, Any]]], t: str, p: str, col: str) -> float:
    vals = [r[col] for r in by.get((t, p), [])]
    return statistics.mean(vals) if vals else float("nan")


def _summary(by: dict[tuple[str, str], list[dict[str, Any]]], trace_names: list[str]) -> list[str]:
    out = ["## Summary", ""]
    if "default" in trace_names:
        parts = [
            f"{p} {_mean(by, 'default', p, 'u100'):.2f} %"
            for p in ("bestfit", "fgd", "kubesched")
            if by.get(("default", p))
        ]
        out.append("- `openb_pod_list_default` at 100 % arrived: " + ", ".join(parts) + ".")
    both = [t for t in trace_names if by.get((t, "fgd")) and by.get((t, "kubesched"))]
    for col, at in (("u100", "100"), ("u130", "130")):
        worse = [t for t in both if _mean(by, t, "kubesched", col) > _mean(by, t, "fgd", col)]
        notes = []
        for t in worse:
            ks, fgd = ([r[col] for r in by[(t, p)]] for p in ("kubesched", "fgd"))
            se = (statistics.variance(ks) / len(ks) + statistics.variance(fgd) / len(fgd)) ** 0.5
            diff = statistics.mean(ks) - statistics.mean(fgd)
            notes.append(f"{t}: +{diff:.2f}, standard error of the difference {se:.2f}")
        out.append(
            f"- kubesched ≤ FGD at {at} % on {len(both) - len(worse)} of {len(both)} pod lists"
            + (f" (not on {'; '.join(notes)})" if worse else "")
            + "."
        )
    out.append("")
    return out


def _reproduction(
    by: dict[tuple[str, str], list[dict[str, Any]]],
    pub: dict[tuple[str, str], tuple[float, float]],
) -> list[str]:
    diffs = []
    for (t, name), (u100, _) in pub.items():
        policy = next((k for k, v in PUBLISHED_NAMES.items() if v == name), "")
        vals = [r["u100"] for r in by.get((t, policy), [])]
        if vals:
            diffs.append((abs(statistics.mean(vals) - u100), t, policy))
    if not diffs:
        return []
    diffs.sort(reverse=True)
    worst = ", ".join(f"{p} on {t} ({d:.2f})" for d, t, p in diffs[:3])
    close = sum(d <= 0.3 for d, _, _ in diffs)
    return [
        "Reproduction of the published baselines at 100 %: median |ours − published| "
        f"{statistics.median(d for d, _, _ in diffs):.2f} points over {len(diffs)} "
        f"policy × trace cells, {close} within 0.3; largest: {worst}.  GpuClustering and "
        "GpuPacking give many nodes equal scores, so they depend most on how ties are broken.",
        "",
    ]


def render(results: list[dict[str, Any]], data: Path, seeds: list[int]) -> str:
    """The markdown report."""
    pub = _published(data)
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        if r["seed"] in seeds:
            by[(r["trace"], r["policy"])].append(r)
    trace_names = sorted({t for t, _ in by}, key=lambda t: (t != "default", t))
    lines = [
        "# GPU placement on the Alibaba 2023 GPU trace",
        "",
        "Generated by `benchmarks/gpu_replay_all.py`.  Unallocated GPU % (lower is better) at",
        "100 % and 130 % arrived workload, mean ± sd over seeds "
        f"{seeds[0]}–{seeds[-1]} ({len(seeds)} seeds), node list `{NODES}` (6,212 GPUs).",
        "`pub` is the FGD paper's cached result (`fgd-expected-results/`, same protocol, "
        "their simulator); `ks ≤ fgd` compares kubesched's policy with our FGD.",
        "The trace is Alibaba's public `cluster-trace-gpu-v2023` "
        "(<https://github.com/alibaba/clusterdata>), not kept in this repository: put its CSVs "
        "in `data/gpu-v2023/` (the FGD results beside it, `data/fgd-expected-results/`) "
        "or point `GPU_TRACE` at them.",
        "",
    ]
    lines += _summary(by, trace_names)
    lines += _reproduction(by, pub)
    lines += [
        "![unallocated GPUs against arrived workload, default pod list](gpu_default.png)",
        "",
        "Figure: `kubesched replay --nodes .../openb_node_list_gpu_node.csv --pods "
        ".../openb_pod_list_default.csv --policy "
        f"{','.join(POLICIES)} --seed 42 --seed 43 --seed 44 --plot benchmarks/gpu_default.png`.",
        "",
    ]
    for at, col in (("100", "u100"), ("130", "u130")):
        lines += [f"## Unallocated GPU % at {at} % arrived", ""]
        head = "| trace | " + " | ".join(POLICIES) + " | ks ≤ fgd |"
        lines += [head, "|" + "---|" * (len(POLICIES) + 2)]
        for t in trace_names:
            cells = []
            for p in POLICIES:
                vals = [r[col] for r in by.get((t, p), [])]
                cell = _fmt(vals)
                ref = pub.get((t, PUBLISHED_NAMES.get(p, "")))
                if ref is not None:
                    cell += f" (pub {ref[0 if at == '100' else 1]:.2f})"
                cells.append(cell)
            ks = [r[col] for r in by.get((t, "kubesched"), [])]
            fgd = [r[col] for r in by.get((t, "fgd"), [])]
            ok = "–"
            if ks and fgd:
                ok = "yes" if statistics.mean(ks) <= statistics.mean(fgd) else "**no**"
            lines.append(f"| {t} | " + " | ".join(cells) + f" | {ok} |")
        lines.append("")
    secs = [r["seconds"] for r in results]
    if secs:
        lines.append(
            f"Replays: {len(results)}; seconds per replay: median "
            f"{statistics.median(secs):.1f}, max {max(secs):.1f} (wall clock, one core each, on a"
            " machine shared with other work)."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--traces", default="")
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--cache", type=Path, default=ROOT / "benchmarks" / "gpu_results.json")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "GPU_RESULTS.md")
    ap.add_argument("--rerun", default="", help="policies whose cached results to recompute")
    args = ap.parse_args()
    lo, _, hi = args.seeds.partition("-")
    seeds = list(range(int(lo), int(hi or lo) + 1))
    names = [t for t in args.traces.split(",") if t] or sorted(
        p.stem.replace("openb_pod_list_", "") for p in args.data.glob("openb_pod_list_*.csv")
    )
    done: list[dict[str, Any]] = json.loads(args.cache.read_text()) if args.cache.exists() else []
    rerun = {p for p in args.rerun.split(",") if p}
    done = [
        r for r in done if not (r["policy"] in rerun and r["trace"] in names and r["seed"] in seeds)
    ]
    have = {(r["trace"], r["policy"], r["seed"]) for r in done}
    todo = [
        (t, p, s)
        for t in sorted(names, key=lambda t: (t != "default", t))
        for p in args.policies.split(",")
        for s in seeds
        if (t, p, s) not in have
    ]
    print(f"{len(todo)} replays to run, {len(have)} cached", flush=True)
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(_run, str(args.data), t, p, s) for t, p, s in todo]
        for i, fut in enumerate(as_completed(futures), 1):
            r = fut.result()
            done.append(r)
            print(
                f"[{i}/{len(todo)}] {r['trace']} {r['policy']} {r['seed']}: "
                f"{r['u100']:.2f} / {r['u130']:.2f} ({r['seconds']}s)",
                flush=True,
            )
            if i % 10 == 0 or i == len(todo):
                args.cache.write_text(json.dumps(done, indent=0))
    args.out.write_text(render(done, args.data, seeds))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
