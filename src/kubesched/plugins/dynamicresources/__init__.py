"""DynamicResources (upstream v1.34): ResourceClaims allocated from ResourceSlices.

:mod:`.plugin` has the extension points, :mod:`.allocator` the structured-parameters
allocator, :mod:`.claims` the plugin's view of the DRA objects (assumed and in-flight).
"""

from kubesched.plugins.dynamicresources.plugin import NAME, DynamicResources, new

__all__ = ["NAME", "DynamicResources", "new"]
