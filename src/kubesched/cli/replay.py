"""``kubesched replay --nodes NODES.csv --pods PODS.csv [--policy NAME ...] [--seed S ...]
[-o out.json] [--plot FILE.png] [--jobs N]``: replay a GPU trace (Alibaba 2023 "openb"
format) under the FGD paper's protocol and print the result document (a list of documents
when several policies are given)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kubesched.api.errors import InputError
from kubesched.devices.policies import POLICIES


def add_parser(sub: Any) -> None:
    """Register the command."""
    s = sub.add_parser("replay", help="replay a GPU trace against a node list, per policy")
    s.add_argument(
        "--nodes", required=True, help="node list CSV (sn,cpu_milli,memory_mib,gpu,model)"
    )
    s.add_argument(
        "--pods",
        required=True,
        help="pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec])",
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
    s.set_defaults(func=run, output_is_file=True)


def run(args: argparse.Namespace) -> int:
    """Run the replays and write the document(s) and the plot."""
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
