"""DRAExtendedResource through the device columns: the special claim's variant is decided
by a column on the nodes the column is exact on, exactly as the allocator decides it (every
verdict, every placement), the allocator runs only where the column cannot decide (and at
Reserve), and the per-node answers (which resources a node gets from DRA) follow node
updates."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kubesched
from kubesched.api.parse import parse_node, parse_pod
from kubesched.config.load import load_config
from kubesched.devices import allocator
from kubesched.devices import draindex as index
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim.driver import SimCluster
from tests.plugins._dra import CONFIG, claim, cluster, gpu, node, request, slice_
from tests.plugins.test_dynamicresources_extended import (
    GPU,
    ext_pod,
    gpu_class,
    with_allocatable,
)

TAINT = {"key": "broken", "value": "yes", "effect": "NoSchedule"}


def _pod(name: str, amount: int, own_claim: bool = False) -> dict[str, Any]:
    out = ext_pod(str(amount))
    out["metadata"] |= {"name": name, "uid": f"uid-{name}"}
    if own_claim:
        out["spec"]["resourceClaims"] = [{"name": "own", "resourceClaimName": "own"}]
        out["spec"]["containers"][0]["resources"]["claims"] = [{"name": "own"}]
    return out


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    n = draw(st.integers(1, 4))
    items: list[dict[str, Any]] = []
    for i in range(n):
        obj = node(f"n{i}")
        have = draw(st.sampled_from([None, None, "0", "2"]))
        if have is not None:  # a device plugin's resource: DRA is asked only for "0"
            obj = with_allocatable(obj, GPU, have)
        items.append(obj)
        devs = [gpu(k) for k in range(draw(st.integers(0, 5)))]
        for d in devs:
            if draw(st.integers(0, 9)) == 0:  # the allocator decides the row
                d["taints"] = [TAINT]
        items.append(slice_(f"n{i}", devs))
    items.append(gpu_class())
    own = draw(st.booleans())
    if own:
        items.append(claim("own", request(count=draw(st.integers(1, 2)))))
    pods = [_pod(f"p{k}", draw(st.integers(1, 3)), own) for k in range(draw(st.integers(1, 3)))]
    return items, pods


def _verdicts(out: dict[str, Any]) -> Any:
    nodes = {k: (v["feasible"], v["reasons"]) for k, v in out["nodes"].items()}
    return out["result"], out["message"], out["selectedNode"], nodes


def _placements(out: dict[str, Any]) -> Any:
    return {k: (v["result"], v.get("node"), v.get("message")) for k, v in out["pods"].items()}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_the_column_answers_for_the_special_claim_as_the_allocator(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    items, pods = case
    fast = kubesched.explain(cluster(*items), pods[0], CONFIG, kubernetes_version="1.37")
    placed = kubesched.schedule(cluster(*items), pods, CONFIG, kubernetes_version="1.37")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(index, "plan", lambda claims: None)
        slow = kubesched.explain(cluster(*items), pods[0], CONFIG, kubernetes_version="1.37")
        searched = kubesched.schedule(cluster(*items), pods, CONFIG, kubernetes_version="1.37")
    assert _verdicts(fast) == _verdicts(slow)
    assert _placements(placed) == _placements(searched)


def test_a_node_the_column_decides_is_not_searched_for_extended_resources(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    real = allocator.allocate_in

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(allocator, "allocate_in", counting)
    items = [node(f"n{i}") for i in range(5)]
    items += [slice_(f"n{i}", [gpu(k) for k in range(i)]) for i in range(5)]
    out = kubesched.explain(cluster(*items, gpu_class()), ext_pod("3"), CONFIG)
    assert [k for k, v in out["nodes"].items() if v["feasible"]] == ["n3", "n4"]
    assert out["nodes"]["n0"]["reasons"] == ["cannot allocate all claims"]
    assert len(calls) <= 1  # no node searched device by device in Filter (Reserve: one)


def test_the_per_node_answers_follow_a_node_update() -> None:
    sim = SimCluster(load_config(None, known_plugins=known_plugin_names()))  # v1.37
    sim.api.create_node(parse_node(node("n0")))
    sim.api.create_node(parse_node(node("n1")))
    sim.api.apply_object(slice_("n0", [gpu(0)]))
    sim.api.apply_object(gpu_class())

    def run(name: str) -> str:
        sim.api.create_pod(parse_pod(_pod(name, 1)))
        while not sim.quiet() and sim.loop.step():
            pass
        return sim.api.pods[f"default/{name}"].node_name

    assert run("p0") == "n0"  # n1 has no device and no allocatable for it
    # n1 gets the resource from its device plugin: it no longer asks DRA
    sim.api.update_node(parse_node(with_allocatable(node("n1"), GPU, "1")))
    assert run("p1") == "n1"
