"""DynamicResources' device columns and result reuse: the column decides a node exactly as
the allocator would, the allocator runs only where the column cannot decide (and at Reserve),
and Pods with claims from one template share results without a device allocated twice."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kubesched
from kubesched.api.parse import parse_node, parse_pod
from kubesched.config.load import load_config
from kubesched.devices import allocator
from kubesched.devices import draindex as index
from kubesched.plugins.dynamicresources.plugin import DynamicResources
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim.driver import SimCluster
from tests.plugins._dra import (
    CONFIG,
    DRIVER,
    claim,
    cluster,
    device_class,
    gpu,
    node,
    pod,
    request,
    slice_,
    template,
)

BIG = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'
FRAGILE = f'device.attributes["{DRIVER}"].fast'
"""A runtime error on devices without the ``fast`` attribute."""


def _allocated(name: str, pool: str, devices: list[int]) -> dict[str, Any]:
    c = claim(name, request(count=len(devices)))
    results = [
        {"request": "gpu", "driver": DRIVER, "pool": pool, "device": f"gpu-{i}"} for i in devices
    ]
    c["status"] = {"allocation": {"devices": {"results": results}}}
    return c


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    n = draw(st.integers(1, 4))
    items: list[dict[str, Any]] = [node(f"n{i}", {"zone": f"z{i % 2}"}) for i in range(n)]
    for i in range(n):
        devs = [
            gpu(k, mem=draw(st.sampled_from(["20Gi", "40Gi", "80Gi"])))
            for k in range(draw(st.integers(0, 5)))
        ]
        for d in devs:
            if draw(st.booleans()):
                d["attributes"]["fast"] = {"bool": True}
        items.append(slice_(f"n{i}", devs))
        taken = draw(st.lists(st.integers(0, len(devs) - 1), unique=True)) if devs else []
        if taken:
            items.append(_allocated(f"taken-{i}", f"n{i}", taken))
    if draw(st.booleans()):
        shared = [gpu(k, mem="40Gi", fast={"bool": True}) for k in range(draw(st.integers(1, 3)))]
        sel = {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z0"]}]}
            ]
        }
        items.append(slice_(None, shared, pool="shared", nodeSelector=sel))
    items.append(device_class())
    selectors = draw(st.sampled_from([(), (BIG,), (FRAGILE,)]))
    reqs = [
        request(f"r{k}", count=draw(st.integers(1, 4)), selectors=selectors)
        for k in range(draw(st.integers(1, 2)))
    ]
    items.append(claim("c", *reqs))
    return items, pod("p", ("gpu", "resourceClaimName", "c"))


def _verdicts(out: dict[str, Any]) -> Any:
    nodes = {k: (v["feasible"], v["reasons"]) for k, v in out["nodes"].items()}
    return out["result"], out["message"], out["selectedNode"], nodes


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_the_column_answers_as_the_allocator(
    case: tuple[list[dict[str, Any]], dict[str, Any]],
) -> None:
    items, the_pod = case
    fast = kubesched.explain(cluster(*items), the_pod, CONFIG)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(index, "plan", lambda claims: None)
        slow = kubesched.explain(cluster(*items), the_pod, CONFIG)
    assert _verdicts(fast) == _verdicts(slow)


def test_a_decided_node_is_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = allocator.allocate_in

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(allocator, "allocate_in", counting)
    items = [node(f"n{i}") for i in range(5)]
    items += [slice_(f"n{i}", [gpu(k) for k in range(i)]) for i in range(5)]
    out = kubesched.explain(
        cluster(*items, device_class(), claim("c", request(count=3))),
        pod("p", ("gpu", "resourceClaimName", "c")),
        CONFIG,
    )
    assert [k for k, v in out["nodes"].items() if v["feasible"]] == ["n3", "n4"]
    assert out["nodes"]["n0"]["reasons"] == ["cannot allocate all claims"]
    assert len(calls) <= 1  # no node searched device by device in Filter (Reserve: one)


def _sim(batching: bool, pods: int) -> SimCluster:
    sim = SimCluster(load_config(None, known_plugins=known_plugin_names()))
    sim.scheduler.batch.enabled = batching
    for i in range(4):
        sim.api.create_node(parse_node(node(f"n{i}")))
        sim.api.apply_object(slice_(f"n{i}", [gpu(k) for k in range(3)]))
    sim.api.apply_object(device_class())
    sim.api.apply_object(template("one", request(count=1)))
    for i in range(pods):
        sim.api.create_pod(parse_pod(pod(f"p{i:02d}", ("gpu", "resourceClaimTemplateName", "one"))))
    while not sim.quiet() and sim.loop.step():
        pass
    return sim


def test_template_pods_share_results_and_never_a_device() -> None:
    on, off = _sim(True, 14), _sim(False, 14)
    placed = {k: p.node_name for k, p in on.api.pods.items()}
    assert placed == {k: p.node_name for k, p in off.api.pods.items()}
    assert sum(1 for v in placed.values() if v) == 12
    assert on.scheduler.batch.attempts["hit"] > 0
    taken: Counter[tuple[str, str]] = Counter()
    for (kind, _), obj in on.api.objects.items():
        if kind == "ResourceClaim":
            results = ((obj.get("status") or {}).get("allocation") or {}).get("devices", {})
            taken.update((d["pool"], d["device"]) for d in results.get("results", []))
    assert len(taken) == 12 and max(taken.values()) == 1


def test_a_pod_with_an_allocated_claim_does_not_sign() -> None:
    sim = _sim(True, 1)
    plugin = next(
        p
        for p in sim.scheduler.profiles["default-scheduler"].plugins["filter"]
        if p.name == "DynamicResources"
    )
    (bound,) = sim.api.pods.values()
    assert plugin.sign(bound) is None
    fresh = [parse_pod(pod(f"q{i}", ("gpu", "resourceClaimTemplateName", "one"))) for i in (1, 2)]
    for p in fresh:
        sim.api.create_pod(p)
    a, b = (plugin.sign(sim.api.pods[p.key]) for p in fresh)
    assert a is not None and a == b


def _churn(pods: int) -> tuple[dict[str, str], dict[str, list[str]], int]:
    """Template Pods whose claim asks three devices under one ``matchAttribute`` on six
    nodes (alternating PCI roots), some deleted and replaced as they go: where each went,
    the devices each claim got, and the device searches Filter and Reserve ran."""
    calls: list[int] = []
    real = allocator.allocate_in

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(allocator, "allocate_in", counting)
        sim = SimCluster(load_config(None, known_plugins=known_plugin_names()))
        for i in range(6):
            sim.api.create_node(parse_node(node(f"n{i}")))
            devs = [gpu(k) for k in range(7)]
            for k, d in enumerate(devs):
                d["attributes"]["resource.kubernetes.io/pciRoot"] = {"string": f"pci-{k % 2}"}
            sim.api.apply_object(slice_(f"n{i}", devs))
        sim.api.apply_object(device_class())
        t = template("match", *(request(f"r{k}", count=1) for k in range(3)))
        t["spec"]["spec"]["devices"]["constraints"] = [
            {"matchAttribute": "resource.kubernetes.io/pciRoot"}
        ]
        sim.api.apply_object(t)
        for i in range(pods):
            p = parse_pod(pod(f"p{i:02d}", ("gpu", "resourceClaimTemplateName", "match")))
            sim.api.create_pod(p)
            while not sim.quiet() and sim.loop.step():
                pass
            if i % 3 == 2:  # a bound Pod goes: its claim's devices are free again
                gone = sim.api.pods[f"default/p{i - 1:02d}"]
                sim.api.delete_pod(gone)
                while not sim.quiet() and sim.loop.step():
                    pass
        placed = {k: p.node_name for k, p in sim.api.pods.items()}
        devices: dict[str, list[str]] = {}
        for (kind, key), obj in sim.api.objects.items():
            if kind == "ResourceClaim":
                results = ((obj.get("status") or {}).get("allocation") or {}).get("devices", {})
                devices[key] = [f"{d['pool']}/{d['device']}" for d in results.get("results", [])]
    return placed, devices, len(calls)


def test_kept_answers_place_and_allocate_as_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The allocator's answers kept per row and claim shape (``DeviceIndex.known``) change
    no placement and no device, and spare most searches."""
    kept = _churn(20)
    monkeypatch.setattr(DynamicResources, "_kept_answers", lambda self, s: None)
    searched = _churn(20)
    assert kept[:2] == searched[:2]
    assert sum(1 for v in kept[0].values() if v) == 12  # 12 fit: of 20 made, 6 deleted
    assert kept[2] * 3 < searched[2]
