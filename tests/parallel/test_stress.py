"""Randomised interleavings of shards, round sizes and crashes (in-process shards).

Whatever hypothesis draws -- cluster, Pods with anti-affinity, hard topology spread, host
ports and gangs, 2-3 shards, messages of 1-4 Pods, shards killed at random steps -- no node
is overcommitted, no Pod is bound twice or lost, gangs are all-or-nothing, and no two shards
deciding at once break anti-affinity or spreading -- also when the coordinator schedules a
drawn share of the Pods itself (auto routing, scripted by hypothesis) while shards decide.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api import objects as api
from kubesched.testing import make_node, make_pod
from tests.parallel.harness import GANG_CONFIG, ScriptedRouter, World, pod_group

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
GROUP = "scheduling.x-k8s.io/pod-group"
KINDS = ("plain", "anti", "spread", "port", "gang")


def _selector(**labels: str) -> api.LabelSelector:
    return api.LabelSelector(match_labels=tuple(sorted(labels.items())))


def _pod(i: int, kind: str, gang: int) -> api.Pod:
    b = make_pod(f"p{i:02d}", "ns").req(cpu="500m", memory="1Gi")
    if kind == "anti":
        b.labels(app="anti")
        b.pod.pod_anti_affinity = api.PodAffinity(
            required=(api.PodAffinityTerm(HOST, _selector(app="anti")),)
        )
    elif kind == "spread":
        b.labels(app="spread")
        b.pod.topology_spread_constraints = (
            api.TopologySpreadConstraint(1, ZONE, "DoNotSchedule", _selector(app="spread")),
        )
    elif kind == "port":
        b.host_port(8080)
    elif kind == "gang":
        b.labels(**{GROUP: f"g{gang}"})
    return b.obj()


@st.composite
def scenarios(draw: Any) -> dict[str, Any]:
    n_nodes = draw(st.integers(2, 6))
    nodes = [
        make_node(f"n{i}")
        .cap(cpu=str(draw(st.integers(1, 3))), memory="16Gi", pods=draw(st.integers(2, 6)))
        .labels(**{ZONE: f"z{i % 2}", HOST: f"n{i}"})
        .obj()
        for i in range(n_nodes)
    ]
    gangs = draw(st.booleans())
    kinds = KINDS if gangs else KINDS[:-1]
    n_pods = draw(st.integers(4, 24))
    pods = [_pod(i, draw(st.sampled_from(kinds)), draw(st.integers(0, 1))) for i in range(n_pods)]
    shards = draw(st.integers(2, 3))
    crashes = draw(st.dictionaries(st.integers(1, 30), st.integers(0, shards - 1), max_size=3))
    return {
        "nodes": nodes,
        "pods": pods,
        "gangs": gangs,
        "shards": shards,
        "round": draw(st.integers(1, 4)),
        "crashes": crashes,
        "seed": draw(st.integers(0, 3)),
    }


def _check_constraints(w: World) -> None:
    bound = [p for p in w.api.pods.values() if p.node_name]
    anti = Counter(p.node_name for p in bound if p.labels.get("app") == "anti")
    assert all(c == 1 for c in anti.values()), anti
    nodes = w.api.nodes
    zones = Counter(
        nodes[p.node_name].labels[ZONE] for p in bound if p.labels.get("app") == "spread"
    )
    counts = [zones.get(z, 0) for z in {n.labels[ZONE] for n in nodes.values()}]
    assert max(counts) - min(counts) <= 1, zones


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenarios())
def test_invariants_hold_under_random_interleavings(sc: dict[str, Any]) -> None:
    _run(sc, None)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenarios(), st.lists(st.booleans(), min_size=1, max_size=12))
def test_invariants_hold_with_routing_mixed_in(sc: dict[str, Any], script: list[bool]) -> None:
    router = ScriptedRouter(sc["shards"], script)
    _run(sc, router)
    if script[0] and not sc["gangs"]:  # the first Pod popped ran in the coordinator
        assert router.routed["serial"] > 0


def _run(sc: dict[str, Any], router: ScriptedRouter | None) -> None:
    groups = [pod_group(f"g{i}", "ns", 2) for i in range(2)] if sc["gangs"] else []
    w = World(
        sc["nodes"],
        shards=sc["shards"],
        config=GANG_CONFIG if sc["gangs"] else None,
        seed=sc["seed"],
        round_size=sc["round"],
        objects=groups,
        router=router,
    )
    try:
        w.add(sc["pods"])
        w.run(max_steps=400, crash=sc["crashes"])
        w.check(sc["pods"])
        _check_constraints(w)
        if sc["gangs"]:
            w.check_gangs({"ns/g0": 2, "ns/g1": 2})
    finally:
        w.close()


def test_a_deferred_proposal_is_not_vouched_for_by_commits_decided_after_it() -> None:
    """Found by the test above: after a crash, a restarted shard proposes p07 (anti) on n2
    with n3 among its alternatives, then p09 on n3 filling it.  p07's node fails
    anti-affinity, so the binder defers it and commits p09 first; p07's alternative n3
    must then be checked on the authoritative state -- the shard's own-commit chain (p09)
    vouches only for proposals the shard decided after p09, and p07 was decided before."""
    caps = [(3, 2), (1, 2), (1, 2), (3, 3), (2, 2)]
    nodes = [
        make_node(f"n{i}")
        .cap(cpu=str(cpu), memory="16Gi", pods=pods)
        .labels(**{ZONE: f"z{i % 2}", HOST: f"n{i}"})
        .obj()
        for i, (cpu, pods) in enumerate(caps)
    ]
    kinds = ["anti" if i in (2, 6, 7, 11) else "plain" for i in range(19)]
    sc = {
        "nodes": nodes,
        "pods": [_pod(i, kind, 0) for i, kind in enumerate(kinds)],
        "gangs": False,
        "shards": 2,
        "round": 3,
        "crashes": {4: 1},
        "seed": 0,
    }
    _run(sc, None)
