"""``kubesched pools check --cluster FILE --config A.yaml [--config B.yaml ...] [-o json|text]``.

Checks that independent schedulers (one per configuration file, each with its profiles'
``schedulerName`` and its own election lock) keep to their node pools on a cluster snapshot:
Pods bound across a boundary, nodes two schedulers can reach, Pods no scheduler owns, and
shared election locks (see :mod:`kubesched.parallel.pools`).  Exit code 0 when the pools
are independent, 1 when a boundary is broken, 2 for bad input.
"""

from __future__ import annotations

import argparse
from typing import Any

from kubesched.api.errors import InputError
from kubesched.cli import common


def add_parser(sub: Any) -> None:
    """Register the command."""
    m = sub.add_parser("pools", help="independent node pools: check the boundaries hold")
    actions = m.add_subparsers(dest="action", required=True)
    c = actions.add_parser("check", help="report crossed boundaries and shared nodes")
    c.add_argument("--cluster", required=True, help="snapshot: kubectl get nodes,pods -A -o json")
    c.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="one scheduler's KubeSchedulerConfiguration (repeat, one per scheduler)",
    )
    c.add_argument("-o", "--output", choices=("json", "text"), default="text")
    c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the pools; exit 1 when a boundary is broken."""
    from kubesched.config.load import load_config
    from kubesched.config.types import KubeSchedulerConfiguration
    from kubesched.parallel.pools import check_pools, render
    from kubesched.plugins.registry import known_plugin_names

    if not args.config:
        raise InputError([("--config", "give one configuration per scheduler")])
    cluster = common.load_list(args.cluster)
    known = known_plugin_names()

    def checked(path: str) -> KubeSchedulerConfiguration:
        """The configuration of ``path``, checked here: a problem names its own file."""
        return common.check(
            lambda: load_config(common.load_config(path), known_plugins=known), path
        )

    configs = [checked(path) for path in args.config]
    try:
        result = check_pools(cluster, configs, names=list(args.config))
    except InputError as e:
        raise e.with_file(args.cluster) from None
    common.emit(result, args.output, render)
    return 0 if result["ok"] else 1
