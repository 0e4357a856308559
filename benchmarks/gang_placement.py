"""Gang paths on racks: 8-Pod GPU training jobs through upstream's topology-aware Workload API
gangs, Coscheduling with kubesched's GPU policy, and the two combined (issue 33 item 6).

The public GPU trace (Alibaba ``cluster-trace-gpu-v2023``, ``benchmarks/GPU_RESULTS.md``)
has no gangs: each of its tasks is one Pod.  So the workload is a scenario: racks of
``--nodes-per-rack`` nodes of 8 GPUs (node label ``rack``), 8-Pod training jobs (members of
2 or 4 GPUs, all eight created within a fraction of a second, jobs arriving as a Poisson
process), and 1-GPU inference Pods beside them that break nodes up.  The same jobs run as:

- ``topology``: upstream v1.37, Workload API gangs (GenericWorkload,
  TopologyAwareWorkloadScheduling), each PodGroup constrained to one ``rack``; the default
  profile (no GPU policy);
- ``workload``: the same without the rack constraint (what the constraint changes);
- ``cosched``: Coscheduling PodGroups, upstream's default plugins otherwise;
- ``cosched+gpu``: Coscheduling PodGroups, GpuDevices and GpuKubesched (kubesched's GPU
  policy, ``docs/gpu.md``);
- ``combined``: Workload API gangs with the rack constraint, GpuDevices and GpuKubesched.

The scenario is written with Coscheduling gangs; the Workload API variants are the same
arrivals made Workload API gangs by :func:`kubesched.sim.gangpaths.as_workload_api`.
Measures (:mod:`kubesched.sim.gangplacement`, :func:`kubesched.sim.gangpaths.figures`): jobs
with every member Ready, created to every member bound / Ready (p50 / p99 over jobs), GPUs
fragmented for a 2-GPU member (mean % over samples while something is pending), jobs within
one rack, racks per job, whole racks idle.

    PYTHONPATH=src python benchmarks/gang_placement.py --seeds 1 2 3 [--racks 8] [--jobs 60]

prints one Markdown table per seed and one of the means (the figures in GPU_RESULTS.md).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from typing import Any

import numpy as np

from kubesched.sim import gangpaths
from kubesched.sim.gangplacement import PlacementProbe
from kubesched.sim.scenario import Scenario, build_scenario
from kubesched.sim.simulate import run_scenario

RACK = "rack"
GPU_PROFILE = {
    "preFilter": {"enabled": [{"name": "GpuDevices"}]},
    "filter": {"enabled": [{"name": "GpuDevices"}]},
    "reserve": {"enabled": [{"name": "GpuDevices"}]},
    "preBind": {"enabled": [{"name": "GpuDevices"}]},
    "preScore": {"enabled": [{"name": "GpuKubesched"}]},
    "score": {"enabled": [{"name": "GpuKubesched", "weight": 5}]},
}
VARIANTS = ("topology", "workload", "cosched", "cosched+gpu", "combined")
COSCHEDULING_ARGS = {"permitWaitingTimeSeconds": 60, "podGroupBackoffSeconds": 10}
"""Coscheduling's Permit timeout and the backoff of a gang that failed (scheduler-plugins'
default backoff of 0 retries a gang that cannot fit over and over at once)."""
MEMBER_GPUS = 2
"""The smallest training member: the fragmentation measure's shape."""


def scenario_doc(seed: int, racks: int, nodes_per_rack: int, jobs: int) -> dict[str, Any]:
    """The workload (Coscheduling gangs, no configuration): see the module docstring."""
    rng = np.random.default_rng(seed)
    gpus = racks * nodes_per_rack * 8
    lifetime = 600.0  # every member of a job runs as long (a constant lifetime)
    mean_job_gpus = 8 * 3  # members of 2 or 4 GPUs
    # training offered at ~85 % of the GPUs (jobs * GPUs * lifetime / span), inference ~10 %
    span = jobs * mean_job_gpus * lifetime / (0.85 * gpus)
    starts = np.sort(rng.uniform(0.0, span, size=jobs))
    template = {
        "spec": {
            "containers": [
                {
                    "name": "trainer",
                    "image": "registry.example/trainer:1",
                    "resources": {"requests": {"cpu": "8", "memory": "64Gi"}},
                }
            ]
        }
    }
    workloads: list[dict[str, Any]] = []
    for j, at in enumerate(starts.tolist()):
        member = copy.deepcopy(template)
        need = int(rng.choice([2, 4]))
        member["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = str(need)
        workloads.append(
            {
                "name": f"job-{j:03d}",
                "count": 8,
                "ratePerSecond": 50,
                "startSeconds": round(at, 3),
                "lifetimeSeconds": {"distribution": "constant", "seconds": lifetime},
                "nodeStartupSeconds": {
                    "distribution": "lognormal",
                    "medianSeconds": 5,
                    "p99Seconds": 30,
                },
                "podGroup": {"minMember": 8},
                "template": member,
            }
        )
    infer = copy.deepcopy(template)
    infer["spec"]["containers"][0]["name"] = "server"
    infer["spec"]["containers"][0]["resources"]["requests"] = {
        "cpu": "4",
        "memory": "16Gi",
        "nvidia.com/gpu": "1",
    }
    infer_lifetime = 120.0
    workloads.append(
        {
            "name": "infer",
            "count": int(0.10 * gpus * span / infer_lifetime),
            "ratePerSecond": 0.10 * gpus / infer_lifetime,
            "lifetimeSeconds": infer_lifetime,
            "template": infer,
        }
    )
    pools = [
        {
            "name": f"r{r}",
            "count": nodes_per_rack,
            "labels": {RACK: f"r{r}"},
            "allocatable": {"cpu": "96", "memory": "768Gi", "pods": "110", "nvidia.com/gpu": "8"},
        }
        for r in range(racks)
    ]
    return {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "gang-racks"},
        "spec": {
            "seed": seed,
            "kubernetesVersion": "1.37",
            "durationSeconds": round(span, 3),
            "drainSeconds": 600,
            "nodePools": pools,
            "workloads": workloads,
        },
    }


def config(coscheduling: bool, gpu_policy: bool) -> dict[str, Any] | None:
    """The variant's KubeSchedulerConfiguration (None: upstream's default profile)."""
    if not coscheduling and not gpu_policy:
        return None
    plugins: dict[str, Any] = copy.deepcopy(GPU_PROFILE) if gpu_policy else {}
    if coscheduling:
        plugins["multiPoint"] = {
            "enabled": [{"name": "Coscheduling"}],
            "disabled": [{"name": "PrioritySort"}],
        }
    profile: dict[str, Any] = {"schedulerName": "default-scheduler", "plugins": plugins}
    if coscheduling:  # without a group backoff a gang that cannot fit is retried at once
        profile["pluginConfig"] = [{"name": "Coscheduling", "args": COSCHEDULING_ARGS}]
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }


def variant(doc: dict[str, Any], name: str) -> Scenario:
    """The scenario of one variant (see the module docstring)."""
    d = copy.deepcopy(doc)
    cos = name.startswith("cosched")
    cfg = config(cos, name in ("cosched+gpu", "combined"))
    if cfg is not None:
        d["spec"]["config"] = cfg
    sc = build_scenario(d)
    if cos:
        return sc
    return gangpaths.as_workload_api(sc, topology_key=None if name == "workload" else RACK)


def run(sc: Scenario) -> dict[str, Any]:
    """Simulate ``sc`` with a :class:`PlacementProbe`; the summary with ``gangPlacement``."""
    end = max(sc.duration, sc.arrivals[-1].at if sc.arrivals else 0.0) + sc.drain
    probe = PlacementProbe(RACK, MEMBER_GPUS, until=end, interval=5.0)
    probe.count([a.pod for a in sc.arrivals])
    summary = run_scenario(sc, setup=probe.install)
    summary["gangPlacement"] = probe.report()
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--racks", type=int, default=8)
    ap.add_argument("--nodes-per-rack", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=60)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--json-out", metavar="FILE", help="also write every comparison as JSON")
    args = ap.parse_args(argv)
    per_seed: list[dict[str, Any]] = []
    for seed in args.seeds:
        doc = scenario_doc(seed, args.racks, args.nodes_per_rack, args.jobs)
        runs = {name: run(variant(doc, name)) for name in args.variants}
        c = gangpaths.compare(runs)
        per_seed.append(c)
        print(f"### seed {seed}\n")
        print(gangpaths.markdown(c), flush=True)
        bad = {k: s["invariants"] for k, s in runs.items() if any(s["invariants"].values())}
        if bad:
            print(f"invariants violated: {bad}", file=sys.stderr)
            return 1
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"seeds": args.seeds, "comparisons": per_seed}, f, indent=1)
    if len(per_seed) > 1:
        print(f"### mean over seeds {', '.join(map(str, args.seeds))}\n")
        print(gangpaths.markdown(gangpaths.mean(per_seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
