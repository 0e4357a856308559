"""PreFilterResults (upstream ``RunPreFilterPlugins`` and ``findNodesThatFitPod``): results
of several plugins intersect; an empty intersection rejects every node with upstream's
reason, and names the snapshot lacks are dropped."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.framework.interface import SUCCESS, CycleState, PreFilterResult, Status
from kubesched.state.cache import ClusterState
from kubesched.testing import drain, make_node, make_pod, new_scheduler

NOT_HELPFUL = " preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."


def narrowing(name: str, *nodes: str) -> Any:
    """A plugin whose PreFilter narrows the search to ``nodes``."""

    class Narrow:
        def __init__(self, args: object, handle: object) -> None:
            self.name = name

        def pre_filter(
            self, state: CycleState, pod: api.Pod, cluster: ClusterState
        ) -> tuple[PreFilterResult | None, Status]:
            return PreFilterResult(frozenset(nodes)), SUCCESS

    return Narrow


def run(*plugins: tuple[str, tuple[str, ...]]) -> tuple[str, dict[str, str], set[str]]:
    """Schedule one Pod on n1..n3 with ``plugins`` enabled; its failure message, the binds
    and the plugins the queue recorded as having rejected it."""
    registry = {name: narrowing(name, *nodes) for name, nodes in plugins}
    enabled = [{"name": name} for name, _ in plugins]
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"plugins": {"preFilter": {"enabled": enabled}}}],
    }
    s, fake, _ = new_scheduler(config, registry)
    for n in ("n1", "n2", "n3"):
        s.on_node_add(make_node(n).cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_pod_add(make_pod("p").req(cpu="100m").obj())
    drain(s)
    failure = fake.failures.get("default/p", ("", ""))[1]
    rejected = {p for qp in s.queue.pending_pod_infos() for p in qp.unschedulable_plugins}
    return failure, fake.binds, rejected


@pytest.mark.parametrize(
    ("plugins", "reason"),
    [
        (
            (("ToA", ("n1",)), ("ToB", ("n2",))),
            "node(s) didn't satisfy plugin(s) [ToA ToB] simultaneously",
        ),
        ((("ToNone", ()),), "node(s) didn't satisfy plugin ToNone"),
    ],
)
def test_an_empty_intersection_rejects_every_node(
    plugins: tuple[tuple[str, tuple[str, ...]], ...], reason: str
) -> None:
    message, binds, rejected = run(*plugins)
    assert message == f"0/3 nodes are available: {reason}." + NOT_HELPFUL
    assert not binds
    assert rejected == {name for name, _ in plugins}


def test_names_the_snapshot_lacks_are_dropped() -> None:
    message, binds, rejected = run(("ToGhost", ("ghost",)))
    assert message == (
        "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [ToGhost]." + NOT_HELPFUL
    )
    assert rejected == {"ToGhost"}
    _, binds, _ = run(("ToGhostOrN2", ("ghost", "n2")), ("ToN2OrN3", ("n2", "n3")))
    assert binds == {"default/p": "n2"}
