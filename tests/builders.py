"""The builders now live in the public test kit, :mod:`kubesched.testing`; import them from
there.  This name stays so that tests written against it keep working."""

from __future__ import annotations

from kubesched.testing.builders import (
    DEFAULT_MEMORY,
    DEFAULT_MILLI_CPU,
    NodeBuilder,
    PodBuilder,
    make_cluster,
    make_node,
    make_pod,
)

__all__ = [
    "DEFAULT_MEMORY",
    "DEFAULT_MILLI_CPU",
    "NodeBuilder",
    "PodBuilder",
    "make_cluster",
    "make_node",
    "make_pod",
]
