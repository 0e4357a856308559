"""``kubesched run --config FILE [--kubeconfig FILE | --in-cluster] [--metrics-address ADDR]
[--metrics-port PORT] [--id ID] [--resync SECONDS] [--role coordinator|shard [--shards N]
[--shard-index I]]``: schedule a real cluster's Pods.

Without ``--role`` this is the serial scheduler.  ``--role coordinator --shards N`` and
``--role shard --shard-index I --shards N`` run the sharded architecture as separate
processes coordinating through the API server (``docs/parallel.md`` §6): one coordinator
(leader-elected on the configuration's Lease) and one process per shard index (each holding
the Lease ``kubesched-shard-I``); every process takes the same configuration file and ``N``.

Credentials: ``--kubeconfig``, else ``clientConnection.kubeconfig`` of the configuration,
else in-cluster when running in a Pod, else the default kubeconfig rules (``$KUBECONFIG``,
``~/.kube/config``).  Serves ``/metrics``, ``/healthz``, ``/livez``, ``/readyz`` on
127.0.0.1:10251 unless told otherwise.  SIGTERM or SIGINT shut down gracefully (the Lease
is released); exit code 1 when the Lease was lost, as kube-scheduler.
"""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import sys
import uuid
from typing import Any

from kubesched import __version__
from kubesched.cli import common

log = logging.getLogger(__name__)

DEFAULT_METRICS_PORT = 10251


def add_parser(sub: Any) -> None:
    """Register the command."""
    s = sub.add_parser("run", help="schedule Pods of a real cluster (secondary scheduler)")
    s.add_argument("--config", required=True, help="KubeSchedulerConfiguration file")
    common.add_version_arguments(s)
    who = s.add_mutually_exclusive_group()
    who.add_argument("--kubeconfig", help="kubeconfig file (default: the config's, or ~/.kube)")
    who.add_argument(
        "--in-cluster", action="store_true", help="use the Pod's service-account credentials"
    )
    s.add_argument("--metrics-address", default="127.0.0.1", help="address for /metrics and probes")
    s.add_argument(
        "--metrics-port",
        type=int,
        default=DEFAULT_METRICS_PORT,
        help=f"port for /metrics and probes (default {DEFAULT_METRICS_PORT}; 0: any free)",
    )
    s.add_argument("--id", help="leader-election identity (default: hostname_uuid)")
    s.add_argument(
        "--resync",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="replay the informer caches this often (default 0: never, as kube-scheduler)",
    )
    s.add_argument(
        "--role",
        choices=("coordinator", "shard"),
        help="sharded architecture: the coordinator, or one shard (default: serial scheduler)",
    )
    s.add_argument("--shards", type=int, metavar="N", help="number of shards (with --role)")
    s.add_argument(
        "--shard-index", type=int, metavar="I", help="this shard's index, 0..N-1 (--role shard)"
    )
    s.set_defaults(func=run)


def check_role(args: argparse.Namespace) -> None:
    """The role flags fit together; InputError (exit code 2) otherwise."""
    from kubesched.api.errors import InputError

    role = getattr(args, "role", None)
    shards, index = getattr(args, "shards", None), getattr(args, "shard_index", None)
    problems: list[tuple[str, str]] = []
    if role is None:
        if shards is not None:
            problems.append(("--shards", "only with --role coordinator or --role shard"))
        if index is not None:
            problems.append(("--shard-index", "only with --role shard"))
    elif shards is None or shards < 1:
        problems.append(("--shards", f"required with --role {role}: a number >= 1"))
    elif role == "coordinator" and index is not None:
        problems.append(("--shard-index", "only with --role shard"))
    elif role == "shard" and (index is None or not 0 <= index < shards):
        problems.append(("--shard-index", f"required with --role shard: 0..{shards - 1}"))
    if problems:
        raise InputError(problems)


def run(args: argparse.Namespace) -> int:
    """Connect, then schedule until SIGTERM or a lost Lease."""
    from kubesched.config.load import load_config
    from kubesched.live import client, health, roles
    from kubesched.metrics import SchedulerMetrics
    from kubesched.plugins.registry import known_plugin_names

    check_role(args)
    role = getattr(args, "role", None) or roles.SERIAL
    choice = common.version_choice(args)
    config = load_config(args.config, known_plugins=known_plugin_names(), gates=choice.resolve())
    cc, le = config.client_connection, config.leader_election
    if le.leader_elect and le.resource_name == "kube-scheduler":
        log.warning(
            "leaderElection.resourceName is kube-scheduler: a secondary scheduler should use "
            "its own Lease name, or it waits for kube-scheduler's Lease forever"
        )
    identity = args.id or f"{socket.gethostname()}_{uuid.uuid4()}"
    metrics = SchedulerMetrics()
    kc = client.connect(
        kubeconfig=args.kubeconfig or cc.kubeconfig or None,
        in_cluster=args.in_cluster,
        qps=cc.qps,
        burst=cc.burst,
        user_agent=f"kubesched/{__version__} ({identity})",
        metrics=metrics.rest_client,
    )
    told = None if choice.version is not None else _server_version(kc)
    if told is not None:  # the API server tells the version (said after the banner)
        gates = choice.resolve(told=told, quiet=True)
        if gates != config.feature_gates:
            config = load_config(args.config, known_plugins=known_plugin_names(), gates=gates)
    live = roles.make_replica(
        role,
        config,
        kc,
        identity=identity,
        shards=getattr(args, "shards", None) or 1,
        shard_index=getattr(args, "shard_index", None) or 0,
        metrics=metrics,
        resync_seconds=args.resync,
        election_client=kc.sibling(cc.qps, cc.burst),
    )
    server = health.HealthServer(
        metrics,
        args.metrics_address,
        args.metrics_port,
        health={"scheduler": live.healthy},
        ready={"informer-sync": live.synced},
    )
    print(
        f"kubesched {identity}{'' if role == roles.SERIAL else ' (' + _role_text(args) + ')'}: "
        f"API server {kc.host}; serving /metrics, /healthz, /readyz "
        f"at {server.url}",
        file=sys.stderr,
        flush=True,
    )
    if told is not None:
        common.say_told(told, "the API server's /version")

    def on_signal(signum: int, frame: object) -> None:
        del frame
        log.info("signal %d: shutting down", signum)
        live.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        return live.run()
    finally:
        server.close()
        kc.close()


def _server_version(kc: Any) -> str | None:
    """The supported minor version the API server's ``/version`` says (None: unreadable or
    not supported, logged)."""
    from kubesched.config.versions import version_of_server
    from kubesched.live.client import ApiError

    try:
        body = kc.request("GET", "/version")
    except ApiError as e:
        log.warning("cannot read the API server's /version (%s): the default version", e)
        return None
    told = version_of_server(body)
    if told is None:
        log.warning("the API server's version %r is not supported: the default", body)
    return told


def _role_text(args: argparse.Namespace) -> str:
    if args.role == "shard":
        return f"shard {args.shard_index} of {args.shards}"
    return f"coordinator of {args.shards} shards"
