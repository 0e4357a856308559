"""NodeResourcesFit's Filter and Score and BalancedAllocation's Score keep each row's answer
(:mod:`kubesched.state.rowmemo`): a plugin that has answered before gives what a new one
gives, whatever changed in between — Pods added and removed (one by one and in bulk), a
Node's allocatable updated, Nodes removed and added (their rows recycled), nominated Pods'
usage shifted onto rows for a Filter pass (answered while on them, and after it is taken
off again), preemption's victims lifted off in a block; with the table's journal of stamp
moves long enough, and so short that it mostly no longer reaches back to a key's last
call."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.config.featuregates import FeatureGates
from kubesched.framework import interface as fw
from kubesched.framework import nominated
from kubesched.kernels.usage import UsageBlock, usage_of
from kubesched.plugins import noderesources_balanced as balanced
from kubesched.plugins import noderesources_fit as fit
from kubesched.state.cache import ClusterState
from kubesched.state.journal import ChangeJournal
from kubesched.state.nodes import MOVES_KEPT
from kubesched.testing import make_cluster, make_node

_seq = itertools.count()


def _node(name: str, rng: np.random.Generator) -> api.Node:
    return (
        make_node(name)
        .res(
            {
                "cpu": f"{rng.integers(1, 40)}m",
                "memory": int(rng.integers(1, 40)),
                "pods": int(rng.integers(1, 6)),
            }
        )
        .obj()
    )


def _pod(rng: np.random.Generator, node: str = "") -> api.Pod:
    i = next(_seq)
    reqs = {"cpu": int(rng.integers(0, 12)), "memory": int(rng.integers(0, 12))}
    return api.Pod(name=f"p{i}", uid=f"u{i}", node_name=node, requests=reqs, nonzero_requests=reqs)


def _answers(
    plugins: tuple[object, object], cluster: ClusterState, pod: api.Pod, rows: np.ndarray
) -> tuple[object, ...]:
    """Fit's verdict (statuses per row), Fit's and Balanced's scores for ``rows``."""
    pl_fit, pl_bal = plugins
    state = fw.CycleState()
    assert isinstance(pl_fit, fit.NodeResourcesFit)
    assert isinstance(pl_bal, balanced.NodeResourcesBalancedAllocation)
    pl_fit.pre_filter(state, pod, cluster)
    v = pl_fit.filter(state, pod, cluster, rows)
    verdict = [None if c == 0 else v.table[int(c)] for c in v.codes]
    pl_fit.pre_score(state, pod, cluster, rows)
    out: tuple[object, ...] = (verdict, pl_fit.score(state, pod, cluster, rows).tolist())
    if pl_bal.pre_score(state, pod, cluster, rows).is_success():
        out += (pl_bal.score(state, pod, cluster, rows).tolist(),)
    return out


def _plugins(cluster: ClusterState, version: str) -> tuple[object, object]:
    handle = fw.Handle(cluster, feature_gates=FeatureGates(version))
    return fit.new(None, handle), balanced.new(None, handle)


@pytest.mark.parametrize("keep", [MOVES_KEPT, 6])
@pytest.mark.parametrize("version", ["1.34", "1.37"])
def test_kept_row_answers_equal_a_new_plugins(version: str, keep: int) -> None:
    rng = np.random.default_rng(36)
    names = [f"n{i}" for i in range(34)]
    nodes = [_node(n, rng) for n in names[:30]]
    bound = [_pod(rng, n.name) for n in nodes if rng.random() < 0.6]
    cluster = make_cluster(nodes, bound)
    table = cluster.nodes
    table.moves = ChangeJournal(keep)
    live = [n.name for n in nodes]
    kept = _plugins(cluster, version)
    templates = [_pod(rng) for _ in range(3)]  # a few Pod templates, asked again and again

    def check(pod: api.Pod) -> None:
        order = table.order()
        size = int(rng.integers(1, order.shape[0] + 1))  # one row, a few, many
        rows = rng.permutation(order)[:size]
        assert _answers(kept, cluster, pod, rows) == _answers(
            _plugins(cluster, version), cluster, pod, rows
        )

    for _ in range(300):
        pod = templates[int(rng.integers(len(templates)))]
        check(pod)
        what = rng.random()
        node = live[int(rng.integers(len(live)))]
        if what < 0.25:
            cluster.add_pod(_pod(rng, node))
        elif what < 0.3:
            cluster.add_bound_pods(
                [_pod(rng, live[int(rng.integers(len(live)))]) for _ in range(4)]
            )
        elif what < 0.4 and bound:
            cluster.remove_pod(bound.pop(int(rng.integers(len(bound)))).key)
        elif what < 0.48:
            cluster.update_node(_node(node, rng))
        elif what < 0.52 and len(live) > 20:  # its row is freed, and taken by the next Node
            cluster.remove_node(node)
            live.remove(node)
        elif what < 0.56 and len(live) < len(names):
            name = next(n for n in names if n not in live)
            cluster.add_node(_node(name, rng))
            live.append(name)
        elif what < 0.8:  # nominated Pods on a row for a Filter pass, then taken off
            row = table.row_of[node]
            usage = [usage_of(table, row, _pod(rng)) for _ in range(int(rng.integers(1, 3)))]
            nominated.shift_row(table, row, usage, 1)
            check(pod)
            nominated.shift_row(table, row, usage, -1)
        else:  # a dry run's victims lifted off their rows in a block, then put back
            placed = [cluster.pods[k] for k in list(cluster.pods)[:8]]
            block = UsageBlock(table, [usage_of(table, r.row, r.pod) for r in placed])
            block.shift(slice(None), -1)
            check(pod)
            block.shift(slice(None), 1)
