"""The one-node fast paths (used by result reuse: ``filter_one`` / ``score_one`` and the
one-row arrays) agree with the vectorised kernels."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.config import args as cfg
from kubesched.framework.interface import CycleState, Handle
from kubesched.plugins import noderesources_balanced, noderesources_fit
from kubesched.testing import make_cluster, make_node, make_pod

NODE = st.tuples(
    st.integers(1, 64_000), st.integers(1, 2**36), st.integers(0, 40_000), st.integers(0, 2**35)
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(NODE, min_size=1, max_size=8),
    st.integers(0, 8000),
    st.integers(0, 2**33),
    st.sampled_from([cfg.LEAST_ALLOCATED, cfg.MOST_ALLOCATED]),
)
def test_one_row_equals_the_vectorised_answer(
    nodes: list[tuple[int, int, int, int]], cpu: int, mem: int, strategy: str
) -> None:
    built = [
        make_node(f"n{i}").res({"cpu": f"{c}m", "memory": m, "pods": 110}).obj()
        for i, (c, m, _, _) in enumerate(nodes)
    ]
    bound = [
        make_pod(f"b{i}").res({"cpu": f"{u}m", "memory": v}).node(f"n{i}").obj()
        for i, (_, _, u, v) in enumerate(nodes)
    ]
    cluster = make_cluster(built, bound)
    pod = make_pod("p").res({"cpu": f"{cpu}m", "memory": mem}).obj()
    args = cfg.NodeResourcesFitArgs(scoring_strategy=cfg.ScoringStrategy(type=strategy))
    fit = noderesources_fit.new(args, Handle(cluster))
    bal = noderesources_balanced.new(None, Handle(cluster))
    rows = cluster.nodes.order()
    state = CycleState()
    fit.pre_filter(state, pod, cluster)
    fit.pre_score(state, pod, cluster, rows)
    bal.pre_score(state, pod, cluster, rows)
    all_codes = fit.filter(state, pod, cluster, rows).codes
    all_fit = fit.score(state, pod, cluster, rows)
    all_bal = bal.score(state, pod, cluster, rows)
    for i, row in enumerate(rows.tolist()):
        one = np.asarray([row], dtype=np.int64)
        assert (fit.filter(state, pod, cluster, one).codes[0] == 0) == (all_codes[i] == 0)
        assert int(fit.score(state, pod, cluster, one)[0]) == int(all_fit[i])
        assert int(bal.score(state, pod, cluster, one)[0]) == int(all_bal[i])
        # Result reuse's hooks: True only where the node passes; scores as the kernels.
        assert fit.filter_one(state, pod, cluster, row) in (
            (True,) if all_codes[i] == 0 else (None,)
        )
        assert fit.score_one(state, pod, cluster, row) == int(all_fit[i])
        # None (``score`` answers) only for a best-effort Pod, which PreScore skipped.
        want_bal = int(all_bal[i]) if cpu or mem else None
        assert bal.score_one(state, pod, cluster, row) == want_bal
