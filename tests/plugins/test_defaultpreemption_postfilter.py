"""DefaultPreemption PostFilter: upstream ``TestPostFilter`` and
``TestPodEligibleToPreemptOthers`` as data, plus args and the factory."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.framework.interface import Code
from kubesched.plugins import defaultpreemption
from kubesched.plugins.defaultpreemption.plugin import (
    DefaultPreemptionArgs,
    fit_error_message,
    terminating_by_preemption,
)
from tests.plugins._defaultpreemption import (
    HIGH,
    LARGE,
    LOW,
    MID,
    VERY_HIGH,
    diagnosis,
    node,
    pdb_obj,
    plugin,
    pod,
    prefiltered,
    scheduler,
)

U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
ONE_POD: dict[str, str] = {}
NODE_RES = {"cpu": "200m", "memory": "400"}
VIOLATING = {"test.kubernetes.io/is-violating-pdb": "violating"}
NON_VIOLATING = {"test.kubernetes.io/is-violating-pdb": "non-violating"}


@dataclass
class Case:
    name: str
    preemptor: api.Pod
    pods: list[api.Pod]
    nodes: list[api.Node]
    statuses: dict[str, Code]
    want_node: str | None  # None: no PostFilterResult; "" clears the nomination
    want_code: Code
    want_message: str = ""
    pdbs: list[dict[str, Any]] = field(default_factory=list)
    absent: Code | None = None


def one_pod_node(name: str) -> api.Node:
    return node(name, ONE_POD, pods=1)


CASES = [
    Case(
        "pod with higher priority can be made schedulable",
        pod("p", HIGH),
        [pod("p1", node="node1")],
        [one_pod_node("node1")],
        {"node1": U},
        "node1",
        Code.SUCCESS,
        "preemption: found a potential placement for pod on node node1, preempting 1 victims",
    ),
    Case(
        "pod with tied priority is still unschedulable",
        pod("p"),
        [pod("p1", node="node1")],
        [one_pod_node("node1")],
        {"node1": U},
        "",
        U,
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
    ),
    Case(
        "preemption should respect filteredNodesStatuses",
        pod("p", HIGH),
        [pod("p1", node="node1")],
        [one_pod_node("node1")],
        {"node1": UU},
        "",
        U,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    Case(
        "absent node status means UnschedulableAndUnresolvable",
        pod("p", HIGH),
        [pod("p1", node="node1")],
        [one_pod_node("node1")],
        {},
        "",
        U,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    Case(
        "pod can be made schedulable on one node",
        pod("p", MID),
        [pod("p1", HIGH, node="node1"), pod("p2", LOW, node="node2")],
        [one_pod_node("node1"), one_pod_node("node2")],
        {"node1": U, "node2": U},
        "node2",
        Code.SUCCESS,
        "preemption: found a potential placement for pod on node node2, preempting 1 victims",
    ),
    Case(
        "pod can be made schedulable on minHighestPriority node",
        pod("p", VERY_HIGH),
        [
            pod("p1", HIGH, node="node1", labels=NON_VIOLATING),
            pod("p2", LOW, node="node1", labels=VIOLATING),
            pod("p3", MID, node="node2", labels=VIOLATING),
        ],
        [one_pod_node("node1"), one_pod_node("node2")],
        {"node1": U, "node2": U},
        "node2",
        Code.SUCCESS,
        "preemption: found a potential placement for pod on node node2, preempting 1 victims",
        pdbs=[
            pdb_obj("violating-pdb", VIOLATING, minAvailable="100%"),
            pdb_obj("non-violating-pdb", NON_VIOLATING, allowed=2**31 - 1, minAvailable="0"),
        ],
    ),
    Case(
        "no candidate nodes found, no enough resource after removing low priority pods",
        pod("p", HIGH, LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2")],
        [node("node1", NODE_RES), node("node2", NODE_RES)],
        {"node1": U, "node2": U},
        "",
        U,
        "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
    ),
    Case(
        "no candidate nodes found with mixed reasons",
        pod("p", HIGH, LARGE),
        [pod("p1", HIGH, node="node1"), pod("p2", node="node2"), pod("p3", HIGH, node="node3")],
        [one_pod_node("node1"), node("node2", NODE_RES), one_pod_node("node3")],
        {"node1": U, "node2": U, "node3": U},
        "",
        U,
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "2 No preemption victims found for incoming pod.",
    ),
    Case(
        "no candidate nodes found with mixed reasons, 2 unresolvable nodes",
        pod("p", HIGH, LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2")],
        [node(f"node{i}", NODE_RES) for i in range(1, 5)],
        {"node1": U, "node2": U, "node4": UU},
        "",
        U,
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
        "2 Preemption is not helpful for scheduling.",
    ),
    Case(
        "preemptionPolicy Never is not eligible",
        pod("p", HIGH),
        [pod("p1", node="node1")],
        [one_pod_node("node1")],
        {"node1": U},
        None,
        U,
        "preemption: not eligible due to preemptionPolicy=Never.",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_post_filter(case: Case) -> None:
    if "Never" in case.name:
        case.preemptor.preemption_policy = "Never"
    s, client = scheduler(case.nodes, case.pods, case.pdbs)
    state = prefiltered(s, case.preemptor)
    table = s.cluster.nodes
    before = (table.requested.copy(), table.nonzero_requested.copy(), table.pod_count.copy())
    result, status = plugin(s).post_filter(
        state, case.preemptor, s.cluster, diagnosis(s, case.statuses, case.absent)
    )
    assert status.code == case.want_code
    assert status.message() == case.want_message
    if case.want_node is None:
        assert result is None
    else:
        assert result is not None
        assert result.nominated_node_name == case.want_node
    if case.want_node:
        assert result is not None
        assert {v.key for v in result.victims} == set(client.deleted)
        assert all(v.node_name == case.want_node for v in result.victims)
    else:
        assert client.deleted == []
    # the dry runs restore every node row exactly
    after = (table.requested, table.nonzero_requested, table.pod_count)
    assert all((a == b).all() for a, b in zip(before, after, strict=True))


def _terminating(name: str, priority: int, node_name: str, by_preemption: bool) -> api.Pod:
    p = pod(name, priority, node=node_name)
    p.deletion_timestamp = 1.0
    reason = "PreemptionByScheduler" if by_preemption else "DeletionByTaintManager"
    p.raw = {
        "status": {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": reason}]}
    }
    return p


@pytest.mark.parametrize(
    ("name", "pods", "nominated_status", "want", "why"),
    [
        (
            "pod with nominated node and a lower-priority pod terminating by preemption",
            [_terminating("p1", LOW, "node1", True)],
            U,
            False,
            "not eligible due to a terminating pod on the nominated node.",
        ),
        (
            "terminating pod was not deleted by preemption",
            [_terminating("p1", LOW, "node1", False)],
            U,
            True,
            "",
        ),
        (
            "terminating pod has higher priority",
            [_terminating("p1", VERY_HIGH, "node1", True)],
            U,
            True,
            "",
        ),
        (
            "nominated node is UnschedulableAndUnresolvable now",
            [_terminating("p1", LOW, "node1", True)],
            UU,
            True,
            "",
        ),
        ("no terminating pods", [pod("p1", LOW, node="node1")], U, True, ""),
    ],
)
def test_pod_eligible_to_preempt_others(
    name: str, pods: list[api.Pod], nominated_status: Code, want: bool, why: str
) -> None:
    s, _ = scheduler([node("node1", LARGE)], pods)
    preemptor = pod("p", HIGH)
    preemptor.nominated_node_name = "node1"
    codes = diagnosis(s, {"node1": nominated_status})
    from kubesched.plugins.defaultpreemption.plugin import node_codes

    table = node_codes(codes, s.cluster.nodes.capacity)
    assert plugin(s).pod_eligible_to_preempt_others(preemptor, s.cluster, table) == (want, why)


def test_terminating_by_preemption_needs_a_deletion_timestamp() -> None:
    p = _terminating("p1", LOW, "node1", True)
    assert terminating_by_preemption(p)
    p.deletion_timestamp = None
    assert not terminating_by_preemption(p)


@pytest.mark.parametrize(
    ("pct", "absolute", "nodes", "want"),
    [(10, 100, 500, 100), (10, 100, 5000, 500), (10, 100, 50, 50), (40, 1, 5, 2), (0, 3, 10, 3)],
)
def test_calculate_num_candidates(pct: int, absolute: int, nodes: int, want: int) -> None:
    s, _ = scheduler([node("n")], [])
    pl = plugin(s)
    pl.args = DefaultPreemptionArgs(pct, absolute)
    assert pl.calculate_num_candidates(nodes) == want
    offset, n = pl.get_offset_and_num_candidates(nodes)
    assert 0 <= offset < nodes and n == want


def test_offsets_are_the_scheduler_generators_integers_draws() -> None:
    """The random offsets into the potential nodes are ``rng.integers(n)`` of the
    scheduler's seeded generator, drawn in turn with its other user (the tie-break of
    :meth:`Search.pick`): the same numbers in the same order as numpy's own calls."""
    s, _ = scheduler([node("n")], [])
    pl = plugin(s)
    rng = pl.handle.rng
    assert rng is not None
    twin = copy.deepcopy(rng)
    got, want = [], []
    for n in (500, 7, 5000, 3, 2**20, 1, 64, 2**33):
        got.append(pl.get_offset_and_num_candidates(n)[0])
        want.append(int(twin.integers(n)))
        got.append(s.search.draw(n))
        want.append(int(twin.integers(n)))
    assert got == want


def test_args_from_the_profile_mapping() -> None:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [
                    {
                        "name": "DefaultPreemption",
                        "args": {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2},
                    }
                ],
            }
        ],
    }
    s, _ = scheduler([node("n")], [], config=config)
    assert plugin(s).args == DefaultPreemptionArgs(40, 2)
    with pytest.raises(TypeError):
        defaultpreemption.new(42, s.handle)


def test_fit_error_message_counts_absent_nodes_as_not_helpful() -> None:
    assert fit_error_message(3, {}) == (
        "0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_a_kept_filter_outcome_is_not_turned_into_codes_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Pod every node rejects for static reasons brings the same kept outcome on each
    retry (``scheduler.verdicts``): its per-row codes are built once, with the same answer."""
    from kubesched.plugins.defaultpreemption import plugin as module

    calls: list[object] = []
    real = module.node_codes
    monkeypatch.setattr(module, "node_codes", lambda d, c: calls.append(d) or real(d, c))
    nodes = [one_pod_node("node1"), one_pod_node("node2")]
    s, _ = scheduler(nodes, [pod("p1", VERY_HIGH, node="node1"), pod("p2", LOW, node="node2")])
    preemptor = pod("p", HIGH)
    state = prefiltered(s, preemptor)
    kept = diagnosis(s, {"node1": Code.UNSCHEDULABLE, "node2": Code.UNSCHEDULABLE})
    answers = [plugin(s).post_filter(state, preemptor, s.cluster, kept) for _ in range(3)]
    assert len(calls) == 1
    assert all(a[0] == answers[0][0] and a[1] == answers[0][1] for a in answers)
    assert answers[0][0] is not None and answers[0][0].nominated_node_name == "node2"
    plugin(s).post_filter(state, preemptor, s.cluster, diagnosis(s, {"node1": Code.UNSCHEDULABLE}))
    assert len(calls) == 2  # another outcome: built anew
