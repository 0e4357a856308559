"""Static failures: a Pod that every node rejects for reasons no Pod can change.

A Pod larger than every node's allocatable, or one whose selector no node matches, fails
every attempt with the same message until a node changes.  Upstream retries it (backoff,
requeue on cluster events), and so does kubesched: the attempts, their count, the message
and the queue's handling stay exactly as they are.  What this module saves is the Filter
pass over every node on each retry: when a failed attempt's outcome is *static*, the next
attempt of a Pod with the same result-reuse signature takes the kept outcome instead.

An outcome is static when, for every node, the plugin that rejected it first

- is ``node_only`` (its verdict depends on the node alone: NodeUnschedulable, NodeName,
  TaintToleration, NodeAffinity), or
- says so through ``static_rejections(state, pod, cluster, rows) -> bool (n,)``: True where
  its rejection, reasons included, does not depend on the Pods on any node as long as the
  node stays as full (``pod_count >= allowed_pods``) as it is (NodeResourcesFit: every
  requested resource exceeds the node's whole allocatable);

and every Filter plugin that ran on the node before it is ``node_only`` (a plugin whose pass
could turn into a rejection as Pods come and go would change the first rejector).

Only a pass over every node is kept and reused (a parallel shard's first pass over its own
partition is neither).  The kept outcome is valid while the node table's ``version`` (nodes
added, updated or removed: allocatable, labels, taints) and each node's fullness are what
they were, no Pod is nominated anywhere (nominated Pods count on their nodes in Filter), and
the Pod itself is not nominated.  PreFilter and PostFilter still run on every attempt, so a
reuse is exactly the attempt the full path would make; the Filter plugins' evaluation counts
are added as the full path would have counted them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.framework.interface import CycleState
from kubesched.framework.outcomes import FilterOutcome
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import NodeTable

if TYPE_CHECKING:
    from kubesched.framework.runtime import Framework

MAX_ENTRIES = 64
"""Static outcomes kept at most (then all are dropped and rebuilt as Pods fail again)."""


@dataclass(slots=True)
class StaticFailure:
    """A kept static outcome and what it is valid for."""

    table_version: int
    full: npt.NDArray[np.bool_]
    """``pod_count >= allowed_pods`` per node-table row when the outcome was found."""
    outcome: FilterOutcome
    reason_counts: Counter[str]
    plugins: frozenset[str]
    evaluations: dict[tuple[str, str], int]
    """What the full Filter pass added to ``Framework.evaluations``."""


class StaticFailures:
    """Static outcomes by ``(profile, signature)``; ``hits`` counts reuses."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.entries: dict[tuple[str, Hashable], StaticFailure] = {}
        self.hits = 0

    def lookup(
        self, profile: str, signature: Hashable, cluster: ClusterState
    ) -> StaticFailure | None:
        """The kept outcome for ``signature``, if it is still valid (see module docstring)."""
        entry = self.entries.get((profile, signature))
        if entry is None:
            return None
        table = cluster.nodes
        if entry.table_version != table.version or not np.array_equal(entry.full, _full(table)):
            del self.entries[(profile, signature)]
            return None
        self.hits += 1
        return entry

    def store(
        self,
        fwk: Framework,
        state: CycleState,
        pod: api.Pod,
        signature: Hashable,
        outcome: FilterOutcome,
        evaluations: dict[tuple[str, str], int],
    ) -> None:
        """Keep ``outcome`` (every node failed) if it is static; ``evaluations`` is what the
        Filter pass added to ``fwk.evaluations``."""
        cluster = fwk.handle.cluster
        if not _static(fwk, state, pod, cluster, outcome):
            return
        if len(self.entries) >= MAX_ENTRIES:
            self.entries.clear()
        self.entries[(fwk.profile_name, signature)] = StaticFailure(
            cluster.nodes.version,
            _full(cluster.nodes),
            outcome,
            outcome.reason_counts(),
            frozenset(outcome.rejecting_plugins()),
            evaluations,
        )


def _full(table: NodeTable) -> npt.NDArray[np.bool_]:
    """Whether each row holds as many Pods as it allows (bool, shape ``(capacity,)``)."""
    return np.asarray(table.pod_count >= table.allowed_pods)


def _static(
    fwk: Framework, state: CycleState, pod: api.Pod, cluster: ClusterState, outcome: FilterOutcome
) -> bool:
    """Whether every failed row's first rejection is static (module docstring)."""
    ran = [p for p in fwk.filter_plugins if p.name not in state.skip_filter]
    can = fwk.capabilities
    position = {p.name: i for i, p in enumerate(ran)}
    for sid, status in enumerate(outcome.statuses):
        rows = outcome.failed[outcome.failed_status == sid]
        if rows.size == 0:
            continue
        at = position.get(status.plugin)
        if at is None or not all(p.name in can.node_only for p in ran[:at]):
            return False
        plugin = ran[at]
        if plugin.name in can.node_only:
            continue
        if plugin.name not in can.static_rejections or not bool(
            np.all(plugin.static_rejections(state, pod, cluster, rows))
        ):
            return False
    return True
