"""Builders for the volume plugins' tests: manifests of nodes, Pods with volumes, PVs,
claims, classes and CSI objects, and ``explain`` of one Pod on them."""

from __future__ import annotations

from typing import Any

import kubesched

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
    }


def pod(
    name: str, *volumes: dict[str, Any], node_name: str = "", ns: str = "default"
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": "100m"}}}],
        "volumes": list(volumes),
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}"},
        "spec": spec,
    }


def claim_volume(claim: str, name: str = "") -> dict[str, Any]:
    return {"name": name or claim, "persistentVolumeClaim": {"claimName": claim}}


def disk_volume(kind: str, name: str = "d", **source: Any) -> dict[str, Any]:
    return {"name": name, kind: source}


def pv(
    name: str,
    size: str = "10Gi",
    *,
    klass: str = "",
    zone: str | None = None,
    host: str | None = None,
    claim: str | None = None,
    csi: tuple[str, str] | None = ("ebs.csi.aws.com", ""),
    labels: dict[str, str] | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    phase: str = "Available",
    **spec: Any,
) -> dict[str, Any]:
    """A PersistentVolume: CSI unless ``csi=None`` (or an in-tree source in ``spec``),
    reachable from ``zone`` or from the node ``host`` only, pre-bound to ``claim``."""
    body: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": klass,
        **spec,
    }
    if csi is not None and not any(
        k in spec for k in ("gcePersistentDisk", "awsElasticBlockStore")
    ):
        body["csi"] = {"driver": csi[0], "volumeHandle": csi[1] or name}
    reach = (ZONE, zone) if zone is not None else (HOSTNAME, host) if host is not None else None
    if reach is not None:
        term = {"key": reach[0], "operator": "In", "values": [reach[1]]}
        body["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}}
    if claim is not None:
        body["claimRef"] = {"namespace": "default", "name": claim, "uid": f"uid-{claim}"}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": body,
        "status": {"phase": phase},
    }


def pvc(
    name: str,
    size: str = "1Gi",
    *,
    klass: str | None = "",
    volume: str = "",
    bound: bool | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    annotations: dict[str, str] | None = None,
    phase: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A claim in ``default``; given ``volume`` it is bound (the PV controller's
    ``bind-completed`` annotation) unless ``bound=False``; ``phase`` adds a ``status``
    (``Bound`` with the requested capacity)."""
    body: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
        **spec,
    }
    if klass is not None:
        body["storageClassName"] = klass
    if volume:
        body["volumeName"] = volume
    ann = dict(annotations or {})
    if bound if bound is not None else bool(volume):
        ann["pv.kubernetes.io/bind-completed"] = "yes"
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "annotations": ann,
        },
        "spec": body,
    }
    if phase is not None:
        status: dict[str, Any] = {"phase": phase}
        if phase == "Bound":
            status["capacity"] = {"storage": size}
        manifest["status"] = status
    return manifest


def storage_class(
    name: str,
    provisioner: str = "ebs.csi.aws.com",
    mode: str = "WaitForFirstConsumer",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        **extra,
    }


def csinode(name: str, **limits: int | None) -> dict[str, Any]:
    drivers = []
    for driver, count in limits.items():
        d: dict[str, Any] = {"name": driver.replace("_", "."), "nodeID": name}
        if count is not None:
            d["allocatable"] = {"count": count}
        drivers.append(d)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": drivers},
    }


def explain(items: list[dict[str, Any]], the_pod: dict[str, Any]) -> dict[str, Any]:
    return kubesched.explain({"apiVersion": "v1", "kind": "List", "items": items}, the_pod)


def verdicts(answer: dict[str, Any]) -> dict[str, tuple[str | None, list[str]]]:
    """Per node: the rejecting plugin (None: feasible) and its reasons."""
    return {n: (v["plugin"], v["reasons"]) for n, v in answer["nodes"].items()}
