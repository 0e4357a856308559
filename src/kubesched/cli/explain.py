"""``kubesched explain --cluster FILE --pod FILE [--config FILE] [-o json|text] [--preemption]``.

A Pod whose ``schedulerName`` names no profile of the configuration is a usage error (exit 2)
that lists the profiles and says how to pass the configuration."""

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
    common.add_version_arguments(e)
    e.add_argument(
        "--preemption",
        action="store_true",
        help="also run PostFilter's preemption dry run: the message then ends as kubectl "
        "describe shows it (`preemption: ...`), with the node it would nominate and the victims",
    )
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
        inputs = common.check_inputs(
            (cluster, args.cluster),
            (pod, args.pod),
            (config, args.config),
            admit=False,
            version=common.version_choice(args),
        )
    try:
        result = explain(inputs.snapshot, inputs.pods[0], inputs.config, preemption=args.preemption)
    except InputError as e:
        raise e.with_file(args.config or args.cluster) from None
    if result["result"] == "Error" and result["message"].startswith(PROFILE_NOT_FOUND):
        raise _no_profile(pod, config, args)
    common.emit(result, args.output, text.explain_table)
    return 0


PROFILE_NOT_FOUND = "profile not found for scheduler name"


def _no_profile(
    pod: dict[str, Any], config: dict[str, Any] | None, args: argparse.Namespace
) -> InputError:
    """A Pod for a scheduler the configuration has no profile for is a usage error here: the
    question was surely about the profile the user deploys (exit 2, not an Error answer)."""
    raw = (config or {}).get("profiles") or [{}]
    names = [str(p.get("schedulerName") or "default-scheduler") for p in raw if isinstance(p, dict)]
    wanted = (pod.get("spec") or {}).get("schedulerName")
    given = (
        f"profiles of {args.config}"
        if args.config
        else "no --config given: upstream's default profile"
    )
    message = (
        f"{wanted!r} names no profile ({given}: {', '.join(names)}); pass the "
        "KubeSchedulerConfiguration that defines it with --config FILE"
    )
    return InputError([("spec.schedulerName", message)], file=args.pod)
