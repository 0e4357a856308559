"""Every change of a node row is listed in the table's ``moves`` journal: kept per-row
answers (:mod:`kubesched.state.rowmemo`) are dropped by it, so a change that is not
journalled would leave a stale answer in use.  A row's change is read from the row itself:
its ``generation`` and the Pod usage a row-local kernel reads (requests, non-zero
requests, Pod count).  Each kind of change is made at random — Nodes added, updated,
removed (their rows recycled), Pods added one by one and in bulk, removed, assumed and
forgotten, nominated Pods' usage shifted onto a row and off again, preemption victims
lifted off in a block — and after each one (and while a shift is on) the rows that changed
must be among the rows the journal lists since before it."""

from __future__ import annotations

import itertools

import numpy as np

from kubesched.api import objects as api
from kubesched.framework import nominated
from kubesched.kernels.usage import UsageBlock, usage_of
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import MOVES_KEPT, NodeTable
from kubesched.testing import make_cluster, make_node

_seq = itertools.count()


def _node(name: str, rng: np.random.Generator) -> api.Node:
    res = {"cpu": f"{rng.integers(1, 40)}m", "memory": int(rng.integers(1, 40)), "pods": 9}
    return make_node(name).res(res).obj()


def _pod(rng: np.random.Generator, node: str = "") -> api.Pod:
    i = next(_seq)
    reqs = {"cpu": int(rng.integers(0, 12)), "memory": int(rng.integers(0, 12))}
    return api.Pod(name=f"p{i}", uid=f"u{i}", node_name=node, requests=reqs, nonzero_requests=reqs)


Stamps = tuple[np.ndarray, ...]


def _stamps(table: NodeTable) -> Stamps:
    """Each row's generation, requests, non-zero requests and Pod count (copies)."""
    cols = (table.generation, table.requested, table.nonzero_requested, table.pod_count)
    return tuple(c.reshape(c.shape[0], -1).copy() for c in cols)


def _moved(before: Stamps, table: NodeTable) -> set[int]:
    moved: set[int] = set()
    for old, new in zip(before, _stamps(table), strict=True):
        was = np.zeros_like(new)
        was[: old.shape[0], : old.shape[1]] = old  # rows and columns the table grew by
        moved.update(int(r) for r in np.flatnonzero((new != was).any(axis=1)))
    return moved


def test_every_stamp_move_is_journalled() -> None:
    rng = np.random.default_rng(37)
    names = [f"n{i}" for i in range(12)]
    cluster: ClusterState = make_cluster([_node(n, rng) for n in names[:8]])
    table = cluster.nodes
    live = set(names[:8])
    placed: list[str] = []
    kinds: set[str] = set()
    for _ in range(600):
        before, version = _stamps(table), table.moves.version
        what = rng.random()
        node = sorted(live)[int(rng.integers(len(live)))]
        if what < 0.08 and len(live) < len(names):
            name = sorted(set(names) - live)[0]
            cluster.add_node(_node(name, rng))
            live.add(name)
            kind = "add node"
        elif what < 0.14 and len(live) > 3:
            cluster.remove_node(node)
            live.discard(node)
            placed = [k for k in placed if k in cluster.pods]
            kind = "remove node"
        elif what < 0.22:
            cluster.update_node(_node(node, rng))
            kind = "update node"
        elif what < 0.36:
            pod = _pod(rng, node)
            cluster.add_pod(pod)
            placed.append(pod.key)
            kind = "add pod"
        elif what < 0.44:
            pods = [_pod(rng, sorted(live)[int(rng.integers(len(live)))]) for _ in range(5)]
            cluster.add_bound_pods(pods)
            placed.extend(p.key for p in pods)
            kind = "add pods in bulk"
        elif what < 0.54 and placed:
            key = placed.pop(int(rng.integers(len(placed))))
            cluster.remove_pod(key)
            kind = "remove pod"
        elif what < 0.64:
            pod = _pod(rng)
            cluster.assume_pod(pod.bound_to(node), node)
            if rng.random() < 0.5:
                cluster.forget_pod(cluster.pods[pod.key].pod)
            else:
                placed.append(pod.key)
            kind = "assume"
        elif what < 0.82:
            row = table.row_of[node]
            usage = [usage_of(table, row, _pod(rng)) for _ in range(int(rng.integers(1, 3)))]
            nominated.shift_row(table, row, usage, 1)
            assert _moved(before, table) <= set(table.moves.since(version) or ())
            kinds.add("nominated shift")  # moved the row while on (its Pod count)
            nominated.shift_row(table, row, usage, -1)
            kind = "nominated shift"
        else:
            recs = [cluster.pods[k] for k in placed if k in cluster.pods][:6]
            if not recs:
                continue
            block = UsageBlock(table, [usage_of(table, r.row, r.pod) for r in recs])
            block.shift(slice(None), -1)
            assert _moved(before, table) <= set(table.moves.since(version) or ())
            kinds.add("victims block")  # moved the rows while off (their Pod counts)
            block.shift(slice(None), 1)
            kind = "victims block"
        moved = _moved(before, table)
        listed = table.moves.since(version)
        assert listed is not None
        assert moved <= set(listed), kind
        if moved:
            kinds.add(kind)
    # every kind of change moved some row (and the journal listed it)
    assert len(kinds) == 9, ",".join(sorted(kinds))


def test_the_journal_says_when_it_no_longer_reaches_back() -> None:
    rng = np.random.default_rng(3)
    cluster = make_cluster([_node("a", rng)])
    table = cluster.nodes
    version = table.moves.version
    for _ in range(3 * MOVES_KEPT):
        cluster.add_pod(_pod(rng, "a"))
    assert table.moves.since(version) is None
