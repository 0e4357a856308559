"""Declared faults of DynamicResources' claim writes (``kubesched.schedule(claim_faults=)``,
``plugins.dynamicresources.faults``; kube-oracle's ``claimfaults.go`` plays the same) and the
API server's limit of 256 consumers in ``status.reservedFor``: upstream's binding cycle
beyond its successful path (``bindClaim``'s failures, Unreserve, PostFilter's failed
deallocation)."""

from __future__ import annotations

from typing import Any

import pytest

import kubesched
from kubesched.api.errors import InputError
from tests.plugins._dra import CONFIG, claim, cluster, device_class, gpus, node, pod

GONE = {"key": "metadata.name", "operator": "In", "values": ["gone"]}


def _items(*more: Any) -> list[Any]:
    return [node("n0"), gpus("n0", 2), device_class(), claim("a"), claim("b"), *more]


def _pods() -> list[Any]:
    return [pod("p", ("x", "resourceClaimName", "a"), ("y", "resourceClaimName", "b"))]


def _run(faults: dict[str, str], *more: Any) -> dict[str, Any]:
    out: dict[str, Any] = kubesched.schedule(
        cluster(*_items(*more)), _pods(), CONFIG, kubernetes_version="1.34", claim_faults=faults
    )["pods"]["default/p"]
    return out


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        (
            {"ResourceClaim/default/b": "refuseStatus"},
            "add allocation and reservation to claim default/b: resourceclaims.resource.k8s.io "
            '"b" is forbidden: refused (the case\'s claimFaults)',
        ),
        (
            {"ResourceClaim/default/a": "refuseUpdate"},
            "add finalizer to claim default/a: resourceclaims.resource.k8s.io "
            '"a" is forbidden: refused (the case\'s claimFaults)',
        ),
    ],
)
def test_refused_writes_fail_pre_bind_every_attempt(faults: dict[str, str], message: str) -> None:
    """A refused write fails PreBind with upstream's error at every attempt: an Error."""
    out = _run(faults)
    assert out["result"] == "Error"
    assert out["message"].endswith(message)
    assert out["attempts"] > 1


def test_conflict_is_read_past_and_allocated_elsewhere_binds_at_the_next_attempt() -> None:
    """A Conflict is retried within PreBind (the first attempt binds); a claim another
    scheduler allocated in the meantime fails that attempt, and the next reserves it."""
    out = _run({"ResourceClaim/default/a": "conflict"})
    assert (out["result"], out["attempts"]) == ("Scheduled", 1)
    out = _run({"ResourceClaim/default/a": "allocatedElsewhere"})
    assert (out["result"], out["node"], out["attempts"]) == ("Scheduled", "n0", 2)


def test_unreserve_takes_the_pod_out_of_the_claims_its_failed_pre_bind_reserved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Claim ``a`` is written (allocated, reserved for the Pod), ``b``'s write refused:
    Unreserve takes the Pod out of ``a``'s ``reservedFor`` (upstream's patch); ``a`` stays
    allocated."""
    import kubesched.sim.whatif as whatif

    seen: list[Any] = []
    real = whatif.SimCluster

    def keep(*a: Any, **kw: Any) -> Any:
        seen.append(real(*a, **kw))
        return seen[-1]

    monkeypatch.setattr(whatif, "SimCluster", keep)
    out = _run({"ResourceClaim/default/b": "refuseStatus"})
    assert out["result"] == "Error"
    stored = seen[0].api.objects[("ResourceClaim", "default/a")]
    assert stored["status"].get("allocation")
    assert not stored["status"].get("reservedFor")


def test_a_refused_deallocation_fails_post_filter_and_leaves_the_pod_unschedulable() -> None:
    """PostFilter's deallocation of a claim allocated to no node the Pod fits, refused: a
    PostFilter error, which upstream's cycle logs and reports in the Unschedulable answer
    (nothing requeues the Pod), where it was ``deallocation of ResourceClaim completed``
    and the next attempt allocated the claim."""
    released = claim("a")
    released["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": "gpu.example.com", "pool": "gone", "device": "x"}
                ]
            },
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [GONE]}]},
        }
    }
    items = [node("n0"), gpus("n0", 2), device_class(), released]
    pods = [pod("p", ("x", "resourceClaimName", "a"))]
    free = kubesched.schedule(cluster(*items), pods, CONFIG, kubernetes_version="1.34")
    assert free["pods"]["default/p"]["result"] == "Scheduled"  # deallocated, then allocated
    out = kubesched.schedule(
        cluster(*items),
        pods,
        CONFIG,
        kubernetes_version="1.34",
        claim_faults={"ResourceClaim/default/a": "refuseStatus"},
    )["pods"]["default/p"]
    assert out["result"] == "Unschedulable"
    assert out["message"].endswith(
        'resourceclaims.resource.k8s.io "a" is forbidden: refused (the case\'s claimFaults)'
    )


def test_a_claim_at_256_consumers_refuses_the_next() -> None:
    """kube-apiserver's validation: ``status.reservedFor`` holds at most 256 consumers
    (v1.34's scheduler tries the 257th: ``CanBeReserved`` is always true)."""
    full = claim("a")
    full["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": "gpu.example.com", "pool": "n0", "device": "gpu-0"}
                ]
            }
        },
        "reservedFor": [
            {"resource": "pods", "name": f"r{i}", "uid": f"uid-r{i}"} for i in range(256)
        ],
    }
    items = [node("n0"), gpus("n0", 2), device_class(), full]
    pods = [pod("p", ("x", "resourceClaimName", "a"))]
    out = kubesched.schedule(cluster(*items), pods, CONFIG, kubernetes_version="1.34")
    got = out["pods"]["default/p"]
    assert got["result"] == "Error"
    assert "status.reservedFor: Too many: 257: must have at most 256 items" in got["message"]


def test_bad_claim_fault_keys_are_refused() -> None:
    with pytest.raises(InputError, match="ResourceClaim/NAMESPACE/NAME"):
        _run({"ResourceClaim/a": "conflict"})
    with pytest.raises(InputError, match="must be one of"):
        _run({"ResourceClaim/default/a": "nope"})


def test_the_fault_source_check_is_made_once_per_client_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kubesched.plugins.dynamicresources import faults

    class Plain:
        pass

    class Declaring:
        def claim_fault(self, key: str) -> str:
            return "refuseStatus" if key.endswith("/c") else ""

        def claim_fault_once(self, key: str) -> bool:
            return False

    checks: list[type] = []
    real = isinstance

    def counting(obj: Any, cls: Any) -> bool:
        if cls is faults.ClaimFaultSource:
            checks.append(type(obj))
        return real(obj, cls)

    monkeypatch.setattr(faults, "isinstance", counting, raising=False)
    monkeypatch.setattr(faults, "_SOURCE_CLASSES", {})
    claim_c = {"metadata": {"name": "c", "namespace": "default"}}
    for _ in range(3):
        assert faults.post_filter(Plain(), claim_c) == ""
        assert faults.post_filter(Declaring(), claim_c) == faults.forbidden("c")
        written = {**claim_c, "status": {}}
        assert faults.pre_bind(Plain(), claim_c, written, False).error == ""
        assert faults.pre_bind(Declaring(), claim_c, written, False).stored is None
    assert checks == [Plain, Declaring]
