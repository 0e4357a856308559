"""The Alibaba GPU trace through DRA: first fit (the default profile) against the device score
(DeviceFragmentation), same seeds; prints a Markdown table of unallocated GPU % at 100 %
arrived (see :mod:`kubesched.sim.gpureplay.dra` for the setup).

    PYTHONPATH=src .venv/bin/python benchmarks/dra_gpu_replay.py [--data DIR]
        [--trace default] [--seeds 42,43,44] [--jobs 2] [--policies firstfit,devicescore]
        [--json out.json]

Each run replays the real scheduler up to 101 % arrived (the 100 % point needs the tasks
around it), one task at a time: minutes per run, not seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from kubesched.sim.gpureplay import dra, traces

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("GPU_TRACE", ROOT / "data" / "gpu-v2023"))
"""The trace's CSV folder: ``$GPU_TRACE``, else ``data/gpu-v2023`` in the checkout (not
committed; see ``benchmarks/GPU_RESULTS.md`` for where to download it)."""
POLICIES = {"firstfit": False, "devicescore": True}


def _run(data: str, trace: str, policy: str, seed: int) -> dict[str, Any]:
    start = time.perf_counter()
    nodes = traces.load_nodes(Path(data) / "openb_node_list_gpu_node.csv")
    pods = traces.load_pods(Path(data) / f"openb_pod_list_{trace}.csv")
    curve = dra.replay(nodes, pods, seed, score=POLICIES[policy], until=1.01)
    at = {p.arrived_percent: p for p in curve}
    return {
        "trace": trace,
        "policy": policy,
        "seed": seed,
        "u100": round(at[100].unallocated_gpu_percent, 2),
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--trace", default="default")
    ap.add_argument("--seeds", default="42,43,44")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    policies = args.policies.split(",")
    jobs = [(args.data, args.trace, p, s) for s in seeds for p in policies]
    results: list[dict[str, Any]] = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for fut in as_completed([pool.submit(_run, *job) for job in jobs]):
            results.append(fut.result())
            if args.json:  # each result as soon as it is done
                Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    results.sort(key=lambda r: (r["seed"], r["policy"]))
    print(f"| policy ({args.trace}) | " + " | ".join(f"seed {s}" for s in seeds) + " | mean |")
    print("|---|" + "---:|" * (len(seeds) + 1))
    for p in policies:
        row = [r["u100"] for r in results if r["policy"] == p]
        cells = " | ".join(f"{u:.2f}" for u in row)
        print(f"| {p} | {cells} | {statistics.mean(row):.2f} |")
    print("seconds per run:", [r["seconds"] for r in results])


if __name__ == "__main__":
    main()
