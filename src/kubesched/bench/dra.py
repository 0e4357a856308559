"""The DRA ops of upstream scheduler_perf (``test/integration/scheduler_perf/dra.go``, v1.34).

- ``createResourceDriver``: for every node whose name matches the glob ``nodes``, one
  ResourceSlice named after the node (pool = node name, ``nodeName`` = the node) with
  ``maxClaimsPerNode`` devices ``instance-<i>``, each with upstream's attributes (``model``
  A100, ``family`` GPU, ``driverVersion`` 1.2.3, ``dra.example.com/numa`` = i) and 1Gi of
  ``memory`` capacity;
- ``allocResourceClaims``: every unallocated claim of the namespace gets an allocation, one
  claim at a time, on the first node of a random order where the structured allocator
  finds its devices (the allocation only, no ``reservedFor``, as upstream writes it).

A node that could not take a claim cannot take a later claim with the same spec either
(devices are only added to the in-use set during the op), so it is dropped from that spec's
candidates: the same result as upstream's shuffle per claim, without trying every full node
again.
"""

from __future__ import annotations

import fnmatch
import json
import random
from dataclasses import dataclass
from typing import Any

from kubesched.api import resource as r
from kubesched.bench.loop import WorkloadError
from kubesched.devices import allocator, draoptions
from kubesched.plugins.dynamicresources.claims import allocation_node_selector, quantity_text
from kubesched.sim.apiserver import SimApiServer


@dataclass(frozen=True, slots=True)
class CreateResourceDriver:
    """``createResourceDriver``: a ResourceSlice of ``max_claims`` devices per node whose
    name matches the glob ``nodes``."""

    index: int
    driver: str
    nodes: str
    max_claims: int


@dataclass(frozen=True, slots=True)
class AllocResourceClaims:
    """``allocResourceClaims``: allocate every unallocated claim of ``namespace``."""

    index: int
    namespace: str


def resource_slice(driver: str, node: str, capacity: int) -> dict[str, Any]:
    """Upstream ``resourceSlice``: ``capacity`` devices for ``node``."""
    devices = [
        {
            "name": f"instance-{i}",
            "attributes": {
                "model": {"string": "A100"},
                "family": {"string": "GPU"},
                "driverVersion": {"version": "1.2.3"},
                "dra.example.com/numa": {"int": i},
            },
            "capacity": {"memory": {"value": "1Gi"}},
        }
        for i in range(capacity)
    ]
    return {
        "apiVersion": r.API_VERSION,
        "kind": "ResourceSlice",
        "metadata": {"name": node},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def create_resource_driver(api: SimApiServer, driver: str, pattern: str, capacity: int) -> int:
    """A slice per node matching ``pattern`` (Go's ``filepath.Match``); how many."""
    nodes = [n for n in api.nodes if fnmatch.fnmatchcase(n, pattern)]
    for name in nodes:
        api.create_object(resource_slice(driver, name, capacity))
    return len(nodes)


def _of_kind(api: SimApiServer, kind: str) -> list[dict[str, Any]]:
    return [obj for (k, _), obj in api.objects.items() if k == kind]


def alloc_resource_claims(
    api: SimApiServer,
    namespace: str,
    rng: random.Random,
    options: draoptions.Options = draoptions.V1_34,
) -> int:
    """Allocate the namespace's unallocated claims as the release of ``options`` allocates
    (partitionable devices, shared devices); how many were allocated."""
    classes = {c.name: c for c in map(r.parse_class, _of_kind(api, "DeviceClass"))}
    slices = sorted(map(r.parse_slice, _of_kind(api, "ResourceSlice")), key=lambda s: s.name)
    in_use: set[allocator.DeviceId] = set()
    shares: list[r.AllocatedDevice] = []
    todo = []

    def hold(results: tuple[r.AllocatedDevice, ...]) -> None:
        for d in results:
            if d.admin_access:
                continue
            if options.consumable and d.share_id is not None:
                shares.append(d)
            else:
                in_use.add(d.device_id)

    for obj in _of_kind(api, "ResourceClaim"):
        claim = r.parse_claim(obj)
        hold(claim.allocation or ())
        if claim.allocation is None and claim.namespace == namespace:
            todo.append((claim, obj))
    todo.sort(key=lambda c: c[0].name)
    open_nodes: dict[str, list[str]] = {}
    done = 0
    for claim, obj in todo:
        spec = json.dumps((obj.get("spec") or {}), sort_keys=True)
        candidates = open_nodes.setdefault(spec, list(api.nodes))
        while candidates:
            k = rng.randrange(len(candidates))
            node = api.nodes[candidates[k]]
            try:
                found = allocator.allocate(
                    node.name, node.labels, [claim], classes, slices, in_use, options,
                    allocator.shared_use(shares),
                )  # fmt: skip
            except allocator.AllocationError as err:
                raise WorkloadError(f"allocate claim {claim.key}: {err}") from None
            if found is None:
                candidates[k] = candidates[-1]
                candidates.pop()
                continue
            results = found[0]
            hold(results)
            api.apply_object(_allocated(obj, results, node.name, slices, node, options))
            done += 1
            break
        else:
            raise WorkloadError(f"allocate claim {claim.key}: no node has its devices")
    return done


def _allocated(
    obj: dict[str, Any],
    results: tuple[r.AllocatedDevice, ...],
    node_name: str,
    slices: list[r.ResourceSlice],
    node: Any,
    options: draoptions.Options,
) -> dict[str, Any]:
    allocation: dict[str, Any] = {
        "devices": {
            "results": [
                {
                    "request": d.request,
                    "driver": d.driver,
                    "pool": d.pool,
                    "device": d.device,
                    **({"shareID": d.share_id} if d.share_id is not None else {}),
                    **(
                        {"consumedCapacity": {k: quantity_text(v) for k, v in d.consumed}}
                        if d.consumed
                        else {}
                    ),
                }
                for d in results
            ]
        }
    }
    selector = allocation_node_selector(results, node_name, node, slices, options.binds_to_node)
    if selector is not None:
        allocation["nodeSelector"] = selector
    return {**obj, "status": {**(obj.get("status") or {}), "allocation": allocation}}
