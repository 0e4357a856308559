"""DynamicResources' PodGroupPostFilter (v1.37, upstream ``DynamicResources.PodGroupPostFilter``
and ``deallocatePodGroupClaims``): after a PodGroup's algorithm is Unschedulable, the claim
that kept a member off its node is deallocated, so the group's retry allocates it afresh.

The claim ``released`` is allocated on n1 (by name), from a pool whose slice selects zone
``a`` (both nodes); the group's member ``new`` must run on n0.  kubesched's PodGroupPostFilter
used to free nothing, and ``new`` stayed Unschedulable with ``resourceclaim not available on
the node`` (v1.37 DRA schedule seed 351 cases 17 and 54).
"""

from __future__ import annotations

import copy
from typing import Any

import kubesched

GPU = "gpu.example.com"
GROUP_REF = {
    "apiGroup": "scheduling.k8s.io",
    "resource": "podgroups",
    "name": "pg",
    "uid": "uid-pg",
}


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "zone": "a"}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
    }


def _cluster(reserved_for: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Two nodes of zone ``a``, a pool of two devices for the zone, and ``released``
    allocated its second device on n1 alone, reserved for ``reserved_for``."""
    on_n1 = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    zone = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    allocation = {
        "devices": {"results": [{"request": "r", "driver": GPU, "pool": "p", "device": "dev-1"}]},
        "nodeSelector": {"nodeSelectorTerms": [on_n1]},
    }
    status: dict[str, Any] = {"allocation": allocation}
    if reserved_for:
        status["reservedFor"] = reserved_for
    return [
        _node("n0"),
        _node("n1"),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "p"},
            "spec": {
                "driver": GPU,
                "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "nodeSelector": {"nodeSelectorTerms": [zone]},
                "devices": [{"name": "dev-0"}, {"name": "dev-1"}],
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": GPU},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "released", "namespace": "default", "uid": "uid-released"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": GPU}}]}},
            "status": status,
        },
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "default", "uid": "uid-pg"},
            "spec": {
                "schedulingPolicy": {"basic": {}},
                "resourceClaims": [{"name": "c", "resourceClaimName": "released"}],
            },
        },
    ]


def _member() -> dict[str, Any]:
    """``new``: the PodGroup's member, on n0, using ``released`` as the group does."""
    resources = {"requests": {"cpu": "1"}, "claims": [{"name": "c"}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "new", "namespace": "default", "uid": "uid-new"},
        "spec": {
            "containers": [{"name": "c", "image": "app", "resources": resources}],
            "resourceClaims": [{"name": "c", "resourceClaimName": "released"}],
            "nodeSelector": {"kubernetes.io/hostname": "n0"},
            "preemptionPolicy": "Never",
            "schedulingGroup": {"podGroupName": "pg"},
        },
    }


def _schedule(items: list[dict[str, Any]], gates: dict[str, bool]) -> dict[str, Any]:
    cluster = {"apiVersion": "v1", "kind": "List", "items": copy.deepcopy(items)}
    out = kubesched.schedule(
        cluster, [_member()], None, kubernetes_version="1.37", feature_gates=gates
    )
    new: dict[str, Any] = out["pods"]["default/new"]
    return new


def test_a_members_claim_reserved_for_nobody_is_deallocated_for_the_retry() -> None:
    """Step 1 (each member's own PostFilter): ``released`` is reserved for nobody."""
    new = _schedule(_cluster([]), {"GenericWorkload": True})
    assert (new["result"], new["node"], new["attempts"]) == ("Scheduled", "n0", 2), new


def test_a_claim_reserved_for_the_podgroup_alone_is_deallocated() -> None:
    """Step 2 (DRAWorkloadResourceClaims): the member's own PostFilter frees nothing (the
    claim is reserved for the PodGroup), the group's ``deallocatePodGroupClaims`` does."""
    gates = {"GenericWorkload": True, "DRAWorkloadResourceClaims": True}
    new = _schedule(_cluster([GROUP_REF]), gates)
    assert (new["result"], new["node"], new["attempts"]) == ("Scheduled", "n0", 2), new


def test_a_claim_of_another_consumer_stays() -> None:
    """A claim another Pod also holds is not deallocated: the member never fits."""
    other = {"resource": "pods", "name": "run-0", "uid": "uid-run-0"}
    gates = {"GenericWorkload": True, "DRAWorkloadResourceClaims": True}
    new = _schedule(_cluster([GROUP_REF, other]), gates)
    assert new["result"] == "Unschedulable", new
    assert "resourceclaim not available on the node" in new["message"]
