"""The binder retries, after the rest of their reply, proposals refused for a cross-node
constraint: a shard placed its reply's Pods counting each other, so a spread Pod refused
early in the reply may fit once the reply's later Pods are committed."""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.parallel import protocol as p
from kubesched.testing import make_node
from tests.parallel.harness import ZONE, World, spread_pod


def _spread(name: str) -> api.Pod:
    return spread_pod(name, "100m")


def test_a_spread_proposal_refused_early_in_its_reply_is_committed_after_the_rest() -> None:
    nodes = [
        make_node(n).cap(cpu="4", memory="8Gi", pods=10).labels(**{ZONE: z}).obj()
        for n, z in (("a", "z0"), ("b", "z1"))
    ]
    w = World(nodes, round_size=4)
    try:
        w.api.create_pod(_spread("old").bound_to("a"))  # z0 has one, z1 none
        one, two = _spread("one"), _spread("two")
        w.add([one, two])
        d = w.parallel.dispatcher
        d.fill(w.sched.queue)
        for key in (one.key, two.key):  # both to shard 0, as if it had taken both
            rec = d.in_flight[key]
            d.load[rec.shard] -= 1
            rec.shard = 0
            d.load[0] += 1
        # shard 0 placed ``one`` in z0 after ``two`` in z1 (its replica assumed both), but
        # reports them in the other order: ``one`` alone would make z0 two ahead of z1
        binder = w.parallel.binder
        binder.process(
            0,
            [
                p.Propose(one.key, "a", w.generation("a"), (), p.NOT_LOCAL, ""),
                p.Propose(two.key, "b", w.generation("b"), (), p.NOT_LOCAL, ""),
            ],
        )
        assert w.placements() == {"ns/old": "a", "ns/one": "a", "ns/two": "b"}
        assert not binder.stats.conflicts
        assert binder.stats.committed == {"cross": 2}
        assert binder.refused[0] == []
    finally:
        w.close()
