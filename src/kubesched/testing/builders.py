"""Builders for test objects: ``make_pod("p").req(cpu="100m")``, ``make_node("n")``, and terms.

They build :mod:`kubesched.api.objects` values directly (no manifest parsing), computing
effective and non-zero requests the simple way (one container).  The term builders make the
selectors, affinity terms and spread constraints Pods carry::

    make_pod("web-0").labels(app="web").spread(1, ZONE, labels={"app": "web"})
    make_pod("db-0").anti_affinity(affinity_term(HOSTNAME, labels={"app": "db"}))
    make_pod("p").affinity(node_affinity(node_selector_term(In(ZONE, "z1"))))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

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

    def spread(
        self,
        max_skew: int,
        topology_key: str,
        when_unsatisfiable: str = "DoNotSchedule",
        *,
        labels: Mapping[str, str] | None = None,
        selector: api.LabelSelector | None = None,
        min_domains: int | None = None,
        match_label_keys: Sequence[str] = (),
    ) -> PodBuilder:
        """Add a topology spread constraint (see :func:`spread_constraint`)."""
        tsc = spread_constraint(
            max_skew,
            topology_key,
            when_unsatisfiable,
            labels=labels,
            selector=selector,
            min_domains=min_domains,
            match_label_keys=match_label_keys,
        )
        self.pod.topology_spread_constraints = (*self.pod.topology_spread_constraints, tsc)
        return self

    def pod_affinity(
        self, *required: api.PodAffinityTerm, preferred: Iterable[api.WeightedPodAffinityTerm] = ()
    ) -> PodBuilder:
        """Set Pod affinity: ``required`` terms and ``preferred`` weighted terms."""
        self.pod.pod_affinity = api.PodAffinity(tuple(required), tuple(preferred))
        return self

    def anti_affinity(
        self, *required: api.PodAffinityTerm, preferred: Iterable[api.WeightedPodAffinityTerm] = ()
    ) -> PodBuilder:
        """Set Pod anti-affinity: ``required`` terms and ``preferred`` weighted terms."""
        self.pod.pod_anti_affinity = api.PodAffinity(tuple(required), tuple(preferred))
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


# --------------------------------------------------------------------------- terms
# Operator names as upstream spells them (In, NotIn, Exists, DoesNotExist).
def In(key: str, *values: str) -> api.Requirement:
    """The requirement ``key In (values)``."""
    return api.Requirement(key, "In", tuple(values))


def NotIn(key: str, *values: str) -> api.Requirement:
    """The requirement ``key NotIn (values)``."""
    return api.Requirement(key, "NotIn", tuple(values))


def Exists(key: str) -> api.Requirement:
    """The requirement ``key Exists``."""
    return api.Requirement(key, "Exists")


def DoesNotExist(key: str) -> api.Requirement:
    """The requirement ``key DoesNotExist``."""
    return api.Requirement(key, "DoesNotExist")


def match_labels(
    labels: Mapping[str, str] | None = None, *reqs: api.Requirement
) -> api.LabelSelector:
    """A label selector: ``matchLabels`` from ``labels``, ``matchExpressions`` from ``reqs``
    (``match_labels()`` selects everything)."""
    return api.LabelSelector(tuple((labels or {}).items()), tuple(reqs))


def node_selector_term(
    *reqs: api.Requirement, fields: Sequence[api.Requirement] = ()
) -> api.NodeSelectorTerm:
    """A node selector term: ``matchExpressions`` from ``reqs``, ``matchFields`` from
    ``fields``."""
    return api.NodeSelectorTerm(tuple(reqs), tuple(fields))


def node_affinity(
    *required: api.NodeSelectorTerm,
    preferred: Iterable[tuple[int, api.NodeSelectorTerm]] = (),
) -> api.NodeAffinity:
    """Node affinity: the ``required`` terms (ORed; none given: no requirement) and the
    ``(weight, term)`` preferences."""
    prefs = tuple(api.PreferredSchedulingTerm(w, t) for w, t in preferred)
    return api.NodeAffinity(tuple(required) if required else None, prefs)


def affinity_term(
    topology_key: str,
    *reqs: api.Requirement,
    labels: Mapping[str, str] | None = None,
    namespaces: Sequence[str] = (),
    namespace_selector: api.LabelSelector | None = None,
    match_label_keys: Sequence[str] = (),
    mismatch_label_keys: Sequence[str] = (),
    no_selector: bool = False,
) -> api.PodAffinityTerm:
    """A Pod (anti-)affinity term selecting ``labels`` and ``reqs`` within ``topology_key``
    (with ``no_selector``: no label selector at all, which selects nothing)."""
    sel = None if no_selector else match_labels(labels, *reqs)
    return api.PodAffinityTerm(
        topology_key,
        sel,
        tuple(namespaces),
        namespace_selector,
        tuple(match_label_keys),
        tuple(mismatch_label_keys),
    )


def weighted(weight: int, term: api.PodAffinityTerm) -> api.WeightedPodAffinityTerm:
    """A preferred (anti-)affinity term of ``weight`` (1..100)."""
    return api.WeightedPodAffinityTerm(weight, term)


def spread_constraint(
    max_skew: int,
    topology_key: str,
    when_unsatisfiable: str = "DoNotSchedule",
    *,
    labels: Mapping[str, str] | None = None,
    selector: api.LabelSelector | None = None,
    min_domains: int | None = None,
    node_affinity_policy: str | None = None,
    node_taints_policy: str | None = None,
    match_label_keys: Sequence[str] = (),
) -> api.TopologySpreadConstraint:
    """A topology spread constraint over the Pods ``selector`` selects (or, given ``labels``,
    the Pods carrying them; neither: no selector, which selects nothing)."""
    if selector is None and labels is not None:
        selector = match_labels(labels)
    return api.TopologySpreadConstraint(
        max_skew,
        topology_key,
        when_unsatisfiable,
        selector,
        min_domains,
        node_affinity_policy,
        node_taints_policy,
        tuple(match_label_keys),
    )
