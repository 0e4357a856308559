"""DynamicResources' special claim for a Pod's extended resources backed by DRA devices
(DRAExtendedResource; upstream ``extendeddynamicresources.go``).

- PreFilter (:func:`special_claim`): a Pod requesting an extended resource a DeviceClass
  backes (:mod:`kubesched.devices.extended`) gets one more claim after its own: the claim an
  earlier cycle created for it (annotated, the Pod its controller owner), else an in-memory
  claim without requests (:data:`~kubesched.devices.extended.SPECIAL_CLAIM_NAME`).
- Filter (:class:`NodeClaims`): a claim from an earlier cycle with requests rejects every
  node (``cannot schedule extended resource claim``); per node, a requested resource
  backed by a class that the node's allocatable lacks (0) goes to DRA, one neither backed
  nor in the allocatable rejects the node (``cannot fit resource``); the node's variant of
  the claim gets the requests :func:`~kubesched.devices.extended.device_requests` makes for
  the resources that go to DRA there (one variant per distinct set of such resources).
- :func:`node_answers`: that per-node answer for every row of the node table at once (the
  plugin keeps it while nodes, classes and slices are unchanged), so Filter indexes it by
  the rows it is given instead of asking each node.
- PreBind (:func:`created_claim`): the claim written for the node (named
  ``<pod>-extended-resources-<suffix>``), and the Pod's ``status.extendedResourceClaimStatus``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.api import resource as r
from kubesched.devices import extended as ext
from kubesched.kernels.resources import is_extended_resource_name
from kubesched.state.nodes import NodeTable

ERR_STALE = "cannot schedule extended resource claim"
ERR_CANNOT_FIT = "cannot fit resource"


def requested(pod: api.Pod, classes: ext.Resolver, v134: bool = False) -> dict[str, int]:
    """The Pod's nonzero DRA-extended requests (upstream ``podScalarResources`` filtered),
    or {} when none of them is backed by a class (the Pod needs no special claim).  v1.34
    takes extended resource names only (an implicit class name is a native one there)."""
    named = is_extended_resource_name if v134 else ext.is_dra_extended_name
    out = {n: q for n, q in pod.requests.items() if q and named(n)}
    return out if any(classes(n) is not None for n in out) else {}


def special_claim(pod: api.Pod, claims: list[r.ResourceClaim], parse: Any) -> r.ResourceClaim:
    """Upstream ``preFilterExtendedResources``: the claim an earlier cycle created for the
    Pod (``claims`` is every claim), else the in-memory one (``parse`` parses a manifest)."""
    for c in claims:
        if (c.raw.get("metadata") or {}).get("annotations", {}).get(ext.CLAIM_ANNOTATION) != "true":
            continue
        for o in (c.raw.get("metadata") or {}).get("ownerReferences") or []:
            if o.get("name") == pod.name and o.get("controller") and o.get("uid") == pod.uid:
                return c
    parsed: r.ResourceClaim = parse(_manifest(pod, ext.SPECIAL_CLAIM_NAME, []))
    return parsed


def _manifest(pod: api.Pod, name: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": r.API_VERSION,
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": pod.namespace,
            "name": name,
            "uid": f"extended-resources-{pod.uid}",
            "generateName": f"{pod.name}-extended-resources-",
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod.name,
                    "uid": pod.uid,
                    "controller": True,
                }
            ],
            "annotations": {ext.CLAIM_ANNOTATION: "true"},
        },
        "spec": {"devices": {"requests": requests}} if requests else {},
    }


def is_special(claim: r.ResourceClaim) -> bool:
    """Whether ``claim`` is the in-memory claim (not written yet)."""
    return claim.name == ext.SPECIAL_CLAIM_NAME


@dataclass(slots=True)
class NodeClaims:
    """The special claim's variant per set of resources a node gets from DRA."""

    pod: api.Pod
    base: r.ResourceClaim
    wanted: Mapping[str, int]
    """The Pod's nonzero DRA-extended requests."""
    classes: ext.Resolver
    v134: bool = False
    """v1.34's Filter: a resource a class backs goes to DRA on a node whose allocatable
    lacks the name (``0`` is the device plugin's), and then every such resource the Pod
    requests does, also when the Pod's own claims alone send it to the allocator."""
    variants: dict[frozenset[str], tuple[r.ResourceClaim, list[ext.RequestMapping]]] = field(
        default_factory=dict
    )
    specs: dict[str, dict[str, Any]] | None = None
    """Variant specs by their requests, shared across Pods (the caller bounds it): equal
    requests give the same ``spec`` mapping, whose parse ``parse`` keeps."""
    parse: Callable[[Mapping[str, Any]], r.ResourceClaim] = r.parse_claim
    """Parses a variant's manifest (the plugin's parser keeps parsed specs by identity)."""
    made: dict[str, tuple[list[dict[str, Any]], list[ext.RequestMapping]]] | None = None
    """The requests and mappings made per :func:`~kubesched.devices.extended.requests_key`,
    shared across Pods (the caller bounds it; nobody changes what it holds)."""

    def to_dra(self, node: api.Node, user_claims: bool = False) -> frozenset[str] | str:
        """The resources ``node`` must get from DRA, or the reason it cannot run the Pod
        (``user_claims``: the Pod has claims of its own)."""
        if self.base.requests:
            return ERR_STALE
        if self.v134:
            return self._to_dra_v134(node, user_claims)
        out = set()
        for name in self.wanted:
            have = node.allocatable.get(name)
            if self.classes(name) is not None and not have:
                out.add(name)
            elif have is None:
                return ERR_CANNOT_FIT
        return frozenset(out)

    def _to_dra_v134(self, node: api.Node, user_claims: bool) -> frozenset[str] | str:
        backed, absent = set(), False
        for name in self.wanted:
            have = node.allocatable.get(name)
            if self.classes(name) is not None:
                backed.add(name)
                absent = absent or have is None
            elif have is None:
                return ERR_CANNOT_FIT
        return frozenset(backed) if absent or user_claims else frozenset()

    def _spec(self, requests: list[dict[str, Any]]) -> dict[str, Any]:
        if not requests:
            return {}
        if self.specs is None:
            return {"devices": {"requests": requests}}
        key = repr(requests)
        hit = self.specs.get(key)
        if hit is None:
            hit = self.specs[key] = {"devices": {"requests": requests}}
        return hit

    def variant(self, to_dra: frozenset[str]) -> tuple[r.ResourceClaim, list[ext.RequestMapping]]:
        """The claim (with the requests for ``to_dra``) and the container mappings."""
        hit = self.variants.get(to_dra)
        if hit is None:
            spec = self.pod.raw.get("spec") or {}
            make = ext.device_requests_v134 if self.v134 else ext.device_requests
            if self.made is None:
                requests, mappings = make(spec, to_dra, self.classes)
            else:
                key = ext.requests_key(spec, to_dra, self.classes)
                known = self.made.get(key)
                if known is None:
                    known = self.made[key] = make(spec, to_dra, self.classes)
                requests, mappings = known
            raw = dict(self.base.raw)
            raw["spec"] = self._spec(requests)
            claim = self.parse(raw)
            hit = self.variants[to_dra] = (claim, mappings)
        return hit


PASS, SEARCH, STALE, CANNOT_FIT = 0, 1, 4, 5
"""Codes of :attr:`RowAnswers.code`: the node passes without the allocator (its allocatable
gives every resource and the Pod has no claims of its own), the allocator or a column
decides with the node's variant, :data:`ERR_STALE`, :data:`ERR_CANNOT_FIT` (the last two
are DynamicResources' Filter codes for them)."""


@dataclass(frozen=True, slots=True)
class RowAnswers:
    """:meth:`NodeClaims.to_dra` for every row of a node table.

    ``code``: int8 ``(capacity,)``, one of :data:`PASS`, :data:`SEARCH`, :data:`STALE`,
    :data:`CANNOT_FIT` (rows without a node: :data:`PASS`, never asked); ``group``: int32
    ``(capacity,)``, for a :data:`SEARCH` row the index in ``keys`` of the resources the
    node gets from DRA (-1 elsewhere)."""

    code: npt.NDArray[np.int8]
    group: npt.NDArray[np.int32]
    keys: tuple[frozenset[str], ...]


def node_answers(claims: NodeClaims, nodes: NodeTable, user_claims: bool) -> RowAnswers:
    """:meth:`NodeClaims.to_dra` of every node in ``nodes`` (``user_claims``: the Pod has
    claims of its own).  The answer depends on the nodes' allocatable, the Pod's
    requested names and the classes only."""
    n = nodes.capacity
    code = np.zeros(n, dtype=np.int8)
    group = np.full(n, -1, dtype=np.int32)
    keys: dict[frozenset[str], int] = {}
    for row in nodes.row_of.values():
        node = nodes.nodes[row]
        if node is None:
            continue
        to_dra = claims.to_dra(node, user_claims)
        if isinstance(to_dra, str):
            code[row] = STALE if to_dra == ERR_STALE else CANNOT_FIT
        elif to_dra or user_claims:
            code[row] = SEARCH
            group[row] = keys.setdefault(to_dra, len(keys))
    return RowAnswers(code, group, tuple(keys))


def created_claim(pod: api.Pod, claim: r.ResourceClaim) -> dict[str, Any]:
    """The manifest PreBind creates from the node's variant ``claim``: a generated name
    (upstream's API server appends five random characters; here they come from the Pod's
    UID) and a UID of its own."""
    raw = dict(claim.raw)
    meta = dict(raw.get("metadata") or {})
    digest = hashlib.sha256(pod.uid.encode()).hexdigest()
    meta["name"] = f"{pod.name}-extended-resources-{digest[:5]}"
    meta["uid"] = f"{pod.uid}-extended-resources"
    raw["metadata"] = meta
    return raw


def claim_status(claim_name: str, mappings: list[ext.RequestMapping]) -> dict[str, Any]:
    """The Pod's ``status.extendedResourceClaimStatus``."""
    return {
        "requestMappings": [m.as_json() for m in mappings],
        "resourceClaimName": claim_name,
    }
