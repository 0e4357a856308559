"""PodGroupPodsCount: see :mod:`kubesched.plugins.podgrouppodscount.plugin`."""

from kubesched.plugins.podgrouppodscount.plugin import NAME, PodGroupPodsCount, new

__all__ = ["NAME", "PodGroupPodsCount", "new"]
