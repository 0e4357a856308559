"""The fast path for node-domain anti-affinity: a proposal whose only cross-node check is
anti-affinity by hostname commits without a full check on a node alone in its hostname
domain, and never where another node shares the domain or a term spans nodes (there the
binder re-runs the cross-node Filters)."""

from __future__ import annotations

import pytest

from kubesched.api import objects as api
from kubesched.parallel import protocol as p
from kubesched.testing import make_node, make_pod
from tests.parallel.harness import World

HOST = p.HOSTNAME_LABEL
ZONE = "topology.kubernetes.io/zone"
WEB = api.LabelSelector(match_labels=(("app", "web"),))


def _node(name: str, host: str | None = None) -> api.Node:
    return (
        make_node(name)
        .cap(cpu="4", memory="8Gi", pods=10)
        .labels(**{HOST: host or name, ZONE: "z1"})
        .obj()
    )


def _web(name: str, key: str = HOST, node: str = "") -> api.Pod:
    b = make_pod(name, "ns").req(cpu="100m").labels(app="web")
    if node:
        b = b.node(node)
    pod = b.obj()
    pod.pod_anti_affinity = api.PodAffinity(required=(api.PodAffinityTerm(key, WEB),))
    return pod


def test_hostname_anti_affinity_commits_fast_and_a_stale_view_gets_the_full_check() -> None:
    w = World([_node("a"), _node("b")])
    try:
        binder = w.parallel.binder
        v_a = w.generation("a")
        w.propose(_web("one"), "a", v_a, local=p.NODE_DOMAIN)
        assert binder.stats.committed == {"fast": 1}
        # decided on the version of ``a`` before ``one``: full check, anti-affinity says no
        w.propose(_web("two"), "a", v_a, (("b", w.generation("b")),), local=p.NODE_DOMAIN)
        assert w.placements() == {"ns/one": "a", "ns/two": "b"}
        assert binder.stats.committed == {"fast": 1, "alternative": 1}
        assert binder.stats.conflicts == {"pod_affinity": 1}
        w.propose(
            make_pod("plain", "ns").req(cpu="100m").obj(),
            "a",
            w.generation("a"),
            local=p.NODE_DOMAIN,
        )
        assert binder.stats.committed["fast"] == 2  # a plain Pod beside them: fast too
        w.check([])
    finally:
        w.close()


def test_a_node_sharing_its_hostname_gets_the_cross_node_check() -> None:
    w = World([_node("a", host="shared"), _node("a2", host="shared")])
    try:
        binder = w.parallel.binder
        w.propose(_web("one"), "a", w.generation("a"), local=p.NODE_DOMAIN)
        assert binder.fast.alone(w.sched.cluster.nodes.row_of["a"]) is False
        assert binder.stats.committed == {"cross": 1}  # InterPodAffinity re-run, unchanged node
        # a2 is unchanged, but ``one`` on a is in the same hostname domain
        w.propose(_web("two"), "a2", w.generation("a2"), local=p.NODE_DOMAIN)
        assert w.placements() == {"ns/one": "a"}
        assert sum(binder.stats.conflicts.values()) == 1
    finally:
        w.close()


def test_an_anti_affinity_term_spanning_nodes_turns_the_fast_path_off() -> None:
    w = World([_node("a"), _node("b")])
    try:
        w.add([_web("zonal", key=ZONE, node="b")])
        assert w.parallel.binder.fast.spanning_pods == 1
        w.propose(_web("one"), "a", w.generation("a"), local=p.NODE_DOMAIN)  # a is unchanged, yet
        assert not w.parallel.binder.stats.committed  # the full check ran and refused:
        assert w.placements() == {"ns/zonal": "b"}  # zonal's term covers the zone of a
        assert sum(w.parallel.binder.stats.conflicts.values()) == 1
    finally:
        w.close()


@pytest.mark.parametrize(
    ("affinity", "anti", "expected"),
    [
        (None, None, True),
        (None, api.PodAffinityTerm(HOST, WEB), True),
        (None, api.PodAffinityTerm(ZONE, WEB), False),
        (None, api.PodAffinityTerm(HOST, WEB, namespace_selector=WEB), False),
        (api.PodAffinityTerm(HOST, WEB), None, False),
    ],
)
def test_which_pods_are_node_domain_only(
    affinity: api.PodAffinityTerm | None, anti: api.PodAffinityTerm | None, expected: bool
) -> None:
    pod = make_pod("x").obj()
    if affinity is not None:
        pod.pod_affinity = api.PodAffinity(required=(affinity,))
    if anti is not None:
        pod.pod_anti_affinity = api.PodAffinity(required=(anti,))
    assert p.node_domain_only(pod) is expected
