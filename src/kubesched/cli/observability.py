"""Options every running command shares: ``--metrics-port``, ``--metrics-address``,
``--metrics-file``, ``--metrics-hold`` and ``--report``, with the code behind them.

A command adds the options with :func:`add_metrics_arguments` / :func:`add_report_argument`,
wraps its run in :func:`metrics_session` (which yields the ``SchedulerMetrics`` to hand to
the scheduler, serves ``/metrics`` and ``/healthz`` while the run goes, and writes the final
exposition at the end) and calls :func:`write_report` with its summary.  ``simulate`` and
``schedule`` use them; ``bench`` and live mode are meant to.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubesched.metrics import MetricsServer, SchedulerMetrics

log = logging.getLogger(__name__)


def add_metrics_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the metrics options on ``parser``."""
    g = parser.add_argument_group("metrics")
    g.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve Prometheus /metrics and /healthz on this port while running (0: any free)",
    )
    g.add_argument(
        "--metrics-address",
        default="127.0.0.1",
        metavar="ADDR",
        help="address to serve metrics on (default 127.0.0.1)",
    )
    g.add_argument(
        "--metrics-file",
        metavar="FILE",
        help="write the final text exposition of every metric to FILE at the end",
    )
    g.add_argument(
        "--metrics-hold",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="keep serving /metrics this long after the run so a scraper sees the end",
    )


def add_report_argument(parser: argparse.ArgumentParser) -> None:
    """Register ``--report DIR``."""
    parser.add_argument(
        "--report", metavar="DIR", help="write the HTML report (index.html + PNG plots) to DIR"
    )


@contextlib.contextmanager
def metrics_session(args: argparse.Namespace) -> Iterator[SchedulerMetrics]:
    """Metrics for one run, served and/or written as ``args`` ask (see the module doc)."""
    metrics = SchedulerMetrics()
    server = None
    port = getattr(args, "metrics_port", None)
    if port is not None:
        server = MetricsServer(metrics, getattr(args, "metrics_address", "127.0.0.1"), port)
        print(f"serving metrics at {server.url}", file=sys.stderr, flush=True)
    try:
        yield metrics
        path = getattr(args, "metrics_file", None)
        if path:
            Path(path).write_bytes(metrics.exposition())
        hold = float(getattr(args, "metrics_hold", 0.0) or 0.0)
        if server is not None and hold > 0:
            log.info("holding the metrics endpoint for %.1f s", hold)
            time.sleep(hold)
    finally:
        if server is not None:
            server.close()


def write_report(summary: dict[str, Any], directory: str | None) -> Path | None:
    """Write the HTML report when ``directory`` is set; the index path."""
    if not directory:
        return None
    from kubesched.report.html import write_report as write

    index = write(summary, directory)
    print(f"report written to {index}", file=sys.stderr)
    return index
