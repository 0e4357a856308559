"""Generated queueing-hint cases of storage objects: the volume plugins' hints compared with
upstream's.

``oracle/hint_cases.py`` changes Nodes and Pods; the volume plugins (VolumeBinding,
VolumeZone, NodeVolumeLimits, VolumeRestrictions) register most of their events on storage
objects, whose hints (``isSchedulableAfter*``) that family never reaches.
``storage_hint_case(seed, index)`` builds one ``kube-oracle hints`` request
``{"cluster", "pod", "config", "event"}`` over a storage explain case's objects
(``oracle/storage_cases.py``, with ``oracle/storage_extras.py``'s wider kinds in half of
them; the rejected Pod has an inline Azure File or vSphere volume in one in ten, which
upstream's translator takes) and one change, ``{"op", "old", "new"}``, of

- a PersistentVolume: added, updated (its topology labels moved to another zone, to several,
  to an unparsable value or removed; its phase, claim reference or other labels changed) or
  deleted;
- a PersistentVolumeClaim: added (one the rejected Pod names, its ephemeral volume's, another
  of its namespace or of another), updated (bound by the PV controller, a node selected, its
  labels or request changed) or deleted;
- a StorageClass: added (``WaitForFirstConsumer``, ``Immediate`` or defaulted), updated (its
  ``allowedTopologies`` changed or not) or deleted;
- a CSINode: added, updated (the migrated-plugins annotation, a driver's
  ``allocatable.count`` raised, lowered, set or removed, a driver added or removed) or deleted;
- a CSIDriver: updated (``storageCapacity`` turned off or on, ``attachRequired``), added or
  deleted;
- a CSIStorageCapacity: added, updated (its capacity or maximum volume size grown, shrunk,
  set or removed) or deleted;
- a VolumeAttachment: deleted (of the rejected Pod's inline in-tree volume's CSI driver or
  another, the Pod mostly without claims then), added or updated;
- a Pod deleted: a running Pod with claims or in-tree disks (sharing the rejected Pod's at
  times), or a pending Pod (mostly nominated to a node).

``hint_cases.ours_hints`` answers with kubesched's hints, ``hint_differences`` compares.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from storage_cases import (
    BETA_REGION,
    BETA_ZONE,
    CLASSES,
    CSI,
    EBS,
    MIGRATED,
    NAMESPACES,
    PD,
    REGION,
    REGIONS,
    ZONE,
    ZONES,
    _Gen,
)
from storage_extras import storage_extras

KINDS = ("PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode", "CSIDriver",
         "CSIStorageCapacity", "VolumeAttachment", "Pod")  # fmt: skip
# Attachers a deleted VolumeAttachment names: the CSI drivers of the storage family and
# those the in-tree volumes of the extras translate to.
ATTACHERS = [PD, EBS, CSI, "disk.csi.azure.com", "cinder.csi.openstack.org", "pxd.portworx.com",
             "file.csi.azure.com", "csi.vsphere.vmware.com"]  # fmt: skip
# Inline volumes upstream's translator takes though no volume plugin counts them.
OTHER_INLINE = [
    {"name": "share", "azureFile": {"secretName": "azure-secret", "shareName": "share"}},
    {"name": "vmdk", "vsphereVolume": {"volumePath": "[datastore1] volumes/v.vmdk"}},
]


def storage_hint_case(seed: int, index: int) -> dict[str, Any]:
    """The ``index``-th storage hint case of ``seed``."""
    gen = _Gen(random.Random(f"storage-hints/{seed}/{index}"))
    request = gen.request(gen.r.randint(1, 4))
    if gen.chance(0.5):
        storage_extras(f"storage-hints-extras/{seed}/{index}", request)
    if gen.chance(0.1):
        request["pod"]["spec"]["volumes"].append(copy.deepcopy(gen.pick(OTHER_INLINE)))
    items: list[dict[str, Any]] = request["cluster"]["items"]
    kind = gen.pick([*KINDS, "PersistentVolume", "PersistentVolumeClaim", "CSINode"])
    event, items = _event(gen, kind, items, request["pod"])
    request["cluster"]["items"] = items
    request["event"] = event
    return request


def _event(
    gen: _Gen, kind: str, items: list[dict[str, Any]], pod: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The change of an object of ``kind`` and the cluster as the informers hold it after it:
    ``(event, items)``."""
    if kind == "Pod":
        return _pod_deleted(gen, items, pod)
    if kind == "VolumeAttachment" and gen.chance(0.5):
        return _attachment_of_inline_volume_deleted(gen, items, pod), items
    existing = [o for o in items if o["kind"] == kind]
    ops = ["add", "update", "update", "delete"] if existing else ["add"]
    if kind == "CSIDriver":
        ops = ["update", "update", "update", "add", "delete"] if existing else ["add"]
    if kind == "VolumeAttachment":
        ops = ["delete", "delete", "delete", "add", "update"]
    op = gen.pick(ops)
    if op == "add" or not existing:
        new = _made(gen, kind, items, pod)
        items = [o for o in items if not _same(o, new)]
        return {"op": "add", "new": new}, [*items, new]
    old = gen.pick(existing)
    if op == "delete":
        return {"op": "delete", "old": old}, [o for o in items if o is not old]
    new = _changed(gen, old, pod)
    if gen.chance(0.15):
        old, new = new, old  # the change the other way round
    return {"op": "update", "old": old, "new": new}, [new if o is old else o for o in items]


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether ``a`` and ``b`` are one object (kind, namespace and name)."""
    ma, mb = a["metadata"], b["metadata"]
    return (a["kind"], ma.get("namespace"), ma["name"]) == (
        b["kind"],
        mb.get("namespace"),
        mb["name"],
    )


def _pod_claims(pod: dict[str, Any]) -> list[str]:
    """The claims the rejected Pod names: its claims and its ephemeral volumes'."""
    name = pod["metadata"]["name"]
    out = []
    for v in pod["spec"].get("volumes", []):
        if "persistentVolumeClaim" in v:
            out.append(v["persistentVolumeClaim"]["claimName"])
        elif "ephemeral" in v:
            out.append(f"{name}-{v['name']}")
    return out


def _made(gen: _Gen, kind: str, items: list[dict[str, Any]], pod: dict[str, Any]) -> dict[str, Any]:
    """A new object of ``kind`` (at times replacing one of the same name: the informer
    then heard its deletion before)."""
    names = [n["metadata"]["name"] for n in items if n["kind"] == "Node"]
    if kind == "PersistentVolume":
        gen.volume(len(gen.pvs) + 20)
        pv = gen.pvs[-1]
        if gen.chance(0.3) and "claimRef" not in pv["spec"]:
            claim = gen.unbound_claim(
                pod["metadata"]["namespace"], gen.pick(_pod_claims(pod) or ["c"])
            )
            pv["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace":
                                      claim["metadata"]["namespace"],
                                      "name": claim["metadata"]["name"]}  # fmt: skip
        return pv
    if kind == "PersistentVolumeClaim":
        ns = pod["metadata"]["namespace"]
        claims = _pod_claims(pod)
        name = (
            gen.pick(claims) if claims and gen.chance(0.6) else f"claim-new-{gen.r.randint(0, 9)}"
        )
        if gen.chance(0.15):
            ns = gen.pick([n for n in NAMESPACES if n != ns])
        free = [pv for pv in gen.pvs if "claimRef" not in pv["spec"]]
        if free and gen.chance(0.4):
            return gen.bound_claim(ns, name, gen.pick(free))
        return gen.unbound_claim(ns, name)
    if kind == "StorageClass":
        name = gen.pick([*CLASSES, "new-class"])
        sc = gen.storage_class(name) if name in CLASSES else gen.storage_class("standard")
        sc["metadata"]["name"] = name
        mode = gen.pick(["WaitForFirstConsumer", "Immediate", None])
        if mode is None:
            sc.pop("volumeBindingMode")
        else:
            sc["volumeBindingMode"] = mode
        return sc
    if kind == "CSINode":
        node = gen.pick([n for n in items if n["kind"] == "Node"] or gen.nodes)
        return gen.csi_node(node)
    if kind == "CSIDriver":
        name = gen.pick([PD, EBS, CSI, "new.csi.example.com"])
        spec: dict[str, Any] = {"attachRequired": gen.chance(0.7), "podInfoOnMount": False}
        if gen.chance(0.6):
            spec["storageCapacity"] = gen.chance(0.5)
        return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                "metadata": {"name": name}, "spec": spec}  # fmt: skip
    if kind == "CSIStorageCapacity":
        j = gen.r.randrange(len(ZONES) + 1)
        cap: dict[str, Any] = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": f"csisc-{j}", "namespace": "kube-system"},
            "storageClassName": gen.pick(["capacity", "standard"]),
            "nodeTopology": {"matchLabels": {ZONE: ZONES[j % len(ZONES)]}},
        }
        if gen.chance(0.85):
            cap["capacity"] = gen.pick(["0", "5Gi", "20Gi", "200Gi"])
        if gen.chance(0.3):
            cap["maximumVolumeSize"] = gen.pick(["1Gi", "10Gi"])
        return cap
    # VolumeAttachment
    pvs = [o["metadata"]["name"] for o in items if o["kind"] == "PersistentVolume"]
    source: dict[str, Any] = {"persistentVolumeName": gen.pick(pvs)} if pvs else {}
    if not source or gen.chance(0.3):
        source = {"inlineVolumeSpec": {"csi": {"driver": CSI, "volumeHandle": "inline-0"}}}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": f"va-new-{gen.r.randint(0, 99)}"},
        "spec": {"attacher": gen.pick(ATTACHERS), "nodeName": gen.pick(names or ["node-0"]),
                 "source": source},
        "status": {"attached": gen.chance(0.7)},
    }  # fmt: skip


def _changed(gen: _Gen, old: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any]:
    """``old`` after one or two changes its controller, its driver or an admin makes."""
    new = copy.deepcopy(old)
    kind = new["kind"]
    for _ in range(gen.r.randint(1, 2)):
        {
            "PersistentVolume": _pv_changed,
            "PersistentVolumeClaim": _claim_changed,
            "StorageClass": _class_changed,
            "CSINode": _csinode_changed,
            "CSIDriver": _driver_changed,
            "CSIStorageCapacity": _capacity_changed,
            "VolumeAttachment": _attachment_changed,
        }[kind](gen, new)
    return new


def _pv_changed(gen: _Gen, pv: dict[str, Any]) -> None:
    """Topology labels (another zone, several, an unparsable value, removed), the phase, the
    claim reference, other labels."""
    labels = pv["metadata"].setdefault("labels", {})
    what = gen.pick(["topology", "topology", "phase", "claimRef", "labels"])
    if what == "topology":
        key = gen.pick([ZONE, BETA_ZONE, REGION, BETA_REGION])
        if key in labels and gen.chance(0.3):
            del labels[key]
        elif key in (REGION, BETA_REGION):
            labels[key] = gen.pick(sorted(set(REGIONS.values())))
        else:
            labels[key] = gen.pick(
                [*ZONES, "us-east1-b__us-east1-c", "us-east1-b__", " us-west1-a "]
            )
    elif what == "phase":
        pv.setdefault("status", {})["phase"] = gen.pick(
            ["Available", "Bound", "Released", "Failed"]
        )
    elif what == "claimRef":
        if "claimRef" in pv["spec"]:
            del pv["spec"]["claimRef"]
        else:
            pv["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": "default",
                                      "name": "claim-0", "uid": "uid-default-claim-0"}  # fmt: skip
    else:
        labels["tier"] = gen.pick(["gold", "silver", "bronze"])


def _claim_changed(gen: _Gen, claim: dict[str, Any]) -> None:
    """Bound by the PV controller, a node selected, labels or the request changed."""
    meta, spec = claim["metadata"], claim["spec"]
    what = gen.pick(["bound", "bound", "selected-node", "labels", "resize"])
    if what == "bound":
        spec["volumeName"] = spec.get("volumeName") or f"pv-{gen.r.randint(0, 7)}"
        meta.setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
        claim["status"] = {"phase": "Bound", "accessModes": list(spec["accessModes"]),
                           "capacity": dict(spec["resources"]["requests"])}  # fmt: skip
    elif what == "selected-node":
        meta.setdefault("annotations", {})["volume.kubernetes.io/selected-node"] = "node-0"
    elif what == "labels":
        meta.setdefault("labels", {})["tier"] = gen.pick(["gold", "silver"])
    else:
        spec["resources"]["requests"]["storage"] = gen.pick(["20Gi", "200Gi"])


def _class_changed(gen: _Gen, sc: dict[str, Any]) -> None:
    """``allowedTopologies`` added, changed or removed; or labels, annotations, expansion."""
    what = gen.pick(["topologies", "topologies", "labels", "expansion"])
    if what == "topologies":
        if "allowedTopologies" in sc and gen.chance(0.4):
            del sc["allowedTopologies"]
        else:
            zones = gen.r.sample(ZONES, gen.r.randint(1, 2))
            sc["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}]
    elif what == "labels":
        sc["metadata"].setdefault("labels", {})["team"] = gen.pick(["a", "b"])
    else:
        sc["allowVolumeExpansion"] = not sc.get("allowVolumeExpansion", False)


def _csinode_changed(gen: _Gen, node: dict[str, Any]) -> None:
    """The migrated-plugins annotation; a driver's count raised, lowered, set or removed; a
    driver added or removed; another annotation."""
    meta, drivers = node["metadata"], node["spec"].setdefault("drivers", [])
    what = gen.pick(["migrated", "count", "count", "count", "driver", "annotation"])
    if what == "migrated":
        notes = meta.setdefault("annotations", {})
        plugins = gen.r.sample(
            ["kubernetes.io/gce-pd", "kubernetes.io/aws-ebs", "kubernetes.io/azure-disk"],
            gen.r.randint(0, 2),
        )
        if plugins:
            notes[MIGRATED] = ",".join(plugins)
        else:
            notes.pop(MIGRATED, None)
    elif what == "count" and drivers:
        d = gen.pick(drivers)
        count = d.get("allocatable", {}).get("count")
        choice = gen.pick(["up", "down", "remove", "set"])
        if choice == "remove":
            d.pop("allocatable", None)
        elif choice == "set" or count is None:
            d["allocatable"] = {"count": gen.r.randint(0, 4)}
        else:
            d["allocatable"] = {"count": max(0, count + (1 if choice == "up" else -1))}
    elif what in ("driver", "count"):
        present = {d["name"] for d in drivers}
        missing = [x for x in (PD, EBS, CSI) if x not in present]
        if missing and (not drivers or gen.chance(0.6)):
            d = {"name": gen.pick(missing), "nodeID": f"{meta['name']}-id"}
            if gen.chance(0.7):
                d["allocatable"] = {"count": gen.r.randint(0, 4)}
            drivers.append(d)
        elif drivers:
            drivers.pop(gen.r.randrange(len(drivers)))
    else:
        meta.setdefault("annotations", {})["example.com/note"] = gen.pick(["a", "b"])


def _driver_changed(gen: _Gen, driver: dict[str, Any]) -> None:
    """``storageCapacity`` turned off or on (or unset), ``attachRequired`` flipped."""
    spec = driver["spec"]
    if gen.chance(0.75):
        choice = gen.pick([True, False, None])
        if choice is None:
            spec.pop("storageCapacity", None)
        else:
            spec["storageCapacity"] = choice
    else:
        spec["attachRequired"] = not spec.get("attachRequired", True)


def _capacity_changed(gen: _Gen, cap: dict[str, Any]) -> None:
    """The capacity or the maximum volume size grown, shrunk, set or removed."""
    key = gen.pick(["capacity", "capacity", "maximumVolumeSize"])
    if key in cap and gen.chance(0.2):
        del cap[key]
    else:
        cap[key] = gen.pick(["0", "1Gi", "5Gi", "10Gi", "20Gi", "200Gi"])


def _attachment_changed(gen: _Gen, va: dict[str, Any]) -> None:
    """Attached or detached (the attacher's status)."""
    va["status"] = {"attached": not va.get("status", {}).get("attached", False)}


# Inline in-tree volumes upstream's translator takes, by the CSI driver each translates to
# (the Azure Disk's kind defaults to Shared, which does not translate: the hint's error).
INLINE = {
    PD: {"name": "pd", "gcePersistentDisk": {"pdName": "disk-9"}},
    EBS: {"name": "ebs", "awsElasticBlockStore": {"volumeID": "vol-9"}},
    "disk.csi.azure.com": {"name": "az", "azureDisk": {"diskName": "d", "diskURI": "/d/d"}},
    "file.csi.azure.com": OTHER_INLINE[0],
}


def _attachment_of_inline_volume_deleted(
    gen: _Gen, items: list[dict[str, Any]], pod: dict[str, Any]
) -> dict[str, Any]:
    """A VolumeAttachment deleted while the rejected Pod has an inline in-tree volume and,
    mostly, no claim (whose volume would answer first): the attachment's attacher that
    volume's CSI driver, or another."""
    spec = pod["spec"]
    if gen.chance(0.7):
        spec["volumes"] = [v for v in spec["volumes"] if "persistentVolumeClaim" not in v]
    driver = gen.pick(sorted(INLINE))
    if all(v["name"] != INLINE[driver]["name"] for v in spec["volumes"]):
        spec["volumes"].append(copy.deepcopy(INLINE[driver]))
    nodes = [o["metadata"]["name"] for o in items if o["kind"] == "Node"] or ["node-0"]
    va = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": "va-inline"},
        "spec": {"attacher": driver if gen.chance(0.6) else gen.pick(ATTACHERS),
                 "nodeName": gen.pick(nodes),
                 "source": {"inlineVolumeSpec": {"csi": {"driver": driver, "volumeHandle": "h"}}}},
        "status": {"attached": True},
    }  # fmt: skip
    return {"op": "delete", "old": va}


def _pod_deleted(
    gen: _Gen, items: list[dict[str, Any]], pod: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A running Pod deleted (at times sharing the rejected Pod's claim or in-tree disk, in
    its namespace), or a pending Pod nominated to a node."""
    running = [o for o in items if o["kind"] == "Pod" and o["spec"].get("nodeName")]
    nodes = [o["metadata"]["name"] for o in items if o["kind"] == "Node"] or ["node-0"]
    if running and gen.chance(0.75):
        old = copy.deepcopy(gen.pick(running))
        items = [o for o in items if not _same(o, old)]
    else:
        old = gen.running_pod(50)
        old["spec"]["nodeName"] = gen.pick(nodes)
        if gen.chance(0.4):
            del old["spec"]["nodeName"]
            old["status"] = {"phase": "Pending"}
            if gen.chance(0.7):
                old["status"]["nominatedNodeName"] = gen.pick(nodes)
    if gen.chance(0.4):
        old["metadata"]["namespace"] = pod["metadata"]["namespace"]
        kinds = ("persistentVolumeClaim", "gcePersistentDisk", "awsElasticBlockStore", "iscsi",
                 "rbd")  # fmt: skip
        shared = [v for v in pod["spec"].get("volumes", []) if any(k in v for k in kinds)]
        if shared:
            volume = {**copy.deepcopy(gen.pick(shared)), "name": "shared"}
            old["spec"].setdefault("volumes", []).append(volume)
    return {"op": "delete", "old": old}, items
