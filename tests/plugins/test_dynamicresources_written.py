"""PreBind's written claims parsed without parsing their allocation again
(:func:`kubesched.api.resource.written_allocation`), and the special claim's device
requests kept per what they are made from (:func:`kubesched.devices.extended.requests_key`):
each shortcut answers what the ordinary path answers, or refuses."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubesched.api import resource as r
from kubesched.devices import extended as ext
from kubesched.plugins.dynamicresources.claims import claim_with_reservation
from tests.plugins.test_dynamicresources_extended import GPU, ext_pod, gpu_class, parsed

POD_REF = {"resource": "pods", "name": "p", "uid": "uid-p"}
ON_NODE = {
    "nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    ]
}


def claim_manifest() -> dict[str, Any]:
    return {
        "apiVersion": r.API_VERSION,
        "kind": "ResourceClaim",
        "metadata": {"namespace": "default", "name": "c", "uid": "uid-c"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g"}}]}},
    }


def written(results: tuple[r.AllocatedDevice, ...], selector: bool) -> dict[str, Any]:
    raw = claim_with_reservation(claim_manifest(), POD_REF, results, "n1", None, [], False)
    if selector:
        raw["status"]["allocation"]["nodeSelector"] = ON_NODE
    return raw


@pytest.mark.parametrize("selector", [False, True])
def test_a_written_allocation_parses_to_the_results_it_was_written_from(selector: bool) -> None:
    results = (
        r.AllocatedDevice("gpu", "driver.example.com", "pool-1", "dev-0"),
        r.AllocatedDevice("gpu", "driver.example.com", "pool-1", "dev-1", admin_access=True),
    )
    raw = written(results, selector)
    claim = r.parse_claim(raw)
    known = r.written_allocation(raw["status"]["allocation"], results)
    assert known == (claim.allocation, claim.allocation_node_selector)
    assert (claim.allocation_node_selector is not None) is selector


@pytest.mark.parametrize(
    "odd",
    [
        r.AllocatedDevice("gpu", "driver.example.com", "pool-1", "dev-0", share_id="s"),
        r.AllocatedDevice(
            "gpu", "driver.example.com", "pool-1", "dev-0", consumed=(("mem", Fraction(1)),)
        ),
        r.AllocatedDevice("gpu", "driver.example.com", "pool-1", ""),
    ],
)
def test_results_that_may_not_survive_the_round_trip_are_parsed(odd: r.AllocatedDevice) -> None:
    raw = written((odd,), False)
    assert r.written_allocation(raw["status"]["allocation"], (odd,)) is None


def test_an_allocation_holding_other_results_is_parsed() -> None:
    one = r.AllocatedDevice("gpu", "driver.example.com", "pool-1", "dev-0")
    two = (one, r.AllocatedDevice("gpu", "driver.example.com", "pool-1", "dev-1"))
    raw = written(two, False)
    assert r.written_allocation(raw["status"]["allocation"], (one,)) is None


def two_containers(name: str = "c", amount: str = "1") -> dict[str, Any]:
    spec = ext_pod(amount)["spec"]
    spec["initContainers"] = [
        {
            "name": "sidecar",
            "restartPolicy": "Always",
            "resources": {"requests": {GPU: "1"}},
        }
    ]
    spec["containers"][0]["name"] = name
    return dict(spec)


def test_equal_keys_make_equal_requests_and_other_inputs_other_keys() -> None:
    classes = {GPU: parsed(gpu_class("gpu.example.com"))}
    other = {GPU: parsed(gpu_class("other.example.com"))}
    want = frozenset({GPU})
    key = ext.requests_key(two_containers(), want, classes.get)
    assert ext.requests_key(two_containers(), want, classes.get) == key
    assert ext.device_requests(two_containers(), want, classes.get) == ext.device_requests(
        two_containers(), want, classes.get
    )
    # each input device_requests reads changes the key
    assert ext.requests_key(two_containers(name="d"), want, classes.get) != key
    assert ext.requests_key(two_containers(amount="3"), want, classes.get) != key
    assert ext.requests_key(two_containers(), want, other.get) != key
    assert ext.requests_key(two_containers(), frozenset(), classes.get) != key
    sidecar_gone = two_containers()
    sidecar_gone["initContainers"][0] = {**sidecar_gone["initContainers"][0], "restartPolicy": ""}
    assert ext.requests_key(sidecar_gone, want, classes.get) != key
    assert ext.device_requests(sidecar_gone, want, classes.get) != ext.device_requests(
        two_containers(), want, classes.get
    )
