"""GangScheduling (the Workload API's gangs): see :mod:`kubesched.plugins.gangscheduling.plugin`."""

from kubesched.plugins.gangscheduling.plugin import NAME, GangScheduling, new

__all__ = ["NAME", "GangScheduling", "new"]
