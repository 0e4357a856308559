"""The structured-parameters allocator: devices for a Pod's claims on one node.

A port of ``k8s.io/dynamic-resource-allocation/structured`` (the ``incubating`` allocator,
the one the features on by default select; partitionable devices and consumable capacity
are not modelled, so devices using them are never picked).
:func:`gather_pools` keeps the slices that reach the node (``nodeName``, ``allNodes`` or a
matching ``nodeSelector``), only each pool's newest generation; :func:`allocate` then searches
depth first with backtracking, request by request, device by device, exactly as upstream's
``allocateOne``: a device is skipped when in use (allocated to a claim or in flight), when the
class's or the request's CEL selectors reject it, when a taint it carries is not tolerated
(DRADeviceTaints), or when a ``matchAttribute`` constraint would break.  The search is
exhaustive, so whether a node fits never depends on the order of pools (upstream iterates a Go
map; we go by driver and pool name, which also makes the chosen devices deterministic).

Releases and gates differ (:class:`Options`): under DRADeviceTaints (alpha at v1.35, on from
v1.36) a device tainted ``NoSchedule`` or ``NoExecute`` is taken only by a request with a
toleration for the taint (checked after the selectors, so a selector's runtime error on it
still counts; an ``All`` request fails on such a device); under DRADeviceBindingConditions
and DRAResourceClaimDeviceStatus (both on from v1.36) a device with ``bindingConditions`` may
be picked (else never), its pools searched after the others.  From v1.35 the search skips an
incomplete pool (fewer slices published than ``resourceSliceCount``) and an invalid one
instead of taking devices from the first and failing on the second (an ``All`` request still
fails on either); from v1.36 an ``All`` alternative of a ``firstAvailable`` list is validated
and continued under its own index (v1.34 and v1.35 reuse the previous alternative's selector
results and go on with alternative 0 after its first device).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kubesched.api import resource as r
from kubesched.api.errors import CelRuntimeError

DeviceId = tuple[str, str, str]


class Options(NamedTuple):
    """What a release's allocator does differently (the defaults are v1.34's)."""

    skip_unusable: bool = False
    """v1.35+: incomplete and invalid pools are passed over in the device search."""
    keep_alternative: bool = False
    """v1.36+: an ``All`` alternative keeps its own index (no v1.34 reuse quirks)."""
    device_taints: bool = False
    """DRADeviceTaints (on from v1.36): a device with a ``NoSchedule`` or ``NoExecute``
    taint the request does not tolerate is passed over."""
    taints_any_effect: bool = True
    """v1.34 (DRADeviceTaints alpha): a taint of any effect (``None`` too) the request does
    not tolerate keeps the device from it (``allTaintsTolerated``)."""

    admin_access: bool = True
    """DRAAdminAccess (beta, on at v1.34): off, a request that sets ``adminAccess`` is an
    error."""

    binding_conditions: bool = False
    """DRADeviceBindingConditions and DRAResourceClaimDeviceStatus (both on from v1.36): a
    device with ``bindingConditions`` may be allocated, and pools holding such devices are
    searched last (else such a device is never picked)."""

    @classmethod
    def of_release(cls, at_least: Callable[[str], bool], enabled: Callable[[str], bool]) -> Options:
        """The options of the release ``at_least("1.xx")`` describes, under the gates
        ``enabled(name)`` says are on."""
        return cls(
            skip_unusable=at_least("1.35"),
            keep_alternative=at_least("1.36"),
            device_taints=enabled("DRADeviceTaints"),
            taints_any_effect=not at_least("1.35"),
            admin_access=enabled("DRAAdminAccess"),
            binding_conditions=enabled("DRADeviceBindingConditions")
            and enabled("DRAResourceClaimDeviceStatus"),
        )


V1_34 = Options()


class AllocationError(Exception):
    """A fault in a claim or class (upstream returns an error: the attempt is aborted)."""


class AllocationTimeout(AllocationError):
    """The search ran past its deadline (DynamicResources' ``filterTimeout``)."""


CHECK_EVERY = 1024
"""Search steps between two looks at the clock when a deadline is set."""


@dataclass(slots=True)
class Pool:
    """The slices of one ``(driver, pool)`` at its newest generation."""

    driver: str
    name: str
    slices: list[r.ResourceSlice] = field(default_factory=list)

    @property
    def incomplete(self) -> bool:
        """Fewer slices than ``resourceSliceCount`` are published."""
        return len(self.slices) != self.slices[0].slice_count

    def invalid(self) -> str:
        """Upstream ``poolIsInvalid``: a duplicate device name ("" when valid)."""
        seen: set[str] = set()
        for s in self.slices:
            for d in s.devices:
                if d.name in seen:
                    return f"duplicate device name {d.name}"
                seen.add(d.name)
        return ""


def has_binding_conditions(pool: Pool) -> bool:
    """Upstream ``poolHasBindingConditions``: a device of the pool has ``bindingConditions``."""
    return any(d.binding_conditions for s in pool.slices for d in s.devices)


def slice_reaches(s: r.ResourceSlice, node: str, labels: Mapping[str, str]) -> bool:
    """Whether slice ``s`` offers its devices to ``node`` (upstream ``nodeMatches``)."""
    if s.node_name:
        return s.node_name == node
    if s.all_nodes:
        return True
    if s.node_selector is not None:
        return r.node_selector_matches(s.node_selector, node, labels)
    return False


def gather_pools(
    slices: Iterable[r.ResourceSlice], node: str, labels: Mapping[str, str]
) -> list[Pool]:
    """Upstream ``GatherPools`` for one node, pools by driver and name."""
    pools: dict[tuple[str, str], Pool] = {}
    for s in slices:
        if s.per_device_node_selection or not slice_reaches(s, node, labels):
            continue  # per-device node selection is DRAPartitionableDevices (off in v1.34)
        pool = pools.get((s.driver, s.pool))
        if pool is None:
            pools[(s.driver, s.pool)] = Pool(s.driver, s.pool, [s])
        elif s.generation > pool.slices[0].generation:
            pool.slices = [s]
        elif s.generation == pool.slices[0].generation:
            pool.slices.append(s)
    return [pools[k] for k in sorted(pools)]


@dataclass(slots=True)
class _Request:
    """One request (or one alternative of a ``firstAvailable`` list) being allocated."""

    claim: int
    base: str
    sub: str
    spec: r.ExactRequest
    klass: r.DeviceClass
    key: tuple[int, int, int]
    """Upstream's ``requestIndices`` (claim, request, alternative): its selector cache key."""
    all_devices: list[tuple[DeviceId, r.Device]] | None = None

    @property
    def name(self) -> str:
        """The name in allocation results (``base/sub`` for an alternative)."""
        return f"{self.base}/{self.sub}" if self.sub else self.base

    @property
    def count(self) -> int:
        """Devices this request takes."""
        return len(self.all_devices) if self.all_devices is not None else self.spec.count


class _Constraint:
    """``matchAttribute``: every device of the named requests has the same value."""

    def __init__(self, requests: tuple[str, ...], attribute: str) -> None:
        self.requests = frozenset(requests)
        self.attribute = attribute
        self.value: tuple[str, Any] | None = None
        self.n = 0

    def _applies(self, req: _Request) -> bool:
        return (
            not self.requests
            or req.base in self.requests
            or (bool(req.sub) and req.name in self.requests)
        )

    def add(self, req: _Request, dev_id: DeviceId, device: r.Device) -> bool:
        if not self._applies(req):
            return True
        value = device.typed.get(self.attribute)
        domain, _, ident = self.attribute.partition("/")
        if value is None and ident and domain == dev_id[0]:
            value = device.typed.get(ident)
        if value is None:
            return False
        if self.n == 0:
            self.value, self.n = value, 1
            return True
        if value != self.value:
            return False
        self.n += 1
        return True

    def remove(self, req: _Request) -> None:
        if self._applies(req):
            self.n -= 1


class _Search:
    """One ``Allocate`` call: the pools of a node and the claims to allocate there."""

    def __init__(
        self,
        pools: list[Pool],
        claims: list[r.ResourceClaim],
        classes: Mapping[str, r.DeviceClass],
        in_use: Container[DeviceId],
        options: Options = V1_34,
        deadline: float | None = None,
    ) -> None:
        self.pools, self.claims, self.classes, self.in_use = pools, claims, classes, in_use
        self.options = options
        self.deadline = deadline
        """``time.monotonic()`` past which the search gives up (None: never)."""
        self.steps = 0
        self.requests: list[list[list[_Request]]] = []
        """Per claim, per request, its alternatives (one for ``exactly``)."""
        self.constraints = [[_Constraint(*c) for c in claim.constraints] for claim in claims]
        self.allocating: dict[DeviceId, set[int]] = {}
        self.selected: dict[tuple[DeviceId, tuple[int, int, int]], bool] = {}
        """Upstream's ``deviceMatchesRequest``: selector results by device and request key."""
        self.results: list[list[r.AllocatedDevice]] = [[] for _ in claims]

    def prepare(self) -> None:
        for ci, claim in enumerate(self.claims):
            per_claim = []
            for ri, req in enumerate(claim.requests):
                alts = [req.exactly] if req.exactly is not None else list(req.first_available)
                sub = req.exactly is None
                per_claim.append(
                    [
                        self._request(ci, claim, req.name, a, sub, (ci, ri, si))
                        for si, a in enumerate(alts)
                    ]
                )
            self.requests.append(per_claim)
            least = sum(min(a.count for a in alts) for alts in per_claim)
            if least > r.ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {claim.key}: number of requested devices {least} exceeds the "
                    f"claim limit of {r.ALLOCATION_RESULTS_MAX_SIZE}"
                )
        self.selected.clear()  # upstream starts the search with an empty cache

    def _request(
        self,
        ci: int,
        claim: r.ResourceClaim,
        base: str,
        spec: r.ExactRequest,
        sub: bool,
        key: tuple[int, int, int],
    ) -> _Request:
        name = spec.name  # upstream's messages name a subrequest by its own name
        if spec.admin_access_set and not self.options.admin_access:
            raise AllocationError(
                f"claim {claim.key}, request {name}: admin access is requested, but the "
                "feature is disabled"
            )
        klass = self.classes.get(spec.class_name)
        if klass is None:
            raise AllocationError(
                f"claim {claim.key}, request {name}: could not retrieve device class "
                f'{spec.class_name}: deviceclass.resource.k8s.io "{spec.class_name}" not found'
            )
        req = _Request(ci, base, spec.name if sub else "", spec, klass, key)
        if spec.mode == r.ALL:
            req.all_devices = []
            # Upstream validates alternative i under alternative i-1's key (it sets the index
            # after the call), so it reuses the selector results cached for an "All"
            # alternative i-1 (v1.34's incubating allocator, the one its features select).
            # Reproduced: then alternative i gets i-1's devices, and a selector of i failing
            # at run time is never evaluated.  The cache is emptied before the search.
            # v1.36 sets the index first (Options.keep_alternative).
            stale = key if self.options.keep_alternative else (key[0], key[1], max(key[2] - 1, 0))
            for pool in self.pools:
                pid = f"{pool.driver}/{pool.name}"
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {claim.key}, request {name}: asks for all "
                        f"devices, but resource pool {pid} is currently being updated"
                    )
                if pool.invalid():
                    raise AllocationError(
                        f"claim {claim.key}, request {name}: asks for all "
                        f"devices, but resource pool {pid} is currently invalid"
                    )
                for s in pool.slices:
                    for d in s.devices:
                        if self.selectable(req, (s.driver, s.pool, d.name), d, stale):
                            req.all_devices.append(((s.driver, s.pool, d.name), d))
        return req

    def selectable(
        self, req: _Request, dev_id: DeviceId, device: r.Device, key: tuple[int, int, int]
    ) -> bool:
        """Upstream ``isSelectable``: the class's, then the request's selectors, the result
        cached under ``(dev_id, key)`` (an error is raised, never cached)."""
        if device.unsupported or (
            device.binding_conditions and not self.options.binding_conditions
        ):
            return False
        cached = self.selected.get((dev_id, key))
        if cached is not None:
            return cached
        for which, selectors in (("class", req.klass.selectors), ("claim", req.spec.selectors)):
            for i, sel in enumerate(selectors):
                hit = device.matches.get(sel.expression)
                if hit is None:
                    try:
                        hit = device.matches[sel.expression] = sel.matches(device.activation)
                    except CelRuntimeError as e:
                        who = (
                            f"class {req.klass.name}"
                            if which == "class"
                            else f"claim {self.claims[req.claim].key}"
                        )
                        raise AllocationError(
                            f"{who}: selector #{i}: CEL runtime error: {e}"
                        ) from None
                if not hit:
                    self.selected[(dev_id, key)] = False
                    return False
        self.selected[(dev_id, key)] = True
        return True

    def take(self, req: _Request, dev_id: DeviceId, device: r.Device) -> bool:
        """Upstream ``allocateDevice``; False when in use or a constraint breaks."""
        if req.spec.admin_access:
            if req.claim in self.allocating.get(dev_id, ()):
                return False
        elif dev_id in self.in_use or self.allocating.get(dev_id):
            return False
        if (
            self.options.device_taints
            and device.taints
            and req.spec.blocked_by(device.taints, self.options.taints_any_effect)
        ):
            return False  # after the selectors, before the constraints, as upstream
        cons = self.constraints[req.claim]
        for i, c in enumerate(cons):
            if not c.add(req, dev_id, device):
                if req.all_devices is not None:
                    raise AllocationError(
                        f"claim {self.claims[req.claim].key}, request {req.spec.name}: cannot add "
                        f"device {'/'.join(dev_id)} because a claim constraint would not be "
                        "satisfied"
                    )
                for c2 in cons[:i]:
                    c2.remove(req)
                return False
        self.allocating.setdefault(dev_id, set()).add(req.claim)
        self.results[req.claim].append(
            r.AllocatedDevice(req.name, *dev_id, admin_access=req.spec.admin_access)
        )
        return True

    def give_back(self, req: _Request, dev_id: DeviceId) -> None:
        for c in self.constraints[req.claim]:
            c.remove(req)
        self.allocating[dev_id].discard(req.claim)
        self.results[req.claim].pop()

    def one(self, ci: int, ri: int, di: int, alt: int = -1) -> bool:
        """Upstream ``allocateOne`` from claim ``ci``, request ``ri``, device ``di``."""
        if self.deadline is not None:
            self.steps += 1
            if self.steps % CHECK_EVERY == 0 and time.monotonic() > self.deadline:
                raise AllocationTimeout("timed out trying to allocate devices")
        if ci >= len(self.claims):
            return True
        if ri >= len(self.requests[ci]):
            return self.one(ci + 1, 0, 0)
        alts = self.requests[ci][ri]
        if alt < 0:
            if len(alts) == 1 and not alts[0].sub:
                return self.one(ci, ri, di, 0)
            return any(self.one(ci, ri, di, a) for a in range(len(alts)))
        req = alts[alt]
        if req.all_devices is not None and not req.all_devices:
            return False
        if di >= req.count:
            return self.one(ci, ri + 1, 0)
        if len(self.results[ci]) + req.count - di > r.ALLOCATION_RESULTS_MAX_SIZE:
            return False
        if req.all_devices is not None:
            dev_id, device = req.all_devices[di]
            if not self.take(req, dev_id, device):
                return False
            # Upstream recurses with ``deviceIndices{claim, request, device+1}``, dropping
            # the subrequest index: after the first device of an "All" alternative it goes
            # on with alternative 0's count and selectors (v1.34, stable and incubating
            # alike, and v1.35).  Reproduced, so Filter answers as upstream does; v1.36 keeps
            # the subrequest index (Options.keep_alternative).
            if self.one(ci, ri, di + 1, alt if self.options.keep_alternative else 0):
                return True
            self.give_back(req, dev_id)
            return False
        for pool in self.pools:
            bad = pool.invalid()
            if self.options.skip_unusable and (bad or pool.incomplete):
                continue
            if bad:
                raise AllocationError(f"pool {pool.name} is invalid: {bad}")
            for s in pool.slices:
                for device in s.devices:
                    dev_id = (s.driver, s.pool, device.name)
                    taking = self.allocating.get(dev_id)
                    if req.spec.admin_access:
                        if taking and req.claim in taking:
                            continue
                    elif dev_id in self.in_use or taking:
                        continue  # in use: skipped before its selectors run, as upstream
                    if not self.selectable(req, dev_id, device, req.key):
                        continue
                    if not self.take(req, dev_id, device):
                        continue
                    if self.one(ci, ri, di + 1, alt):
                        return True
                    self.give_back(req, dev_id)
        return False


def allocate(
    node: str,
    labels: Mapping[str, str],
    claims: list[r.ResourceClaim],
    classes: Mapping[str, r.DeviceClass],
    slices: Iterable[r.ResourceSlice],
    in_use: Container[DeviceId],
    options: Options = V1_34,
) -> list[tuple[r.AllocatedDevice, ...]] | None:
    """Devices for every claim on ``node``, or None when they do not all fit;
    :class:`AllocationError` for a fault (missing class, CEL runtime error, bad pool)."""
    pools = gather_pools(slices, node, labels)
    return allocate_in(pools, claims, classes, in_use, options)


def allocate_in(
    pools: list[Pool],
    claims: list[r.ResourceClaim],
    classes: Mapping[str, r.DeviceClass],
    in_use: Container[DeviceId],
    options: Options = V1_34,
    timeout: float | None = None,
) -> list[tuple[r.AllocatedDevice, ...]] | None:
    """:func:`allocate` over a node's pools (from :func:`gather_pools`), as the release of
    ``options`` does; :class:`AllocationTimeout` when the search takes more than ``timeout``
    seconds (None: no limit)."""
    if options.binding_conditions:  # upstream's GatherPools: pools with binding conditions last
        pools = sorted(pools, key=has_binding_conditions)  # stable: by driver and name within
    deadline = None if timeout is None else time.monotonic() + timeout
    search = _Search(pools, claims, classes, in_use, options, deadline)
    search.prepare()
    if not search.one(0, 0, 0):
        return None
    return [tuple(res) for res in search.results]
