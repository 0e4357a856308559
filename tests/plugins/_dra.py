"""Builders for DRA objects (resource.k8s.io/v1) and Pods that claim them."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
DRIVER = "gpu.example.com"
API = "resource.k8s.io/v1"
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "percentageOfNodesToScore": 100,
}


def node(name: str, labels: dict[str, str] | None = None) -> Obj:
    res = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "status": {"allocatable": res, "capacity": res}}  # fmt: skip


def gpu(i: int, mem: str = "40Gi", model: str = "a100", **attrs: Any) -> Obj:
    attributes = {"model": {"string": model}, "index": {"int": i}}
    attributes.update({k: v for k, v in attrs.items()})
    return {"name": f"gpu-{i}", "attributes": attributes, "capacity": {"memory": {"value": mem}}}


def slice_(
    node_name: str | None,
    devices: list[Obj],
    *,
    name: str = "",
    pool: str = "",
    driver: str = DRIVER,
    generation: int = 1,
    count: int = 1,
    **where: Any,
) -> Obj:
    spec: Obj = {"driver": driver, "devices": devices,
                 "pool": {"name": pool or node_name or "shared", "generation": generation,
                          "resourceSliceCount": count}}  # fmt: skip
    if node_name:
        spec["nodeName"] = node_name
    spec.update(where)
    return {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node_name or 'shared'}-{driver}"},
        "spec": spec,
    }


def gpus(node_name: str, n: int, start: int = 0, **kw: Any) -> Obj:
    return slice_(node_name, [gpu(i, **kw) for i in range(start, start + n)])


def device_class(name: str = DRIVER, *extra: str) -> Obj:
    sels = [f'device.driver == "{DRIVER}"', *extra]
    return {
        "apiVersion": API,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": s}} for s in sels]},
    }


def request(
    name: str = "gpu",
    count: int | None = 1,
    *,
    selectors: tuple[str, ...] = (),
    mode: str | None = None,
    klass: str = DRIVER,
) -> Obj:
    ex: Obj = {"deviceClassName": klass}
    if mode:
        ex["allocationMode"] = mode
    if count is not None and mode != "All":
        ex["count"] = count
    if selectors:
        ex["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": ex}


def claim_spec(*requests: Obj, constraints: list[Obj] | None = None) -> Obj:
    devices: Obj = {"requests": list(requests or [request()])}
    if constraints:
        devices["constraints"] = constraints
    return {"devices": devices}


def claim(name: str, *requests: Obj, ns: str = "default", **kw: Any) -> Obj:
    return {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-claim-{name}"},
        "spec": claim_spec(*requests, **kw),
    }


def template(name: str, *requests: Obj, ns: str = "default") -> Obj:
    return {
        "apiVersion": API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": claim_spec(*requests)},
    }


def pod(
    name: str,
    *claims: tuple[str, str, str],
    ns: str = "default",
    node_name: str = "",
    statuses: tuple[tuple[str, str], ...] = (),
) -> Obj:
    """``claims`` are ``(pod claim name, "resourceClaimName" | "resourceClaimTemplateName",
    object name)``."""
    spec: Obj = {
        "containers": [
            {
                "name": "c",
                "image": "app",
                "resources": {
                    "requests": {"cpu": "100m"},
                    "claims": [{"name": c[0]} for c in claims],
                },
            }
        ]
    }
    if claims:
        spec["resourceClaims"] = [{"name": c[0], c[1]: c[2]} for c in claims]
    if node_name:
        spec["nodeName"] = node_name
    out: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}"},
        "spec": spec,
    }
    if statuses:
        out["status"] = {
            "resourceClaimStatuses": [{"name": a, "resourceClaimName": b} for a, b in statuses]
        }
    return out


def cluster(*items: Obj) -> Obj:
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}
