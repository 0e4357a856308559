"""Per node, which DRA device request of a Pod cannot be satisfied there, and why.

DynamicResources' Filter gives a node upstream's one reason, ``cannot allocate all claims``.
This module counts, for every request of the Pod's claims still to allocate (each alternative
of a ``firstAvailable`` list on its own) and every node: the devices of the slices reaching the
node (each pool's newest generation, as the allocator gathers them; from v1.35 none of an
incomplete or invalid pool, which the allocator passes over) that match the class's and
the request's selectors, and how many of those are free (allocated to no claim and not in
flight; all of them for an ``adminAccess`` request).  From the counts, a rejected node's
problem with a request is:

- ``no matching device``: none of the node's devices matches;
- ``too few matching``: fewer matching devices than the request's count, in use or not;
- ``too few free``: fewer free than the request's count (``All``: a matching device is in use);
- ``constraint unmet``: every request has enough free, and the allocator finds devices once a
  claim's ``matchAttribute`` constraints are dropped (the requests they name get the problem);
- ``too few free together``: every request has enough free on its own, not all at once (they
  compete for the same devices).

A selector failing at run time counts as not matching here (Filter reports the error itself).
Arrays are indexed by node-table row: int64 ``(cap,)``, 0 for rows not counted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.api import resource as r
from kubesched.api.errors import CelRuntimeError
from kubesched.config import names
from kubesched.devices import allocator, draoptions, pools
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import IntArray

PLUGIN = names.DYNAMIC_RESOURCES
CANNOT_ALLOCATE = "cannot allocate all claims"
NO_MATCH = "no matching device"
TOO_FEW_MATCHING = "too few matching"
TOO_FEW = "too few free"
CONSTRAINT = "constraint unmet"
TOGETHER = "too few free together"


@dataclass(slots=True)
class RequestFit:
    """One request (or ``firstAvailable`` alternative) of a claim, counted on every node."""

    claim: int
    """Index into :attr:`DeviceFits.claims`."""
    base: str
    """The request's name (an alternative's is ``base/sub``, see :attr:`name`)."""
    spec: r.ExactRequest
    alternative: bool
    matching: IntArray
    free: IntArray
    free_ids: set[allocator.DeviceId] = field(default_factory=set)
    """The free matching devices over every node counted (a shared pool counts once)."""

    @property
    def name(self) -> str:
        return f"{self.base}/{self.spec.name}" if self.alternative else self.base

    @property
    def all_mode(self) -> bool:
        return self.spec.mode == r.ALL

    @property
    def needed(self) -> int:
        """Devices needed on one node: the count; 1 for ``All`` (at least one device)."""
        return 1 if self.all_mode else self.spec.count

    def usable(self) -> IntArray:
        """Free devices per row as the capacity report counts them: for ``All``, the
        matching devices only where none of them is in use."""
        if self.all_mode:
            return np.where(self.free == self.matching, self.matching, 0)
        return self.free

    def problem(self, row: int) -> str | None:
        """What keeps this request from being satisfied on ``row`` alone (None: nothing)."""
        if self.matching[row] == 0:
            return NO_MATCH
        if self.matching[row] < self.needed:
            return TOO_FEW_MATCHING
        if self.free[row] < (self.matching[row] if self.all_mode else self.spec.count):
            return TOO_FEW
        return None


@dataclass(slots=True)
class DeviceFits:
    """The Pod's claims still to allocate, each request counted on every node."""

    plugin: Any
    """The profile's DynamicResources instance (its claims, classes, slices, in-use set)."""
    claims: list[r.ResourceClaim]
    requests: list[RequestFit]
    allocated: list[r.ResourceClaim]
    """The Pod's claims already allocated (they pin the Pod to their node selector)."""

    @staticmethod
    def of(plugins: Mapping[str, Any], cluster: ClusterState, pod: api.Pod) -> DeviceFits | None:
        """Count on every node; None when the profile has no DynamicResources or the Pod's
        claims cannot all be resolved (PreEnqueue / PreFilter say why)."""
        plugin = plugins.get(PLUGIN)
        if plugin is None or not pod.resource_claims:
            return None
        claims, problem = plugin.pod_claims(pod)
        if problem:
            return None
        objects = plugin.objects
        classes = objects.classes()
        slices = objects.slices()
        in_use = objects.allocated_devices()
        todo = [c for c in claims if c.allocation is None]
        fits = DeviceFits(plugin, todo, [], [c for c in claims if c.allocation is not None])
        cap = cluster.nodes.capacity
        for ci, claim in enumerate(todo):
            for req in claim.requests:
                alts = [req.exactly] if req.exactly is not None else list(req.first_available)
                for spec in alts:
                    if spec.class_name in classes:
                        fits.requests.append(
                            RequestFit(
                                ci,
                                req.name,
                                spec,
                                req.exactly is None,
                                np.zeros(cap, dtype=np.int64),
                                np.zeros(cap, dtype=np.int64),
                            )
                        )
        if not fits.requests:
            return fits
        table = cluster.nodes
        # v1.35+: the allocator passes over incomplete and invalid pools; so does the count
        options: draoptions.Options = plugin.allocator_options
        skip_unusable = options.skip_unusable
        for row in table.order().tolist():
            node = table.nodes[row]
            if node is None:
                continue
            devices = [
                ((s.driver, s.pool, d.name), d)
                for pool in pools.gather_pools(slices, node.name, node.labels, options, slices)
                if not (skip_unusable and (pool.incomplete or pool.invalid()))
                for s in pool.slices
                for d in s.devices
            ]
            for fit in fits.requests:
                klass = classes[fit.spec.class_name]
                matching = [(i, d) for i, d in devices if _selectable(klass, fit.spec, d, options)]
                # a device tainted against the request (DRADeviceTaints) is never free for it
                free = [
                    i
                    for i, d in matching
                    if (fit.spec.admin_access or i not in in_use)
                    and not (
                        options.device_taints
                        and fit.spec.blocked_by(d.taints, options.taints_any_effect)
                    )
                ]
                fit.matching[row], fit.free[row] = len(matching), len(free)
                fit.free_ids.update(free)
        return fits

    def reachable(self, cluster: ClusterState, rows: IntArray) -> IntArray:
        """``rows`` where every allocated claim's node selector matches (the other nodes
        are out of reach whatever devices they have)."""
        table = cluster.nodes
        keep = [
            row
            for row in rows.tolist()
            if (node := table.nodes[row]) is not None
            and all(
                c.allocation_node_selector is None
                or r.node_selector_matches(c.allocation_node_selector, node.name, node.labels)
                for c in self.allocated
            )
        ]
        return np.asarray(keep, dtype=np.int64)

    def node_problems(self, cluster: ClusterState, row: int) -> list[dict[str, Any]]:
        """Every request on node ``row`` (rejected with ``cannot allocate all claims``):
        ``{"claim", "request", "deviceClass", "needed", "matching", "free", "problem"}``
        (``needed`` for ``All`` is every matching device; ``problem`` None when the request
        alone is not what fails)."""
        problems = [fit.problem(row) for fit in self.requests]
        bases = {(f.claim, f.base) for f in self.requests}
        stuck = {
            key
            for key in bases
            if all(
                p for f, p in zip(self.requests, problems, strict=True) if (f.claim, f.base) == key
            )
        }
        if not stuck:
            problems = self._combined(cluster, row)
        out = []
        for fit, problem in zip(self.requests, problems, strict=True):
            out.append(
                {
                    "claim": self.claims[fit.claim].key,
                    "request": fit.name,
                    "deviceClass": fit.spec.class_name,
                    "needed": int(fit.matching[row]) if fit.all_mode else fit.spec.count,
                    "matching": int(fit.matching[row]),
                    "free": int(fit.free[row]),
                    "problem": problem,
                }
            )
        return out

    def _combined(self, cluster: ClusterState, row: int) -> list[str | None]:
        """Every request fits on its own: find a claim whose constraints, dropped, let the
        allocator succeed; else the requests compete for the same devices."""
        node = cluster.nodes.nodes[row]
        assert node is not None
        objects = self.plugin.objects
        args = (objects.classes(), objects.slices(), objects.allocated_devices())
        for ci, claim in enumerate(self.claims):
            if not claim.constraints:
                continue
            loose = list(self.claims)
            loose[ci] = dataclasses.replace(claim, constraints=())
            try:
                found = allocator.allocate(
                    node.name,
                    node.labels,
                    loose,
                    *args,
                    self.plugin.allocator_options,
                    objects.shared_use(),
                )
            except allocator.AllocationError:
                continue
            if found is not None:
                named = {n for names, *_ in claim.constraints for n in names}
                return [
                    CONSTRAINT
                    if f.claim == ci and (not named or f.base in named or f.name in named)
                    else None
                    for f in self.requests
                ]
        return [TOGETHER] * len(self.requests)


def _selectable(
    klass: r.DeviceClass, spec: r.ExactRequest, device: r.Device, options: draoptions.Options
) -> bool:
    """The class's and the request's selectors all accept ``device`` (a run-time error is a
    no; results are cached on the device as the allocator caches them)."""
    if (device.consumes and not options.partitionable) or (
        device.binding_conditions and not options.binding_conditions
    ):
        return False
    for sel in (*klass.selectors, *spec.selectors):
        try:
            if not device.selects(sel, options.cel_multiple):
                return False
        except CelRuntimeError:
            return False
    return True
