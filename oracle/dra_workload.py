"""DRAWorkloadResourceClaims in the DRA family's schedule cases (v1.36+): the incoming Pods
are members of one PodGroup that lists some of their claim entries as its own.

``workload_claims`` is called last by ``oracle/dra_cases.py``'s ``dra_schedule_case``, from
a random stream of its own (a seed's other draws stay as they were).  A quarter of the cases
at v1.36 and v1.37 get: GenericWorkload on and DRAWorkloadResourceClaims on or off; a
``basic`` PodGroup ``pg`` whose ``spec.resourceClaims`` copies each of the first Pod's claim
entries with chance 0.7; both Pods in it (``spec.schedulingGroup``).  A template entry the
group lists names one claim for the group: the claim the first Pod's status names (when the
controller made it) becomes the PodGroup's under the gate (its controller reference; now and
then it stays the Pod's own, which the owner check accepts too), the PodGroup's
``status.resourceClaimStatuses`` and, under the gate, the second Pod's status name it too.
Never a claim a member's owner check refuses: a member gated for ever keeps upstream's
PodGroup run from settling (kube-oracle waits until its timeout); the unit tests cover
those messages.  The
resourceclaim controller's work is thus done in the case (both sides find every claim made),
so what is compared is the scheduler's: the owner check by PodGroup
(``resourceclaim.IsForPod``), the reservation for the PodGroup in PreBind (``BindTo``) and
the second member joining a claim reserved for its group (``IsReservedForPod``).

Half the cases with the gate on are simpler: the Pods' only claim is the PodGroup's, from a
template for one GPU, and both select the first Pod's node, so the second joins the claim
the first allocated for the group.

Explain cases are not drawn: kube-oracle's explain snapshot holds no PodGroup objects, so
upstream's DynamicResources (v1.37) cannot find the Pod's PodGroup there.
"""

from __future__ import annotations

import random
from typing import Any

DRA_API = "resource.k8s.io/v1"
GPU = "gpu.example.com"
API_VERSION = {"1.36": "scheduling.k8s.io/v1alpha2", "1.37": "scheduling.k8s.io/v1beta1"}
GROUP = "pg"


def workload_claims(seed: int, index: int, case: dict[str, Any], version: str | None) -> None:
    """Draw the PodGroup and its claims into a schedule ``case`` (in place)."""
    api = API_VERSION.get(version or "")
    if api is None:
        return
    r = random.Random(f"dra-workload/{seed}/{index}")
    pods: list[dict[str, Any]] = case["pods"]
    first = pods[0]
    entries = first["spec"].get("resourceClaims") or []
    if not entries or r.random() >= 0.25:
        return
    gates = dict(case.get("featureGates", {}))
    gates["GenericWorkload"] = True
    gates["DRAWorkloadResourceClaims"] = r.random() < 0.7
    case["featureGates"] = gates
    if gates["DRAWorkloadResourceClaims"] and r.random() < 0.5:
        _one_group_claim(case, api)
        return
    listed = [dict(e) for e in entries if r.random() < 0.7]
    items: list[dict[str, Any]] = case["cluster"]["items"]
    made = {
        s["name"]: s.get("resourceClaimName")
        for s in (first.get("status") or {}).get("resourceClaimStatuses") or []
    }
    claims = {
        x["metadata"]["name"]: x
        for x in items
        if x["kind"] == "ResourceClaim" and x["metadata"].get("namespace", "default") == "default"
    }
    group_status = []
    for e in listed:
        if "resourceClaimTemplateName" not in e:
            continue
        name = made.get(e["name"])
        claim = claims.get(name or "")
        if claim is None:
            continue
        if gates["DRAWorkloadResourceClaims"] and r.random() < 0.85:
            claim["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": api,
                    "kind": "PodGroup",
                    "name": GROUP,
                    "uid": f"uid-podgroup-{GROUP}",
                    "controller": True,
                }
            ]
        group_status.append({"name": e["name"], "resourceClaimName": name})
    pg_obj: dict[str, Any] = {
        "apiVersion": api,
        "kind": "PodGroup",
        "metadata": {"name": GROUP, "namespace": "default", "uid": f"uid-podgroup-{GROUP}"},
        "spec": {"schedulingPolicy": {"basic": {}}},
    }
    if listed:
        pg_obj["spec"]["resourceClaims"] = listed
    if group_status:
        pg_obj["status"] = {"resourceClaimStatuses": group_status}
    items.append(pg_obj)
    # with the gate off the controller makes the second Pod's claims of its own
    shared = {s["name"]: s for s in group_status} if gates["DRAWorkloadResourceClaims"] else {}
    for p in pods:
        p["spec"]["schedulingGroup"] = {"podGroupName": GROUP}
        if p is first or not shared:
            continue
        statuses = [shared[e["name"]] for e in entries if e["name"] in shared]
        if statuses:
            p.setdefault("status", {})["resourceClaimStatuses"] = statuses


def _one_group_claim(case: dict[str, Any], api: str) -> None:
    """The Pods' only claim is the PodGroup's, made from a template for one GPU (the
    controller's work done: owned by the PodGroup, named in its status and the Pods'), and
    they may share a node (both select the first Pod's, nothing else requested)."""
    items: list[dict[str, Any]] = case["cluster"]["items"]
    name = "pg-gpu-abcde"
    spec = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": GPU}}]}}
    meta = {"name": "group-gpu", "namespace": "default"}
    items.append({"apiVersion": DRA_API, "kind": "ResourceClaimTemplate", "metadata": meta,
                  "spec": {"spec": spec}})  # fmt: skip
    owner = {"apiVersion": api, "kind": "PodGroup", "name": GROUP,
             "uid": f"uid-podgroup-{GROUP}", "controller": True}  # fmt: skip
    items.append({"apiVersion": DRA_API, "kind": "ResourceClaim",
                  "metadata": {"name": name, "namespace": "default", "uid": f"uid-claim-{name}",
                               "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
                               "ownerReferences": [owner]},
                  "spec": spec})  # fmt: skip
    entry = {"name": "gpu", "resourceClaimTemplateName": "group-gpu"}
    status = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": name}]}
    pg_meta = {"name": GROUP, "namespace": "default", "uid": f"uid-podgroup-{GROUP}"}
    items.append({"apiVersion": api, "kind": "PodGroup", "metadata": pg_meta,
                  "spec": {"schedulingPolicy": {"basic": {}}, "resourceClaims": [entry]},
                  "status": status})  # fmt: skip
    # both on the first Pod's node, when it names one (upstream breaks ties at random)
    where = case["pods"][0]["spec"].get("nodeSelector")
    for p in case["pods"]:
        p["spec"]["schedulingGroup"] = {"podGroupName": GROUP}
        p["spec"]["resourceClaims"] = [dict(entry)]
        p["spec"].pop("initContainers", None)
        p["spec"].pop("nodeSelector", None)
        if where:
            p["spec"]["nodeSelector"] = dict(where)
        only = {"name": "c", "image": "app", "resources": {"claims": [{"name": "gpu"}]}}
        p["spec"]["containers"] = [only]
        p["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": name}]}
