"""Dormant shards under auto routing: nothing is streamed while the coordinator schedules
every Pod itself, the shards wake with a snapshot, and doze off again once a snapshot is
cheaper than the log they have not read."""

from __future__ import annotations

import pytest

from kubesched.api import objects as api
from kubesched.parallel import dormancy
from kubesched.testing import make_node, make_pod
from tests.parallel.harness import ScriptedRouter, World


def _nodes(n: int) -> list[api.Node]:
    return [make_node(f"n{i}").cap(cpu="2", memory="8Gi", pods=10).obj() for i in range(n)]


def _pods(prefix: str, n: int) -> list[api.Pod]:
    return [make_pod(f"{prefix}{i}", "ns").req(cpu="1").obj() for i in range(n)]


def test_nothing_is_streamed_while_every_pod_is_serial() -> None:
    router = ScriptedRouter(2, [True])
    w = World(_nodes(4), shards=2, router=router)
    try:
        pods = _pods("p", 6)
        w.add(pods)
        w.run()
        w.check(pods)
        hub = w.parallel
        assert len(w.placements()) == 6
        assert not hub.stream.synced
        assert hub.stream.log == []
        assert sum(s.messages for s in hub.parallel_metrics.shards) == 0
    finally:
        w.close()


@pytest.mark.parametrize("kind", ["inline", "process"])
def test_dozing_shards_wake_with_the_cluster_as_it_is_now(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The shards place two Pods, then the coordinator six (the cluster is full, and the
    log the shards have not read is half a snapshot: they doze off), two of those go; the
    two Pods the shards then place find exactly the freed slots -- their replicas were
    rebuilt from a snapshot, so no proposal is refused.  Shard processes replace their
    replica on ``reset`` (applied on top of the old one, the snapshot's nodes and Pods would
    be there twice)."""
    monkeypatch.setattr(dormancy, "DOZE_AFTER", 0)  # a small cluster: doze at once
    router = ScriptedRouter(2, [False] * 2 + [True] * 6 + [False] * 2)
    w = World(_nodes(4), shards=2, kind=kind, round_size=4, router=router)
    try:
        hub = w.parallel
        first = _pods("a", 2)
        w.add(first)
        w.run()
        assert hub.stream.synced
        second = _pods("b", 6)
        w.add(second)
        w.run()
        assert not hub.stream.synced
        assert hub.stream.log == []
        for pod in second[:2]:
            w.api.delete_pod(w.api.pods[pod.key], grace=0)
        third = _pods("c", 2)
        w.add(third)
        w.run()
        w.check(first + second[2:] + third)
        assert len(w.placements()) == 8
        binder = hub.binder.stats
        assert sum(binder.proposals.values()) == 4
        assert not binder.conflicts, binder.conflicts
    finally:
        w.close()


def test_the_binders_observers_sleep_with_the_shards() -> None:
    """While dormant the binder checks nothing, so its cache observers are detached; when
    the shards wake, the cache replays its Pods to them: the fast path counts the Pods with
    required anti-affinity the coordinator placed meanwhile."""
    router = ScriptedRouter(2, [True] * 3 + [False])
    w = World(_nodes(4), shards=2, round_size=4, router=router)
    try:
        hub = w.parallel
        anti = []
        for i in range(3):
            b = make_pod(f"x{i}", "ns").req(cpu="100m").labels(app="x")
            b.pod.pod_anti_affinity = api.PodAffinity(
                required=(
                    api.PodAffinityTerm(
                        "kubernetes.io/hostname",
                        api.LabelSelector(match_labels=(("app", "x"),)),
                    ),
                )
            )
            anti.append(b.obj())
        w.add(anti)
        w.run()
        fast = hub.binder.fast
        assert fast not in hub.cluster.observers
        assert fast.anti_affinity_pods == 0
        last = _pods("p", 1)
        w.add(last)
        w.run()
        w.check(anti + last)
        assert hub.stream.synced
        assert fast in hub.cluster.observers
        assert fast.anti_affinity_pods == 3
    finally:
        w.close()
