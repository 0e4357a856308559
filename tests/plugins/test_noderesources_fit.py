"""NodeResourcesFit: filter reasons and codes, queueing hints, args (scores: *_scoring.py).

Cases are ported from upstream ``noderesources/fit_test.go`` (v1.34).  Upstream test pods
list containers; ``_pod`` folds them into effective requests (init containers by max).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.api.quantity import resource_amount
from kubesched.config import args as cfg
from kubesched.config.featuregates import FeatureGates
from kubesched.framework import interface as fw
from kubesched.plugins import noderesources_fit as fit
from kubesched.testing import make_cluster, make_node

_seq = itertools.count()
Spec = dict[str, Any]


def _pod(
    *containers: Spec, init: tuple[Spec, ...] = (), overhead: Spec | None = None, node: str = ""
) -> api.Pod:
    """A Pod from upstream-style containers (requests maps); no containers = no requests."""
    reqs: dict[str, int] = {}
    for c in containers:
        for k, v in c.items():
            reqs[k] = reqs.get(k, 0) + resource_amount(k, v)
    for c in init:
        for k, v in c.items():
            reqs[k] = max(reqs.get(k, 0), resource_amount(k, v))
    for k, v in (overhead or {}).items():
        reqs[k] = reqs.get(k, 0) + resource_amount(k, v)
    i = next(_seq)
    return api.Pod(name=f"p{i}", uid=f"u{i}", node_name=node, requests=reqs)


EXT_A, EXT_B = "example.com/aaa", "example.com/bbb"
K8S_A, K8S_B = "kubernetes.io/something", "subdomain.kubernetes.io/something"
HUGE = "hugepages-2Mi"
_FILTER_NODE: dict[str, str | int] = {
    "cpu": "10m",
    "memory": 20,
    "pods": 32,
    EXT_A: 5,
    "ephemeral-storage": 20,
    HUGE: 5,
}
U, UU = fw.Code.UNSCHEDULABLE, fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def _ins(name: str) -> str:
    return f"Insufficient {name}"


def _run_filter(
    pod: api.Pod,
    nodes: list[api.Node],
    pods: list[api.Pod],
    args: cfg.NodeResourcesFitArgs | None = None,
) -> list[fw.Status | None]:
    cluster = make_cluster(nodes, pods)
    pl = fit.new(args, fw.Handle(cluster))
    state = fw.CycleState()
    _, st = pl.pre_filter(state, pod, cluster)
    assert st.is_success()
    v = pl.filter(state, pod, cluster, cluster.nodes.order())
    assert v.codes.dtype == np.int8
    return [None if c == 0 else v.table[int(c)] for c in v.codes]


FILTER_CASES = [
    ("no resources requested always fits", _pod(), {"cpu": "10m", "memory": 20}, None, None),
    (
        "too many resources fails",
        _pod({"cpu": "1m", "memory": 1}),
        {"cpu": "10m", "memory": 20},
        None,
        (U, (_ins("cpu"), _ins("memory"))),
    ),
    (
        "fails due to init container cpu",
        _pod({"cpu": "1m", "memory": 1}, init=({"cpu": "3m", "memory": 1},)),
        {"cpu": "8m", "memory": 19},
        None,
        (U, (_ins("cpu"),)),
    ),
    (
        "fails due to highest init container memory",
        _pod(
            {"cpu": "1m", "memory": 1},
            init=({"cpu": "1m", "memory": 3}, {"cpu": "1m", "memory": 2}),
        ),
        {"cpu": "9m", "memory": 19},
        None,
        (U, (_ins("memory"),)),
    ),
    (
        "init container max, not sum",
        _pod({"cpu": "1m", "memory": 1}, init=({"cpu": "1m", "memory": 1},) * 2),
        {"cpu": "9m", "memory": 19},
        None,
        None,
    ),
    (
        "both resources fit",
        _pod({"cpu": "1m", "memory": 1}),
        {"cpu": "5m", "memory": 5},
        None,
        None,
    ),
    (
        "one resource memory fits",
        _pod({"cpu": "2m", "memory": 1}),
        {"cpu": "9m", "memory": 5},
        None,
        (U, (_ins("cpu"),)),
    ),
    (
        "one resource cpu fits",
        _pod({"cpu": "1m", "memory": 2}),
        {"cpu": "5m", "memory": 19},
        None,
        (U, (_ins("memory"),)),
    ),
    ("equal edge case", _pod({"cpu": "5m", "memory": 1}), {"cpu": "5m", "memory": 19}, None, None),
    ("extended resource fits", _pod({EXT_A: 1}), {}, None, None),
    (
        "extended resource capacity enforced",
        _pod({"cpu": "1m", "memory": 1, EXT_A: 10}),
        {EXT_A: 0},
        None,
        (UU, (_ins(EXT_A),)),
    ),
    (
        "extended resource allocatable enforced",
        _pod({"cpu": "1m", "memory": 1, EXT_A: 1}),
        {EXT_A: 5},
        None,
        (U, (_ins(EXT_A),)),
    ),
    (
        "extended resource enforced for multiple containers",
        _pod({"cpu": "1m", "memory": 1, EXT_A: 3}, {"cpu": "1m", "memory": 1, EXT_A: 3}),
        {EXT_A: 2},
        None,
        (UU, (_ins(EXT_A),)),
    ),
    (
        "extended resource admits multiple init containers",
        _pod(init=({"cpu": "1m", "memory": 1, EXT_A: 3},) * 2),
        {EXT_A: 2},
        None,
        None,
    ),
    (
        "extended resource enforced for unknown resource",
        _pod({"cpu": "1m", "memory": 1, EXT_B: 1}),
        {},
        None,
        (UU, (_ins(EXT_B),)),
    ),
    (
        "kubernetes.io resource capacity enforced",
        _pod({"cpu": "1m", "memory": 1, K8S_A: 10}),
        {},
        None,
        (UU, (_ins(K8S_A),)),
    ),
    (
        "kubernetes.io resource enforced for init container",
        _pod(init=({"cpu": "1m", "memory": 1, K8S_B: 10},)),
        {},
        None,
        (UU, (_ins(K8S_B),)),
    ),
    (
        "hugepages capacity enforced",
        _pod({"cpu": "1m", "memory": 1, HUGE: 10}),
        {HUGE: 0},
        None,
        (UU, (_ins(HUGE),)),
    ),
    (
        "hugepages enforced for multiple containers",
        _pod({"cpu": "1m", "memory": 1, HUGE: 3}, {"cpu": "1m", "memory": 1, HUGE: 3}),
        {HUGE: 2},
        None,
        (UU, (_ins(HUGE),)),
    ),
    (
        "skip checking ignored extended resource",
        _pod({"cpu": "1m", "memory": 1, EXT_B: 1}),
        {},
        cfg.NodeResourcesFitArgs(ignored_resources=(EXT_B,)),
        None,
    ),
    (
        "resources + pod overhead fits",
        _pod({"cpu": "1m", "memory": 1}, overhead={"cpu": "3m", "memory": 13}),
        {"cpu": "5m", "memory": 5},
        None,
        None,
    ),
    (
        "requests + overhead does not fit for memory",
        _pod({"cpu": "1m", "memory": 1}, overhead={"cpu": "1m", "memory": 15}),
        {"cpu": "5m", "memory": 5},
        None,
        (U, (_ins("memory"),)),
    ),
    (
        "ignored resource groups skip extended, not kubernetes.io",
        _pod({"cpu": "1m", "memory": 1, EXT_B: 1, K8S_A: 1}),
        {},
        cfg.NodeResourcesFitArgs(ignored_resource_groups=("example.com",)),
        (UU, (_ins(K8S_A),)),
    ),
    (
        "ignored resources do not apply to kubernetes.io names",
        _pod({K8S_A: 1}),
        {},
        cfg.NodeResourcesFitArgs(ignored_resources=(K8S_A,)),
        (UU, (_ins(K8S_A),)),
    ),
    (
        "extended request of quantity zero is not checked",
        _pod({"cpu": "1m", "memory": 1, EXT_A: 0}),
        {EXT_A: 6},
        None,
        None,
    ),
    (
        "storage: ephemeral-storage exceeds the node",
        _pod({"ephemeral-storage": 25}),
        {},
        None,
        (UU, (_ins("ephemeral-storage"),)),
    ),
    (
        "storage: ephemeral-storage exceeds what is left",
        _pod({"ephemeral-storage": 10}),
        {"ephemeral-storage": 15},
        None,
        (U, (_ins("ephemeral-storage"),)),
    ),
    ("a name that is no scalar resource is ignored", _pod({"foo": 100}), {}, None, None),
    (
        "several resources at once, scalars sorted by name",
        _pod({"cpu": "11m", "ephemeral-storage": 30, EXT_B: 1, EXT_A: 10}),
        {},
        None,
        (UU, (_ins("cpu"), _ins("ephemeral-storage"), _ins(EXT_A), _ins(EXT_B))),
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "used", "args", "want"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES]
)
def test_filter(
    name: str,
    pod: api.Pod,
    used: Spec,
    args: cfg.NodeResourcesFitArgs | None,
    want: tuple[fw.Code, tuple[str, ...]] | None,
) -> None:
    node = make_node("n").res(_FILTER_NODE).obj()
    [got] = _run_filter(pod, [node], [_pod(used, node="n")], args)
    if want is None:
        assert got is None
    else:
        assert got is not None and (got.code, got.reasons) == want


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        (_pod(), (U, ("Too many pods",))),
        (_pod({"cpu": "1m", "memory": 1}), (U, ("Too many pods", _ins("cpu"), _ins("memory")))),
        (_pod({"cpu": "11m"}), (UU, ("Too many pods", _ins("cpu")))),
    ],
)
def test_too_many_pods_comes_first(pod: api.Pod, want: tuple[fw.Code, tuple[str, ...]]) -> None:
    node = make_node("n").res({"cpu": "10m", "memory": 20, "pods": 1}).obj()
    [got] = _run_filter(pod, [node], [_pod({"cpu": "10m", "memory": 20}, node="n")])
    assert got is not None and (got.code, got.reasons) == want


def test_verdict_codes_are_shared_per_distinct_outcome() -> None:
    nodes = [
        make_node(f"n{i}").res({"cpu": c, "memory": m, "pods": p}).obj()
        for i, (c, m, p) in enumerate(
            [("1", 100, 5), ("100m", 100, 5), ("1", 100, 5), ("100m", 100, 5), ("1", 10, 0)]
        )
    ]
    got = _run_filter(_pod({"cpu": "500m", "memory": 50}), nodes, [])
    assert got[0] is None and got[2] is None
    assert got[1] is not None and got[1] == got[3]
    assert got[1].reasons == (_ins("cpu"),) and got[1].code == UU
    assert got[4] is not None
    assert got[4].reasons == ("Too many pods", _ins("memory")) and got[4].code == UU


def test_one_node_verdict_is_the_array_verdict() -> None:
    """A Filter call over one node (result reuse, preemption's re-checks) answers in
    Python ints (``kernels.mask_one``): the same status as that node gets in a call over
    many, over random nodes, used resources and Pods (fitting, too many Pods, Insufficient,
    more than the whole allocatable)."""
    rng = np.random.default_rng(5)
    nodes = [
        make_node(f"n{i}")
        .res({"cpu": f"{c}m", "memory": int(m), "ephemeral-storage": 50, "pods": int(p)})
        .obj()
        for i, (c, m, p) in enumerate(
            zip(
                rng.integers(1, 40, 40),
                rng.integers(1, 40, 40),
                rng.integers(0, 4, 40),
                strict=True,
            )
        )
    ]
    used = [
        _pod({"cpu": f"{rng.integers(0, 20)}m", "memory": int(rng.integers(0, 20))}, node=n.name)
        for n in nodes
        if rng.random() < 0.7
    ]
    cluster = make_cluster(nodes, used)
    pl = fit.new(None, fw.Handle(cluster))
    rows = cluster.nodes.order()
    for _ in range(30):
        spec = {"cpu": f"{rng.integers(0, 45)}m", "memory": int(rng.integers(0, 45))}
        if rng.random() < 0.3:
            spec["ephemeral-storage"] = int(rng.integers(0, 60))
        pod = _pod(spec)
        state = fw.CycleState()
        pl.pre_filter(state, pod, cluster)
        many = pl.filter(state, pod, cluster, rows)
        for i, row in enumerate(rows.tolist()):
            one = pl.filter(state, pod, cluster, np.asarray([row], dtype=np.int64))
            want = None if many.codes[i] == 0 else many.table[int(many.codes[i])]
            got = None if one.codes[0] == 0 else one.table[int(one.codes[0])]
            assert got == want


def test_one_failing_node_verdict_is_shared_and_read_only() -> None:
    """A one-node failure's verdict is made once per bitmask and given again (the kept
    failed pass asks for the same failing node each cycle): the same object, its codes
    read-only, as :meth:`Verdict.all_pass`'s."""
    cluster = make_cluster([make_node("n").cap(cpu="1", pods=10).obj()])
    pl = fit.new(None, fw.Handle(cluster))
    pod = _pod({"cpu": "2"})
    state = fw.CycleState()
    pl.pre_filter(state, pod, cluster)
    row = cluster.nodes.order()[:1]
    first = pl.filter(state, pod, cluster, row)
    again = pl.filter(state, pod, cluster, row)
    assert first is again and not first.codes.flags.writeable
    assert first.table[int(first.codes[0])].reasons == ("Insufficient cpu",)
    with pytest.raises(ValueError, match="read-only"):
        first.codes[0] = 0


def test_filter_without_pre_filter_is_an_error() -> None:
    cluster = make_cluster([make_node("n").cap(cpu="1", pods=10).obj()])
    pl = fit.new(None, fw.Handle(cluster))
    v = pl.filter(fw.CycleState(), _pod(), cluster, cluster.nodes.order())
    assert v.table[int(v.codes[0])].code == fw.Code.ERROR


# --------------------------------------------------------------------------- hints, args
R, P = cfg.ResourceSpec, cfg.UtilizationShapePoint
DEFAULT = (R("cpu", 1), R("memory", 1))
Q, SKIP = fw.QueueingHint.QUEUE, fw.QueueingHint.QUEUE_SKIP


def _with(pod: api.Pod, uid: str, node: str, **reqs: int) -> api.Pod:
    return api.Pod(name=pod.name, uid=uid, node_name=node, requests=dict(reqs))


TARGET = api.Pod(name="t", uid="t", requests={"cpu": 1000})


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (_with(TARGET, "o", "n1", cpu=1000), None, Q),
        (_with(TARGET, "o", "", cpu=1000), None, SKIP),
        (_with(TARGET, "o", "", cpu=1000).nominated_to("n1"), None, Q),
        (_with(TARGET, "o", "n1", cpu=2000), _with(TARGET, "o", "n1", cpu=1000), Q),
        (_with(TARGET, "o", "n1", cpu=1000, memory=5), _with(TARGET, "o", "n1", cpu=1000), SKIP),
        (_with(TARGET, "o", "", cpu=2000), _with(TARGET, "o", "", cpu=1000), SKIP),
        (_with(TARGET, "t", "", cpu=2000), _with(TARGET, "t", "", cpu=1000), Q),
    ],
    ids=[
        "bound deleted",
        "unbound deleted",
        "unbound nominated deleted",
        "scaled down cpu",
        "unrelated resource",
        "unbound scaled down",
        "target itself",
    ],
)
def test_pod_hint(old: api.Pod, new: api.Pod | None, want: fw.QueueingHint) -> None:
    assert fit.pod_hint(TARGET, old, new) == want


def _n(**alloc: int) -> api.Node:
    return api.Node(name="n", allocatable={k.replace("__", "/"): v for k, v in alloc.items()})


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, _n(cpu=2000, pods=10), Q),
        (None, _n(cpu=500, pods=10), SKIP),
        (None, _n(cpu=2000, pods=0), SKIP),
        (_n(cpu=500, pods=10), _n(cpu=2000, pods=10), Q),
        (_n(cpu=2000, pods=10), _n(cpu=2000, memory=9, pods=10), SKIP),
        (_n(cpu=2000, pods=10), _n(cpu=500, pods=10), SKIP),
        (_n(cpu=2000, pods=10), _n(cpu=2000, pods=20), Q),
    ],
    ids=[
        "added fits",
        "added too small",
        "added no pods",
        "grew to fit",
        "unrelated growth",
        "shrank",
        "more pods allowed",
    ],
)
def test_node_hint(old: api.Node | None, new: api.Node, want: fw.QueueingHint) -> None:
    assert fit.node_hint(TARGET, old, new) == want


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_events_to_register(version: str) -> None:
    """v1.37: AssignedPod Delete|UpdatePodScaleDown and TargetPod/UpdatePodScaleDown (always
    Queue: the queued Pod shrank) instead of Pod."""
    handle = fw.Handle(make_cluster([]), feature_gates=FeatureGates(version))
    registered = fit.new(None, handle).events_to_register()
    events = {e.event.resource: e.event.action for e in registered}
    pods = fw.Resource.POD if version == "1.36" else fw.Resource.ASSIGNED_POD
    assert events[pods] == fw.ActionType.DELETE | fw.ActionType.UPDATE_POD_SCALE_DOWN
    assert events[fw.Resource.NODE] == fw.ActionType.ADD | fw.ActionType.UPDATE_NODE_ALLOCATABLE
    if version == "1.37":
        assert events[fw.Resource.TARGET_POD] == fw.ActionType.UPDATE_POD_SCALE_DOWN
        assert [e.hint for e in registered if e.event.resource == fw.Resource.TARGET_POD] == [None]
    else:
        assert fw.Resource.TARGET_POD not in events


@pytest.mark.parametrize(
    ("strategy", "path"),
    [
        (
            cfg.ScoringStrategy(resources=(R("memory", -1), R("cpu", 1))),
            "scoringStrategy.resources[0].weight",
        ),
        (
            cfg.ScoringStrategy(resources=(R("memory", 1), R("cpu", 0))),
            "scoringStrategy.resources[1].weight",
        ),
        (
            cfg.ScoringStrategy(cfg.MOST_ALLOCATED, (R("memory", 101),)),
            "scoringStrategy.resources[0].weight",
        ),
        (
            cfg.ScoringStrategy(cfg.REQUESTED_TO_CAPACITY_RATIO, DEFAULT, (P(50, 1), P(10, 2))),
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
        ),
        (
            cfg.ScoringStrategy(cfg.REQUESTED_TO_CAPACITY_RATIO, DEFAULT, (P(0, 11),)),
            "scoringStrategy.requestedToCapacityRatio.shape[0].score",
        ),
        (cfg.ScoringStrategy("Nope"), "scoringStrategy.type"),
    ],
)
def test_invalid_args(strategy: cfg.ScoringStrategy, path: str) -> None:
    with pytest.raises(InputError) as err:
        fit.new(cfg.NodeResourcesFitArgs(scoring_strategy=strategy), fw.Handle(make_cluster([])))
    assert [p for p, _ in err.value.problems] == [path]


@pytest.mark.parametrize("k", [0, 2, 3, 15])
def test_verdict_from_failing_codes_the_distinct_masks_in_ascending_order(k: int) -> None:
    """Codes and statuses as a sort of all the bitmasks gives them (the counting path for
    few resources, the sorting one for many), with only the failing rows handed over."""
    rng = np.random.default_rng(k)
    reasons = tuple(_ins(f"example.com/r{j}") for j in range(k))
    outcomes = rng.integers(0, 1 << (k + 2), size=60, dtype=np.int64)  # at most 127 distinct
    masks = rng.choice(outcomes, size=400)
    masks[rng.random(400) < 0.5] = 0
    failing = np.flatnonzero(masks)
    got = fit.verdict_from_failing(400, failing, masks[failing], reasons)
    distinct = sorted(set(masks[failing].tolist()))
    want_codes = [0 if m == 0 else distinct.index(m) + 1 for m in masks.tolist()]
    assert got.codes.dtype == np.int8 and got.codes.tolist() == want_codes
    assert sorted(got.table) == list(range(1, len(distinct) + 1))
    for code, m in enumerate(distinct, start=1):
        st = got.table[code]
        want = (["Too many pods"] if m & 1 else []) + [
            r for j, r in enumerate(reasons) if m >> (j + 1) & 1
        ]
        assert list(st.reasons) == want
        assert (st.code == UU) == bool(m >> (k + 1) & 1)
    assert fit.verdict_from_masks(masks, reasons).codes.tolist() == want_codes


def test_a_resize_deferred_pod_hears_only_its_own_nodes_changes() -> None:
    """v1.37 with InPlacePodVerticalScalingSchedulerPreemption: a resize-deferred Pod is
    bound to its node, so upstream's Fit skips another node added or grown and a bound Pod
    deleted elsewhere (kube-oracle v1.37.2: seed 1's hint cases 59, 224, 229, 244, 286 and
    287 at v1.37, a node added, where kubesched answered Queue)."""
    gates = FeatureGates("1.37", (("InPlacePodVerticalScalingSchedulerPreemption", True),))
    handle = fw.Handle(make_cluster([]), feature_gates=gates)
    hints = {e.event.resource: e.hint for e in fit.new(None, handle).events_to_register()}
    on_node, on_pod = hints[fw.Resource.NODE], hints[fw.Resource.ASSIGNED_POD]
    assert on_node is not None and on_pod is not None
    deferred = _pod({"cpu": "1"}, node="own")
    deferred.resize_deferred = True
    room: dict[str, str | int] = {"cpu": "4", "memory": "8Gi", "pods": 110}
    own, other = make_node("own").res(room).obj(), make_node("other").res(room).obj()
    assert on_node(deferred, None, own) == fw.QueueingHint.QUEUE
    assert on_node(deferred, None, other) == fw.QueueingHint.QUEUE_SKIP
    assert on_node(_pod({"cpu": "1"}), None, other) == fw.QueueingHint.QUEUE  # not deferred
    assert on_pod(deferred, _pod({"cpu": "1"}, node="own"), None) == fw.QueueingHint.QUEUE
    assert on_pod(deferred, _pod({"cpu": "1"}, node="other"), None) == fw.QueueingHint.QUEUE_SKIP


def test_dense_masks_of_the_failing_rows_equal_fit_masks() -> None:
    """``dense_fit_masks`` (Filter's dense path: the failing rows' bitmasks read column by
    column from the gathered table) gives what ``fit_masks`` gives over the ``(n, k)``
    checked columns, on those rows: 200 random tables of 4 columns, 1–3 checked in any
    order, nodes over and under capacity and out of Pod slots; inputs untouched."""
    rng = np.random.default_rng(29)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        alloc = rng.integers(0, 50, size=(n, 4), dtype=np.int64)
        used = rng.integers(0, 60, size=(n, 4), dtype=np.int64)
        pod_count = rng.integers(0, 6, size=n, dtype=np.int64)
        allowed = rng.integers(0, 6, size=n, dtype=np.int64)
        cols = rng.permutation(4)[: int(rng.integers(1, 4))].astype(np.int64)
        amounts = rng.integers(1, 55, size=cols.shape[0], dtype=np.int64)
        dense = tuple(zip(cols.tolist(), amounts.tolist(), strict=True))
        want = fit.fit_masks(pod_count, allowed, alloc[:, cols], used[:, cols], amounts)
        failing = np.flatnonzero(want)
        copies = [a.copy() for a in (pod_count, allowed, alloc, used)]
        got = fit.dense_fit_masks(pod_count, allowed, alloc, used, failing, dense)
        assert got.dtype == np.int64 and got.tolist() == want[failing].tolist()
        for a, b in zip(copies, (pod_count, allowed, alloc, used), strict=True):
            assert np.array_equal(a, b)
