"""``kubesched calibrate [--grid small|full] [-o FILE] [--repeat R] [--binding] [--oracle PATH]
[--keep DIR] [--refit DIR] [--quantile 10|50]``.

Measures upstream's kube-scheduler (``kube-oracle bench``, built by ``oracle/build.sh``) over
the calibration grid and, with ``--binding``, through a real API server
(:mod:`kubesched.bench.calibbind`), and writes the fitted cost model as a calibration file
(:mod:`kubesched.bench.calibrate`), which ``timing.costModel: upstream`` and
``simulate --cost-model upstream`` read. It prints the validation table (held-out points and
bursts, :mod:`kubesched.bench.calibtable`); the last line on stdout is the fit's error.
Exit code 0 on success, 1 when a benchmark run failed, 2 for bad flags or no kube-oracle.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kubesched.bench import calibrate as calib
from kubesched.bench.calibtable import validation_table


def add_parser(sub: Any) -> None:
    """Register the command."""
    m = sub.add_parser(
        "calibrate",
        help="fit upstream kube-scheduler's speed on this machine (a cost model)",
        description="Run kube-oracle bench over a grid and fit the upstream cost model.",
    )
    m.add_argument("--grid", choices=("small", "full"), default="small", help="grid size")
    m.add_argument("-o", "--output", metavar="FILE", default="calibration.yaml")
    m.add_argument("--oracle", metavar="PATH", help="kube-oracle binary")
    m.add_argument("--keep", metavar="DIR", help="keep the generated configs and results here")
    m.add_argument(
        "--repeat", type=int, default=1, help="runs per point, the fastest kept (default 1)"
    )
    m.add_argument("--timeout", type=float, default=600.0, help="seconds an op may wait")
    m.add_argument(
        "--binding",
        action="store_true",
        help="also measure the binding path: bursts through a real kube-apiserver with "
        "upstream's kube-scheduler (oracle/bin: etcd, kube-apiserver, kube-scheduler)",
    )
    m.add_argument(
        "--quantile",
        type=int,
        choices=(10, 50),
        default=50,
        help="the attempt-time percentile fitted (default 50; 10 on a loaded machine: the "
        "attempts no other process interrupted)",
    )
    m.add_argument(
        "--refit",
        metavar="DIR",
        help="fit the runs a --keep DIR holds again, without running kube-oracle",
    )
    m.set_defaults(func=run, output_is_file=True)


def run(args: argparse.Namespace) -> int:
    """Run the grid, write the file, print the fit's error last."""
    oracle = calib.find_oracle(args.oracle)
    try:
        doc = calib.calibrate(
            args.grid,
            oracle,
            timeout=args.timeout,
            repeat=args.repeat,
            keep=Path(args.keep) if args.keep else None,
            refit=Path(args.refit) if args.refit else None,
            quantile=args.quantile,
            binding=args.binding,
        )
    except (RuntimeError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    calib.write(doc, args.output)
    print(validation_table(doc))
    fitted, held = doc["fit"]["fitted"], doc["fit"]["heldOut"]
    print(
        f"calibration written to {args.output}: {fitted['points']} points fitted, "
        f"median |error| {fitted['medianAbsErrorPercent']} %, worst "
        f"{fitted['maxAbsErrorPercent']} %; {held['points']} held out, median "
        f"{held['medianAbsErrorPercent']} %, worst {held['maxAbsErrorPercent']} %"
    )
    return 0
