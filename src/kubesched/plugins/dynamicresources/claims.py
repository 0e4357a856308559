"""What DynamicResources knows of the cluster's DRA objects (upstream's ``draManager`` with
its claim assume cache and in-flight allocations).

Objects come from the cluster state (``ClusterState.objects``: snapshot, simulator, live
informers) and are parsed once per manifest.  Under DRADeviceTaintRules the slices are
listed with the DeviceTaintRules' taints added to the devices they select
(:class:`TaintRules`).  Two overlays sit on top, as upstream's:

- **in flight**: allocations made at Reserve and not yet written (PreBind), by claim UID;
  their devices count as in use, and a Pod whose claim is in flight waits;
- **assumed**: claims PreBind wrote (allocation, ``reservedFor``) before the API server's echo
  arrives; an informer event for the claim replaces the assumed version.

The devices in use (:class:`DeviceUse`) follow both overlays and the informer's claims
incrementally, so a Pod's cycle never walks every claim of the cluster.

:func:`claim_with_reservation` builds the claim PreBind writes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.api import resource as r
from kubesched.api.errors import CelRuntimeError
from kubesched.devices import allocator, extended, pools
from kubesched.framework.interface import IntArray
from kubesched.state.cache import ClusterState

DeviceId = tuple[str, str, str]
PARSED_MAX = 100_000
"""Manifests kept parsed before the cache starts again."""
FINALIZER = "resource.kubernetes.io/delete-protection"
"""What PreBind adds to a claim it allocates or reserves (upstream's finalizer)."""


class DeviceUse:
    """Devices in use, kept up to date by source (a claim's allocation, an in-flight one)
    rather than recomputed from every claim per Pod.  ``listeners`` hear each device that
    becomes used (-1 free) or free (+1); ``freed`` counts the latter."""

    def __init__(self) -> None:
        self.count: dict[DeviceId, int] = {}
        self._by: dict[str, tuple[DeviceId, ...]] = {}
        self.freed = 0
        self.ready = False
        self.listeners: list[Callable[[DeviceId, int], None]] = []

    def set(self, source: str, devices: tuple[DeviceId, ...]) -> None:
        """``source`` now holds ``devices`` (none: drop it); a no-op until :attr:`ready`."""
        if not self.ready:
            return
        old = self._by.pop(source, ())
        if devices:
            self._by[source] = devices
        count = self.count
        for d in devices:
            n = count.get(d, 0)
            count[d] = n + 1
            if n == 0:
                for fn in self.listeners:
                    fn(d, -1)
        for d in old:
            n = count[d] - 1
            if n:
                count[d] = n
                continue
            del count[d]
            self.freed += 1
            for fn in self.listeners:
                fn(d, 1)


def _warm(klass: r.DeviceClass, d: r.Device) -> None:
    """Cache the class's selector results on device ``d`` (a runtime error is not cached:
    the allocator meets it again and reports it)."""
    for sel in klass.selectors:
        if sel.expression not in d.matches:
            try:
                d.matches[sel.expression] = sel.matches(d.activation)
            except CelRuntimeError:
                return
        if not d.matches[sel.expression]:
            return


def _used(
    results: Iterable[r.AllocatedDevice] | None, consumable: bool = False
) -> tuple[DeviceId, ...]:
    """The devices ``results`` hold for themselves (upstream ``foreachAllocatedDevice``'s
    dedicated devices: not admin access, and under DRAConsumableCapacity not shared)."""
    return tuple(
        d.device_id
        for d in results or ()
        if not d.admin_access and not (consumable and d.share_id is not None)
    )


def _shares(results: Iterable[r.AllocatedDevice] | None) -> tuple[r.AllocatedDevice, ...]:
    return tuple(d for d in results or () if not d.admin_access and d.share_id is not None)


@dataclass(frozen=True, slots=True)
class TaintRules:
    """DRADeviceTaintRules on: :meth:`DraObjects.slices` carry the rules' taints."""

    nil_selects_all: bool
    """A rule without ``deviceSelector`` taints every device (v1.35, v1.36) or none (v1.37)."""

    @classmethod
    def of_release(
        cls, at_least: Callable[[str], bool], enabled: Callable[[str], bool]
    ) -> TaintRules | None:
        """The release's rule semantics, None when its gates leave the rules off."""
        if not enabled("DRADeviceTaintRules"):
            return None
        return cls(nil_selects_all=not at_least("1.37"))


class DraObjects:
    """Parsed DeviceClasses, ResourceSlices and ResourceClaims with the two overlays.

    Classes and slices are listed once per change of either kind (:meth:`changed`, told by
    the plugin's informer handler, bumps :attr:`version`); devices in use are kept in
    :attr:`use` from the first time they are asked for."""

    def __init__(
        self,
        cluster: ClusterState,
        taint_rules: TaintRules | None = None,
        consumable: bool = False,
    ) -> None:
        self.cluster = cluster
        self.consumable = consumable
        """DRAConsumableCapacity: results with a ``shareID`` share their device."""
        self._shares: dict[str, tuple[r.AllocatedDevice, ...]] = {}
        """Shared results by source (claim or in-flight allocation), DRAConsumableCapacity."""
        self.taint_rules = taint_rules
        """How DeviceTaintRules taint devices (None: DRADeviceTaintRules off, ignored)."""
        self._parsed: dict[int, tuple[Mapping[str, Any], Any]] = {}
        self._parts: dict[int, tuple[Any, Any]] = {}
        """Claim specs and allocations parsed, shared by a claim's versions."""
        self._alike: r.SharedMatches = {}
        """Selector results shared by the slices' devices alike (:func:`r.parse_slice`)."""
        self.in_flight: dict[str, tuple[r.AllocatedDevice, ...]] = {}
        self.assumed: dict[str, r.ResourceClaim] = {}
        self.version = 0
        """Bumped when a DeviceClass or ResourceSlice changes."""
        self._listed: tuple[int, dict[str, r.DeviceClass], list[r.ResourceSlice]] | None = None
        self._extended: tuple[int, dict[str, r.DeviceClass]] | None = None
        self.extended_v134 = False
        """DRAExtendedResource as v1.34 maps names to classes
        (:func:`kubesched.devices.extended.resolver_v134`)."""
        self.use = DeviceUse()
        self._warm_classes: dict[str, r.DeviceClass] = {}
        self._warm_slices: dict[str, r.ResourceSlice] = {}

    def parse(self, obj: Mapping[str, Any]) -> Any:
        """``obj`` parsed (once per manifest object)."""
        hit = self._parsed.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        if len(self._parsed) > PARSED_MAX:  # the cache keeps the manifests alive: bound it
            self._parsed.clear()
            self._parts.clear()
        kind = obj.get("kind")
        parsed: Any
        if kind == "ResourceClaim":
            parsed = r.parse_claim(obj, cache=self._parts)
        elif kind == "ResourceSlice":
            parsed = r.parse_slice(obj, shared=self._alike)
        elif kind == "DeviceTaintRule":
            parsed = r.parse_taint_rule(obj)
        else:
            parsed = r.parse_class(obj)
        self._parsed[id(obj)] = (obj, parsed)
        return parsed

    def parse_written(
        self, obj: Mapping[str, Any], results: tuple[r.AllocatedDevice, ...] | None
    ) -> r.ResourceClaim:
        """A claim manifest PreBind wrote from the allocation ``results`` parsed: the same
        :meth:`parse`, told beforehand what ``status.allocation`` parses to when
        :func:`~kubesched.api.resource.written_allocation` vouches for it."""
        alloc = (obj.get("status") or {}).get("allocation")
        if results is not None and isinstance(alloc, Mapping):
            known = r.written_allocation(alloc, results)
            if known is not None:
                if len(self._parsed) > PARSED_MAX:
                    self._parsed.clear()
                    self._parts.clear()
                self._parts[id(alloc)] = (alloc, known)
        parsed: r.ResourceClaim = self.parse(obj)
        return parsed

    def _of_kind(self, kind: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for (k, key), obj in self.cluster.objects.items():
            if k == kind and obj.get("apiVersion", r.API_VERSION) in r.SAME_AS_V1:
                yield key, obj

    def changed(self, obj: Mapping[str, Any], deleted: bool) -> None:
        """An informer event.  A class or a slice is parsed and its devices' selector
        results computed now (informer work), not in the next Pod's cycle."""
        kind = obj.get("kind")
        if kind == "DeviceTaintRule" and self.taint_rules is not None:
            self.version += 1  # the slices are listed again with the rules' taints
            self._listed = None
            return
        if kind not in ("DeviceClass", "ResourceSlice"):
            return
        self.version += 1
        self._listed = None
        name = str((obj.get("metadata") or {}).get("name"))
        warm = self._warm_classes if kind == "DeviceClass" else self._warm_slices
        warm.pop(name, None)
        if deleted or obj.get("apiVersion", r.API_VERSION) != r.API_VERSION:
            return
        try:
            warm[name] = parsed = self.parse(obj)
        except Exception:  # a bad object: PreFilter reports it as it did
            return
        classes = [parsed] if kind == "DeviceClass" else list(self._warm_classes.values())
        slices = [parsed] if kind == "ResourceSlice" else list(self._warm_slices.values())
        for c in classes:
            for sl in slices:
                for d in sl.devices:
                    _warm(c, d)

    def claim(self, namespace: str, name: str) -> r.ResourceClaim | None:
        """The claim ``namespace/name`` (the assumed version when there is one)."""
        key = f"{namespace}/{name}"
        hit = self.assumed.get(key)
        if hit is not None:
            return hit
        obj = self.cluster.objects.get(("ResourceClaim", key))
        return None if obj is None else self.parse(obj)

    def claims(self) -> Iterator[r.ResourceClaim]:
        """Every claim (assumed versions first)."""
        yield from self.assumed.values()
        for key, obj in self._of_kind("ResourceClaim"):
            if key not in self.assumed:
                yield self.parse(obj)

    def controlled_by(self, uid: str) -> list[r.ResourceClaim] | None:
        """The claims :meth:`claims` yields whose controller owner has ``uid``, in its
        order, when they are found through the cluster's owner index (at most one of them
        is not an assumed version); None when a scan of :meth:`claims` must order them."""
        out = [
            c
            for c in self.assumed.values()
            if any(
                o.get("controller") and o.get("uid") == uid
                for o in (c.raw.get("metadata") or {}).get("ownerReferences") or ()
            )
        ]
        keys = [
            key
            for kind, key in self.cluster.controlled.get(uid, ())
            if kind == "ResourceClaim" and key not in self.assumed
        ]
        if len(keys) > 1:
            return None
        for key in keys:
            obj = self.cluster.objects[("ResourceClaim", key)]
            if obj.get("apiVersion", r.API_VERSION) in r.SAME_AS_V1:
                out.append(self.parse(obj))
        return out

    def _list(self) -> tuple[int, dict[str, r.DeviceClass], list[r.ResourceSlice]]:
        if self._listed is None:
            classes: dict[str, r.DeviceClass] = {}
            for _, obj in self._of_kind("DeviceClass"):
                c = self.parse(obj)
                classes[c.name] = c
            slices = sorted(
                (self.parse(o) for _, o in self._of_kind("ResourceSlice")), key=lambda s: s.name
            )
            if self.taint_rules is not None:
                rules = sorted(
                    (
                        self.parse(o)
                        for (k, _), o in self.cluster.objects.items()
                        if k == "DeviceTaintRule"
                        and str(o.get("apiVersion", "")).startswith(r.API_GROUP + "/")
                    ),
                    key=lambda x: x.name,
                )
                slices = r.with_taints(slices, rules, self.taint_rules.nil_selects_all)
            self._listed = (self.version, classes, slices)
        return self._listed

    def classes(self) -> dict[str, r.DeviceClass]:
        """DeviceClasses by name (do not change the dict)."""
        return self._list()[1]

    def extended_classes(self) -> dict[str, r.DeviceClass]:
        """Extended resource name -> the DeviceClass behind it (DRAExtendedResource;
        :func:`kubesched.devices.extended.resolver` over the classes in the order the
        cluster state got them, as upstream's informer adds them)."""
        self._list()
        if self._extended is None or self._extended[0] != self.version:
            classes = [self.parse(obj) for _, obj in self._of_kind("DeviceClass")]
            mapping = extended.resolver_v134 if self.extended_v134 else extended.resolver
            self._extended = (self.version, mapping(classes))
        return self._extended[1]

    def slices(self) -> list[r.ResourceSlice]:
        """Every ResourceSlice, by name (do not change the list)."""
        return self._list()[2]

    def in_use(self) -> Mapping[DeviceId, int]:
        """Devices allocated to a claim or in flight (upstream ``ListAllAllocatedDevices``
        plus in-flight allocations; admin-access results do not count), kept up to date."""
        use = self.use
        if not use.ready:
            use.ready = True
            for claim in self.claims():
                self._track("c/" + claim.key, claim.allocation)
            for uid, results in self.in_flight.items():
                self._track("f/" + uid, results)
        return use.count

    def _track(self, source: str, results: tuple[r.AllocatedDevice, ...] | None) -> None:
        """``source`` (a claim, an in-flight allocation) now holds ``results``."""
        self.use.set(source, _used(results, self.consumable))
        if self.consumable:
            shares = _shares(results)
            if shares:
                self._shares[source] = shares
            else:
                self._shares.pop(source, None)

    def shared_use(self) -> allocator.SharedUse:
        """Upstream ``GatherAllocatedState``'s shared devices and aggregated capacity
        (DRAConsumableCapacity; call :meth:`in_use` first)."""
        return allocator.shared_use(d for results in self._shares.values() for d in results)

    def allocated_ids(self) -> set[DeviceId]:
        """Upstream ``IsDeviceAllocated`` over ``GatherAllocatedState``: the devices a claim
        or an in-flight allocation holds, shared ones (DRAConsumableCapacity) included."""
        out = set(self.in_use())
        for results in self._shares.values():
            out.update(d.device_id for d in results)
        return out

    def allocated_devices(self) -> set[DeviceId]:
        """:meth:`in_use` as a set (a copy)."""
        return set(self.in_use())

    def set_in_flight(self, uid: str, results: tuple[r.AllocatedDevice, ...] | None) -> None:
        """Put the claim ``uid``'s allocation in flight (None: drop it)."""
        if results is None:
            self.in_flight.pop(uid, None)
        else:
            self.in_flight[uid] = results
        self._track("f/" + uid, results)

    def assume(self, claim: r.ResourceClaim) -> None:
        """PreBind wrote ``claim``: use it until the API server's version is heard."""
        self.assumed[claim.key] = claim
        self._track("c/" + claim.key, claim.allocation)

    def forget(self, key: str) -> None:
        """A write of claim ``key`` failed: back to the version last heard."""
        self.assumed.pop(key, None)
        obj = self.cluster.objects.get(("ResourceClaim", key))
        current = None if obj is None else self.parse(obj)
        self._track("c/" + key, current.allocation if current else None)

    def heard(self, obj: Mapping[str, Any], deleted: bool) -> None:
        """An informer event for a claim: drop the assumed version."""
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        self.assumed.pop(key, None)
        current = None if deleted else self.parse(obj)
        self._track("c/" + key, current.allocation if current else None)


# --------------------------------------------------------------------------- what PreBind writes
def claim_with_reservation(
    raw: Mapping[str, Any],
    consumer: Mapping[str, Any],
    results: tuple[r.AllocatedDevice, ...] | None,
    node_name: str,
    node: api.Node | None,
    slices: list[r.ResourceSlice],
    binds_to_node: bool,
) -> dict[str, Any]:
    """A new claim manifest: ``results`` as ``status.allocation`` (when given) and
    ``consumer`` (the Pod's reference, or its PodGroup's: :mod:`kubesched.api.groupclaims`)
    in ``status.reservedFor``; the input is not changed (its ``spec`` is shared).
    ``binds_to_node``: the allocator reads ``bindsToNode`` (:func:`allocation_node_selector`)."""
    out = dict(raw)  # the spec is shared, metadata and status are new dicts
    meta = out["metadata"] = dict(out.get("metadata") or {})
    finalizers = list(meta.get("finalizers") or [])
    if FINALIZER not in finalizers:
        meta["finalizers"] = [*finalizers, FINALIZER]
    status = out["status"] = dict(out.get("status") or {})
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
        selector = allocation_node_selector(results, node_name, node, slices, binds_to_node)
        if selector is not None:
            allocation["nodeSelector"] = selector
        status["allocation"] = allocation
    reserved = list(status.get("reservedFor") or [])
    if not any(x.get("uid") == consumer["uid"] for x in reserved):
        reserved.append(dict(consumer))
    status["reservedFor"] = reserved
    return out


def allocation_node_selector(
    results: tuple[r.AllocatedDevice, ...],
    node_name: str,
    node: api.Node | None,
    slices: list[r.ResourceSlice],
    binds_to_node: bool,
) -> dict[str, Any] | None:
    """Upstream ``createNodeSelector`` (the same in every release; the ``experimental``
    allocator and from v1.36 the ``incubating`` one also read ``bindsToNode``): the node by
    name as soon as a device is local to it (its slice's ``nodeName``, or under
    ``perDeviceNodeSelection`` the device's) or, when ``binds_to_node``, has
    ``bindsToNode``; else one term holding every requirement of the devices' node
    selectors (the slice's ``nodeSelector``, or the device's), each once; else none (every
    device from ``allNodes``: the claim is usable everywhere).

    Each result's device is looked up among the slices that offer it to ``node_name``
    (the newest pool generation, as the allocator took it).  A selector of several terms
    (API validation refuses one on a slice; a device's may have them) is pinned to the node,
    where upstream's allocation fails (``docs/fidelity.md``)."""
    labels = node.labels if node is not None else {}
    sources: dict[DeviceId, tuple[int, r.ResourceSlice, r.Device]] = {}
    for s in slices:
        for dev in s.devices:
            if s.per_device_node_selection:
                offered = pools.node_matches(
                    dev.node_name, dev.node_selector, dev.all_nodes, node_name, labels
                )
            else:
                offered = pools.slice_reaches(s, node_name, labels)
            key = (s.driver, s.pool, dev.name)
            if offered and (key not in sources or sources[key][0] < s.generation):
                sources[key] = (s.generation, s, dev)
    expressions: list[api.Requirement] = []
    fields: list[api.Requirement] = []
    for d in results:
        found = sources.get(d.device_id)
        if found is None:
            continue
        _, s, dev = found
        local, selector = (
            (dev.node_name, dev.node_selector)
            if s.per_device_node_selection
            else (s.node_name, s.node_selector)
        )
        pinned = binds_to_node and dev.binds_to_node
        if local or pinned or (selector is not None and len(selector) > 1):
            return _by_name(node_name)
        if selector:
            _add_new(selector[0].match_fields, fields)
            _add_new(selector[0].match_expressions, expressions)
    if not expressions and not fields:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = [_requirement(q) for q in expressions]
    if fields:
        term["matchFields"] = [_requirement(q) for q in fields]
    return {"nodeSelectorTerms": [term]}


def _by_name(node_name: str) -> dict[str, Any]:
    """The selector of one node by name (``metadata.name In [node]``)."""
    fields = [{"key": "metadata.name", "operator": "In", "values": [node_name]}]
    return {"nodeSelectorTerms": [{"matchFields": fields}]}


def _add_new(new: Iterable[api.Requirement], into: list[api.Requirement]) -> None:
    """Upstream ``addNewNodeSelectorRequirements``: append each requirement ``into`` lacks
    (the same key, operator and set of values)."""
    for q in new:
        if not any(
            o.key == q.key and o.operator == q.operator and set(o.values) == set(q.values)
            for o in into
        ):
            into.append(q)


def _requirement(q: api.Requirement) -> dict[str, Any]:
    """A requirement as the manifest writes it (``values`` omitted when empty)."""
    out: dict[str, Any] = {"key": q.key, "operator": q.operator}
    if q.values:
        out["values"] = list(q.values)
    return out


def quantity_text(v: Fraction) -> str:
    """A consumed capacity as a quantity string (an integer, or millis)."""
    if v.denominator == 1:
        return str(v.numerator)
    return f"{math.ceil(v * 1000)}m"


def reachable(
    terms: tuple[api.NodeSelectorTerm, ...], cluster: ClusterState, rows: IntArray
) -> npt.NDArray[np.bool_]:
    """bool ``(len(rows),)``: the nodes an allocation's node selector admits (PreBind's
    own ``metadata.name In [node]`` by row lookup, any other selector node by node)."""
    nodes = cluster.nodes
    if (
        len(terms) == 1
        and not terms[0].match_expressions
        and len(terms[0].match_fields) == 1
        and terms[0].match_fields[0].key == "metadata.name"
        and terms[0].match_fields[0].operator == "In"
    ):
        wanted = [nodes.row_of.get(v, -1) for v in terms[0].match_fields[0].values]
        return np.isin(rows, np.asarray(wanted, dtype=np.int64))
    out = np.zeros(rows.shape[0], dtype=np.bool_)
    for i, row in enumerate(rows.tolist()):
        node = nodes.nodes[row]
        out[i] = node is not None and r.node_selector_matches(terms, node.name, node.labels)
    return out
