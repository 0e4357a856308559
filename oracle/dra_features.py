"""What each release's DRA adds to the DRA family's cases (``oracle/dra_cases.py`` calls
:func:`release_features` once, LAST, so a seed's cases stay as they were at v1.34 and before
this module): the features that changed between v1.34 and v1.37, each under the gate that
governs it, with random settings of those gates the release lets a user set.

- **DRADeviceTaints** (alpha, off at v1.35; beta, on at v1.36; GA at v1.37): taints on
  ResourceSlice devices (``NoSchedule``, ``NoExecute``, ``None``) and tolerations on the
  incoming Pod's requests (``Exists`` with or without a key, ``Equal``, with or without an
  effect).  A request's spec is shared by a template and the claim made from it, so both
  carry the same tolerations.
- **DRADeviceTaintRules** (alpha at v1.35, beta off at v1.36, GA at v1.37): DeviceTaintRule
  objects in the version the release's scheduler watches (v1alpha3, v1beta2, v1), selecting
  by driver, pool and device, or without a selector (every device at v1.35 and v1.36, none
  at v1.37).

- **DRADeviceBindingConditions** (with DRAResourceClaimDeviceStatus; beta, on at v1.36 and
  v1.37): devices with ``bindingConditions`` (and ``bindingFailureConditions``), explain
  cases only (a schedule would wait in PreBind for the conditions); the gate is set from
  v1.36 only (at v1.35 it selects upstream's ``experimental`` allocator).

- **DRAExtendedResource** (alpha at v1.35, beta at v1.36, GA at v1.37): extended
  resources backed by DeviceClasses (:func:`extended_resources`).

- **DRAPartitionableDevices** and **DRAConsumableCapacity** (alpha, off at v1.34 and v1.35;
  beta, on at v1.36 and v1.37), drawn at every release with random settings of both gates
  (:func:`partitions`): a pool of partitions sharing counters (v1.34: ``sharedCounters``
  beside the devices; v1.35+: in a slice of their own), sometimes with per-device node
  selection; devices with ``allowMultipleAllocations`` and capacities with request
  policies (a default, valid values or a valid range); claims of running Pods holding
  partitions and shares (``shareID``, ``consumedCapacity``); incoming requests with
  ``capacity`` and ``distinctAttribute`` constraints.

- **DRAFractionalCapacityRange** (beta, off, at v1.37; needs DRAConsumableCapacity):
  :func:`fractional_capacity`, a stream of its own drawn after everything else.
"""

from __future__ import annotations

import json
import random
from typing import Any

from request_shape import cluster_items, incoming_pods, node_names

# The DRA gates a case may set, in the order they are drawn.
DRA_GATES = ["DRADeviceTaints", "DRADeviceTaintRules", "DRADeviceBindingConditions"]
# The DeviceTaintRule version each release's scheduler watches.
RULE_API = {35: "resource.k8s.io/v1alpha3", 36: "resource.k8s.io/v1beta2"}
TAINT_KEYS = ["gpu.example.com/unhealthy", "maintenance"]
TAINT_VALUES = ["", "true", "ecc"]
EFFECTS = ["NoSchedule", "NoExecute", "None"]


def _minor(version: str) -> int:
    return int(version.split(".")[1])


def settable(version: str) -> list[str]:
    """The gates of :data:`DRA_GATES` a user may set at ``version`` (known, not locked).
    DRADeviceBindingConditions only from v1.36: at v1.35 it selects upstream's
    ``experimental`` allocator, which kubesched does not model."""
    from kubesched.config.featuregates import gate_table

    table = gate_table(version)
    return [
        g
        for g in DRA_GATES
        if g in table
        and not table[g].lock_to_default
        and (g != "DRADeviceBindingConditions" or _minor(version) >= 36)
    ]


def release_features(
    r: random.Random, request: dict[str, Any], version: str | None, verb: str = "explain"
) -> None:
    """Draw what ``version`` (1.35+) adds into ``request`` (``cluster.items`` and ``pod``),
    and ``featureGates`` when a gate is set; devices with binding conditions only for the
    ``explain`` verb (a schedule would wait in PreBind, which kubesched does not model).
    Partitionable devices and consumable capacity at every release, from a stream of
    their own (the other draws stay as they were)."""
    _release_features(r, request, version, verb)
    partitions(random.Random(f"{r.random()}/partitions"), request, version or "1.34")


def _release_features(
    r: random.Random, request: dict[str, Any], version: str | None, verb: str
) -> None:
    if version is None or _minor(version) < 35:
        return
    from kubesched.config.featuregates import check_settings

    items = cluster_items(request)
    pods = incoming_pods(request)
    if r.random() < 0.5:
        _device_taints(r, items, pods)
    if r.random() < 0.35:
        _taint_rules(r, items, RULE_API.get(_minor(version), "resource.k8s.io/v1"))
    gates: dict[str, bool] = {}
    for g in settable(version):
        if r.random() < 0.4:
            gates[g] = r.random() < 0.5
    if gates and not check_settings(version, sorted(gates.items())):
        request["featureGates"] = {**request.get("featureGates", {}), **gates}
    if verb == "explain" and _minor(version) >= 36 and r.random() < 0.35:
        _binding_conditions(r, items)
    extended_resources(r, request, version, verb)


# ---------------------------------------------------------------- DRAExtendedResource
EXT_GPU = "example.com/gpu"
"""The extended resource a GPU DeviceClass backs (``spec.extendedResourceName``)."""
EXT_FPGA = "example.com/fpga"
"""An extended resource no class backs (device plugins only)."""
IMPLICIT = "deviceclass.resource.kubernetes.io/"
STAMPS = ["2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"]


def extended_resources(
    r: random.Random, request: dict[str, Any], version: str, verb: str = "explain"
) -> None:
    """DRAExtendedResource (alpha at v1.35, beta at v1.36, GA at v1.37), drawn after
    everything else (so the other draws stay as they were): the GPU class names
    ``example.com/gpu`` (now and then a second class names it too, older, newer or as old:
    the newer wins, ties to the smaller name), the incoming Pod's containers (a regular
    one, sometimes a sidecar and a non-sidecar init container) request it, a class's
    implicit ``deviceclass.resource.kubernetes.io/<class>`` name, or an extended resource
    no class backs; some nodes have the resource in their allocatable (a device plugin);
    in explain cases, sometimes the claim an earlier cycle created for the Pod.  A
    losing class's implicit name is never requested (upstream's answer depends on the
    order its informer adds the classes).  Schedule cases give no node the resource in
    its allocatable when the Pod has claims of its own (upstream's PreBind then fails to
    write an empty mapping and retries for ever)."""
    if r.random() >= 0.45:
        return
    from kubesched.config.featuregates import check_settings, gate_table

    table = gate_table(version)
    spec = table.get("DRAExtendedResource")
    if spec is None:
        return
    gates = dict(request.get("featureGates", {}))
    if not spec.lock_to_default and (not spec.default or r.random() < 0.15):
        gates["DRAExtendedResource"] = not spec.default or r.random() < 0.2
        if check_settings(version, sorted(gates.items())):
            return
        request["featureGates"] = gates
    items = cluster_items(request)
    pods = incoming_pods(request)
    classes = [o for o in items if o.get("kind") == "DeviceClass"]
    gpu = next((c for c in classes if c["metadata"]["name"] == "gpu.example.com"), None)
    names: list[str] = []
    if gpu is not None:
        gpu["spec"]["extendedResourceName"] = EXT_GPU
        names.append(EXT_GPU)
        winner = gpu["metadata"]["name"]
        if r.random() < 0.3:
            other = {
                "apiVersion": gpu["apiVersion"],
                "kind": "DeviceClass",
                "metadata": {"name": r.choice(["a-gpu", "z-gpu"])},
                "spec": {
                    "extendedResourceName": EXT_GPU,
                    "selectors": [
                        {"cel": {"expression": 'device.driver == "gpu.example.com"'}},
                        {"cel": {"expression": 'device.attributes["gpu.example.com"].index < 2'}},
                    ],
                },
            }
            a, b = r.choice(STAMPS), r.choice(STAMPS)
            gpu["metadata"]["creationTimestamp"] = a
            other["metadata"]["creationTimestamp"] = b
            items.append(other)
            name = other["metadata"]["name"]
            if b > a or (b == a and name < winner):
                winner = name
        names.append(IMPLICIT + winner)
    for c in classes:
        if "extendedResourceName" not in c["spec"] and c is not gpu:
            names.append(IMPLICIT + c["metadata"]["name"])
    names.append(EXT_FPGA)
    wanted = sorted(set(r.sample(names, r.randint(1, min(2, len(names))))))
    if EXT_FPGA in wanted and len(wanted) > 1:
        # upstream lists a node's Insufficient resources in Go map order (at random); an
        # implicit name can be Insufficient too (a class losing its name, v1.36+)
        wanted.remove(EXT_FPGA)
    own_claims = any(p["spec"].get("resourceClaims") for p in pods)
    for n in (o for o in items if o.get("kind") == "Node"):
        for name in wanted:
            if name.startswith(IMPLICIT) or (verb == "schedule" and own_claims):
                continue
            if r.random() < 0.3:
                amount = str(r.randint(0, 3))
                n["status"]["allocatable"][name] = amount
                n["status"]["capacity"][name] = amount
    first = pods[0]
    containers = _ext_containers(r, first, wanted)
    for p in pods:
        p["spec"]["containers"] = [dict(c) for c in containers["containers"]]
        if containers["initContainers"]:
            p["spec"]["initContainers"] = [dict(c) for c in containers["initContainers"]]
    if verb == "explain" and r.random() < 0.1:
        _stale_claim(r, items, first)


def _ext_containers(
    r: random.Random, pod: dict[str, Any], wanted: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """The Pod's containers with extended requests (requests equal to limits)."""

    def amounts() -> dict[str, str]:
        return {n: str(r.randint(1, 2)) for n in wanted if r.random() < 0.8} or {wanted[0]: "1"}

    main = pod["spec"]["containers"][0]
    out = {"containers": [main], "initContainers": []}
    ext = amounts()
    res = main["resources"]
    res["requests"] = {**res.get("requests", {}), **ext}
    res["limits"] = {**res.get("limits", {}), **ext}
    if r.random() < 0.3:
        ext = amounts()
        out["containers"].append(
            {"name": "c2", "image": "app", "resources": {"requests": ext, "limits": dict(ext)}}
        )
    if r.random() < 0.3:
        ext = amounts()
        out["initContainers"].append(
            {"name": "init", "image": "app", "resources": {"requests": ext, "limits": dict(ext)}}
        )
    if r.random() < 0.25:
        ext = amounts()
        out["initContainers"].append(
            {
                "name": "sidecar",
                "image": "app",
                "restartPolicy": "Always",
                "resources": {"requests": ext, "limits": dict(ext)},
            }
        )
    return out


def _stale_claim(r: random.Random, items: list[dict[str, Any]], pod: dict[str, Any]) -> None:
    """The claim an earlier cycle created for the Pod (its binding failed)."""
    items.append(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "name": f"{pod['metadata']['name']}-extended-resources-x7k2p",
                "namespace": "default",
                "uid": "uid-stale-extended",
                "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": pod["metadata"]["name"],
                        "uid": pod["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "container-0-request-0",
                            "exactly": {
                                "deviceClassName": "gpu.example.com",
                                "allocationMode": "ExactCount",
                                "count": 1,
                            },
                        }
                    ]
                }
            },
        }
    )


def _binding_conditions(r: random.Random, items: list[dict[str, Any]]) -> None:
    """Binding conditions on some devices (the API wants failure conditions beside them)."""
    for s in (o for o in items if o.get("kind") == "ResourceSlice"):
        for d in s["spec"]["devices"]:
            if r.random() < 0.3:
                d["bindingConditions"] = ["example.com/attached"]
                d["bindingFailureConditions"] = ["example.com/failed"]


def _device_taints(
    r: random.Random, items: list[dict[str, Any]], pods: list[dict[str, Any]]
) -> None:
    """Taints on some devices; tolerations on some requests of the Pods' claims."""
    for s in (o for o in items if o.get("kind") == "ResourceSlice"):
        for d in s["spec"]["devices"]:
            if r.random() < 0.35:
                d["taints"] = [_taint(r) for _ in range(r.randint(1, 2))]
    names = {
        c.get("resourceClaimName") or c.get("resourceClaimTemplateName")
        for p in pods
        for c in p["spec"].get("resourceClaims", [])
    }
    for o in items:
        if o.get("kind") == "ResourceClaim" and o["metadata"]["name"] in names:
            if "allocation" not in (o.get("status") or {}):
                _tolerate(r, o["spec"]["devices"]["requests"])
        elif o.get("kind") == "ResourceClaimTemplate" and o["metadata"]["name"] in names:
            _tolerate(r, o["spec"]["spec"]["devices"]["requests"])


def _taint_rules(r: random.Random, items: list[dict[str, Any]], api: str) -> None:
    """One or two DeviceTaintRules naming a driver, a pool, a device (or nothing)."""
    devices = [
        (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])
        for s in items
        if s.get("kind") == "ResourceSlice"
        for d in s["spec"]["devices"]
    ]
    for k in range(r.randint(1, 2)):
        spec: dict[str, Any] = {"taint": _taint(r)}
        if devices and r.random() < 0.85:
            driver, pool, device = r.choice(devices)
            sel: dict[str, str] = {}
            if r.random() < 0.7:
                sel["driver"] = driver
            if r.random() < 0.5:
                sel["pool"] = pool
            if r.random() < 0.5:
                sel["device"] = device
            spec["deviceSelector"] = sel
        items.append(
            {"apiVersion": api, "kind": "DeviceTaintRule", "metadata": {"name": f"rule-{k}"},
             "spec": spec}
        )  # fmt: skip


def _taint(r: random.Random) -> dict[str, Any]:
    taint = {"key": r.choice(TAINT_KEYS), "effect": r.choice(EFFECTS)}
    value = r.choice(TAINT_VALUES)
    if value:
        taint["value"] = value
    return taint


def _tolerate(r: random.Random, requests: list[dict[str, Any]]) -> None:
    for req in requests:
        for spec in [req["exactly"]] if "exactly" in req else req["firstAvailable"]:
            if "tolerations" in spec or r.random() >= 0.5:
                continue  # drawn once per spec (a template and its claim share it)
            spec["tolerations"] = [_toleration(r) for _ in range(r.randint(1, 2))]


def _toleration(r: random.Random) -> dict[str, Any]:
    tol: dict[str, Any] = {}
    if r.random() < 0.3:
        tol["operator"] = "Exists"
        if r.random() < 0.6:
            tol["key"] = r.choice(TAINT_KEYS)
    else:
        tol["key"] = r.choice(TAINT_KEYS)
        if r.random() < 0.5:
            tol["operator"] = "Equal"
        value = r.choice(TAINT_VALUES)
        if value:
            tol["value"] = value
    if r.random() < 0.5:
        tol["effect"] = r.choice(EFFECTS[:2])
    return tol


# ------------------------------------------- DRAPartitionableDevices, DRAConsumableCapacity
GPU = "gpu.example.com"
PART_GATES = ["DRAPartitionableDevices", "DRAConsumableCapacity"]
POLICIES: list[dict[str, Any]] = [
    {},
    {"default": "1Gi"},
    {"default": "2Gi", "validValues": ["1Gi", "2Gi", "4Gi"]},
    {"default": "1Gi", "validRange": {"min": "1Gi", "max": "8Gi", "step": "1Gi"}},
    {"default": "2Gi", "validRange": {"min": "1Gi"}},
]
ASKS = ["1Gi", "2Gi", "3Gi", "512Mi", "5Gi", "10Gi"]


def partitions(r: random.Random, request: dict[str, Any], version: str) -> None:
    """Partitionable devices and consumable capacity (the module's docstring), in 60 % of
    the cases, both gates drawn on or off in 40 % of those (both are settable at every
    release; at v1.34 DRAConsumableCapacity with :func:`one_device_each`)."""
    if r.random() >= 0.6:
        return
    from kubesched.config.featuregates import check_settings

    items = cluster_items(request)
    pods = incoming_pods(request)
    nodes = node_names(items)
    if not nodes:
        return
    gates = dict(request.get("featureGates", {}))
    for g in PART_GATES:
        if r.random() < 0.4:
            gates[g] = r.random() < 0.5
    # v1.34's experimental allocator checks a request's capacity against the device at the
    # request's device index in the slice (it panics past the slice's end): there the gate
    # goes with one device per request and the shared pool's devices in slices of their
    # own (:func:`one_device_each`), which that check reads right
    v134_capacity = _minor(version) < 35 and gates.get("DRAConsumableCapacity", False)
    if gates and not check_settings(version, sorted(gates.items())):
        request["featureGates"] = gates
    has_all = '"All"' in json.dumps(
        [o for o in items if o.get("kind", "").startswith("ResourceClaim")]
    )
    # v1.35's allocators dereference a nil pool when an "All" request meets a device that
    # consumes counters (a panic): no partitions beside "All" requests there
    if r.random() < 0.8 and not (has_all and _minor(version) == 35):
        _partition_pool(r, items, nodes, _minor(version))
    if r.random() < 0.7:
        _shared_pool(r, items, nodes, apart=v134_capacity)
    # without DRAConsumableCapacity most allocators refuse a capacity request outright
    on = gates.get("DRAConsumableCapacity", _minor(version) >= 36)
    _requests(r, items, pods, 0.45 if on else 0.1)
    if v134_capacity:
        one_device_each(items, pods)
        if r.random() < 0.5:
            released_share(r, items, pods)


def one_device_each(items: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
    """v1.34 with DRAConsumableCapacity on: every request of the incoming Pods' claims to
    allocate asks for one device (``count: 1``; ``All`` becomes that too).  v1.34's
    experimental allocator checks the capacity of the device at the request's device index
    (0 for a request's only device) in the chosen device's slice: with one device per
    request that is the slice's first device, which is the chosen one in the shared pool
    (one slice per device there, :func:`_shared_pool`), and elsewhere a device whose
    capacity holds every request drawn (:data:`ASKS`) as the chosen one's does."""
    for spec in _incoming_specs(items, pods):
        for req in spec["devices"]["requests"]:
            for e in [req["exactly"]] if "exactly" in req else req["firstAvailable"]:
                e.pop("allocationMode", None)
                e["count"] = 1


def released_share(
    r: random.Random, items: list[dict[str, Any]], pods: list[dict[str, Any]]
) -> None:
    """A claim still holding a share of a shared device after its Pod finished (allocated,
    reserved for nobody, its finalizer on), which the incoming Pods name; half of the time
    they ask for more CPU than any node has, so that PostFilter deallocates it and the
    tracker lets the share and its consumed capacity go."""
    shared = [
        (o["spec"], d)
        for o in items
        if o.get("kind") == "ResourceSlice"
        for d in o["spec"].get("devices", [])
        if d.get("allowMultipleAllocations") and "nodeName" in o["spec"]
    ]
    if not shared:
        return
    spec, device = r.choice(shared)
    used = r.choice(["1Gi", "2Gi"])
    result = {"request": "r", "driver": spec["driver"], "pool": spec["pool"]["name"],
              "device": device["name"], "shareID": "00000000-0000-4000-8000-0000000000aa",
              "consumedCapacity": {"memory": used}}  # fmt: skip
    sel = [{"matchFields": [{"key": "metadata.name", "operator": "In",
                             "values": [spec["nodeName"]]}]}]  # fmt: skip
    exactly = {"deviceClassName": GPU, "capacity": {"requests": {"memory": used}}}
    items.append({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "released-share", "namespace": "default",
                     "uid": "uid-released-share",
                     "finalizers": ["resource.kubernetes.io/delete-protection"]},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": exactly}]}},
        "status": {"allocation": {"devices": {"results": [result]},
                                  "nodeSelector": {"nodeSelectorTerms": sel}}},
    })  # fmt: skip
    starve = r.random() < 0.5
    for p in pods:
        entry = f"c{len(p['spec'].get('resourceClaims', []))}s"
        p["spec"].setdefault("resourceClaims", []).append(
            {"name": entry, "resourceClaimName": "released-share"}
        )
        res = p["spec"]["containers"][0].setdefault("resources", {})
        res.setdefault("claims", []).append({"name": entry})
        if starve:
            res.setdefault("requests", {})["cpu"] = "5"


def _attrs(r: random.Random, i: int) -> dict[str, Any]:
    return {
        "model": {"string": r.choice(["a100", "h100"])},
        f"{GPU}/numa": {"int": r.randint(0, 1)},
        "index": {"int": i},
        "healthy": {"bool": r.random() < 0.8},
        "driverVersion": {"version": r.choice(["1.2.0", "2.0.0-rc.1"])},
    }


def _partition_pool(
    r: random.Random, items: list[dict[str, Any]], nodes: list[str], minor: int
) -> None:
    """A GPU split three ways: the whole device or halves, sharing one counter set."""
    node = r.choice(nodes)
    pool = r.choice(["a-part-", "part-"]) + node  # searched before or after the others
    per_device = r.random() < 0.3
    total = r.choice(["8", "6"])
    devices = []
    shapes = [("whole", "8", "80Gi"), ("half-0", "4", "40Gi"), ("half-1", "4", "40Gi")]
    if r.random() < 0.5:
        shapes.append(("quarter-0", "2", "40Gi"))
    for i, (name, slots, mem) in enumerate(shapes):
        dev: dict[str, Any] = {
            "name": name,
            "attributes": _attrs(r, i),
            "capacity": {"memory": {"value": mem}},
            "consumesCounters": [{"counterSet": "gpu-0", "counters": {"slots": {"value": slots}}}],
        }
        if per_device:
            x = r.random()
            if x < 0.7:
                dev["nodeName"] = r.choice(nodes)
            elif x < 0.85:  # the nodes of a zone (the first node's)
                dev["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a"]}]}]}  # fmt: skip
            else:
                dev["allNodes"] = True
        devices.append(dev)
    where: dict[str, Any] = {"perDeviceNodeSelection": True} if per_device else {"nodeName": node}
    counters = [{"name": "gpu-0", "counters": {"slots": {"value": total}}}]
    if minor < 35:  # v1.34: the counters beside the devices, in one slice
        items.append(_slice(f"{pool}-0", pool, 1, {**where, "devices": devices,
                                                   "sharedCounters": counters}))  # fmt: skip
    else:
        items.append(_slice(f"{pool}-0", pool, 2, {**where, "devices": devices}))
        items.append(_slice(f"{pool}-1", pool, 2, {"nodeName": node, "sharedCounters": counters}))
    held = [d for d in devices if r.random() < 0.3][:1]
    for d in held:
        target = d.get("nodeName") or node
        _holder(items, f"part-held-{d['name']}", GPU, pool, d["name"], target, None)


def _shared_pool(
    r: random.Random, items: list[dict[str, Any]], nodes: list[str], apart: bool = False
) -> None:
    """Devices several claims share by capacity (``allowMultipleAllocations``); with
    ``apart``, each in a slice of its own (:func:`one_device_each`)."""
    node = r.choice(nodes)
    pool = r.choice(["a-shared-", "shared-"]) + node
    devices = []
    for i in range(r.randint(1, 2)):
        policy = r.choice(POLICIES)
        cap: dict[str, Any] = {"value": r.choice(["4Gi", "8Gi"])}
        if policy:
            cap["requestPolicy"] = dict(policy)
        devices.append(
            {
                "name": f"vgpu-{i}",
                "attributes": _attrs(r, i),
                "allowMultipleAllocations": r.random() < 0.85,
                "capacity": {"memory": cap},
            }
        )
    for d in devices:
        if not d["allowMultipleAllocations"]:
            d["capacity"]["memory"].pop("requestPolicy", None)
            del d["allowMultipleAllocations"]
    if apart:
        for k, d in enumerate(devices):
            items.append(_slice(f"{pool}-{k}", pool, len(devices), {"nodeName": node,
                                                                   "devices": [d]}))  # fmt: skip
    else:
        items.append(_slice(f"{pool}-0", pool, 1, {"nodeName": node, "devices": devices}))
    for k, d in enumerate(devices):
        if "allowMultipleAllocations" in d and r.random() < 0.5:
            used = r.choice(["1Gi", "2Gi", "4Gi"])
            _holder(items, f"share-held-{k}", GPU, pool, d["name"], node,
                    {"shareID": f"00000000-0000-4000-8000-00000000000{k}",
                     "consumedCapacity": {"memory": used}})  # fmt: skip


def _slice(name: str, pool: str, count: int, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {"driver": GPU, "pool": {"name": pool, "generation": 1,
                                          "resourceSliceCount": count}, **spec},
    }  # fmt: skip


def _holder(
    items: list[dict[str, Any]],
    name: str,
    driver: str,
    pool: str,
    device: str,
    node: str,
    share: dict[str, Any] | None,
) -> None:
    """An allocated claim of a running Pod on ``node`` holding ``device``."""
    result = {"request": "r", "driver": driver, "pool": pool, "device": device, **(share or {})}
    exactly: dict[str, Any] = {"deviceClassName": GPU}
    if share is not None:
        exactly["capacity"] = {"requests": dict(share["consumedCapacity"])}
    sel = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
    items.append({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": exactly}]}},
        "status": {"allocation": {"devices": {"results": [result]}, "nodeSelector": {
            "nodeSelectorTerms": sel}},
            "reservedFor": [{"resource": "pods", "name": f"run-{name}", "uid": f"uid-run-{name}"}]},
    })  # fmt: skip
    items.append({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"run-{name}", "namespace": "default", "uid": f"uid-run-{name}"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "app", "resources": {
            "claims": [{"name": "c"}]}}],
            "resourceClaims": [{"name": "c", "resourceClaimName": name}]},
        "status": {"phase": "Running", "startTime": "2026-01-01T00:30:00Z"},
    })  # fmt: skip


def _incoming_specs(items: list[dict[str, Any]], pods: list[dict[str, Any]]) -> list[Any]:
    """The claim specs the incoming ``pods`` need allocated: of their claims not allocated
    yet and of their templates (a template and the claim made from it alike)."""
    names = {
        c.get("resourceClaimName") or c.get("resourceClaimTemplateName")
        for p in pods
        for c in p["spec"].get("resourceClaims", [])
    }
    specs = []
    for o in items:
        if o.get("kind") == "ResourceClaim" and o["metadata"]["name"] in names:
            if "allocation" not in (o.get("status") or {}):
                specs.append(o["spec"])
        elif o.get("kind") == "ResourceClaimTemplate" and o["metadata"]["name"] in names:
            specs.append(o["spec"]["spec"])
    return specs


def _requests(
    r: random.Random, items: list[dict[str, Any]], pods: list[dict[str, Any]], p_capacity: float
) -> None:
    """Capacity requests and ``distinctAttribute`` constraints on the incoming Pod's claims
    not allocated yet (a template and the claim made from it alike)."""
    plan: dict[str, Any] = {}
    for spec in _incoming_specs(items, pods):
        devices = spec["devices"]
        for req in devices["requests"]:
            for e in [req["exactly"]] if "exactly" in req else req["firstAvailable"]:
                key = f"{req['name']}/{e.get('name', '')}"
                if key not in plan:
                    plan[key] = r.choice(ASKS) if r.random() < p_capacity else None
                if plan[key] is not None and e.get("deviceClassName") == GPU:
                    e["capacity"] = {"requests": {"memory": plan[key]}}
                sel = f"{key}/selector"
                if sel not in plan:
                    plan[sel] = r.choice(["", "", "", "", "device.allowMultipleAllocations",
                                          "!device.allowMultipleAllocations"])  # fmt: skip
                if plan[sel]:
                    e.setdefault("selectors", []).append({"cel": {"expression": plan[sel]}})
        if "distinct" not in plan:
            plan["distinct"] = r.random() < 0.4
        all_mode = any(
            e.get("allocationMode") == "All"
            for req in devices["requests"]
            for e in ([req["exactly"]] if "exactly" in req else req["firstAvailable"])
        )
        if plan["distinct"] and not all_mode:
            attr = f"{GPU}/index" if len(str(plan)) % 2 else f"{GPU}/numa"
            devices.setdefault("constraints", []).append({"distinctAttribute": attr})


# ------------------------------------------------------------- DRAFractionalCapacityRange
FRACTIONAL_GATE = "DRAFractionalCapacityRange"
# validRange policies of a "cores" capacity (value 4), each valid under both of upstream's
# validations (the gate's milli path, and without it every bound rounded up to an integer)
CORES_POLICIES: list[dict[str, Any]] = [
    {"default": "500m", "validRange": {"min": "500m", "max": "4", "step": "250m"}},
    {"default": "250m", "validRange": {"min": "250m", "step": "250m"}},
    {"default": "600m", "validRange": {"min": "100m", "max": "2100m", "step": "500m"}},
    {"default": "1", "validRange": {"min": "1", "max": "4", "step": "1"}},
    {"default": "500m", "validRange": {"min": "500m"}},
]
CORE_ASKS = ["300m", "600m", "750m", "750m", "1100m", "1", "1250m"]
CORE_HELD = ["2750m", "3", "3250m", "3250m", "3500m"]
# per policy of CORES_POLICIES: (ask, held) where the ask rounds to different amounts in
# thousandths and in integers, and what is held leaves room for the smaller one only
CORE_PAIRS: list[list[tuple[str, str]]] = [
    [("750m", "3250m"), ("1100m", "2750m"), ("600m", "3250m")],  # .75 / 1, 1.25 / 2, .75 / 1
    [("600m", "3250m"), ("300m", "3500m")],  # .75 / 1, .5 / 1
    [("750m", "3"), ("300m", "3400m")],  # 1.1 / 1, .6 / 1
    [],
    [],
]


def fractional_capacity(
    seed: int, index: int, request: dict[str, Any], version: str | None
) -> None:
    """v1.37, a stream of its own (drawn after everything else, so a seed's other draws stay
    as they were), in 45 % of the cases where DRAConsumableCapacity is on: the gate
    DRAFractionalCapacityRange set at random (on in 60 % of those; its default is off), a
    ``cores`` capacity (value 4) with a fractional ``validRange`` (min, max and step in
    thousandths; :data:`CORES_POLICIES`) on every device shared by capacity (a shared pool
    drawn when the case has none), most of them with a running Pod's share consuming 2.5 to
    3.5 of their cores (often just what leaves room for one of the two roundings of the
    ask, :data:`CORE_PAIRS`), the incoming Pods asking a share of one such device (a claim
    of their own, ``cores`` from :data:`CORE_ASKS` and 512Mi of memory; half the time
    their only claim, with no extended resource backed by devices) and, at times, cores on
    their other GPU requests (a device without the capacity is then passed over).  Under
    the gate upstream rounds such a request up in thousandths (750m on a 500m + n x 250m
    range consumes 750m), without it after rounding every value up to an integer (it
    consumes 1), so whether it fits beside 3250m differs."""
    if version is None or _minor(version) < 37:
        return
    r = random.Random(f"dra-fractional/{seed}/{index}")
    if r.random() >= 0.45:
        return
    from kubesched.config.featuregates import check_settings, gate_table

    table = gate_table(version)
    gates = dict(request.get("featureGates", {}))
    if FRACTIONAL_GATE not in table or not gates.get(
        "DRAConsumableCapacity", table["DRAConsumableCapacity"].default
    ):
        return
    items = cluster_items(request)
    pods = incoming_pods(request)
    nodes = node_names(items)
    if not nodes:
        return
    if r.random() < 0.6:
        gates[FRACTIONAL_GATE] = r.random() < 0.6
        if check_settings(version, sorted(gates.items())):
            return
        request["featureGates"] = gates

    def shared() -> list[tuple[dict[str, Any], dict[str, Any]]]:
        return [
            (o, d)
            for o in items
            if o.get("kind") == "ResourceSlice"
            for d in o["spec"].get("devices", [])
            if d.get("allowMultipleAllocations")
        ]

    if not shared():
        _shared_pool(r, items, nodes)
    which = r.randrange(len(CORES_POLICIES))
    policy = CORES_POLICIES[which]
    pair = r.choice(CORE_PAIRS[which]) if CORE_PAIRS[which] and r.random() < 0.7 else None
    for k, (sl, d) in enumerate(shared()):
        d.setdefault("capacity", {})["cores"] = {"value": "4", "requestPolicy": dict(policy)}
        node = sl["spec"].get("nodeName")
        if node and r.random() < 0.8:
            held = pair[1] if pair else r.choice(CORE_HELD)
            _holder(items, f"cores-held-{k}", GPU, sl["spec"]["pool"]["name"], d["name"], node,
                    {"shareID": f"00000000-0000-4000-8000-0000000001{k:02d}",
                     "consumedCapacity": {"cores": held}})  # fmt: skip
    plan: dict[str, str | None] = {}  # a template and the claim made from it alike
    for spec in _incoming_specs(items, pods):
        for req in spec["devices"]["requests"]:
            for e in [req["exactly"]] if "exactly" in req else req["firstAvailable"]:
                key = f"{req['name']}/{e.get('name', '')}"
                if key not in plan:
                    plan[key] = r.choice(CORE_ASKS) if r.random() < 0.3 else None
                if plan[key] is not None and e.get("deviceClassName") == GPU:
                    asks = e.setdefault("capacity", {}).setdefault("requests", {})
                    asks["cores"] = plan[key]
    if r.random() < 0.8:
        ns = pods[0]["metadata"].get("namespace", "default")
        ask = {"cores": pair[0] if pair else r.choice(CORE_ASKS), "memory": "512Mi"}
        items.append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "cores-ask", "namespace": ns, "uid": "uid-cores-ask"},
            "spec": {"devices": {"requests": [{"name": "cores", "exactly": {
                "deviceClassName": GPU, "count": 1, "capacity": {"requests": ask}}}]}},
        })  # fmt: skip
        alone = r.random() < 0.5  # the share the Pods' only claim: it alone decides
        for p in pods:
            entry = {"name": "cores", "resourceClaimName": "cores-ask"}
            if alone:
                p["spec"]["resourceClaims"] = [entry]
                for c in p["spec"].get("containers", []) + p["spec"].get("initContainers", []):
                    res = c.get("resources", {})
                    if res.get("claims"):
                        res["claims"] = [{"name": "cores"}]
                    for kind in ("requests", "limits"):  # no extended resource from devices
                        for name in [n for n in res.get(kind, {}) if n == EXT_GPU or
                                     n.startswith(IMPLICIT)]:  # fmt: skip
                            del res[kind][name]
            else:
                p["spec"].setdefault("resourceClaims", []).append(entry)


# ------------------------------------------------ DRAExtendedResource: scoring from devices
def extended_scoring(seed: int, index: int, request: dict[str, Any], version: str | None) -> None:
    """v1.35+, a stream of its own (drawn after everything else, so a seed's other draws stay
    as they were): where :func:`extended_resources` drew extended requests with
    DRAExtendedResource on, six cases in ten score them, NodeResourcesFit (LeastAllocated,
    MostAllocated or RequestedToCapacityRatio) and BalancedAllocation each naming the
    requested extended resources besides cpu and memory (in random order); upstream then
    counts a node's devices of the class behind a resource from the ResourceSlices where its
    allocatable has none (``calculateDRAResourceTotals``: slice- and device-level node
    selection, the class's CEL selectors, allocated devices).  One in four of those drops
    the GPU class's selectors (every device of every driver then belongs to it: upstream's
    fast path); BalancedAllocation names only the resources whose class has no selectors
    (upstream's BalancedAllocation panics on a selector: it has no CEL cache), none at v1.35
    (its BalancedAllocation has no DRA manager: it panics in PreScore)."""
    if version is None or _minor(version) < 35:
        return
    from kubesched.config.featuregates import gate_table

    spec = gate_table(version).get("DRAExtendedResource")
    if spec is None or not request.get("featureGates", {}).get("DRAExtendedResource", spec.default):
        return
    pods = incoming_pods(request)
    requested: set[str] = set()
    for c in [*pods[0]["spec"]["containers"], *pods[0]["spec"].get("initContainers", [])]:
        requested.update(
            n for n in (c.get("resources") or {}).get("requests", {}) if n not in ("cpu", "memory")
        )
    if not requested:
        return
    r = random.Random(f"dra-scored/{seed}/{index}")
    if r.random() >= 0.6:
        return
    items = cluster_items(request)
    if r.random() < 0.25:
        for c in items:
            if c.get("kind") == "DeviceClass" and c["metadata"]["name"] == "gpu.example.com":
                c["spec"].pop("selectors", None)
    scored = sorted(requested)
    r.shuffle(scored)
    names = ["cpu", "memory", *scored]
    strategy = r.choice(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"])
    scoring: dict[str, Any] = {
        "type": strategy,
        "resources": [{"name": n, "weight": r.choice([1, 1, 3])} for n in names],
    }
    if strategy == "RequestedToCapacityRatio":
        scoring["requestedToCapacityRatio"] = {"shape": [
            {"utilization": 0, "score": r.choice([0, 10])},
            {"utilization": 100, "score": r.choice([0, 10])}]}  # fmt: skip
    # BalancedAllocation names a resource only where its class has no selectors: upstream's
    # BalancedAllocation (v1.35-v1.37) has no CEL cache and panics on a class's selector
    # (NewBalancedAllocation leaves DRACaches.celCache nil; docs/fidelity.md)
    classes = {c["metadata"]["name"]: c for c in items if c.get("kind") == "DeviceClass"}
    backers = [c for c in classes.values() if c["spec"].get("extendedResourceName") == EXT_GPU]

    def plain(name: str) -> bool:
        if name.startswith(IMPLICIT):
            klass = classes.get(name[len(IMPLICIT) :])
        else:
            klass = backers[0] if len(backers) == 1 else None
            if not backers:
                return True  # no class backs it: the device plugin's
        return klass is not None and not klass["spec"].get("selectors")

    # v1.35's BalancedAllocation has no DRA manager either (nil: a panic in PreScore for any
    # extended name under the gate): it scores cpu and memory only there
    balanced = ["cpu", "memory", *(n for n in scored if plain(n) and _minor(version) >= 36)]
    entries = [
        {
            "name": "NodeResourcesFit",
            "args": {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "NodeResourcesFitArgs",
                "scoringStrategy": scoring,
            },
        },
        {
            "name": "NodeResourcesBalancedAllocation",
            "args": {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "NodeResourcesBalancedAllocationArgs",
                "resources": [{"name": n, "weight": 1} for n in balanced],
            },
        },
    ]
    config = request["config"]
    profiles = config.setdefault("profiles", [{"schedulerName": "default-scheduler"}])
    for profile in profiles:
        kept = [
            e
            for e in profile.get("pluginConfig", [])
            if e["name"] not in ("NodeResourcesFit", "NodeResourcesBalancedAllocation")
        ]
        profile["pluginConfig"] = [*kept, *entries]
