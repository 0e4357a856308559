"""DRAWorkloadResourceClaims in the DRA family's schedule cases (v1.36+): the incoming Pods
are members of one PodGroup that lists some of their claim entries as its own.

``workload_claims`` is called last by ``oracle/dra_cases.py``'s ``dra_schedule_case``, from
a random stream of its own (a seed's other draws stay as they were).  A quarter of the cases
at v1.36 and v1.37 get GenericWorkload on and DRAWorkloadResourceClaims on or off, and a
``basic`` PodGroup ``pg``.  With the gate on, half of them are the simple case: the Pods'
only claim is the PodGroup's, from a template for one GPU (the controller's work done: the
claim owned by the PodGroup, named in its status and the Pods'), both Pods in the group on
the first Pod's node, so PreBind reserves the claim for the group and the second member
finds it reserved for its group (``BindTo``, ``IsForPod``, ``IsReservedForPod``).

Otherwise the PodGroup's ``spec.resourceClaims`` copies each of the first Pod's claim
entries with chance 0.7 and only the first Pod joins the group (the second keeps its own
claims: two members sharing a claim not allocated yet would meet upstream's sharing of a
pending allocation within one PodGroup cycle, not modelled yet).  Under the gate, a template
entry the group lists names the claim the first Pod's status names, which becomes the
PodGroup's (its controller reference; now and then it stays the Pod's own, which the owner
check accepts too) and the PodGroup's ``status.resourceClaimStatuses`` names.  Never a
claim a member's owner check refuses: a member gated for ever keeps upstream's PodGroup run
from settling (kube-oracle waits until its timeout); the unit tests cover those messages.
Nor a template entry whose claim is not made yet: kube-oracle's claim controller makes
claims for Pods only.

At v1.36 only the simple case is drawn: v1.36.3's PodGroup cycle runs each member's
PostFilter (DynamicResources deallocating a claim that keeps it off every node, preemption),
which kubesched's cycle does not (it follows v1.37, where none runs); the generator's other
claims meet that (a claim still allocated after its Pod finished).

At v1.37 half of the simple cases find the group's claim allocated already (an earlier
cycle's, its binding failed; :func:`_allocated_group_claim`), reserved for the PodGroup or
for nobody, and the gang fails: the device is on a node the Pods cannot use (PodGroupPostFilter
deallocates the claim, ``deallocatePodGroupClaims``, and the next cycle places them), or the
Pods ask for more cpu than any node has (the PodGroup is taken out of ``reservedFor``).

Explain cases are not drawn: kube-oracle's explain snapshot holds no PodGroup objects, so
upstream's DynamicResources (v1.37) cannot find the Pod's PodGroup there.
"""

from __future__ import annotations

import random
from typing import Any

from request_shape import cluster_items

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
    gates["DRAWorkloadResourceClaims"] = r.random() < 0.7 or version == "1.36"
    case["featureGates"] = gates
    if version == "1.36" or (gates["DRAWorkloadResourceClaims"] and r.random() < 0.5):
        _one_group_claim(case, api)
        if version == "1.37":  # a stream of its own: the other cases stay as they were
            _allocated_group_claim(random.Random(f"dra-workload-alloc/{seed}/{index}"), case)
        return
    made = {
        s["name"]: s.get("resourceClaimName")
        for s in (first.get("status") or {}).get("resourceClaimStatuses") or []
    }
    # A template entry whose claim is not made yet stays the Pod's: kube-oracle's claim
    # controller makes claims for Pods only, not for PodGroups.
    listed = [
        dict(e)
        for e in entries
        if r.random() < 0.7 and ("resourceClaimTemplateName" not in e or made.get(e["name"]))
    ]
    items = cluster_items(case)
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
    # Only the first Pod joins the group here (the second keeps its own claims): two
    # members sharing a claim not allocated yet meet upstream's sharing of a pending
    # allocation within one PodGroup cycle (``pendingAllocations``), which kubesched does
    # not model yet (docs/dra.md).
    first["spec"]["schedulingGroup"] = {"podGroupName": GROUP}


def _one_group_claim(case: dict[str, Any], api: str) -> None:
    """The Pods' only claim is the PodGroup's, made from a template for one GPU (the
    controller's work done: owned by the PodGroup, named in its status and the Pods'), and
    they may share a node (both select the first Pod's, nothing else requested)."""
    items = cluster_items(case)
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


def _allocated_group_claim(r: random.Random, case: dict[str, Any]) -> None:
    """Half the time, the group claim of :func:`_one_group_claim` allocated already to a
    GPU no other claim holds (a whole device of a node's own pool), ``reservedFor`` the
    PodGroup (or, one time in four, nobody), and the gang unschedulable as it stands: the
    device on a node the Pods cannot use (a node this schedule leaves out, else another than
    the one they select), or, when there is none or one time in three, the Pods asking for
    64 cpus (no node has them)."""
    if r.random() >= 0.5:
        return
    items = cluster_items(case)
    pods: list[dict[str, Any]] = case["pods"]
    nodes = {x["metadata"]["name"] for x in items if x["kind"] == "Node"}
    where = (pods[0]["spec"].get("nodeSelector") or {}).get("kubernetes.io/hostname")
    held = {
        (res["driver"], res["pool"], res["device"])
        for x in items
        if x["kind"] == "ResourceClaim"
        for res in ((x.get("status") or {}).get("allocation") or {})
        .get("devices", {})
        .get("results", [])
    }
    free: list[tuple[str, str, str]] = []  # node, pool, device
    for x in items:
        spec = x.get("spec") or {}
        if x["kind"] != "ResourceSlice" or spec.get("driver") != GPU or not spec.get("nodeName"):
            continue
        if spec["pool"]["name"] != spec["nodeName"] or x["metadata"]["name"].endswith("-old"):
            continue  # partitions, shared devices, a stale generation: not these
        for d in spec.get("devices") or []:
            if (GPU, spec["pool"]["name"], d["name"]) not in held:
                free.append((spec["nodeName"], spec["pool"]["name"], d["name"]))
    if not free:
        return
    elsewhere = [f for f in free if f[0] not in nodes or (where is not None and f[0] != where)]
    if not elsewhere or r.random() < 1 / 3:
        node, pool, device = r.choice(free)
        for p in pods:
            p["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "64"}
    else:
        node, pool, device = r.choice(elsewhere)
    claim = next(x for x in items if x["kind"] == "ResourceClaim" and x["metadata"]["name"]
                 == "pg-gpu-abcde")  # fmt: skip
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    claim["status"] = {
        "allocation": {
            "devices": {"results": [{"request": "gpu", "driver": GPU, "pool": pool,
                                     "device": device}]},
            "nodeSelector": {"nodeSelectorTerms": [term]},
        }
    }  # fmt: skip
    if r.random() < 0.75:
        ref = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": GROUP,
               "uid": f"uid-podgroup-{GROUP}"}  # fmt: skip
        claim["status"]["reservedFor"] = [ref]
