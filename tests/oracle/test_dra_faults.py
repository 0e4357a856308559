"""``claimFaults`` against upstream: kube-oracle's fake API server plays each declared fault of
DynamicResources' claim writes (``oracle/internal/oracle/claimfaults.go``) and the limit of
256 consumers in ``status.reservedFor``; kubesched's ``schedule(claim_faults=)`` models them
(``kubesched.plugins.dynamicresources.faults``).  Upstream's answers hold the model."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins._dra import CONFIG, claim, cluster, device_class, gpus, node, pod

RESULT = {"request": "gpu", "driver": "gpu.example.com", "pool": "n0", "device": "gpu-0"}


def _on(name: str) -> dict[str, Any]:
    """A node selector for the node ``name``."""
    field = {"key": "metadata.name", "operator": "In", "values": [name]}
    return {"nodeSelectorTerms": [{"matchFields": [field]}]}


ALLOCATED = {"devices": {"results": [RESULT]}, "nodeSelector": _on("n0")}


def _two_claims() -> tuple[dict[str, Any], list[Any]]:
    items = [node("n0"), gpus("n0", 2), device_class(), claim("a"), claim("b")]
    return cluster(*items), [
        pod("p", ("x", "resourceClaimName", "a"), ("y", "resourceClaimName", "b"))
    ]


def _full() -> tuple[dict[str, Any], list[Any]]:
    full = claim("a")
    reserved = [{"resource": "pods", "name": f"r{i}", "uid": f"uid-r{i}"} for i in range(256)]
    full["status"] = {"allocation": ALLOCATED, "reservedFor": reserved}
    items = [node("n0"), gpus("n0", 2), device_class(), full]
    return cluster(*items), [pod("p", ("x", "resourceClaimName", "a"))]


def _released() -> tuple[dict[str, Any], list[Any]]:
    gone = claim("a")
    gone["status"] = {"allocation": {**ALLOCATED, "nodeSelector": _on("gone")}}
    items = [node("n0"), gpus("n0", 2), device_class(), gone]
    return cluster(*items), [pod("p", ("x", "resourceClaimName", "a"))]


@pytest.mark.parametrize(
    ("world", "faults", "want"),
    [
        (_two_claims, {"ResourceClaim/default/b": "refuseStatus"}, "Error"),
        (_two_claims, {"ResourceClaim/default/a": "refuseUpdate"}, "Error"),
        (_two_claims, {"ResourceClaim/default/a": "conflict"}, "Scheduled"),
        (_two_claims, {"ResourceClaim/default/b": "allocatedElsewhere"}, "Scheduled"),
        (_full, {}, "Error"),
        (_released, {"ResourceClaim/default/a": "refuseStatus"}, "Unschedulable"),
        (_released, {"ResourceClaim/default/a": "conflict"}, "Unschedulable"),
        (_released, {}, "Scheduled"),
    ],
)
def test_declared_claim_faults_end_as_upstream(
    schedule_oracle: Any, world: Any, faults: dict[str, str], want: str
) -> None:
    import kubesched

    state, pods = world()
    request: dict[str, Any] = {"cluster": state, "pods": pods, "config": CONFIG}
    if faults:
        request["claimFaults"] = faults
    theirs = schedule_oracle.ask(request)["pods"]["default/p"]
    mine = kubesched.schedule(state, pods, CONFIG, kubernetes_version="1.34", claim_faults=faults)[
        "pods"
    ]["default/p"]
    assert theirs["result"] == mine["result"] == want, (theirs, mine)
    if want == "Unschedulable":
        assert theirs["message"] == mine["message"]
    assert theirs.get("node") == mine.get("node")


@pytest.mark.parametrize("world", [_two_claims, _full])
def test_a_claim_deleted_before_prebind_ends_as_one_of_upstreams_answers(
    schedule_oracle: Any, world: Any
) -> None:
    """``deleted``: the claim is gone when PreBind first writes it (NotFound, before the
    API server's validation of 257 consumers).  Upstream's retry is held at PreEnqueue
    (``Error`` after one attempt, reported by that attempt) or, when its failure handler
    requeues the Pod before the informer delivers the deletion, fails PreFilter
    (``Unschedulable`` after two): a race (2 and 4 of 8 asks the first, session 23).
    kubesched's informer hears the deletion at once: the first."""
    import kubesched

    state, pods = world()
    faults = {"ResourceClaim/default/a": "deleted"}
    request = {"cluster": state, "pods": pods, "config": CONFIG, "claimFaults": faults}
    mine = kubesched.schedule(state, pods, CONFIG, kubernetes_version="1.34", claim_faults=faults)[
        "pods"
    ]["default/p"]
    assert (mine["result"], mine["attempts"]) == ("Error", 1)
    assert 'resourceclaims.resource.k8s.io "a" not found' in mine["message"]
    held = 'could not find ResourceClaim "default/a"'
    for _ in range(3):
        theirs = schedule_oracle.ask(request)["pods"]["default/p"]
        answer = (theirs["result"], theirs.get("attempts"))
        assert answer in {("Error", 1), ("Unschedulable", 2)}, theirs
        assert ("not found" if answer[0] == "Error" else held) in theirs["message"], theirs
