"""Scale the built-in scenario (what ``kubesched simulate`` runs with no argument) to a large
cluster, for the "simulation at scale" benchmark.

Every node pool is multiplied so the cluster has ``--nodes`` nodes (pool shares kept), and
every workload's count and arrival rate are multiplied so the run creates about ``--pods``
Pods over the same virtual duration; the ``oversized`` trickle (Pods larger than any node)
keeps its count of 5, as the issue measured it.  Defaults: 20,000 nodes, 1,000,000 Pods.

    .venv/bin/python benchmarks/make_scaled_scenario.py -o /tmp/scaled-1m.yaml
    .venv/bin/python benchmarks/make_scaled_scenario.py --pods 100000 -o /tmp/scaled-100k.yaml
    /usr/bin/time -v kubesched simulate /tmp/scaled-1m.yaml -o json --report /tmp/r.html

See ``benchmarks/RESULTS.md``, "Simulation at scale".
"""

from __future__ import annotations

import argparse
from typing import Any

import yaml

from kubesched.sim.scenario import default_scenario_text

KEEP = ("oversized",)
"""Workloads whose count is not scaled."""


def scaled(doc: dict[str, Any], nodes: int, pods: int) -> dict[str, Any]:
    """The scenario ``doc`` with its pools scaled to ``nodes`` and its workloads to ``pods``."""
    spec = doc["spec"]
    pools = spec["nodePools"]
    have = sum(p["count"] for p in pools)
    for pool in pools:
        pool["count"] = max(1, round(pool["count"] * nodes / have))
    pools[0]["count"] += nodes - sum(p["count"] for p in pools)  # exactly ``nodes``
    loads = spec["workloads"]
    kept = sum(w["count"] for w in loads if w["name"] in KEEP)
    factor = (pods - kept) / sum(w["count"] for w in loads if w["name"] not in KEEP)
    for w in loads:
        if w["name"] not in KEEP:
            w["count"] = max(1, round(w["count"] * factor))
            w["ratePerSecond"] = w["ratePerSecond"] * factor
    doc["metadata"]["name"] = f"default-{nodes}nodes-{pods}pods"
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", required=True, help="scenario file to write")
    ap.add_argument("--nodes", type=int, default=20_000)
    ap.add_argument("--pods", type=int, default=1_000_000)
    args = ap.parse_args()
    doc = scaled(yaml.safe_load(default_scenario_text()), args.nodes, args.pods)
    with open(args.out, "w") as fh:
        yaml.safe_dump(doc, fh, sort_keys=False)


if __name__ == "__main__":
    main()
