"""``kubesched run --config FILE [--kubeconfig FILE | --in-cluster] [--metrics-address ADDR]
[--metrics-port PORT] [--id ID] [--resync SECONDS]``: schedule a real cluster's Pods.

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

log = logging.getLogger(__name__)

DEFAULT_METRICS_PORT = 10251


def add_parser(sub: Any) -> None:
    """Register the command."""
    s = sub.add_parser("run", help="schedule Pods of a real cluster (secondary scheduler)")
    s.add_argument("--config", required=True, help="KubeSchedulerConfiguration file")
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
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Connect, then schedule until SIGTERM or a lost Lease."""
    from kubesched.config.load import load_config
    from kubesched.live import client, health, runner
    from kubesched.metrics import SchedulerMetrics
    from kubesched.plugins.registry import known_plugin_names

    config = load_config(args.config, known_plugins=known_plugin_names())
    cc, le = config.client_connection, config.leader_election
    if le.leader_elect and le.resource_name == "kube-scheduler":
        log.warning(
            "leaderElection.resourceName is kube-scheduler: a secondary scheduler should use "
            "its own Lease name, or it waits for kube-scheduler's Lease forever"
        )
    identity = args.id or f"{socket.gethostname()}_{uuid.uuid4()}"
    kc = client.connect(
        kubeconfig=args.kubeconfig or cc.kubeconfig or None,
        in_cluster=args.in_cluster,
        qps=cc.qps,
        burst=cc.burst,
        user_agent=f"kubesched/{__version__} ({identity})",
    )
    metrics = SchedulerMetrics()
    live = runner.LiveScheduler(
        config,
        kc,
        identity=identity,
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
        f"kubesched {identity}: API server {kc.host}; serving /metrics, /healthz, /readyz "
        f"at {server.url}",
        file=sys.stderr,
        flush=True,
    )

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
