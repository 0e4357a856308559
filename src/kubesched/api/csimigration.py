"""CSI migration as the volume plugins see it (``k8s.io/csi-translation-lib`` v0.34 and the
plugins' ``isCSIMigrationOn``): which in-tree volume kinds migrate to which CSI driver, the
volume handle an in-tree volume or PV is translated to, and whether migration is on for a
node (v1.34's gates at their defaults: AWS EBS, GCE PD, Azure Disk and Cinder on, Portworx
off).  NodeVolumeLimits counts in-tree volumes as their CSI driver's with these; the
simulator's attach-limit invariant too.
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


MIGRATED_BY_DEFAULT = (
    "kubernetes.io/aws-ebs",
    "kubernetes.io/gce-pd",
    "kubernetes.io/azure-disk",
    "kubernetes.io/cinder",
)
"""In-tree plugins whose CSI migration is on in v1.34 (Portworx's gate is off by default)."""
_INLINE_MIGRATABLE = ("gcePersistentDisk", "awsElasticBlockStore", "azureDisk", "cinder")


def migration_on(csinode: CSINode | None, plugin: str) -> bool:
    """Upstream ``isCSIMigrationOn`` (nodevolumelimits, gates at their v1.34 defaults): the
    node has a CSINode and ``plugin`` is one whose migration is on."""
    return csinode is not None and plugin in MIGRATED_BY_DEFAULT


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
