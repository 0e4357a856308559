"""``schedule`` reports Workload API gangs as whole units (``podGroups``): when ``minCount``
members were bound, members running, the PodGroup cycle's condition; and a member's
attempts count every cycle its group ran (not only the cycles it was popped in)."""

from __future__ import annotations

from typing import Any

from kubesched.config import featuregates
from kubesched.sim.whatif import schedule

GATES = featuregates.with_settings("1.37", {"GenericWorkload": True})


def _node(name: str, cpu: str) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": res, "capacity": res},
    }


def _member(name: str, group: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "schedulingGroup": {"podGroupName": group},
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def _group(name: str, min_count: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def test_gangs_reported_whole() -> None:
    cluster = [_node("n0", "4"), _group("fits", 2), _group("short", 3)]
    pods = [_member(f"f{i}", "fits", "1") for i in range(2)]
    pods += [_member(f"s{i}", "short", "2") for i in range(3)]
    out = schedule(cluster, pods, gates=GATES)
    groups = out["podGroups"]
    fits, short = groups["ns/fits"], groups["ns/short"]
    assert (fits["minMember"], fits["running"], fits["phase"]) == (2, 2, "Running")
    assert fits["completeSeconds"] is not None
    assert fits["condition"]["reason"] == "Scheduled"
    assert (short["running"], short["completeAt"]) == (0, None)
    assert short["condition"]["reason"] == "Unschedulable"
    attempts = {k: v["attempts"] for k, v in out["pods"].items() if k.startswith("ns/s")}
    assert len(set(attempts.values())) == 1 and attempts["ns/s0"] > 1


def test_no_pod_groups_without_the_gate() -> None:
    out = schedule([_node("n0", "4")], [_member("f0", "fits", "1")])
    assert "podGroups" not in out
