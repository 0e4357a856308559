"""The nominated-Pod set kept as arrays (:class:`kubesched.framework.nominated.NominatedSet`):
after any sequence of nominations, re-nominations and deletions it holds exactly the
nominator's Pods with their usage, and shifting a selection on and off leaves the node
table as it was."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework.nominated import UsageCache
from kubesched.queue.nominator import Nominator
from kubesched.state.cache import ClusterState
from kubesched.testing import make_node, make_pod

NODES = [f"n{i}" for i in range(4)]

OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "delete"]),
        st.integers(0, 7),  # which Pod
        st.sampled_from([*NODES, "gone"]),  # where ("gone": a node not in the table)
        st.integers(0, 3),  # priority
        st.integers(1, 4),  # cpu, in units of 100m
    ),
    max_size=30,
)


@settings(max_examples=80, deadline=None)
@given(OPS)
def test_set_matches_the_nominator_after_any_changes(
    ops: list[tuple[str, int, str, int, int]],
) -> None:
    cluster = ClusterState()
    for n in NODES:
        cluster.add_node(make_node(n).cap(cpu="8", memory="8Gi", pods=10).obj())
    table = cluster.nodes
    nominator = Nominator()
    cache = UsageCache()
    before = table.requested.copy()
    for op, i, node, prio, cpu in ops:
        if op == "add":
            pod = make_pod(f"p{i}").req(cpu=f"{cpu * 100}m").priority(prio).obj()
            nominator.add(pod, node)
        else:
            nominator.delete(f"default/p{i}")
        nset = cache.nominated(nominator, table)
        want = {
            p.key: (table.row_of[name], p.priority, p.requests["cpu"])
            for name in nominator.nominated_node_names()
            if name in table.row_of
            for p in nominator.nominated_pods_for_node(name)
        }
        got = {
            pod.key: (int(nset.rows[s]), int(nset.priority[s]), int(nset.block.requests[s, 0]))
            for s, pod in enumerate(nset.pods)
            if pod is not None and nset.alive[s]
        }
        assert got == want
        assert int(nset.alive.sum()) == len(want)
        low = make_pod("incoming").priority(1).obj()
        rows = np.asarray(sorted(table.row_of.values()), dtype=np.int64)
        picked = nset.select(low, rows)
        assert sorted(p.key for p in nset.pods_at(picked)) == sorted(
            k for k, (_, prio, _) in want.items() if prio >= 1
        )
        assert list(nset.rows[picked]) == sorted(nset.rows[picked])
        nset.block.shift(picked, 1)
        nset.block.shift(picked, -1)
        assert (table.requested == before).all()
