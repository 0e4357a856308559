"""CapacityScheduling (elastic quota): see :mod:`kubesched.plugins.capacityscheduling.plugin`."""

from kubesched.plugins.capacityscheduling.plugin import NAME, CapacityScheduling, new

__all__ = ["NAME", "CapacityScheduling", "new"]
