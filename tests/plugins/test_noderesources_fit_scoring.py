"""NodeResourcesFit scoring: LeastAllocated, MostAllocated, RequestedToCapacityRatio.

Cases are ported from upstream ``noderesources/least_allocated_test.go``,
``most_allocated_test.go`` and ``requested_to_capacity_ratio_test.go`` (v1.34), with their
exact expected scores.  Upstream test pods list containers; ``_pod`` folds them into
effective and non-zero requests (a container without a cpu/memory request counts 100m/200Mi;
a Pod without containers counts nothing).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.api.quantity import resource_amount
from kubesched.config import args as cfg
from kubesched.framework import interface as fw
from kubesched.kernels import resources as res
from kubesched.plugins import noderesources_fit as fit
from kubesched.testing import make_cluster, make_node

_seq = itertools.count()
Spec = dict[str, Any]


def _pod(*containers: Spec, node: str = "") -> api.Pod:
    """A Pod from upstream-style containers (requests maps); no containers = no requests."""
    reqs: dict[str, int] = {}
    nz = {api.CPU: 0, api.MEMORY: 0}
    defaults = {api.CPU: 100, api.MEMORY: 200 * 1024 * 1024}
    for c in containers:
        for k, v in c.items():
            reqs[k] = reqs.get(k, 0) + resource_amount(k, v)
        for k in nz:
            nz[k] += resource_amount(k, c[k]) if k in c else defaults[k]
    i = next(_seq)
    return api.Pod(name=f"p{i}", uid=f"u{i}", node_name=node, requests=reqs, nonzero_requests=nz)


def _cap(
    name: str, cpu: str | None = None, memory: str | None = None, ext: dict[str, int] | None = None
) -> api.Node:
    spec: dict[str, str | int] = dict(ext or {})
    if cpu is not None:
        spec["cpu"] = cpu
    if memory is not None:
        spec["memory"] = memory
    return make_node(name).res(spec).obj()


def _scores(
    strategy: cfg.ScoringStrategy, pod: api.Pod, nodes: list[api.Node], pods: list[api.Pod]
) -> list[int]:
    cluster = make_cluster(nodes, pods)
    pl = fit.new(cfg.NodeResourcesFitArgs(scoring_strategy=strategy), fw.Handle(cluster))
    state = fw.CycleState()
    rows = cluster.nodes.order()
    assert pl.pre_score(state, pod, cluster, rows).is_success()
    out = pl.score(state, pod, cluster, rows)
    assert out.dtype == np.int64
    return [int(x) for x in out]


R = cfg.ResourceSpec
DEFAULT = (R("cpu", 1), R("memory", 1))
XRES = "abc.com/xyz"
EXTENDED_SET = (R("cpu", 1), R("memory", 1), R(XRES, 1))
REQ_3000_5000 = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})
N4_10 = _cap("node1", "4000", "10000"), _cap("node2", "4000", "10000")
N4_6 = _cap("node1", "4000", "10000"), _cap("node2", "6000", "10000")
N10_20 = _cap("node1", "10000", "20000"), _cap("node2", "10000", "20000")
N10_20_50 = _cap("node1", "10000", "20000"), _cap("node2", "10000", "50000")
N6_X = _cap("node1", "6000", "10000"), _cap("node2", "6000", "10000", {XRES: 4})
N6_X4_10 = _cap("node1", "6000", "10000", {XRES: 4}), _cap("node2", "6000", "10000", {XRES: 10})
EXISTING_6 = [
    _pod({"cpu": "3000", "memory": "0"}, node="node1"),
    _pod({"cpu": "3000", "memory": "0"}, node="node1"),
    _pod({"cpu": "3000", "memory": "0"}, node="node2"),
    _pod({"cpu": "3000", "memory": "5000"}, node="node2"),
]
EXISTING_3 = [
    _pod({"cpu": "3000", "memory": "0"}, node="node1"),
    _pod({"cpu": "3000", "memory": "5000"}, node="node2"),
]

LEAST_CASES = [
    ("nothing scheduled, nothing requested", _pod(), N4_10, [], DEFAULT, [100, 100]),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        _pod(*REQ_3000_5000),
        N4_6,
        [],
        DEFAULT,
        [37, 50],
    ),
    (
        "no resources requested, pods scheduled",
        _pod(),
        N4_10,
        [_pod(node="node1"), _pod(node="node1"), _pod(node="node2"), _pod(node="node2")],
        DEFAULT,
        [100, 100],
    ),
    (
        "no resources requested, pods scheduled with resources",
        _pod(),
        N10_20,
        EXISTING_6,
        DEFAULT,
        [70, 57],
    ),
    (
        "resources requested, pods scheduled with resources",
        _pod(*REQ_3000_5000),
        N10_20,
        EXISTING_3,
        DEFAULT,
        [57, 45],
    ),
    (
        "resources requested, differently sized nodes",
        _pod(*REQ_3000_5000),
        N10_20_50,
        EXISTING_3,
        DEFAULT,
        [57, 60],
    ),
    (
        "requested resources exceed node capacity",
        _pod({"cpu": "3000", "memory": "0"}),
        N4_10,
        EXISTING_3,
        DEFAULT,
        [50, 25],
    ),
    (
        "zero node resources, pods scheduled with resources",
        _pod(),
        (_cap("node1"), _cap("node2")),
        EXISTING_3,
        DEFAULT,
        [0, 0],
    ),
    (
        "different weight on cpu and memory",
        _pod(*REQ_3000_5000),
        N4_6,
        [],
        (R("memory", 2), R("cpu", 1)),
        [41, 50],
    ),
    (
        "bypass extended resource if the pod does not request",
        _pod(*REQ_3000_5000),
        N6_X,
        [],
        EXTENDED_SET,
        [50, 50],
    ),
    (
        "honor extended resource if the pod requests",
        _pod({"cpu": "3000", "memory": "5000", XRES: "2"}),
        N6_X4_10,
        [],
        EXTENDED_SET,
        [50, 60],
    ),
    (
        "if the node doesn't have a resource",
        _pod({"cpu": "3000", "memory": "4000"}),
        N6_X,
        [],
        (R(XRES, 2), R("cpu", 1), R("memory", 1)),
        [55, 55],
    ),
]

MOST_CASES = [
    ("nothing scheduled, nothing requested", _pod(), N4_10, [], DEFAULT, [0, 0]),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        _pod(*REQ_3000_5000),
        N4_6,
        [],
        DEFAULT,
        [62, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        _pod(),
        N10_20,
        EXISTING_6,
        DEFAULT,
        [30, 42],
    ),
    (
        "resources requested, pods scheduled with resources",
        _pod(*REQ_3000_5000),
        N10_20,
        EXISTING_3,
        DEFAULT,
        [42, 55],
    ),
    (
        "resources requested equal node capacity",
        _pod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        (_cap("node1", "5000", "10000"), _cap("node2", "10000", "9000")),
        [],
        DEFAULT,
        [95, 75],
    ),
    (
        "different weight on cpu and memory",
        _pod(*REQ_3000_5000),
        N4_6,
        [],
        (R("memory", 2), R("cpu", 1)),
        [58, 50],
    ),
    (
        "no resources requested, pods scheduled, nonzero request for resource",
        _pod({}),
        (_cap("node1", "250m", "1000Mi"), _cap("node2", "250m", "1000Mi")),
        [_pod({}, node="node1"), _pod({}, node="node1")],
        DEFAULT,
        [80, 30],
    ),
    (
        "bypass extended resource if the pod does not request",
        _pod(*REQ_3000_5000),
        N6_X,
        [],
        EXTENDED_SET,
        [50, 50],
    ),
    (
        "honor extended resource if the pod request",
        _pod({"cpu": "3000", "memory": "5000", XRES: "2"}),
        N6_X4_10,
        [],
        EXTENDED_SET,
        [50, 40],
    ),
    (
        "if the node doesn't have a resource",
        _pod({"cpu": "3000", "memory": "4000"}),
        N6_X,
        [],
        (R(XRES, 2), R("cpu", 1), R("memory", 1)),
        [45, 45],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "pods", "resources", "want"),
    LEAST_CASES,
    ids=[c[0] for c in LEAST_CASES],
)
def test_least_allocated(
    name: str,
    pod: api.Pod,
    nodes: tuple[api.Node, ...],
    pods: list[api.Pod],
    resources: tuple[cfg.ResourceSpec, ...],
    want: list[int],
) -> None:
    strategy = cfg.ScoringStrategy(cfg.LEAST_ALLOCATED, resources)
    assert _scores(strategy, pod, list(nodes), pods) == want


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "pods", "resources", "want"),
    MOST_CASES,
    ids=[c[0] for c in MOST_CASES],
)
def test_most_allocated(
    name: str,
    pod: api.Pod,
    nodes: tuple[api.Node, ...],
    pods: list[api.Pod],
    resources: tuple[cfg.ResourceSpec, ...],
    want: list[int],
) -> None:
    strategy = cfg.ScoringStrategy(cfg.MOST_ALLOCATED, resources)
    assert _scores(strategy, pod, list(nodes), pods) == want


P = cfg.UtilizationShapePoint
DOWN = (P(0, 10), P(100, 0))
UP = (P(0, 0), P(100, 1))
MB = 1024 * 1024
FOO, BAR = "intel.com/foo", "intel.com/bar"


def _mnode(name: str, ext: dict[str, int]) -> api.Node:
    return make_node(name).res({"cpu": "4000m", "memory": 10000 * MB, **ext}).obj()


RTCR_CASES = [
    (
        "nothing scheduled, nothing requested",
        _pod(),
        N4_10,
        [_pod(node="node1"), _pod(node="node1")],
        DEFAULT,
        DOWN,
        [100, 100],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        _pod(*REQ_3000_5000),
        N4_6,
        [_pod(node="node1"), _pod(node="node1")],
        DEFAULT,
        DOWN,
        [38, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        _pod(),
        N4_6,
        [
            _pod({"cpu": "3000", "memory": "5000"}, node="node1"),
            _pod({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        DEFAULT,
        DOWN,
        [38, 50],
    ),
    (
        "single extended: nothing requested",
        _pod(),
        (_mnode("node1", {FOO: 8}), _mnode("node2", {FOO: 4})),
        [],
        (R(FOO, 1),),
        UP,
        [0, 0],
    ),
    (
        "single extended: requested, less resources",
        _pod({FOO: "2"}),
        (_mnode("node1", {FOO: 8}), _mnode("node2", {FOO: 4})),
        [],
        (R(FOO, 1),),
        UP,
        [2, 5],
    ),
    (
        "single extended: requested, existing pod",
        _pod({FOO: "2"}),
        (_mnode("node1", {FOO: 8}), _mnode("node2", {FOO: 4})),
        [_pod({FOO: "2"}, node="node2")],
        (R(FOO, 1),),
        UP,
        [2, 10],
    ),
    (
        "single extended: requested, more resources",
        _pod({FOO: "4"}),
        (_mnode("node1", {FOO: 8}), _mnode("node2", {FOO: 4})),
        [],
        (R(FOO, 1),),
        UP,
        [5, 10],
    ),
    (
        "multiple extended: nothing requested",
        _pod(),
        (_mnode("node1", {FOO: 8, BAR: 4}), _mnode("node2", {FOO: 4, BAR: 8})),
        [],
        (R(FOO, 3), R(BAR, 5)),
        UP,
        [0, 0],
    ),
    (
        "multiple extended: requested, less resources",
        _pod({FOO: "2", BAR: "2"}),
        (_mnode("node1", {FOO: 8, BAR: 4}), _mnode("node2", {FOO: 4, BAR: 8})),
        [],
        (R(FOO, 3), R(BAR, 5)),
        UP,
        [4, 3],
    ),
    (
        "multiple extended: requested, existing pod",
        _pod({FOO: "2", BAR: "2"}),
        (_mnode("node1", {FOO: 8, BAR: 4}), _mnode("node2", {FOO: 4, BAR: 8})),
        [_pod({FOO: "4", BAR: "2"}, node="node2")],
        (R(FOO, 3), R(BAR, 5)),
        UP,
        [4, 7],
    ),
    (
        "multiple extended: requested, more resources",
        _pod({FOO: "4", BAR: "2"}),
        (_mnode("node1", {FOO: 8, BAR: 4}), _mnode("node2", {FOO: 4, BAR: 8})),
        [],
        (R(FOO, 3), R(BAR, 5)),
        UP,
        [5, 5],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "pods", "resources", "shape", "want"),
    RTCR_CASES,
    ids=[c[0] for c in RTCR_CASES],
)
def test_requested_to_capacity_ratio(
    name: str,
    pod: api.Pod,
    nodes: tuple[api.Node, ...],
    pods: list[api.Pod],
    resources: tuple[cfg.ResourceSpec, ...],
    shape: tuple[cfg.UtilizationShapePoint, ...],
    want: list[int],
) -> None:
    strategy = cfg.ScoringStrategy(cfg.REQUESTED_TO_CAPACITY_RATIO, resources, shape)
    assert _scores(strategy, pod, list(nodes), pods) == want


@pytest.mark.parametrize(
    ("points", "checks"),
    [
        (
            ((10, 1), (90, 9)),
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
        ),
        (
            ((0, 2), (40, 10), (100, 0)),
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
        ),
        (((0, 2), (40, 2), (100, 2)), [(-10, 2), (0, 2), (20, 2), (40, 2), (70, 2), (110, 2)]),
        (((0, 100), (100, 0)), [(1, 99), (99, 1)]),  # truncation toward zero on a falling slope
    ],
)
def test_broken_linear_function(
    points: tuple[tuple[int, int], ...], checks: list[tuple[int, int]]
) -> None:
    util = np.asarray([p[0] for p in points], dtype=np.int64)
    score = np.asarray([p[1] for p in points], dtype=np.int64)
    p = np.asarray([c[0] for c in checks], dtype=np.int64)
    assert res.broken_linear(p, util, score).tolist() == [c[1] for c in checks]


def test_score_without_pre_score_matches() -> None:
    cluster = make_cluster(list(N10_20), EXISTING_3)
    pl = fit.new(None, fw.Handle(cluster))
    pod = _pod(*REQ_3000_5000)
    assert pl.score(fw.CycleState(), pod, cluster, cluster.nodes.order()).tolist() == [57, 45]


@pytest.mark.parametrize("most", [False, True])
def test_column_kernel_equals_the_general_scorers(most: bool) -> None:
    """``fit_score_columns`` (one resource at a time, over strided columns of a gathered
    table) gives what the general LeastAllocated / MostAllocated kernels give on the same
    ``(n, k)`` requests when every allocatable is non-zero, over and under capacity."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        k = int(rng.integers(1, 3))
        alloc = rng.integers(1, 10 ** int(rng.integers(1, 13)), size=(257, 3))
        req = rng.integers(0, alloc * 2 + 1)
        weights = rng.integers(1, 101, size=k)
        cols = rng.permutation(3)[:k]
        before = (req.copy(), alloc.copy())
        got = res.fit_score_columns(
            [req[:, c] for c in cols], [alloc[:, c] for c in cols], weights.tolist(), most
        )
        scorer = res.most_allocated if most else res.least_allocated
        want = scorer(req[:, cols], alloc[:, cols], weights)
        assert got.dtype == np.int64 and got.tolist() == want.tolist()
        assert (req == before[0]).all() and (alloc == before[1]).all()  # inputs untouched
