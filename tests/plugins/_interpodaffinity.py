"""Shared builders and runners for the InterPodAffinity tests (upstream tables as data)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.framework.interface import Code, CycleState, Handle, Status
from kubesched.plugins import interpodaffinity
from kubesched.state.cache import ClusterState
from kubesched.testing import DoesNotExist, affinity_term, weighted

NAMESPACES = {
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
    "subteam2.team2": {"team": "team2"},
}
"""Upstream scoring_test.go ``namespaces``."""


def T(
    topology_key: str,
    *reqs: api.Requirement,
    labels: Mapping[str, str] | None = None,
    namespaces: Sequence[str] = (),
    ns_selector: api.LabelSelector | None = None,
    match_keys: Sequence[str] = (),
    mismatch_keys: Sequence[str] = (),
    no_selector: bool = False,
) -> api.PodAffinityTerm:
    """A PodAffinityTerm selecting ``reqs`` (and ``labels``) on ``topology_key``."""
    return affinity_term(
        topology_key,
        *reqs,
        labels=labels,
        namespaces=namespaces,
        namespace_selector=ns_selector,
        match_label_keys=match_keys,
        mismatch_label_keys=mismatch_keys,
        no_selector=no_selector,
    )


W = weighted
DNE = DoesNotExist


def P(
    name: str = "p",
    ns: str = "default",
    labels: Mapping[str, str] | None = None,
    node: str = "",
    aff: Iterable[api.PodAffinityTerm] = (),
    anti: Iterable[api.PodAffinityTerm] = (),
    paff: Iterable[api.WeightedPodAffinityTerm] = (),
    panti: Iterable[api.WeightedPodAffinityTerm] = (),
) -> api.Pod:
    """A Pod with the given labels, node and pod (anti-)affinity."""
    aff, anti, paff, panti = tuple(aff), tuple(anti), tuple(paff), tuple(panti)
    pod = api.Pod(name=name, namespace=ns, uid=f"uid-{ns}-{name}", labels=dict(labels or {}))
    pod.node_name = node
    if aff or paff:
        pod.pod_affinity = api.PodAffinity(aff, paff)
    if anti or panti:
        pod.pod_anti_affinity = api.PodAffinity(anti, panti)
    return pod


def N(name: str, **labels: str) -> api.Node:
    """A node with exactly ``labels``."""
    return api.Node(name=name, labels=dict(labels), allocatable={"cpu": 4000, "pods": 110})


def cluster_of(
    nodes: Iterable[api.Node],
    pods: Iterable[api.Pod] = (),
    namespaces: Mapping[str, dict[str, str]] | None = None,
) -> ClusterState:
    c = ClusterState()
    for n in nodes:
        c.add_node(n)
    for i, p in enumerate(pods):
        if not p.name or p.name == "p":
            p.rename(f"existing-{i}")
        c.add_pod(p)
    c.namespaces.labels.update(namespaces if namespaces is not None else NAMESPACES)
    return c


def plugin(
    cluster: ClusterState, args: Mapping[str, Any] | None = None
) -> interpodaffinity.InterPodAffinity:
    return interpodaffinity.new(args, Handle(cluster))


def run_filter(
    nodes: Sequence[api.Node],
    pods: Iterable[api.Pod],
    pod: api.Pod,
    namespaces: Mapping[str, dict[str, str]] | None = None,
) -> tuple[Status, dict[str, Status | None]]:
    """PreFilter status and, unless it did not succeed, each node's Filter status."""
    c = cluster_of(nodes, pods, namespaces)
    pl = plugin(c)
    state = CycleState()
    _, pre = pl.pre_filter(state, pod, c)
    if pre.code != Code.SUCCESS:
        return pre, {}
    rows = np.asarray([c.nodes.row_of[n.name] for n in nodes], dtype=np.int64)
    verdict = pl.filter(state, pod, c, rows)
    out: dict[str, Status | None] = {}
    for n, code in zip(nodes, verdict.codes.tolist(), strict=True):
        out[n.name] = None if code == 0 else verdict.table[code]
    return pre, out


def run_score(
    nodes: Sequence[api.Node],
    pods: Iterable[api.Pod],
    pod: api.Pod,
    args: Mapping[str, Any] | None = None,
) -> tuple[Status, list[int]]:
    """PreScore status and, when it succeeded, the normalized scores in node order."""
    c = cluster_of(nodes, pods)
    pl = plugin(c, args)
    state = CycleState()
    rows = np.asarray([c.nodes.row_of[n.name] for n in nodes], dtype=np.int64)
    pre = pl.pre_score(state, pod, c, rows)
    if pre.code != Code.SUCCESS:
        return pre, []
    scores = pl.score(state, pod, c, rows)
    pl.normalize_score(state, pod, scores)
    return pre, scores.tolist()


AFF = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match pod affinity rules",))
ANTI = Status(Code.UNSCHEDULABLE, ("node(s) didn't match pod anti-affinity rules",))
EXISTING = Status(Code.UNSCHEDULABLE, ("node(s) didn't satisfy existing pods anti-affinity rules",))
SKIPPED = Status(Code.SKIP)
