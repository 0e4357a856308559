"""A Pod's ``spec.volumes`` (core/v1, Kubernetes v1.34), validated as the API server does
where the volume plugins care, and kept as :class:`~kubesched.api.objects.Volume` for the
kinds they read (claims, ephemeral claims, in-tree disks).

Both Pod parsers read volumes with :func:`read_volumes` (the quick one gives up on any
error, and the full one reports it with its path).  Each volume needs a unique ``name`` and
at most one source; a volume with none is an ``emptyDir`` (the API server's default).  A
claim needs its ``claimName``, an ephemeral volume its ``volumeClaimTemplate`` with a valid
claim spec, an in-tree disk its identity field.
"""

from __future__ import annotations

from typing import Any

from kubesched.api import fields as f
from kubesched.api import objects as api
from kubesched.api import storage
from kubesched.api.fields import Obj, fail, join

SOURCES = (
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
)
"""Every ``VolumeSource`` key of core/v1."""

_IDENT = {
    "gcePersistentDisk": "pdName",
    "awsElasticBlockStore": "volumeID",
    "iscsi": "iqn",
    "rbd": "image",
    "azureDisk": "diskURI",
    "cinder": "volumeID",
    "portworxVolume": "volumeID",
}


def read_volumes(spec: Obj, path: str) -> tuple[api.Volume, ...]:
    """``spec.volumes`` (``path`` is the spec's): the volumes the plugins read, in order."""
    out: list[api.Volume] = []
    names: set[str] = set()
    vpath = join(path, "volumes")
    for i, v in enumerate(f.seq(spec, "volumes", path)):
        ip = join(vpath, i)
        v = f.as_mapping(v, ip)
        name = f.required_string(v, "name", ip)
        if name in names:
            fail(join(ip, "name"), f'Duplicate value: "{name}"')
        names.add(name)
        present = [k for k in SOURCES if v.get(k) is not None]
        if len(present) > 1:
            fail(join(ip, present[1]), "may not specify more than 1 volume type")
        if not present:
            continue
        kind = present[0]
        volume = _volume(name, kind, f.mapping(v, kind, ip), join(ip, kind))
        if volume is not None:
            out.append(volume)
    return tuple(out)


def _volume(name: str, kind: str, src: Obj, path: str) -> api.Volume | None:
    if kind == api.VOLUME_PVC:
        return api.Volume(
            name,
            kind,
            claim=f.required_string(src, "claimName", path),
            read_only=f.boolean(src, "readOnly", path),
        )
    if kind == api.VOLUME_EPHEMERAL:
        tpath = join(path, "volumeClaimTemplate")
        if src.get("volumeClaimTemplate") is None:
            fail(tpath, "Required value")
        template = f.mapping(src, "volumeClaimTemplate", path)
        storage.read_claim_spec(f.mapping(template, "spec", tpath), join(tpath, "spec"))
        return api.Volume(name, kind, template=dict(template))
    if kind not in _IDENT:
        return None
    ident = f.required_string(src, _IDENT[kind], path)
    monitors: tuple[str, ...] = ()
    pool = disk_kind = ""
    if kind == "rbd":
        monitors = f.string_list(src, "monitors", path)
        if not monitors:
            fail(join(path, "monitors"), "Required value")
        pool = f.string(src, "pool", path) or "rbd"
    elif kind == "iscsi":
        f.required_string(src, "targetPortal", path)
    elif kind == "azureDisk":
        f.required_string(src, "diskName", path)
        disk_kind = f.string(src, "kind", path) or "Shared"
    return api.Volume(
        name,
        kind,
        ident=ident,
        read_only=f.boolean(src, "readOnly", path),
        monitors=monitors,
        pool=pool,
        disk_kind=disk_kind,
    )


def controller_reference(pod: api.Pod) -> dict[str, Any]:
    """The owner reference a controller puts on an object it makes for ``pod`` (an
    ephemeral volume's claim, a ResourceClaim from a template)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": pod.name,
        "uid": pod.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def ephemeral_claim_name(pod: api.Pod, volume: api.Volume) -> str:
    """Upstream ``ephemeral.VolumeClaimName``: ``<pod name>-<volume name>``."""
    return f"{pod.name}-{volume.name}"


def claim_names(pod: api.Pod) -> list[tuple[str, bool]]:
    """The claims a Pod names, in volume order: ``(name, ephemeral)``."""
    out = []
    for v in pod.volumes:
        if v.kind == api.VOLUME_PVC:
            out.append((v.claim, False))
        elif v.kind == api.VOLUME_EPHEMERAL:
            out.append((ephemeral_claim_name(pod, v), True))
    return out


def claim_from_template(pod: api.Pod, volume: api.Volume) -> dict[str, Any]:
    """The PVC the ephemeral volume controller creates for ``volume`` of ``pod``: named
    ``<pod>-<volume>``, owned (controller) by the Pod, the template's labels, annotations
    and spec."""
    template = volume.template or {}
    meta = template.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": ephemeral_claim_name(pod, volume),
            "namespace": pod.namespace,
            "labels": dict(meta.get("labels") or {}),
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [controller_reference(pod)],
        },
        "spec": dict(template.get("spec") or {}),
    }
