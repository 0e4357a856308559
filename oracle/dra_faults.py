"""Declared faults of DynamicResources' claim writes in the DRA family's schedule cases
(issue 30 item 3: upstream's binding cycle beyond its successful path).

``claim_faults`` is called last by ``oracle/dra_cases.py``'s ``dra_schedule_case``, from a
random stream of its own (a seed's other draws stay as they were), at v1.34 only (the
release the coverage run measures), and not with DRADeviceBindingConditions on (PreBind's
wait for binding conditions, which those cases reach, comes after the writes a fault
fails).  In about half of the other cases whose Pods name a claim it
declares ``claimFaults`` (kube-oracle's ``claimfaults.go`` plays them, kubesched's
``kubesched.schedule(claim_faults=)`` models them, ``kubesched.plugins.dynamicresources.
faults``) on one or two of the claims the submitted Pods use (named directly, or generated
from a template and named in the first Pod's status):

- ``refuseStatus``: PreBind's allocation or reservation refused every time (the Pod ends
  ``Error``; with two claims, the first reserved then unreserved), or PostFilter's
  deallocation of a released claim;
- ``refuseUpdate``: the finalizer PreBind adds before an allocation refused;
- ``conflict``: one Conflict, which PreBind's retry reads past (PostFilter's deallocation
  fails once);

(``allocatedElsewhere``, another scheduler allocating the claim alike just before PreBind's
write, and ``deleted``, the claim deleted just before it, are declared by the tests only:
see ``KINDS``.)

When the incoming Pod asks for an extended resource a DeviceClass backs
(DRAExtendedResource), half the time the claim PreBind creates for it is refused its status
(keyed by its ``generateName``, ``<pod>-extended-resources-``): Unreserve deletes the created
claim again.
"""

from __future__ import annotations

import random
from typing import Any

KINDS = ["refuseStatus", "refuseStatus", "refuseUpdate", "conflict"]
"""``allocatedElsewhere`` is not drawn: seed 2's DRA schedules 137 (two Pods sharing the
claim on two nodes) and 187 (beside a released claim PostFilter deallocates) end otherwise
upstream (docs/fidelity.md); tests/oracle/test_dra_faults.py compares it on its own.
``deleted`` is not drawn either: upstream's answer then depends on a race between its claim
informer and its failure handler (``Error`` after one attempt, or ``Unschedulable`` after
two; docs/fidelity.md), so one ask cannot judge kubesched's; the same test asks again."""


def claim_faults(seed: int, index: int, case: dict[str, Any], version: str | None) -> None:
    """Draw ``claimFaults`` into a schedule ``case`` (in place)."""
    if version not in (None, "1.34"):
        return
    r = random.Random(f"dra-faults/{seed}/{index}")
    if r.random() >= 0.5 or (case.get("featureGates") or {}).get("DRADeviceBindingConditions"):
        return  # with binding conditions, PreBind's wait for them is what the case reaches
    pods: list[dict[str, Any]] = case["pods"]
    names: list[str] = []
    for pod in pods:
        for entry in pod["spec"].get("resourceClaims") or []:
            if entry.get("resourceClaimName") and entry["resourceClaimName"] not in names:
                names.append(entry["resourceClaimName"])
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("resourceClaimName") and status["resourceClaimName"] not in names:
                names.append(status["resourceClaimName"])
    present = {
        x["metadata"]["name"]
        for x in case["cluster"]["items"]
        if x["kind"] == "ResourceClaim" and x["metadata"].get("namespace", "default") == "default"
    }
    names = [n for n in names if n in present]
    faults: dict[str, str] = {}
    for name in r.sample(names, min(len(names), r.randint(1, 2))):
        faults[f"ResourceClaim/default/{name}"] = r.choice(KINDS)
    gates = case.get("featureGates") or {}
    first = pods[0]
    asks = any(
        k.startswith("example.com/")
        for c in first["spec"].get("containers", []) + first["spec"].get("initContainers", [])
        for k in (c.get("resources") or {}).get("requests", {})
    )
    if gates.get("DRAExtendedResource") and asks and r.random() < 0.5:
        name = first["metadata"]["name"]
        faults[f"ResourceClaim/default/{name}-extended-resources-"] = "refuseStatus"
    if faults:
        case["claimFaults"] = faults
