"""The volume plugins' queueing hints for storage objects (upstream's
``isSchedulableAfter*``), each answer as upstream v1.34-v1.37 gives it."""

from __future__ import annotations

import copy
from typing import Any

from kubesched.api.parse import parse_pod
from kubesched.framework.clusterevents import ActionType, QueueingHint, Resource
from kubesched.framework.events import object_event
from kubesched.plugins import nodevolumelimits as nvl
from kubesched.plugins import volumezone as vz
from kubesched.plugins.volumebinding import hints as vb

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def _pod(*volumes: dict[str, Any]) -> Any:
    return parse_pod(
        {"metadata": {"name": "p", "namespace": "default"},
         "spec": {"containers": [{"name": "c"}], "volumes": list(volumes)}},
        "pod",
    )  # fmt: skip


def _changed(obj: dict[str, Any], **fields: Any) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    new.update(fields)
    return new


SC = {"kind": "StorageClass", "metadata": {"name": "sc"}, "provisioner": "csi.example.com"}
TOPOLOGY = [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["a"]}]}]


def test_storage_class_update_queues_only_for_allowed_topologies() -> None:
    pod = _pod()
    assert vb.is_schedulable_after_class_change(pod, None, SC) == Q
    assert (
        vb.is_schedulable_after_class_change(pod, SC, _changed(SC, allowedTopologies=TOPOLOGY)) == Q
    )
    labelled = _changed(SC, metadata={"name": "sc", "labels": {"a": "b"}})
    assert vb.is_schedulable_after_class_change(pod, SC, labelled) == SKIP


def _csinode(annotation: str | None, *drivers: tuple[str, int | None]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "n"}
    if annotation is not None:
        meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": annotation}
    spec = []
    for name, count in drivers:
        d: dict[str, Any] = {"name": name, "nodeID": "n"}
        if count is not None:
            d["allocatable"] = {"count": count}
        spec.append(d)
    return {"kind": "CSINode", "metadata": meta, "spec": {"drivers": spec}}


def test_csinode_hints() -> None:
    pod = _pod()
    old = _csinode("kubernetes.io/gce-pd", ("pd", 2))
    # VolumeBinding: the migrated-plugins annotation only.
    assert vb.is_schedulable_after_csinode_change(pod, None, old) == Q
    assert vb.is_schedulable_after_csinode_change(pod, old, _csinode(None, ("pd", 2))) == Q
    assert (
        vb.is_schedulable_after_csinode_change(
            pod, old, _csinode("kubernetes.io/gce-pd", ("pd", 9))
        )
        == SKIP
    )
    # NodeVolumeLimits: a driver's count raised (absent counts 0).
    up = nvl.is_schedulable_after_csinode_update
    assert up(pod, old, _csinode("kubernetes.io/gce-pd", ("pd", 3))) == Q
    assert up(pod, old, _csinode("kubernetes.io/gce-pd", ("pd", 1))) == SKIP
    assert up(pod, old, _csinode(None, ("pd", 2), ("ebs", None))) == SKIP
    assert up(pod, old, _csinode(None, ("pd", 2), ("ebs", 1))) == Q
    assert up(pod, _csinode(None, ("pd", None)), _csinode(None, ("pd", 0))) == SKIP


def test_csidriver_hint_reads_inline_csi_volumes() -> None:
    inline = {"name": "v", "csi": {"driver": "csi.example.com"}}
    old = {"kind": "CSIDriver", "metadata": {"name": "csi.example.com"},
           "spec": {"storageCapacity": True}}  # fmt: skip
    off = _changed(old, spec={"storageCapacity": False})
    assert vb.is_schedulable_after_driver_change(_pod(inline), old, off) == Q
    assert vb.is_schedulable_after_driver_change(_pod(inline), off, old) == SKIP
    assert vb.is_schedulable_after_driver_change(_pod(), old, off) == SKIP


def test_capacity_hint_queues_when_the_volume_limit_grows() -> None:
    pod = _pod()
    cap = {"kind": "CSIStorageCapacity", "metadata": {"name": "c", "namespace": "kube-system"},
           "storageClassName": "sc", "capacity": "5Gi"}  # fmt: skip
    assert vb.is_schedulable_after_capacity_change(pod, None, cap) == Q
    assert vb.is_schedulable_after_capacity_change(pod, cap, _changed(cap, capacity="6Gi")) == Q
    assert vb.is_schedulable_after_capacity_change(pod, cap, _changed(cap, capacity="1Gi")) == SKIP
    # The maximum volume size is the limit when set, even below the capacity.
    capped = _changed(cap, capacity="50Gi", maximumVolumeSize="1Gi")
    assert vb.is_schedulable_after_capacity_change(pod, cap, capped) == SKIP
    gone = {k: v for k, v in cap.items() if k != "capacity"}
    assert vb.is_schedulable_after_capacity_change(pod, gone, cap) == Q
    assert vb.is_schedulable_after_capacity_change(pod, cap, gone) == SKIP


def test_attachment_deletion_queues_for_claims_and_matching_inline_volumes() -> None:
    va = {"kind": "VolumeAttachment", "metadata": {"name": "va"},
          "spec": {"attacher": "pd.csi.storage.gke.io", "nodeName": "n", "source": {}}}  # fmt: skip
    hint = nvl.is_schedulable_after_attachment_deleted
    claim = {"name": "v", "persistentVolumeClaim": {"claimName": "c"}}
    gce = {"name": "g", "gcePersistentDisk": {"pdName": "d"}}
    ebs = {"name": "e", "awsElasticBlockStore": {"volumeID": "vol-1"}}
    assert hint(_pod(claim), va, None) == Q
    assert hint(_pod(gce), va, None) == Q
    assert hint(_pod(ebs), va, None) == SKIP
    assert hint(_pod({"name": "x", "emptyDir": {}}), va, None) == SKIP
    azure_file = {"name": "f", "azureFile": {"secretName": "s", "shareName": "x"}}
    to_azure_file = copy.deepcopy(va)
    to_azure_file["spec"]["attacher"] = "file.csi.azure.com"
    assert hint(_pod(azure_file), to_azure_file, None) == Q
    assert hint(_pod(azure_file), va, None) == SKIP


def test_volume_zone_pv_hint_compares_topology_labels() -> None:
    def pv(labels: dict[str, str]) -> dict[str, Any]:
        return {"kind": "PersistentVolume", "metadata": {"name": "pv", "labels": labels},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                         "hostPath": {"path": "/x"}}}  # fmt: skip

    pod, zone = _pod(), "topology.kubernetes.io/zone"
    hint = vz.is_schedulable_after_volume_change
    assert hint(pod, None, pv({})) == Q
    assert hint(pod, pv({zone: "a"}), pv({zone: "b"})) == Q
    assert hint(pod, pv({zone: "a"}), pv({zone: "a", "tier": "gold"})) == SKIP
    assert hint(pod, pv({zone: "a__b"}), pv({zone: "b__a"})) == SKIP
    # A value with an empty zone does not parse: upstream ignores the label.
    assert hint(pod, pv({}), pv({zone: "a__"})) == SKIP


def test_storage_deletions_are_upstream_events() -> None:
    gone = object_event("VolumeAttachment", True, True)
    assert gone is not None
    assert (gone.resource, gone.action, gone.label) == (
        Resource.VOLUME_ATTACHMENT, ActionType.DELETE, "")  # fmt: skip
    changed = object_event("CSINode", False, True)
    assert changed is not None and changed.action == ActionType.UPDATE
