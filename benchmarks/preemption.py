"""PreemptionBasic throughput (scheduler_perf ``PreemptionBasic``, default 500Nodes): nodes of
4 CPU / 32Gi / 110 pods, each filled by the scheduler with 4 low-priority Pods of 900m
(priority 0, grace 0), then high-priority Pods (10000, 3970m) that each must preempt all 4
Pods of a node.  The ``Scheduler`` is driven directly: binds are in memory and confirmed at
once, deletions reach the scheduler at once (``terminationGracePeriodSeconds: 0``, no
kubelet).  Measures Pods/s from the first high-priority pop to the last bind and the
process CPU seconds of that phase (less sensitive to a busy machine than wall time), and
checks that every high-priority Pod was placed, no node is overcommitted and every low Pod
was preempted.  ``decisions`` is a digest of every bind and deletion in order (which Pod
went where, which victims each preemption deleted): equal digests, equal decisions.

    .venv/bin/python benchmarks/preemption.py [--nodes 500] [--init 2000] [--pods 500]
        [--runs 3] [--profile out.prof]

Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import statistics
import time
from pathlib import Path

import yaml

from kubesched.api import objects as api
from kubesched.api.parse import parse_node, parse_pod
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import Scheduler

TEMPLATES = Path(__file__).resolve().parent / "upstream" / "templates"


class _Api:
    """In-memory API server: binds confirm at once, deletions vanish at once."""

    def __init__(self) -> None:
        self.sched: Scheduler | None = None
        self.bound: dict[str, str] = {}
        self.deleted: set[str] = set()
        self.log: list[str] = []
        """Every bind (``pod>node``) and deletion (``-pod``) in order."""

    def bind(self, pod: api.Pod, node_name: str) -> None:
        self.bound[pod.key] = node_name
        self.log.append(f"{pod.key}>{node_name}")
        assert self.sched is not None
        self.sched.on_pod_update(pod, pod.bound_to(node_name))

    def delete_pod(self, pod: api.Pod, reason: str) -> None:
        self.deleted.add(pod.key)
        self.log.append(f"-{pod.key}")
        self.bound.pop(pod.key, None)
        assert self.sched is not None
        self.sched.on_pod_delete(pod)


def _template(name: str) -> dict[str, object]:
    loaded = yaml.safe_load((TEMPLATES / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


def _pods(tpl: dict[str, object], prefix: str, n: int) -> list[api.Pod]:
    meta = dict(tpl["metadata"])  # type: ignore[arg-type]
    meta.pop("generateName", None)
    out = []
    for i in range(n):
        obj = {**tpl, "metadata": {**meta, "name": f"{prefix}-{i:05d}", "namespace": "bench"}}
        out.append(parse_pod(obj))
    return out


def _drain(s: Scheduler) -> None:
    while True:
        s.queue.flush_backoff_completed()
        if not s.schedule_one():
            return


def run_once(
    n_nodes: int, n_init: int, n_pods: int, profile: str | None
) -> tuple[float, float, str]:
    """One run: Pods/s and CPU seconds of the high-priority phase, and the decisions'
    digest."""
    client = _Api()
    clock = time.perf_counter
    s = Scheduler(
        load_config(None, known_plugins=known_plugin_names()), clock=clock, api_client=client
    )
    client.sched = s
    node_tpl = _template("node-default.yaml")
    for i in range(n_nodes):
        name = f"scheduler-perf-{i:05d}"
        obj = {**node_tpl, "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}
        s.on_node_add(parse_node(obj))
    for p in _pods(_template("pod-low-priority.yaml"), "low", n_init):
        s.on_pod_add(p)
    _drain(s)
    assert len(client.bound) == n_init, (len(client.bound), dict(s.attempts))
    high = _pods(_template("pod-high-priority.yaml"), "high", n_pods)
    prof = cProfile.Profile() if profile else None
    t0, c0 = time.perf_counter(), time.process_time()
    if prof:
        prof.enable()
    for p in high:
        s.on_pod_add(p)
    _drain(s)
    if prof:
        prof.disable()
        prof.dump_stats(profile)  # type: ignore[arg-type]
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    placed = sum(1 for p in high if p.key in client.bound)
    assert placed == n_pods, f"only {placed}/{n_pods} high-priority Pods placed"
    assert not s.cluster.overcommitted_nodes()
    assert len(client.deleted) == min(n_init, 4 * n_pods)
    print(
        f"  {placed}/{n_pods} placed, {len(client.deleted)} preempted, "
        f"attempts {dict(s.attempts)}, {elapsed:.2f} s, {cpu:.2f} s CPU"
    )
    digest = hashlib.sha256("\n".join(client.log).encode()).hexdigest()[:16]
    return n_pods / elapsed, cpu, digest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--init", type=int, default=2000)
    ap.add_argument("--pods", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", help="write a cProfile of the last run here")
    args = ap.parse_args()
    rates, cpus, digests = [], [], set()
    for i in range(args.runs):
        last = i == args.runs - 1
        rate, cpu, digest = run_once(
            args.nodes, args.init, args.pods, args.profile if last else None
        )
        rates.append(rate)
        cpus.append(cpu)
        digests.add(digest)
        print(f"run {i + 1}: {rate:,.1f} pods/s, {1000 * cpu / args.pods:.2f} ms CPU per Pod")
    print(
        f"median {statistics.median(rates):,.1f} pods/s, "
        f"{1000 * statistics.median(cpus) / args.pods:.2f} ms CPU per Pod over {args.runs} runs; "
        f"PreemptionBasic {args.nodes} nodes, {args.init} init, {args.pods} pods; "
        f"decisions {' '.join(sorted(digests))}"
    )


if __name__ == "__main__":
    main()
