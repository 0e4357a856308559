"""DynamicResources as each release answers (every expectation checked against kube-oracle
of that release): from v1.35 the allocator passes over incomplete pools and DynamicResources
scores the ``firstAvailable`` alternative a node's allocation takes (v1.35 fails Score with
an error for a Pod holding an allocated claim, v1.36 pairs the claims right)."""

from __future__ import annotations

from typing import Any

import kubesched
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
)

H100 = f'device.attributes["{DRIVER}"].model == "h100"'


def explain(request_: dict[str, Any], version: str) -> dict[str, Any]:
    return kubesched.explain(
        request_["cluster"], request_["pod"], request_["config"], kubernetes_version=version
    )


def incomplete_pool() -> dict[str, Any]:
    """n1's only device is in a pool of two slices of which one is published."""
    devices = slice_("n1", [gpu(0)], count=2)
    items = [node("n1"), devices, device_class(), claim("c", request())]
    return {"cluster": cluster(*items), "pod": pod("p", ("gpu", "resourceClaimName", "c")),
            "config": CONFIG}  # fmt: skip


def test_incomplete_pool_is_used_in_v134_and_skipped_from_v135() -> None:
    assert explain(incomplete_pool(), "1.34")["result"] == "Scheduled"
    for version in ("1.35", "1.36", "1.37"):
        out = explain(incomplete_pool(), version)
        assert out["result"] == "Unschedulable", version
        assert out["message"] == "0/1 nodes are available: 1 cannot allocate all claims."


def prioritized(extra_claim: bool = False) -> dict[str, Any]:
    """n1 has an h100 (the first alternative), n2 an a100 only (the second)."""
    alts = [
        {"name": "big", "deviceClassName": DRIVER, "count": 1,
         "selectors": [{"cel": {"expression": H100}}]},
        {"name": "any", "deviceClassName": DRIVER, "count": 1},
    ]  # fmt: skip
    items = [
        node("n1"),
        node("n2"),
        slice_("n1", [gpu(0, model="h100")]),
        slice_("n2", [gpu(0)]),
        device_class(),
        claim("c", {"name": "gpu", "firstAvailable": alts}),
    ]
    claims = [("gpu", "resourceClaimName", "c")]
    if extra_claim:  # allocated earlier, on every node
        held = claim("held", request())
        held["status"] = {"allocation": {"devices": {"results": []}}}
        items.append(held)
        claims.insert(0, ("held", "resourceClaimName", "held"))
    return {"cluster": cluster(*items), "pod": pod("p", *claims), "config": CONFIG}


def test_first_available_score_from_v135() -> None:
    for version in ("1.35", "1.36", "1.37"):
        out = explain(prioritized(), version)
        assert out["nodes"]["n1"]["scores"]["DynamicResources"] == 100, version
        assert out["nodes"]["n2"]["scores"]["DynamicResources"] == 87, version  # 7 of 8
    assert "DynamicResources" not in explain(prioritized(), "1.34")["nodes"]["n1"]["scores"]


def test_v135_score_fails_with_an_allocated_claim() -> None:
    out = explain(prioritized(extra_claim=True), "1.35")
    assert out["result"] == "Error"
    assert out["message"] == (
        'running Score plugins: plugin "DynamicResources" failed with: number of '
        "allocations 1 is smaller than number of claims"
    )
    out = explain(prioritized(extra_claim=True), "1.36")
    assert out["nodes"]["n2"]["scores"]["DynamicResources"] == 87


def slow_search(timeout: str) -> dict[str, Any]:
    """n1's 32 devices, 16 of each model, cannot give 17 of one model (the constraint
    also keeps the column index out, so the allocator searches every choice: v1.34 and
    v1.35 every ordered one, v1.36+ every subset, its search going on after a request's
    previous device; enough devices are left at every step, so no branch is cut short);
    ``filterTimeout`` bounds the search."""
    same = {"requests": [], "matchAttribute": f"{DRIVER}/model"}
    items = [
        node("n1"),
        slice_("n1", [gpu(i, model="xy"[i % 2]) for i in range(32)]),
        device_class(),
        claim("c", request(count=17), constraints=[same]),
    ]
    config = {**CONFIG, "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
        {"name": "DynamicResources", "args": {"filterTimeout": timeout}}]}]}  # fmt: skip
    return {"cluster": cluster(*items), "pod": pod("p", ("gpu", "resourceClaimName", "c")),
            "config": config}  # fmt: skip


def test_filter_timeout_gives_up_unschedulable_before_v136_and_with_an_error_after() -> None:
    for version in ("1.34", "1.35"):
        out = explain(slow_search("1ms"), version)
        assert out["nodes"]["n1"]["reasons"] == ["timed out trying to allocate devices"], version
        assert out["result"] == "Unschedulable"
    out = explain(slow_search("1ms"), "1.37")
    assert out["result"] == "Error"
    assert "node n1: timed out trying to allocate devices" in out["message"]
