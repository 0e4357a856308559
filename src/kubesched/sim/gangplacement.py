"""Where gangs landed: GPUs left fragmented and racks, for comparing gang paths on racks.

A :class:`PlacementProbe` is installed on a simulated cluster before the run
(:func:`kubesched.sim.simulate.run_scenario`'s ``setup``).  It hears every bind (the node each
gang member was bound to) and samples the scheduler's cache every ``interval`` simulated
seconds while some Pod is pending (the moments a placement's leftovers matter):

- **fragmented GPUs**: on each node, the free GPUs a training member of ``member_gpus`` GPUs
  cannot use (``free mod member_gpus``: all of them on a node with fewer free than one
  member needs), summed over nodes, as a percentage of all GPUs; the FGD paper's measure for
  a workload of that one shape.  Resources held by members waiting at Permit count as used;
- **idle racks**: racks (values of the ``topology_key`` node label) with every GPU free,
  which a job needing a whole rack can still get;
- per gang whose members were all bound (``report``): how many racks its members span.

:meth:`PlacementProbe.report` is the run's ``gangPlacement``: ``fragmented`` (mean % over
the samples), ``idleRacks`` (mean), ``oneRackPercent`` (gangs within one rack),
``racksPerJob`` (mean), ``samples`` and ``jobs``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.admission import gang
from kubesched.api import objects as api
from kubesched.sim.driver import SimCluster

GPU = "nvidia.com/gpu"


def gang_of(pod: api.Pod) -> str:
    """The Pod's gang, either kind: ``ns/name`` of its Workload API group
    (``spec.schedulingGroup``) or of its Coscheduling PodGroup label; "" for none."""
    if pod.scheduling_group:
        return f"{pod.namespace}/{pod.scheduling_group}"
    return gang.group_key(pod)


@dataclass(slots=True)
class PlacementProbe:
    """Samples fragmentation and idle racks, and records where gang members were bound
    (see the module docstring)."""

    topology_key: str
    member_gpus: int
    until: float
    interval: float = 1.0
    sim: SimCluster | None = None
    members: dict[str, int] = field(default_factory=dict)
    """Gang -> its members (Pods seen created)."""
    nodes_of: dict[str, dict[str, str]] = field(default_factory=dict)
    """Gang -> member Pod key -> node it was bound to."""
    fragmented: list[float] = field(default_factory=list)
    idle_racks: list[int] = field(default_factory=list)

    def install(self, sim: SimCluster) -> None:
        """Hear binds and start sampling; call before the run starts."""
        self.sim = sim
        sim.api.on_bound.append(self._bound)
        sim.loop.call_at(0.0, self._tick, priority=3)

    def count(self, pods: list[api.Pod]) -> None:
        """The gangs' members, from the run's submitted Pods."""
        for p in pods:
            key = gang_of(p)
            if key:
                self.members[key] = self.members.get(key, 0) + 1

    def _bound(self, pod: api.Pod) -> None:
        key = gang_of(pod)
        if key and pod.node_name:
            self.nodes_of.setdefault(key, {})[pod.key] = pod.node_name

    def _tick(self) -> None:
        assert self.sim is not None
        sim = self.sim
        if any(not p.node_name for p in sim.api.pods.values()):
            self.sample()
        nxt = sim.loop.now + self.interval
        if nxt <= self.until:
            sim.loop.call_at(nxt, self._tick, priority=3)

    def sample(self) -> None:
        """One sample of the cache: fragmented GPU % and idle racks."""
        assert self.sim is not None
        t = self.sim.scheduler.cluster.nodes
        rows = np.flatnonzero(t.alive)
        alloc, used = t.resource_values(GPU, rows)  # (n,) each
        total = int(alloc.sum())
        if not total:
            return
        free = alloc - used
        stranded = np.where(free < self.member_gpus, free, free % self.member_gpus)
        self.fragmented.append(100.0 * float(stranded.sum()) / total)
        busy: dict[str, bool] = {}
        for row, a, f in zip(rows.tolist(), alloc.tolist(), free.tolist(), strict=True):
            node = self.sim.api.nodes.get(t.names[row])
            rack = node.labels.get(self.topology_key) if node is not None else None
            if rack is not None and a:
                busy[rack] = busy.get(rack, False) or f < a
        self.idle_racks.append(sum(1 for b in busy.values() if not b))

    def report(self) -> dict[str, Any]:
        """The run's ``gangPlacement`` (see the module docstring)."""
        assert self.sim is not None
        nodes = self.sim.api.nodes
        spans = []
        for key, bound in sorted(self.nodes_of.items()):
            if len(bound) < self.members.get(key, 0):
                continue
            racks = {
                nodes[n].labels.get(self.topology_key) if n in nodes else None
                for n in bound.values()
            }
            spans.append(len(racks))
        return {
            "fragmented": _mean(self.fragmented, 2),
            "idleRacks": _mean([float(x) for x in self.idle_racks], 2),
            "oneRackPercent": round(100.0 * spans.count(1) / len(spans), 1) if spans else None,
            "racksPerJob": _mean([float(x) for x in spans], 2),
            "samples": len(self.fragmented),
            "jobs": len(spans),
        }


def _mean(values: list[float], digits: int) -> float | None:
    return round(float(np.mean(values)), digits) if values else None
