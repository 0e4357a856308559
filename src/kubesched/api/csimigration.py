"""CSI migration as the volume plugins see it (``k8s.io/csi-translation-lib`` v0.34 and the
plugins' ``isCSIMigrationOn``): which in-tree volume kinds migrate to which CSI driver, the
volume handle an in-tree volume or PV is translated to, and whether migration is on for a
node (AWS EBS, GCE PD, Azure Disk and Cinder always; Portworx, whose CSIMigrationPortworx
is GA and locked on from v1.33, at v1.34 and v1.35 only where the node's CSINode lists it as
migrated).
NodeVolumeLimits counts in-tree volumes as their CSI driver's with these; the simulator's
attach-limit invariant too.
"""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.api.storage import DISK_ID, CSINode, PersistentVolume

IN_TREE_PLUGINS = {
    "gcePersistentDisk": ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io"),
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", "ebs.csi.aws.com"),
    "azureDisk": ("kubernetes.io/azure-disk", "disk.csi.azure.com"),
    "cinder": ("kubernetes.io/cinder", "cinder.csi.openstack.org"),
    "portworxVolume": ("kubernetes.io/portworx-volume", "pxd.portworx.com"),
    "azureFile": ("kubernetes.io/azure-file", "file.csi.azure.com"),
    "vsphereVolume": ("kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com"),
}
"""In-tree volume source key to ``(in-tree plugin name, CSI driver name)``
(``k8s.io/csi-translation-lib``)."""


def in_tree_driver(plugin: str) -> str | None:
    """The CSI driver an in-tree plugin (``kubernetes.io/aws-ebs``) migrates to, or None."""
    for name, driver in IN_TREE_PLUGINS.values():
        if name == plugin:
            return driver
    return None


PORTWORX = "kubernetes.io/portworx-volume"
MIGRATED_BY_DEFAULT = (
    "kubernetes.io/aws-ebs",
    "kubernetes.io/gce-pd",
    "kubernetes.io/azure-disk",
    "kubernetes.io/cinder",
    PORTWORX,
)
"""In-tree plugins whose CSI migration is on (``isCSIMigrationOnForPlugin``; Portworx's gate
is GA and locked on from v1.33)."""
_INLINE_MIGRATABLE = ("gcePersistentDisk", "awsElasticBlockStore", "azureDisk", "cinder")


def migration_on(csinode: CSINode | None, plugin: str, *, portworx_annotated: bool = True) -> bool:
    """Upstream ``isCSIMigrationOn`` (nodevolumelimits): the node has a CSINode and
    ``plugin`` is one whose migration is on; Portworx's, with ``portworx_annotated``
    (v1.34 and v1.35), only where the CSINode's migrated-plugins annotation lists it (the
    other four return before that check; from v1.36 Portworx returns before it too)."""
    if csinode is None or plugin not in MIGRATED_BY_DEFAULT:
        return False
    return plugin != PORTWORX or not portworx_annotated or csinode.migrated(plugin)


def _ebs_id(volume_id: str) -> str:
    """``KubernetesVolumeIDToEBSVolumeID``: ``aws://zone/vol-1`` is ``vol-1``."""
    if not volume_id.startswith("aws://"):
        return volume_id
    return volume_id[len("aws://") :].partition("/")[2].strip("/")


def _handle(source: str, ident: str, zones: str = "") -> str:
    if source == "gcePersistentDisk":
        split = [z for z in zones.split("__")] if zones else []
        if len(split) > 1:
            region = split[0].rpartition("-")[0]
            return f"projects/UNSPECIFIED/regions/{region}/disks/{ident}"
        zone = split[0] if split else "UNSPECIFIED"
        return f"projects/UNSPECIFIED/zones/{zone}/disks/{ident}"
    if source == "awsElasticBlockStore":
        return _ebs_id(ident)
    return ident


def inline_migratable(volume: api.Volume) -> bool:
    """Upstream ``IsInlineMigratable`` for the in-tree kinds a Pod's volumes keep."""
    return volume.kind in _INLINE_MIGRATABLE or volume.kind == "portworxVolume"


def inline_csi(volume: api.Volume) -> tuple[str, str, str] | None:
    """``(in-tree plugin, CSI driver, volume handle)`` of an inline in-tree volume as
    ``TranslateInTreeInlineVolumeToCSI`` makes it, or None for other volumes."""
    if not inline_migratable(volume):
        return None
    plugin, driver = IN_TREE_PLUGINS[volume.kind]
    return plugin, driver, _handle(volume.kind, volume.ident)


def inline_translation_error(volume: api.Volume) -> str | None:
    """Why ``TranslateInTreeInlineVolumeToCSI`` refuses an inline in-tree volume (an Azure
    Disk whose ``kind`` is not ``Managed``: upstream's message), or None."""
    if volume.kind == "azureDisk" and volume.disk_kind.lower() != "managed":
        return (
            f"converting volume({volume.name}) from inline to csi: "
            f"kind({volume.disk_kind}) is not supported in csi migration"
        )
    return None


def pv_translates(pv: PersistentVolume) -> bool:
    """Whether ``TranslateInTreePVToCSI`` accepts ``pv`` (an Azure Disk PV only when its
    ``kind``, defaulted to ``Shared`` by the API server, is ``Managed``)."""
    if pv.source != "azureDisk":
        return True
    kind = pv.raw.get("spec", {}).get("azureDisk", {}).get("kind") or "Shared"
    return str(kind).lower() == "managed"


def pv_csi(pv: PersistentVolume) -> tuple[str, str, str] | None:
    """``(in-tree plugin or "", CSI driver, volume handle)`` of a CSI volume, or of an in-tree
    one as ``TranslateInTreePVToCSI`` makes it; None when neither (not migratable)."""
    if pv.source == "csi":
        return "", pv.driver, pv.handle
    if pv.source not in IN_TREE_PLUGINS or pv.source not in DISK_ID:
        return None
    plugin, driver = IN_TREE_PLUGINS[pv.source]
    zones = pv.labels.get("failure-domain.beta.kubernetes.io/zone") or pv.labels.get(
        "topology.kubernetes.io/zone", ""
    )
    return plugin, driver, _handle(pv.source, pv.handle, zones)


_CSI_TOPOLOGY_KEY = {
    "awsElasticBlockStore": "topology.ebs.csi.aws.com/zone",
    "gcePersistentDisk": "topology.gke.io/zone",
    "cinder": "topology.cinder.csi.openstack.org/zone",
}
"""The CSI zone key an in-tree PV's zone topology becomes (azureDisk's keeps its own)."""
_ZONE_GA, _REGION_GA = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
_REGION_BETA = "failure-domain.beta.kubernetes.io/region"


class TranslationError(ValueError):
    """``TranslateInTreePVToCSI`` refused the PV (the message is upstream's)."""


def _has_key(terms: tuple[api.NodeSelectorTerm, ...] | None, key: str) -> bool:
    return any(r.key == key for t in terms or () for r in t.match_expressions)


def _rekey(
    terms: tuple[api.NodeSelectorTerm, ...], old: str, new: str
) -> tuple[api.NodeSelectorTerm, ...]:
    """``replaceTopology``: every ``old`` requirement's key becomes ``new``."""
    return tuple(
        api.NodeSelectorTerm(
            tuple(
                api.Requirement(new, r.operator, r.values) if r.key == old else r
                for r in t.match_expressions
            ),
            t.match_fields,
        )
        for t in terms
    )


def _topology_to_csi(pv: PersistentVolume, key: str) -> tuple[api.NodeSelectorTerm, ...] | None:
    """``translateTopologyFromInTreeToCSI``: the PV's node affinity with its zone topology
    (node affinity first, else the zone label, ``__``-separated) under the CSI ``key`` and
    a beta region requirement under the GA region key."""
    terms = pv.node_affinity
    if _has_key(terms, _ZONE_GA):
        zone, region = _ZONE_GA, _REGION_GA
    elif _has_key(terms, _ZONE_BETA):
        zone, region = _ZONE_BETA, _REGION_BETA
    elif _ZONE_GA in pv.labels:
        zone, region = _ZONE_GA, _REGION_GA
    elif _ZONE_BETA in pv.labels:
        zone, region = _ZONE_BETA, _REGION_BETA
    else:
        zone, region = _ZONE_GA, _REGION_GA
    if _has_key(terms, zone):
        assert terms is not None
        terms = _rekey(terms, zone, key)
    elif zone in pv.labels:
        zones = sorted({z.strip() for z in pv.labels[zone].split("__") if z.strip()})
        if zones:  # upstream ignores addTopology's "no valid zones" error
            requirement = api.Requirement(key, "In", tuple(zones))
            terms = tuple(
                api.NodeSelectorTerm((*t.match_expressions, requirement), t.match_fields)
                for t in (terms or (api.NodeSelectorTerm(),))
            )
    if region == _REGION_BETA and _has_key(terms, _REGION_BETA):
        assert terms is not None
        terms = _rekey(terms, _REGION_BETA, _REGION_GA)
    return terms


def _gce_region_check(pv: PersistentVolume) -> None:
    """The error ``TranslateInTreePVToCSI`` gives a regional GCE PD whose zones do not name
    one region (``gceGetRegionFromZones``)."""
    label = pv.labels.get(_ZONE_BETA) or pv.labels.get(_ZONE_GA, "")
    zones = label.split("__")
    if len(zones) <= 1:
        return
    regions = set()
    for z in zones:
        parts = z.split("-")
        if len(parts) != 3:
            raise TranslationError(
                "failed to get region from zones: zone in unexpected format, expected: "
                f"{{locale}}-{{region}}-{{zone}}, got: {z}"
            )
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        shown = " ".join(f"{r}:{{}}" for r in sorted(regions))
        raise TranslationError(
            f"failed to get region from zones: multiple or no regions gotten from zones, got: "
            f"map[{shown}]"
        )


def binder_affinity_per_node(pv: PersistentVolume) -> bool:
    """Whether :func:`binder_node_affinity` of ``pv`` may depend on the node's CSINode (an
    in-tree PV whose migration is on); otherwise it is ``binder_node_affinity(pv, None)``
    for every node."""
    return pv.source in IN_TREE_PLUGINS and IN_TREE_PLUGINS[pv.source][0] in MIGRATED_BY_DEFAULT


def binder_node_affinity(
    pv: PersistentVolume, csinode: CSINode | None
) -> tuple[api.NodeSelectorTerm, ...] | None:
    """The node affinity VolumeBinding checks a bound PV against (``tryTranslatePVToCSI``):
    an in-tree PV whose migration is on and whose plugin the node's CSINode lists as
    migrated is translated to CSI first (its zone topology under the driver's key); other
    PVs keep their own.  Raises :class:`TranslationError` with upstream's message where the
    translation fails."""
    if pv.source not in IN_TREE_PLUGINS:
        return pv.node_affinity
    plugin = IN_TREE_PLUGINS[pv.source][0]
    if plugin not in MIGRATED_BY_DEFAULT or csinode is None or not csinode.migrated(plugin):
        return pv.node_affinity
    if pv.source == "azureDisk":
        if not pv_translates(pv):
            kind = pv.raw.get("spec", {}).get("azureDisk", {}).get("kind") or "Shared"
            raise TranslationError(f"kind({kind}) is not supported in csi migration")
        return pv.node_affinity
    if pv.source == "gcePersistentDisk":
        _gce_region_check(pv)
    if pv.source not in _CSI_TOPOLOGY_KEY:  # Portworx's translation keeps the affinity
        return pv.node_affinity
    return _topology_to_csi(pv, _CSI_TOPOLOGY_KEY[pv.source])
