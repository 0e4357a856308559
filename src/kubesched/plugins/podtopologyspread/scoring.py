"""PreScore, Score and NormalizeScore of PodTopologySpread (upstream ``scoring.go``).

PreScore (soft, ``ScheduleAnyway`` constraints, or the default constraints) looks at the
*filtered* nodes: nodes missing a topology key are ignored (score 0) unless the constraints
are the system defaults, and each constraint gets the weight ``log(size + 2)`` where ``size``
is the number of its domains among those nodes (for ``kubernetes.io/hostname``: the number of
non-ignored nodes).  Matching Pods are counted per domain over *all* nodes passing the
inclusion policies (hostname constraints count the node's own Pods at Score).

Score per node is ``round(sum(count * weight + maxSkew - 1))`` over the constraints whose key
the node has, in float64 like Go, then Go's ``math.Round`` (half away from zero).
NormalizeScore maps the non-ignored scores to ``100 * (max + min - s) / max`` (integer
division), 100 each when ``max`` is 0, and ignored nodes to 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.framework.interface import MAX_NODE_SCORE
from kubesched.plugins.podtopologyspread import args as a
from kubesched.plugins.podtopologyspread import domains, inclusion
from kubesched.plugins.podtopologyspread.constraints import Constraint
from kubesched.plugins.podtopologyspread.counts import MatchCounts
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import BoolArray, IntArray

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class SoftConstraint:
    """One soft constraint with its PreScore data.

    ``column`` : int32 ``(capacity,)`` label codes; ``empty`` : domain index of nodes without
    the label; ``weight`` : ``log(size + 2)``; ``domain_counts`` : int64 ``(size,)``
    matching Pods per domain index; ``node_counts`` : int64 ``(capacity,)`` per node row.
    """

    constraint: Constraint
    column: npt.NDArray[np.int32]
    empty: int
    hostname: bool
    weight: float
    domain_counts: IntArray
    node_counts: IntArray


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """What PreScore computed; ``keys`` are the topology keys nodes must all have when
    ``require_all_keys`` (otherwise a node is never ignored)."""

    constraints: tuple[SoftConstraint, ...]
    keys: tuple[str, ...]
    require_all_keys: bool

    def ignored(self, cluster: ClusterState, rows: IntArray) -> BoolArray:
        """bool ``(n,)``: rows that are not scored (missing some topology key)."""
        if not self.require_all_keys:
            return np.zeros(rows.shape[0], dtype=np.bool_)
        return ~inclusion.keys_present(cluster.nodes, self.keys, rows)


def topology_normalizing_weight(size: int) -> float:
    """Upstream ``topologyNormalizingWeight``: ``log(size + 2)``."""
    return math.log(float(size + 2))


def compute_pre_score_state(
    cluster: ClusterState,
    store: MatchCounts,
    pod: api.Pod,
    constraints: Sequence[Constraint],
    rows: IntArray,
    require_all_keys: bool,
    comparison: bool = False,
) -> PreScoreState:
    """Upstream ``initPreScoreState`` over the filtered ``rows`` plus the all-node counts
    (``comparison``: the gate TaintTolerationComparisonOperators)."""
    keys = tuple(dict.fromkeys(c.topology_key for c in constraints))
    state = PreScoreState((), keys, require_all_keys)
    kept = rows[~state.ignored(cluster, rows)]
    groups = domains.node_groups(cluster, store, pod, constraints, require_all_keys, comparison)
    soft = []
    for c, group in zip(constraints, groups, strict=True):
        column, empty, size = domains.domain_index(cluster, c.topology_key)
        node_counts = store.node_counts(cluster, pod.namespace, c.selector)
        hostname = c.topology_key == a.LABEL_HOSTNAME
        if hostname:
            topo_size = int(kept.shape[0])
            counts = np.zeros(0, dtype=np.int64)
        else:
            seen = np.bincount(domains.as_domains(column, empty, kept), minlength=size)
            topo_size = int(np.count_nonzero(seen))
            counts = group.domain_counts(store, cluster, pod.namespace, c.selector).copy()
        weight = topology_normalizing_weight(topo_size)
        soft.append(SoftConstraint(c, column, empty, hostname, weight, counts, node_counts))
    return PreScoreState(tuple(soft), keys, require_all_keys)


def go_round(x: FloatArray) -> IntArray:
    """Go's ``math.Round`` (half away from zero) then ``int64``, elementwise."""
    t = np.trunc(x)
    up = np.abs(x - t) >= 0.5
    return np.asarray(t + np.where(up, np.sign(x), 0.0), dtype=np.float64).astype(np.int64)


def raw_scores(state: PreScoreState, rows: IntArray) -> FloatArray:
    """float64 ``(n,)``: the summed per-constraint scores before rounding (ignored rows too)."""
    total = np.zeros(rows.shape[0], dtype=np.float64)
    for sc in state.constraints:
        label = sc.column[rows]
        has = label >= 0
        if sc.hostname:
            cnt = sc.node_counts[rows]
        else:
            cnt = sc.domain_counts[np.where(has, label, sc.empty)]
        term = cnt.astype(np.float64) * sc.weight + float(sc.constraint.max_skew - 1)
        total += np.where(has, term, 0.0)
    return total


def normalize(scores: IntArray, ignored: BoolArray) -> None:
    """Upstream NormalizeScore in place on int64 ``scores`` ``(n,)``; ``ignored`` -> 0."""
    valid = ~ignored
    if not valid.any():
        scores[:] = 0
        return
    kept = scores[valid]
    min_score = int(kept.min())
    max_score = max(int(kept.max()), 0)
    if max_score == 0:
        scores[valid] = MAX_NODE_SCORE
    else:
        scores[valid] = MAX_NODE_SCORE * (max_score + min_score - kept) // max_score
    scores[ignored] = 0
