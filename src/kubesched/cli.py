"""The ``kubesched`` command line: thin commands, each parses arguments and calls one function.

Bad input (a malformed manifest, scenario or configuration) prints one clear message naming
the file and field path and exits with code 2; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from kubesched import __version__
from kubesched.api.errors import InputError
from kubesched.api.parse import load_documents
from kubesched.report import text

EXIT_INPUT = 2


def _load_one(path: str) -> dict[str, Any]:
    docs = load_documents(path)
    if len(docs) == 1:
        return docs[0]
    return {"apiVersion": "v1", "kind": "List", "items": docs}


def _load_list(path: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": load_documents(path)}


def _load_config(path: str | None) -> dict[str, Any] | None:
    if path is None:
        return None
    docs = load_documents(path)
    if len(docs) != 1:
        raise InputError(
            [("", "expected exactly one KubeSchedulerConfiguration document")], file=path
        )
    return docs[0]


def _emit(result: dict[str, Any], fmt: str, render: Callable[[dict[str, Any]], str]) -> None:
    if fmt == "json":
        print(json.dumps(result, indent=2, sort_keys=False))
    else:
        print(render(result))


def cmd_explain(args: argparse.Namespace) -> int:
    """``kubesched explain``."""
    from kubesched.explainer import explain

    cluster = _load_list(args.cluster)
    pod = _load_one(args.pod)
    if pod.get("kind") != "Pod":
        raise InputError([("kind", f"expected a Pod, got {pod.get('kind')!r}")], file=args.pod)
    config = _load_config(args.config)
    try:
        result = explain(cluster, pod, config)
    except InputError as e:
        raise e.with_file(args.config or args.cluster) from None
    _emit(result, args.output, text.explain_table)
    return 0


def cmd_schedule(args: argparse.Namespace) -> int:
    """``kubesched schedule``."""
    from kubesched.sim.whatif import schedule

    cluster = _load_list(args.cluster)
    pods = _load_list(args.pods)
    config = _load_config(args.config)
    result = schedule(cluster, pods, config, seed=args.seed)
    _emit(result, args.output, text.schedule_table)
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    """``kubesched simulate``."""
    from kubesched.sim.scenario import load_scenario
    from kubesched.sim.simulate import invariants_hold, run_scenario

    scenario = load_scenario(args.scenario, seed=args.seed)
    progress = None if args.no_progress or not sys.stderr.isatty() else _progress_bar()
    summary = run_scenario(scenario, progress=progress)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(summary, f, indent=2)
    _emit(summary, args.output, text.simulate_summary)
    return 0 if invariants_hold(summary) else 1


def _progress_bar() -> Callable[[int, int], None]:
    from tqdm import tqdm

    bar: list[Any] = []

    def update(done: int, total: int) -> None:
        if not bar:
            bar.append(tqdm(total=total, unit="pod", desc="simulate", file=sys.stderr))
        bar[0].n = done
        bar[0].refresh()
        if done >= total:
            bar[0].close()

    return update


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every command."""
    p = argparse.ArgumentParser(
        prog="kubesched",
        description="A Kubernetes-compatible pod scheduler for large clusters, and its lab.",
    )
    p.add_argument("--version", action="version", version=f"kubesched {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    p.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv)")
    sub = p.add_subparsers(dest="command", required=True)

    e = sub.add_parser("explain", help="why is this Pod Pending / why that node")
    e.add_argument("--cluster", required=True, help="snapshot: kubectl get nodes,pods -A -o json")
    e.add_argument("--pod", required=True, help="the Pod manifest (YAML or JSON)")
    e.add_argument("--config", help="KubeSchedulerConfiguration file (default: upstream's)")
    e.add_argument("-o", "--output", choices=("json", "text"), default="text")
    e.set_defaults(func=cmd_explain)

    s = sub.add_parser("schedule", help="offline what-if: schedule Pods onto a snapshot")
    s.add_argument("--cluster", required=True, help="snapshot: kubectl get nodes,pods -A -o json")
    s.add_argument("--pods", required=True, help="Pods to submit (List, multi-doc YAML)")
    s.add_argument("--config", help="KubeSchedulerConfiguration file (default: upstream's)")
    s.add_argument("--seed", type=int, default=0, help="tie-break seed (default 0)")
    s.add_argument("-o", "--output", choices=("json", "text"), default="text")
    s.set_defaults(func=cmd_schedule)

    m = sub.add_parser("simulate", help="run a simulated cluster in virtual time")
    m.add_argument("scenario", nargs="?", help="Scenario YAML (default: the built-in scenario)")
    m.add_argument("--seed", type=int, help="override the scenario's seed")
    m.add_argument("-o", "--output", choices=("json", "text"), default="text")
    m.add_argument("--json-out", metavar="FILE", help="also write the summary as JSON")
    m.add_argument("--no-progress", action="store_true", help="no progress bar")
    m.set_defaults(func=cmd_simulate)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kubesched`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        code: int = args.func(args)
        return code
    except InputError as e:
        if args.debug:
            raise
        print(f"error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
