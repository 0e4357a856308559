"""Replays over several seeds, and the JSON document ``kubesched replay`` prints.

``{"policy", "seeds", "gpuCapacity", "curve": [{"arrivedPercent", "unallocatedGpuPercent",
"fragmentationPercent", "idleWholeGpuNodes"}, ...], "at": {"100": {...}, "130": {...}},
"failedPods"}``: ``gpuCapacity`` in GPUs, each curve point the mean over the seeds (points
some seed lacks are left out), ``at`` the points at 100 % and 130 % arrived, ``failedPods`` the
number of tasks that found no node, one count per seed, and ``failedForWholeNode`` those of
them that asked several whole GPUs while the cluster had that many idle GPUs spread over
nodes (no single node had them).  Where the curve has no point at 100
or 130 % (a tiny trace), ``at`` holds the state after the last task that arrived by then.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from kubesched.sim.gpureplay import protocol, traces
from kubesched.sim.gpureplay.replay import ReplayResult, replay

AT_POINTS = (100, 130)


def _one(args: tuple[str, str, str, int]) -> ReplayResult:
    nodes_path, pods_path, policy, seed = args
    return replay(traces.load_nodes(nodes_path), traces.load_pods(pods_path), policy, seed)


def run_seeds(
    nodes_path: str | Path,
    pods_path: str | Path,
    policy: str,
    seeds: Sequence[int],
    jobs: int = 1,
) -> list[ReplayResult]:
    """One replay per seed, on ``jobs`` processes (results in seed order)."""
    work = [(str(nodes_path), str(pods_path), policy, s) for s in seeds]
    if jobs <= 1 or len(work) <= 1:
        nodes, pods = traces.load_nodes(nodes_path), traces.load_pods(pods_path)
        return [replay(nodes, pods, policy, s) for s in seeds]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_one, work))


def mean_curve(results: Sequence[ReplayResult]) -> list[protocol.CurvePoint]:
    """Point-wise mean of the results' curves over the points every result has."""
    curves = [{p.arrived_percent: p for p in r.curve()} for r in results]
    common = sorted(set.intersection(*(set(c) for c in curves))) if curves else []
    out = []
    for pct in common:
        pts = [c[pct] for c in curves]
        out.append(
            protocol.CurvePoint(
                pct,
                float(np.mean([p.unallocated_gpu_percent for p in pts])),
                float(np.mean([p.fragmentation_percent for p in pts])),
                float(np.mean([p.idle_whole_gpu_nodes for p in pts])),
            )
        )
    return out


def replay_document(results: Sequence[ReplayResult]) -> dict[str, Any]:
    """The ``kubesched replay`` JSON document for replays of one policy over several seeds."""
    curve = mean_curve(results)
    by_pct = {p.arrived_percent: p.as_json() for p in curve}
    for pct in AT_POINTS:
        if pct not in by_pct and results:
            pts = [
                protocol.point_at(
                    r.arrived, r.allocated, r.frag, r.idle_whole, r.capacity_milli, pct
                )
                for r in results
            ]
            by_pct[pct] = protocol.CurvePoint(
                pct,
                float(np.mean([p.unallocated_gpu_percent for p in pts])),
                float(np.mean([p.fragmentation_percent for p in pts])),
                float(np.mean([p.idle_whole_gpu_nodes for p in pts])),
            ).as_json()
    return {
        "policy": results[0].policy if results else "",
        "seeds": [r.seed for r in results],
        "gpuCapacity": results[0].capacity_milli // 1000 if results else 0,
        "curve": [p.as_json() for p in curve],
        "at": {str(k): by_pct[k] for k in AT_POINTS},
        "failedPods": [r.failed for r in results],
        "failedForWholeNode": [r.waited_whole for r in results],
    }
