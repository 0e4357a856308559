"""Upstream's OpportunisticBatching node hints (v1.35+), ``kubesched.scheduler.hints``.

The first part replays upstream's own tables (``batch_test.go``: v1.35's ``TestBatchBasic``,
v1.37's ``TestBatchRescore``) against :class:`NodeHints` with a stand-in framework; the
second schedules through ``kubesched.schedule`` where the hint differs from a fresh cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import kubesched
from kubesched.framework.interface import SUCCESS, Code, CycleState, Status
from kubesched.kernels.draw import BoundedDraw
from kubesched.scheduler.hints import MAX_BATCH_AGE, NodeHints, upstream_signature

# ---------------------------------------------------------------- upstream's tables


@dataclass
class _Gates:
    version: str
    off: frozenset[str] = frozenset()

    def at_least(self, v: str) -> bool:
        return tuple(map(int, self.version.split("."))) >= tuple(map(int, v.split(".")))

    def enabled(self, name: str) -> bool:
        return name not in self.off


@dataclass
class _Fwk:
    """The few framework calls :class:`NodeHints` makes; ``blocked``: nodes where the Pod
    is rejected (upstream's ``blockingPod`` test plugin), ``fresh``: the rescored node's
    raw score (v1.37's ``configurableScorePlugin``)."""

    version: str
    nodes: list[str]
    blocked: set[str] = field(default_factory=set)
    filter_error: bool = False
    fresh: int = 0
    profile_name: str = "default-scheduler"
    off: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        row_of = {n: i for i, n in enumerate(self.nodes)}
        cluster = SimpleNamespace(nodes=SimpleNamespace(row_of=row_of, names=self.nodes))
        gates = _Gates(self.version, self.off)
        self.handle = SimpleNamespace(cluster=cluster, feature_gates=gates)
        self.plugins: dict[str, list[Any]] = {"score": [SimpleNamespace(name="score")]}

    def run_filter(self, state: CycleState, pod: Any, rows: Any) -> Any:
        name = self.nodes[int(rows[0])]
        if self.filter_error:
            return SimpleNamespace(feasible=np.zeros(0, np.int64), statuses=[Status(Code.ERROR)])
        if name in self.blocked:
            st = Status(Code.UNSCHEDULABLE, ("unsched",))
            return SimpleNamespace(feasible=np.zeros(0, np.int64), statuses=[st])
        return SimpleNamespace(feasible=np.asarray(rows), statuses=[])

    def run_pre_score(self, state: CycleState, pod: Any, rows: Any) -> Status:
        return SUCCESS

    def raw_scores(self, state: CycleState, pod: Any, rows: Any, names: set[str]) -> Any:
        return {"score": np.asarray([self.fresh], dtype=np.int64)}

    def totals_from_raw(self, state: CycleState, pod: Any, raw: dict[str, Any]) -> Any:
        return raw["score"].copy()


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _hints(clock: _Clock | None = None) -> NodeHints:
    return NodeHints(clock or _Clock(), BoundedDraw(np.random.default_rng(0)))


def _listed(names: list[str], totals: list[int] | None = None) -> Any:
    """A full cycle's scores: ``names[0]`` chosen (index 0), the rest listed."""
    totals = totals or list(range(100, 100 - len(names), -1))
    total = np.asarray(totals, dtype=np.int64)
    return (names, total, {"score": total.copy()}, 0)


def _pod(nominated: str = "") -> Any:
    return SimpleNamespace(nominated_node_name=nominated)


def _second(h: NodeHints, fwk: _Fwk, sig: Any, cycle: int = 2, pod: Any = None) -> str:
    """GetNodeHint for the second Pod ("" when none)."""
    pod = pod or _pod()
    if not h.compatible(fwk, pod, sig, cycle):  # type: ignore[arg-type]
        return ""
    return h.hint(fwk, CycleState(), pod)  # type: ignore[arg-type]


BASIC = [
    # name, first sig, stored list, first stored, skip a cycle, second sig, blocked, hint
    ("same signature gets a hint", "sig", ["n3", "n1"], True, False, "sig", {"n3"}, "n1"),
    ("different signature", "sig", ["n3", "n1"], True, False, "sig2", {"n3"}, ""),
    ("not one Pod per node", "sig", ["n3", "n1"], True, False, "sig", set(), ""),
    ("previous Pod not scheduled", "sig", ["n3", "n1"], False, False, "sig", {"n3"}, ""),
    ("empty list", "sig", ["n3"], True, False, "sig", {"n3"}, ""),
    ("other profile between", "sig", ["n3", "n1"], True, True, "sig", {"n3"}, ""),
]


@pytest.mark.parametrize("version", ["1.35", "1.36"])
@pytest.mark.parametrize(
    ("name", "sig1", "listed", "stored", "skip", "sig2", "blocked", "want"),
    BASIC,
    ids=[b[0] for b in BASIC],
)
def test_upstream_batch_basic(
    version: str,
    name: str,
    sig1: str,
    listed: list[str],
    stored: bool,
    skip: bool,
    sig2: str,
    blocked: set[str],
    want: str,
) -> None:
    """v1.35 ``TestBatchBasic``: a hint only for the next cycle's Pod of the same
    signature, when the node chosen last is full for it."""
    fwk = _Fwk(version, ["n1", "n2", "n3"], blocked)
    h = _hints()
    if stored:
        h.store(fwk.profile_name, (sig1,), "", listed[0], 1, _listed(listed))
    assert _second(h, fwk, (sig2,), 3 if skip else 2) == want


def test_nil_list_gives_no_hint() -> None:
    fwk = _Fwk("1.35", ["n1", "n3"], {"n3"})
    h = _hints()
    h.store(fwk.profile_name, ("sig",), "", "n3", 1, None)
    assert _second(h, fwk, ("sig",)) == ""


def test_hint_leaves_the_rest_for_the_next_pod() -> None:
    """``pod uses batch from preceding pod and leaves remaining batch to next pod``."""
    fwk = _Fwk("1.35", ["n1", "n2", "n3"], {"n3"})
    h = _hints()
    h.store(fwk.profile_name, ("sig",), "", "n3", 1, _listed(["n3", "n1", "n2"]))
    assert _second(h, fwk, ("sig",)) == "n1"
    h.store(fwk.profile_name, ("sig",), "n1", "n1", 2, None)
    assert h.lists[fwk.profile_name].names == ["n2"] and h.used == 1
    fwk.blocked.add("n1")
    assert _second(h, fwk, ("sig",), 3) == "n2"


def test_the_list_keeps_its_stale_order() -> None:
    """v1.35: the hint is the next of the old totals, nothing normalized again."""
    fwk = _Fwk("1.35", ["a", "b", "c"], {"a"})
    h = _hints()
    h.store(fwk.profile_name, ("s",), "", "a", 1, _listed(["a", "b", "c"], [90, 40, 70]))
    assert _second(h, fwk, ("s",)) == "c"


def test_a_list_older_than_max_batch_age_gives_no_hint() -> None:
    """``maxBatchAge``: counted from the full cycle, on the scheduler's clock."""
    clock = _Clock()
    fwk = _Fwk("1.35", ["n1", "n2", "n3"], {"n3", "n1"})
    h = _hints(clock)
    h.store(fwk.profile_name, ("s",), "", "n3", 1, _listed(["n3", "n1", "n2"]))
    clock.now = MAX_BATCH_AGE * 0.8
    assert _second(h, fwk, ("s",)) == "n1"
    h.store(fwk.profile_name, ("s",), "n1", "n1", 2, None)
    clock.now = MAX_BATCH_AGE * 1.2
    assert _second(h, fwk, ("s",), 3) == ""
    assert h.flushes["expired"] == 1


def test_v137_nominated_pod_gets_no_hint_but_v136_does() -> None:
    for version, want in (("1.36", "n1"), ("1.37", "")):
        fwk = _Fwk(version, ["n1", "n3"], {"n3"})
        h = _hints()
        h.store(fwk.profile_name, ("s",), "", "n3", 1, _listed(["n3", "n1"]))
        assert _second(h, fwk, ("s",), pod=_pod("elsewhere")) == want


RESCORE = [
    # name, fresh score of n2, filter error, chosen missing, cached missing, hint
    ("rescored node wins", 100, False, False, False, "n2"),
    ("rescored node loses", 10, False, False, False, "n1"),
    ("filter error gives no hint", 100, True, False, False, ""),
    ("chosen node missing gives no hint", 100, False, True, False, ""),
    ("cached node missing gives no hint", 100, False, False, True, ""),
]


@pytest.mark.parametrize(
    ("name", "fresh", "filter_error", "chosen_missing", "cached_missing", "want"),
    RESCORE,
    ids=[r[0] for r in RESCORE],
)
def test_v137_rescore(
    name: str,
    fresh: int,
    filter_error: bool,
    chosen_missing: bool,
    cached_missing: bool,
    want: str,
) -> None:
    """v1.37 ``TestBatchRescore``: n2 chosen, n1 cached at 50; n2 still fits and is
    scored again, the better of the two is the hint."""
    nodes = ["n1", "n2"]
    if chosen_missing:
        nodes = ["n1"]
    if cached_missing:
        nodes = ["n2"]
    fwk = _Fwk("1.37", nodes, filter_error=filter_error, fresh=fresh)
    h = _hints()
    h.store(fwk.profile_name, ("s",), "", "n2", 1, _listed(["n2", "n1"], [99, 50]))
    assert _second(h, fwk, ("s",)) == want


def test_v137_rescore_chain() -> None:
    """v1.37 ``TestBatchRescoreChain``: n2 keeps winning, n1 stays listed."""
    fwk = _Fwk("1.37", ["n1", "n2"], fresh=100)
    h = _hints()
    h.store(fwk.profile_name, ("s",), "", "n2", 1, _listed(["n2", "n1"], [99, 50]))
    assert _second(h, fwk, ("s",)) == "n2"
    h.store(fwk.profile_name, ("s",), "n2", "n2", 2, None)
    assert _second(h, fwk, ("s",), 3) == "n2"
    assert h.lists[fwk.profile_name].names == ["n1"]


@pytest.mark.parametrize(
    ("version", "off", "want"),
    [("1.37", frozenset(), "n1"), ("1.37", {"GenericWorkload"}, ""), ("1.36", frozenset(), "")],
)
def test_v137_pod_group_members_share_their_cycle(
    version: str, off: frozenset[str], want: str
) -> None:
    """v1.37 with GenericWorkload: a PodGroup cycle's members share one cycle count, and
    a member takes the list the sibling before it left (``cycleCount ==
    lastCycle.cycleCount``, ``genericWorkloadEnabled``); v1.36 and v1.37 without the gate:
    only the next cycle."""
    fwk = _Fwk(version, ["n1", "n2", "n3"], {"n3"}, off=frozenset(off))
    h = _hints()
    h.store(fwk.profile_name, ("s",), "", "n3", 5, _listed(["n3", "n1", "n2"]))
    assert _second(h, fwk, ("s",), 5) == want


def test_v137_a_miss_keeps_the_list_for_the_next_member() -> None:
    """Upstream's ``logUnusableState`` only counts a miss: a member of another signature
    that then fits nowhere stores nothing, and the next member of the first signature, in
    the same PodGroup cycle, still takes the list."""
    fwk = _Fwk("1.37", ["n1", "n2", "n3"], {"n3"})
    h = _hints()
    h.store(fwk.profile_name, ("s",), "", "n3", 5, _listed(["n3", "n1", "n2"]))
    assert _second(h, fwk, ("other",), 5) == ""
    assert h.flushes["pod_incompatible"] == 1
    assert _second(h, fwk, ("s",), 5) == "n1"


def _signing_fwk(version: str, off: frozenset[str], classes: dict[str, str]) -> Any:
    """A profile of signing plugins (no PodTopologySpread defaults); ``classes``: extended
    resource to the DeviceClass DynamicResources resolves it to."""
    from kubesched.devices import extended

    names = ("NodeResourcesFit", "NodeResourcesBalancedAllocation", "TaintToleration")
    services = {extended.RESOLVER: classes.get}
    handle = SimpleNamespace(feature_gates=_Gates(version, off), services=services)
    plugins = {"filter": [SimpleNamespace(name=n) for n in names]}
    return SimpleNamespace(plugins=plugins, instances={}, handle=handle)


@pytest.mark.parametrize(
    ("version", "off", "backed", "signed"),
    [
        ("1.35", frozenset(), False, False),  # v1.35: no Pod under the gate
        ("1.35", frozenset({"DRAExtendedResource"}), True, True),
        ("1.36", frozenset(), True, False),
        ("1.36", frozenset(), False, True),  # the class backs another resource
        ("1.36", frozenset({"DRAExtendedResource"}), True, True),
        ("1.37", frozenset(), True, False),
    ],
)
def test_fit_signs_no_pod_whose_extended_resource_dra_backs(
    version: str, off: frozenset[str], backed: bool, signed: bool
) -> None:
    """NodeResourcesFit's and BalancedAllocation's ``SignPod`` under DRAExtendedResource:
    v1.35 refuses every Pod, v1.36+ a Pod asking for an extended resource a DeviceClass
    backs (``shouldDelegateResourceToDRA`` without a node)."""
    from kubesched.testing import make_pod

    fwk = _signing_fwk(version, off, {"example.com/gpu": "gpu"} if backed else {})
    pod = make_pod("a").req(cpu="1", **{"example.com/gpu": "1"}).obj()
    assert (upstream_signature(fwk, pod) is not None) is signed
    plain = make_pod("b").req(cpu="1").obj()
    assert (upstream_signature(fwk, plain) is not None) is (signed or version != "1.35")


def test_extenders_disable_signatures() -> None:
    """Upstream ``computeBatchablePlugins``: a scheduler with extenders signs no Pod."""
    from kubesched.testing import make_pod

    fwk = _signing_fwk("1.37", frozenset(), {})
    pod = make_pod("a").req(cpu="1").obj()
    assert _hints().signature(fwk, pod) is not None
    with_extenders = NodeHints(_Clock(), BoundedDraw(np.random.default_rng(0)), extenders=True)
    assert with_extenders.signature(fwk, pod) is None


def test_v136_still_fitting_node_means_a_full_cycle() -> None:
    fwk = _Fwk("1.36", ["n1", "n2"])
    h = _hints()
    h.store(fwk.profile_name, ("s",), "", "n2", 1, _listed(["n2", "n1"], [99, 50]))
    assert _second(h, fwk, ("s",)) == ""
    assert h.flushes["node_not_full"] == 1


# ---------------------------------------------------------------- through kubesched.schedule


def _node(i: int) -> dict[str, Any]:
    name = f"node-{i:03d}"
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def _pod_obj(name: str, cpu: str, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "img", "resources": {"requests": {"cpu": cpu}}}]
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": spec,
    }


def _sampled(defaulting: str = "List") -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
    """200 nodes, the first 100 partly used: 100 of them are filtered per full cycle."""
    items: list[Any] = [_node(i) for i in range(200)]
    items += [_pod_obj(f"run-{i}", f"{100 + 3 * i}m", f"node-{i:03d}") for i in range(100)]
    profile = {
        "schedulerName": "default-scheduler",
        "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": defaulting}}],
    }
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 10,
        "profiles": [profile],
    }
    pods = [_pod_obj(f"pod-{i}", "3") for i in range(4)]
    return {"apiVersion": "v1", "kind": "List", "items": items}, pods, config


def test_upstream_signature() -> None:
    """Equal Pods but for their names sign alike; another request, or pod affinity, not."""
    _, _, config = _sampled()
    from kubesched.testing import make_pod

    a = make_pod("a").req(cpu="1").obj()
    b = make_pod("b").req(cpu="1").obj()
    c = make_pod("c").req(cpu="2").obj()
    from tests.scheduler.test_batch import scheduler

    s, _ = scheduler(True, {**config, "percentageOfNodesToScore": None})
    fwk = next(iter(s.profiles.values()))
    if not fwk.handle.feature_gates.at_least("1.35"):
        pytest.skip("the default release is older than v1.35")
    sa, sb, sc = (upstream_signature(fwk, p) for p in (a, b, c))
    assert sa is not None and sa == sb and sa != sc


def _windows(request: str) -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
    """200 nodes, 10 % scored (100 nodes a cycle): node-045 (8 CPUs) and node-040 (7.5) in
    the first window, node-150 (6) in the second, the rest small (3 CPUs)."""
    sizes = {45: "8", 40: "7500m", 150: "6"}
    items = []
    for i in range(200):
        alloc = {"cpu": sizes.get(i, "3"), "memory": "16Gi", "pods": "110"}
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{i:03d}"},
                "status": {"allocatable": alloc},
            }
        )
    pods = []
    for i in range(2):
        pod = _pod_obj(f"pod-{i}", request)
        pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "1Gi"
        pods.append(pod)
    profile = {
        "schedulerName": "default-scheduler",
        "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
    }
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 10,
        "profiles": [profile],
    }
    return {"apiVersion": "v1", "kind": "List", "items": items}, pods, config


@pytest.mark.parametrize(
    ("version", "want"), [("1.35", "node-150"), ("1.36", "node-150"), ("1.37", "node-040")]
)
def test_a_node_that_fits_again(version: str, want: str) -> None:
    """Both Pods fit on node-045: v1.35 and v1.36 then search afresh, over the next window
    (node-150); v1.37 scores node-045 again against the list, where node-040 wins.
    Upstream's answers (kube-oracle; ``tests/oracle/regressions/case-4b9da4bdf41f.json``)."""
    cluster, pods, config = _windows("1200m")
    out = kubesched.schedule(cluster, pods, config, kubernetes_version=version)
    assert [out["pods"][f"default/pod-{i}"]["node"] for i in range(2)] == ["node-045", want]


def test_a_hinted_cycle_leaves_the_start_index() -> None:
    """Upstream returns the hint before ``nextStartNodeIndex`` moves: after a full cycle
    (100 nodes looked at) and a hinted one, the index is still 100."""
    from kubesched.testing import make_node, make_pod
    from tests.scheduler.test_batch import scheduler

    _, _, config = _windows("4500m")
    s, _ = scheduler(True, config)
    if not next(iter(s.profiles.values())).handle.feature_gates.at_least("1.35"):
        pytest.skip("the default release is older than v1.35")
    sizes = {45: "8900m", 40: "8500m", 150: "8700m"}
    for i in range(200):
        s.on_node_add(
            make_node(f"node-{i:03d}").cap(cpu=sizes.get(i, "5"), memory="16Gi", pods=110).obj()
        )
    for i in range(2):
        s.on_pod_add(make_pod(f"pod-{i}").req(cpu="4500m", memory="1Gi").created(float(i)).obj())
    s.schedule_one()
    assert s.search.next_start_node_index == 100
    s.schedule_one()
    assert s.search.next_start_node_index == 100
    assert s.search.hints.used == 1
    assert s.cluster.pods["default/pod-1"].node == "node-040"
