"""v1.34's DRAConsumableCapacity (alpha) in the DRA family (issue 30, item 3): the gate turned
on in some v1.34 cases (``dra_features.partitions``), with one device per request and the
shared pool's devices in slices of their own (``dra_features.one_device_each``: v1.34's
experimental allocator checks a request against the device at the request's device index
in the chosen device's slice), so upstream's shared-device paths (``GatherAllocatedState``,
the tracker's share IDs and consumed capacity) run and agree with kubesched."""

from __future__ import annotations

from typing import Any

from compare import differences, ours
from dra_cases import dra_case

SEED = 1


def _gated(n: int) -> list[dict[str, Any]]:
    return [
        c
        for c in (dra_case(SEED, i) for i in range(n))
        if c.get("featureGates", {}).get("DRAConsumableCapacity")
    ]


def _requests(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The device requests (and alternatives) of the incoming Pod's claims to allocate."""
    names = {
        e.get("resourceClaimName") or e.get("resourceClaimTemplateName")
        for e in case["pod"]["spec"].get("resourceClaims", [])
    }
    out = []
    for o in case["cluster"]["items"]:
        if o["kind"] == "ResourceClaim" and o["metadata"]["name"] in names:
            if (o.get("status") or {}).get("allocation"):
                continue
            spec = o["spec"]
        elif o["kind"] == "ResourceClaimTemplate" and o["metadata"]["name"] in names:
            spec = o["spec"]["spec"]
        else:
            continue
        for r in spec["devices"]["requests"]:
            out += [r["exactly"]] if "exactly" in r else r["firstAvailable"]
    return out


def _shared(o: dict[str, Any]) -> bool:
    """Whether ``o`` is a claim allocated a share of a device (``shareID``)."""
    results = ((o.get("status") or {}).get("allocation") or {}).get("devices", {})
    return any("shareID" in r for r in results.get("results", []))


def test_v1_34_cases_turn_consumable_capacity_on_with_one_device_per_request() -> None:
    gated = _gated(300)
    assert len(gated) >= 15
    shared_slices = 0
    for case in gated:
        for e in _requests(case):
            assert e.get("count") == 1 and "allocationMode" not in e
        for o in case["cluster"]["items"]:
            devices = o["spec"].get("devices", []) if o["kind"] == "ResourceSlice" else []
            if any(d.get("allowMultipleAllocations") for d in devices):
                assert len(devices) == 1
                shared_slices += 1
    assert shared_slices >= 10


def test_v1_34_consumable_capacity_cases_match_upstream(oracle: Any) -> None:
    gated = _gated(150)
    shares = [c for c in gated if any(_shared(o) for o in c["cluster"]["items"])]
    assert len(shares) >= 3
    for case in gated[:20]:
        assert differences(ours(case), oracle.ask(case)) == []
