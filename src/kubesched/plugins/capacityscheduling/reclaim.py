"""Victim selection for quota reclaim: scheduler-plugins' ``SelectVictimsOnNode``,
``PodEligibleToPreemptOthers`` and upstream's ``pickOneNodeForPreemption``.

Who may be a victim depends on the preemptor (upstream's three branches):

- ``own``: its quota would go over its ``min`` on some resource with the Pod
  (``usedOverMinWith``): only Pods of the same quota with lower priority;
- ``borrowers``: it stays within its ``min``: Pods of *other* quotas while those use more than
  their ``min`` on *some* resource (``usedOverMin``, re-read as victims are removed, so a
  quota stops giving victims once it is back within its ``min`` on every resource);
- ``unquoted``: no quota governs the Pod: lower-priority Pods no quota governs.

On each node the potential victims (least important first: lowest priority, then latest
start) are all removed; the node must then fit the Pod and the quota check
(``usedOverMaxWith`` / ``aggregatedUsedOverMinWith`` with the Pod's request) must pass.
Then victims are reprieved, most important first: one stays a victim when the Pod no longer
fits the node with it back, or when the quota check *with the nominated Pods* fails.  Among
nodes with a solution the winner is upstream's: lowest highest-priority victim, smallest sum
of ``priority + 2**31``, fewest victims, latest start of the highest-priority victims, then
the lowest node row.

Deviations: the node check is by resources and Pod slots only (upstream re-runs every Filter
plugin); nodes a Filter plugin rejected as UnschedulableAndUnresolvable are skipped as
upstream does; PodDisruptionBudgets are not consulted; where upstream's reprieve would remove
a victim twice (it fits neither the node nor the quota) and fail the node with an error, the
Pod is one victim.  This is the PostFilter path (rare, after a failed cycle): it loops over
the few nodes that host potential victims, never over all nodes on the filter/score path.
"""

from __future__ import annotations

import math
from collections.abc import Container

import numpy as np

from kubesched.admission import quota as qt
from kubesched.api import objects as api
from kubesched.state.cache import ClusterState, PodRecord
from kubesched.state.sparse import SparseRequest

Choice = tuple[str, list[PodRecord]]
PRIORITY_OFFSET = 2**31
"""Upstream adds ``MaxInt32 + 1`` to every victim priority before summing them."""
TERMINATING = "not eligible due to a terminating pod on the nominated node."

_Cand = tuple[PodRecord, int | None, qt.IntArray]


def mode(tree: qt.QuotaTree, q: int | None, vec: qt.IntArray, used: qt.IntArray) -> str:
    """``own``, ``borrowers`` or ``unquoted`` (see the module docstring); ``used`` counts the
    nominated Pods that count against the preemptor (upstream
    ``nominatedPodsReqInEQWithPodReq``)."""
    if q is None:
        return "unquoted"
    return "own" if tree.over_min_with(q, vec, used) else "borrowers"


def _start(pod: api.Pod) -> float:
    return math.inf if pod.start_time is None else pod.start_time


def _least_important_first(c: _Cand) -> tuple[int, float, str]:
    return (c[0].pod.priority, -_start(c[0].pod), c[0].pod.key)


def choose(
    tree: qt.QuotaTree,
    cluster: ClusterState,
    pod: api.Pod,
    q: int | None,
    vec: qt.IntArray,
    used: qt.IntArray,
    skip: Container[int] = (),
) -> Choice | None:
    """The node and victims that make room for ``pod`` of quota ``q`` (None: no quota), or
    None.  ``used``: usage with the nominated Pods that count against the Pod; ``skip``: node
    rows where preemption cannot help."""
    kind = mode(tree, q, vec, used)
    t = cluster.nodes
    need, sparse_need = t.split_request(pod.requests)
    by_node: dict[str, list[_Cand]] = {}
    for rec in cluster.pods.values():
        p = rec.pod
        if p.key == pod.key:
            continue
        vq = tree.quota_of(p)
        if kind == "unquoted":
            keep = vq is None and p.priority < pod.priority
        elif kind == "own":
            keep = vq == q and p.priority < pod.priority
        else:
            keep = vq is not None and vq != q
        if keep:
            v = tree.vector(p.requests) if vq is not None else np.zeros(0, dtype=np.int64)
            by_node.setdefault(rec.node, []).append((rec, vq, v))
    best: tuple[tuple[int, int, int, float, int], Choice] | None = None
    for node, cands in sorted(by_node.items()):
        row = t.row_of.get(node)
        if row is None or row in skip:
            continue
        found = _on_node(tree, cluster, row, (need, sparse_need), q, vec, used, cands)
        if not found:
            continue
        top = max(r.pod.priority for r in found)
        rank = (
            top,
            sum(r.pod.priority + PRIORITY_OFFSET for r in found),
            len(found),
            -min(_start(r.pod) for r in found if r.pod.priority == top),
            row,
        )
        if best is None or rank < best[0]:
            best = (rank, (node, found))
    return None if best is None else best[1]


def _on_node(
    tree: qt.QuotaTree,
    cluster: ClusterState,
    row: int,
    needs: tuple[qt.IntArray, SparseRequest],
    q: int | None,
    vec: qt.IntArray,
    used: qt.IntArray,
    cands: list[_Cand],
) -> list[PodRecord] | None:
    """Upstream ``SelectVictimsOnNode`` for one node: the victims, or None.  ``needs``: the
    Pod's dense request vector and its requests of sparse resources."""
    t = cluster.nodes
    need, sparse_need = needs
    free = t.allocatable[row] - t.requested[row]
    sparse_free: dict[str, int] = {}
    for name, _ in sparse_need:
        have, taken = t.resource_at(name, row)
        sparse_free[name] = have - taken
    slots = int(t.allowed_pods[row] - t.pod_count[row])
    raw = tree.used.copy()
    """The quotas' own usage (upstream's snapshot), as victims leave."""
    eff = used.copy()
    """The same with the nominated Pods that count against the preemptor."""

    def move(c: _Cand, sign: int) -> None:
        """Take ``c`` off the node (``sign`` +1) or put it back (-1)."""
        nonlocal free, slots
        rec, vq, v = c
        free = free + sign * _pad(rec.request, free.shape[0])
        for name, amount in rec.sparse:  # held sparse when the victim was accounted
            if name in sparse_free:
                sparse_free[name] += sign * amount
            elif name in t.resource_index:  # promoted to a dense column since
                free[t.resource_index[name]] += sign * amount
        slots += sign
        if vq is not None:
            path = tree.path(vq)
            raw[path] -= sign * v
            eff[path] -= sign * v

    def fits() -> bool:
        if any(sparse_free[name] < amount for name, amount in sparse_need):
            return False
        return bool((free[: need.shape[0]] >= need).all()) and slots >= 1

    potential: list[_Cand] = []
    for c in sorted(cands, key=_least_important_first):
        vq = c[1]
        if q is not None and vq is not None and vq != q and not tree.victim_eligible(vq, raw, q):
            continue
        potential.append(c)
        move(c, +1)
    if not potential or not fits():
        return None
    if q is not None and tree.check(q, vec, raw) is not None:
        return None
    victims: list[PodRecord] = []
    for c in sorted(potential, key=_least_important_first, reverse=True):
        move(c, -1)
        if not fits() or (q is not None and tree.check(q, vec, eff) is not None):
            move(c, +1)
            victims.append(c[0])
    return victims


def terminating_blocks(
    tree: qt.QuotaTree,
    cluster: ClusterState,
    pod: api.Pod,
    q: int | None,
    vec: qt.IntArray,
    used: qt.IntArray,
) -> bool:
    """Upstream ``PodEligibleToPreemptOthers`` (given a nominated node preemption can help
    on): a terminating Pod there whose room the Pod may take blocks preempting more -- of the
    same quota with lower priority; of another quota above its ``min`` when the Pod stays
    within its own; without a quota and lower priority when the Pod has none."""
    kind = mode(tree, q, vec, used)
    for key in cluster.pods_on_node.get(pod.nominated_node_name, ()):
        other = cluster.pods[key].pod
        if other.deletion_timestamp is None:
            continue
        vq = tree.quota_of(other)
        if q is None:
            if vq is None and other.priority < pod.priority:
                return True
        elif vq == q:
            if other.priority < pod.priority:
                return True
        elif vq is not None and kind == "borrowers" and tree.over_min(vq):
            return True
    return False


def _pad(vec: qt.IntArray, n: int) -> qt.IntArray:
    """A record's request vector padded to the node table's current width."""
    if vec.shape[0] >= n:
        return vec[:n]
    return np.concatenate([vec, np.zeros(n - vec.shape[0], dtype=np.int64)])
