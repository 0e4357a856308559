"""Differential run: kubesched.explain against upstream kube-scheduler v1.34 (kube-oracle).

    bash oracle/build.sh
    .venv/bin/python oracle/diff.py --cases 10000 --seed 1
    .venv/bin/python oracle/diff.py --verb schedule --cases 200 --seed 1

Generates N cases (``oracle/cases.py``), answers each with both (``explain``: kubesched.explain
against kube-oracle explain; ``schedule``: kubesched.schedule against upstream's whole
scheduler), and prints every mismatch (explain's shrunk: objects and fields removed while
it still differs).  ``--save DIR`` writes each
shrunk mismatch as a regression case (request and upstream's answer), the form
``tests/oracle/regressions/`` keeps.  The last line is ``oracle: N cases, M mismatches``;
the exit code is 0 only when M is 0.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import case, schedule_case
from compare import (
    Oracle,
    OracleMissing,
    compare,
    ours_schedule,
    schedule_differences,
    shrink,
)
from tqdm import tqdm


def save(directory: Path, request: dict[str, Any], answer: dict[str, Any], origin: str) -> Path:
    """One regression case: the request and upstream's answer, named by content."""
    body = {"origin": origin, "request": request, "upstream": answer}
    text = json.dumps(body, indent=1, sort_keys=True)
    path = directory / f"case-{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--verb", choices=["explain", "schedule"], default="explain")
    ap.add_argument("--cases", type=int, default=300, help="number of generated cases")
    ap.add_argument("--seed", type=int, default=1, help="generator seed (case i of seed S)")
    ap.add_argument("--start", type=int, default=0, help="first case index")
    ap.add_argument("--save", type=Path, help="write each shrunk mismatch into this folder")
    ap.add_argument("--show", type=int, default=20, help="mismatches printed in full")
    args = ap.parse_args(argv)
    if args.cases < 0:
        ap.error("--cases must be >= 0")
    try:
        oracle = Oracle(verb=args.verb)
    except OracleMissing as e:
        print(f"oracle: {e}", file=sys.stderr)
        return 2
    mismatches = 0
    with oracle:
        indices = range(args.start, args.start + args.cases)
        for i in tqdm(indices, desc="oracle", unit="case", file=sys.stderr, mininterval=2):
            if args.verb == "schedule":
                request = schedule_case(args.seed, i)
                lines = schedule_differences(ours_schedule(request), oracle.ask(request))
                if lines:
                    mismatches += 1
                    tqdm.write(f"case {i} (seed {args.seed}): " + "; ".join(lines[:6]))
                continue
            request = case(args.seed, i)
            if not compare(oracle, request):
                continue
            mismatches += 1
            small = shrink(request, lambda r: bool(compare(oracle, r)))
            lines = compare(oracle, small)
            origin = f"oracle/diff.py --seed {args.seed} --start {i} --cases 1"
            if mismatches <= args.show:
                tqdm.write(f"case {i} (seed {args.seed}): {len(lines)} difference(s)")
                for line in lines[:8]:
                    tqdm.write(f"  {line}")
                if mismatches == 1 or args.save:
                    tqdm.write("  shrunk: " + json.dumps(small)[:2000])
            if args.save:
                tqdm.write(f"  saved {save(args.save, small, oracle.ask(small), origin)}")
    print(f"oracle: {args.cases} cases, {mismatches} mismatches")
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
