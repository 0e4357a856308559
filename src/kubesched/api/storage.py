"""Storage objects the volume plugins read, parsed from manifests (core/v1 and storage.k8s.io/v1,
Kubernetes v1.34): PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode, CSIDriver,
CSIStorageCapacity, VolumeAttachment.

What the API server would refuse raises :class:`~kubesched.api.errors.InputError` with the
field path (a PV without capacity, a claim without a storage request, an unknown access mode,
a malformed node affinity, a CSINode with a negative count, ...); what it would accept is
read as it is, and the plugins give upstream's answer for it.  The API server's defaults are
applied: a StorageClass's ``volumeBindingMode`` is ``Immediate`` and ``reclaimPolicy``
``Delete``, a CSIDriver's ``attachRequired`` is true and ``storageCapacity`` false, a
volume mode is ``Filesystem``.  A PV without ``status.phase`` is taken as ``Available`` (what
the PV controller sets at once; a scenario need not write it).

Quantities are bytes, rounded up as upstream's ``Quantity.Value()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import fields as f
from kubesched.api import objects as api
from kubesched.api import quantity
from kubesched.api.fields import Obj, fail, join

KINDS = (
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "VolumeAttachment",
)
"""The kinds this module reads (cluster-scoped but the claim and the capacity)."""

SNAPSHOT_COMMAND = (
    "kubectl get nodes,pods,pv,pvc,storageclass,csinode,csidriver,csistoragecapacities -A -o json"
)
"""The snapshot command that includes every object the volume plugins read."""

RWOP = "ReadWriteOncePod"
ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", RWOP)
VOLUME_MODES = ("Filesystem", "Block")
IMMEDIATE = "Immediate"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
BINDING_MODES = (IMMEDIATE, WAIT_FOR_FIRST_CONSUMER)
RECLAIM_POLICIES = ("Delete", "Retain", "Recycle")

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"

PV_SOURCES = (
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "hostPath",
    "glusterfs",
    "nfs",
    "rbd",
    "iscsi",
    "cinder",
    "cephfs",
    "fc",
    "flocker",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "local",
    "storageos",
    "csi",
)
"""A PersistentVolume's possible sources (exactly one is required)."""


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    """A PersistentVolume.  ``source`` is its source's key; ``handle`` the CSI volume handle
    or the in-tree disk's identity; ``driver`` the CSI driver (``csi`` sources only)."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    capacity: int = 0
    access_modes: tuple[str, ...] = ()
    storage_class: str = ""
    volume_mode: str = "Filesystem"
    claim_ref: tuple[str, str, str] | None = None
    """``(namespace, name, uid)`` of ``spec.claimRef``."""
    node_affinity: tuple[api.NodeSelectorTerm, ...] | None = None
    """``spec.nodeAffinity.required.nodeSelectorTerms`` (None: no required affinity)."""
    phase: str = "Available"
    source: str = ""
    driver: str = ""
    handle: str = ""
    deleting: bool = False
    attributes_class: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    """A PersistentVolumeClaim.  ``storage_class`` is upstream's
    ``GetPersistentVolumeClaimClass`` (the beta annotation first, then the spec)."""

    namespace: str
    name: str
    uid: str = ""
    annotations: dict[str, str] = field(default_factory=dict)
    access_modes: tuple[str, ...] = ()
    storage_class: str = ""
    request: int | None = None
    """``spec.resources.requests.storage`` in bytes (None: absent)."""
    volume_name: str = ""
    selector: api.LabelSelector | None = None
    volume_mode: str = "Filesystem"
    phase: str = "Pending"
    deleting: bool = False
    controller_uid: str = ""
    """The uid of the owner reference with ``controller: true`` ("" when none)."""
    attributes_class: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    @property
    def fully_bound(self) -> bool:
        """Upstream ``isPVCFullyBound``: a volume name and the bind-completed annotation."""
        return bool(self.volume_name) and ANN_BIND_COMPLETED in self.annotations


@dataclass(frozen=True, slots=True)
class StorageClass:
    """A StorageClass; ``allowed_topologies`` are its terms, each a tuple of
    ``(key, values)`` requirements (terms ORed, requirements ANDed)."""

    name: str
    provisioner: str
    binding_mode: str = IMMEDIATE
    allowed_topologies: tuple[tuple[tuple[str, tuple[str, ...]], ...], ...] = ()
    reclaim_policy: str = "Delete"
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def allows(self, labels: Mapping[str, str]) -> bool:
        """Upstream ``MatchTopologySelectorTerms``: no terms match every node."""
        if not self.allowed_topologies:
            return True
        return any(
            all(labels.get(k) in values for k, values in term) for term in self.allowed_topologies
        )


@dataclass(frozen=True, slots=True)
class CSINode:
    """A CSINode: per driver its ``allocatable.count`` (None when not set)."""

    name: str
    annotations: dict[str, str] = field(default_factory=dict)
    drivers: dict[str, int | None] = field(default_factory=dict)

    def migrated(self, plugin: str) -> bool:
        """Whether ``plugin`` is in the migrated-plugins annotation."""
        return plugin in self.annotations.get(ANN_MIGRATED_PLUGINS, "").split(",")


@dataclass(frozen=True, slots=True)
class CSIDriver:
    """A CSIDriver (``attachRequired`` defaults true, ``storageCapacity`` false).
    ``prevent_scheduling_if_missing`` is ``spec.preventPodSchedulingIfMissing`` (v1.36+,
    VolumeLimitScaling; absent or false: the driver does not opt in), which NodeVolumeLimits
    reads from v1.36."""

    name: str
    attach_required: bool = True
    storage_capacity: bool = False
    prevent_scheduling_if_missing: bool = False


@dataclass(frozen=True, slots=True)
class CSIStorageCapacity:
    """A CSIStorageCapacity: bytes available to ``storage_class`` on the nodes
    ``node_topology`` selects (None selects none)."""

    namespace: str
    name: str
    storage_class: str
    capacity: int | None = None
    maximum_volume_size: int | None = None
    node_topology: api.LabelSelector | None = None

    def limit(self) -> int | None:
        """Upstream ``volumeLimit``: the maximum volume size, else the capacity."""
        return self.maximum_volume_size if self.maximum_volume_size is not None else self.capacity


@dataclass(frozen=True, slots=True)
class VolumeAttachment:
    """A VolumeAttachment: ``attacher`` (the CSI driver) attaches the PV ``pv_name`` ("" for
    an inline volume spec) to ``node_name``."""

    name: str
    attacher: str
    node_name: str
    pv_name: str = ""


StorageObject = (
    PersistentVolume
    | PersistentVolumeClaim
    | StorageClass
    | CSINode
    | CSIDriver
    | CSIStorageCapacity
    | VolumeAttachment
)


# --------------------------------------------------------------------------- readers
def _bytes(value: object, path: str) -> int:
    """A storage quantity in bytes, rounded up; negative is refused."""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        fail(path, f"quantities must be a string or a number, got {type(value).__name__}")
    try:
        q = quantity.parse_quantity(value)
    except quantity.QuantityError as err:
        fail(path, str(err))
    if q < 0:
        fail(path, "must be greater than or equal to 0")
    return quantity.to_units(q)


def _access_modes(spec: Obj, path: str, *, required: bool) -> tuple[str, ...]:
    modes = f.string_list(spec, "accessModes", path)
    mpath = join(path, "accessModes")
    if required and not modes:
        fail(mpath, "Required value: at least 1 access mode is required")
    for i, m in enumerate(modes):
        if m not in ACCESS_MODES:
            supported = ", ".join(f'"{a}"' for a in ACCESS_MODES)
            fail(join(mpath, i), f'Unsupported value: "{m}": supported values: {supported}')
    if RWOP in modes and len(modes) > 1:
        fail(mpath, "may not use ReadWriteOncePod with other access modes")
    return modes


def _meta(obj: Obj, path: str) -> tuple[Obj, str]:
    meta = f.mapping(obj, "metadata", path)
    return meta, f.required_string(meta, "name", join(path, "metadata"))


def _volume_mode(spec: Obj, path: str) -> str:
    return f.one_of(spec, "volumeMode", path, VOLUME_MODES, "Filesystem")


def read_claim_spec(spec: Obj, path: str) -> tuple[tuple[str, ...], int, str]:
    """A claim's (or an ephemeral volume template's) spec as the API server validates it:
    ``(access modes, storage request in bytes, volume mode)``."""
    modes = _access_modes(spec, path, required=True)
    res_path = join(path, "resources")
    res = f.mapping(spec, "resources", path)
    requests = f.mapping(res, "requests", res_path)
    if requests.get("storage") is None:
        fail(join(join(res_path, "requests"), "storage"), "Required value")
    request = _bytes(requests["storage"], join(join(res_path, "requests"), "storage"))
    if request == 0:
        fail(join(join(res_path, "requests"), "storage"), "must be greater than zero")
    return modes, request, _volume_mode(spec, path)


def parse_pv(obj: Obj, path: str = "") -> PersistentVolume:
    """A PersistentVolume (see the module docstring)."""
    meta, name = _meta(obj, path)
    mpath = join(path, "metadata")
    spath = join(path, "spec")
    spec = f.mapping(obj, "spec", path)
    cap = f.mapping(spec, "capacity", spath)
    if cap.get("storage") is None:
        fail(join(spath, "capacity"), "Required value")
    capacity = _bytes(cap["storage"], join(join(spath, "capacity"), "storage"))
    modes = _access_modes(spec, spath, required=True)
    sources = [k for k in PV_SOURCES if spec.get(k) is not None]
    if not sources:
        fail(spath, "must specify a volume type")
    if len(sources) > 1:
        fail(join(spath, sources[1]), "may not specify more than 1 volume type")
    source = sources[0]
    src_path = join(spath, source)
    src = f.mapping(spec, source, spath)
    driver, handle = "", ""
    if source == "csi":
        driver = f.required_string(src, "driver", src_path)
        handle = f.required_string(src, "volumeHandle", src_path)
    elif source in DISK_ID:
        handle = f.required_string(src, DISK_ID[source], src_path)
    affinity: tuple[api.NodeSelectorTerm, ...] | None = None
    apath = join(spath, "nodeAffinity")
    na = f.mapping(spec, "nodeAffinity", spath)
    if na.get("required") is not None:
        rpath = join(apath, "required")
        terms = f.seq(f.mapping(na, "required", apath), "nodeSelectorTerms", rpath)
        if not terms:
            fail(
                join(rpath, "nodeSelectorTerms"),
                "Required value: must have at least one node selector term",
            )
        affinity = tuple(
            f.node_selector_term(f.as_mapping(t, p), p)
            for i, t in enumerate(terms)
            for p in (join(join(rpath, "nodeSelectorTerms"), i),)
        )
    elif source == "local":
        fail(apath, "Required value: Local volume requires node affinity")
    ref = f.mapping(spec, "claimRef", spath)
    claim_ref = None
    if spec.get("claimRef") is not None:
        rp = join(spath, "claimRef")
        claim_ref = (
            f.string(ref, "namespace", rp),
            f.string(ref, "name", rp),
            f.string(ref, "uid", rp),
        )
    status = f.mapping(obj, "status", path)
    annotations = f.string_map(meta, "annotations", mpath)
    return PersistentVolume(
        name=name,
        labels=f.string_map(meta, "labels", mpath),
        annotations=annotations,
        capacity=capacity,
        access_modes=modes,
        storage_class=annotations.get(ANN_BETA_STORAGE_CLASS)
        or f.string(spec, "storageClassName", spath),
        volume_mode=_volume_mode(spec, spath),
        claim_ref=claim_ref,
        node_affinity=affinity,
        phase=f.string(status, "phase", join(path, "status")) or "Available",
        source=source,
        driver=driver,
        handle=handle,
        deleting=meta.get("deletionTimestamp") is not None,
        attributes_class=f.string(spec, "volumeAttributesClassName", spath),
        raw=obj,
    )


DISK_ID = {
    "gcePersistentDisk": "pdName",
    "awsElasticBlockStore": "volumeID",
    "azureDisk": "diskURI",
    "cinder": "volumeID",
    "portworxVolume": "volumeID",
}
"""The field naming an in-tree disk of each kind a PV or a Pod volume may have."""


def parse_pvc(obj: Obj, path: str = "") -> PersistentVolumeClaim:
    """A PersistentVolumeClaim (see the module docstring)."""
    meta, name = _meta(obj, path)
    mpath = join(path, "metadata")
    spath = join(path, "spec")
    spec = f.mapping(obj, "spec", path)
    modes, request, mode = read_claim_spec(spec, spath)
    annotations = f.string_map(meta, "annotations", mpath)
    klass = annotations.get(ANN_BETA_STORAGE_CLASS)
    if klass is None:
        klass = f.string(spec, "storageClassName", spath)
    controller = ""
    for i, ref in enumerate(f.seq(meta, "ownerReferences", mpath)):
        rp = join(join(mpath, "ownerReferences"), i)
        ref = f.as_mapping(ref, rp)
        if f.boolean(ref, "controller", rp):
            controller = f.string(ref, "uid", rp)
    status = f.mapping(obj, "status", path)
    return PersistentVolumeClaim(
        namespace=f.string(meta, "namespace", mpath) or "default",
        name=name,
        uid=f.string(meta, "uid", mpath),
        annotations=annotations,
        access_modes=modes,
        storage_class=klass,
        request=request,
        volume_name=f.string(spec, "volumeName", spath),
        selector=f.label_selector(spec, "selector", spath),
        volume_mode=mode,
        phase=f.string(status, "phase", join(path, "status")) or "Pending",
        deleting=meta.get("deletionTimestamp") is not None,
        controller_uid=controller,
        attributes_class=f.string(spec, "volumeAttributesClassName", spath),
        raw=obj,
    )


def parse_class(obj: Obj, path: str = "") -> StorageClass:
    """A StorageClass (see the module docstring)."""
    _, name = _meta(obj, path)
    provisioner = f.required_string(obj, "provisioner", path)
    mode = f.one_of(obj, "volumeBindingMode", path, BINDING_MODES, IMMEDIATE)
    terms = []
    tpath = join(path, "allowedTopologies")
    for i, t in enumerate(f.seq(obj, "allowedTopologies", path)):
        ip = join(tpath, i)
        t = f.as_mapping(t, ip)
        reqs = []
        epath = join(ip, "matchLabelExpressions")
        exprs = f.seq(t, "matchLabelExpressions", ip)
        if not exprs:
            fail(epath, "Required value: must have at least one label expression")
        for j, e in enumerate(exprs):
            ep = join(epath, j)
            e = f.as_mapping(e, ep)
            key = f.required_string(e, "key", ep)
            values = f.string_list(e, "values", ep)
            if not values:
                fail(join(ep, "values"), "Required value: must specify as least one value")
            reqs.append((key, values))
        terms.append(tuple(reqs))
    return StorageClass(
        name=name,
        provisioner=provisioner,
        binding_mode=mode,
        allowed_topologies=tuple(terms),
        reclaim_policy=f.one_of(obj, "reclaimPolicy", path, RECLAIM_POLICIES, "Delete"),
        raw=obj,
    )


def parse_csinode(obj: Obj, path: str = "") -> CSINode:
    """A CSINode (see the module docstring)."""
    meta, name = _meta(obj, path)
    spath = join(path, "spec")
    spec = f.mapping(obj, "spec", path)
    drivers: dict[str, int | None] = {}
    dpath = join(spath, "drivers")
    for i, d in enumerate(f.seq(spec, "drivers", spath)):
        ip = join(dpath, i)
        d = f.as_mapping(d, ip)
        driver = f.required_string(d, "name", ip)
        f.required_string(d, "nodeID", ip)
        if driver in drivers:
            fail(join(ip, "name"), f'Duplicate value: "{driver}"')
        alloc = f.mapping(d, "allocatable", ip)
        count = f.int32(alloc, "count", join(ip, "allocatable"))
        if count is not None and count < 0:
            fail(join(join(ip, "allocatable"), "count"), "must be greater than or equal to 0")
        drivers[driver] = count
    return CSINode(
        name=name,
        annotations=f.string_map(meta, "annotations", join(path, "metadata")),
        drivers=drivers,
    )


def parse_driver(obj: Obj, path: str = "") -> CSIDriver:
    """A CSIDriver (see the module docstring)."""
    _, name = _meta(obj, path)
    spath = join(path, "spec")
    spec = f.mapping(obj, "spec", path)
    return CSIDriver(
        name=name,
        attach_required=f.boolean(spec, "attachRequired", spath, True),
        storage_capacity=f.boolean(spec, "storageCapacity", spath, False),
        prevent_scheduling_if_missing=f.boolean(
            spec, "preventPodSchedulingIfMissing", spath, False
        ),
    )


def parse_capacity(obj: Obj, path: str = "") -> CSIStorageCapacity:
    """A CSIStorageCapacity (see the module docstring)."""
    meta, name = _meta(obj, path)

    def size(key: str) -> int | None:
        value = obj.get(key)
        return None if value is None else _bytes(value, join(path, key))

    return CSIStorageCapacity(
        namespace=f.string(meta, "namespace", join(path, "metadata")) or "default",
        name=name,
        storage_class=f.required_string(obj, "storageClassName", path),
        capacity=size("capacity"),
        maximum_volume_size=size("maximumVolumeSize"),
        node_topology=f.label_selector(obj, "nodeTopology", path),
    )


def parse_attachment(obj: Obj, path: str = "") -> VolumeAttachment:
    """A VolumeAttachment (the API server requires its attacher and node name)."""
    _, name = _meta(obj, path)
    spath = join(path, "spec")
    spec = f.mapping(obj, "spec", path)
    source = f.mapping(spec, "source", spath)
    return VolumeAttachment(
        name=name,
        attacher=f.required_string(spec, "attacher", spath),
        node_name=f.required_string(spec, "nodeName", spath),
        pv_name=f.string(source, "persistentVolumeName", join(spath, "source")),
    )


_PARSERS: Mapping[str, Any] = {
    "PersistentVolume": parse_pv,
    "PersistentVolumeClaim": parse_pvc,
    "StorageClass": parse_class,
    "CSINode": parse_csinode,
    "CSIDriver": parse_driver,
    "CSIStorageCapacity": parse_capacity,
    "VolumeAttachment": parse_attachment,
}


def parse(obj: Obj, path: str = "") -> StorageObject:
    """The object of one of :data:`KINDS` (its ``kind`` says which)."""
    parser = _PARSERS[str(obj.get("kind"))]
    result: StorageObject = parser(obj, path)
    return result


def validate(obj: Obj, path: str) -> None:
    """Raise :class:`~kubesched.api.errors.InputError` where the API server would refuse
    ``obj`` (one of :data:`KINDS`)."""
    parse(obj, path)
