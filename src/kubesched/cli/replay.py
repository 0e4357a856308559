"""Two forms of ``kubesched replay``:

- ``kubesched replay --nodes NODES.csv --pods PODS.csv [--policy NAME ...] [--seed S ...]
  [-o out.json] [--plot FILE.png] [--jobs N]``: replay a GPU trace (Alibaba 2023 "openb"
  format) under the FGD paper's protocol and print the result document (a list of documents
  when several policies are given);
- ``kubesched replay DIR [--config KSC] [--kubernetes-version V] [--drain S] [--format
  text|json] [--json-out FILE] [--report OUT/]``: replay a recording (``kubesched record``)
  in virtual time through kubesched and compare it with what the cluster's scheduler did
  (:mod:`kubesched.record.replay`; ``docs/recording.md``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kubesched.api.errors import InputError
from kubesched.devices.policies import POLICIES


def add_parser(sub: Any) -> None:
    """Register the command."""
    s = sub.add_parser(
        "replay",
        help="replay a recording (DIR) beside the real scheduler, or a GPU trace per policy",
    )
    s.add_argument(
        "recording",
        nargs="?",
        metavar="DIR",
        help="a recording directory (kubesched record --out DIR); else --nodes and --pods",
    )
    s.add_argument("--nodes", help="GPU trace: node list CSV (sn,cpu_milli,memory_mib,gpu,model)")
    s.add_argument(
        "--pods",
        help="GPU trace: pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec])",
    )
    s.add_argument(
        "--policy",
        action="append",
        help=f"one of {', '.join(POLICIES)}; repeat or comma-separate (default kubesched)",
    )
    s.add_argument("--seed", type=int, action="append", help="seed (repeatable; default 42)")
    s.add_argument("-o", "--output", help="write the JSON here instead of stdout")
    s.add_argument("--plot", help="PNG: unallocated GPU %% against arrived workload, all policies")
    s.add_argument("--jobs", type=int, default=1, help="processes for the seeds (default 1)")
    from kubesched.cli import replay_recording

    replay_recording.add_arguments(s)
    s.set_defaults(func=run, output_is_file=True, replay_parser=s)


def run(args: argparse.Namespace) -> int:
    """Replay a recording, or run the GPU trace replays and write the document(s) and the
    plot."""
    from kubesched.cli import replay_recording

    if args.recording is not None:
        return replay_recording.run(args)
    replay_recording.refuse_recording_flags(args)
    if not args.nodes or not args.pods:
        missing = [f for f, v in (("--nodes", args.nodes), ("--pods", args.pods)) if not v]
        args.replay_parser.error(
            f"the following arguments are required: {', '.join(missing)} (or a recording DIR)"
        )
    from kubesched.sim.gpureplay import runner, traces

    policies = [p for item in (args.policy or ["kubesched"]) for p in item.split(",") if p]
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        raise InputError([("--policy", f"unknown {unknown}; want one of {list(POLICIES)}")])
    seeds = args.seed or [42]
    traces.load_nodes(args.nodes)  # fail early, with the file's name, on bad input
    traces.load_pods(args.pods)
    docs = [
        runner.replay_document(runner.run_seeds(args.nodes, args.pods, p, seeds, args.jobs))
        for p in policies
    ]
    out: Any = docs[0] if len(docs) == 1 else docs
    text = json.dumps(out, indent=2)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")
    if args.plot:
        from kubesched.report.gpuplot import plot_unallocated

        plot_unallocated(docs, args.plot, title=args.pods.rsplit("/", 1)[-1])
    return 0
