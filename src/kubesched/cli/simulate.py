"""``kubesched simulate [SCENARIO.yaml] [--seed S] [-o json|text] [--json-out FILE]
[--report DIR] [--metrics-port PORT] [--metrics-file FILE] [--pace X] [--shards N|auto]
[--compare-governance] [--compare-gangs] [--cost-model constant|upstream [--calibration FILE]]``.

``--compare-governance`` runs the scenario twice with the same seed, NodeResourcesFit's
``retryGovernance`` off and then on (:mod:`kubesched.sim.governance`): the summary, report
and metrics are the run with it on, plus ``retryGovernanceComparison`` (both runs side by
side: attempts, attempts saved, success ratio, time to schedule of Pods that waited).

``--compare-gangs`` runs the scenario's Coscheduling gangs as written and again expressed
through upstream's Workload API (:func:`kubesched.sim.gangpaths.as_workload_api`, same
release with GenericWorkload on): the summary is the run as written, plus
``gangPathComparison`` (both runs' gangs side by side: every member bound and Ready, p50 /
p99 over gangs, incomplete holds, the held-past-timeout invariant).

``--cost-model upstream`` times each attempt as upstream's kube-scheduler would on the
calibrated machine (:mod:`kubesched.sim.costmodel`), overriding the scenario's
``timing.costModel``; virtual-time throughput is then the predicted upstream Pods/s.

Metrics advance in virtual time: counters move as simulated events happen and gauges are
synced every simulated second.  While ``/metrics`` is served the run is paced (default one
simulated second per wall second, ``--pace``), so ``rate()`` and ``histogram_quantile`` over
a Prometheus scrape window describe simulated seconds (scaled by the pace).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubesched.cli import common, observability
from kubesched.cli.shards import add_shards_argument
from kubesched.parallel.factory import shard_count
from kubesched.report import text

if TYPE_CHECKING:
    from kubesched.sim.simulate import Progress


def add_parser(sub: Any) -> None:
    """Register the command."""
    m = sub.add_parser("simulate", help="run a simulated cluster in virtual time")
    m.add_argument("scenario", nargs="?", help="Scenario YAML (default: the built-in scenario)")
    m.add_argument("--seed", type=int, help="override the scenario's seed")
    m.add_argument("-o", "--output", choices=("json", "text"), default="text")
    m.add_argument("--json-out", metavar="FILE", help="also write the summary as JSON")
    m.add_argument("--no-progress", action="store_true", help="no progress bar")
    m.add_argument(
        "--pace",
        type=float,
        metavar="X",
        help="simulated seconds per wall-clock second (default: 1 while --metrics-port "
        "serves, else as fast as possible; 0: as fast as possible)",
    )
    m.add_argument(
        "--compare-governance",
        action="store_true",
        help="run twice (same seed), NodeResourcesFit retryGovernance off then on, and "
        "compare attempts, success ratio and time to schedule",
    )
    m.add_argument(
        "--compare-gangs",
        action="store_true",
        help="run the scenario's Coscheduling gangs again as Workload API gangs (same seed) "
        "and compare time until every member is bound and Ready",
    )
    m.add_argument(
        "--cost-model",
        choices=("constant", "upstream"),
        help="attempt cost: the scenario's cycleSeconds, or upstream's calibrated model",
    )
    m.add_argument("--calibration", metavar="FILE", help="calibration file (with upstream)")
    add_shards_argument(m)
    observability.add_report_argument(m)
    common.add_version_arguments(m)
    observability.add_metrics_arguments(m)
    m.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the scenario; exit 1 if an invariant was violated."""
    from kubesched.api.errors import InputError
    from kubesched.sim.scenario import check_workload_objects, load_scenario, with_cost_model
    from kubesched.sim.simulate import invariants_hold, run_scenario

    if args.calibration and args.cost_model != "upstream":
        raise InputError([("--calibration", "only with --cost-model upstream")])
    scenario = load_scenario(args.scenario, seed=args.seed)
    scenario.gates = common.version_choice(args).resolve(base=scenario.gates)
    common.check(lambda: check_workload_objects(scenario), args.scenario)
    if args.cost_model:
        with_cost_model(scenario, args.cost_model, args.calibration)
    bars = not args.no_progress and sys.stderr.isatty()
    pace = args.pace if args.pace is not None else (1.0 if args.metrics_port is not None else 0)
    compare = args.compare_governance
    shards = shard_count(args.shards)
    off = None
    if compare:
        off = run_scenario(
            scenario,
            progress=progress_bar("governance off") if bars else None,
            pace=pace or None,
            shards=shards,
            retry_governance=False,
        )
    with observability.metrics_session(args) as metrics:
        summary = run_scenario(
            scenario,
            progress=progress_bar("governance on" if compare else "simulate") if bars else None,
            metrics=metrics,
            pace=pace or None,
            shards=shards,
            retry_governance=True if compare else None,
        )
    if off is not None:
        from kubesched.sim.governance import compare as side_by_side

        summary["retryGovernanceComparison"] = side_by_side(off, summary)
    other = None
    if args.compare_gangs:
        from kubesched.sim import gangpaths

        other = run_scenario(gangpaths.as_workload_api(scenario), shards=shards)
        runs = {"Coscheduling": summary, "Workload API": other}
        summary["gangPathComparison"] = gangpaths.compare(runs)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(summary, f, indent=2)
    observability.write_report(summary, args.report)
    common.emit(summary, args.output, text.simulate_summary)
    held = all(invariants_hold(r) for r in (summary, off, other) if r is not None)
    return 0 if held else 1


def progress_bar(desc: str) -> Callable[[Progress], None]:
    """A progress callback drawing a tqdm bar on stderr: virtual seconds against the run's
    end, with the Pods bound and created so far and the scheduling attempts per wall-clock
    second."""
    from tqdm import tqdm

    bar: list[Any] = []

    def update(p: Progress) -> None:
        if not bar:
            fmt = "{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} virtual s {postfix}"
            bar.append(tqdm(total=p.end, desc=desc, file=sys.stderr, bar_format=fmt))
        b = bar[0]
        b.n = p.now
        b.set_postfix_str(
            f"{p.bound} bound, {p.created}/{p.arrivals} Pods created, "
            f"{p.attempts} attempts ({p.attempts_per_second:,.0f}/s)",
            refresh=False,
        )
        b.refresh()
        if p.now >= p.end:
            b.close()

    return update
