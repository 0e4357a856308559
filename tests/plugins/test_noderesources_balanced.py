"""NodeResourcesBalancedAllocation: upstream v1.34 ``balanced_allocation_test.go`` cases.

Expected scores are upstream's for the v1.34 formula ``int64((1 - std) * 100)``; cases whose
Pod requests nothing are Skip in PreScore (upstream #129138).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.api.quantity import resource_amount
from kubesched.config import args as cfg
from kubesched.config.featuregates import FeatureGates
from kubesched.framework import interface as fw
from kubesched.kernels import resources as res
from kubesched.plugins import noderesources_balanced as ba
from kubesched.state.cache import ClusterState
from kubesched.testing import conformance, make_cluster, make_node

_seq = itertools.count()
GPU = "nvidia.com/gpu"


def _pod(reqs: dict[str, str], node: str = "") -> api.Pod:
    """A Pod with effective ``reqs`` (the sum of its containers' requests)."""
    i = next(_seq)
    amounts = {k: resource_amount(k, v) for k, v in reqs.items()}
    return api.Pod(name=f"p{i}", uid=f"u{i}", node_name=node, requests=amounts)


def _node(name: str, milli_cpu: int, memory: int, gpu: int | None = None) -> api.Node:
    spec: dict[str, str | int] = {"cpu": f"{milli_cpu}m", "memory": memory}
    if gpu is not None:
        spec[GPU] = gpu
    return make_node(name).res(spec).obj()


CPU_ONLY = {"cpu": "3000m", "memory": "0"}
CPU_AND_MEMORY = {"cpu": "3000m", "memory": "5000"}
CPU_MEMORY_GPU = {"cpu": "3000m", "memory": "5000", GPU: "3"}
DEFAULT = (cfg.ResourceSpec("cpu"), cfg.ResourceSpec("memory"))
WITH_GPU = (*DEFAULT, cfg.ResourceSpec(GPU))

CASES = [
    (
        "nothing scheduled, resources requested, differently sized nodes",
        _pod(CPU_AND_MEMORY),
        [_node("node1", 4000, 10000), _node("node2", 6000, 10000)],
        [],
        DEFAULT,
        [87, 100],
    ),
    (
        "resources requested, pods scheduled with resources",
        _pod(CPU_AND_MEMORY),
        [_node("node1", 10000, 20000), _node("node2", 10000, 20000)],
        [_pod(CPU_ONLY, "node1"), _pod(CPU_AND_MEMORY, "node2")],
        DEFAULT,
        [82, 95],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        _pod(CPU_AND_MEMORY),
        [_node("node1", 10000, 20000), _node("node2", 10000, 50000)],
        [_pod(CPU_ONLY, "node1"), _pod(CPU_AND_MEMORY, "node2")],
        DEFAULT,
        [82, 80],
    ),
    (
        "nodes to reach min/max score",
        _pod({"memory": "5000"}),
        [_node("node1", 3000, 5000), _node("node2", 3000, 5000)],
        [_pod(CPU_ONLY, "node1")],
        DEFAULT,
        [100, 50],
    ),
    (
        "requested resources at node capacity",
        _pod(CPU_ONLY),
        [_node("node1", 6000, 10000), _node("node2", 6000, 10000)],
        [_pod(CPU_ONLY, "node1"), _pod(CPU_AND_MEMORY, "node2")],
        DEFAULT,
        [50, 75],
    ),
    (
        "include scalar resource on a node",
        _pod({"memory": "0", GPU: "1"}),
        [_node("node1", 3500, 40000, 8), _node("node2", 3500, 40000, 8)],
        [_pod(CPU_MEMORY_GPU, "node1"), _pod(CPU_AND_MEMORY, "node2")],
        WITH_GPU,
        [70, 65],
    ),
    (
        "scalar resource the pod does not request is skipped",
        _pod(CPU_AND_MEMORY),
        [_node("node1", 3500, 40000, 8), _node("node2", 3500, 40000)],
        [],
        WITH_GPU,
        [63, 63],
    ),
    (
        "zero node resources: no fraction, std 0",
        _pod(CPU_AND_MEMORY),
        [_node("node1", 0, 0), _node("node2", 0, 0)],
        [],
        DEFAULT,
        [100, 100],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "pods", "resources", "want"), CASES, ids=[c[0] for c in CASES]
)
@pytest.mark.parametrize("run_pre_score", [True, False])
def test_balanced_allocation(
    name: str,
    pod: api.Pod,
    nodes: list[api.Node],
    pods: list[api.Pod],
    resources: tuple[cfg.ResourceSpec, ...],
    want: list[int],
    run_pre_score: bool,
) -> None:
    cluster = make_cluster(nodes, pods)
    pl = ba.new(cfg.NodeResourcesBalancedAllocationArgs(resources), v134_handle(cluster))
    state = fw.CycleState()
    rows = cluster.nodes.order()
    if run_pre_score:
        assert pl.pre_score(state, pod, cluster, rows).code == fw.Code.SUCCESS
    got = pl.score(state, pod, cluster, rows)
    assert got.dtype == np.int64
    assert got.tolist() == want


@pytest.mark.parametrize(
    ("pod", "resources"),
    [
        (_pod({}), DEFAULT),
        (api.Pod(name="nz", nonzero_requests={"cpu": 100, "memory": 209715200}), DEFAULT),
        (_pod({"ephemeral-storage": "1Gi"}), DEFAULT),
        (_pod({"memory": "1Gi"}), (cfg.ResourceSpec("cpu"), cfg.ResourceSpec(GPU))),
    ],
    ids=["no requests", "non-zero defaults do not count", "unscored resource", "cpu and gpu"],
)
def test_best_effort_pod_is_skipped(pod: api.Pod, resources: tuple[cfg.ResourceSpec, ...]) -> None:
    cluster = make_cluster([_node("node1", 4000, 10000)])
    pl = ba.new(cfg.NodeResourcesBalancedAllocationArgs(resources), v134_handle(cluster))
    rows = cluster.nodes.order()
    assert pl.pre_score(fw.CycleState(), pod, cluster, rows).code == fw.Code.SKIP
    assert pl.score(fw.CycleState(), pod, cluster, rows).tolist() == [0]


def test_three_fractions_match_float64_formula() -> None:
    rng = np.random.default_rng(7)
    alloc = rng.integers(1, 10**9, size=(200, 3), dtype=np.int64)
    req = rng.integers(0, 2 * 10**9, size=(200, 3), dtype=np.int64)
    alloc[::7, 1] = 0  # some nodes lack the second resource: two fractions left
    got = res.balanced_allocation(req, alloc)
    for i in range(200):
        fr = [min(float(r) / float(a), 1.0) for r, a in zip(req[i], alloc[i], strict=True) if a]
        if len(fr) == 2:
            std = abs((fr[0] - fr[1]) / 2)
        else:
            mean = sum(fr) / len(fr)
            acc = 0.0
            for f in fr:
                acc = acc + (f - mean) * (f - mean)
            std = math.sqrt(acc / len(fr))
        assert got[i] == int((1 - std) * 100.0)


@pytest.mark.parametrize(
    ("resources", "path"),
    [
        ((cfg.ResourceSpec("cpu", 2),), "resources[0].weight"),
        ((cfg.ResourceSpec("cpu"), cfg.ResourceSpec("cpu")), "resources[1].name"),
    ],
)
def test_invalid_args(resources: tuple[cfg.ResourceSpec, ...], path: str) -> None:
    with pytest.raises(InputError) as err:
        ba.new(cfg.NodeResourcesBalancedAllocationArgs(resources), fw.Handle(make_cluster([])))
    assert [p for p, _ in err.value.problems] == [path]


# --------------------------------------------------------------------------- v1.36's formula
GI = 1024**3


def v134_handle(cluster: ClusterState) -> fw.Handle:
    """A handle of a v1.34 run (upstream v1.34's test cases; v1.36 changed the formula)."""
    return fw.Handle(cluster, feature_gates=FeatureGates("1.34"))


def _change_cluster(with_cpu_only_node: bool) -> tuple[ClusterState, list[api.Pod]]:
    nodes = [_node("a", 4000, 8 * GI), _node("b", 4000, 8 * GI)]
    if with_cpu_only_node:
        nodes.append(make_node("c").res({"cpu": "4"}).obj())
    running = [_pod({"cpu": "1", "memory": "1Gi"}, "a"), _pod({"cpu": "3", "memory": "1Gi"}, "b")]
    return make_cluster(nodes, running), running


@pytest.mark.parametrize("cpu_only_node", [False, True], ids=["cpu-memory", "general"])
def test_v136_scores_the_change_in_balance(cpu_only_node: bool) -> None:
    # a: with the Pod (2 of 4 cpu, 5 of 8 Gi) std .0625 -> 93; without (1/4, 1/8) -> 93:
    #    50 + (50 + 0) / 2 = 75.  b: with (4/4, 5/8) std .1875 -> 81; without (3/4, 1/8)
    #    std .3125 -> 68: 50 + (50 + 13) / 2 = 81.  c (cpu only): 100 both ways -> 75.
    cluster, _ = _change_cluster(cpu_only_node)
    pod = _pod({"cpu": "1", "memory": "4Gi"})
    rows = cluster.nodes.order()
    args = cfg.NodeResourcesBalancedAllocationArgs(score_balance_change=True)
    plugin = ba.new(args, fw.Handle(cluster))
    state = fw.CycleState()
    assert plugin.pre_score(state, pod, cluster, rows) == fw.SUCCESS
    got = plugin.score(state, pod, cluster, rows).tolist()
    assert got == ([75, 81, 75] if cpu_only_node else [75, 81])
    ones = [plugin.score_one(state, pod, cluster, r) for r in rows.tolist()]
    assert ones[:2] == [75, 81]
    v134 = ba.new(None, v134_handle(cluster))
    assert v134.score(state, pod, cluster, rows).tolist()[:2] == [93, 81]
    # the registered factory follows the run's release: v1.36 and later score the change
    for version, want in (("1.35", [93, 81]), ("1.36", [75, 81]), ("1.37", [75, 81])):
        handle = fw.Handle(cluster, feature_gates=FeatureGates(version))
        got = ba.new(None, handle).score(fw.CycleState(), pod, cluster, rows).tolist()
        assert got[:2] == want, version
    assert conformance.check_plugin(ba.new, args) == []


# upstream v1.36 balanced_allocation_test.go: pod (cpu, memory), nodes (cpu milli, memory),
# running Pods per node (cpu, memory) or None, expected scores.
V136_CASES = [
    ("differently sized nodes", ("3", "5000"), [(4000, 10000), (6000, 10000)], [], [68, 75]),
    (
        "pods scheduled with resources",
        ("3", "5000"),
        [(10000, 20000), (10000, 20000)],
        [("3", None), ("3", "5000")],
        [73, 74],
    ),
    (
        "pods scheduled, differently sized nodes",
        ("3", "5000"),
        [(10000, 20000), (10000, 50000)],
        [("3", None), ("3", "5000")],
        [73, 70],
    ),
    ("min and max score", (None, "5000"), [(3000, 5000), (3000, 5000)], [("3", None)], [100, 50]),
    (
        "requested resources at node capacity",
        ("3", None),
        [(6000, 10000), (6000, 10000)],
        [("3", None), ("3", "5000")],
        [62, 62],
    ),
]


def _reqs(cpu: str | None, memory: str | None) -> dict[str, str]:
    out = {"cpu": cpu, "memory": memory}
    return {k: v for k, v in out.items() if v is not None}


@pytest.mark.parametrize(
    ("pod_req", "nodes", "running", "want"),
    [c[1:] for c in V136_CASES],
    ids=[c[0] for c in V136_CASES],
)
def test_v136_upstream_cases(
    pod_req: tuple[str | None, str | None],
    nodes: list[tuple[int, int]],
    running: list[tuple[str | None, str | None]],
    want: list[int],
) -> None:
    cluster = make_cluster(
        [_node(f"node{i + 1}", cpu, mem) for i, (cpu, mem) in enumerate(nodes)],
        [_pod(_reqs(*r), f"node{i + 1}") for i, r in enumerate(running)],
    )
    pod = _pod(_reqs(*pod_req))
    rows = cluster.nodes.order()
    plugin = ba.new(
        cfg.NodeResourcesBalancedAllocationArgs(score_balance_change=True), fw.Handle(cluster)
    )
    state = fw.CycleState()
    assert plugin.pre_score(state, pod, cluster, rows) == fw.SUCCESS
    assert plugin.score(state, pod, cluster, rows).tolist() == want


def test_change_kernel_for_cpu_and_memory_equals_the_two_scores() -> None:
    """The fused v1.36 kernel gives what two balanced scores and their change give."""
    rng = np.random.default_rng(7)
    for i in range(200):
        alloc = rng.integers(1, 10 ** int(rng.integers(1, 12)), size=(300, 2))
        used = rng.integers(0, alloc * 2 + 1)
        pod = rng.integers(0, 10 ** int(rng.integers(1, 10)), size=2)
        if i % 2:  # negative allocatable and usage too: Go's division by 2 of a negative
            alloc *= rng.choice([-1, 1], size=alloc.shape)
            used *= rng.choice([-1, 1], size=used.shape)
        got = res.balanced_change_cpu_memory(
            used[:, 0], used[:, 1], int(pod[0]), int(pod[1]), alloc[:, 0], alloc[:, 1]
        )
        want = ba.balance_change(
            res.balanced_cpu_memory(used + pod, alloc), res.balanced_cpu_memory(used, alloc)
        )
        assert got.dtype == np.int64 and got.tolist() == want.tolist()
