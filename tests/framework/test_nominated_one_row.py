"""Filter with nominated Pods over one row (preemption's kept failed pass and re-filters):
the one-row path, which adds the nominated Pods' usage read from the nominator to that row
alone, answers each node exactly as the pass over all nodes (through the nominated set)
does, and leaves the node table as it was."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import objects as api
from kubesched.framework.interface import CycleState
from kubesched.framework.outcomes import FilterOutcome
from kubesched.testing import make_node, make_pod
from tests.plugins._defaultpreemption import framework, scheduler

GPU = "example.com/gpu"
NODES = [f"n{i}" for i in range(3)]

PODS = st.lists(
    st.tuples(
        st.sampled_from(NODES),
        st.integers(0, 3),  # priority
        st.integers(1, 5),  # cpu, in units of 100m
        st.booleans(),  # host port 80
        st.integers(0, 1),  # gpus
    ),
    max_size=6,
)


def _pod(name: str, prio: int, cpu: int, port: bool, gpu: int, node: str = "") -> api.Pod:
    b = make_pod(name).res({"cpu": f"{cpu * 100}m", "memory": "100"}).priority(prio)
    if gpu:
        b = b.res({GPU: gpu})
    if port:
        b = b.host_port(80)
    if node:
        b = b.node(node)
    return b.obj()


def _verdicts(out: FilterOutcome) -> dict[int, object]:
    got: dict[int, object] = dict.fromkeys(out.feasible.tolist(), "fits")
    for row, sid in zip(out.failed.tolist(), out.failed_status.tolist(), strict=True):
        got[row] = out.statuses[sid]
    return got


@settings(max_examples=150, deadline=None)
@given(
    running=PODS,
    nominated=PODS,
    incoming=st.tuples(st.integers(0, 3), st.integers(1, 5), st.booleans(), st.integers(0, 1)),
    self_nominated=st.booleans(),
)
def test_one_row_answers_as_the_pass_over_every_node(
    running: list[tuple[str, int, int, bool, int]],
    nominated: list[tuple[str, int, int, bool, int]],
    incoming: tuple[int, int, bool, int],
    self_nominated: bool,
) -> None:
    nodes = [
        make_node(n).res({"cpu": "1", "memory": "1000", "pods": 4, GPU: 1 + i % 2}).obj()
        for i, n in enumerate(NODES)
    ]
    bound = [_pod(f"r{i}", p, c, h, g, node=n) for i, (n, p, c, h, g) in enumerate(running)]
    s, _ = scheduler(nodes, bound)
    fwk = framework(s)
    nom = s.queue.nominator
    for i, (n, p, c, h, g) in enumerate(nominated):
        nom.add(_pod(f"m{i}", p, c, h, g), n)
    pod = _pod("incoming", *incoming)
    if self_nominated:
        nom.add(pod, NODES[0])
    table = s.cluster.nodes
    rows = np.asarray([table.row_of[n] for n in NODES], dtype=np.int64)
    before = (
        table.requested.copy(),
        table.nonzero_requested.copy(),
        table.pod_count.copy(),
        table.generation.copy(),
        {k: v.copy() for k, v in table.host_ports.items()},
    )
    state = CycleState()
    _, status, _ = fwk.run_pre_filter(state, pod)
    assert status.is_success(), status
    full = _verdicts(fwk.run_filter_with_nominated(state, pod, rows))
    for row in rows.tolist():
        one = fwk.run_filter_with_nominated(state, pod, np.asarray([row], dtype=np.int64))
        assert one.processed == 1
        assert _verdicts(one) == {row: full[row]}
    assert (table.requested == before[0]).all()
    assert (table.nonzero_requested == before[1]).all()
    assert (table.pod_count == before[2]).all()
    assert (table.generation == before[3]).all()
    assert all((table.host_ports[k] == v).all() for k, v in before[4].items())
