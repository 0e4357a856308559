"""Claims a PodGroup shares among its Pods (DRAWorkloadResourceClaims, v1.36 alpha, v1.37
beta): the PodGroup half of upstream's ``k8s.io/dynamic-resource-allocation/resourceclaim``
(v1.37), read from the manifests as the API server stores them.

A PodGroup's ``spec.resourceClaims`` lists claims by ``name`` with a ``resourceClaimName`` or
a ``resourceClaimTemplateName``; a member Pod's claim entry that matches one of them in all
three fields is the group's claim (:func:`bind_to`): it is reserved for the PodGroup, not the
Pod, and a claim made from the template is made once for the group (owned by the PodGroup,
named in the PodGroup's ``status.resourceClaimStatuses`` and then in each member's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api import objects as api

GROUP = "scheduling.k8s.io"
"""The API group of PodGroups (``schedulingapi.GroupName``)."""
RESOURCE = "podgroups"

Obj = Mapping[str, Any]
Entry = tuple[str, str, str]
"""A claim entry: ``(name, resourceClaimName, resourceClaimTemplateName)`` ("" when unset)."""


def object_uid(obj: Obj) -> str:
    """``metadata.uid`` of a manifest, or the stand-in kubesched gives objects without one
    (``uid-<Kind>-<namespace>-<name>``, as for claims)."""
    meta = obj.get("metadata") or {}
    uid = meta.get("uid")
    if isinstance(uid, str) and uid:
        return uid
    ns = meta.get("namespace") or "default"
    return f"uid-{obj.get('kind')}-{ns}-{meta.get('name', '')}"


def group_entries(pod_group: Obj) -> list[Entry]:
    """A PodGroup's ``spec.resourceClaims`` as claim entries."""
    out: list[Entry] = []
    for c in (pod_group.get("spec") or {}).get("resourceClaims") or []:
        if isinstance(c, Mapping):
            out.append(
                (
                    str(c.get("name") or ""),
                    str(c.get("resourceClaimName") or ""),
                    str(c.get("resourceClaimTemplateName") or ""),
                )
            )
    return out


def group_statuses(pod_group: Obj) -> dict[str, str]:
    """A PodGroup's ``status.resourceClaimStatuses``: claim entry name -> claim name."""
    out: dict[str, str] = {}
    for s in (pod_group.get("status") or {}).get("resourceClaimStatuses") or []:
        if isinstance(s, Mapping) and s.get("name"):
            out[str(s["name"])] = str(s.get("resourceClaimName") or "")
    return out


def pod_ref(pod: api.Pod) -> dict[str, Any]:
    """The consumer reference for ``pod`` in a claim's ``status.reservedFor``."""
    return {"resource": "pods", "name": pod.name, "uid": pod.uid}


def group_ref(pod_group: Obj) -> dict[str, Any]:
    """The consumer reference for a PodGroup in a claim's ``status.reservedFor``."""
    meta = pod_group.get("metadata") or {}
    return {
        "apiGroup": GROUP,
        "resource": RESOURCE,
        "name": str(meta.get("name", "")),
        "uid": object_uid(pod_group),
    }


def bind_to(pod: api.Pod, pod_group: Obj | None, entry: Entry) -> dict[str, Any]:
    """Upstream ``resourceclaim.BindTo``: the PodGroup's reference when ``pod_group`` (the
    Pod's own; None with the gate off or for a Pod in no group) lists a claim entry equal
    to ``entry``, else the Pod's.  (Upstream's errors need entries validation refuses.)"""
    if pod_group is not None and entry in group_entries(pod_group):
        return group_ref(pod_group)
    return pod_ref(pod)


def is_group_ref(ref: Obj) -> bool:
    """Whether a consumer reference names a PodGroup."""
    return ref.get("apiGroup") == GROUP and ref.get("resource") == RESOURCE


def reserved_for_pod(pod: api.Pod, claim: Obj, accept_group: bool) -> bool:
    """Upstream ``resourceclaim.IsReservedForPod``: ``pod`` is in the claim's
    ``status.reservedFor``, or (``accept_group``: DRAWorkloadResourceClaims) the Pod's
    PodGroup is, matched by name (a Pod does not know its PodGroup's uid)."""
    for ref in (claim.get("status") or {}).get("reservedFor") or []:
        if not isinstance(ref, Mapping):
            continue
        if ref.get("uid") == pod.uid:
            return True
        if (
            accept_group
            and is_group_ref(ref)
            and pod.scheduling_group
            and ref.get("name") == pod.scheduling_group
        ):
            return True
    return False


def owned_by_pods_group(pod: api.Pod, claim: Obj) -> bool:
    """Upstream ``isForPodGroupByPod``: the claim's controller is the Pod's PodGroup, by
    name, kind and API group (its version ignored)."""
    if not pod.scheduling_group:
        return False
    for o in (claim.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(o, Mapping) and o.get("controller"):
            return (
                o.get("name") == pod.scheduling_group
                and o.get("kind") == "PodGroup"
                and str(o.get("apiVersion", "")).startswith(GROUP + "/")
            )
    return False


def not_for_pod(
    pod: api.Pod, claim: Obj, owner_uids: tuple[str, ...], accept_group: bool, v136: bool
) -> str:
    """Upstream ``resourceclaim.IsForPod``'s error for a claim made from a template, "" when
    the claim is the Pod's (its controller) or, with ``accept_group``, its PodGroup's.
    ``v136``: the release's wording (v1.36+ names the Pod with a capital P)."""
    if pod.uid in owner_uids:
        return ""
    meta = claim.get("metadata") or {}
    key = f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"
    if accept_group and pod.scheduling_group:
        if owned_by_pods_group(pod, claim):
            return ""
        return (
            f"ResourceClaim {key} was not created for Pod {pod.key} (neither Pod nor PodGroup "
            f"{pod.scheduling_group} is the owner)"
        )
    if v136:
        return f"ResourceClaim {key} was not created for Pod {pod.key} (Pod is not owner)"
    return f"ResourceClaim {key} was not created for pod {pod.key} (pod is not owner)"
