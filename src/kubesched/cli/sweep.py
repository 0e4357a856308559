"""``kubesched sweep SWEEP.yaml [-o results.json] [--report DIR] [--workers N]
[--ray-address ADDRESS]``.

Runs every variant of the sweep once per seed (:mod:`kubesched.sweep`) on a local process
pool, or as Ray tasks on the cluster at ``--ray-address`` (default: ``RAY_ADDRESS`` when set;
``--local`` ignores it), prints the ranked comparison table and optionally writes the results
JSON and an HTML report.  Exit code 0 when every run held its invariants, 1 otherwise, 2 for
a bad sweep file (or Ray missing when asked for).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from kubesched.api.errors import InputError
from kubesched.cli import common


def add_parser(sub: Any) -> None:
    """Register the command."""
    m = sub.add_parser(
        "sweep",
        help="compare variants of one class of variable over seeds, locally or on Ray",
        description="Run a grid of variants (one class of variable at a time) over seeds.",
    )
    m.add_argument("sweep", help="Sweep YAML (a base, a grid of variants, seeds)")
    m.add_argument("-o", "--output", metavar="FILE", help="write the results JSON here")
    m.add_argument("--report", metavar="DIR", help="write the HTML report (index.html) to DIR")
    m.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="local worker processes (default: the CPU count; 0: run in this process)",
    )
    m.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="run the tasks on this Ray cluster (default: $RAY_ADDRESS when set)",
    )
    m.add_argument("--local", action="store_true", help="ignore RAY_ADDRESS; use local workers")
    m.add_argument("--no-progress", action="store_true", help="no progress bar")
    common.add_version_arguments(m)
    m.set_defaults(func=run, output_is_file=True)


def run(args: argparse.Namespace) -> int:
    """Run the sweep; exit 1 if any run violated an invariant."""
    from kubesched.report.sweep import sweep_table, write_report
    from kubesched.sweep.ray_backend import RayUnavailable
    from kubesched.sweep.run import run_sweep
    from kubesched.sweep.spec import load_sweep

    spec = load_sweep(args.sweep)
    choice = common.version_choice(args)
    if choice.version is not None or choice.settings:
        choice.resolve()  # checked here at that version (or the default), before any run
        if choice.version is not None:
            spec.base["kubernetesVersion"] = choice.version
        spec.base["featureGates"] = choice.settings
    address = None if args.local else (args.ray_address or os.environ.get("RAY_ADDRESS"))
    show = not args.no_progress and sys.stderr.isatty()
    progress = _progress() if show else None
    try:
        result = run_sweep(spec, workers=args.workers, ray_address=address, progress=progress)
    except RayUnavailable as e:
        raise InputError([("--ray-address", str(e))]) from None
    if args.output:
        with open(args.output, "w") as fh:
            json.dump(result, fh, indent=2)
            fh.write("\n")
    if args.report:
        write_report(result, args.report)
    print(sweep_table(result))
    broken = [r for r in result["rows"] if not r.get("skipped") and not r.get("invariantsHold")]
    return 1 if broken else 0


def _progress() -> Any:
    from tqdm import tqdm

    bar: list[Any] = []

    def update(done: int, total: int) -> None:
        if not bar:
            bar.append(tqdm(total=total, unit="run", desc="sweep", file=sys.stderr))
        bar[0].n = done
        bar[0].refresh()
        if done >= total:
            bar[0].close()

    return update
