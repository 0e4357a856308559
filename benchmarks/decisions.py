"""A fingerprint of kubesched's decisions, to prove a refactoring changed none of them.

Prints one SHA-256 line per run:

- ``simulate``: the built-in scenario's ``--json-out`` summary, without the keys measured in
  wall-clock time (``wallSeconds``, ``schedulerWallSeconds``, ``attemptsPerWallSecond``,
  ``latency``);
- ``bench CASE/WORKLOAD``: the node every Pod was bound to, for each ``fast``-labelled
  workload of ``benchmarks/kubesched-config.yaml`` (serial, in-memory binds, seed 1), and
  with ``--shards 2`` for the same workloads.

``PreemptionAsync`` is timing-dependent, serial and sharded: its low-priority Pods have no
start time and equal priority, so which of them a preemptor evicts follows their order on
the node (upstream's ``NodeInfo`` order, the cache's history: binds are confirmed and
victims deleted on the wall clock), as in upstream; compare its line between runs of one
commit before reading a difference as a change.

Every run models Kubernetes ``--kubernetes-version`` (default 1.34, the version the recorded
fingerprints were taken at: the oracle's); the summary's ``kubernetesVersion`` label is left
out of the digest, as it names the run rather than a decision.

Run it before and after a change and ``diff`` the outputs::

    python benchmarks/decisions.py > before.txt   # on the old commit
    python benchmarks/decisions.py > after.txt    # on the new one
    diff before.txt after.txt
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

from kubesched.bench import params as p
from kubesched.bench import runner
from kubesched.bench.config import load_test_cases
from kubesched.config.featuregates import FeatureGates
from kubesched.config.versions import SUPPORTED_VERSIONS

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "kubesched-config.yaml")
WALL_KEYS = ("wallSeconds", "schedulerWallSeconds", "attemptsPerWallSecond", "latency")
LABEL_KEYS = ("kubernetesVersion",)
VERSION = "1.34"


def digest(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON (first 16 hex digits)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def simulate_digest(version: str = VERSION) -> str:
    """The built-in scenario's summary, wall-clock keys removed."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "sim.json")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "kubesched",
                "simulate",
                "--no-progress",
                "--kubernetes-version",
                version,
                "--json-out",
                out,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        with open(out) as fh:
            summary = json.load(fh)
    for key in (*WALL_KEYS, *LABEL_KEYS):
        summary.pop(key, None)
    return digest(summary)


def bench_digest(case: Any, workload: Any, shards: int, version: str = VERSION) -> str:
    """The placements of one workload run to the end (Pod name to node)."""
    steps = p.resolve(case, workload)
    opts = runner.RunOptions(seed=1, shards=shards, gates=FeatureGates(version))
    run = runner._WorkloadRun(case, workload, steps, opts)
    try:
        run.run()
        placements = {key: pod.node_name for key, pod in sorted(run.api.pods.items())}
    finally:
        run.finish()
    return digest(placements)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=CONFIG)
    ap.add_argument("--label", default="fast")
    ap.add_argument("--no-simulate", action="store_true")
    ap.add_argument("--no-shards", action="store_true")
    ap.add_argument("--kubernetes-version", default=VERSION, choices=SUPPORTED_VERSIONS)
    args = ap.parse_args()
    version = args.kubernetes_version
    if not args.no_simulate:
        print(f"simulate {simulate_digest(version)}", flush=True)
    chosen = p.select(load_test_cases(args.config), labels=(args.label,))
    for shards in (1,) if args.no_shards else (1, 2):
        for case, workload in chosen:
            name = f"{case.name}/{workload.name}"
            print(
                f"bench {name} shards={shards} {bench_digest(case, workload, shards, version)}",
                flush=True,
            )


if __name__ == "__main__":
    main()
