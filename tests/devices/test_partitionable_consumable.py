"""DRAPartitionableDevices and DRAConsumableCapacity in the allocator (``devices/allocator``):
shared counters, per-device node selection, devices shared by capacity, request policies,
``distinctAttribute``, and which of upstream's allocators each release's gates select."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubesched.api import resource as r
from kubesched.devices import allocator as al
from kubesched.devices import draoptions as opt
from tests.plugins._dra import DRIVER, claim, device_class, gpu, request, slice_

GI = 2**30
PART = opt.Options(skip_unusable=True, partitionable=True, pool_counters=True)
SHARE = opt.Options(skip_unusable=True, consumable=True, pool_counters=True, checks_capacity=True)


def partitions(node: str = "n1", total: str = "8") -> list[r.ResourceSlice]:
    """A GPU as one whole device or two halves (v1.35+: counters in a slice of their own)."""

    def part(i: int, name: str, slots: str) -> dict[str, Any]:
        d = gpu(i) | {"name": name}
        d["consumesCounters"] = [{"counterSet": "g", "counters": {"slots": {"value": slots}}}]
        return d

    devices = [part(0, "whole", "8"), part(1, "half-0", "4"), part(2, "half-1", "4")]
    return [
        r.parse_slice(slice_(node, devices, name="p-0", pool="p", count=2)),
        r.parse_slice(
            slice_(node, [], name="p-1", pool="p", count=2,
                   sharedCounters=[{"name": "g", "counters": {"slots": {"value": total}}}])
        ),
    ]  # fmt: skip


def classes() -> dict[str, r.DeviceClass]:
    return {DRIVER: r.parse_class(device_class())}


def run(
    claims: list[dict[str, Any]],
    slices: list[r.ResourceSlice],
    options: opt.Options,
    in_use: set[al.DeviceId] | None = None,
    shared: al.SharedUse = al.NO_SHARES,
    node: str = "n1",
) -> list[tuple[r.AllocatedDevice, ...]] | None:
    parsed = [r.parse_claim(c) for c in claims]
    return al.allocate(node, {}, parsed, classes(), slices, in_use or set(), options, shared)


def names(found: list[tuple[r.AllocatedDevice, ...]] | None) -> list[str]:
    assert found is not None
    return [d.device for res in found for d in res]


def test_partitions_are_allocated_while_their_counters_last() -> None:
    slices = partitions()
    assert names(run([claim("c", request(count=1))], slices, PART)) == ["whole"]
    # the whole device takes every counter: two devices must be the halves
    assert names(run([claim("c", request(count=2))], slices, PART)) == ["half-0", "half-1"]
    assert run([claim("c", request(count=3))], slices, PART) is None
    # an allocated half leaves one half
    held = {(DRIVER, "p", "half-0")}
    assert names(run([claim("c", request(count=1))], slices, PART, held)) == ["half-1"]
    assert run([claim("c", request(count=2))], slices, PART, held) is None


def test_without_the_gate_a_device_consuming_counters_is_never_allocated() -> None:
    off = PART._replace(partitionable=False)
    assert run([claim("c", request(count=1))], partitions(), off) is None


def test_v1_34_counters_sit_beside_the_devices_that_consume_them() -> None:
    devices = [p for s in partitions() for p in s.devices]
    raw = slice_("n1", [], name="p-0", pool="p",
                 sharedCounters=[{"name": "g", "counters": {"slots": {"value": "4"}}}])  # fmt: skip
    raw["spec"]["devices"] = [
        gpu(i) | {"name": d.name,
                  "consumesCounters": [{"counterSet": "g",
                                        "counters": {"slots": {"value": "8" if i == 0 else "4"}}}]}
        for i, d in enumerate(devices)
    ]  # fmt: skip
    v134 = opt.Options(partitionable=True)
    found = run([claim("c", request(count=1))], [r.parse_slice(raw)], v134)
    assert names(found) == ["half-0"]  # the whole device needs 8 of the slice's 4


def test_per_device_node_selection_offers_each_device_to_its_node() -> None:
    devices = [gpu(0) | {"nodeName": "n2"}, gpu(1) | {"allNodes": True}]
    raw = slice_(None, devices, pool="p", perDeviceNodeSelection=True)
    s = r.parse_slice(raw)
    assert names(run([claim("c", request(count=1))], [s], PART, node="n2")) == ["gpu-0"]
    assert names(run([claim("c", request(count=1))], [s], PART, node="n1")) == ["gpu-1"]
    assert run([claim("c", request(count=2))], [s], PART, node="n1") is None
    assert run([claim("c", request(count=1))], [s], PART._replace(partitionable=False)) is None


def shared_device(policy: dict[str, Any] | None = None, value: str = "8Gi") -> r.ResourceSlice:
    cap: dict[str, Any] = {"value": value}
    if policy is not None:
        cap["requestPolicy"] = policy
    d = gpu(0) | {"allowMultipleAllocations": True, "capacity": {"memory": cap}}
    return r.parse_slice(slice_("n1", [d], pool="s"))


def asking(name: str, memory: str | None, count: int = 1) -> dict[str, Any]:
    req = request(count=count)
    if memory is not None:
        req["exactly"]["capacity"] = {"requests": {"memory": memory}}
    return claim(name, req)


def test_a_shared_device_serves_claims_while_its_capacity_lasts() -> None:
    s = [shared_device()]
    found = run([asking("a", "3Gi"), asking("b", "3Gi")], s, SHARE)
    assert found is not None
    (a,), (b,) = found
    assert a.device == b.device == "gpu-0" and a.share_id and a.share_id != b.share_id
    assert a.consumed == (("memory", Fraction(3 * GI)),)
    assert run([asking("a", "3Gi"), asking("b", "6Gi")], s, SHARE) is None
    # what allocated shares consume counts
    used = al.SharedUse({(DRIVER, "s", "gpu-0")}, {(DRIVER, "s", "gpu-0"): {"memory": 6 * GI}})
    assert run([asking("a", "3Gi")], s, SHARE, shared=used) is None
    assert names(run([asking("a", "2Gi")], s, SHARE, shared=used)) == ["gpu-0"]
    # without a capacity request a share consumes the whole capacity
    assert run([asking("a", None), asking("b", "1Gi")], s, SHARE) is None


def test_a_request_takes_a_shared_device_once_from_v1_36() -> None:
    s = [shared_device()]
    v136 = SHARE._replace(ordered=True)
    assert run([asking("a", "1Gi", count=2)], s, v136) is None
    assert names(run([asking("a", "1Gi", count=2)], s, SHARE)) == ["gpu-0", "gpu-0"]


@pytest.mark.parametrize(
    ("policy", "asked", "consumed"),
    [
        ({"default": "1Gi", "validRange": {"min": "1Gi", "max": "4Gi", "step": "1Gi"}},
         "1536Mi", 2 * GI),
        ({"default": "1Gi", "validRange": {"min": "1Gi", "max": "4Gi", "step": "1Gi"}}, None, GI),
        ({"default": "1Gi", "validRange": {"min": "2Gi"}}, "1Gi", 2 * GI),
        ({"default": "2Gi", "validValues": ["1Gi", "2Gi", "4Gi"]}, "3Gi", 4 * GI),
        ({"default": "1Gi", "validRange": {"min": "1Gi", "max": "4Gi", "step": "1Gi"}},
         "5Gi", None),
        ({"default": "2Gi", "validValues": ["1Gi", "2Gi", "4Gi"]}, "5Gi", None),
    ],
)  # fmt: skip
def test_request_policies_round_requests_up(
    policy: dict[str, Any], asked: str | None, consumed: int | None
) -> None:
    found = run([asking("a", asked)], [shared_device(policy)], SHARE)
    if consumed is None:
        assert found is None
    else:
        assert found is not None and found[0][0].consumed == (("memory", Fraction(consumed)),)


def test_distinct_attribute_keeps_devices_apart() -> None:
    s = r.parse_slice(slice_("n1", [gpu(0, numa={"int": 0}), gpu(1, numa={"int": 0}),
                                    gpu(2, numa={"int": 1})], pool="n1"))  # fmt: skip
    c = claim("c", request("a"), request("b"), constraints=[{"distinctAttribute": "numa"}])
    assert names(run([c], [s], SHARE)) == ["gpu-0", "gpu-2"]
    match = claim("c", request("a"), request("b"), constraints=[{"matchAttribute": "numa"}])
    assert names(run([match], [s], SHARE)) == ["gpu-0", "gpu-1"]


def test_the_allocator_the_gates_select_refuses_what_it_does_not_read() -> None:
    s = [shared_device()]
    old = opt.Options(skip_unusable=True, checks_capacity=True)
    with pytest.raises(al.AllocationError, match="has capacity requests, but the "
                       "DRAConsumableCapacity feature is disabled"):  # fmt: skip
        run([asking("a", "1Gi")], s, old)
    plain = opt.Options(skip_unusable=True)  # v1.35's incubating, v1.36's stable: ignored
    assert names(run([asking("a", "1Gi")], s, plain)) == ["gpu-0"]
    c = claim("c", request("a"), constraints=[{"distinctAttribute": "numa"}])
    with pytest.raises(al.AllocationError, match="constraint #0: empty constraint"):
        run([c], s, plain)


@pytest.mark.parametrize(
    ("version", "gates", "expected"),
    [
        ("1.34", {}, opt.EXPERIMENTAL),  # DRAResourceClaimDeviceStatus is on
        ("1.34", {"DRAResourceClaimDeviceStatus": False}, opt.INCUBATING),
        ("1.35", {}, opt.INCUBATING),
        ("1.35", {"DRAConsumableCapacity": True}, opt.EXPERIMENTAL),
        ("1.36", {}, opt.INCUBATING),
        ("1.36", {"DRAConsumableCapacity": False, "DRADeviceBindingConditions": False}, opt.STABLE),
        ("1.37", {"DRAConsumableCapacity": False, "DRADeviceBindingConditions": False}, opt.STABLE),
        ("1.37", {"DRAListTypeAttributes": True}, opt.EXPERIMENTAL),
    ],
)
def test_the_allocator_channel_per_release(
    version: str, gates: dict[str, bool], expected: str
) -> None:
    from kubesched.config.featuregates import gate_table

    table = gate_table(version)

    def enabled(g: str) -> bool:
        return gates.get(g, g in table and table[g].default)

    def at_least(v: str) -> bool:
        return tuple(map(int, version.split("."))) >= tuple(map(int, v.split(".")))

    assert opt.channel(at_least, enabled) == expected


def test_v1_34_distinct_attribute_only_refuses_one_device_twice() -> None:
    s = r.parse_slice(slice_("n1", [gpu(0, numa={"int": 0}), gpu(1, numa={"int": 0})], pool="n1"))
    c = claim("c", request("a"), request("b"), constraints=[{"distinctAttribute": "numa"}])
    assert run([c], [s], SHARE) is None
    v134 = SHARE._replace(distinct_by_device=True)
    assert names(run([c], [s], v134)) == ["gpu-0", "gpu-1"]


# ------------------------------------------- v1.37: DRAFractionalCapacityRange, capacity errors
V137 = SHARE._replace(ordered=True, capacity_errors=True)
FRACTIONAL = V137._replace(fractional_range=True)
CORES = {"default": "500m", "validRange": {"min": "500m", "max": "4", "step": "250m"}}


def cores_device(policy: dict[str, Any], value: str = "4") -> r.ResourceSlice:
    d = gpu(0) | {"allowMultipleAllocations": True,
                  "capacity": {"cores": {"value": value, "requestPolicy": policy}}}  # fmt: skip
    return r.parse_slice(slice_("n1", [d], pool="s"))


def asking_cores(name: str, cores: str) -> dict[str, Any]:
    req = request(count=1)
    req["exactly"]["capacity"] = {"requests": {"cores": cores}}
    return claim(name, req)


@pytest.mark.parametrize(
    ("asked", "integer", "milli"),
    [
        (
            "750m",
            Fraction(1),
            Fraction(3, 4),
        ),  # integer path: ceil(0.75) - ceil(0.5) = 0 steps of 1
        ("1100m", Fraction(2), Fraction(5, 4)),
        ("300m", Fraction(1, 2), Fraction(1, 2)),  # below min: min, either way
        ("2", Fraction(2), Fraction(2)),
    ],
)
def test_fractional_ranges_round_in_thousandths_under_the_gate(
    asked: str, integer: Fraction, milli: Fraction
) -> None:
    """DRAFractionalCapacityRange (v1.37): a range exact in thousandths is rounded up to
    ``min + n * step`` in thousandths; without the gate every value is rounded up to an
    integer first (``Value()``), so 750m on a 500m/250m range consumes 1."""
    s = [cores_device(CORES)]
    for options, want in ((V137, integer), (FRACTIONAL, milli)):
        found = run([asking_cores("a", asked)], s, options)
        assert found is not None and found[0][0].consumed == (("cores", want),), options


def test_fractional_ranges_decide_how_many_shares_fit() -> None:
    """Four 750m shares fit 4 cores in thousandths (3), not after rounding (4 x 1 = 4, then
    a fifth: 5 > 4)."""
    s = [cores_device(CORES)]
    five = [asking_cores(f"c{i}", "750m") for i in range(5)]
    assert run(five, s, V137) is None
    assert names(run(five, s, FRACTIONAL)) == ["gpu-0"] * 5


def test_v1_37_a_request_not_exact_in_thousandths_aborts_on_the_milli_path() -> None:
    s = [cores_device(CORES)]
    with pytest.raises(al.AllocationError) as err:
        run([asking_cores("a", "1.0001")], s, FRACTIONAL)
    assert str(err.value) == (
        "claim default/a, request gpu: checking capacity for device "
        f'{DRIVER}/s/gpu-0: capacity "cores": capacity request cannot be represented in the '
        "device's range arithmetic: request 1000100u is not a representable milli value"
    )
    # the integer path rounds it up
    assert run([asking_cores("a", "1.0001")], s, V137) is not None


def test_v1_37_an_all_request_checks_capacity_against_the_device_alone() -> None:
    """v1.37: a shared device whose shares leave too little stays among an ``All``
    request's devices and fails it; v1.36 leaves it out and allocates the others."""
    devices = [gpu(i) | {"allowMultipleAllocations": True,
                         "capacity": {"memory": {"value": "8Gi"}}} for i in range(2)]  # fmt: skip
    s = [r.parse_slice(slice_("n1", devices, pool="s"))]
    used = al.SharedUse({(DRIVER, "s", "gpu-0")}, {(DRIVER, "s", "gpu-0"): {"memory": 6 * GI}})
    req = request(count=1)
    req["exactly"] |= {"allocationMode": "All", "capacity": {"requests": {"memory": "4Gi"}}}
    req["exactly"].pop("count", None)
    all_claim = claim("a", req)
    assert names(run([all_claim], s, SHARE._replace(ordered=True), shared=used)) == ["gpu-1"]
    assert run([all_claim], s, V137, shared=used) is None
