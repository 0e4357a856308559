"""``kubesched explain --cluster FILE --pod FILE [--config FILE] [-o json|text]``."""

from __future__ import annotations

import argparse
from typing import Any

from kubesched.api.errors import InputError, name_or_shape
from kubesched.api.source import FREEZE_ANSWER_AFTER, bulk_allocation
from kubesched.cli import common
from kubesched.report import text


def add_parser(sub: Any) -> None:
    """Register the command."""
    e = sub.add_parser("explain", help="why is this Pod Pending / why that node")
    e.add_argument("--cluster", required=True, help="snapshot: kubectl get nodes,pods -A -o json")
    e.add_argument("--pod", required=True, help="the Pod manifest (YAML or JSON)")
    e.add_argument("--config", help="KubeSchedulerConfiguration file (default: upstream's)")
    e.add_argument("-o", "--output", choices=("json", "text"), default="text")
    e.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Explain one Pod against a snapshot."""
    from kubesched.api.parse import load_cluster
    from kubesched.explainer import explain

    with bulk_allocation(FREEZE_ANSWER_AFTER):  # the snapshot's objects live to the answer
        cluster = load_cluster(args.cluster)  # a large kubectl List read by parts
        pod = common.load_one(args.pod)
        if pod.get("kind") != "Pod":
            problem = ("kind", f"expected a Pod, got {name_or_shape(pod.get('kind'))}")
            raise InputError([problem], file=args.pod)
        config = common.load_config(args.config)
        snapshot = common.check_inputs(
            (cluster, args.cluster), (pod, args.pod), (config, args.config)
        )
    try:
        result = explain(snapshot, pod, config)
    except InputError as e:
        raise e.with_file(args.config or args.cluster) from None
    common.emit(result, args.output, text.explain_table)
    return 0
