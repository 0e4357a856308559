"""v1.34's alpha DRA gates in the DRA family's cases (``oracle/dra_cases.py`` calls
:func:`alpha_gates` last, from a stream of its own, so a seed's other draws stay as they
were).  v1.34 lets a user turn on gates its defaults leave off; about half of the v1.34 cases
turn on one or more of:

- **DRADeviceTaints**: taints on ResourceSlice devices and tolerations on the incoming Pod's
  requests (``dra_features``' draws; DeviceTaintRules are not drawn at v1.34).
- **DRADeviceBindingConditions** (with DRAResourceClaimDeviceStatus, beta and on, now and
  then turned off): allocated claims whose results carry ``bindingConditions`` and
  ``bindingFailureConditions``, with the driver's ``status.devices`` conditions (met, failed,
  pending or none) and an ``allocationTimestamp`` long past (the binding timed out) or far
  ahead; in explain cases also devices with binding conditions (a schedule would wait in
  PreBind for them, and a schedule case's allocated claims are met or carry none).
- **DRAAdminAccess** off (beta, on at v1.34): a request that sets ``adminAccess`` (the
  generator's, or an explicit ``false`` drawn here) is refused.
- **DRAPrioritizedList** off (beta, on at v1.34): a claim to allocate with ``firstAvailable``
  requests keeps the Pod off every node (PreFilter).
- **NominatedNodeNameForExpectation** (schedule cases): the binding cycle names the chosen
  node in the Pod's ``status.nominatedNodeName`` before a PreBind that will do something
  (DynamicResources' ``PreBindPreFlight``); the comparison's results and nodes stay.
- **DRAExtendedResource**: the GPU class backs ``example.com/gpu`` (v1.34's mapping: a class
  with ``extendedResourceName`` answers to that name only; no second class names it, since
  v1.34 picks one of two at random), the incoming Pod's containers request it (or an
  extended resource no class backs), some nodes have it in their allocatable (``0`` too:
  v1.34 then counts it as the device plugin's), and in explain cases sometimes the claim an
  earlier cycle created.

From v1.36 (the binding gates on by default) a third of the cases draw the allocated claims'
binding conditions (:func:`binding_claims`).

DRAPartitionableDevices and DRAConsumableCapacity are drawn at every release by
``dra_features.partitions`` (at v1.34 DRAConsumableCapacity with one device per request,
``dra_features.one_device_each``); DRAExtendedResource is not drawn beside the latter.
"""

from __future__ import annotations

import random
from typing import Any

from dra_features import (
    EXT_FPGA,
    EXT_GPU,
    _binding_conditions,
    _device_taints,
    _ext_containers,
    _stale_claim,
)
from request_shape import cluster_items, incoming_pods

PAST = "2026-01-01T00:00:00Z"
"""An ``allocationTimestamp`` whose binding timeout (600 s) has passed."""
FUTURE = "2099-01-01T00:00:00Z"
"""One whose timeout has not."""
ATTACHED, FAILED = "example.com/attached", "example.com/failed"


def alpha_gates(
    seed: int, index: int, request: dict[str, Any], version: str | None, verb: str
) -> None:
    """Draw v1.34's alpha DRA gates into ``request`` (at v1.34, the default build); from
    v1.36, where DRADeviceBindingConditions is on by default, the allocated claims' binding
    conditions only (:func:`binding_claims`)."""
    r = random.Random(f"dra-alpha/{seed}/{index}")
    if version is not None and int(version.split(".")[1]) >= 36:
        gates = request.get("featureGates", {})
        on = gates.get("DRADeviceBindingConditions", True)
        if on and r.random() < 0.35:
            pods = incoming_pods(request)
            binding_claims(r, cluster_items(request), pods, verb)
        return
    if version not in (None, "1.34"):
        return
    if r.random() >= 0.5:
        return
    gates: dict[str, bool] = dict(request.get("featureGates", {}))
    items = cluster_items(request)
    pods = incoming_pods(request)
    if r.random() < 0.45:
        gates["DRADeviceTaints"] = True
        _device_taints(r, items, pods)
    if r.random() < 0.45:
        gates["DRADeviceBindingConditions"] = True
        if r.random() < 0.15:
            gates["DRAResourceClaimDeviceStatus"] = False
        binding_claims(r, items, pods, verb)
        if verb == "explain" and r.random() < 0.5:
            _binding_conditions(r, items)
    # not beside DRAConsumableCapacity (dra_features.one_device_each): an extended
    # resource's claim asks for as many devices as the containers request
    if r.random() < (0.65 if verb == "schedule" else 0.45) and not gates.get(
        "DRAConsumableCapacity"
    ):
        gates["DRAExtendedResource"] = True
        extended_v134(r, request, verb)
    if r.random() < 0.15:
        gates["DRAAdminAccess"] = False
        admin_off(r, items)
    if r.random() < 0.12:
        gates["DRAPrioritizedList"] = False
    if verb == "schedule" and r.random() < 0.3:
        gates["NominatedNodeNameForExpectation"] = True
    if gates:
        request["featureGates"] = gates


def binding_claims(
    r: random.Random, items: list[dict[str, Any]], pods: list[dict[str, Any]], verb: str
) -> None:
    """Binding conditions on allocated claims' results, with the driver's report (on the
    claims the Pods name most of the time; in a schedule case the Pods name the claim no
    Pod holds, when there is one, half of the time: PreBind then waits for its conditions,
    met at once)."""
    named = {e.get("resourceClaimName") for p in pods for e in p["spec"].get("resourceClaims", [])}
    released = next((o for o in items if o["metadata"]["name"] == "released"), None)
    unnamed = verb == "schedule" and released is not None and "released" not in named
    if unnamed and r.random() < 0.5:
        for p in pods:
            entry = f"c{len(p['spec'].get('resourceClaims', []))}b"
            p["spec"].setdefault("resourceClaims", []).append(
                {"name": entry, "resourceClaimName": "released"}
            )
            claims = p["spec"]["containers"][0].setdefault("resources", {})
            claims.setdefault("claims", []).append({"name": entry})
        named.add("released")
    for c in (o for o in items if o.get("kind") == "ResourceClaim"):
        alloc = (c.get("status") or {}).get("allocation")
        if alloc is None or r.random() >= (0.9 if c["metadata"]["name"] in named else 0.4):
            continue
        stamp = r.choice([PAST, FUTURE, None])
        if stamp:
            alloc["allocationTimestamp"] = stamp
        reports = c["status"].setdefault("devices", [])
        for res in alloc["devices"]["results"]:
            res["bindingConditions"] = [ATTACHED]
            res["bindingFailureConditions"] = [FAILED]
            state = "met" if verb == "schedule" else r.choice(["met", "failed", "pending", "none"])
            if state == "none":
                continue
            report = next(
                (
                    d
                    for d in reports
                    if (d["driver"], d["pool"], d["device"])
                    == (res["driver"], res["pool"], res["device"])
                ),
                None,
            )
            if report is None:
                report = {k: res[k] for k in ("driver", "pool", "device")}
                reports.append(report)
            conds = report.setdefault("conditions", [])
            conds.append(_condition(ATTACHED, state == "met"))
            if state == "failed" or r.random() < 0.3:
                conds.append(_condition(FAILED, state == "failed"))
        if not reports:
            del c["status"]["devices"]


def admin_off(r: random.Random, items: list[dict[str, Any]]) -> None:
    """With DRAAdminAccess off: now and then an explicit ``adminAccess: false`` on an
    unallocated claim's request (set at all, it is refused)."""
    for o in items:
        if o.get("kind") != "ResourceClaim" or (o.get("status") or {}).get("allocation"):
            continue
        for req in o["spec"]["devices"]["requests"]:
            if "exactly" in req and r.random() < 0.2:
                req["exactly"].setdefault("adminAccess", False)


def _condition(kind: str, true: bool) -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True" if true else "False",
        "reason": "Reported",
        "message": "",
        "lastTransitionTime": PAST,
    }


def extended_v134(r: random.Random, request: dict[str, Any], verb: str) -> None:
    """DRAExtendedResource as v1.34 has it (the module's docstring); now and then with an
    extended resource no class backs that NodeResourcesFit ignores (``ignoredResources``:
    DynamicResources then says ``cannot fit resource``), hugepages every node has, a
    container requesting none of it (or ``0``), a stale claim with its finalizer, and no
    DeviceClass at all."""
    items = cluster_items(request)
    pods = incoming_pods(request)
    classes = [o for o in items if o.get("kind") == "DeviceClass"]
    gpu = next((o for o in classes if o["metadata"]["name"] == "gpu.example.com"), None)
    if gpu is not None:
        gpu["spec"]["extendedResourceName"] = EXT_GPU
    wanted = [EXT_FPGA] if gpu is None or r.random() < 0.1 else [EXT_GPU]
    ignored = wanted == [EXT_GPU] and r.random() < (0.2 if verb == "explain" else 0.0)
    own_claims = any(p["spec"].get("resourceClaims") for p in pods)
    for n in (o for o in items if o.get("kind") == "Node"):
        if verb == "schedule" and own_claims:
            continue
        for name in wanted:
            if r.random() < 0.3:
                amount = str(r.randint(0, 3))
                n["status"]["allocatable"][name] = amount
                n["status"]["capacity"][name] = amount
    containers = _ext_containers(r, pods[0], wanted)
    if verb == "schedule" and r.random() < 0.6:
        # one device for the main container only: a schedule's one node has few to give
        containers["initContainers"] = []
        del containers["containers"][1:]
        res = containers["containers"][0]["resources"]
        for part in ("requests", "limits"):
            res[part] |= {n: "1" for n in wanted if n in res[part]}
    extras(r, containers, items, ignored)
    if ignored:
        fit = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "NodeResourcesFitArgs",
            "ignoredResources": [EXT_FPGA],
        }
        entry = {"name": "NodeResourcesFit", "args": fit}
        request["config"]["profiles"] = [
            {"schedulerName": "default-scheduler", "pluginConfig": [entry]}
        ]
    for p in pods:
        p["spec"]["containers"] = [dict(c) for c in containers["containers"]]
        if containers["initContainers"]:
            p["spec"]["initContainers"] = [dict(c) for c in containers["initContainers"]]
    if verb == "explain" and r.random() < 0.04:
        # no DeviceClass at all: NodeResourcesFit's mapping is empty (its Pod's claims,
        # if any, name a class that does not exist)
        items[:] = [o for o in items if o.get("kind") != "DeviceClass"]
    if verb == "explain" and r.random() < 0.1:
        _stale_claim(r, items, pods[0])
        if r.random() < 0.5:
            items[-1]["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]


def extras(
    r: random.Random,
    containers: dict[str, list[dict[str, Any]]],
    items: list[dict[str, Any]],
    ignored: bool,
) -> None:
    """What else a Pod with extended resources holds (:func:`extended_v134`)."""
    main = containers["containers"][0]["resources"]
    if ignored:
        main["requests"][EXT_FPGA] = main["limits"][EXT_FPGA] = "1"
    elif EXT_GPU in main["requests"] and r.random() < 0.15:
        main["requests"][EXT_FPGA] = main["limits"][EXT_FPGA] = "0"  # a zero request
    if r.random() < 0.2:
        for n in (o for o in items if o.get("kind") == "Node"):
            n["status"]["allocatable"]["hugepages-2Mi"] = "1Gi"
            n["status"]["capacity"]["hugepages-2Mi"] = "1Gi"
        main["requests"]["hugepages-2Mi"] = main["limits"]["hugepages-2Mi"] = "4Mi"
    if r.random() < 0.25:
        extra: dict[str, Any] = {"name": "side", "image": "app"}
        pick = r.random()
        if pick < 0.4:
            extra["resources"] = {"requests": {"cpu": "10m"}}
        elif pick < 0.7:
            zero = {EXT_GPU: "0"}
            extra["resources"] = {"requests": zero, "limits": dict(zero)}
        containers["containers"].append(extra)
