"""DeviceFragmentation: the device score keeps whole groups and whole nodes free, steers which
devices the allocator takes, never allocates a device twice, and changes nothing when off."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kubesched
from kubesched.api import resource as r
from kubesched.api.errors import InputError
from kubesched.api.parse import parse_node, parse_pod
from kubesched.config.load import load_config
from kubesched.devices import drafrag
from kubesched.devices.pools import gather_pools
from kubesched.plugins import devicefragmentation
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim.driver import SimCluster
from tests.plugins._dra import DRIVER, cluster, device_class, gpu, node, pod, request, slice_
from tests.plugins._dra import claim as make_claim
from tests.plugins._dra import template as make_template

NAME = "DeviceFragmentation"


def config(score: bool) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,
    }
    if score:
        plugins = {"score": {"enabled": [{"name": NAME, "weight": 10}]}}
        cfg["profiles"] = [{"schedulerName": "default-scheduler", "plugins": plugins}]
    return cfg


def grouped(node_name: str, used: tuple[int, ...] = (), n: int = 8) -> list[dict[str, Any]]:
    """``n`` GPUs in NVLink domains of 4 (gpu-0..3: domain 0), ``used`` already taken."""
    devices = [gpu(i, nvlinkDomain={"int": i // 4}) for i in range(n)]
    out = [slice_(node_name, devices)]
    if used:
        c = make_claim(f"taken-{node_name}", request(count=len(used)))
        results = [
            {"request": "gpu", "driver": DRIVER, "pool": node_name, "device": f"gpu-{i}"}
            for i in used
        ]
        c["status"] = {"allocation": {"devices": {"results": results}}}
        out.append(c)
    return out


def run(objects: list[dict[str, Any]], pods: list[dict[str, Any]], score: bool) -> SimCluster:
    sim = SimCluster(load_config(config(score), known_plugins=known_plugin_names()))
    for obj in objects:
        if obj["kind"] == "Node":
            sim.api.create_node(parse_node(obj))
        else:
            sim.api.apply_object(obj)
    for p in pods:
        sim.api.create_pod(parse_pod(p))
    while not sim.quiet() and sim.loop.step():
        pass
    return sim


def taken(sim: SimCluster) -> Counter[tuple[str, str]]:
    out: Counter[tuple[str, str]] = Counter()
    for (kind, _), obj in sim.api.objects.items():
        if kind == "ResourceClaim":
            alloc = (obj.get("status") or {}).get("allocation") or {}
            out.update(
                (d["pool"], d["device"]) for d in alloc.get("devices", {}).get("results", [])
            )
    return out


def claiming(name: str, count: int) -> dict[str, Any]:
    return pod(name, ("gpu", "resourceClaimTemplateName", f"gpus-{count}"))


TEMPLATES = [make_template(f"gpus-{k}", request(count=k)) for k in (1, 2, 3, 4)]


def test_the_score_prefers_the_node_that_keeps_a_whole_group_free() -> None:
    # n1: idle (two whole domains); n2: domain 0 half used. Two GPUs fit best in n2's half.
    items = [node("n1"), node("n2"), device_class(), *grouped("n1"), *grouped("n2", (0, 1))]
    c = make_claim("c", request(count=2))
    out = kubesched.explain(
        cluster(*items, c), pod("p", ("gpu", "resourceClaimName", "c")), config(True)
    )
    assert out["selectedNode"] == "n2"
    assert out["nodes"]["n2"]["scores"][NAME] == 100
    assert out["nodes"]["n1"]["scores"][NAME] < 100


def test_the_score_steers_which_devices_are_allocated() -> None:
    # one node: domain 0 idle, domain 1 half used; first fit takes gpu-0, gpu-1 (breaking
    # domain 0), the score takes the free half of domain 1
    objects = [node("n1"), device_class(), *grouped("n1", (4, 5)), *TEMPLATES]
    on = run(objects, [claiming("p", 2)], score=True)
    off = run(objects, [claiming("p", 2)], score=False)
    mine = {d for d in taken(on) if d[0] == "n1"} - {("n1", "gpu-4"), ("n1", "gpu-5")}
    first = {d for d in taken(off) if d[0] == "n1"} - {("n1", "gpu-4"), ("n1", "gpu-5")}
    assert mine == {("n1", "gpu-6"), ("n1", "gpu-7")}
    assert first == {("n1", "gpu-0"), ("n1", "gpu-1")}  # upstream's first fit when off


def test_choose_takes_the_tightest_group_and_counts_the_waste() -> None:
    table = drafrag.waste_table({2: 1.0}, 2)
    assert table.tolist() == [0.0, 1.0, 0.0]  # one free device strands itself for pairs
    devs = [drafrag.Dev(("d", "p", f"g{i}"), ((i // 4,),)) for i in (0, 1, 2, 3, 6, 7)]
    cost, chosen = drafrag.choose(devs, 2, table)
    assert chosen == (("d", "p", "g6"), ("d", "p", "g7")) and cost == 0.0
    cost, chosen = drafrag.choose(devs[:3], 2, table)  # 3 free in one group: 1 stranded
    assert cost == 1.0 + 1.0  # the group and the node each left with one device


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    objects: list[dict[str, Any]] = [device_class(), *TEMPLATES]
    for i in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, 8))
        used = tuple(sorted(draw(st.sets(st.integers(0, n - 1), max_size=n))))
        objects += [node(f"n{i}"), *grouped(f"n{i}", used, n)]
    counts = draw(st.lists(st.integers(1, 4), min_size=1, max_size=10))
    return objects, [claiming(f"p{j}", k) for j, k in enumerate(counts)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_no_device_is_allocated_twice(case: Any) -> None:
    objects, pods = case
    sim = run(objects, pods, score=True)
    assert max(taken(sim).values(), default=1) == 1
    plain = run(objects, pods, score=False)
    bound = [p for p in sim.api.pods.values() if p.node_name]
    # each bound Pod holds exactly the devices its template asks for
    for p in bound:
        ((_, name),) = p.resource_claim_statuses
        obj = sim.api.objects[("ResourceClaim", f"default/{name}")]
        results = obj["status"]["allocation"]["devices"]["results"]
        assert len(results) == int(
            p.raw["spec"]["resourceClaims"][0]["resourceClaimTemplateName"][-1]
        )
    assert len(bound) >= 1 or not any(p.node_name for p in plain.api.pods.values())


def test_bad_args_name_their_field() -> None:
    with pytest.raises(InputError, match=r"targetWorkload\[0\]\.count"):
        devicefragmentation.new({"targetWorkload": [{"count": 0}]}, None)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="groupAttributes"):
        devicefragmentation.new({"groupAttributes": "numa"}, None)  # type: ignore[arg-type]


def test_normalize_gives_the_least_waste_100() -> None:
    plugin = devicefragmentation.new(None, None)  # type: ignore[arg-type]
    scores = np.array([-2000, 0, -1000], dtype=np.int64)
    plugin.normalize_score(None, None, scores)  # type: ignore[arg-type]
    assert scores.tolist() == [0, 100, 50]


def test_preferred_pools_put_the_chosen_devices_first() -> None:
    slices = [r.parse_slice(slice_("n1", [gpu(i) for i in range(4)]))]
    pools = gather_pools(slices, "n1", {})
    ids = [(DRIVER, "n1", "gpu-3"), (DRIVER, "n1", "gpu-1")]
    order = [
        d.name for p in drafrag.preferred_pools(pools, ids) for s in p.slices for d in s.devices
    ]
    assert order == ["gpu-3", "gpu-1", "gpu-0", "gpu-2"]
    assert drafrag.preferred_pools(pools, []) == pools
