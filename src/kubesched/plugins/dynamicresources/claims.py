"""What DynamicResources knows of the cluster's DRA objects (upstream's ``draManager`` with
its claim assume cache and in-flight allocations).

Objects come from the cluster state (``ClusterState.objects``: snapshot, simulator, live
informers) and are parsed once per manifest.  Two overlays sit on top, as upstream's:

- **in flight**: allocations made at Reserve and not yet written (PreBind), by claim UID;
  their devices count as in use, and a Pod whose claim is in flight waits;
- **assumed**: claims PreBind wrote (allocation, ``reservedFor``) before the API server's echo
  arrives; an informer event for the claim replaces the assumed version.

:func:`claim_with_reservation` builds the claim PreBind writes.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

from kubesched.api import objects as api
from kubesched.api import resource as r
from kubesched.plugins.dynamicresources import allocator
from kubesched.state.cache import ClusterState

DeviceId = tuple[str, str, str]
FINALIZER = "resource.kubernetes.io/delete-protection"
"""What PreBind adds to a claim it allocates or reserves (upstream's finalizer)."""


class DraObjects:
    """Parsed DeviceClasses, ResourceSlices and ResourceClaims with the two overlays."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self._parsed: dict[int, tuple[Mapping[str, Any], Any]] = {}
        self.in_flight: dict[str, tuple[r.AllocatedDevice, ...]] = {}
        self.assumed: dict[str, r.ResourceClaim] = {}
        self._heard: dict[str, r.ResourceClaim] = {}

    def _parse(self, obj: Mapping[str, Any]) -> Any:
        hit = self._parsed.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        kind = obj.get("kind")
        parsed: Any
        if kind == "ResourceClaim":
            parsed = r.parse_claim(obj)
        elif kind == "ResourceSlice":
            parsed = r.parse_slice(obj)
        else:
            parsed = r.parse_class(obj)
        self._parsed[id(obj)] = (obj, parsed)
        return parsed

    def _of_kind(self, kind: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for (k, key), obj in self.cluster.objects.items():
            if k == kind and obj.get("apiVersion", r.API_VERSION) == r.API_VERSION:
                yield key, obj

    def claim(self, namespace: str, name: str) -> r.ResourceClaim | None:
        """The claim ``namespace/name`` (the assumed version when there is one)."""
        key = f"{namespace}/{name}"
        hit = self.assumed.get(key)
        if hit is not None:
            return hit
        obj = self.cluster.objects.get(("ResourceClaim", key))
        return None if obj is None else self._parse(obj)

    def claims(self) -> Iterator[r.ResourceClaim]:
        """Every claim (assumed versions first)."""
        yield from self.assumed.values()
        for key, obj in self._of_kind("ResourceClaim"):
            if key not in self.assumed:
                yield self._parse(obj)

    def classes(self) -> dict[str, r.DeviceClass]:
        """DeviceClasses by name."""
        out: dict[str, r.DeviceClass] = {}
        for _, obj in self._of_kind("DeviceClass"):
            c = self._parse(obj)
            out[c.name] = c
        return out

    def slices(self) -> list[r.ResourceSlice]:
        """Every ResourceSlice, by name."""
        return sorted(
            (self._parse(o) for _, o in self._of_kind("ResourceSlice")), key=lambda s: s.name
        )

    def allocated_devices(self) -> set[DeviceId]:
        """Devices allocated to a claim or in flight (upstream ``ListAllAllocatedDevices``
        plus in-flight allocations); admin-access results do not count."""
        out: set[DeviceId] = set()
        for claim in self.claims():
            for d in claim.allocation or ():
                if not d.admin_access:
                    out.add(d.device_id)
        for results in self.in_flight.values():
            out.update(d.device_id for d in results if not d.admin_access)
        return out

    def heard(self, obj: Mapping[str, Any], deleted: bool) -> r.ResourceClaim | None:
        """An informer event for a claim: drop the assumed version; returns the version
        heard before (for the queueing hint), None for a new claim."""
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        self.assumed.pop(key, None)
        before = self._heard.pop(key, None)
        if not deleted:
            self._heard[key] = r.parse_claim(obj)
        return before


# --------------------------------------------------------------------------- what PreBind writes
def claim_with_reservation(
    raw: Mapping[str, Any],
    pod: api.Pod,
    results: tuple[r.AllocatedDevice, ...] | None,
    node_name: str,
    node: api.Node | None,
    slices: list[r.ResourceSlice],
) -> dict[str, Any]:
    """A new claim manifest: ``results`` as ``status.allocation`` (when given) and ``pod``
    in ``status.reservedFor``; the input is not changed."""
    out = copy.deepcopy(dict(raw))
    meta = out.setdefault("metadata", {})
    finalizers = list(meta.get("finalizers") or [])
    if FINALIZER not in finalizers:
        meta["finalizers"] = [*finalizers, FINALIZER]
    status = out.setdefault("status", {})
    if results is not None:
        allocation: dict[str, Any] = {
            "devices": {
                "results": [
                    {
                        "request": d.request,
                        "driver": d.driver,
                        "pool": d.pool,
                        "device": d.device,
                        **({"adminAccess": True} if d.admin_access else {}),
                    }
                    for d in results
                ]
            }
        }
        selector = allocation_node_selector(results, node_name, node, slices)
        if selector is not None:
            allocation["nodeSelector"] = selector
        status["allocation"] = allocation
    reserved = list(status.get("reservedFor") or [])
    if not any(x.get("uid") == pod.uid for x in reserved):
        reserved.append({"resource": "pods", "name": pod.name, "uid": pod.uid})
    status["reservedFor"] = reserved
    return out


def allocation_node_selector(
    results: tuple[r.AllocatedDevice, ...],
    node_name: str,
    node: api.Node | None,
    slices: list[r.ResourceSlice],
) -> dict[str, Any] | None:
    """Upstream ``createNodeSelector``: the node by name when a device is local to it, else
    the slices' node selector, else none (devices of ``allNodes`` slices)."""
    pools = {(d.driver, d.pool) for d in results}
    labels = node.labels if node is not None else {}
    used = [
        s
        for s in slices
        if (s.driver, s.pool) in pools and allocator.slice_reaches(s, node_name, labels)
    ]
    if any(s.node_name or s.node_selector is not None for s in used):
        # Upstream copies a nodeSelector slice's selector; we pin the node by name (the
        # Pods sharing the claim land on the node the first one got either way).
        fields = [{"key": "metadata.name", "operator": "In", "values": [node_name]}]
        return {"nodeSelectorTerms": [{"matchFields": fields}]}
    return None
