"""DRA objects and CEL selectors: parsing, field-path errors, Kubernetes' CEL environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api import cel
from kubesched.api import resource as r
from kubesched.api.errors import InputError
from kubesched.api.parse import parse_objects
from kubesched.cli import main
from tests.plugins._dra import (
    DRIVER,
    claim,
    cluster,
    device_class,
    gpu,
    gpus,
    pod,
    request,
    slice_,
)

ATTRS = f'device.attributes["{DRIVER}"]'
CAP = f'device.capacity["{DRIVER}"]'


def matches(expression: str, device: dict[str, object] | None = None) -> bool:
    sl = r.parse_slice(gpus("n1", 0) | {"spec": {**gpus("n1", 0)["spec"],
                                                 "devices": [device or gpu(0)]}})  # fmt: skip
    return cel.compile_selector(expression, "x").matches(sl.devices[0].activation)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (f'device.driver == "{DRIVER}"', True),
        (f'{ATTRS}.model == "a100"', True),
        (f"{ATTRS}.index == 0", True),
        (f'{CAP}.memory.compareTo(quantity("40Gi")) == 0', True),
        (f'{CAP}.memory == quantity("40960Mi")', True),
        (f'{CAP}.memory.isGreaterThan(quantity("80Gi"))', False),
        (f'{CAP}.memory.isLessThan(quantity("80Gi"))', True),
        (f'{ATTRS}.version.isGreaterThan(semver("1.2.0"))', True),
        (f"{ATTRS}.version.major() == 1", True),
        ('device.driver == "other" && device.attributes["other"].model == "x"', False),
        ('device.attributes["other"].model == "x" || true', True),
        (f'{ATTRS}.model.startsWith("a1")', True),
        ("device.allowMultipleAllocations == false", True),
        # CEL names that are Python keywords (issue 31 item 3): "invalid syntax" before
        ("[1, 2].all(lambda, lambda > 0)", True),
        (f'["a100"].exists(lambda, lambda == {ATTRS}.model)', True),
        (f'[quantity("1Gi")].all(class, class.isGreaterThan({CAP}.memory))', False),
    ],
)
def test_kubernetes_cel_environment(expression: str, expected: bool) -> None:
    assert matches(expression, gpu(0, version={"version": "1.10.0"})) is expected


def test_a_device_allowing_multiple_allocations_says_so_to_cel() -> None:
    assert matches("device.allowMultipleAllocations", gpu(0) | {"allowMultipleAllocations": True})


def test_a_missing_domain_is_an_empty_map_and_a_missing_key_an_error() -> None:
    with pytest.raises(cel.CelRuntimeError, match="no such key: model"):
        matches('device.attributes["other.example.com"].model == "a100"')
    with pytest.raises(cel.CelRuntimeError, match="could not be converted to bool"):
        matches('"a string"')


def test_semver_orders_pre_releases_first() -> None:
    assert cel.Semver("1.0.0-alpha") < cel.Semver("1.0.0-alpha.1") < cel.Semver("1.0.0")
    assert cel.Semver("1.0.0-2") < cel.Semver("1.0.0-10") < cel.Semver("1.0.0-beta")


def test_each_expression_compiles_once() -> None:
    a = cel.compile_selector('device.driver == "x.example.com"', "a")
    assert cel.compile_selector('device.driver == "x.example.com"', "b") is a


def test_a_bad_expression_is_an_input_error_at_its_field() -> None:
    bad = claim("c", request(selectors=("device.driver ==",)))
    with pytest.raises(InputError) as e:
        parse_objects([bad])
    (path, message), = e.value.problems  # fmt: skip
    assert path == "spec.devices.requests[0].exactly.selectors[0].cel.expression"
    assert message.startswith("compilation failed:")


@pytest.mark.parametrize(
    ("obj", "path", "message"),
    [
        (
            gpus("n1", 1) | {"spec": {**gpus("n1", 1)["spec"], "allNodes": True}},
            "[0].spec",
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`",
        ),
        (
            claim("c", {"name": "gpu"}),
            "[0].spec.devices.requests[0]",
            "exactly one of `exactly` or `firstAvailable` is required",
        ),
        (
            claim("c", request(count=0)),
            "[0].spec.devices.requests[0].exactly.count",
            "must be greater than zero",
        ),
        (
            claim("c", constraints=[{"requests": ["nic"], "matchAttribute": "x/y"}]),
            "[0].spec.devices.constraints[0].requests[0]",
            'Invalid value: "nic"',
        ),
        (
            device_class("c", "device.attributes["),
            "[0].spec.selectors[1].cel.expression",
            "compilation failed",
        ),
        # DRAPartitionableDevices, DRAConsumableCapacity
        (
            slice_("n1", [], sharedCounters=[{"name": "g", "counters": {"s": {"value": "x"}}}]),
            "[0].spec.sharedCounters[0].counters.s.value",
            "quantities must match",
        ),
        (
            slice_("n1", [gpu(0) | {"consumesCounters": [{"counters": {}}]}]),
            "[0].spec.devices[0].consumesCounters[0].counterSet",
            "Required value",
        ),
        (
            slice_(None, [gpu(0)], nodeSelector={"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]}
                for n in ("n1", "n2")]}),
            "[0].spec.nodeSelector.nodeSelectorTerms",
            "must have exactly one node selector term",
        ),
        (
            slice_(None, [gpu(0)], perDeviceNodeSelection=True),
            "[0].spec.devices[0]",
            "exactly one of `nodeName`, `nodeSelector`, `allNodes` is required",
        ),
        (
            slice_("n1", [gpu(0, mem="8Gi") | {"capacity": {"memory": {
                "value": "8Gi", "requestPolicy": {"default": "1Gi"}}}}]),
            "[0].spec.devices[0].capacity.memory.requestPolicy",
            "allowMultipleAllocations must be true",
        ),
        (
            slice_("n1", [gpu(0) | {"allowMultipleAllocations": True, "capacity": {"memory": {
                "value": "8Gi", "requestPolicy": {"validRange": {"min": "1Gi", "step": "x"}}}}}]),
            "[0].spec.devices[0].capacity.memory.requestPolicy.validRange.step",
            "quantities must match",
        ),
        (
            claim("c", request() | {"exactly": {"deviceClassName": DRIVER,
                                                "capacity": {"requests": {"memory": "lots"}}}}),
            "[0].spec.devices.requests[0].exactly.capacity.requests.memory",
            "quantities must match",
        ),
        (
            claim("c", constraints=[{"matchAttribute": "x/y", "distinctAttribute": "x/z"}]),
            "[0].spec.devices.constraints[0]",
            "at most one of `matchAttribute` or `distinctAttribute`",
        ),
        (
            claim("c") | {"status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": DRIVER, "pool": "p", "device": "d",
                 "shareID": "u", "consumedCapacity": {"memory": "-x"}}]}}}},
            "[0].status.allocation.devices.results[0].consumedCapacity.memory",
            "quantities must match",
        ),
    ],
)  # fmt: skip
def test_invalid_objects_name_the_field(obj: dict[str, object], path: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        parse_objects([obj, device_class("other")])
    (got_path, got), = e.value.problems  # fmt: skip
    assert got_path == path and message in got


def test_container_claims_must_name_a_pod_claim() -> None:
    p = pod("p", ("gpu", "resourceClaimName", "c"))
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "nic"}]
    with pytest.raises(InputError) as e:
        parse_objects([p])
    assert e.value.problems == [
        ("spec.containers[0].resources.claims[0].name",
         'Unsupported value: "nic": supported values: "gpu"')]  # fmt: skip


def test_pod_claims_and_statuses_are_parsed() -> None:
    p = pod("p", ("gpu", "resourceClaimTemplateName", "t"), statuses=(("gpu", "p-gpu-x"),))
    (parsed,) = parse_objects([p]).pods
    assert parsed.resource_claims == (("gpu", "", "t"),)
    assert parsed.resource_claim_statuses == (("gpu", "p-gpu-x"),)


def test_the_cli_exits_2_naming_the_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    snapshot = tmp_path / "cluster.json"
    bad = device_class(DRIVER, "device.driver = 1")
    snapshot.write_text(json.dumps(cluster(bad)))
    pod_file = tmp_path / "pod.json"
    pod_file.write_text(json.dumps(pod("p")))
    assert main(["explain", "--cluster", str(snapshot), "--pod", str(pod_file)]) == 2
    err = capsys.readouterr().err
    assert str(snapshot) in err and "items[0].spec.selectors[1].cel.expression" in err
    assert "Traceback" not in err
