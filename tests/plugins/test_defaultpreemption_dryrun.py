"""DefaultPreemption dry runs and node picking: upstream ``TestDryRunPreemption`` and
``TestSelectBestCandidate`` as data, plus the PDB grouping (``filterPodsWithPDBViolation``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import objects as api
from kubesched.plugins.defaultpreemption import dryrun, pdb
from kubesched.plugins.defaultpreemption.picking import (
    PRIORITY_OFFSET,
    Candidate,
    earliest_start_of_highest,
    pick_one_node,
)
from tests.plugins._defaultpreemption import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NEG,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    framework,
    node,
    pdb_obj,
    plugin,
    pod,
    prefiltered,
    scheduler,
)

FOO = {"app": "foo"}


def nodes(*names: str) -> list[api.Node]:
    return [node(n, VERY_LARGE) for n in names]


@dataclass
class DryRun:
    name: str
    node_names: tuple[str, ...]
    preemptors: list[api.Pod]
    pods: list[api.Pod]
    want: list[dict[str, tuple[list[str], int]]]  # per cycle: node -> (victims, PDB violations)
    offsets: tuple[int, ...] = (4,)  # upstream's rand.NewSource(4).Int31n: 4, 1, 3
    args: tuple[int, int] = (10, 100)
    pdbs: list[dict[str, Any]] = field(default_factory=list)


FIVE = ("node1", "node2", "node3", "node4", "node5")
DRY_RUNS = [
    DryRun(
        "a pod that fits on both nodes when lower priority pods are preempted",
        ("node1", "node2"),
        [pod("p", HIGH, LARGE)],
        [pod("p1", MID, LARGE, "node1"), pod("p2", MID, LARGE, "node2")],
        [{"node1": (["p1"], 0), "node2": (["p2"], 0)}],
    ),
    DryRun(
        "other pods running are higher priority, no preemption would happen",
        ("node1", "node2"),
        [pod("p", LOW, LARGE)],
        [pod("p1", MID, LARGE, "node1"), pod("p2", MID, LARGE, "node2")],
        [{}],
    ),
    DryRun(
        "medium priority pod is preempted, but lower priority one stays as it is small",
        ("node1", "node2"),
        [pod("p", HIGH, LARGE)],
        [
            pod("p1.1", LOW, SMALL, "node1"),
            pod("p1.2", MID, LARGE, "node1"),
            pod("p2", MID, LARGE, "node2"),
        ],
        [{"node1": (["p1.2"], 0), "node2": (["p2"], 0)}],
    ),
    DryRun(
        "mixed priority pods are preempted",
        ("node1", "node2"),
        [pod("p", HIGH, LARGE)],
        [
            pod("p1.1", MID, SMALL, "node1"),
            pod("p1.2", LOW, SMALL, "node1"),
            pod("p1.3", MID, MEDIUM, "node1"),
            pod("p1.4", HIGH, SMALL, "node1"),
            pod("p2", HIGH, LARGE, "node2"),
        ],
        [{"node1": (["p1.2", "p1.3"], 0)}],
    ),
    DryRun(
        "mixed priority pods are preempted, pick later StartTime one when priorities are equal",
        ("node1", "node2"),
        [pod("p", HIGH, LARGE)],
        [
            pod("p1.1", LOW, SMALL, "node1", start=5e-9),
            pod("p1.2", LOW, SMALL, "node1", start=4e-9),
            pod("p1.3", MID, MEDIUM, "node1", start=3e-9),
            pod("p1.4", HIGH, SMALL, "node1", start=2e-9),
            pod("p2", HIGH, LARGE, "node2", start=1e-9),
        ],
        [{"node1": (["p1.1", "p1.3"], 0)}],
    ),
    DryRun(
        "preemption with violation of same pdb",
        ("node1",),
        [pod("p", HIGH, VERY_LARGE)],
        [
            pod("p1.1", MID, MEDIUM, "node1", labels=FOO),
            pod("p1.2", MID, MEDIUM, "node1", labels=FOO),
        ],
        [{"node1": (["p1.1", "p1.2"], 1)}],
        pdbs=[pdb_obj("pdb", FOO, allowed=1)],
    ),
    DryRun(
        "pdb with a processed eviction of a pod that is not a victim",
        ("node1",),
        [pod("p", HIGH, VERY_LARGE)],
        [
            pod("p1.1", MID, MEDIUM, "node1", labels=FOO),
            pod("p1.2", MID, MEDIUM, "node1", labels=FOO),
        ],
        [{"node1": (["p1.1", "p1.2"], 1)}],
        pdbs=[pdb_obj("pdb", FOO, allowed=1, disrupted=("p2",))],
    ),
    DryRun(
        "pdb with a processed eviction of a victim",
        ("node1",),
        [pod("p", HIGH, VERY_LARGE)],
        [
            pod("p1.1", MID, MEDIUM, "node1", labels=FOO),
            pod("p1.2", MID, MEDIUM, "node1", labels=FOO),
        ],
        [{"node1": (["p1.1", "p1.2"], 0)}],
        pdbs=[pdb_obj("pdb", FOO, allowed=1, disrupted=("p1.2",))],
    ),
    DryRun(
        "a victim listed in DisruptedPods is treated as non-violating",
        ("node1",),
        [pod("p", HIGH, VERY_LARGE)],
        [pod(f"p1.{i}", MID, MEDIUM, "node1", labels=FOO) for i in (1, 2, 3)],
        [{"node1": (["p1.1", "p1.2", "p1.3"], 1)}],
        pdbs=[pdb_obj("pdb", FOO, allowed=1, disrupted=("p1.3",))],
    ),
    DryRun(
        "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
        FIVE,
        [pod("p", HIGH, LARGE)],
        [pod(f"p{i}", MID, LARGE, f"node{i}") for i in range(1, 6)],
        [{"node1": (["p1"], 0), "node5": (["p5"], 0)}],
        args=(40, 1),
    ),
    DryRun(
        "some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
        FIVE,
        [pod("p", HIGH, LARGE)],
        [pod(f"p{i}", VERY_HIGH if i in (2, 5) else MID, LARGE, f"node{i}") for i in range(1, 6)],
        [{"node1": (["p1"], 0), "node3": (["p3"], 0)}],
        args=(40, 1),
    ),
    DryRun(
        "preemption offset across multiple scheduling cycles and wrap around",
        FIVE,
        [pod(f"tp{i}", HIGH, LARGE) for i in (1, 2, 3)],
        [pod(f"p{i}", MID, LARGE, f"node{i}") for i in range(1, 6)],
        [
            {"node1": (["p1"], 0), "node5": (["p5"], 0)},
            {"node2": (["p2"], 0), "node3": (["p3"], 0)},
            {"node4": (["p4"], 0), "node5": (["p5"], 0)},
        ],
        offsets=(4, 1, 3),
        args=(40, 1),
    ),
    DryRun(
        "preemption looks past numCandidates until a non-PDB violating node is found",
        FIVE,
        [pod("p", HIGH, LARGE)],
        [
            pod(f"p{i}", MID, LARGE, f"node{i}", labels=None if i in (3, 4) else FOO)
            for i in range(1, 6)
        ],
        [{"node1": (["p1"], 1), "node3": (["p3"], 0), "node5": (["p5"], 1)}],
        args=(40, 2),
        pdbs=[pdb_obj("pdb", FOO, allowed=0)],
    ),
]


@pytest.mark.parametrize("case", DRY_RUNS, ids=lambda c: c.name)
def test_dry_run_preemption(case: DryRun) -> None:
    s, _ = scheduler(nodes(*case.node_names), case.pods, case.pdbs)
    pl = plugin(s)
    pl.args = type(pl.args)(*case.args)
    table = s.cluster.nodes
    rows = np.asarray(sorted(table.row_of.values(), key=lambda r: table.names[r]), np.int64)
    before = table.requested.copy()
    for preemptor, offset, want in zip(case.preemptors, case.offsets, case.want, strict=True):
        state = prefiltered(s, preemptor)
        num = pl.calculate_num_candidates(int(rows.size))
        got, _, errors = dryrun.dry_run_preemption(
            framework(s),
            state,
            preemptor,
            s.cluster,
            rows,
            pdb.load_budgets(s.cluster),
            offset,
            num,
        )
        assert errors == []
        assert {
            c.node: (sorted(v.name for v in c.victims), c.num_pdb_violations) for c in got
        } == want
    assert (table.requested == before).all()


def test_dry_run_reports_rejected_nodes_and_stops_early() -> None:
    s, _ = scheduler(
        [node("n1", {"cpu": "200m", "memory": "400"}), *nodes("n2", "n3")],
        [pod("a", LOW, SMALL, "n1"), pod("b", HIGH, LARGE, "n2"), pod("c", LOW, LARGE, "n3")],
    )
    preemptor = pod("p", HIGH, LARGE)
    rows = np.asarray([s.cluster.nodes.row_of[n] for n in ("n1", "n2", "n3")], np.int64)
    got, statuses, _ = dryrun.dry_run_preemption(
        framework(s), prefiltered(s, preemptor), preemptor, s.cluster, rows, [], 0, 1
    )
    assert [c.node for c in got] == ["n3"]
    by_name = {s.cluster.nodes.names[r]: st.message() for r, st in statuses.items()}
    assert by_name == {"n1": "Insufficient cpu", "n2": dryrun.NO_VICTIMS}


@dataclass
class Pick:
    name: str
    node_names: tuple[str, ...]
    preemptor: api.Pod
    pods: list[api.Pod]
    want: tuple[str, ...]


PICKS = [
    Pick(
        "a pod that fits on both nodes when lower priority pods are preempted",
        ("node1", "node2"),
        pod("p", HIGH, LARGE),
        [pod("p1", MID, LARGE, "node1", start=0.0), pod("p2", MID, LARGE, "node2", start=0.0)],
        ("node1", "node2"),
    ),
    Pick(
        "node with min highest priority pod is picked",
        ("node1", "node2", "node3"),
        pod("p", HIGH, VERY_LARGE),
        [
            pod("p1.1", MID, MEDIUM, "node1", start=0.0),
            pod("p1.2", MID, LARGE, "node1", start=0.0),
            pod("p2.1", MID, MEDIUM, "node2", start=0.0),
            pod("p2.2", LOW, MEDIUM, "node2", start=0.0),
            pod("p3.1", LOW, MEDIUM, "node3", start=0.0),
            pod("p3.2", LOW, MEDIUM, "node3", start=0.0),
        ],
        ("node3",),
    ),
    Pick(
        "when highest priorities are the same, minimum sum of priorities is picked",
        ("node1", "node2", "node3"),
        pod("p", HIGH, VERY_LARGE),
        [
            pod("p1.1", MID, MEDIUM, "node1", start=0.0),
            pod("p1.2", MID, LARGE, "node1", start=0.0),
            pod("p2.1", MID, LARGE, "node2", start=0.0),
            pod("p2.2", LOW, MEDIUM, "node2", start=0.0),
            pod("p3.1", MID, MEDIUM, "node3", start=0.0),
            pod("p3.2", MID, MEDIUM, "node3", start=0.0),
        ],
        ("node2",),
    ),
    Pick(
        "when highest priority and sum are the same, minimum number of pods is picked",
        ("node1", "node2", "node3"),
        pod("p", HIGH, VERY_LARGE),
        [
            pod("p1.1", MID, SMALL, "node1", start=0.0),
            pod("p1.2", NEG, SMALL, "node1", start=0.0),
            pod("p1.3", MID, SMALL, "node1", start=0.0),
            pod("p1.4", NEG, SMALL, "node1", start=0.0),
            pod("p2.1", MID, LARGE, "node2", start=0.0),
            pod("p2.2", NEG, MEDIUM, "node2", start=0.0),
            pod("p3.1", MID, MEDIUM, "node3", start=0.0),
            pod("p3.2", NEG, SMALL, "node3", start=0.0),
            pod("p3.3", LOW, SMALL, "node3", start=0.0),
        ],
        ("node2",),
    ),
    Pick(
        "sum of adjusted priorities is considered",
        ("node1", "node2", "node3"),
        pod("p", HIGH, VERY_LARGE),
        [
            pod("p1.1", MID, SMALL, "node1", start=0.0),
            pod("p1.2", NEG, SMALL, "node1", start=0.0),
            pod("p1.3", NEG, SMALL, "node1", start=0.0),
            pod("p2.1", MID, LARGE, "node2", start=0.0),
            pod("p2.2", NEG, MEDIUM, "node2", start=0.0),
            pod("p3.1", MID, MEDIUM, "node3", start=0.0),
            pod("p3.2", NEG, SMALL, "node3", start=0.0),
            pod("p3.3", LOW, SMALL, "node3", start=0.0),
        ],
        ("node2",),
    ),
    Pick(
        "non-overlapping lowest high priority, sum priorities, and number of pods",
        ("node1", "node2", "node3", "node4"),
        pod("p", VERY_HIGH, VERY_LARGE),
        [
            pod("p1.1", MID, SMALL, "node1", start=0.0),
            pod("p1.2", LOW, SMALL, "node1", start=0.0),
            pod("p1.3", LOW, SMALL, "node1", start=0.0),
            pod("p2.1", HIGH, LARGE, "node2", start=0.0),
            pod("p3.1", MID, MEDIUM, "node3", start=0.0),
            pod("p3.2", LOW, SMALL, "node3", start=0.0),
            pod("p3.3", LOW, SMALL, "node3", start=0.0),
            pod("p3.4", LOW, MEDIUM, "node3", start=0.0),
            pod("p4.1", MID, MEDIUM, "node4", start=0.0),
            pod("p4.2", MID, SMALL, "node4", start=0.0),
            pod("p4.3", MID, SMALL, "node4", start=0.0),
            pod("p4.4", NEG, SMALL, "node4", start=0.0),
        ],
        ("node1",),
    ),
    Pick(
        "same priority, same number of victims, different start time for each node's pod",
        ("node1", "node2", "node3"),
        pod("p", HIGH, VERY_LARGE),
        [
            pod(f"p{n}.{i}", MID, MEDIUM, f"node{n}", start=t)
            for n, t in ((1, 2e-9), (2, 3e-9), (3, 1e-9))
            for i in (1, 2)
        ],
        ("node2",),
    ),
    Pick(
        "same priority, same number of victims, different start time for all pods",
        ("node1", "node2", "node3"),
        pod("p", HIGH, VERY_LARGE),
        [
            pod("p1.1", MID, MEDIUM, "node1", start=4e-9),
            pod("p1.2", MID, MEDIUM, "node1", start=2e-9),
            pod("p2.1", MID, MEDIUM, "node2", start=5e-9),
            pod("p2.2", MID, MEDIUM, "node2", start=1e-9),
            pod("p3.1", MID, MEDIUM, "node3", start=3e-9),
            pod("p3.2", MID, MEDIUM, "node3", start=6e-9),
        ],
        ("node3",),
    ),
    Pick(
        "different priority, same number of victims, different start time for all pods",
        ("node1", "node2", "node3"),
        pod("p", HIGH, VERY_LARGE),
        [
            pod("p1.1", LOW, MEDIUM, "node1", start=4e-9),
            pod("p1.2", MID, MEDIUM, "node1", start=2e-9),
            pod("p2.1", MID, MEDIUM, "node2", start=6e-9),
            pod("p2.2", LOW, MEDIUM, "node2", start=1e-9),
            pod("p3.1", LOW, MEDIUM, "node3", start=3e-9),
            pod("p3.2", MID, MEDIUM, "node3", start=5e-9),
        ],
        ("node2",),
    ),
]


@pytest.mark.parametrize("case", PICKS, ids=lambda c: c.name)
def test_select_best_candidate(case: Pick) -> None:
    s, _ = scheduler(nodes(*case.node_names), case.pods)
    rows = s.cluster.nodes.order()
    num = plugin(s).calculate_num_candidates(int(rows.size))
    got, _, _ = dryrun.dry_run_preemption(
        framework(s),
        prefiltered(s, case.preemptor),
        case.preemptor,
        s.cluster,
        rows,
        [],
        len(case.node_names) - 1,
        num,
    )
    assert got[pick_one_node(got)].node in case.want


def _candidate(name: str, *prios: int, pdb_violations: int = 0) -> Candidate:
    victims = [pod(f"{name}-{i}", p, start=float(i)) for i, p in enumerate(prios)]
    return Candidate(name, 0, victims, pdb_violations)


@pytest.mark.parametrize(
    ("candidates", "want"),
    [
        ([], -1),
        ([_candidate("a", 5, pdb_violations=1), _candidate("b", 9)], 1),
        ([_candidate("a", 5), _candidate("b", 5)], 0),  # full tie: the first
        ([_candidate("a", -100, -100), _candidate("b", -100)], 1),  # adjusted sums
    ],
)
def test_pick_one_node(candidates: list[Candidate], want: int) -> None:
    assert pick_one_node(candidates) == want


def _upstream_pick(candidates: list[Candidate]) -> int:
    """``pickOneNodeForPreemption`` as upstream writes it: each criterion in turn keeps the
    candidates scoring best under it, the first left wins."""
    if not candidates:
        return -1
    left = list(range(len(candidates)))
    criteria = (
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(p.priority + PRIORITY_OFFSET for p in c.victims),
        lambda c: -len(c.victims),
        lambda c: earliest_start_of_highest(c.victims),
    )
    for score in criteria:
        best = max(score(candidates[i]) for i in left)
        left = [i for i in left if score(candidates[i]) == best]
    return left[0]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2),
            st.lists(
                st.tuples(st.integers(-3, 3), st.one_of(st.none(), st.integers(0, 3))),
                min_size=1,
                max_size=4,
            ),
        ),
        max_size=6,
    )
)
def test_pick_one_node_as_upstreams_criteria_one_by_one(
    drawn: list[tuple[int, list[tuple[int, int | None]]]],
) -> None:
    """The kept rank, compared as one tuple, picks what the criteria applied one after
    another pick (random priorities, start times with and without, PDB violations)."""
    candidates = [
        Candidate(
            f"n{i}",
            i,
            [
                pod(f"n{i}-{j}", prio, start=None if start is None else float(start))
                for j, (prio, start) in enumerate(victims)
            ],
            bad,
        )
        for i, (bad, victims) in enumerate(drawn)
    ]
    assert pick_one_node(candidates) == _upstream_pick(candidates)


@pytest.mark.parametrize(
    ("spec", "status", "want"),
    [
        ({"minAvailable": 1}, None, 0),  # no status: upstream reads only disruptionsAllowed
        ({"minAvailable": "50%"}, None, 0),
        ({"maxUnavailable": 1}, None, 0),
        ({"maxUnavailable": "100%"}, None, 0),
        ({"minAvailable": 1}, 7, 7),
        ({"maxUnavailable": 0}, 2, 2),  # the status wins over the spec, as upstream
        ({}, None, 0),
    ],
)
def test_budget_allowed_is_the_status_only(
    spec: dict[str, Any], status: int | None, want: int
) -> None:
    budget = pdb.parse_budget(pdb_obj("b", FOO, allowed=status, **spec))
    assert budget is not None and budget.allowed == want


def test_budget_with_empty_or_invalid_selector_matches_nothing() -> None:
    empty = pdb_obj("b", {})
    bad = pdb_obj("b", FOO)
    bad["spec"]["selector"] = {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}
    assert pdb.parse_budget(empty) is None
    assert pdb.parse_budget(bad) is None


def test_split_by_violation_keeps_order_and_budgets() -> None:
    budget = pdb.Budget("default", api.LabelSelector((("app", "foo"),)), allowed=1)
    pods = [pod("a", labels=FOO), pod("b"), pod("c", labels=FOO), pod("d", labels=FOO)]
    violating, fine = pdb.split_by_violation(pods, [budget])
    assert [p.name for p in violating] == ["c", "d"]
    assert [p.name for p in fine] == ["a", "b"]
    other_ns = pdb.Budget("kube-system", budget.selector, allowed=0)
    assert pdb.split_by_violation(pods, [other_ns]) == ([], pods)


def test_a_pod_charges_the_budgets_after_its_first_violated_one_before_v137_only() -> None:
    """``a`` is selected by both budgets and violates ``strict`` (none allowed).  Up to
    v1.36 ``filterPodsWithPDBViolation`` still charges ``loose`` for it, so ``b`` (only
    ``loose``'s) violates too; v1.37's ``FilterVictimsWithPDBViolation`` stops at ``a``'s
    first violated budget, so ``loose`` keeps its one disruption for ``b``."""
    strict = pdb.Budget("default", api.LabelSelector((("tier", "db"),)), allowed=0)
    loose = pdb.Budget("default", api.LabelSelector((("app", "foo"),)), allowed=1)
    pods = [pod("a", labels={**FOO, "tier": "db"}), pod("b", labels=FOO)]
    violating, fine = pdb.split_by_violation(pods, [strict, loose])
    assert [p.name for p in violating] == ["a", "b"] and fine == []
    violating, fine = pdb.split_by_violation(pods, [strict, loose], first_only=True)
    assert [p.name for p in violating] == ["a"] and [p.name for p in fine] == ["b"]
