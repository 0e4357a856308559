"""Extended resources backed by DRA devices (DRAExtendedResource: alpha at v1.34, beta at
v1.36, GA at v1.37; v1.34's mapping and requests differ, :func:`resolver_v134`,
:func:`device_requests_v134`).

A Pod's extended-resource request (``example.com/gpu: 2``) may be satisfied by devices of a
DeviceClass instead of a node's allocatable: the class names the resource in
``spec.extendedResourceName``, and every class also answers to the implicit name
``deviceclass.resource.kubernetes.io/<class>``.

- :func:`resolver`: upstream's ``extendedresourcecache`` fed the classes in the order the
  informer adds them: of two classes naming one resource the newer (``creationTimestamp``)
  wins, ties to the smaller name, and a class that loses when it is added is skipped whole,
  so it loses its implicit name too (a class added later that wins leaves the earlier one its
  implicit name).
- :func:`device_requests`: upstream ``createRequestsAndMappings``: the requests of the claim
  DynamicResources allocates for a Pod on a node (one ``exactly`` request per container and
  resource, named ``container-<i>-request-<j>``, ``i`` the container's index among init and
  regular containers and ``j`` the resource's index among the container's sorted request
  names; a non-sidecar init container reuses later long-lived containers' requests and only
  the largest of them is kept) and the container-to-request mappings that go into the Pod's
  ``status.extendedResourceClaimStatus``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api import resource as r
from kubesched.api.pods import parse_timestamp
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.framework.interface import ServiceKey
from kubesched.kernels.resources import is_extended_resource_name

DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
"""Upstream ``resourceapi.ResourceDeviceClassPrefix``: the implicit extended resource name
of every class is this prefix and the class name."""
CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
"""Upstream ``resourceapi.ExtendedResourceClaimAnnotation`` (``"true"`` on the claim the
scheduler creates for a Pod's extended resources)."""
SPECIAL_CLAIM_NAME = "<extended-resources>"
"""The in-memory claim's name until PreBind creates it (not a valid name on purpose)."""

Resolver = Callable[[str], "r.DeviceClass | None"]
"""The DeviceClass behind an extended resource name, or None (upstream
``DeviceClassResolver.GetDeviceClass``)."""

RESOLVER: ServiceKey[Resolver] = ServiceKey("kubesched.io/dra-extended-resources")
"""DynamicResources offers its resolver here (NodeResourcesFit leaves a resource it resolves
to DRA on a node without it in allocatable)."""


NodeTotals = Callable[[str, Any], tuple[int, int]]
"""``(resource, node)`` -> ``(devices, allocated devices)``: on the node (an
:class:`~kubesched.api.objects.Node`), the devices of the class behind the extended
resource and how many of them are allocated, ``(0, 0)`` for a resource no class backs."""
Totals = Callable[[Sequence[str]], "NodeTotals | None"]
"""Given the scored resource names: :data:`NodeTotals` over the cluster as it is now, or None
when no class backs any of them (upstream ``getDRAPreScoredParams``)."""

TOTALS: ServiceKey[Totals] = ServiceKey("kubesched.io/dra-extended-totals")
"""DynamicResources offers the device counts here from v1.35 under DRAExtendedResource:
NodeResourcesFit and BalancedAllocation score an extended resource a class backs from them
on a node whose allocatable has none of it (upstream ``calculateDRAResourceTotals``)."""


def device_totals(
    klass: r.DeviceClass,
    slices: Iterable[r.ResourceSlice],
    allocated: Collection[tuple[str, str, str]],
    node: str,
    labels: Mapping[str, str],
) -> tuple[int, int]:
    """Upstream ``calculateDRAResourceTotals`` (v1.35+): over every slice (every pool
    generation, as listed), the devices offered to ``node`` (a slice's ``nodeName``,
    ``allNodes`` or ``nodeSelector``; under ``perDeviceNodeSelection`` each device's) that
    pass every CEL selector of ``klass`` (``device.allowMultipleAllocations`` not given to
    CEL), and how many of those ``allocated`` holds.  A selector failing at run time gives
    ``(0, 0)`` for the node (upstream logs the error and scores without the resource)."""
    from kubesched.api.errors import CelRuntimeError
    from kubesched.devices.pools import node_matches

    total = used = 0
    for s in slices:
        if s.per_device_node_selection:
            devices = [
                d
                for d in s.devices
                if d.all_nodes
                or (d.node_name != "" and d.node_name == node)
                or (
                    d.node_selector is not None
                    and node_matches(d.node_name, d.node_selector, d.all_nodes, node, labels)
                )
            ]
        else:
            if not s.all_nodes and s.node_name != node and s.node_selector is not None:
                if not node_matches(s.node_name, s.node_selector, s.all_nodes, node, labels):
                    continue
            elif not s.all_nodes and s.node_name != "" and s.node_name != node:
                continue
            devices = list(s.devices)
        for d in devices:
            try:
                if not all(d.selects(sel, multiple=False) for sel in klass.selectors):
                    continue
            except CelRuntimeError:
                return 0, 0
            total += 1
            if (s.driver, s.pool, d.name) in allocated:
                used += 1
    return total, used


def is_dra_extended_name(name: str) -> bool:
    """Upstream ``IsDRAExtendedResourceName``: an extended resource name or an implicit
    class name."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


def _created(c: r.DeviceClass) -> float:
    t = parse_timestamp(c.created, "metadata.creationTimestamp") if c.created else None
    return float("-inf") if t is None else t


def resolver(classes: Iterable[r.DeviceClass]) -> dict[str, r.DeviceClass]:
    """Extended resource name -> class, as upstream's cache holds it after the informer
    added ``classes`` in that order."""
    out: dict[str, r.DeviceClass] = {}
    for c in classes:
        if c.extended_resource_name is not None:
            held = out.get(c.extended_resource_name)
            if held is not None:
                newer, older = _created(c), _created(held)
                if newer < older or (newer == older and c.name >= held.name):
                    continue  # loses: neither name is recorded
            out[c.extended_resource_name] = c
        out[DEVICE_CLASS_PREFIX + c.name] = c
    return out


@dataclass(frozen=True, slots=True)
class RequestMapping:
    """One ``status.extendedResourceClaimStatus.requestMappings`` entry."""

    container: str
    resource: str
    request: str

    def as_json(self) -> dict[str, str]:
        """The manifest's form."""
        return {
            "containerName": self.container,
            "resourceName": self.resource,
            "requestName": self.request,
        }


@dataclass(frozen=True, slots=True)
class _Container:
    name: str
    requests: Mapping[str, Any]
    long_lived: bool


def _containers(spec: Mapping[str, Any]) -> list[_Container]:
    out = []
    for c in spec.get("initContainers") or []:
        sidecar = c.get("restartPolicy") == "Always"
        out.append(_Container(str(c.get("name", "")), _requests(c), sidecar))
    for c in spec.get("containers") or []:
        out.append(_Container(str(c.get("name", "")), _requests(c), True))
    return out


def _requests(c: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((c.get("resources") or {}).get("requests")) or {}


def _count(value: Any) -> int:
    """Upstream ``Quantity.AsInt64`` (0 when not an integer)."""
    try:
        q = parse_quantity(value)
    except (QuantityError, ValueError, TypeError):
        return 0
    return int(q) if q.denominator == 1 else 0


@dataclass(frozen=True, slots=True)
class _Req:
    name: str
    count: int


def _container_request(
    index: int, c: _Container, resource: str, reusable: Sequence[_Req | None]
) -> tuple[_Req | None, list[RequestMapping]]:
    """Upstream ``createResourceRequestAndMappings``."""
    if resource not in c.requests:
        return None, []
    want = _count(c.requests[resource])
    if want == 0:
        return None, []
    out: list[RequestMapping] = []
    total = 0
    for req in reusable:
        if req is not None:
            total += req.count
            out.append(RequestMapping(c.name, resource, req.name))
            if total >= want:
                return None, out
    keys = sorted(str(k) for k in c.requests)
    name = f"container-{index}-request-{keys.index(resource)}"
    out.append(RequestMapping(c.name, resource, name))
    return _Req(name, want - total), out


def device_requests(
    pod_spec: Mapping[str, Any], resources: Iterable[str], classes: Resolver
) -> tuple[list[dict[str, Any]], list[RequestMapping]]:
    """Upstream ``createRequestsAndMappings`` for the extended ``resources`` a node must get
    from DRA: the claim's ``spec.devices.requests`` (sorted by name) and the mappings."""
    containers = _containers(pod_spec)
    requests: list[tuple[str, str, int]] = []  # name, class, count
    mappings: list[RequestMapping] = []
    for resource in sorted(resources):
        klass = classes(resource)
        if klass is None:
            continue
        long_lived: list[_Req | None] = [None] * len(containers)
        long_maps: list[RequestMapping] = []
        for i, c in enumerate(containers):
            if c.long_lived:
                long_lived[i], m = _container_request(i, c, resource, ())
                long_maps += m
        largest: _Req | None = None
        short_names: set[str] = set()
        short_maps: list[RequestMapping] = []
        for i, c in enumerate(containers):
            if c.long_lived:
                continue
            req, m = _container_request(i, c, resource, long_lived[i:])
            if req is not None:
                short_names.add(req.name)
                if largest is None or largest.count < req.count:
                    largest = req
            short_maps += m
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest.name)
            short_maps = [
                RequestMapping(m.container, m.resource, largest.name)
                if m.request in short_names
                else m
                for m in short_maps
            ]
        if largest is not None:
            requests.append((largest.name, klass.name, largest.count))
        requests += [(q.name, klass.name, q.count) for q in long_lived if q is not None]
        mappings += long_maps + short_maps
    requests.sort(key=lambda x: x[0])
    return [
        {
            "name": name,
            "exactly": {
                "deviceClassName": klass,
                "allocationMode": "ExactCount",
                "count": count,
            },
        }
        for name, klass, count in requests
    ], mappings


def requests_key(pod_spec: Mapping[str, Any], resources: Iterable[str], classes: Resolver) -> str:
    """What :func:`device_requests` (and :func:`device_requests_v134`) read, as a string:
    every container's name, ``restartPolicy`` and ``resources.requests`` (init containers
    first), and each of ``resources`` with the name of the class it resolves to.  Two
    calls with equal keys return equal requests and mappings."""
    containers = [
        (k, c.get("name"), c.get("restartPolicy"), _requests(c))
        for k in ("initContainers", "containers")
        for c in pod_spec.get(k) or []
    ]
    named = []
    for resource in sorted(resources):
        klass = classes(resource)
        named.append((resource, None if klass is None else klass.name))
    return repr((containers, named))


# ---------------------------------------------------------------- v1.34 (alpha)
def resolver_v134(classes: Iterable[r.DeviceClass]) -> dict[str, r.DeviceClass]:
    """v1.34's ``extended.DeviceClassMapping``: every class answers to its
    ``extendedResourceName`` when it has one, else to its implicit name only.  Of two
    classes naming one resource v1.34 keeps the one its lister lists last (Go map order, at
    random); here the last of ``classes``."""
    out: dict[str, r.DeviceClass] = {}
    for c in classes:
        name = c.extended_resource_name
        out[DEVICE_CLASS_PREFIX + c.name if name is None else name] = c
    return out


def device_requests_v134(
    pod_spec: Mapping[str, Any], resources: Iterable[str], classes: Resolver
) -> tuple[list[dict[str, Any]], list[RequestMapping]]:
    """v1.34's ``createDeviceRequests`` and ``createRequestMappings``: per resource, one
    ``exactly`` request for every container (init containers first) requesting a nonzero
    whole amount of it, for that amount, named ``container-<i>-request-<j>`` as
    :func:`device_requests` names them (no reuse between init and long-lived containers).
    v1.34 walks the resources in Go map order; here sorted (the same when there is one)."""
    containers = _containers(pod_spec)
    requests: list[dict[str, Any]] = []
    mappings: list[RequestMapping] = []
    for resource in sorted(resources):
        klass = classes(resource)
        if klass is None:
            continue
        for i, c in enumerate(containers):
            req, m = _container_request(i, c, resource, ())
            if req is None:
                continue
            mappings += m
            requests.append(
                {
                    "name": req.name,
                    "exactly": {
                        "deviceClassName": klass.name,
                        "allocationMode": "ExactCount",
                        "count": req.count,
                    },
                }
            )
    return requests, mappings
