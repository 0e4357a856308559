"""Cold start: ``kubesched explain`` on a large snapshot, wall time to the answer and peak RSS,
against a fresh Python's ``json.load`` of the same file (issue 32's yardstick).

Each run is a fresh process (``kubesched explain --cluster SNAP --pod POD -o json``), timed
from spawn to exit, its peak RSS taken from ``wait4``.  With several ``--src`` trees the runs
are interleaved (A B A B ...), and each round ends with ``json.load`` of the snapshot, so a
busy machine slows every tree and the yardstick alike; the medians are printed per tree with
their ratio to ``json.load``'s median, and the load average before and after.

    .venv/bin/python benchmarks/make_snapshot.py -o /tmp/snap.json --pod-out /tmp/pod.json
    .venv/bin/python benchmarks/cold_start.py --snapshot /tmp/snap.json --pod /tmp/pod.json \\
        [--src /work/main/src --src src] [--runs 3]

Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ENTRY = """import sys, kubesched.cli as cli
entry = getattr(cli, "entry", None)  # the console script's function (trees before it: main)
entry() if entry else sys.exit(cli.main())"""
KUBESCHED = [sys.executable, "-c", ENTRY]
"""``kubesched`` as the console script runs it, with the source tree ``--src`` first."""


def run_measured(src: str, args: list[str]) -> tuple[float, float, bytes]:
    """Run ``kubesched ARGS`` with ``src`` first on the path: seconds from spawn to exit,
    peak RSS in MiB (``wait4``) and stdout; its stderr is ours.  Exits naming the command
    if it fails."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(src)}
    start = time.perf_counter()
    proc = subprocess.Popen([*KUBESCHED, *args], env=env, stdout=subprocess.PIPE)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):  # simulate exits 1 when an invariant fails; its JSON says which
        raise SystemExit(f"{src}: kubesched {' '.join(args)}: exit {code}")
    return elapsed, usage.ru_maxrss / 1024, out


JSON_LOAD = "import json, sys; json.load(open(sys.argv[1], 'rb'))"
"""The yardstick: the standard library reading the file, nothing else."""


def json_load_once(path: str) -> tuple[float, float]:
    """Seconds from spawn to exit and peak RSS in MiB of a fresh Python running ``json.load`` on
    ``path``: the cost of reading the file, the floor of a cold start."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", JSON_LOAD, path])
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"json.load of {path} failed")
    return elapsed, usage.ru_maxrss / 1024


def run_once(src: str, snapshot: str, pod: str) -> tuple[float, float, str]:
    """Seconds to the answer, peak RSS in MiB and the answer's message, for one process."""
    args = ["explain", "--cluster", snapshot, "--pod", pod, "-o", "json"]
    elapsed, rss, out = run_measured(src, args)
    answer = json.loads(out)
    return elapsed, rss, f"{answer['result']}: {answer['message']}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--snapshot", required=True)
    ap.add_argument("--pod", required=True)
    ap.add_argument("--src", action="append", help="source tree to time (repeatable)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    srcs = args.src or ["src"]
    results: dict[str, list[tuple[float, float]]] = {s: [] for s in srcs}
    answers: dict[str, set[str]] = {s: set() for s in srcs}
    reads: list[tuple[float, float]] = []
    print(f"load average before: {os.getloadavg()}", flush=True)
    for i in range(args.runs):
        for src in srcs:
            secs, rss, answer = run_once(src, args.snapshot, args.pod)
            results[src].append((secs, rss))
            answers[src].add(answer)
            print(f"run {i + 1} {src}: {secs:.2f} s, {rss:.0f} MiB", flush=True)
        reads.append(json_load_once(args.snapshot))
        print(f"run {i + 1} json.load: {reads[-1][0]:.2f} s, {reads[-1][1]:.0f} MiB", flush=True)
    print(f"load average after: {os.getloadavg()}")
    floor = statistics.median(r[0] for r in reads)
    print(f"json.load: median {floor:.2f} s, {statistics.median(r[1] for r in reads):.0f} MiB")
    for src in srcs:
        secs = statistics.median(r[0] for r in results[src])
        rss = statistics.median(r[1] for r in results[src])
        print(
            f"{src}: median {secs:.2f} s ({secs / floor:.2f} x json.load), {rss:.0f} MiB peak "
            f"RSS; answer {sorted(answers[src])}"
        )
    if len({frozenset(a) for a in answers.values()}) > 1:
        raise SystemExit("the trees gave different answers")


if __name__ == "__main__":
    main()
