"""The binder's cross-node check: a proposal whose node is as its shard saw it keeps the
node-local Filters' verdicts and gets only PodTopologySpread / InterPodAffinity re-run on
the authoritative state; a node that changed meanwhile gets the full check."""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.parallel import protocol as p
from kubesched.testing import make_node, make_pod
from tests.parallel.harness import ZONE, World, spread_pod


def _world() -> World:
    nodes = [
        make_node(n).cap(cpu="1", memory="8Gi", pods=10).labels(**{ZONE: z}).obj()
        for n, z in (("a", "z0"), ("a2", "z0"), ("b", "z1"))
    ]
    return World(nodes)


def _evaluated(w: World, plugin: str) -> int:
    fwk = w.parallel.profiles["default-scheduler"]
    return fwk.evaluations.get((plugin, "Filter"), 0)


def test_an_unchanged_node_gets_only_the_cross_node_filters() -> None:
    w = _world()
    try:
        binder = w.parallel.binder
        fit = _evaluated(w, "NodeResourcesFit")
        w.propose(spread_pod("one", "500m"), "a", w.generation("a"))
        assert binder.stats.committed == {"cross": 1}
        assert _evaluated(w, "NodeResourcesFit") == fit  # the node-local verdicts stood
        assert _evaluated(w, "PodTopologySpread") > 0
        # a2 is unchanged, but z0 is now one ahead: the spread check refuses it
        w.propose(spread_pod("two", "500m"), "a2", w.generation("a2"), (("b", w.generation("b")),))
        assert w.placements() == {"ns/one": "a", "ns/two": "b"}
        assert binder.stats.conflicts == {"topology_spread": 1}
        assert binder.stats.committed == {"cross": 1, "alternative": 1}
        w.check([])
    finally:
        w.close()


def test_a_node_that_changed_gets_the_full_check() -> None:
    w = _world()
    try:
        binder = w.parallel.binder
        stale = w.generation("a")
        w.api.create_pod(make_pod("hog", "other").req(cpu="800m").obj().bound_to("a"))
        # the shard decided on ``a`` before the hog: its resources verdict no longer holds
        w.propose(spread_pod("one", "500m"), "a", stale, (("b", w.generation("b")),))
        assert w.placements() == {"other/hog": "a", "ns/one": "b"}
        assert binder.stats.conflicts == {"resources": 1}
        assert binder.stats.committed == {"alternative": 1}
    finally:
        w.close()


def test_a_nominated_pod_turns_the_cross_node_check_off() -> None:
    w = _world()
    try:
        binder = w.parallel.binder
        nominated = spread_pod("waiting", "100m")
        w.sched.queue.nominator.add(nominated, "b")
        w.propose(spread_pod("one", "500m"), "a", w.generation("a"))
        assert binder.stats.committed == {"full": 1}
    finally:
        w.close()


def _to_shard(w: World, pod: api.Pod, shard: int) -> None:
    """Hand ``pod`` (queued) out, to ``shard`` whatever the dispatcher chose."""
    w.add([pod])
    d = w.parallel.dispatcher
    d.fill(w.sched.queue)
    rec = d.in_flight[pod.key]
    d.load[rec.shard] -= 1
    rec.shard = shard
    d.load[shard] += 1


def test_a_shards_own_checked_commits_extend_its_chain_and_no_one_elses() -> None:
    w = _world()
    try:
        for name in ("old", "old2"):  # z1 two ahead: z0 may take two
            w.api.create_pod(spread_pod(name, "100m").bound_to("b"))
        binder = w.parallel.binder
        v_a = w.generation("a")
        one, two, three = (spread_pod(n, "100m") for n in ("one", "two", "three"))
        for pod, shard in ((one, 0), (two, 0), (three, 1)):
            _to_shard(w, pod, shard)
        # shard 0 decided ``two`` with ``one`` assumed on a, before the stream confirmed it
        binder.process(0, [p.Propose(one.key, "a", v_a, (), p.NOT_LOCAL, "")])
        binder.process(0, [p.Propose(two.key, "a", v_a, (), p.NOT_LOCAL, "")])
        assert binder.stats.committed == {"cross": 2}
        # shard 1 saw a without them: its verdict on a is stale, the full check runs
        binder.process(1, [p.Propose(three.key, "a", v_a, (), p.NOT_LOCAL, "")])
        assert binder.stats.committed == {"cross": 2, "full": 1}
        assert w.placements()["ns/two"] == "a" and w.placements()["ns/three"] == "a"
        w.check([])
    finally:
        w.close()
