"""InterPodAffinity throughput: scheduler_perf's SchedulingPodAntiAffinity/5000Nodes_2000Pods.

5,000 nodes (4 CPU / 32Gi / 110 pods, labelled ``kubernetes.io/hostname``), namespaces
``sched-0`` and ``sched-1``; 1,000 init Pods in ``sched-0`` are scheduled first (not
measured), then 2,000 measured Pods in ``sched-1``.  Every Pod is ``color: green`` with a
required anti-affinity to ``color: green`` on ``kubernetes.io/hostname`` across both
namespaces (``benchmarks/upstream/templates/pod-with-pod-anti-affinity.yaml``), so at most
one such Pod fits per node.  Default profile, in-memory binds; Pods/s from the first pop of a
measured Pod to the last bind, by wall clock and by this process's CPU time (the latter
stays meaningful when other processes share the machine).

    .venv/bin/python benchmarks/pod_affinity.py [--nodes 5000] [--init 1000] [--pods 2000]
        [--runs 3] [--profile out.prof]

Prints one line per run and the median.  Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import statistics
import time
from typing import Any

from _support import InMemoryApi, default_node  # benchmarks/ is on sys.path as the script dir

from kubesched.api import objects as api
from kubesched.api.parse import parse_pod
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import Scheduler

HOSTNAME = "kubernetes.io/hostname"

POD_TEMPLATE: dict[str, Any] = {
    "metadata": {"name": "tpl", "labels": {"color": "green"}},
    "spec": {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"color": "green"}},
                        "topologyKey": HOSTNAME,
                        "namespaces": ["sched-1", "sched-0"],
                    }
                ]
            }
        },
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10.2",
                "ports": [{"containerPort": 80}],
                "resources": {
                    "requests": {"cpu": "100m", "memory": "500Mi"},
                    "limits": {"cpu": "100m", "memory": "500Mi"},
                },
            }
        ],
    },
}


def _pods(tpl: api.Pod, namespace: str, count: int, start: int) -> list[api.Pod]:
    return [
        dataclasses.replace(
            tpl,
            name=f"anti-affinity-pod-{i:05d}",
            namespace=namespace,
            uid=f"uid-{namespace}-{i}",
            labels=dict(tpl.labels),
            raw={},
        )
        for i in range(start, start + count)
    ]


def run_once(
    n_nodes: int, n_init: int, n_pods: int, profile: str | None
) -> tuple[float, float, int]:
    """Schedule the init Pods, then time the measured ones: (Pods per wall second, Pods per
    CPU second of this process, measured Pods bound)."""
    node_tpl = default_node()
    pod_tpl = parse_pod(POD_TEMPLATE)
    clock = [0.0]
    client = InMemoryApi()
    sched = Scheduler(
        load_config(None, known_plugins=known_plugin_names()),
        clock=lambda: clock[0],
        api_client=client,
    )
    for ns in ("sched-0", "sched-1"):
        sched.cluster.namespaces.labels[ns] = {"kubernetes.io/metadata.name": ns}
    for i in range(n_nodes):
        name = f"scheduler-perf-{i:05d}"
        sched.on_node_add(dataclasses.replace(node_tpl, name=name, labels={HOSTNAME: name}, raw={}))
    for pod in _pods(pod_tpl, "sched-0", n_init, 0):
        sched.on_pod_add(pod)
    while sched.schedule_one():
        pass
    init_bound = len(client.bound)
    for pod in _pods(pod_tpl, "sched-1", n_pods, n_init):
        sched.on_pod_add(pod)
    prof = cProfile.Profile() if profile else None
    c0 = time.process_time()
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    while sched.schedule_one():
        pass
    if prof:
        prof.disable()
        prof.dump_stats(profile)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - c0
    measured = len(client.bound) - init_bound
    assert init_bound == min(n_init, n_nodes), init_bound
    assert measured == min(n_pods, n_nodes - init_bound), (measured, sched.attempts)
    return measured / elapsed, measured / cpu, measured


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--init", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", help="write a cProfile of the last run here")
    args = ap.parse_args()
    rates, cpu_rates = [], []
    for i in range(args.runs):
        last = i == args.runs - 1
        rate, cpu_rate, bound = run_once(
            args.nodes, args.init, args.pods, args.profile if last else None
        )
        rates.append(rate)
        cpu_rates.append(cpu_rate)
        print(f"run {i + 1}: {rate:,.0f} pods/s ({cpu_rate:,.0f} per CPU second; {bound} bound)")
    print(
        f"median {statistics.median(rates):,.0f} pods/s "
        f"({statistics.median(cpu_rates):,.0f} per CPU second) over {args.runs} runs; "
        f"{args.nodes} nodes, {args.init} init + {args.pods} measured pods"
    )


if __name__ == "__main__":
    main()
