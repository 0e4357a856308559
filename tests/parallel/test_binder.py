"""The binder's decisions, driven with hand-made shard results; gang units in the dispatcher;
preemption through the shards end to end."""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.parallel import protocol as p
from kubesched.testing import make_node, make_pod
from tests.parallel.harness import GANG_CONFIG, World, pod_group

HOST = "kubernetes.io/hostname"
GROUP = "scheduling.x-k8s.io/pod-group"


def _node(name: str, cpu: str = "2") -> api.Node:
    return make_node(name).cap(cpu=cpu, memory="8Gi", pods=10).labels(**{HOST: name}).obj()


def _handed(w: World, *pods: api.Pod) -> list[int]:
    """Create ``pods`` and let the dispatcher hand them out (nothing sent yet)."""
    w.add(pods)
    w.parallel.dispatcher.fill(w.sched.queue)
    return [w.parallel.dispatcher.in_flight[pod.key].shard for pod in pods]


def test_fast_path_needs_an_unchanged_node_and_full_check_catches_the_change() -> None:
    w = World([_node("a"), _node("b")], round_size=4)
    try:
        one, two = (
            make_pod("one", "ns").req(cpu="1500m").obj(),
            make_pod("two", "ns").req(cpu="1").obj(),
        )
        s1, s2 = _handed(w, one, two)
        version = w.generation("a")
        binder = w.parallel.binder
        binder.process(s1, [p.Propose(one.key, "a", version, (), True, "")])
        assert w.placements() == {"ns/one": "a"}
        # ``two`` was decided on the same version of ``a``: the fast path must not apply, and
        # the full check finds a full node, so the runner-up ``b`` is used.
        binder.process(
            s2, [p.Propose(two.key, "a", version, (("b", w.generation("b")),), True, "")]
        )
        assert w.placements() == {"ns/one": "a", "ns/two": "b"}
        assert binder.stats.committed == {"fast": 1, "alternative": 1}
        assert binder.stats.conflicts == {"resources": 1}
        w.check([one, two])
    finally:
        w.close()


def test_refused_proposal_goes_back_to_the_queue_and_the_shard_forgets_it() -> None:
    w = World([_node("a", cpu="1")], round_size=4)
    try:
        one, two = (
            make_pod("one", "ns").req(cpu="1").obj(),
            make_pod("two", "ns").req(cpu="1").obj(),
        )
        s1, s2 = _handed(w, one, two)
        version = w.generation("a")
        binder = w.parallel.binder
        binder.process(s1, [p.Propose(one.key, "a", version, (), True, "")])
        binder.process(s2, [p.Propose(two.key, "a", version, (), True, "")])
        assert w.placements() == {"ns/one": "a"}
        assert binder.refused[s2] == [(two.key, "resources")]
        assert w.sched.queue.queue_of(two.key) == "active"
        assert two.key not in w.parallel.dispatcher.in_flight
    finally:
        w.close()


def test_stale_result_after_deletion_is_ignored() -> None:
    w = World([_node("a")], round_size=4)
    try:
        gone = make_pod("gone", "ns").req(cpu="1").obj()
        [shard] = _handed(w, gone)
        w.api.delete_pod(gone)
        w.parallel.binder.process(
            shard, [p.Propose(gone.key, "a", w.generation("a"), (), True, "")]
        )
        assert w.placements() == {}
        assert w.parallel.binder.refused[shard] == [(gone.key, "stale")]
    finally:
        w.close()


def test_first_preemptor_claims_the_victim_the_second_is_refused() -> None:
    w = World([_node("a", cpu="1")], round_size=4)
    try:
        low = make_pod("low", "ns").req(cpu="1").priority(0).node("a").obj()
        low.termination_grace_period_seconds = 30  # stays terminating: still present
        w.add([low])
        hi1 = make_pod("hi1", "ns").req(cpu="1").priority(10).obj()
        hi2 = make_pod("hi2", "ns").req(cpu="1").priority(10).obj()
        s1, s2 = _handed(w, hi1, hi2)
        msg = "0/1 nodes are available: 1 Insufficient cpu."
        rest = ("Unschedulable", msg, ("NodeResourcesFit",), (), "a", (low.key,))
        binder = w.parallel.binder
        binder.process(s1, [p.Failed(hi1.key, *rest)])
        binder.process(s2, [p.Failed(hi2.key, *rest)])
        assert low.key in w.api.terminating
        assert w.sched.queue.nominator.node_of(hi1.key) == "a"
        assert binder.stats.conflicts == {"victim_claimed": 1}
        assert w.sched.queue.queue_of(hi2.key) == "active"
    finally:
        w.close()


def test_preemption_through_the_shards_end_to_end() -> None:
    w = World([_node("a", cpu="2"), _node("b", cpu="2")], round_size=2)
    try:
        lows = [make_pod(f"low{i}", "ns").req(cpu="1").priority(0).obj() for i in range(4)]
        for pod in lows:
            pod.termination_grace_period_seconds = 0
        w.add(lows)
        w.run(max_steps=200)
        assert len(w.placements()) == 4
        his = [make_pod(f"hi{i}", "ns").req(cpu="1").priority(100).obj() for i in range(2)]
        w.add(his)
        w.run(max_steps=500)
        placed = w.placements()
        assert all(h.key in placed for h in his), placed
        assert len(placed) == 4  # two low-priority Pods were preempted
        w.check(his)
    finally:
        w.close()


def test_a_gang_goes_to_one_shard_and_is_refused_whole() -> None:
    w = World([_node("a"), _node("b")], config=GANG_CONFIG, objects=[pod_group("g", "ns", 3)])
    try:
        members = [
            make_pod(f"m{i}", "ns").req(cpu="1").labels(**{GROUP: "g"}).obj() for i in range(3)
        ]
        shards = _handed(w, *members)
        assert len(set(shards)) == 1  # siblings were taken with the first member
        shard = shards[0]
        gens = {n: w.generation(n) for n in ("a", "b")}
        results = [
            p.Propose(members[0].key, "a", gens["a"], (), True, "ns/g"),
            p.Propose(members[1].key, "a", gens["a"], (), True, "ns/g"),
            p.Propose(members[2].key, "a", gens["a"], (), True, "ns/g"),  # no room left on a
        ]
        w.parallel.binder.process(shard, results)
        assert w.placements() == {}
        assert not w.sched.cluster.pods  # nothing is held either
        assert w.parallel.binder.stats.conflicts == {"gang_resources": 3}
        w.run(max_steps=300)  # retried as a unit, it fits on two nodes
        assert len(w.placements()) == 3
        w.check_gangs({"ns/g": 3})
    finally:
        w.close()


def test_a_gang_member_reported_unschedulable_fails_alone_and_its_siblings_wait() -> None:
    """The gang decision both coordinators share (``gangs.commit_unit``): a member the shard
    reports as fitting nowhere fails on its own; the members proposed with it are checked and
    committed together, and Coscheduling holds them at Permit until the gang is complete
    (the live form: ``tests/live/test_coordinator.py``)."""
    w = World([_node("a"), _node("b")], config=GANG_CONFIG, objects=[pod_group("g", "ns", 3)])
    try:
        members = [
            make_pod(f"m{i}", "ns").req(cpu="1").labels(**{GROUP: "g"}).obj() for i in range(3)
        ]
        [shard, *_] = _handed(w, *members)
        msg = "0/2 nodes are available: 2 Insufficient cpu."
        results: list[p.Result] = [
            p.Propose(members[0].key, "a", w.generation("a"), (), True, "ns/g"),
            p.Failed(members[1].key, "Unschedulable", msg, ("NodeResourcesFit",), (), "", ()),
            p.Propose(members[2].key, "b", w.generation("b"), (), True, "ns/g"),
        ]
        binder = w.parallel.binder
        binder.process(shard, results)
        assert binder.stats.conflicts == {}  # nobody refused for the failed member
        assert binder.stats.committed == {"full": 2}
        handle = w.sched.handle
        assert handle.get_waiting_pod(members[0].key) is not None
        assert handle.get_waiting_pod(members[2].key) is not None
        assert w.sched.queue.queue_of(members[1].key) in ("unschedulable", "backoff")
    finally:
        w.close()
