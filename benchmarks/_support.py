"""What the benchmark scripts share: an in-memory API and upstream's default node."""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.api.parse import parse_node

DEFAULT_NODE = {
    "metadata": {"name": "tpl"},
    "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
}
"""scheduler_perf's ``node-default.yaml``: 4 CPU, 32Gi, 110 pods."""


class InMemoryApi:
    """In-memory binds: the binding subresource always succeeds at once."""

    def __init__(self) -> None:
        self.bound: dict[str, str] = {}
        """Pod key to the node it was bound to."""

    def bind(self, pod: api.Pod, node_name: str) -> None:
        self.bound[pod.key] = node_name

    def delete_pod(self, pod: api.Pod, reason: str) -> None:
        pass


def default_node() -> api.Node:
    """The default node, parsed once per call (rename it with ``dataclasses.replace``)."""
    return parse_node(DEFAULT_NODE)
