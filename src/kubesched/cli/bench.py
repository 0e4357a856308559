"""``kubesched bench CONFIG.yaml [--case C] [--workload W] [--label L ...] [-o results.json]
[--report DIR] [--metrics-port PORT] [--metrics-file FILE]``.

Runs upstream scheduler_perf-format test cases against the real scheduler in wall-clock time
(see :mod:`kubesched.bench.runner`), prints a one-line summary per workload as it finishes
(the last line on stdout is the last workload's), and writes perf-dash JSON with ``-o`` and
an HTML report (:mod:`kubesched.report.bench`) with ``--report``.  With ``--metrics-port`` or
``--metrics-file`` every workload's scheduler records into one registry whose gauges are
synced every second, served live and/or written at the end
(:mod:`kubesched.cli.observability`).
Exit code 0 when every workload finished above its threshold, 1 otherwise, 2 for a bad
config or filters that select no workload (the message lists the cases and workloads).
"""

from __future__ import annotations

import argparse
import cProfile
import sys
from collections.abc import Callable
from typing import Any

from kubesched.bench.results import API, MEMORY
from kubesched.cli import common, observability
from kubesched.cli.shards import add_shards_argument
from kubesched.parallel.factory import shard_count


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
    add_shards_argument(m, routing=True)
    m.add_argument("--profile", metavar="FILE", help="write a cProfile of the measured phases")
    observability.add_report_argument(m)
    observability.add_metrics_arguments(m)
    m.add_argument("--no-progress", action="store_true", help="no progress bar")
    common.add_version_arguments(m)
    m.set_defaults(func=run, output_is_file=True)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; exit 1 if a workload failed or fell below its threshold."""
    from kubesched.bench.results import write_json

    modelled = any(v is not None for v in (args.api_latency, args.client_qps, args.client_burst))
    binding = args.binding or (API if modelled else MEMORY)
    profiler = cProfile.Profile() if args.profile else None
    show = not args.no_progress and sys.stderr.isatty()
    wants_metrics = args.metrics_port is not None or bool(args.metrics_file)
    with observability.metrics_session(args) as metrics:
        results = _run(args, binding, profiler, show, metrics if wants_metrics else None)
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


def _run(
    args: argparse.Namespace,
    binding: str,
    profiler: cProfile.Profile | None,
    show: bool,
    metrics: Any,
) -> list[Any]:
    from kubesched.bench.runner import RunOptions, run_config

    options = RunOptions(
        binding=binding,
        api_latency=args.api_latency or 0.0,
        client_qps=args.client_qps,
        client_burst=args.client_burst,
        timeout=args.timeout,
        seed=args.seed,
        batching=None if args.batching is None else args.batching == "on",
        shards=shard_count(args.shards),
        routing=args.shard_routing,
        profiler=profiler,
        progress=progress_bars if show else None,
        metrics=metrics,
        gates=common.version_choice(args).resolve(),
    )

    def emit(result: Any) -> None:
        for close in _open_bars:
            close()
        _open_bars.clear()
        print(result.summary_line(), flush=True)

    return run_config(
        args.config,
        case=args.case,
        workload=args.workload,
        labels=tuple(args.label),
        options=options,
        on_result=emit,
    )


def write_report(results: Any, directory: str) -> None:
    """Write the HTML benchmark report (:mod:`kubesched.report.bench`) into ``directory``."""
    from kubesched.report.bench import write

    index = write(results, directory)
    print(f"report written to {index}", file=sys.stderr)


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
