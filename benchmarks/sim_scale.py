"""Simulation at scale: ``kubesched simulate`` on a scaled built-in scenario, wall time and
peak RSS per source tree, runs interleaved (A B A B ...) as in ``cold_start.py``.

    .venv/bin/python benchmarks/make_scaled_scenario.py --pods 100000 -o /tmp/s100k.yaml
    .venv/bin/python benchmarks/sim_scale.py /tmp/s100k.yaml [--src /work/main/src --src src]
        [--runs 1]

Prints each run's wall seconds, peak RSS, attempts (scheduled / unschedulable), attempts per
wall second and Pods scheduled, and whether the trees' runs came out alike (attempts, Pods
scheduled and pending, and the pending Pods' reasons).
Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

from cold_start import run_measured


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("--src", action="append", help="source tree to time (repeatable)")
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    srcs = args.src or ["src"]
    walls: dict[str, list[tuple[float, float]]] = {s: [] for s in srcs}
    outcomes: dict[str, set[str]] = {s: set() for s in srcs}
    print(f"load average before: {os.getloadavg()}", flush=True)
    for i in range(args.runs):
        for src in srcs:
            cmd = ["simulate", args.scenario, "-o", "json", "--no-progress"]
            secs, rss, out = run_measured(src, cmd)
            summary = json.loads(out)
            attempts = summary["attempts"]
            walls[src].append((secs, rss))
            outcome = {
                k: summary[k]
                for k in (
                    "attempts",
                    "podsScheduled",
                    "podsPending",
                    "podsSubmitted",
                    "pendingPods",
                )
            }
            outcomes[src].add(json.dumps(outcome, sort_keys=True))
            print(
                f"run {i + 1} {src}: {secs:.1f} s, {rss:.0f} MiB peak RSS, attempts "
                f"{attempts['scheduled']} scheduled / {attempts['unschedulable']} unschedulable "
                f"({summary['attemptsPerWallSecond']:,.0f}/s), "
                f"{summary['podsScheduled']} scheduled, load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    for src in srcs:
        secs = statistics.median(r[0] for r in walls[src])
        rss = statistics.median(r[1] for r in walls[src])
        print(f"{src}: median {secs:.1f} s, {rss:.0f} MiB peak RSS")
    same = len({frozenset(o) for o in outcomes.values()}) == 1
    print("same attempts and outcome in every tree" if same else "the trees differ")


if __name__ == "__main__":
    main()
