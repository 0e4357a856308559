"""Victim selection for quota reclaim (CapacityScheduling's ``SelectVictimsOnNode`` and
``pickOneNodeForPreemption``, by resources).

For each node hosting an eligible Pod: take eligible Pods lowest priority first until the
preemptor fits the node's free resources *and* its quota tree check passes with those Pods
gone; then reprieve victims, highest priority first, while both still hold.  Eligibility is
re-checked as victims are taken, so a borrower is never taken below its ``min``
(:meth:`~kubesched.admission.quota.QuotaTree.victim_allowed`).  Among nodes with a solution
the one whose most important victim has the lowest priority wins, then the smallest sum of
priorities, the fewest victims, the lowest node row.

This is the PostFilter path (rare, after a failed cycle): it loops over the few nodes that
host eligible Pods and their Pods, never over all nodes on the filter/score path.
"""

from __future__ import annotations

import numpy as np

from kubesched.admission import quota as qt
from kubesched.api import objects as api
from kubesched.state.cache import ClusterState, PodRecord

Choice = tuple[str, list[PodRecord]]


def _eligible_kind(tree: qt.QuotaTree, q: int, vec: qt.IntArray, used: qt.IntArray) -> str:
    """``own``: only lower-priority Pods of the same quota (the Pod is beyond its min);
    ``borrowers``: Pods of quotas above their min."""
    return "own" if tree.over_min_with(q, vec, used) else "borrowers"


def choose(
    tree: qt.QuotaTree,
    cluster: ClusterState,
    pod: api.Pod,
    q: int,
    vec: qt.IntArray,
    used: qt.IntArray,
) -> Choice | None:
    """The node and victims that make room for ``pod`` of quota ``q``, or None."""
    kind = _eligible_kind(tree, q, vec, used)
    t = cluster.nodes
    need = t.request_vector(pod.requests)
    by_node: dict[str, list[tuple[PodRecord, int, qt.IntArray]]] = {}
    for rec in cluster.pods.values():
        vq = tree.quota_of(rec.pod)
        if vq is None or rec.pod.key == pod.key:
            continue
        if kind == "own" and (vq != q or rec.pod.priority >= pod.priority):
            continue
        if kind == "borrowers" and vq == q:
            continue
        by_node.setdefault(rec.node, []).append((rec, vq, tree.vector(rec.pod.requests)))
    best: tuple[tuple[int, int, int, int], Choice] | None = None
    for node, cands in sorted(by_node.items()):
        row = t.row_of.get(node)
        if row is None:
            continue
        found = _on_node(tree, cluster, row, need, q, vec, used, cands, kind)
        if found is None:
            continue
        prios = [r.pod.priority for r in found]
        rank = (max(prios), sum(prios), len(found), row)
        if best is None or rank < best[0]:
            best = (rank, (node, found))
    return None if best is None else best[1]


def _on_node(
    tree: qt.QuotaTree,
    cluster: ClusterState,
    row: int,
    need: qt.IntArray,
    q: int,
    vec: qt.IntArray,
    used: qt.IntArray,
    cands: list[tuple[PodRecord, int, qt.IntArray]],
    kind: str,
) -> list[PodRecord] | None:
    t = cluster.nodes
    free = t.allocatable[row] - t.requested[row]
    slots = int(t.allowed_pods[row] - t.pod_count[row])
    used = used.copy()
    taken: list[tuple[PodRecord, int, qt.IntArray]] = []

    def ok() -> bool:
        fits = bool((free[: need.shape[0]] >= need).all()) and slots >= 1
        return fits and tree.check(q, vec, used) is None

    for item in sorted(cands, key=lambda c: (c[0].pod.priority, c[0].pod.key)):
        if ok():
            break
        rec, vq, vvec = item
        if kind == "borrowers" and not tree.victim_allowed(vq, vvec, used, q):
            continue
        taken.append(item)
        free = free + _pad(rec.request, free.shape[0])
        slots += 1
        used[tree.path(vq)] -= vvec
    if not taken or not ok():
        return None
    for item in sorted(taken, key=lambda c: (-c[0].pod.priority, c[0].pod.key)):
        rec, vq, vvec = item
        free = free - _pad(rec.request, free.shape[0])
        slots -= 1
        used[tree.path(vq)] += vvec
        if ok():
            taken.remove(item)
            continue
        free = free + _pad(rec.request, free.shape[0])
        slots += 1
        used[tree.path(vq)] -= vvec
    return [rec for rec, _vq, _v in taken]


def _pad(vec: qt.IntArray, n: int) -> qt.IntArray:
    """A record's request vector padded to the node table's current width."""
    if vec.shape[0] >= n:
        return vec[:n]
    return np.concatenate([vec, np.zeros(n - vec.shape[0], dtype=np.int64)])
