"""DynamicResources with consumable capacity (DRAConsumableCapacity, on from v1.36): shares
allocated earlier (results with ``shareID`` and ``consumedCapacity``) limit later ones, and
what the resource.k8s.io/v1beta2 API and the CEL environment add for it."""

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

V = "1.36"


def shared_slice() -> dict[str, Any]:
    d = gpu(0) | {"allowMultipleAllocations": True, "capacity": {"memory": {"value": "8Gi"}}}
    return slice_("n1", [d], pool="s")


def asking(name: str, memory: str) -> dict[str, Any]:
    req = request()
    req["exactly"]["capacity"] = {"requests": {"memory": memory}}
    return claim(name, req)


def held(memory: str) -> dict[str, Any]:
    c = asking("held", memory)
    result = {"request": "gpu", "driver": DRIVER, "pool": "s", "device": "gpu-0",
              "shareID": "00000000-0000-4000-8000-000000000001",
              "consumedCapacity": {"memory": memory}}  # fmt: skip
    c["status"] = {"allocation": {"devices": {"results": [result]}},
                   "reservedFor": [{"resource": "pods", "name": "x", "uid": "u"}]}  # fmt: skip
    return c


def explain(*items: Any, gates: dict[str, bool] | None = None) -> dict[str, Any]:
    the_pod = pod("p", ("gpu", "resourceClaimName", "c"))
    return kubesched.explain(
        cluster(node("n1"), shared_slice(), *items), the_pod, CONFIG,
        kubernetes_version=V, feature_gates=gates or {},
    )  # fmt: skip


def test_a_share_allocated_earlier_leaves_the_rest_of_the_device() -> None:
    assert explain(device_class(), held("6Gi"), asking("c", "2Gi"))["result"] == "Scheduled"
    out = explain(device_class(), held("6Gi"), asking("c", "3Gi"))
    assert out["result"] == "Unschedulable" and "cannot allocate all claims" in out["message"]


def test_without_the_gate_a_share_holds_its_device_and_capacity_requests_are_refused() -> None:
    off = {"DRAConsumableCapacity": False}
    out = explain(device_class(), held("1Gi"), claim("c"), gates=off)
    assert out["result"] == "Unschedulable"
    out = explain(device_class(), asking("c", "1Gi"), gates=off)
    assert out["result"] == "Error"
    assert (
        "has capacity requests, but the DRAConsumableCapacity feature is disabled"
        in (out["message"])
    )


def test_a_v1beta2_class_may_select_devices_that_allow_multiple_allocations() -> None:
    klass = device_class(DRIVER, "device.allowMultipleAllocations == true")
    klass["apiVersion"] = "resource.k8s.io/v1beta2"
    assert explain(klass, asking("c", "1Gi"))["result"] == "Scheduled"
    klass["spec"]["selectors"][1]["cel"]["expression"] = "!device.allowMultipleAllocations"
    assert explain(klass, asking("c", "1Gi"))["result"] == "Unschedulable"
