"""Coscheduling (gang scheduling): see :mod:`kubesched.plugins.coscheduling.plugin`."""

from kubesched.plugins.coscheduling.plugin import NAME, Coscheduling, CoschedulingArgs, new

__all__ = ["NAME", "Coscheduling", "CoschedulingArgs", "new"]
