"""Generated queueing-hint cases of DRA objects: DynamicResources' hints (and NodeResourcesFit's
DeviceClass hint, v1.35+) compared with upstream's.

``oracle/hint_cases.py`` changes Nodes and Pods, ``oracle/storage_hint_cases.py`` storage
objects; DynamicResources registers its hinted events on ResourceClaims
(``isSchedulableAfterClaimChange``) and on the rejected Pod's own update that names its
generated claims (``isSchedulableAfterPodChange``; v1.37: ``isSchedulableAfterTargetPodUpdate``
and claim deletions too), which neither reaches.  ``dra_hint_case(seed, index, version)``
builds one ``kube-oracle hints`` request ``{"cluster", "pod", "config", "event"}`` over a DRA
explain case's objects (``oracle/dra_cases.py`` at ``version``) and one change,
``{"op", "old", "new"}``, of

- a ResourceClaim: added (one the rejected Pod names, its generated claim, another Pod's),
  updated (allocated, deallocated, reserved for another consumer or no longer, a driver's
  ``status.devices`` report, a finalizer or label only, being deleted; at times the change
  the other way round) or deleted (allocated or not);
- the rejected Pod's own update: the resourceclaim controller recording a generated claim's
  name in ``status.resourceClaimStatuses`` (the claim created, not yet created, or the entry
  without a name), or a label only; a running Pod's ``resourceClaimStatuses`` changed;
- a ResourceSlice or a DeviceClass: added, updated or deleted (a class's
  ``extendedResourceName`` set, changed or removed while the Pod requests that extended
  resource or the class's implicit ``deviceclass.resource.kubernetes.io/`` name).

In one case in eight one of the Pod's claims is missing from the cluster (the hints' "not
schedulable" path).  ``hint_cases.ours_hints`` answers with kubesched's hints,
``hint_differences`` compares.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from dra_cases import API, FINALIZER, GPU, NIC, dra_case
from request_shape import cluster_items

KINDS = ("claim-add", "claim-update", "claim-update", "claim-update", "claim-delete",
         "self-update", "self-update", "running-update", "slice", "class")  # fmt: skip
EXTENDED = "example.com/gpu"
"""The extended resource a class may back (DRAExtendedResource)."""
IMPLICIT = "deviceclass.resource.kubernetes.io/"
"""The prefix of a class's implicit extended resource name."""


def dra_hint_case(seed: int, index: int, version: str | None = None) -> dict[str, Any]:
    """The ``index``-th DRA hint case of ``seed`` (over ``version``'s DRA case)."""
    request = dra_case(seed, index, version)
    r = random.Random(f"dra-hints/{seed}/{index}")
    items = cluster_items(request)
    pod: dict[str, Any] = request["pod"]
    if r.random() < 0.125:
        own = [o for o in items if _is_claim(o) and _named_by(pod, o)]
        if own:
            gone = r.choice(own)
            items = [o for o in items if o is not gone]
    kind = r.choice(KINDS)
    if kind == "running-update" and not any(_running(o) for o in items):
        kind = "self-update"
    if kind == "self-update":
        event, pod, items = _self_update(r, pod, items)
    elif kind == "running-update":
        event, items = _running_update(r, items)
    elif kind.startswith("claim"):
        event, items = _claim_event(r, kind, pod, items)
    else:
        event, items = _object_event(r, kind, pod, items)
    request["cluster"]["items"] = items
    request["pod"] = pod
    request["event"] = event
    return request


def _running(o: dict[str, Any]) -> bool:
    return o["kind"] == "Pod" and bool(o["spec"].get("nodeName"))


def _is_claim(o: dict[str, Any]) -> bool:
    return bool(o["kind"] == "ResourceClaim")


def _names(pod: dict[str, Any]) -> set[str]:
    """The claim names the Pod refers to: its direct claims and its generated ones."""
    out = {e["resourceClaimName"] for e in pod["spec"].get("resourceClaims", [])
           if "resourceClaimName" in e}  # fmt: skip
    for s in pod.get("status", {}).get("resourceClaimStatuses", []):
        if s.get("resourceClaimName"):
            out.add(s["resourceClaimName"])
    return out


def _named_by(pod: dict[str, Any], claim: dict[str, Any]) -> bool:
    return claim["metadata"]["name"] in _names(pod)


def _allocation(r: random.Random, items: list[dict[str, Any]]) -> dict[str, Any]:
    """An allocation result: another claim's, or a device of a slice."""
    taken = [o["status"]["allocation"] for o in items
             if _is_claim(o) and o.get("status", {}).get("allocation")]  # fmt: skip
    if taken and r.random() < 0.5:
        return copy.deepcopy(r.choice(taken))
    slices = [o for o in items if o["kind"] == "ResourceSlice" and o["spec"].get("devices")]
    if not slices:
        res = {"request": "req0", "driver": GPU, "pool": "n0", "device": "gpu-0"}
        return {"devices": {"results": [res]}}
    s = r.choice(slices)
    dev = r.choice(s["spec"]["devices"])
    res = {"request": "req0", "driver": s["spec"]["driver"], "pool": s["spec"]["pool"]["name"],
           "device": dev["name"]}  # fmt: skip
    alloc: dict[str, Any] = {"devices": {"results": [res]}}
    node = s["spec"].get("nodeName")
    if node:
        alloc["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}  # fmt: skip
    return alloc


def _claim_changed(
    r: random.Random, old: dict[str, Any], pod: dict[str, Any], items: list[dict[str, Any]]
) -> dict[str, Any]:
    """``old`` after one change the scheduler, a driver, a controller or a user makes."""
    new = copy.deepcopy(old)
    status = new.setdefault("status", {})
    meta = new["metadata"]
    what = r.choice(["allocate", "deallocate", "deallocate", "reserve", "unreserve", "devices",
                     "finalizer", "labels", "deleting"])  # fmt: skip
    if what == "allocate":
        status["allocation"] = _allocation(r, items)
        if r.random() < 0.6:
            ref = {"resource": "pods", "name": pod["metadata"]["name"],
                   "uid": pod["metadata"]["uid"]}  # fmt: skip
            status["reservedFor"] = [ref]
    elif what == "deallocate":
        if "allocation" not in status:
            status["allocation"] = _allocation(r, items)
            return _claim_changed_back(new, old)
        del status["allocation"]
        status.pop("reservedFor", None)
        status.pop("devices", None)
    elif what == "reserve":
        refs = status.setdefault("reservedFor", [])
        k = r.randint(0, 9)
        refs.append({"resource": "pods", "name": f"other-{k}", "uid": f"uid-other-{k}"})
    elif what == "unreserve":
        if status.get("reservedFor"):
            status["reservedFor"].pop()
            if not status["reservedFor"]:
                del status["reservedFor"]
        else:
            status["reservedFor"] = [{"resource": "pods", "name": "run-9", "uid": "uid-run-9"}]
    elif what == "devices":
        results = status.get("allocation", {}).get("devices", {}).get("results") or [
            {"driver": NIC, "pool": "n0", "device": "nic-0"}
        ]
        res = r.choice(results)
        report: dict[str, Any] = {k: res[k] for k in ("driver", "pool", "device")}
        report["conditions"] = [{"type": "Ready", "status": r.choice(["True", "False"]),
                                 "reason": "Prepared", "message": "",
                                 "lastTransitionTime": "2026-01-01T00:00:00Z"}]  # fmt: skip
        status["devices"] = [report]
    elif what == "finalizer":
        finalizers = meta.setdefault("finalizers", [])
        if FINALIZER in finalizers:
            finalizers.remove(FINALIZER)
        else:
            finalizers.append(FINALIZER)
    elif what == "labels":
        meta.setdefault("labels", {})["team"] = r.choice(["a", "b"])
    else:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        meta["finalizers"] = [FINALIZER]
    if not status:
        del new["status"]
    return new


def _claim_changed_back(allocated: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """A deallocation of a claim that was not allocated: the old version made allocated (the
    caller's ``old`` is replaced in place), the new one as ``old`` was."""
    new = copy.deepcopy(old)
    old.clear()
    old.update(allocated)
    return new


def _claim_event(
    r: random.Random, kind: str, pod: dict[str, Any], items: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A claim added, updated or deleted, and the cluster after it: ``(event, items)``."""
    claims = [o for o in items if _is_claim(o)]
    mine = [o for o in claims if _named_by(pod, o)]
    pool = mine if mine and r.random() < 0.6 else claims
    if not pool:
        made = {"apiVersion": API, "kind": "ResourceClaim",
                "metadata": {"name": "other", "namespace": "default", "uid": "uid-claim-other"},
                "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                    "deviceClassName": GPU}}]}}}  # fmt: skip
        return {"op": "add", "new": made}, [*items, made]
    old = r.choice(pool)
    if kind == "claim-add":
        return {"op": "add", "new": old}, items
    if kind == "claim-delete":
        if r.random() < 0.4 and not old.get("status", {}).get("allocation"):
            old = copy.deepcopy(old)
            old.setdefault("status", {})["allocation"] = _allocation(r, items)
        return {"op": "delete", "old": old}, [
            o for o in items if o["metadata"]["name"] != old["metadata"]["name"] or not _is_claim(o)
        ]
    before = copy.deepcopy(old)
    new = _claim_changed(r, before, pod, items)
    if r.random() < 0.15:
        before, new = new, before  # the change the other way round
    return {"op": "update", "old": before, "new": new}, [new if o is old else o for o in items]


def _self_update(
    r: random.Random, pod: dict[str, Any], items: list[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """The rejected Pod's own update: a generated claim's name recorded (or an entry without
    one), or a label.  Returns ``(event, pod, items)``: the Pod after the update."""
    old = copy.deepcopy(pod)
    new = copy.deepcopy(pod)
    templated = [e["name"] for e in pod["spec"].get("resourceClaims", [])
                 if "resourceClaimTemplateName" in e]  # fmt: skip
    if templated and r.random() < 0.85:
        entry = r.choice(templated)
        name = f"new-{entry}-abcde"
        statuses = [s for s in old.get("status", {}).get("resourceClaimStatuses", [])
                    if s["name"] != entry]  # fmt: skip
        if statuses:
            old["status"]["resourceClaimStatuses"] = statuses
        else:
            old.get("status", {}).pop("resourceClaimStatuses", None)
        recorded = {"name": entry}
        if r.random() < 0.85:
            recorded["resourceClaimName"] = name
        if r.random() < 0.25:  # not made yet, or made for another Pod
            items = [o for o in items if not (_is_claim(o) and o["metadata"]["name"] == name)]
        new.setdefault("status", {})["resourceClaimStatuses"] = [*statuses, recorded]
    else:
        new["metadata"].setdefault("labels", {})["tier"] = r.choice(["a", "b"])
    return {"op": "update", "old": old, "new": new}, new, items


def _running_update(
    r: random.Random, items: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A running Pod's ``resourceClaimStatuses`` changed (an AssignedPod event the
    registration on every Pod hears; the hint's other-Pod branch): ``(event, items)``."""
    old = r.choice([o for o in items if _running(o)])
    new = copy.deepcopy(old)
    entry = r.choice(new["spec"].get("resourceClaims") or [{"name": "c"}])["name"]
    statuses = new.setdefault("status", {}).setdefault("resourceClaimStatuses", [])
    statuses.append({"name": entry, "resourceClaimName": f"{old['metadata']['name']}-{entry}"})
    return {"op": "update", "old": old, "new": new}, [new if o is old else o for o in items]


def _object_event(
    r: random.Random, kind: str, pod: dict[str, Any], items: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A ResourceSlice or a DeviceClass added, updated or deleted: ``(event, items)``."""
    k = "ResourceSlice" if kind == "slice" else "DeviceClass"
    existing = [o for o in items if o["kind"] == k]
    if k == "DeviceClass" and r.random() < 0.5:
        requests = pod["spec"]["containers"][0]["resources"].setdefault("requests", {})
        requests[r.choice([EXTENDED, IMPLICIT + GPU, IMPLICIT + "new-class"])] = "1"
    op = r.choice(["add", "update", "update", "delete"]) if existing else "add"
    if op == "add":
        if k == "DeviceClass":
            new = _class(r.choice([GPU, NIC, "new-class"]))
            if r.random() < 0.5:
                new["spec"]["extendedResourceName"] = r.choice([EXTENDED, "example.com/nic"])
        else:
            new = copy.deepcopy(r.choice(existing)) if existing else _slice()
            new["metadata"]["name"] = f"slice-new-{r.randint(0, 9)}"
        items = [o for o in items if not (o["kind"] == k and o["metadata"]["name"]
                                           == new["metadata"]["name"])]  # fmt: skip
        return {"op": "add", "new": new}, [*items, new]
    old = r.choice(existing)
    if op == "delete":
        return {"op": "delete", "old": old}, [o for o in items if o is not old]
    new = copy.deepcopy(old)
    if k == "DeviceClass":
        choice = r.choice([EXTENDED, "example.com/nic", None, "label"])
        if choice == "label":
            new["metadata"].setdefault("labels", {})["team"] = "a"
        elif choice is None:
            new["spec"].pop("extendedResourceName", None)
        else:
            new["spec"]["extendedResourceName"] = choice
        if r.random() < 0.3:
            old, new = new, old
    else:
        new["spec"]["pool"]["generation"] = new["spec"]["pool"].get("generation", 0) + 1
    return {"op": "update", "old": old, "new": new}, [new if o is old else o for o in items]


def _class(name: str) -> dict[str, Any]:
    driver = NIC if name == NIC else GPU
    selector = {"cel": {"expression": f'device.driver == "{driver}"'}}
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [selector]}}  # fmt: skip


def _slice() -> dict[str, Any]:
    return {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": "slice-new"},
            "spec": {"driver": GPU, "nodeName": "n0",
                     "pool": {"name": "n0", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-9"}]}}  # fmt: skip
