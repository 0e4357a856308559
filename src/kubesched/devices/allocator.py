"""The structured-parameters allocator: devices for a Pod's claims on one node.

A port of ``k8s.io/dynamic-resource-allocation/structured``: the allocator the release's
gates select (:func:`kubesched.devices.draoptions.channel`), with partitionable devices
(shared counters, per-device node selection) and consumable capacity (devices shared by
capacity, request policies, ``distinctAttribute``) under their gates.  Over the pools that
reach the node (:func:`kubesched.devices.pools.gather_pools`), :func:`allocate` searches
depth first with backtracking, request by request, device by device, exactly as upstream's
``allocateOne``: a device is skipped when in use (allocated to a claim or in flight), when the
class's or the request's CEL selectors reject it, when a taint it carries is not tolerated
(DRADeviceTaints), when its counters or the capacity it would share do not last, or when a
``matchAttribute`` / ``distinctAttribute`` constraint would break.  The search is
exhaustive, so from v1.36 whether a node fits does not depend on the order of pools
(upstream iterates a Go map; we go by driver and pool name, or an order drawn from
``Options.pool_seed``, which also makes the chosen devices deterministic); v1.34's and
v1.35's allocators keep a device's counters reserved when a taint or a constraint passes it
over after they were reserved (``Options.keeps_counters``), so there the order can decide.

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

import math
import time
import uuid
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubesched.api import resource as r
from kubesched.api.errors import CelRuntimeError
from kubesched.devices.draoptions import V1_34, Options
from kubesched.devices.pools import Pool, gather_pools, has_binding_conditions, node_matches

DeviceId = tuple[str, str, str]


class AllocationError(Exception):
    """A fault in a claim or class (upstream returns an error: the attempt is aborted)."""


class AllocationTimeout(AllocationError):
    """The search ran past its deadline (DynamicResources' ``filterTimeout``)."""


Exact = int | Fraction
"""A quantity, as an int when it is whole: exact either way, and ints add and compare
several times faster than Fractions (the counters of partitionable devices are summed and
compared at every step of the search)."""
_Consumes = tuple[tuple[str, tuple[tuple[str, Exact], ...]], ...]


def _exact(q: Fraction) -> Exact:
    """``q`` as an int when whole (the same number)."""
    return q.numerator if q.denominator == 1 else q


CHECK_EVERY = 1024
"""Search steps between two looks at the clock when a deadline is set."""


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
    all_devices: list[tuple[DeviceId, r.Device, r.ResourceSlice, Pool]] | None = None

    @property
    def name(self) -> str:
        """The name in allocation results (``base/sub`` for an alternative)."""
        return f"{self.base}/{self.sub}" if self.sub else self.base

    @property
    def count(self) -> int:
        """Devices this request takes."""
        return len(self.all_devices) if self.all_devices is not None else self.spec.count


class _Constraint:
    """``matchAttribute``: every device of the named requests has the same value;
    ``distinctAttribute`` (:attr:`distinct`): no two have the same value, as upstream
    keeps them: up to v1.36 one value per request name (a request's later device replaces
    its earlier one's, and giving one back forgets the request's value), from v1.37
    (:attr:`every`) every device's value (giving one back forgets the last)."""

    def __init__(
        self,
        requests: tuple[str, ...],
        attribute: str,
        kind: str = r.MATCH,
        by_device: bool = False,
        as_sets: bool = False,
        every: bool = False,
    ) -> None:
        self.requests = frozenset(requests)
        self.attribute = attribute
        self.distinct = kind == r.DISTINCT
        self.by_device = by_device
        """v1.34: two values are the same only when they are one device's."""
        self.as_sets = as_sets
        """DRAListTypeAttributes: values compared as sets (:func:`r.attribute_set`):
        ``matchAttribute`` narrows :attr:`stack` (the intersection so far, one entry per
        device, popped when one is given back), ``distinctAttribute`` wants the device's set
        disjoint from each one in :attr:`stack` (every device taken, not one per request)."""
        self.every = every
        """v1.37+: ``distinctAttribute`` holds every device's value, not one per request
        (a scalar is kept as a set of one, as DRAListTypeAttributes keeps it)."""
        self.stack: list[frozenset[tuple[str, Any]]] = []
        self.value: tuple[str, Any] | None = None
        self.values: dict[str, Any] = {}
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
        name = self.attribute
        value = device.typed.get(name)
        domain, _, ident = self.attribute.partition("/")
        if value is None and ident and domain == dev_id[0]:
            name = ident
            value = device.typed.get(name)
        if value is None:
            return False
        if self.as_sets or (self.distinct and self.every):
            values = device.value_sets.get(name)
            if values is None:
                values = device.value_sets[name] = r.attribute_set(value)
            return self._add_set(req, values)
        if self.n and value[0] in r.LIST_KINDS and (not self.distinct or self.values):
            # a list value (DRAListTypeAttributes) where the allocator compares scalars
            # (v1.36's, which does not get the gate): "type unknown", never matched nor
            # distinct (the first device is taken unread)
            return False
        if self.distinct:
            key = (dev_id, value) if self.by_device else value
            if self.n and key in self.values.values():
                return False
            self.values[req.base] = key
            self.n += 1
            return True
        if self.n == 0:
            self.value, self.n = value, 1
            return True
        if value != self.value:
            return False
        self.n += 1
        return True

    def _add_set(self, req: _Request, values: frozenset[tuple[str, Any]]) -> bool:
        """Upstream's ``experimental`` constraints under DRAListTypeAttributes
        (``attributeAsSet``, ``intersection``)."""
        if self.distinct:  # one entry per device taken, as upstream's stack
            if any(values & other for other in self.stack):
                return False
            self.stack.append(values)
        elif self.n:
            narrowed = self.stack[self.n - 1] & values
            if not narrowed:
                return False
            self.stack.append(narrowed)
        else:
            self.stack.append(values)
        self.n += 1
        return True

    def remove(self, req: _Request) -> None:
        if self._applies(req):
            self.values.pop(req.base, None)
            self.n -= 1
            del self.stack[max(self.n, 0) :]


@dataclass(frozen=True, slots=True)
class SharedUse:
    """Upstream ``AllocatedState`` beyond the dedicated devices (DRAConsumableCapacity):
    the devices allocated with a ``shareID`` and their consumed capacity summed."""

    devices: Container[DeviceId] = frozenset()
    """``AllocatedSharedDeviceIDs`` (as device ids)."""
    capacity: Mapping[DeviceId, Mapping[str, Fraction]] = field(default_factory=dict)
    """``AggregatedCapacity``: per device, the capacity its shares consume."""


NO_SHARES = SharedUse()


def shared_use(results: Iterable[r.AllocatedDevice]) -> SharedUse:
    """Upstream ``GatherAllocatedState``'s part for the allocation ``results`` with a
    ``shareID`` (the caller picks them): their devices, and per device the capacity their
    ``consumedCapacity`` sums to (a share without it consumes none)."""
    devices: set[DeviceId] = set()
    capacity: dict[DeviceId, dict[str, Fraction]] = {}
    for d in results:
        devices.add(d.device_id)
        if d.consumed:
            have = capacity.setdefault(d.device_id, {})
            for name, v in d.consumed:
                have[name] = have.get(name, Fraction(0)) + v
    return SharedUse(devices, capacity) if devices else NO_SHARES


def _value(q: Fraction) -> int:
    """Go ``Quantity.Value()``: rounded up to an integer."""
    return math.ceil(q)


MAX_INT64 = 2**63 - 1
NOT_REPRESENTABLE = "capacity request cannot be represented in the device's range arithmetic"


class CapacityError(Exception):
    """v1.37's capacity check refusing a request outright (upstream aborts the allocation:
    ``errCapacityRequestNotRepresentable``, ``errNegativeCapacity``); the caller names the
    claim, request and device."""


def _milli(q: Fraction) -> int | None:
    """Upstream ``safeMilliValue``: ``q`` in thousandths when that is exact and fits an
    int64, else None."""
    m = q * 1000
    if m.denominator != 1 or not -(2**63) <= m <= MAX_INT64:
        return None
    return int(m)


def use_milli(rng: tuple[Fraction | None, ...], fractional: bool) -> bool:
    """Upstream ``useMilli`` (v1.37): under DRAFractionalCapacityRange a range whose
    ``min``, ``max`` and ``step`` are exact in thousandths (a step of at least ``1m``) is
    worked out in thousandths, whether or not any of them is fractional (upstream's doc
    comment says "any is fractional"; its code does not ask)."""
    if not fractional:
        return False
    for i, q in enumerate(rng):
        if q is None:
            continue
        m = _milli(q)
        if m is None or (i == 2 and m < 1):
            return False
    return True


def quantity_string(q: Fraction) -> str:
    """A decimal quantity as Go's ``Quantity.String()`` writes one parsed without a binary
    suffix: the largest of no suffix, ``m``, ``u`` and ``n`` that leaves an integer
    (rounded up at ``n``)."""
    for suffix, scale in (("", 1), ("m", 1000), ("u", 10**6)):
        v = q * scale
        if v.denominator == 1:
            return f"{v.numerator}{suffix}"
    return f"{math.ceil(q * 10**9)}n"


def consumed_capacity(
    requested: Fraction | None,
    cap: r.DeviceCapacity,
    fractional: bool = False,
    strict: bool = False,
) -> Fraction:
    """Upstream ``calculateConsumedCapacity``: what a request takes of one capacity (its
    default, or the request rounded up to the policy's range step or next valid value).
    ``fractional`` (DRAFractionalCapacityRange, v1.37): a range :func:`use_milli` accepts
    is rounded in thousandths (a request not exact in thousandths is a
    :class:`CapacityError`), else every bound and the request are rounded up to integers
    first (``Value()``).  ``strict`` (v1.37): a request or its rounding past the int64
    range is a :class:`CapacityError` (v1.36 wraps it)."""
    if requested is None:
        return cap.default if cap.default is not None else cap.value
    if not cap.policy:
        return requested
    rng = cap.valid_range
    low = rng[0] if rng is not None else None
    if rng is not None and low is not None:
        step = rng[2]
        if requested < low:
            return low
        if step is None:
            return requested
        if use_milli(rng, fractional):
            asked, lo, by = _milli(requested), _milli(low), _milli(step)
            if asked is None:
                raise CapacityError(
                    f"{NOT_REPRESENTABLE}: request {quantity_string(requested)} is not a "
                    "representable milli value"
                )
            assert lo is not None and by is not None  # use_milli checked them
            n = -(-(asked - lo) // by)  # asked >= lo: rounded up
            if n > _go_div(MAX_INT64 - lo, by):
                raise CapacityError(
                    f"{NOT_REPRESENTABLE}: rounding request {quantity_string(requested)} up "
                    "to the next step passes the milli-value range"
                )
            return Fraction(lo + by * n, 1000)
        if strict and requested > MAX_INT64:
            raise CapacityError(
                f"{NOT_REPRESENTABLE}: request {quantity_string(requested)} exceeds MaxInt64"
            )
        lo_int, by_int = _value(low), _value(step)
        n, mod = divmod(_value(requested) - lo_int, by_int)
        n += 1 if mod else 0
        if strict and lo_int >= 0 and n > _go_div(MAX_INT64 - lo_int, by_int):
            raise CapacityError(
                f"{NOT_REPRESENTABLE}: rounding request {quantity_string(requested)} up to "
                "the next step passes MaxInt64"
            )
        return Fraction(lo_int + by_int * n)
    for v in cap.valid_values:
        if requested <= v:
            return v
    return requested


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncated toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def violates_policy(consumed: Fraction, cap: r.DeviceCapacity, fractional: bool = False) -> bool:
    """Upstream ``violatesPolicy`` (``fractional``: :func:`consumed_capacity`'s)."""
    if not cap.policy:
        return False
    if cap.default is not None and consumed == cap.default:
        return False
    if cap.valid_range is not None:
        low, high, step = cap.valid_range
        if high is not None and consumed > high:
            return True
        if step is not None:
            if use_milli(cap.valid_range, fractional):
                took = _milli(consumed)
                if took is None:
                    return True
                return (took - (_milli(low or Fraction(0)) or 0)) % (_milli(step) or 1) != 0
            return (_value(consumed) - _value(low or Fraction(0))) % _value(step) != 0
        return False
    if cap.valid_values:
        return consumed not in cap.valid_values
    return False


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
        node: tuple[str, Mapping[str, str]] = ("", {}),
        shared: SharedUse = NO_SHARES,
    ) -> None:
        self.pools, self.claims, self.classes, self.in_use = pools, claims, classes, in_use
        self.options = options
        self.deadline = deadline
        """``time.monotonic()`` past which the search gives up (None: never)."""
        self.node = node
        self.shared = shared
        self.steps = 0
        self.requests: list[list[list[_Request]]] = []
        self.bad: list[str] = []
        """Per pool, why it is invalid ("" when valid); set by :meth:`prepare`."""
        self.visit: list[int] = []
        """The pools a device loop visits, in order (:meth:`prepare`)."""
        """Per claim, per request, its alternatives (one for ``exactly``)."""
        self.constraints = [
            [
                _Constraint(
                    *c,
                    by_device=options.distinct_by_device,
                    as_sets=options.list_attributes,
                    every=options.distinct_every_device,
                )
                for c in claim.constraints
            ]
            for claim in claims
        ]
        leaks = options.experimental or (options.keeps_counters and options.partitionable)
        self.prunes = not leaks and not any(c.distinct for cons in self.constraints for c in cons)
        """Whether a branch may be cut when too few devices are left for it
        (:meth:`doomed`): never where giving a device back does not restore the
        state (counters kept after a taint or a constraint, the ``experimental``
        allocator's leaks, ``distinctAttribute``'s values)."""
        self.allocating: dict[DeviceId, set[int]] = {}
        self.selected: dict[tuple[DeviceId, tuple[int, int, int]], bool] = {}
        """Upstream's ``deviceMatchesRequest``: selector results by device and request key."""
        self.results: list[list[r.AllocatedDevice]] = [[] for _ in claims]
        self.capacity: dict[DeviceId, dict[str, Fraction]] = {}
        """Upstream's ``allocatingCapacity``: capacity the shares taken here consume."""
        self.available: dict[str, dict[str, dict[str, Exact]]] = {}
        """Upstream's ``availableCounters`` by pool name (v1.34: slice name)."""
        self.consumed: dict[str, dict[str, dict[str, Exact]]] = {}
        """Upstream's ``consumedCounters``, keyed as :attr:`available`."""
        self.consumes_of: dict[int, _Consumes] = {}
        """:meth:`_consumes` by device (``id``; :attr:`keep` holds the devices)."""
        self.keep: list[r.Device] = []
        self.totals_of: dict[int, dict[tuple[str, str], Exact] | None] = {}
        """:meth:`_totals` by device (``id``, kept by :attr:`keep`)."""

    def prepare(self) -> None:
        opts = self.options
        for ci, claim in enumerate(self.claims):
            per_claim = []
            for ri, req in enumerate(claim.requests):
                alts = [req.exactly] if req.exactly is not None else list(req.first_available)
                sub = req.exactly is None
                # upstream checks the request's alternatives together first, so its
                # "subrequest" form of this error is never reached
                capacity = any(a.capacity is not None for a in alts)
                if capacity and not opts.consumable and opts.checks_capacity:
                    raise AllocationError(
                        f"claim {claim.key}, request {req.name}: has capacity requests, "
                        "but the DRAConsumableCapacity feature is disabled"
                    )
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
            distinct_ok = opts.checks_capacity
            for i, (_, _, kind) in enumerate(claim.constraints):
                if kind == r.MATCH or (kind == r.DISTINCT and distinct_ok):
                    continue
                raise AllocationError(
                    f"claim {claim.key}, constraint #{i}: empty constraint (unsupported "
                    "constraint type?)"
                )
        self.selected.clear()  # upstream starts the search with an empty cache
        # What a device loop visits, in pool order, worked out once: a pool without
        # devices offers nothing (from v1.35 every node's pools include each pool of
        # shared counters elsewhere, so most have none), an unusable one is skipped
        # (v1.35+) or raises when reached (v1.34).  Pools do not change during a search.
        self.bad = [pool.invalid() for pool in self.pools]
        self.visit = [
            pi
            for pi, pool in enumerate(self.pools)
            if not (opts.skip_unusable and (self.bad[pi] or pool.incomplete))
            and (self.bad[pi] or pool.has_devices)
        ]

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
                        dev_id = (s.driver, s.pool, d.name)
                        if not self.selectable(req, dev_id, d, stale, s):
                            continue
                        if self.options.consumable and not (
                            self.fits_static_capacity(req, d)
                            if self.options.capacity_errors
                            else self.fits_capacity(req, dev_id, d)
                        ):
                            continue
                        req.all_devices.append((dev_id, d, s, pool))
        return req

    def selectable(
        self,
        req: _Request,
        dev_id: DeviceId,
        device: r.Device,
        key: tuple[int, int, int],
        s: r.ResourceSlice | None = None,
    ) -> bool:
        """Upstream ``isSelectable``: the class's, then the request's selectors, then a
        per-device node selection, the result cached under ``(dev_id, key)`` (an error is
        raised, never cached)."""
        if device.binding_conditions and not self.options.binding_conditions:
            return False
        cached = self.selected.get((dev_id, key))
        if cached is not None:
            return cached
        multiple = self.options.cel_multiple
        for which, selectors in (("class", req.klass.selectors), ("claim", req.spec.selectors)):
            for i, sel in enumerate(selectors):
                hit = device.matches.get(sel.expression) if multiple else None
                if hit is None:
                    try:
                        hit = device.selects(sel, multiple)
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
        if s is not None and s.per_device_node_selection:
            node, labels = self.node
            if not node_matches(
                device.node_name, device.node_selector, device.all_nodes, node, labels
            ):
                self.selected[(dev_id, key)] = False
                return False
        self.selected[(dev_id, key)] = True
        return True

    # ---------------------------------------------------------------- consumable capacity
    def fits_capacity(self, req: _Request, dev_id: DeviceId, device: r.Device) -> bool:
        """Upstream ``CmpRequestOverCapacity``: the request's capacity (each capacity's
        default where it asks none) fits beside what shares already consume (False also
        for a capacity the device lacks: upstream's error, logged and passed over).  From
        v1.37 a request its rounding cannot represent, or a negative consumption, aborts
        the allocation (:class:`AllocationError`)."""
        asked = req.spec.capacity or {}
        allocated = self.shared.capacity.get(dev_id)
        allocating = self.capacity.get(dev_id)
        try:
            if not asked and not allocated and not allocating and not self.options.fractional_range:
                alone = device.fits_alone  # (kept on the device: the integer path's answer)
                if alone is None:
                    alone = device.fits_alone = self._fits(asked, device, None, None)
                return alone
            return self._fits(asked, device, allocated, allocating)
        except CapacityError as err:
            raise AllocationError(
                f"claim {self.claims[req.claim].key}, request {req.spec.name}: checking "
                f"capacity for device {'/'.join(dev_id)}: {err}"
            ) from None

    def fits_static_capacity(self, req: _Request, device: r.Device) -> bool:
        """v1.37's check of an ``All`` request's devices: the request's capacity against
        the device's alone (what shares consume is checked when the device is taken, so a
        device others' shares fill stays among the request's devices and fails it)."""
        try:
            return self._fits(req.spec.capacity or {}, device, None, None)
        except CapacityError as err:
            raise AllocationError(
                f"claim {self.claims[req.claim].key}, request {req.spec.name}: checking "
                f"capacity for device {device.name}: {err}"
            ) from None

    def _fits(
        self,
        asked: Mapping[str, Fraction],
        device: r.Device,
        allocated: Mapping[str, Fraction] | None,
        allocating: Mapping[str, Fraction] | None,
    ) -> bool:
        if any(name not in device.capacity for name in asked):
            return False
        fractional, strict = self.options.fractional_range, self.options.capacity_errors
        if strict:  # every capacity's consumption is worked out before any is compared
            took_all: dict[str, Fraction] = {}
            for name, cap in device.capacity.items():
                try:
                    took = consumed_capacity(asked.get(name), cap, fractional, strict)
                except CapacityError as err:
                    raise CapacityError(f'capacity "{name}": {err}') from None
                if took < 0:
                    raise CapacityError(f'capacity "{name}": capacity value is negative')
                took_all[name] = took
        for name, cap in device.capacity.items():
            took = took_all[name] if strict else consumed_capacity(asked.get(name), cap)
            if violates_policy(took, cap, fractional):
                return False
            # exact sums: only what other allocations consume is added (no ``0 +``)
            total = took
            before = allocated.get(name) if allocated else None
            if before is not None:
                total = before + total
            during = allocating.get(name) if allocating else None
            if during is not None:
                total = total + during
            if total > cap.value:
                return False
        return True

    def capacity_in_use(self, dev_id: DeviceId) -> bool:
        """Upstream ``deviceCapacityInUse``."""
        return dev_id in self.shared.capacity or dev_id in self.capacity

    # ---------------------------------------------------------------- shared counters
    def _allocated(self, dev_id: DeviceId) -> bool:
        """Upstream ``IsDeviceAllocated``: dedicated, shared, or consuming capacity."""
        return (
            dev_id in self.in_use or dev_id in self.shared.devices or dev_id in self.shared.capacity
        )

    def _counter_key(self, pool: Pool, s: r.ResourceSlice) -> str:
        return pool.name if self.options.pool_counters else s.name

    def _consumes(self, device: r.Device) -> _Consumes:
        """``device.consumes`` with :func:`_exact` values (worked out once per device)."""
        got = self.consumes_of.get(id(device))
        if got is None:
            got = tuple(
                (set_name, tuple((c, _exact(v)) for c, v in counters))
                for set_name, counters in device.consumes
            )
            self.consumes_of[id(device)] = got
            self.keep.append(device)  # the id stays this device's for the search
        return got

    def _available(self, pool: Pool, s: r.ResourceSlice) -> dict[str, dict[str, Exact]]:
        """The counters of ``s``'s pool (v1.34: of ``s``) less what allocated devices
        consume (upstream's ``availableCounters`` entry)."""
        if self.options.pool_counters:
            sets, scope = pool.counter_sets(), [*pool.slices, *pool.others]
        else:
            sets, scope = list(s.shared_counters), [s]
        avail = {cs.name: {c: _exact(v) for c, v in cs.counters.items()} for cs in sets}
        for sl in scope:
            for d in sl.devices:
                if not d.consumes or not self._allocated((sl.driver, sl.pool, d.name)):
                    continue
                for set_name, counters in self._consumes(d):
                    have = avail.get(set_name)
                    if have is None:
                        continue
                    for c, v in counters:
                        if c in have:
                            have[c] -= v
        return avail

    def counters_fit(self, pool: Pool, s: r.ResourceSlice, device: r.Device) -> bool:
        """Upstream ``checkAvailableCounters``: the device's counters fit beside those of
        the allocated devices and the devices taken in this search (reserved when True)."""
        key = self._counter_key(pool, s)
        avail = self.available.get(key)
        if avail is None:
            avail = self.available[key] = self._available(pool, s)
        consumed = self.consumed.setdefault(key, {})
        for set_name, counters in self._consumes(device):
            took = consumed.setdefault(set_name, {})
            for c, v in counters:
                took[c] = took.get(c, 0) + v
        for set_name, have in avail.items():
            took = consumed.get(set_name, {})
            for c, v in have.items():
                if v < took.get(c, 0):
                    self.release_counters(pool, s, device)
                    return False
        return True

    def release_counters(self, pool: Pool, s: r.ResourceSlice, device: r.Device) -> None:
        """Upstream ``deallocateCountersForDevice``."""
        consumed = self.consumed.get(self._counter_key(pool, s), {})
        for set_name, counters in self._consumes(device):
            took = consumed.setdefault(set_name, {})
            for c, v in counters:
                took[c] = took.get(c, 0) - v

    # ---------------------------------------------------------------- taking a device
    def take(
        self, req: _Request, dev_id: DeviceId, device: r.Device, s: r.ResourceSlice, pool: Pool
    ) -> _Taken | None:
        """Upstream ``allocateDevice``: what to give back, or None when the device is in
        use, its counters or capacity do not last, a taint or a constraint stops it."""
        opts = self.options
        multi = opts.consumable and device.allow_multiple
        admin = req.spec.admin_access
        if not multi and admin and req.claim in self.allocating.get(dev_id, ()):
            return None
        if not admin and (dev_id in self.in_use or self.allocating.get(dev_id)):
            return None
        if device.consumes and not opts.partitionable:
            return None
        undo = _Taken(dev_id, device, s, pool, len(self.results[req.claim]))
        # v1.34's experimental allocator checks the counters of every share
        skip = multi and opts.pool_counters and self.capacity_in_use(dev_id)
        if not skip and device.consumes:
            if not self.counters_fit(pool, s, device):
                return None
            undo.counters = True
        leaky = opts.experimental
        keeps = opts.keeps_counters or leaky
        if keeps:  # a taint or constraint failing below keeps the counters reserved
            undo.counters = False
        if (
            opts.device_taints
            and device.taints
            and req.spec.blocked_by(device.taints, opts.taints_any_effect)
        ):
            self.give_back(req, undo)
            return None  # after the selectors, before the constraints, as upstream
        cons = self.constraints[req.claim]
        for c in cons:
            if not c.add(req, dev_id, device):
                if req.all_devices is not None:
                    self.give_back(req, undo)
                    raise AllocationError(
                        f"claim {self.claims[req.claim].key}, request {req.spec.name}: cannot add "
                        f"device {'/'.join(dev_id)} because a claim constraint would not be "
                        "satisfied"
                    )
                self.give_back(req, undo)
                return None
            undo.constraints += 1
        if not multi:
            self.allocating.setdefault(dev_id, set()).add(req.claim)
            undo.marked = True
        share_id: str | None = None
        consumed: tuple[tuple[str, Fraction], ...] = ()
        if opts.consumable:
            if not self.fits_capacity(req, dev_id, device):
                if not leaky:  # the experimental allocator gives nothing back here
                    self.give_back(req, undo)
                return None
            if multi:
                asked = req.spec.capacity or {}
                consumed = tuple(
                    (name, consumed_capacity(asked.get(name), cap, opts.fractional_range))
                    for name, cap in sorted(device.capacity.items())
                )
                claim = self.claims[req.claim]
                share_id = str(
                    uuid.uuid5(
                        uuid.NAMESPACE_URL,
                        f"{claim.uid}/{req.name}/{'/'.join(dev_id)}/{undo.at}",
                    )
                )
                undo.existed = dev_id in self.capacity
                have = self.capacity.setdefault(dev_id, {})
                for name, v in consumed:
                    have[name] = have.get(name, Fraction(0)) + v
                undo.consumed = consumed
                undo.inserted = True
        self.results[req.claim].append(
            r.AllocatedDevice(
                req.name,
                *dev_id,
                admin_access=req.spec.admin_access,
                share_id=share_id,
                consumed=consumed,
            )
        )
        undo.result = True
        if keeps:  # its rollback gives a dedicated device's counters back, not a share's
            undo.counters = bool(device.consumes) and not multi and opts.partitionable
        return undo

    def give_back(self, req: _Request, undo: _Taken) -> None:
        """Upstream ``rollbackDevice``."""
        if undo.result:
            del self.results[req.claim][undo.at :]
        if undo.inserted:
            have = self.capacity.get(undo.dev_id)
            if have is not None:
                for name, v in undo.consumed:
                    if name in have:
                        have[name] -= v
                if all(v == 0 for v in have.values()):
                    del self.capacity[undo.dev_id]
            if undo.existed and undo.dev_id not in self.capacity:
                self.capacity[undo.dev_id] = {}
        if undo.marked:
            self.allocating[undo.dev_id].discard(req.claim)
        cons = self.constraints[req.claim]
        for i in range(undo.constraints - 1, -1, -1):
            cons[i].remove(req)
        if undo.counters:
            self.release_counters(undo.pool, undo.slice, undo.device)

    def doomed(self, req: _Request, need: int, start: tuple[int, int, int]) -> bool:
        """Whether the search for ``need`` more devices of ``req`` from ``start`` on
        cannot succeed, so the branch may be cut (:attr:`prunes`).

        It cannot when fewer than ``need`` devices from ``start`` on are free (not in use,
        not taken in this search) and selectable, or when, for some shared counter, what
        this search has taken plus the ``need`` smallest amounts the free devices consume
        is more than is available: every device the branch could take is one of them, and
        the counters it takes only grow.  A device shared by capacity may fill several
        places and consume nothing: with one free, nothing is cut.

        Cutting changes nothing upstream's search would show: the devices the branch would
        take and give back leave the state as it was (:attr:`prunes`), and its selectors
        are run here as the loop would run them, free device by free device in order (the
        loop meets each before it can fail, so the same CEL runtime error is raised);
        when the branch may succeed they run only as far as the ``need``-th selectable
        device, which the loop reaches before it succeeds."""
        free: list[tuple[Pool, r.ResourceSlice, r.Device, DeviceId]] = []
        multi = self.options.consumable
        for pi in self.visit:
            if pi < start[0]:
                continue
            if self.bad[pi]:
                break  # the loop raises there
            pool = self.pools[pi]
            for si in range(start[1] if pi == start[0] else 0, len(pool.slices)):
                s = pool.slices[si]
                first = start[2] if (pi, si) == start[:2] else 0
                for dj in range(first, len(s.devices)):
                    device = s.devices[dj]
                    dev_id = (s.driver, s.pool, device.name)
                    if dev_id in self.in_use or self.allocating.get(dev_id):
                        continue
                    if multi and device.allow_multiple:
                        return False
                    free.append((pool, s, device, dev_id))
        if len(free) < need or self.counters_short(free, need):
            for _pool, s, device, dev_id in free:
                self.selectable(req, dev_id, device, req.key, s)
            return True
        n = 0
        for _pool, s, device, dev_id in free:
            if self.selectable(req, dev_id, device, req.key, s):
                n += 1
                if n >= need:
                    return False
        return True

    def counters_short(
        self, free: list[tuple[Pool, r.ResourceSlice, r.Device, DeviceId]], need: int
    ) -> bool:
        """Whether ``need`` of the ``free`` devices cannot pass the counter checks.

        A device consuming counters is taken only while every counter of its pool (v1.34:
        slice) stays within what is available, after adding what it consumes; a device
        consuming none is never checked.  So for each pool, when fewer than ``need`` free
        devices stay out of its checks, at least ``need - others`` of its consumers are
        taken, and the last of them is checked with at least what this search has taken
        plus the least those consumers can add, per counter."""
        if not self.options.partitionable:
            return False
        groups: dict[str, list[tuple[Pool, r.ResourceSlice, r.Device]]] = {}
        for pool, s, device, _ in free:
            if device.consumes:
                groups.setdefault(self._counter_key(pool, s), []).append((pool, s, device))
        for key, group in groups.items():
            least_taken = need - (len(free) - len(group))
            if least_taken <= 0:
                continue
            if key not in self.available:
                self.available[key] = self._available(group[0][0], group[0][1])
            amounts: dict[tuple[str, str], list[Exact]] = {}
            for _, _, device in group:
                totals = self._totals(device)
                if totals is None:
                    return False  # taking would not only add (never in a valid slice)
                for k, v in totals.items():
                    amounts.setdefault(k, []).append(v)
            took = self.consumed.get(key, {})
            for set_name, have in self.available[key].items():
                taken = took.get(set_name, {})
                for c, limit in have.items():
                    values = amounts.get((set_name, c), ())
                    fewest = least_taken - (len(group) - len(values))  # the rest consume 0
                    least = sum(sorted(values)[:fewest]) if fewest > 0 else 0
                    if taken.get(c, 0) + least > limit:
                        return True
        return False

    def _totals(self, device: r.Device) -> dict[tuple[str, str], Exact] | None:
        """What ``device`` consumes per (counter set, counter), None when an amount is
        negative (worked out once per device)."""
        key = id(device)
        if key in self.totals_of:
            return self.totals_of[key]
        mine: dict[tuple[str, str], Exact] = {}
        for set_name, counters in self._consumes(device):  # keeps the device (its id)
            for c, v in counters:
                mine[(set_name, c)] = mine.get((set_name, c), 0) + v
        got = None if any(v < 0 for v in mine.values()) else mine
        self.totals_of[key] = got
        return got

    def one(
        self, ci: int, ri: int, di: int, alt: int = -1, start: tuple[int, int, int] = (0, 0, 0)
    ) -> bool:
        """Upstream ``allocateOne`` from claim ``ci``, request ``ri``, device ``di``; the
        search for the device starts at ``start`` (pool, slice, device: v1.36+ goes on
        after the request's previous device, so a shared device is taken once per
        request)."""
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
            dev_id, device, s, pool = req.all_devices[di]
            undo = self.take(req, dev_id, device, s, pool)
            if undo is None:
                return False
            # Upstream recurses with ``deviceIndices{claim, request, device+1}``, dropping
            # the subrequest index: after the first device of an "All" alternative it goes
            # on with alternative 0's count and selectors (v1.34, stable and incubating
            # alike, and v1.35).  Reproduced, so Filter answers as upstream does; v1.36 keeps
            # the subrequest index (Options.keep_alternative).
            if self.one(ci, ri, di + 1, alt if self.options.keep_alternative else 0):
                return True
            self.give_back(req, undo)
            return False
        need = req.count - di
        if self.prunes and need > 1 and not req.spec.admin_access and self.doomed(req, need, start):
            return False
        consumable = self.options.consumable
        ordered = self.options.ordered
        for pi in self.visit:
            if pi < start[0]:
                continue
            pool = self.pools[pi]
            bad = self.bad[pi]
            if bad:
                raise AllocationError(f"pool {pool.name} is invalid: {bad}")
            for si in range(start[1] if pi == start[0] else 0, len(pool.slices)):
                s = pool.slices[si]
                first = start[2] if (pi, si) == start[:2] else 0
                for dj in range(first, len(s.devices)):
                    device = s.devices[dj]
                    dev_id = (s.driver, s.pool, device.name)
                    taking = self.allocating.get(dev_id)
                    if req.spec.admin_access:
                        if taking and req.claim in taking:
                            continue
                    elif dev_id in self.in_use or taking:
                        continue  # in use: skipped before its selectors run, as upstream
                    if not self.selectable(req, dev_id, device, req.key, s):
                        continue
                    if consumable and not self.fits_capacity(req, dev_id, device):
                        continue
                    undo = self.take(req, dev_id, device, s, pool)
                    if undo is None:
                        continue
                    if self.one(ci, ri, di + 1, alt, (pi, si, dj + 1) if ordered else (0, 0, 0)):
                        return True
                    self.give_back(req, undo)
        return False


@dataclass(slots=True)
class _Taken:
    """What :meth:`_Search.take` did, for :meth:`_Search.give_back` (upstream's
    ``deviceRollbackState``)."""

    dev_id: DeviceId
    device: r.Device
    slice: r.ResourceSlice
    pool: Pool
    at: int
    """Results of the claim before this device."""
    counters: bool = False
    constraints: int = 0
    marked: bool = False
    inserted: bool = False
    existed: bool = False
    consumed: tuple[tuple[str, Fraction], ...] = ()
    result: bool = False


def allocate(
    node: str,
    labels: Mapping[str, str],
    claims: list[r.ResourceClaim],
    classes: Mapping[str, r.DeviceClass],
    slices: Iterable[r.ResourceSlice],
    in_use: Container[DeviceId],
    options: Options = V1_34,
    shared: SharedUse = NO_SHARES,
) -> list[tuple[r.AllocatedDevice, ...]] | None:
    """Devices for every claim on ``node``, or None when they do not all fit;
    :class:`AllocationError` for a fault (missing class, CEL runtime error, bad pool)."""
    every = list(slices)
    pools = gather_pools(every, node, labels, options, every)
    return allocate_in(pools, claims, classes, in_use, options, node=(node, labels), shared=shared)


def allocate_in(
    pools: list[Pool],
    claims: list[r.ResourceClaim],
    classes: Mapping[str, r.DeviceClass],
    in_use: Container[DeviceId],
    options: Options = V1_34,
    timeout: float | None = None,
    node: tuple[str, Mapping[str, str]] = ("", {}),
    shared: SharedUse = NO_SHARES,
) -> list[tuple[r.AllocatedDevice, ...]] | None:
    """:func:`allocate` over a node's pools (from :func:`gather_pools`), as the release of
    ``options`` does; :class:`AllocationTimeout` when the search takes more than ``timeout``
    seconds (None: no limit).  ``node`` (name, labels) is needed for devices with their own
    node selection; ``shared``: devices allocated with a ``shareID``."""
    if options.binding_conditions:  # upstream's GatherPools: pools with binding conditions last
        pools = sorted(pools, key=has_binding_conditions)  # stable: by driver and name within
    deadline = None if timeout is None else time.monotonic() + timeout
    search = _Search(pools, claims, classes, in_use, options, deadline, node, shared)
    search.prepare()
    if not search.one(0, 0, 0):
        return None
    return [tuple(res) for res in search.results]
