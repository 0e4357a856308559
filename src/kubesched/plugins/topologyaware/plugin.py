"""TopologyPlacementGenerator: one placement per value of a PodGroup's topology label.

Upstream ``pkg/scheduler/framework/plugins/topologyaware`` (v1.37.2, gate
TopologyAwareWorkloadScheduling; no args).  For a PodGroup with
``schedulingConstraints.topology[0].key`` (a rack label, say), the PodGroup scheduling cycle
tries the group on each domain's nodes in turn (:mod:`kubesched.scheduler.podgroup`); a
group without a constraint gets the one placement of the nodes it is given (every node, or
its parent's placement in a composite tree).  A CompositePodGroup's constraint (v1.37, gate
CompositePodGroup) is read the same way: its children are tried inside each of its
placements (:mod:`kubesched.scheduler.podgroup_tree`), and the members scheduled under it
(every PodGroup of its subtree) pin it.  Members already scheduled
pin the group to their domain (``cannot determine domain for already scheduled pods: ...``
when they span two or sit on a node without the label), and a tree too deep under it fails
the walk for them (``exceeded maximum hierarchy depth at ...``,
:meth:`~kubesched.framework.podgroups.PodGroupManager.too_deep`).  Nodes without the label
are in no placement.

Upstream collects the domains in a Go map, so the placements' order is random (it decides
which failure the group reports, ``first placement status``, which of equally scored
placements wins, and under OpportunisticBatching whose node list the next Pod's hint comes
from); here they are in the order the nodes list them, the order Go's walk of a map of up to
eight domains takes most often (it starts at a random one of eight slots: insertion order
unless it starts among the k domains' slots after the first, (9 - k) / 8 of walks;
``docs/fidelity.md``).
"""

from __future__ import annotations

import numpy as np

from kubesched.config import names
from kubesched.framework import interface as fw
from kubesched.framework.podgroups import COMPOSITE, Placement, PodGroupManager, manager_of

NAME = names.TOPOLOGY_PLACEMENT_GENERATOR


class TopologyPlacementGenerator:
    """PlacementGenerate by topology domain (see the module docstring)."""

    name = NAME

    def __init__(self, args: object | None, handle: fw.Handle) -> None:
        del args
        self.cluster = handle.cluster
        self.manager: PodGroupManager = manager_of(handle)

    def generate_placements(self, key: str, rows: fw.IntArray) -> tuple[list[Placement], fw.Status]:
        """Upstream ``GeneratePlacements`` over the nodes ``rows`` (the parent placement's)
        for group ``key``, a PodGroup's or a ``composite:`` key."""
        manager = self.manager
        policy = manager.group_policy(key) if key.startswith(COMPOSITE) else manager.policy(key)
        if policy is None or not policy.topology_keys:
            return [Placement("", rows)], fw.SUCCESS
        topology = policy.topology_keys[0]
        deep = manager.too_deep(key)
        if deep is not None:  # upstream's GetPodGroupStates refuses the walk
            return [], fw.error(deep)
        required: str | None = None
        for pod_key in sorted(manager.scheduled_under(key)):
            rec = self.cluster.pods.get(pod_key)
            node = self.cluster.node(rec.node) if rec is not None else None
            domain = node.labels.get(topology) if node is not None else None
            if domain is None:
                why = f"no topology domain found for pod {pod_key}"
            elif required is not None and required != domain:
                why = f"more than 1 domain found for pod group: {required}, {domain}"
            else:
                required = domain
                continue
            return [], fw.error(f"cannot determine domain for already scheduled pods: {why}")
        table = self.cluster.nodes
        per_domain: dict[str, list[int]] = {}
        for row in rows.tolist():
            domain = table.nodes[row].labels.get(topology)
            if domain is not None and (required is None or domain == required):
                per_domain.setdefault(domain, []).append(row)
        placements = [
            Placement(domain, np.asarray(got, dtype=np.int64)) for domain, got in per_domain.items()
        ]
        return placements, fw.SUCCESS


def new(args: object | None, handle: fw.Handle) -> TopologyPlacementGenerator:
    """Factory (no args type upstream)."""
    return TopologyPlacementGenerator(args, handle)
