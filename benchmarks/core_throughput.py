"""Core-engine throughput: default profile, 5,000 nodes (4 CPU / 32Gi / 110 pods), 10,000
Pods of 100m / 500Mi, in-memory binds.  Measures Pods/s from the first pop to the last bind
and the peak resident memory of the process.

    .venv/bin/python benchmarks/core_throughput.py [--nodes 5000] [--pods 10000] [--runs 3]
        [--profile out.prof]

Prints one line per run and the median.  Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import cProfile
import resource
import statistics
import time

from _support import InMemoryApi, default_node  # benchmarks/ is on sys.path as the script dir

from kubesched.api.parse import parse_pod
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import Scheduler, SchedulerOptions


def run_once(
    n_nodes: int, n_pods: int, profile: str | None, batching: bool = True
) -> tuple[float, int]:
    node_tpl = default_node()
    pod_tpl = parse_pod(
        {
            "metadata": {"name": "tpl", "namespace": "bench"},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.10.2",
                        "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                    }
                ]
            },
        }
    )
    import dataclasses

    clock = [0.0]
    api = InMemoryApi()
    sched = Scheduler(
        load_config(None, known_plugins=known_plugin_names()),
        clock=lambda: clock[0],
        api_client=api,
        options=SchedulerOptions(batching=batching),
    )
    for i in range(n_nodes):
        name = f"node-{i:05d}"
        sched.on_node_add(
            dataclasses.replace(
                node_tpl, name=name, labels={"kubernetes.io/hostname": name}, raw={}
            )
        )
    for i in range(n_pods):
        sched.on_pod_add(
            dataclasses.replace(pod_tpl, name=f"pod-{i:05d}", uid=f"uid-{i}", labels={}, raw={})
        )
    prof = cProfile.Profile() if profile else None
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    while sched.schedule_one():
        pass
    if prof:
        prof.disable()
        prof.dump_stats(profile)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - t0
    assert len(api.bound) == n_pods, (len(api.bound), sched.attempts)
    print(f"  reuse: {dict(sched.batch.attempts)} flushes {dict(sched.batch.flushes)}")
    return n_pods / elapsed, len(api.bound)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", help="write a cProfile of the last run here")
    ap.add_argument("--no-batching", action="store_true", help="turn result reuse off")
    args = ap.parse_args()
    rates = []
    for i in range(args.runs):
        last = i == args.runs - 1
        rate, bound = run_once(
            args.nodes, args.pods, args.profile if last else None, not args.no_batching
        )
        rates.append(rate)
        print(f"run {i + 1}: {rate:,.0f} pods/s ({bound} bound)")
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"median {statistics.median(rates):,.0f} pods/s over {args.runs} runs; "
        f"peak RSS {peak_mib:,.0f} MiB; {args.nodes} nodes, {args.pods} pods"
    )


if __name__ == "__main__":
    main()
