"""``kubesched schedule --cluster FILE --pods FILE [--config FILE] [-o json|text]
[--metrics-port PORT] [--metrics-file FILE]``."""

from __future__ import annotations

import argparse
from typing import Any

from kubesched.api.errors import InputError
from kubesched.cli import common, observability
from kubesched.report import text


def add_parser(sub: Any) -> None:
    """Register the command."""
    s = sub.add_parser("schedule", help="offline what-if: schedule Pods onto a snapshot")
    s.add_argument("--cluster", required=True, help="snapshot: kubectl get nodes,pods -A -o json")
    s.add_argument("--pods", required=True, help="Pods to submit (List, multi-doc YAML)")
    s.add_argument("--config", help="KubeSchedulerConfiguration file (default: upstream's)")
    s.add_argument("--seed", type=int, default=0, help="tie-break seed (default 0)")
    s.add_argument("-o", "--output", choices=("json", "text"), default="text")
    common.add_version_arguments(s)
    observability.add_metrics_arguments(s)
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Schedule the Pods onto the snapshot in virtual time."""
    from kubesched.sim.whatif import schedule_parsed

    cluster = common.load_list(args.cluster)
    pods = common.load_list(args.pods)
    config = common.load_config(args.config)
    inputs = common.check_inputs(
        (cluster, args.cluster),
        (pods, args.pods),
        (config, args.config),
        version=common.version_choice(args),
    )
    try:
        with observability.metrics_session(args) as metrics:
            result = schedule_parsed(
                inputs.snapshot, inputs.pods, inputs.config, seed=args.seed, metrics=metrics
            )
    except InputError as e:
        raise e.with_file(args.config or args.cluster) from None
    common.emit(result, args.output, text.schedule_table)
    return 0
