"""DRAListTypeAttributes (v1.36+ alpha): list-typed device attributes (``ints``, ``bools``,
``strings``, ``versions``) in CEL selectors and in ``matchAttribute`` /
``distinctAttribute`` constraints, compared as sets by upstream's ``experimental``
allocator."""

from __future__ import annotations

from typing import Any

import pytest

import kubesched
from kubesched.api.errors import InputError
from kubesched.api.resource import parse_slice
from tests.plugins._dra import (
    CONFIG,
    DRIVER,
    claim,
    cluster,
    device_class,
    node,
    pod,
    request,
    slice_,
)

GATES = {"DRAListTypeAttributes": True}
MATCH = f"{DRIVER}/match"


def device(i: int, **attrs: Any) -> dict[str, Any]:
    return {"name": f"d{i}", "attributes": attrs}


def explain(devices: list[dict[str, Any]], the_claim: dict[str, Any]) -> dict[str, Any]:
    items = cluster(node("n1"), slice_("n1", devices), device_class(), the_claim)
    the_pod = pod("p", ("gpu", "resourceClaimName", the_claim["metadata"]["name"]))
    return kubesched.explain(items, the_pod, CONFIG, kubernetes_version="1.37", feature_gates=GATES)


def allocated(out: dict[str, Any]) -> bool:
    return bool(out["nodes"]["n1"]["feasible"])


def test_a_list_attribute_is_a_list_in_cel() -> None:
    devices = [
        device(0, match={"strings": ["a", "b"]}, sizes={"ints": [1, 2]}),
        device(1, match={"strings": ["c"]}, sizes={"ints": [8]}),
    ]
    sel = f'"b" in device.attributes["{DRIVER}"].match'
    out = explain(devices, claim("c", request(selectors=(sel,))))
    assert allocated(out)
    sel = f'device.attributes["{DRIVER}"].sizes.exists(s, s > 4)'
    assert allocated(explain(devices, claim("c", request(count=1, selectors=(sel,)))))
    sel = f'device.attributes["{DRIVER}"].sizes.all(s, s > 4)'
    assert allocated(explain(devices, claim("c", request(count=2, selectors=(sel,))))) is False


def two(constraint: str, *devices: dict[str, Any]) -> dict[str, Any]:
    spec = [{"requests": ["a", "b"], constraint: MATCH}]
    the_claim = claim("c", request("a"), request("b"), constraints=spec)
    return explain(list(devices), the_claim)


@pytest.mark.parametrize(
    ("values", "fits"),
    [
        # two requests of one device each: some device pair must share a value
        ([["x", "y"], ["y", "z"]], True),
        ([["x"], ["z"]], False),
        # a scalar is a set of one
        (["y", ["y", "z"]], True),
    ],
)
def test_match_attribute_wants_a_common_value(values: list[Any], fits: bool) -> None:
    devices = [
        device(i, match={"strings": v} if isinstance(v, list) else {"string": v})
        for i, v in enumerate(values)
    ]
    assert allocated(two("matchAttribute", *devices)) is fits


def test_match_attribute_narrows_the_intersection_device_by_device() -> None:
    # x-y, y-z, z: any two of the first two share y, but no third device shares it
    devices = [device(i, match={"strings": v}) for i, v in enumerate([["x", "y"], ["y", "z"]])]
    devices.append(device(2, match={"strings": ["z"]}))
    spec = [{"requests": ["a", "b", "c"], "matchAttribute": MATCH}]
    the_claim = claim("c", request("a"), request("b"), request("c"), constraints=spec)
    assert not allocated(explain(devices, the_claim))


def test_distinct_attribute_wants_disjoint_sets() -> None:
    overlapping = [device(0, match={"ints": [1, 2]}), device(1, match={"ints": [2, 3]})]
    assert not allocated(two("distinctAttribute", *overlapping))
    apart = [device(0, match={"ints": [1, 2]}), device(1, match={"ints": [3]})]
    assert allocated(two("distinctAttribute", *apart))


def test_an_empty_list_is_refused_as_the_api_server_does() -> None:
    bad = slice_("n1", [device(0, match={"strings": []})])
    with pytest.raises(InputError, match="must not be empty if specified"):
        parse_slice(bad)


def test_comparing_a_list_to_a_scalar_is_false_not_an_error() -> None:
    # cel-go's heterogeneous equality: the attribute is dynamic under the gate
    devices = [device(0, model={"strings": ["h100", "sxm"]}), device(1, model={"string": "h100"})]
    sel = f'device.attributes["{DRIVER}"].model == "h100"'
    out = explain(devices, claim("c", request(count=1, selectors=(sel,))))
    assert out["result"] == "Scheduled"
    out = explain(devices, claim("c", request(count=2, selectors=(sel,))))
    assert out["nodes"]["n1"]["reasons"] == ["cannot allocate all claims"]
