"""PodTopologySpread throughput: upstream scheduler_perf ``TopologySpreading/5000Nodes_5000Pods``
(threshold 460 Pods/s upstream) on the real scheduler with in-memory binds.

5,000 nodes (4 CPU / 32Gi / 110 pods) labelled ``topology.kubernetes.io/zone`` moon-1..3
round-robin; 5,000 init Pods (100m / 500Mi, no constraints) are scheduled first (not
measured); then 5,000 measured Pods labelled ``color: blue`` with a hard zone spread
(maxSkew 5, DoNotSchedule, selector ``color: blue``).  Pods/s is measured from the first pop
of a measured Pod to its last bind.

    .venv/bin/python benchmarks/topology_spread.py [--nodes 5000] [--init 5000] [--pods 5000]
        [--runs 3] [--profile out.prof]

Prints one line per run and the median, plus the spread of the measured Pods over zones.
Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import statistics
import time
from collections import Counter

from _support import InMemoryApi, default_node  # benchmarks/ is on sys.path as the script dir

from kubesched.api.parse import parse_pod
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import Scheduler

ZONE = "topology.kubernetes.io/zone"


def _pod_manifest(name: str, namespace: str, spread: bool) -> dict[str, object]:
    spec: dict[str, object] = {
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
        ]
    }
    meta: dict[str, object] = {"name": name, "namespace": namespace}
    if spread:
        meta["labels"] = {"color": "blue"}
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 5,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"color": "blue"}},
            }
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def run_once(
    n_nodes: int, n_init: int, n_pods: int, profile: str | None
) -> tuple[float, float, Counter[str]]:
    node_tpl = default_node()
    init_tpl = parse_pod(_pod_manifest("tpl", "namespace-1", spread=False))
    spread_tpl = parse_pod(_pod_manifest("tpl", "namespace-2", spread=True))
    clock = [0.0]
    api = InMemoryApi()
    sched = Scheduler(
        load_config(None, known_plugins=known_plugin_names()),
        clock=lambda: clock[0],
        api_client=api,
    )
    zone_of = {}
    for i in range(n_nodes):
        name = f"scheduler-perf-{i:05d}"
        zone_of[name] = f"moon-{i % 3 + 1}"
        sched.on_node_add(
            dataclasses.replace(node_tpl, name=name, labels={ZONE: zone_of[name]}, raw={})
        )
    for i in range(n_init):
        sched.on_pod_add(dataclasses.replace(init_tpl, name=f"pod-{i:05d}", uid=f"i{i}", raw={}))
    t_init = time.perf_counter()
    while sched.schedule_one():
        pass
    init_rate = n_init / max(time.perf_counter() - t_init, 1e-9)
    assert len(api.bound) == n_init, (len(api.bound), sched.attempts)
    for i in range(n_pods):
        sched.on_pod_add(
            dataclasses.replace(
                spread_tpl,
                name=f"spreading-pod-{i:05d}",
                uid=f"s{i}",
                labels={"color": "blue"},
                raw={},
            )
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
    assert len(api.bound) == n_init + n_pods, (len(api.bound), sched.attempts)
    zones = Counter(zone_of[n] for k, n in api.bound.items() if "spreading" in k)
    return n_pods / elapsed, init_rate, zones


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--init", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", help="write a cProfile of the last run's measured part here")
    args = ap.parse_args()
    rates, init_rates = [], []
    for i in range(args.runs):
        last = i == args.runs - 1
        rate, init_rate, zones = run_once(
            args.nodes, args.init, args.pods, args.profile if last else None
        )
        rates.append(rate)
        init_rates.append(init_rate)
        print(
            f"run {i + 1}: {rate:,.0f} pods/s (init Pods without spreading: {init_rate:,.0f}"
            f" pods/s); measured Pods per zone {dict(sorted(zones.items()))}"
        )
    print(
        f"median {statistics.median(rates):,.0f} pods/s over {args.runs} runs "
        f"(init Pods: {statistics.median(init_rates):,.0f} pods/s); "
        f"{args.nodes} nodes, {args.init} init + {args.pods} measured pods"
    )


if __name__ == "__main__":
    main()
