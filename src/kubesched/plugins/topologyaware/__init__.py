"""TopologyPlacementGenerator: see :mod:`kubesched.plugins.topologyaware.plugin`."""

from kubesched.plugins.topologyaware.plugin import NAME, TopologyPlacementGenerator, new

__all__ = ["NAME", "TopologyPlacementGenerator", "new"]
