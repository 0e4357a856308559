"""``kubesched record --kubeconfig K --out DIR [--duration D] [--no-progress]``: record a real
cluster's workload, read-only, into DIR (:mod:`kubesched.record.recorder`; the format is
``docs/recording.md``).  SIGINT or SIGTERM, or ``--duration`` seconds after the snapshot,
stop it cleanly; a progress line on a terminal says what was recorded so far.  Exit 0 when
the recording is complete, 1 when it stopped before the snapshot or the cluster refused to
be read, 2 on bad flags."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from kubesched import __version__


def add_parser(sub: Any) -> None:
    """Register the command."""
    s = sub.add_parser("record", help="record a real cluster's workload for `replay DIR`")
    who = s.add_mutually_exclusive_group()
    who.add_argument("--kubeconfig", help="kubeconfig file (default: ~/.kube/config rules)")
    who.add_argument(
        "--in-cluster", action="store_true", help="use the Pod's service-account credentials"
    )
    s.add_argument("--out", required=True, metavar="DIR", help="new or empty directory to write")
    s.add_argument(
        "--duration",
        type=float,
        metavar="SECONDS",
        help="stop this long after the snapshot (default: at SIGINT / SIGTERM)",
    )
    s.add_argument("--no-progress", action="store_true", help="no progress line")
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Record until the duration or a signal; print where the recording is."""
    from kubesched.live import client
    from kubesched.record.recorder import Recorder, RecordError, prepare_directory

    out = prepare_directory(args.out)
    kc = client.connect(
        kubeconfig=args.kubeconfig,
        in_cluster=args.in_cluster,
        user_agent=f"kubesched/{__version__} (record)",
    )
    recorder = Recorder(kc, out)

    def on_signal(signum: int, frame: object) -> None:
        del frame
        recorder.stop("interrupted" if signum == signal.SIGINT else "terminated")

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    bar = progress_line() if not args.no_progress and sys.stderr.isatty() else None
    print(f"recording {kc.host} into {out}", file=sys.stderr, flush=True)
    try:
        summary = recorder.run(args.duration, progress=bar)
    except RecordError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        kc.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if bar is not None:
        print(file=sys.stderr)
    counts = ", ".join(f"{v} {k}" for k, v in sorted(summary.counts.items())) or "no events"
    if not (out / "snapshot.json").exists():
        print(
            f"stopped ({summary.stop_reason}) before the snapshot: nothing recorded",
            file=sys.stderr,
        )
        return 1
    print(
        f"recorded {summary.events} events in {summary.duration:.1f} s ({counts}); "
        f"stopped: {summary.stop_reason}. Replay it: kubesched replay {out}",
        file=sys.stderr,
    )
    return 0


def progress_line() -> Any:
    """A callback redrawing one status line on stderr."""
    from kubesched.record.format import (
        NODE_ADDED,
        NODE_DELETED,
        NODE_UPDATED,
        POD_BOUND,
        POD_CREATED,
        POD_DELETED,
    )
    from kubesched.record.recorder import Progress

    def show(p: Progress) -> None:
        if p.elapsed is None:
            text = "listing the cluster..."
        else:
            c = p.counts
            nodes = sum(c.get(k, 0) for k in (NODE_ADDED, NODE_UPDATED, NODE_DELETED))
            text = (
                f"{p.elapsed:7.1f} s  {p.events} events: {c.get(POD_CREATED, 0)} Pods created, "
                f"{c.get(POD_BOUND, 0)} bound, {c.get(POD_DELETED, 0)} deleted, {nodes} Node "
                f"changes; {p.pods} Pods, {p.nodes} Nodes now"
                + (f"; {p.relists} relists" if p.relists else "")
            )
        sys.stderr.write("\r\x1b[2K" + text)
        sys.stderr.flush()

    return show
