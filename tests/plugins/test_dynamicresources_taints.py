"""Device taints per release and gate (every expectation checked against kube-oracle of that
release): an ``All`` request fails on a node holding a device tainted ``NoSchedule`` it does
not tolerate once DRADeviceTaints is on (v1.36 default), not at v1.35 (gate off) nor at
v1.37 with the gates set off; tolerations are validated with their field path.  More cases
(tolerations, DeviceTaintRules, binding conditions) are hand-written regressions in
``tests/oracle/regressions``."""

from __future__ import annotations

from typing import Any

import pytest

import kubesched
from kubesched.api.errors import InputError
from tests.plugins._dra import CONFIG, claim, cluster, device_class, gpu, node, pod, request, slice_


def all_of_a_tainted_node() -> dict[str, Any]:
    tainted = gpu(0) | {"taints": [{"key": "k", "effect": "NoSchedule"}]}
    items = [node("n1"), slice_("n1", [tainted, gpu(1)]), device_class()]
    items.append(claim("c", request(mode="All")))
    return {"cluster": cluster(*items), "pod": pod("p", ("gpu", "resourceClaimName", "c"))}


@pytest.mark.parametrize(
    ("version", "gates", "result"),
    [
        ("1.35", None, "Scheduled"),
        ("1.36", None, "Unschedulable"),
        ("1.37", None, "Unschedulable"),
        ("1.37", {"DRADeviceTaints": False, "DRADeviceTaintRules": False}, "Scheduled"),
    ],
)
def test_an_all_request_fails_on_an_untolerated_taint(
    version: str, gates: dict[str, bool] | None, result: str
) -> None:
    case = all_of_a_tainted_node()
    out = kubesched.explain(
        case["cluster"],
        case["pod"],
        CONFIG,
        kubernetes_version=version,
        feature_gates=gates,
    )
    assert out["result"] == result
    if result == "Unschedulable":
        assert out["message"] == "0/1 nodes are available: 1 cannot allocate all claims."


def test_a_toleration_with_exists_and_a_value_is_an_input_error() -> None:
    req = request()
    req["exactly"]["tolerations"] = [{"key": "k", "operator": "Exists", "value": "v"}]
    case = [node("n1"), slice_("n1", [gpu(0)]), device_class(), claim("c", req)]
    with pytest.raises(InputError, match=r"exactly\.tolerations\[0\]\.value"):
        kubesched.explain(cluster(*case), pod("p", ("gpu", "resourceClaimName", "c")), CONFIG)
