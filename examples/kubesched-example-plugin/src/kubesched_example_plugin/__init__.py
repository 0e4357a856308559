"""An example out-of-tree kubesched plugin package (see ``prefer_label``)."""

from kubesched_example_plugin.prefer_label import NAME, PreferNodeLabel, new

__all__ = ["NAME", "PreferNodeLabel", "new"]
