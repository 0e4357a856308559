"""Fluent builders for test objects: ``make_pod("p").req(cpu="100m")``, ``make_node("n")``.

They build :mod:`kubesched.api.objects` values directly (no manifest parsing), computing
effective and non-zero requests the simple way (one container).
"""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.api import objects as api
from kubesched.api.quantity import resource_amount
from kubesched.state.cache import ClusterState

DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024


class PodBuilder:
    """Builds an :class:`api.Pod`."""

    def __init__(self, name: str, namespace: str = "default") -> None:
        self.pod = api.Pod(name=name, namespace=namespace, uid=f"uid-{namespace}-{name}")
        self.pod.nonzero_requests = {api.CPU: DEFAULT_MILLI_CPU, api.MEMORY: DEFAULT_MEMORY}

    def req(self, **resources: str | int) -> PodBuilder:
        """Requests, e.g. ``req(cpu="100m", memory="1Gi", **{"nvidia.com/gpu": 1})``."""
        for name, value in resources.items():
            name = name.replace("__", "/").replace("_", "-") if name not in ("cpu",) else name
            amount = resource_amount(name, value)
            self.pod.requests[name] = amount
            if name in (api.CPU, api.MEMORY):
                self.pod.nonzero_requests[name] = amount
        return self

    def res(self, resources: dict[str, str | int]) -> PodBuilder:
        """Requests by exact resource name (for names with dots or slashes)."""
        for name, value in resources.items():
            amount = resource_amount(name, value)
            self.pod.requests[name] = amount
            if name in (api.CPU, api.MEMORY):
                self.pod.nonzero_requests[name] = amount
        return self

    def labels(self, **labels: str) -> PodBuilder:
        self.pod.labels.update(labels)
        return self

    def priority(self, p: int) -> PodBuilder:
        self.pod.priority = p
        return self

    def node(self, name: str) -> PodBuilder:
        self.pod.node_name = name
        return self

    def node_selector(self, **sel: str) -> PodBuilder:
        self.pod.node_selector.update(sel)
        return self

    def affinity(self, na: api.NodeAffinity) -> PodBuilder:
        self.pod.node_affinity = na
        return self

    def tolerate(self, *tols: api.Toleration) -> PodBuilder:
        self.pod.tolerations = (*self.pod.tolerations, *tols)
        return self

    def host_port(self, port: int, protocol: str = "TCP", ip: str = "0.0.0.0") -> PodBuilder:
        self.pod.host_ports = (*self.pod.host_ports, api.HostPort(port, protocol, ip))
        return self

    def images(self, *names: str) -> PodBuilder:
        self.pod.images = (*self.pod.images, *names)
        return self

    def gates(self, *names: str) -> PodBuilder:
        self.pod.scheduling_gates = tuple(names)
        return self

    def scheduler(self, name: str) -> PodBuilder:
        self.pod.scheduler_name = name
        return self

    def created(self, ts: float) -> PodBuilder:
        self.pod.creation_timestamp = ts
        return self

    def obj(self) -> api.Pod:
        return self.pod


class NodeBuilder:
    """Builds an :class:`api.Node`."""

    def __init__(self, name: str) -> None:
        self.node = api.Node(name=name, labels={"kubernetes.io/hostname": name})

    def cap(self, **resources: str | int) -> NodeBuilder:
        """Allocatable, e.g. ``cap(cpu="4", memory="32Gi", pods=110)``."""
        for name, value in resources.items():
            self.node.allocatable[name] = resource_amount(name, value)
        return self

    def res(self, resources: dict[str, str | int]) -> NodeBuilder:
        for name, value in resources.items():
            self.node.allocatable[name] = resource_amount(name, value)
        return self

    def labels(self, **labels: str) -> NodeBuilder:
        self.node.labels.update(labels)
        return self

    def label_map(self, labels: dict[str, str]) -> NodeBuilder:
        self.node.labels.update(labels)
        return self

    def taint(self, key: str, value: str = "", effect: str = api.NO_SCHEDULE) -> NodeBuilder:
        self.node.taints = (*self.node.taints, api.Taint(key, value, effect))
        return self

    def unschedulable(self, flag: bool = True) -> NodeBuilder:
        self.node.unschedulable = flag
        return self

    def image(self, size: int, *names: str) -> NodeBuilder:
        self.node.images = (*self.node.images, api.ImageState(tuple(names), size))
        return self

    def obj(self) -> api.Node:
        return self.node


def make_pod(name: str = "p", namespace: str = "default") -> PodBuilder:
    """A pod builder."""
    return PodBuilder(name, namespace)


def make_node(name: str = "n") -> NodeBuilder:
    """A node builder."""
    return NodeBuilder(name)


def make_cluster(nodes: Iterable[api.Node], pods: Iterable[api.Pod] = ()) -> ClusterState:
    """A cluster with ``nodes`` and the bound ``pods`` (each must have ``node_name``)."""
    cluster = ClusterState()
    for n in nodes:
        cluster.add_node(n)
    for p in pods:
        cluster.add_pod(p)
    return cluster
