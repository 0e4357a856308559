"""explain for DRA device claims: per node, which request cannot be satisfied and why (beside
upstream's ``cannot allocate all claims``), and the ``capacity`` object (short or fragmented)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import kubesched
from kubesched.cli import main
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
)

CANNOT = "cannot allocate all claims"


def explain(*items: dict[str, Any], the_pod: dict[str, Any]) -> dict[str, Any]:
    return kubesched.explain(cluster(*items), the_pod, CONFIG)


def uses(name: str) -> tuple[str, str, str]:
    return ("gpu", "resourceClaimName", name)


def taken(name: str, node_name: str, devices: range) -> dict[str, Any]:
    """A claim holding ``devices`` of ``node_name``'s slice."""
    c = claim(name, request(count=len(devices)))
    results = [
        {"request": "gpu", "driver": DRIVER, "pool": node_name, "device": f"gpu-{i}"}
        for i in devices
    ]
    c["status"] = {
        "allocation": {"devices": {"results": results}},
        "reservedFor": [{"resource": "pods", "name": "x", "uid": f"u-{name}"}],
    }
    return c


def busy_nodes(n: int, per_node: int, used: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [device_class()]
    for i in range(n):
        items += [node(f"n{i}"), gpus(f"n{i}", per_node)]
        if used:
            items.append(taken(f"held-{i}", f"n{i}", range(used)))
    return items


def devices_entry(out: dict[str, Any]) -> dict[str, Any]:
    return next(e for e in out["capacity"]["resources"] if e["resource"] == "devices")


def test_free_devices_spread_over_nodes_are_fragmented() -> None:
    out = explain(*busy_nodes(4, 4, 3), claim("c", request(count=2)), the_pod=pod("p", uses("c")))
    assert out["result"] == "Unschedulable"
    assert out["nodes"]["n0"]["reasons"] == [CANNOT]  # upstream's reason, unchanged
    assert out["nodes"]["n0"]["devices"] == [
        {
            "claim": "default/c",
            "request": "gpu",
            "deviceClass": DRIVER,
            "needed": 2,
            "matching": 4,
            "free": 1,
            "problem": "too few free",
        }
    ]
    cap = out["capacity"]
    assert (cap["verdict"], cap["eligibleNodes"]) == ("fragmented", 4)
    e = devices_entry(out)
    assert (e["claim"], e["request"], e["deviceClass"]) == ("default/c", "gpu", DRIVER)
    assert (e["needed"], e["freeTotal"], e["maxFreeOnEligibleNode"]) == (2, 4, 1)
    assert e["message"] == (
        f"claim default/c request gpu (class {DRIVER}): 4 matching devices free in the cluster, "
        "at most 1 on any of the 4 nodes that pass the other filters; the Pod needs 2 on one node"
    )


def test_too_few_free_devices_in_the_whole_cluster_is_short() -> None:
    out = explain(*busy_nodes(2, 4, 3), claim("c", request(count=3)), the_pod=pod("p", uses("c")))
    assert out["capacity"]["verdict"] == "short"
    assert (devices_entry(out)["freeTotal"], devices_entry(out)["verdict"]) == (2, "short")
    assert out["capacity"]["message"].startswith("short of capacity: claim default/c request gpu")


def test_no_matching_device_and_too_few_matching() -> None:
    h100 = f'device.attributes["{DRIVER}"].model == "h100"'
    out = explain(node("a"), node("h"), gpus("a", 4), gpus("h", 1, model="h100"), device_class(),
                  claim("c", request(count=2, selectors=(h100,))),
                  the_pod=pod("p", uses("c")))  # fmt: skip
    assert [d["problem"] for d in out["nodes"]["a"]["devices"]] == ["no matching device"]
    assert [d["problem"] for d in out["nodes"]["h"]["devices"]] == ["too few matching"]
    assert out["capacity"]["verdict"] == "tooLarge"
    assert devices_entry(out)["maxCapacityOnEligibleNode"] == 1


def test_a_constraint_unmet_is_named() -> None:
    def numa(i: int, n: int) -> dict[str, Any]:
        return gpu(i, numa={"int": n})

    c = claim("c", request(count=2),
              constraints=[{"requests": ["gpu"], "matchAttribute": f"{DRIVER}/numa"}])  # fmt: skip
    out = explain(node("split"), slice_("split", [numa(0, 0), numa(1, 1)]), device_class(), c,
                  the_pod=pod("p", uses("c")))  # fmt: skip
    (d,) = out["nodes"]["split"]["devices"]
    assert (d["matching"], d["free"], d["problem"]) == (2, 2, "constraint unmet")
    assert out["capacity"]["verdict"] == "notTogether"


def test_requests_competing_for_the_same_devices() -> None:
    c = claim("c", request("a", 2), request("b", 2))
    out = explain(node("n1"), gpus("n1", 3), device_class(), c, the_pod=pod("p", uses("c")))
    problems = {d["request"]: d["problem"] for d in out["nodes"]["n1"]["devices"]}
    assert problems == {"a": "too few free together", "b": "too few free together"}


def test_first_available_counts_at_its_best_alternative() -> None:
    first = {"name": "g", "firstAvailable": [
        {"name": "big", "deviceClassName": DRIVER, "count": 8},
        {"name": "small", "deviceClassName": DRIVER, "count": 1}]}  # fmt: skip
    c = claim("c", first, request("more", 4))
    out = explain(*busy_nodes(3, 4, 3), c, the_pod=pod("p", uses("c")))  # 3 free, 1 per node
    by_request = {e["request"]: e["verdict"] for e in out["capacity"]["resources"][2:]}
    assert by_request == {"g/big": "tooLarge", "g/small": "fits", "more": "short"}
    assert out["capacity"]["verdict"] == "short"  # "g" is served by its small alternative
    assert "g/big" not in out["capacity"]["message"]


def test_a_scheduled_pod_keeps_its_keys_and_rejected_nodes_say_why() -> None:
    out = explain(*busy_nodes(2, 4, 3), node("free"), gpus("free", 4),
                  claim("c", request(count=2)), the_pod=pod("p", uses("c")))  # fmt: skip
    assert (out["result"], out["selectedNode"]) == ("Scheduled", "free")
    assert "capacity" not in out
    assert out["nodes"]["n0"]["devices"][0]["problem"] == "too few free"
    assert "devices" not in out["nodes"]["free"]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    snap = cluster(*busy_nodes(3, 4, 3), claim("c", request(count=2)))
    (tmp_path / "c.json").write_text(json.dumps(snap))
    (tmp_path / "p.json").write_text(json.dumps(pod("p", uses("c"))))
    return {"cluster": tmp_path / "c.json", "pod": tmp_path / "p.json"}


def test_cli_json_and_text(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    args = ["explain", "--cluster", str(files["cluster"]), "--pod", str(files["pod"])]
    assert main([*args, "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["capacity"]["verdict"] == "fragmented"
    assert out["nodes"]["n1"]["devices"][0]["problem"] == "too few free"
    assert main([*args, "-o", "text"]) == 0
    text = capsys.readouterr().out
    assert "Capacity: enough free in total but fragmented: claim default/c request gpu" in text
    assert (
        "cannot allocate all claims (claim default/c request gpu: too few free, "
        "1 of 4 matching free, needs 2)"
    ) in text


def test_an_incomplete_pool_counts_from_v135_as_the_allocator_sees_it() -> None:
    # node a's devices are in a pool of two slices of which one is published: v1.34's
    # allocator takes them, v1.35+'s passes over the pool
    items = [node("a"), slice_("a", [gpu(0), gpu(1)], count=2), device_class(),
             claim("c", request(count=3))]  # fmt: skip
    the_pod = pod("p", uses("c"))
    old = kubesched.explain(cluster(*items), the_pod, CONFIG, kubernetes_version="1.34")
    assert [d["problem"] for d in old["nodes"]["a"]["devices"]] == ["too few matching"]
    new = kubesched.explain(cluster(*items), the_pod, CONFIG, kubernetes_version="1.37")
    assert [d["problem"] for d in new["nodes"]["a"]["devices"]] == ["no matching device"]
