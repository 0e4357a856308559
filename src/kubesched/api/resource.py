"""DRA objects of ``resource.k8s.io/v1`` (Kubernetes v1.34): DeviceClass, ResourceSlice,
ResourceClaim and ResourceClaimTemplate, parsed and validated with field paths; device taints,
request tolerations and DeviceTaintRules (DRADeviceTaints, DRADeviceTaintRules: v1.35+).

Selectors are compiled once here (:mod:`kubesched.api.cel`, imported on first use: the CEL
library costs about a second to load), so a bad expression is an input
error naming its field (``spec.devices.requests[0].exactly.selectors[1].cel.expression``), as
the API server refuses such an object.  Objects keep their manifest in ``raw``; the scheduler
writes status by building a new manifest (:func:`with_claim_status`), never in place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from kubesched.api import fields as f
from kubesched.api import objects as api
from kubesched.api.fields import fail, join
from kubesched.api.objects import node_selector_matches as node_selector_matches
from kubesched.api.quantity import QuantityError, parse_quantity

if TYPE_CHECKING:
    from kubesched.api import cel

API_GROUP = "resource.k8s.io"
API_VERSION = "resource.k8s.io/v1"
SAME_AS_V1 = (API_VERSION, "resource.k8s.io/v1beta2")
"""Versions whose DeviceClass, ResourceSlice and ResourceClaim(Template) have v1's fields
(v1beta2 is what v1 took over unchanged; the API server converts between them)."""
KINDS = (
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "DeviceTaintRule",
)
EXACT_COUNT, ALL = "ExactCount", "All"
ALLOCATION_RESULTS_MAX_SIZE = 32
"""Upstream ``AllocationResultsMaxSize``: devices one claim may get."""

Obj = Mapping[str, Any]


# --------------------------------------------------------------------------- taints
NO_SCHEDULE, NO_EXECUTE, NONE = "NoSchedule", "NoExecute", "None"
TAINT_EFFECTS = (NO_SCHEDULE, NO_EXECUTE, NONE)
EQUAL, EXISTS = "Equal", "Exists"


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    """A device's taint (``spec.devices[].taints[]``, or a DeviceTaintRule's
    ``spec.taint``): under DRADeviceTaints a ``NoSchedule`` or ``NoExecute`` taint keeps the
    device from every request that does not tolerate it (``None`` informs only)."""

    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    """A request's toleration (``exactly.tolerations[]`` / ``firstAvailable[].tolerations[]``);
    ``effect`` "" tolerates every effect, ``key`` "" (with ``Exists``) every key."""

    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: DeviceTaint) -> bool:
        """Upstream ``resourceclaim.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        return self.operator == EXISTS or self.value == taint.value


def _taint(obj: Obj, path: str) -> DeviceTaint:
    return DeviceTaint(
        f.required_string(obj, "key", path),
        f.string(obj, "value", path),
        f.one_of(obj, "effect", path, TAINT_EFFECTS, ""),
    )


def _taints(obj: Obj, path: str) -> tuple[DeviceTaint, ...]:
    tp = join(path, "taints")
    return tuple(
        _taint(f.as_mapping(t, join(tp, i)), join(tp, i))
        for i, t in enumerate(f.seq(obj, "taints", path))
    )


def _tolerations(obj: Obj, path: str) -> tuple[DeviceToleration, ...]:
    out = []
    for i, t in enumerate(f.seq(obj, "tolerations", path)):
        tp = join(join(path, "tolerations"), i)
        t = f.as_mapping(t, tp)
        op = f.one_of(t, "operator", tp, (EQUAL, EXISTS), EQUAL)
        key, value = f.string(t, "key", tp), f.string(t, "value", tp)
        if op == EXISTS and value:
            fail(join(tp, "value"), "must be empty when `operator` is 'Exists'")
        if op == EQUAL and not key:
            fail(join(tp, "key"), "Required value: must be set when `operator` is 'Equal'")
        effect = f.string(t, "effect", tp)
        if effect and effect not in (NO_SCHEDULE, NO_EXECUTE):
            fail(join(tp, "effect"), f'Unsupported value: "{effect}": supported values: '
                 f'"{NO_EXECUTE}", "{NO_SCHEDULE}"')  # fmt: skip
        out.append(DeviceToleration(key, op, value, effect))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class DeviceTaintRule:
    """A DeviceTaintRule (DRADeviceTaintRules): ``spec.taint`` added to every device its
    ``spec.deviceSelector`` names (``driver``, ``pool``, ``device``; each None: any)."""

    name: str
    selector: bool
    """Whether ``spec.deviceSelector`` is given (without one, v1.35 and v1.36 taint every
    device and v1.37 none)."""
    driver: str | None
    pool: str | None
    device: str | None
    taint: DeviceTaint

    def names(self, driver: str, pool: str, device: str, nil_selects_all: bool) -> bool:
        """Upstream's tracker ``applyPatches``: whether the rule taints this device."""
        if not self.selector:
            return nil_selects_all
        return (
            (self.driver is None or self.driver == driver)
            and (self.pool is None or self.pool == pool)
            and (self.device is None or self.device == device)
        )


def parse_taint_rule(obj: Obj, path: str = "") -> DeviceTaintRule:
    """A DeviceTaintRule (any ``resource.k8s.io`` version: v1alpha3 at v1.35, v1beta2 at
    v1.36, v1 at v1.37 have the same fields)."""
    name = f.required_string(f.mapping(obj, "metadata", path), "name", join(path, "metadata"))
    sp = join(path, "spec")
    spec = f.mapping(obj, "spec", path)
    sel = spec.get("deviceSelector")
    dp = join(sp, "deviceSelector")
    given = f.as_mapping(sel, dp) if sel is not None else {}

    def opt(key: str) -> str | None:
        return f.string(given, key, dp) if given.get(key) is not None else None

    return DeviceTaintRule(
        name,
        sel is not None,
        opt("driver"),
        opt("pool"),
        opt("device"),
        _taint(f.mapping(spec, "taint", sp), join(sp, "taint")),
    )


def with_taints(
    slices: list[ResourceSlice], rules: list[DeviceTaintRule], nil_selects_all: bool
) -> list[ResourceSlice]:
    """``slices`` with each rule's taint added to the devices it names, in rule order after
    the device's own (upstream's tracker); a slice no rule touches is returned as is."""
    if not rules:
        return slices
    out = []
    for s in slices:
        devices = []
        for d in s.devices:
            extra = tuple(
                rule.taint
                for rule in rules
                if rule.names(s.driver, s.pool, d.name, nil_selects_all)
            )
            # the copy shares the selector cache: selectors read no taints
            devices.append(dataclasses.replace(d, taints=d.taints + extra) if extra else d)
        changed = any(a is not b for a, b in zip(devices, s.devices, strict=True))
        out.append(dataclasses.replace(s, devices=tuple(devices)) if changed else s)
    return out


# --------------------------------------------------------------------------- slices
@dataclass(slots=True, eq=False)
class Device:
    """One device of a slice.  ``typed`` holds each attribute as ``(kind, value)`` for
    ``matchAttribute`` (kinds must agree); ``matches`` caches selector results by text."""

    name: str
    typed: Mapping[str, tuple[str, Any]]
    activation: dict[str, Any]
    consumes: tuple[tuple[str, tuple[tuple[str, Fraction], ...]], ...] = ()
    """``consumesCounters``: per counter set, the counters the device takes from it
    (DRAPartitionableDevices; without the gate such a device is never allocated)."""
    taints: tuple[DeviceTaint, ...] = ()
    """``taints`` (DRADeviceTaints; a DeviceTaintRule's are added by :func:`with_taints`)."""
    binding_conditions: bool = False
    """Has ``bindingConditions`` (allocated only under DRADeviceBindingConditions and
    DRAResourceClaimDeviceStatus)."""
    matches: dict[str, bool] = field(default_factory=dict)
    value_sets: dict[str, frozenset[tuple[str, Any]]] = field(default_factory=dict)
    """:func:`attribute_set` of an attribute, by its key in :attr:`typed` (a cache)."""
    node_name: str = ""
    """Per-device node selection (the slice's ``perDeviceNodeSelection``): ``nodeName``,"""
    node_selector: tuple[api.NodeSelectorTerm, ...] | None = None
    """... ``nodeSelector`` ..."""
    all_nodes: bool = False
    """... or ``allNodes``."""
    allow_multiple: bool = False
    """``allowMultipleAllocations`` (DRAConsumableCapacity: several claims share the device,
    each consuming some of its capacity)."""
    capacity: Mapping[str, DeviceCapacity] = field(default_factory=dict)
    """``capacity`` by name, with each one's ``requestPolicy``."""
    fits_alone: bool | None = None
    """Whether each capacity's default fits the device while nothing else consumes it (a
    cache of the allocator's capacity check for a request asking no capacity)."""
    binds_to_node: bool = False
    """``bindsToNode`` (DRADeviceBindingConditions): an allocation taking the device is
    pinned to its node (by the allocators that read it, ``Options.binds_to_node``)."""
    unshared_matches: dict[str, bool] = field(default_factory=dict)
    """:attr:`matches` as allocators that leave ``allowMultipleAllocations`` out of CEL's
    ``device`` see this device (:meth:`selects`)."""

    def selects(self, sel: cel.Selector, multiple: bool = True) -> bool:
        """Whether ``sel`` accepts this device (cached in :attr:`matches`;
        :class:`~kubesched.api.errors.CelRuntimeError` when it fails at run time, not
        cached).  ``multiple`` False: ``device.allowMultipleAllocations`` reads false, as in
        the allocators that do not pass it to CEL (upstream's ``stable``, and ``incubating``
        before v1.36: ``Options.cel_multiple``)."""
        cache = self.matches if multiple or not self.allow_multiple else self.unshared_matches
        hit = cache.get(sel.expression)
        if hit is None:
            activation = self.activation
            if cache is self.unshared_matches:
                from kubesched.api import cel

                activation = cel.without_multiple(activation)
            hit = cache[sel.expression] = sel.matches(activation)
        return hit

    @property
    def special(self) -> bool:
        """Uses partitionable devices or consumable capacity (the allocator decides)."""
        return bool(self.consumes) or self.allow_multiple


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    """One ``capacity`` entry of a device and its ``requestPolicy`` (DRAConsumableCapacity)."""

    value: Fraction
    policy: bool = False
    """A ``requestPolicy`` is given."""
    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()
    valid_range: tuple[Fraction | None, Fraction | None, Fraction | None] | None = None
    """``validRange`` as ``(min, max, step)``."""


@dataclass(frozen=True, slots=True)
class CounterSet:
    """One ``sharedCounters`` entry of a slice: counters by name."""

    name: str
    counters: Mapping[str, Fraction]


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    """A driver's devices in one pool, on one node, a set of nodes, or all nodes."""

    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str
    node_selector: tuple[api.NodeSelectorTerm, ...] | None
    all_nodes: bool
    per_device_node_selection: bool
    devices: tuple[Device, ...]
    shared_counters: tuple[CounterSet, ...] = ()
    """``sharedCounters`` (DRAPartitionableDevices: v1.34 beside the devices that consume
    them; from v1.35 in slices of their own, for the whole pool)."""


def _node_selector(obj: Obj, key: str, path: str) -> tuple[api.NodeSelectorTerm, ...] | None:
    sel = obj.get(key)
    if sel is None:
        return None
    p = join(path, key)
    sel = f.as_mapping(sel, p)
    terms = f.seq(sel, "nodeSelectorTerms", p)
    return tuple(
        f.node_selector_term(f.as_mapping(t, tp), tp)
        for tp, t in ((join(join(p, "nodeSelectorTerms"), i), t) for i, t in enumerate(terms))
    )


LIST_KINDS = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}
"""DRAListTypeAttributes (v1.36+): a list attribute's field and its elements' kind."""


def attribute_set(typed: tuple[str, Any]) -> frozenset[tuple[str, Any]]:
    """Upstream ``attributeAsSet``: an attribute ``(kind, value)`` (:attr:`Device.typed`)
    as a set of ``(element kind, value)`` -- a scalar is a set of one; versions compare as
    strings."""
    kind, v = typed
    if kind in LIST_KINDS:
        return frozenset((LIST_KINDS[kind], x) for x in v)
    return frozenset(((kind, v),))


def _attribute(value: Obj, path: str) -> tuple[str, Any]:
    keys = [k for k in ("int", "bool", "string", "version", *LIST_KINDS) if k in value]
    if len(keys) != 1:
        fail(path, "exactly one of `int`, `bool`, `string`, `version` is required")
    kind, v = keys[0], value[keys[0]]
    if kind in LIST_KINDS:
        items = f.seq(value, kind, path)
        if not items:
            fail(join(path, kind), "must not be empty if specified")
        one = LIST_KINDS[kind]
        return kind, tuple(
            _attribute({one: x}, join(join(path, kind), i))[1] for i, x in enumerate(items)
        )
    ok = {"int": isinstance(v, int) and not isinstance(v, bool), "bool": isinstance(v, bool)}
    if not ok.get(kind, isinstance(v, str)):
        fail(join(path, kind), f"must be a {kind}")
    if kind == "version":
        from kubesched.api import cel  # the CEL library loads only when DRA objects appear

        try:
            cel.Semver(v)
        except ValueError:
            fail(join(path, kind), "must be a string compatible with semver.org spec 2.0.0")
    return kind, v


SharedMatches = dict[Hashable, tuple[dict[str, bool], dict[str, bool]]]
"""Selector results shared by devices of the same content (:func:`parse_slice`'s
``shared``): per content key, the :attr:`Device.matches` and
:attr:`Device.unshared_matches` dicts every such device holds."""
SHARED_MAX = 65536
"""Device contents kept in a :data:`SharedMatches` before starting again."""


def _device(obj: Obj, driver: str, path: str, shared: SharedMatches | None = None) -> Device:
    from kubesched.api import cel

    name = f.required_string(obj, "name", path)
    typed: dict[str, tuple[str, Any]] = {}
    values: dict[str, Any] = {}
    apath = join(path, "attributes")
    for key, value in f.mapping(obj, "attributes", path).items():
        kind, v = _attribute(f.as_mapping(value, join(apath, key)), join(apath, key))
        typed[key] = (kind, v)
        if kind == "version":
            values[key] = cel.Semver(v)
        elif kind == "versions":
            values[key] = [cel.Semver(x) for x in v]
        else:
            values[key] = list(v) if kind in LIST_KINDS else v
    capacity: dict[str, cel.Quantity] = {}
    policies: dict[str, DeviceCapacity] = {}
    texts: list[tuple[str, str]] = []
    cpath = join(path, "capacity")
    for key, value in f.mapping(obj, "capacity", path).items():
        vp = join(cpath, key)
        value = f.as_mapping(value, vp)
        text = str(value.get("value", ""))
        texts.append((key, text))
        try:
            capacity[key] = cel.Quantity(text, parse_quantity(text))
        except QuantityError as e:
            fail(join(vp, "value"), f"quantities must match the regex: {e}")
        policies[key] = _capacity_policy(value, capacity[key].value, vp)
    allow_multiple = f.boolean(obj, "allowMultipleAllocations", path)
    activation = cel.activation(cel.DeviceInput(driver, values, capacity, allow_multiple))
    binding = obj.get("bindingConditions") is not None
    if not allow_multiple:
        for key, c in policies.items():
            if c.policy:
                fail(
                    join(join(cpath, key), "requestPolicy"),
                    "Forbidden: allowMultipleAllocations must be true to set a requestPolicy",
                )
    consumes = []
    ccp = join(path, "consumesCounters")
    for i, item in enumerate(f.seq(obj, "consumesCounters", path)):
        cc = f.as_mapping(item, join(ccp, i))
        consumes.append(
            (
                f.required_string(cc, "counterSet", join(ccp, i)),
                tuple(_counters(cc, join(ccp, i)).items()),
            )
        )
    matches: dict[str, bool] = {}
    unshared: dict[str, bool] = {}
    if shared is not None:
        # what a selector sees of the device (:func:`cel.activation`) is a function of
        # these, in this order: devices alike share their selector results
        content = (driver, allow_multiple, tuple(typed.items()), tuple(texts))
        try:
            hit = shared.get(content)
        except TypeError:  # (an unhashable value: no sharing)
            hit = None
        else:
            if hit is None:
                if len(shared) >= SHARED_MAX:
                    shared.clear()
                hit = shared[content] = (matches, unshared)
        if hit is not None:
            matches, unshared = hit
    return Device(
        name,
        typed,
        activation,
        tuple(consumes),
        _taints(obj, path),
        binding,
        node_name=f.string(obj, "nodeName", path),
        node_selector=_node_selector(obj, "nodeSelector", path),
        all_nodes=f.boolean(obj, "allNodes", path),
        allow_multiple=allow_multiple,
        capacity=policies,
        binds_to_node=f.boolean(obj, "bindsToNode", path),
        matches=matches,
        unshared_matches=unshared,
    )


def quantity(value: object, path: str) -> Fraction:
    """A quantity (``"4Gi"``, ``8``) at ``path``, as an exact number."""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        fail(path, "must be a quantity")
    try:
        return parse_quantity(value)
    except QuantityError as e:
        fail(path, f"quantities must match the regex: {e}")


def _counters(obj: Obj, path: str) -> dict[str, Fraction]:
    """``counters``: ``{name: {value: quantity}}``."""
    out = {}
    cp = join(path, "counters")
    for name, c in f.mapping(obj, "counters", path).items():
        c = f.as_mapping(c, join(cp, name))
        out[str(name)] = quantity(c.get("value"), join(join(cp, name), "value"))
    return out


def _capacity_policy(obj: Obj, value: Fraction, path: str) -> DeviceCapacity:
    """A capacity's ``requestPolicy`` (``default``, ``validValues`` or ``validRange``)."""
    pol = obj.get("requestPolicy")
    if pol is None:
        return DeviceCapacity(value)
    pp = join(path, "requestPolicy")
    pol = f.as_mapping(pol, pp)
    default = None
    if pol.get("default") is not None:
        default = quantity(pol["default"], join(pp, "default"))
    vp = join(pp, "validValues")
    valid = tuple(quantity(v, join(vp, i)) for i, v in enumerate(f.seq(pol, "validValues", pp)))
    rng = None
    if pol.get("validRange") is not None:
        rp = join(pp, "validRange")
        rv = f.as_mapping(pol["validRange"], rp)

        def bound(key: str) -> Fraction | None:
            return None if rv.get(key) is None else quantity(rv[key], join(rp, key))

        rng = (bound("min"), bound("max"), bound("step"))
        if rng[0] is None:
            fail(join(rp, "min"), "Required value")
        if valid:
            fail(pp, "exactly one of `validValues` or `validRange` may be set")
    return DeviceCapacity(value, True, default, valid, rng)


def parse_slice(obj: Obj, path: str = "", shared: SharedMatches | None = None) -> ResourceSlice:
    """A ResourceSlice; exactly one of nodeName, nodeSelector, allNodes,
    perDeviceNodeSelection (API validation).  With ``shared``, devices of the same driver,
    attributes (in order), capacities and ``allowMultipleAllocations`` as a device parsed
    before with it share that device's selector results (a selector is evaluated once for
    them all; the ``shared`` of one scheduler: one release's CEL)."""
    name = f.required_string(f.mapping(obj, "metadata", path), "name", join(path, "metadata"))
    sp = join(path, "spec")
    spec = f.mapping(obj, "spec", path)
    driver = f.required_string(spec, "driver", sp)
    pool = f.mapping(spec, "pool", sp)
    pp = join(sp, "pool")
    node_name = f.string(spec, "nodeName", sp)
    selector = _node_selector(spec, "nodeSelector", sp)
    all_nodes = f.boolean(spec, "allNodes", sp)
    per_device = f.boolean(spec, "perDeviceNodeSelection", sp)
    if sum((bool(node_name), selector is not None, all_nodes, per_device)) != 1:
        fail(
            sp,
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
            "`perDeviceNodeSelection` is required",
        )
    if selector is not None and len(selector) != 1:
        # API validation: one term, so that allocations merge the selectors of their slices
        fail(
            join(join(sp, "nodeSelector"), "nodeSelectorTerms"),
            "must have exactly one node selector term",
        )
    devices = tuple(
        _device(
            f.as_mapping(d, join(join(sp, "devices"), i)),
            driver,
            join(join(sp, "devices"), i),
            shared,
        )
        for i, d in enumerate(f.seq(spec, "devices", sp))
    )
    for i, d in enumerate(devices):
        dp = join(join(sp, "devices"), i)
        picks = sum((bool(d.node_name), d.node_selector is not None, d.all_nodes))
        if per_device and picks != 1:
            fail(dp, "exactly one of `nodeName`, `nodeSelector`, `allNodes` is required")
        if not per_device and picks:
            fail(dp, "`nodeName`, `nodeSelector` and `allNodes` need `perDeviceNodeSelection`")
    counters = []
    scp = join(sp, "sharedCounters")
    for i, c in enumerate(f.seq(spec, "sharedCounters", sp)):
        c = f.as_mapping(c, join(scp, i))
        counters.append(
            CounterSet(f.required_string(c, "name", join(scp, i)), _counters(c, join(scp, i)))
        )
    return ResourceSlice(
        name=name,
        driver=driver,
        pool=f.required_string(pool, "name", pp),
        generation=f.integer(pool, "generation", pp) or 0,
        slice_count=f.integer(pool, "resourceSliceCount", pp) or 1,
        node_name=node_name,
        node_selector=selector,
        all_nodes=all_nodes,
        per_device_node_selection=per_device,
        devices=devices,
        shared_counters=tuple(counters),
    )


# --------------------------------------------------------------------------- classes
@dataclass(frozen=True, slots=True)
class DeviceClass:
    """A class of devices: CEL selectors every device allocated through it must pass."""

    name: str
    selectors: tuple[cel.Selector, ...]
    config: tuple[Any, ...]
    extended_resource_name: str | None = None
    """``spec.extendedResourceName``: the extended resource (``example.com/gpu``) a Pod may
    request to get devices of this class (DRAExtendedResource)."""
    created: str = ""
    """``metadata.creationTimestamp`` (RFC 3339; of two classes naming one extended resource
    the newer wins)."""


DEVICE_SELECTORS_MAX = 32


def _selectors(obj: Obj, path: str) -> tuple[cel.Selector, ...]:
    from kubesched.api import cel

    out = []
    selectors = f.seq(obj, "selectors", path)
    if len(selectors) > DEVICE_SELECTORS_MAX:  # the API server's DeviceSelectorsMaxSize
        fail(join(path, "selectors"), f"must have at most {DEVICE_SELECTORS_MAX} items")
    for i, s in enumerate(selectors):
        sp = join(join(path, "selectors"), i)
        c = f.mapping(f.as_mapping(s, sp), "cel", sp)
        expr = f.required_string(c, "expression", join(sp, "cel"))
        out.append(cel.compile_selector(expr, join(join(sp, "cel"), "expression")))
    return tuple(out)


def parse_class(obj: Obj, path: str = "") -> DeviceClass:
    """A DeviceClass."""
    name = f.required_string(f.mapping(obj, "metadata", path), "name", join(path, "metadata"))
    meta = f.mapping(obj, "metadata", path)
    sp = join(path, "spec")
    spec = f.mapping(obj, "spec", path)
    extended = f.string(spec, "extendedResourceName", sp) or None
    return DeviceClass(
        name,
        _selectors(spec, sp),
        tuple(f.seq(spec, "config", sp)),
        extended,
        str(meta.get("creationTimestamp") or ""),
    )


# --------------------------------------------------------------------------- claims
@dataclass(frozen=True, slots=True)
class ExactRequest:
    """``exactly`` (or one ``firstAvailable`` entry): devices of one class."""

    name: str
    class_name: str
    selectors: tuple[cel.Selector, ...]
    mode: str
    count: int
    admin_access: bool
    tolerations: tuple[DeviceToleration, ...] = ()
    """DRADeviceTaints: the taints this request's devices may carry."""
    admin_access_set: bool = False
    """``adminAccess`` is given (``false`` too): with DRAAdminAccess off the allocator
    refuses the request."""
    capacity: Mapping[str, Fraction] | None = None
    """``capacity.requests`` (DRAConsumableCapacity; None: no ``capacity``)."""

    def blocked_by(self, taints: tuple[DeviceTaint, ...], every_effect: bool = False) -> bool:
        """Upstream ``taintPreventsAllocation`` (v1.35+): a ``NoSchedule`` or ``NoExecute``
        taint none of the tolerations tolerates (other effects never block); with
        ``every_effect`` v1.34's ``allTaintsTolerated``: a taint of any effect does."""
        return any(
            (every_effect or t.effect in (NO_SCHEDULE, NO_EXECUTE))
            and not any(tol.tolerates(t) for tol in self.tolerations)
            for t in taints
        )


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """``spec.devices.requests[i]``: ``exactly`` or ordered ``first_available`` alternatives."""

    name: str
    exactly: ExactRequest | None
    first_available: tuple[ExactRequest, ...] = ()


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    """One ``status.allocation.devices.results`` entry."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False
    share_id: str | None = None
    """``shareID``: the device is shared (DRAConsumableCapacity, ``allowMultipleAllocations``)."""
    consumed: tuple[tuple[str, Fraction], ...] = ()
    """``consumedCapacity`` of a shared device, by capacity name."""

    @property
    def device_id(self) -> tuple[str, str, str]:
        """``(driver, pool, device)``, a device's identity."""
        return (self.driver, self.pool, self.device)


MATCH, DISTINCT = "matchAttribute", "distinctAttribute"
Constraint = tuple[tuple[str, ...], str, str]


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    """A claim for devices; ``allocation`` is None until allocated."""

    namespace: str
    name: str
    uid: str
    requests: tuple[DeviceRequest, ...]
    constraints: tuple[Constraint, ...]
    """``(requests, attribute, kind)`` per constraint: kind ``matchAttribute``,
    ``distinctAttribute`` (DRAConsumableCapacity) or "" (neither: upstream's allocator
    refuses the claim)."""
    owner_uids: tuple[str, ...]
    """UIDs of controller owners (a claim made from a template is owned by its Pod)."""
    allocation: tuple[AllocatedDevice, ...] | None
    allocation_node_selector: tuple[api.NodeSelectorTerm, ...] | None
    reserved_for: tuple[str, ...]
    """UIDs of the Pods in ``status.reservedFor``."""
    deleting: bool
    raw: Mapping[str, Any]

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


def _exact(obj: Obj, name: str, path: str) -> ExactRequest:
    class_name = f.required_string(obj, "deviceClassName", path)
    mode = f.one_of(obj, "allocationMode", path, (EXACT_COUNT, ALL), EXACT_COUNT)
    count = f.integer(obj, "count", path)
    if mode == ALL and count is not None:
        fail(join(path, "count"), "must not be specified when allocationMode is 'All'")
    if count is not None and count <= 0:
        fail(join(path, "count"), f"Invalid value: {count}: must be greater than zero")
    return ExactRequest(
        name,
        class_name,
        _selectors(obj, path),
        mode,
        count or 1,
        f.boolean(obj, "adminAccess", path),
        _tolerations(obj, path),
        obj.get("adminAccess") is not None,
        _capacity_requests(obj, path),
    )


def _capacity_requests(obj: Obj, path: str) -> Mapping[str, Fraction] | None:
    """``capacity.requests`` of a request (None without ``capacity``)."""
    cap = obj.get("capacity")
    if cap is None:
        return None
    cp = join(path, "capacity")
    rp = join(cp, "requests")
    reqs = f.mapping(f.as_mapping(cap, cp), "requests", cp)
    return {str(k): quantity(v, join(rp, k)) for k, v in reqs.items()}


def _request(obj: Obj, path: str) -> DeviceRequest:
    name = f.required_string(obj, "name", path)
    exactly, first = obj.get("exactly"), f.seq(obj, "firstAvailable", path)
    if (exactly is None) == (not first):
        fail(path, "exactly one of `exactly` or `firstAvailable` is required")
    if exactly is not None:
        return DeviceRequest(
            name, _exact(f.as_mapping(exactly, join(path, "exactly")), name, join(path, "exactly"))
        )
    subs = []
    for i, s in enumerate(first):
        sp = join(join(path, "firstAvailable"), i)
        s = f.as_mapping(s, sp)
        subs.append(_exact(s, f.required_string(s, "name", sp), sp))
    return DeviceRequest(name, None, tuple(subs))


def parse_claim_spec(
    spec: Obj, path: str
) -> tuple[tuple[DeviceRequest, ...], tuple[Constraint, ...]]:
    """Requests and constraints of a claim spec (also a template's ``spec.spec``)."""
    dp = join(path, "devices")
    devices = f.mapping(spec, "devices", path)
    requests = tuple(
        _request(f.as_mapping(r, join(join(dp, "requests"), i)), join(join(dp, "requests"), i))
        for i, r in enumerate(f.seq(devices, "requests", dp))
    )
    names = {r.name for r in requests} | {
        f"{r.name}/{s.name}" for r in requests for s in r.first_available
    }
    constraints: list[Constraint] = []
    for i, c in enumerate(f.seq(devices, "constraints", dp)):
        cp = join(join(dp, "constraints"), i)
        c = f.as_mapping(c, cp)
        reqs = f.string_list(c, "requests", cp)
        for j, r in enumerate(reqs):
            if r not in names:
                fail(
                    join(join(cp, "requests"), j),
                    f'Invalid value: "{r}": must be the name of '
                    "a request in the claim or the name of a request and a subrequest "
                    "separated by '/'",
                )
        match, distinct = f.string(c, MATCH, cp), f.string(c, DISTINCT, cp)
        if match and distinct:
            fail(cp, f"at most one of `{MATCH}` or `{DISTINCT}` may be set")
        kind = MATCH if match else DISTINCT if distinct else ""
        constraints.append((reqs, match or distinct, kind))
    return requests, tuple(constraints)


def _result(obj: Obj, path: str) -> AllocatedDevice:
    """One ``status.allocation.devices.results`` entry."""
    cp = join(path, "consumedCapacity")
    consumed = tuple(
        (str(k), quantity(v, join(cp, k)))
        for k, v in sorted(f.mapping(obj, "consumedCapacity", path).items())
    )
    return AllocatedDevice(
        f.required_string(obj, "request", path),
        f.required_string(obj, "driver", path),
        f.required_string(obj, "pool", path),
        f.required_string(obj, "device", path),
        f.boolean(obj, "adminAccess", path),
        f.string(obj, "shareID", path) or None,
        consumed,
    )


def written_allocation(
    alloc: Obj, results: tuple[AllocatedDevice, ...]
) -> tuple[tuple[AllocatedDevice, ...], tuple[api.NodeSelectorTerm, ...] | None] | None:
    """What :func:`parse_claim` parses ``alloc`` (a ``status.allocation`` written from
    ``results``, in their order) to, without parsing the results again: ``results`` and
    the parsed ``nodeSelector``.  None (parse it) unless every result survives the round
    trip as is: ``request``, ``driver``, ``pool`` and ``device`` non-empty, no ``shareID``,
    no ``consumedCapacity``, and ``alloc`` holds exactly that many results."""
    items = (alloc.get("devices") or {}).get("results")
    if not isinstance(items, list) or len(items) != len(results):
        return None
    for d in results:
        if not (d.request and d.driver and d.pool and d.device):
            return None
        if d.share_id is not None or d.consumed:
            return None
    return results, _node_selector(alloc, "nodeSelector", join("status", "allocation"))


def parse_claim(
    obj: Obj, path: str = "", cache: dict[int, tuple[Any, Any]] | None = None
) -> ResourceClaim:
    """A ResourceClaim with its status (allocation, reservedFor).  ``cache`` (id of a
    ``spec`` or ``status.allocation`` mapping -> the mapping and what it parsed to) skips
    parsing those parts again when a new version of a claim shares them (the caller must
    not change a mapping it parsed)."""
    mp = join(path, "metadata")
    meta = f.mapping(obj, "metadata", path)
    name = f.required_string(meta, "name", mp)
    namespace = f.string(meta, "namespace", mp) or "default"
    spec = f.mapping(obj, "spec", path)
    hit = cache.get(id(spec)) if cache is not None else None
    if hit is not None and hit[0] is spec:
        requests, constraints = hit[1]
    else:
        requests, constraints = parse_claim_spec(spec, join(path, "spec"))
        if cache is not None:
            cache[id(spec)] = (spec, (requests, constraints))
    stp = join(path, "status")
    status = f.mapping(obj, "status", path)
    alloc = status.get("allocation")
    results: tuple[AllocatedDevice, ...] | None = None
    selector = None
    hit = cache.get(id(alloc)) if cache is not None and alloc is not None else None
    if hit is not None and hit[0] is alloc:
        results, selector = hit[1]
    elif alloc is not None:
        ap = join(stp, "allocation")
        alloc = f.as_mapping(alloc, ap)
        rp = join(join(ap, "devices"), "results")
        items = f.seq(f.mapping(alloc, "devices", ap), "results", join(ap, "devices"))
        results = tuple(
            _result(f.as_mapping(x, join(rp, i)), join(rp, i)) for i, x in enumerate(items)
        )
        selector = _node_selector(alloc, "nodeSelector", ap)
        if cache is not None:
            cache[id(alloc)] = (alloc, (results, selector))
    reserved = tuple(
        f.string(f.as_mapping(r, join(join(stp, "reservedFor"), i)), "uid", stp)
        for i, r in enumerate(f.seq(status, "reservedFor", stp))
    )
    owners = tuple(
        str(o.get("uid", ""))
        for o in meta.get("ownerReferences") or []
        if isinstance(o, Mapping) and o.get("controller")
    )
    return ResourceClaim(
        namespace=namespace,
        name=name,
        uid=f.string(meta, "uid", mp) or f"uid-ResourceClaim-{namespace}-{name}",
        requests=requests,
        constraints=constraints,
        owner_uids=owners,
        allocation=results,
        allocation_node_selector=selector,
        reserved_for=reserved,
        deleting=meta.get("deletionTimestamp") is not None,
        raw=obj,
    )


def parse_template(obj: Obj, path: str = "") -> Obj:
    """Validate a ResourceClaimTemplate (``spec.spec`` is a claim spec); returns it."""
    f.required_string(f.mapping(obj, "metadata", path), "name", join(path, "metadata"))
    sp = join(path, "spec")
    parse_claim_spec(f.mapping(f.mapping(obj, "spec", path), "spec", sp), join(sp, "spec"))
    return obj


def validate(obj: Obj, path: str) -> None:
    """Parse a DRA object of any of :data:`KINDS` for its errors (field paths from ``path``)."""
    kind = str(obj.get("kind"))
    if kind == "DeviceClass":
        parse_class(obj, path)
    elif kind == "ResourceSlice":
        parse_slice(obj, path)
    elif kind == "ResourceClaim":
        parse_claim(obj, path)
    elif kind == "ResourceClaimTemplate":
        parse_template(obj, path)
    elif kind == "DeviceTaintRule":
        parse_taint_rule(obj, path)
