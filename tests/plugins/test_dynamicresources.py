"""DynamicResources through ``kubesched.explain``: per-node verdicts as upstream v1.34."""

from __future__ import annotations

from typing import Any

import pytest

import kubesched
from tests.plugins._dra import (
    CONFIG,
    DRIVER,
    claim,
    cluster,
    device_class,
    gpu,
    gpus,
    node,
    pod,
    request,
    slice_,
    template,
)

NAME = "DynamicResources"
CANNOT = "cannot allocate all claims"
MEM = f'device.capacity["{DRIVER}"].memory'


def explain(*items: Any, the_pod: Any) -> dict[str, Any]:
    return kubesched.explain(cluster(*items), the_pod, CONFIG)


def verdicts(out: dict[str, Any]) -> dict[str, tuple[bool, str | None, list[str]]]:
    return {n: (v["feasible"], v["plugin"], v["reasons"]) for n, v in out["nodes"].items()}


def uses(name: str) -> tuple[str, str, str]:
    return ("gpu", "resourceClaimName", name)


def test_a_node_without_enough_free_devices_cannot_allocate_all_claims() -> None:
    out = explain(node("n1"), node("n2"), gpus("n1", 2), gpus("n2", 4), device_class(),
                  claim("c", request(count=3)), the_pod=pod("p", uses("c")))  # fmt: skip
    assert out["result"] == "Scheduled" and out["selectedNode"] == "n2"
    assert verdicts(out)["n1"] == (False, NAME, [CANNOT])
    assert out["nodes"]["n2"]["feasible"]


def test_devices_allocated_to_another_claim_are_not_offered_again() -> None:
    taken = claim("other", request(count=2))
    taken["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": f"gpu-{i}"}
                    for i in (0, 1)
                ]
            }
        },
        "reservedFor": [{"resource": "pods", "name": "x", "uid": "u"}],
    }
    out = explain(node("n1"), gpus("n1", 3), device_class(), taken, claim("c", request(count=2)),
                  the_pod=pod("p", uses("c")))  # fmt: skip
    assert out["result"] == "Unschedulable"
    assert out["message"].startswith("0/1 nodes are available: 1 cannot allocate all claims.")


def test_a_cel_capacity_selector_picks_the_nodes_with_big_enough_devices() -> None:
    big = f'{MEM}.compareTo(quantity("80Gi")) >= 0'
    out = explain(node("small"), node("large"), gpus("small", 4, mem="40Gi"),
                  gpus("large", 1, mem="80Gi"), device_class(),
                  claim("c", request(selectors=(big,))), the_pod=pod("p", uses("c")))  # fmt: skip
    assert out["selectedNode"] == "large"
    assert verdicts(out)["small"] == (False, NAME, [CANNOT])


def test_the_class_selectors_apply_too() -> None:
    h100 = f'device.attributes["{DRIVER}"].model == "h100"'
    out = explain(node("n1"), node("n2"), gpus("n1", 4), gpus("n2", 1, model="h100"),
                  device_class(DRIVER, h100), claim("c", request()),
                  the_pod=pod("p", uses("c")))  # fmt: skip
    assert [n for n, v in out["nodes"].items() if v["feasible"]] == ["n2"]


def test_match_attribute_needs_every_device_with_the_same_value() -> None:
    def numa(i: int, n: int) -> dict[str, Any]:
        return gpu(i, numa={"int": n})

    split = slice_("split", [numa(0, 0), numa(1, 1)])
    paired = slice_("paired", [numa(0, 0), numa(1, 1), numa(2, 1)])
    c = claim("c", request(count=2),
              constraints=[{"requests": ["gpu"], "matchAttribute": f"{DRIVER}/numa"}])  # fmt: skip
    out = explain(node("split"), node("paired"), split, paired, device_class(), c,
                  the_pod=pod("p", uses("c")))  # fmt: skip
    assert verdicts(out)["split"] == (False, NAME, [CANNOT])
    assert out["nodes"]["paired"]["feasible"]


def test_allocation_mode_all_takes_every_matching_device_and_needs_one() -> None:
    c = claim("c", request(count=None, mode="All"))
    out = explain(node("n1"), node("n2"), gpus("n1", 3), device_class(), c,
                  the_pod=pod("p", uses("c")))  # fmt: skip
    assert out["nodes"]["n1"]["feasible"]
    assert verdicts(out)["n2"] == (False, NAME, [CANNOT])


def test_first_available_falls_back_to_the_next_alternative() -> None:
    alternatives = {
        "name": "gpu",
        "firstAvailable": [
            {"name": "four", "deviceClassName": DRIVER, "count": 4},
            {"name": "two", "deviceClassName": DRIVER, "count": 2},
        ],
    }
    c = claim("c", alternatives)
    out = explain(node("n1"), node("n2"), gpus("n1", 2), gpus("n2", 1), device_class(), c,
                  the_pod=pod("p", uses("c")))  # fmt: skip
    assert out["nodes"]["n1"]["feasible"]
    assert verdicts(out)["n2"] == (False, NAME, [CANNOT])


def test_slices_for_all_nodes_or_a_node_selector_reach_those_nodes() -> None:
    everywhere = slice_(None, [gpu(0)], name="fabric", pool="fabric", allNodes=True)
    zone_a = slice_(
        None,
        [gpu(0), gpu(1)],
        name="zone-a",
        pool="zone-a",
        nodeSelector={
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
            ]
        },
    )
    c = claim("c", request(count=2))
    out = explain(node("a1", {"zone": "a"}), node("b1", {"zone": "b"}), everywhere, zone_a,
                  device_class(), c, the_pod=pod("p", uses("c")))  # fmt: skip
    assert out["nodes"]["a1"]["feasible"]
    assert verdicts(out)["b1"] == (False, NAME, [CANNOT])


def test_only_the_newest_pool_generation_counts() -> None:
    old = slice_("n1", [gpu(i) for i in range(4)], name="old", generation=1)
    new = slice_("n1", [gpu(0)], name="new", generation=2)
    out = explain(node("n1"), old, new, device_class(), claim("c", request(count=2)),
                  the_pod=pod("p", uses("c")))  # fmt: skip
    assert verdicts(out)["n1"] == (False, NAME, [CANNOT])


def test_a_missing_class_is_unschedulable_everywhere_at_prefilter() -> None:
    c = claim("c", request(klass="fpga.example.com"))
    out = explain(node("n1"), gpus("n1", 2), device_class(), c, the_pod=pod("p", uses("c")))
    reason = "request gpu: device class fpga.example.com does not exist"
    assert verdicts(out)["n1"] == (False, NAME, [reason])
    assert out["message"].startswith(f"0/1 nodes are available: {reason}.")


def test_a_missing_claim_keeps_the_pod_out_of_the_queue() -> None:
    out = explain(node("n1"), gpus("n1", 2), device_class(), the_pod=pod("p", uses("nope")))
    assert out["result"] == "Gated"
    assert out["message"] == 'could not find ResourceClaim "default/nope"'


def test_a_template_claim_not_created_yet_keeps_the_pod_out() -> None:
    the_pod = pod("p", ("gpu", "resourceClaimTemplateName", "t"))
    out = explain(node("n1"), gpus("n1", 2), device_class(), template("t"), the_pod=the_pod)
    assert out["result"] == "Gated"
    assert out["message"] == 'pod "default/p": ResourceClaim not created yet'


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("1.35", "ResourceClaim default/c was not created for pod default/p (pod is not owner)"),
        # v1.36+ resourceclaim.IsForPod names the Pod with a capital P
        ("1.36", "ResourceClaim default/c was not created for Pod default/p (Pod is not owner)"),
        ("1.37", "ResourceClaim default/c was not created for Pod default/p (Pod is not owner)"),
    ],
)
def test_a_generated_claim_must_be_owned_by_the_pod(version: str, message: str) -> None:
    the_pod = pod("p", ("gpu", "resourceClaimTemplateName", "t"), statuses=(("gpu", "c"),))
    items = cluster(node("n1"), gpus("n1", 2), device_class(), claim("c"))
    out = kubesched.explain(items, the_pod, CONFIG, kubernetes_version=version)
    assert out["result"] == "Gated"
    assert out["message"] == message


def test_a_shared_claim_already_allocated_pins_its_pods_to_its_node() -> None:
    shared = claim("shared", request())
    shared["status"] = {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n2",
                                 "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}},
        "reservedFor": [{"resource": "pods", "name": "first", "uid": "uid-first"}]}  # fmt: skip
    out = explain(node("n1"), node("n2"), gpus("n1", 1), gpus("n2", 1), device_class(), shared,
                  the_pod=pod("second", uses("shared")))  # fmt: skip
    assert out["selectedNode"] == "n2"
    assert verdicts(out)["n1"] == (False, NAME, ["resourceclaim not available on the node"])


def test_a_cel_runtime_error_aborts_the_attempt_with_the_selector_named() -> None:
    c = claim("c", request(selectors=(f'device.attributes["{DRIVER}"].missing == "x"',)))
    out = explain(node("n1"), gpus("n1", 1), device_class(), c, the_pod=pod("p", uses("c")))
    assert out["result"] == "Error"
    assert out["message"].endswith(
        "claim default/c: selector #0: CEL runtime error: no such key: missing"
    )


def test_a_pod_without_claims_is_not_affected() -> None:
    out = explain(node("n1"), gpus("n1", 1), device_class(), the_pod=pod("p"))
    assert out["result"] == "Scheduled"
    assert "DynamicResources" not in out["nodes"]["n1"]["scores"]


def test_postfilter_deallocates_any_unreachable_claim_not_just_the_first() -> None:
    """Upstream's Filter records every allocated claim a node cannot reach (not the first
    only), so PostFilter finds the claim nobody holds any more behind one a running Pod
    holds, and deallocates it (``oracle/diff.py --family dra --seed 1 --start 313``)."""

    def on_n2(name: str, *consumers: str) -> Any:
        c = claim(name, request())
        c["status"] = {"allocation": {
            "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n2",
                                     "device": f"gpu-{len(consumers)}"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}},
            "reservedFor": [{"resource": "pods", "name": p, "uid": f"uid-{p}"}
                            for p in consumers]}  # fmt: skip
        return c

    first = pod("first", ("a", "resourceClaimName", "held"), node_name="n2")
    first["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "8"}  # n2 is full
    the_pod = pod("p", ("a", "resourceClaimName", "held"), ("b", "resourceClaimName", "released"))
    items = cluster(node("n1"), node("n2"), gpus("n2", 2), device_class(), on_n2("held", "first"),
                    on_n2("released"), first)  # fmt: skip
    for version in ("1.34", "1.37"):
        out = kubesched.explain(items, the_pod, CONFIG, preemption=True, kubernetes_version=version)
        assert verdicts(out)["n1"] == (False, NAME, ["resourceclaim not available on the node"])
        assert verdicts(out)["n2"] == (False, "NodeResourcesFit", ["Insufficient cpu"])
        message = out["preemption"]["message"]
        assert message.startswith("deallocation of ResourceClaim completed, preemption: "), version
