"""``kubesched bench CONFIG.yaml [--case C] [--workload W] [--label L ...] [-o results.json]``.

Runs upstream scheduler_perf-format test cases against the real scheduler in wall-clock time
(see :mod:`kubesched.bench.runner`), prints a one-line summary per workload as it finishes
(the last line on stdout is the last workload's), and writes perf-dash JSON with ``-o``.
Exit code 0 when every workload finished above its threshold, 1 otherwise, 2 for a bad
config.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import sys
from collections.abc import Callable
from typing import Any

from kubesched.bench.results import API, MEMORY
from kubesched.parallel import hooks


def add_parser(sub: Any) -> None:
    """Register the command."""
    m = sub.add_parser(
        "bench",
        help="run scheduler_perf-format benchmarks in wall-clock time",
        description="Run upstream scheduler_perf test cases against the real scheduler.",
    )
    m.add_argument("config", help="scheduler_perf config YAML (a list of test cases)")
    m.add_argument("--case", help="run only this test case")
    m.add_argument("--workload", help="run only this workload (NAME or CASE/NAME)")
    m.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="L",
        help="label filter, repeatable or comma-separated: L must be set, -L must not",
    )
    m.add_argument("-o", "--output", metavar="FILE", help="write perf-dash JSON here")
    m.add_argument(
        "--binding",
        choices=(MEMORY, API, "both"),
        default=None,
        help="in-memory binds, a modelled API server, or both (default: memory, or api "
        "when --api-latency/--client-qps/--client-burst is given)",
    )
    m.add_argument("--api-latency", type=float, metavar="S", help="seconds per API call")
    m.add_argument(
        "--client-qps", type=float, metavar="Q", help="client rate limit (default: config, 50)"
    )
    m.add_argument(
        "--client-burst", type=int, metavar="B", help="client burst (default: config, 100)"
    )
    m.add_argument("--timeout", type=float, default=600.0, help="seconds an op may wait")
    m.add_argument("--seed", type=int, default=0, help="seed for generated names and ties")
    m.add_argument(
        "--batching",
        choices=("on", "off"),
        help="reuse results across equivalent Pods (default: the scheduler's)",
    )
    hooks.add_shards_argument(m)
    m.add_argument("--profile", metavar="FILE", help="write a cProfile of the measured phases")
    m.add_argument("--report", metavar="DIR", help="write an HTML report (not available yet)")
    m.add_argument("--no-progress", action="store_true", help="no progress bar")
    m.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; exit 1 if a workload failed or fell below its threshold."""
    from kubesched.bench.results import write_json
    from kubesched.bench.runner import RunOptions, run_config

    modelled = any(v is not None for v in (args.api_latency, args.client_qps, args.client_burst))
    binding = args.binding or (API if modelled else MEMORY)
    profiler = cProfile.Profile() if args.profile else None
    show = not args.no_progress and sys.stderr.isatty()
    options = RunOptions(
        binding=binding,
        api_latency=args.api_latency or 0.0,
        client_qps=args.client_qps,
        client_burst=args.client_burst,
        timeout=args.timeout,
        seed=args.seed,
        batching=None if args.batching is None else args.batching == "on",
        shards=args.shards,
        profiler=profiler,
        progress=progress_bars if show else None,
    )

    def emit(result: Any) -> None:
        for close in _open_bars:
            close()
        _open_bars.clear()
        print(result.summary_line(), flush=True)

    results = run_config(
        args.config,
        case=args.case,
        workload=args.workload,
        labels=tuple(args.label),
        options=options,
        on_result=emit,
    )
    if not results:
        print("no workload matches the filters", file=sys.stderr)
        return 1
    if args.output:
        write_json(results, args.output)
    if profiler is not None:
        profiler.dump_stats(args.profile)
    if args.report:
        write_report(results, args.report)
    return 0 if all(r.ok for r in results) else 1


def write_report(results: Any, directory: str) -> None:
    """Hook for the HTML benchmark report (``kubesched.report``), when it exists."""
    try:
        report_bench = importlib.import_module("kubesched.report.bench")
    except ImportError:
        # TODO: the report room renders bench results (plots of throughput per workload).
        print(f"--report {directory}: HTML bench reports are not available yet", file=sys.stderr)
        return
    report_bench.write(results, directory)


_open_bars: list[Callable[[], None]] = []


def progress_bars(label: str, total: int) -> Callable[[int], None]:
    """A tqdm bar on stderr for one workload (Pods bound of Pods created); ``update(done)``."""
    from tqdm import tqdm

    bar = tqdm(total=total, unit="pod", desc=label, file=sys.stderr, leave=False)
    _open_bars.append(bar.close)

    def update(done: int) -> None:
        bar.n = done
        bar.refresh()

    return update
