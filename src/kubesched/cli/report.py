"""``kubesched report RESULTS.json [--out DIR]``: the HTML report of a saved run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    """Register the command."""
    r = sub.add_parser("report", help="HTML report with plots of a saved run (--json-out)")
    r.add_argument("results", help="a run summary saved by simulate --json-out")
    r.add_argument(
        "--out", metavar="DIR", help="output directory (default: RESULTS without .json + -report)"
    )
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Render the report and print where index.html is."""
    from kubesched.report.html import load_results, write_report

    summary = load_results(args.results)
    src = Path(args.results)
    out = Path(args.out) if args.out else src.with_name(src.stem + "-report")
    print(write_report(summary, out))
    return 0
