"""``kubesched replay DIR``: the recording form of ``replay`` (:mod:`kubesched.cli.replay`
registers the command; this module adds the form's flags and runs it).

``kubesched replay DIR [--config KSC] [--kubernetes-version V] [--drain S] [--seed S]
[--format text|json] [-o FILE] [--report OUT/] [--no-progress]``: the recording replayed in
virtual time as recorded and through kubesched (:mod:`kubesched.record.replay`); stdout gets
the comparison, ``-o`` the whole document (both runs' summaries too), ``--report`` the HTML
report showing both.  Exit 1 when an invariant of the kubesched run was violated.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kubesched.api.errors import InputError
from kubesched.config.versions import FLAG_HELP

RECORDING_FLAGS = ("config", "kubernetes_version", "feature_gates", "drain", "report", "format")
TRACE_FLAGS = ("nodes", "pods", "policy", "plot")


def add_arguments(s: argparse.ArgumentParser) -> None:
    """The recording form's flags."""
    g = s.add_argument_group("replay DIR (a recording)")
    g.add_argument(
        "--config", metavar="KSC", help="KubeSchedulerConfiguration (default: upstream's)"
    )
    g.add_argument(
        "--kubernetes-version",
        metavar="VERSION",
        help=FLAG_HELP,
    )
    g.add_argument(
        "--feature-gates",
        metavar="A=true,B=false",
        help="feature gates as kube-scheduler's flag, checked against that version's gates "
        "(docs/versions.md)",
    )
    g.add_argument(
        "--drain",
        type=float,
        metavar="SECONDS",
        help="virtual seconds run past the recording's end (default 10; binds after the end "
        "are not compared)",
    )
    g.add_argument("--format", choices=("text", "json"), default=None, help="stdout (default text)")
    g.add_argument("--report", metavar="DIR", help="write the HTML report (index.html + plots)")
    g.add_argument("--no-progress", action="store_true", help="no progress bars")


def refuse_recording_flags(args: argparse.Namespace) -> None:
    """The GPU-trace form was asked for: the recording form's flags are errors."""
    given = [f for f in RECORDING_FLAGS if getattr(args, f, None) is not None]
    if given:
        shown = ", ".join("--" + f.replace("_", "-") for f in given)
        raise InputError([(shown, "only with a recording: kubesched replay DIR ...")])


def run(args: argparse.Namespace) -> int:
    """Load, replay, print, write; exit 1 if an invariant was violated."""
    from kubesched.cli import common
    from kubesched.record.reader import load_recording
    from kubesched.record.replay import DEFAULT_DRAIN, recorded_version, run_replay

    given = [f for f in TRACE_FLAGS if getattr(args, f, None) is not None]
    if given or args.jobs != 1:
        shown = ", ".join("--" + f for f in given) or "--jobs"
        raise InputError([(shown, "only with a GPU trace (--nodes, --pods), not a recording DIR")])
    choice = common.version_choice(args)
    seeds = args.seed or [0]
    if len(seeds) > 1:
        raise InputError([("--seed", "a recording is replayed with one seed")])
    drain = DEFAULT_DRAIN if args.drain is None else args.drain
    config = common.check(lambda: common.load_config(args.config), args.config)
    rec = load_recording(args.recording)
    gates = choice.resolve(told=recorded_version(rec), where="the recording's API server version")
    bars = not args.no_progress and sys.stderr.isatty()
    progress = _bars if bars else None
    doc = run_replay(
        rec,
        config,
        config_name=args.config or "",
        gates=gates,
        drain=drain,
        seed=seeds[0],
        progress=progress,
    )
    if args.output:
        with open(args.output, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    if args.report:
        from kubesched.report.replay import write_replay_report

        index = write_replay_report(doc, args.report)
        print(f"report: {index}", file=sys.stderr)
    if (args.format or "text") == "json":
        common.write_json({k: v for k, v in doc.items() if k not in ("replay", "recorded")})
    else:
        from kubesched.report.replay import comparison_text

        print(comparison_text(doc))
    return 0 if not any(doc["comparison"]["invariants"].values()) else 1


def _bars(desc: str) -> Any:
    from kubesched.cli.simulate import progress_bar

    return progress_bar(desc)
