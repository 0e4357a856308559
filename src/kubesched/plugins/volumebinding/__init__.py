"""VolumeBinding (upstream v1.34): a Pod's PersistentVolumeClaims bound to PVs, or
provisioned, on the node chosen for it.

:mod:`.plugin` has the extension points and hints, :mod:`.binder` upstream's volume
binder's decisions (claims by state, static matching, provisioning, what is written).
"""

from kubesched.plugins.volumebinding.plugin import NAME, VolumeBinding, new

__all__ = ["NAME", "VolumeBinding", "new"]
