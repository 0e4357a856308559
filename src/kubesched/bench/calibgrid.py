"""The calibration grid: which scheduler_perf workloads ``kubesched calibrate`` runs through
``kube-oracle bench``, the configs it writes for them, and the work each attempt does.

A point is one workload: a plugin mix (``default``, ``affinity``: required pod anti-affinity
per hostname; ``spread``: a zone topology spread constraint; ``preemption``: high-priority Pods
that each must evict a low-priority one), a node count, ``percentageOfNodesToScore`` (0 is
upstream's adaptive "auto"), ``parallelism`` and how full the cluster is (``fill``: the
fraction of nodes that cannot fit the measured Pod, made of nodes too small for it, so a
90 %-full point costs seconds rather than minutes of filling). The grid varies one axis at a
time around a base point (5,000 nodes, auto, parallelism 16, empty) for each mix, with the
node count also crossed with fill; every fourth point is held out of the fit to validate it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubesched.config import names
from kubesched.scheduler.types import num_feasible_nodes_to_find
from kubesched.sim.costmodel import Attempt, dry_run_nodes

MIXES = ("default", "affinity", "spread", "preemption")
PLUGINS = {
    "affinity": frozenset({names.INTER_POD_AFFINITY}),
    "spread": frozenset({names.POD_TOPOLOGY_SPREAD}),
}
NODE_CPU_MILLI = 4000
SMALL_NODE_CPU_MILLI = 50
"""A "full" node: too little CPU for the measured 100m Pod (NodeResourcesFit rejects it)."""


@dataclass(frozen=True, slots=True)
class Point:
    """One grid point (one scheduler_perf workload)."""

    mix: str
    nodes: int
    percentage: int
    parallelism: int
    fill: float
    pods: int
    held_out: bool = False

    @property
    def name(self) -> str:
        pct = "auto" if self.percentage == 0 else str(self.percentage)
        return f"{self.mix}-n{self.nodes}-p{pct}-w{self.parallelism}-f{round(self.fill * 100)}"

    def label(self) -> dict[str, Any]:
        """The point as the calibration file lists it."""
        return {
            "mix": self.mix,
            "nodes": self.nodes,
            "percentageOfNodesToScore": self.percentage,
            "parallelism": self.parallelism,
            "fill": self.fill,
            "pods": self.pods,
        }

    def small_nodes(self) -> int:
        """Nodes made too small for the measured Pod: those whose index mod 10 is below
        ``fill * 10`` (the node template's rule), interleaved with the others."""
        below = round(self.fill * 10)
        return sum(1 for i in range(self.nodes) if i % 10 < below)

    def attempts(self) -> dict[str, Attempt]:
        """The mean work of this point's attempts, by upstream's ``result`` label."""
        n, to_find = self.nodes, num_feasible_nodes_to_find(self.percentage, self.nodes)
        plugins = PLUGINS.get(self.mix, frozenset())
        if self.mix == "preemption":
            # The k-th preemptor finds k nodes already holding a preemptor (no victims there).
            dry = sum(dry_run_nodes(n, k) for k in range(self.pods))
            return {
                "unschedulable": Attempt(n, n, 0, plugins, dry / self.pods, True),
                "scheduled": Attempt(n, 1, 0, plugins),  # the nominated node alone
            }
        big = n - self.small_nodes()
        filtered = scored = 0.0
        for k in range(self.pods):
            feasible = big - k if self.mix == "affinity" else big
            found = min(to_find, feasible)
            filtered += n if found < to_find else min(n, to_find * n / feasible)
            scored += found if found > 1 else 0
        return {"scheduled": Attempt(n, filtered / self.pods, scored / self.pods, plugins)}


def grid(size: str) -> list[Point]:
    """The points of grid ``small`` (a smoke run of about a minute) or ``full``."""
    if size == "small":
        smoke = [
            Point("default", 500, 0, 16, 0.0, 100),
            Point("default", 1000, 100, 1, 0.0, 100),
            Point("default", 1000, 0, 16, 0.9, 50),
            Point("spread", 500, 0, 16, 0.0, 100),
            Point("default", 1000, 50, 16, 0.0, 100),
        ]
        return [_hold(p, i == len(smoke) - 1) for i, p in enumerate(smoke)]
    if size != "full":
        raise ValueError(f"grid: want small or full, got {size!r}")
    pts: list[Point] = []
    for mix in ("default", "affinity", "spread"):
        pts += [Point(mix, n, 0, 16, 0.0, 300) for n in (500, 1000, 2000, 5000, 10000, 15000)]
        pts += [Point(mix, 5000, p, 16, 0.0, 300) for p in (10, 20, 50, 100)]
        pts += [Point(mix, 5000, 0, w, 0.0, 300) for w in (1, 2, 4, 32)]
        pts += [Point(mix, n, 0, 16, 0.9, 100) for n in (1000, 5000, 15000)]
        pts += [Point(mix, 5000, 50, 16, 0.9, 100)]
    pts += [Point("preemption", n, 0, 16, 0.0, 100) for n in (500, 1000, 2000)]
    pts += [Point("preemption", 1000, 0, 1, 0.0, 100)]
    return [_hold(p, i % 4 == 3) for i, p in enumerate(pts)]


def _hold(p: Point, held: bool) -> Point:
    return Point(p.mix, p.nodes, p.percentage, p.parallelism, p.fill, p.pods, held)


NODE_TEMPLATE = f"""apiVersion: v1
kind: Node
metadata:
  generateName: calib-
  labels:
    topology.kubernetes.io/zone: zone-{{{{ mod .Index 3 }}}}
status:
  capacity:
    pods: "110"
    cpu: {{{{ if lt (mod .Index 10) FILL }}}}"{SMALL_NODE_CPU_MILLI}m"{{{{ else }}}}"4"{{{{ end }}}}
    memory: 32Gi
  conditions:
  - type: Ready
    status: "True"
  phase: Running
"""


def _pod(name: str, cpu: str, extra: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": "500Mi"}
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10.2",
                "resources": {"requests": res, "limits": dict(res)},
            }
        ],
    }
    spec.update(extra or {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": name, **meta},
        "spec": spec,
    }


GREEN = {"matchLabels": {"color": "green"}}
POD_TEMPLATES: dict[str, dict[str, Any]] = {
    "default": _pod("pod-", "100m"),
    "affinity": _pod(
        "anti-",
        "100m",
        {
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": GREEN, "topologyKey": "kubernetes.io/hostname"}
                    ]
                }
            }
        },
        labels={"color": "green"},
    ),
    "spread": _pod(
        "spread-",
        "100m",
        {
            "topologySpreadConstraints": [
                {
                    "maxSkew": 5,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": GREEN,
                }
            ]
        },
        labels={"color": "green"},
    ),
    "victim": _pod("low-", "3500m"),
    "preemption": _pod("high-", "3970m", {"priority": 10000}),
}


def write_point(p: Point, folder: Path) -> Path:
    """Writes the scheduler_perf config (one case, one workload), its node and Pod templates
    and its KubeSchedulerConfiguration under ``folder``; returns the config's path."""
    folder.mkdir(parents=True, exist_ok=True)
    node = folder / f"node-f{round(p.fill * 10)}.yaml"
    node.write_text(NODE_TEMPLATE.replace("FILL", str(round(p.fill * 10))))
    for name, doc in POD_TEMPLATES.items():
        (folder / f"pod-{name}.yaml").write_text(yaml.safe_dump(doc))
    sched = folder / f"scheduler-p{p.percentage}-w{p.parallelism}.yaml"
    sched.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "parallelism": p.parallelism,
                "percentageOfNodesToScore": p.percentage,
            }
        )
    )
    ops: list[dict[str, Any]] = [
        {"opcode": "createNodes", "count": p.nodes, "nodeTemplatePath": node.name}
    ]
    if p.mix == "preemption":
        ops.append({"opcode": "createPods", "count": p.nodes, "podTemplatePath": "pod-victim.yaml"})
    ops.append(
        {
            "opcode": "createPods",
            "count": p.pods,
            "collectMetrics": True,
            "podTemplatePath": f"pod-{p.mix}.yaml",
        }
    )
    case = {
        "name": "Calibrate",
        "schedulerConfigPath": sched.name,
        "workloadTemplate": ops,
        "workloads": [{"name": p.name, "params": {}}],
    }
    path = folder / f"{p.name}.yaml"
    path.write_text(yaml.safe_dump([case], sort_keys=False))
    return path


def iter_points(points: list[Point], held_out: bool) -> Iterator[Point]:
    """The points held out of the fit (``held_out``) or fitted."""
    return (p for p in points if p.held_out == held_out)
