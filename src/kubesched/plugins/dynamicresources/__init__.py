"""DynamicResources (upstream v1.34): ResourceClaims allocated from ResourceSlices.

:mod:`.plugin` has the extension points, :mod:`.hints` the queueing hints, :mod:`.claims`
the plugin's view of the DRA objects (assumed, in flight, devices in use); the
structured-parameters allocator and the device columns are in :mod:`kubesched.devices`.
"""

from kubesched.plugins.dynamicresources.plugin import NAME, DynamicResources, new

__all__ = ["NAME", "DynamicResources", "new"]
