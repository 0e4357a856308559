"""Auto routing: the router's probes and verdicts, and Pods the coordinator schedules itself
mixed with the shards' (their binds reach the replicas; nothing lost or doubled)."""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.parallel import router as r
from kubesched.parallel.router import Router
from kubesched.testing import make_node, make_pod
from tests.parallel.harness import ScriptedRouter, World

US = 1e-6


def _pipeline(router: Router, c_h: float, o_s: float, c_f: float) -> None:
    """Feed pipeline figures (µs per Pod) for enough Pods to fill the averages."""
    for _ in range(20):
        router.coordinator_step(64 * c_h * US, 64)
        router.shard_message(64 * o_s * US, 64 * c_f * US, 64, 64)


def _routes(router: Router, key: object, n: int) -> list[bool]:
    return [router.serial(key) for _ in range(n)]


def test_a_new_signature_tries_both_routes_then_follows_the_model() -> None:
    router = Router(2, cores=2)
    assert _routes(router, "k", r.PROBE_SERIAL) == [True] * r.PROBE_SERIAL
    for _ in range(r.PROBE_SERIAL):
        router.served_serially("k", 400 * US, 360 * US)
    assert _routes(router, "k", r.PROBE_SHARDS) == [False] * r.PROBE_SHARDS
    # the shards' answers are not in yet: serially meanwhile
    assert _routes(router, "k", r.PROBE_SERIAL) == [True] * r.PROBE_SERIAL
    for _ in range(64):
        router.searched_on_shard("k", 200 * US)
    _pipeline(router, c_h=50, o_s=40, c_f=10)
    assert _routes(router, "k", r.FIRST_STRETCH) == [False] * r.FIRST_STRETCH
    # the verdict is clear (400 µs serial against ~155 on the shards): no probe of the
    # serial route, the next stretch is longer
    assert _routes(router, "k", 2 * r.FIRST_STRETCH) == [False] * (2 * r.FIRST_STRETCH)
    assert router.routed["serial"] == 2 * r.PROBE_SERIAL


def test_a_close_verdict_probes_the_other_route_after_each_stretch() -> None:
    router = Router(2, cores=2)
    _routes(router, "k", r.PROBE_SERIAL)
    for _ in range(r.PROBE_SERIAL):
        router.served_serially("k", 170 * US, 130 * US)
    _routes(router, "k", r.PROBE_SHARDS + r.PROBE_SERIAL)
    for _ in range(64):
        router.searched_on_shard("k", 140 * US)
    _pipeline(router, c_h=50, o_s=40, c_f=10)  # t_1 170 µs, t_N 125: within CLEAR
    sig = router.sigs["k"]
    serial, pipeline = router.predict(sig)
    assert r.MARGIN * pipeline < serial < r.CLEAR * r.MARGIN * pipeline
    assert _routes(router, "k", r.FIRST_STRETCH) == [False] * r.FIRST_STRETCH
    assert _routes(router, "k", r.PROBE_SERIAL) == [True] * r.PROBE_SERIAL
    assert _routes(router, "k", 2 * r.FIRST_STRETCH) == [False] * (2 * r.FIRST_STRETCH)


def test_a_signature_the_pipeline_clearly_loses_is_never_probed_on_the_shards() -> None:
    """Once the pipeline's own figures are in (from another signature's probe), a new
    signature whose serial cycle is far cheaper than the pipeline's stays serial."""
    router = Router(2, cores=2)
    _pipeline(router, c_h=50, o_s=40, c_f=10)
    assert _routes(router, "cheap", r.PROBE_SERIAL) == [True] * r.PROBE_SERIAL
    for _ in range(r.PROBE_SERIAL):
        router.served_serially("cheap", 60 * US, 25 * US)  # t_1 60 µs, t_N ~90
    assert _routes(router, "cheap", 4 * r.FIRST_STRETCH) == [True] * (4 * r.FIRST_STRETCH)
    assert router.routed["shards"] == 0
    assert router.sigs["cheap"].best is True
    # a costly one is still tried on the shards
    assert _routes(router, "costly", r.PROBE_SERIAL) == [True] * r.PROBE_SERIAL
    for _ in range(r.PROBE_SERIAL):
        router.served_serially("costly", 500 * US, 460 * US)
    assert _routes(router, "costly", r.PROBE_SHARDS) == [False] * r.PROBE_SHARDS


def test_serial_cycles_are_sampled_once_a_stretch_is_under_way() -> None:
    router = Router(2, cores=2)
    _pipeline(router, c_h=50, o_s=40, c_f=10)
    timed = []
    for _ in range(r.PROBE_SERIAL + 256):
        router.serial("k")
        timed.append(router.timing)
        router.served_serially("k", 60 * US, 25 * US)
    assert all(timed[: r.PROBE_SERIAL])  # the probe: every cycle
    stretch = timed[r.PROBE_SERIAL :]
    assert all(stretch[: r.MIN_BATCH])
    assert sum(stretch[r.MIN_BATCH :]) == (256 - r.MIN_BATCH) // r.SAMPLE_EVERY


def test_the_sampling_verdict_follows_every_routed_pod() -> None:
    """``timing`` is decided for the Pod just routed whichever way it went: a nominated Pod
    of a signature routed to the shards still runs here, and must not inherit the verdict
    of the Pod routed before it."""
    router = Router(2, cores=2)
    router.serial("serial")  # the first Pod of a signature: probed serially, timed
    assert router.timing
    sig = router.sigs["shards"] = r.Signature()
    sig.serial, sig.probing, sig.left, sig.run = False, False, 100, 2 * r.MIN_BATCH
    assert router.serial("shards") is False
    assert not router.timing  # its run is past MIN_BATCH and off the sampling stride


def _measured(search_serial: float, search_shard: float) -> tuple[Router, r.Signature]:
    router = Router(2, cores=2)
    sig = router.sigs["k"] = r.Signature()
    for _ in range(200):
        router.served_serially("k", (search_serial + 40) * US, search_serial * US)
        router.searched_on_shard("k", search_shard * US)
    _pipeline(router, c_h=47, o_s=41, c_f=9)
    return router, sig


def test_a_cheap_search_stays_serial_and_an_expensive_one_goes_to_the_shards() -> None:
    # SchedulingBasic with result reuse (docs/parallel.md §4): search ~30 µs, 2 shards lose
    router, cheap = _measured(30, 32)
    serial, pipeline = router.predict(cheap)
    assert abs(serial - 70 * US) < 1 * US
    assert router.prefers_serial(cheap)
    # anti-affinity: ~420 µs of search, the shards search half the nodes each
    router, costly = _measured(420, 250)
    serial, pipeline = router.predict(costly)
    assert pipeline * r.MARGIN < serial
    assert not router.prefers_serial(costly)


def test_an_expensive_coordinator_keeps_pods_serial() -> None:
    router, sig = _measured(120, 120)
    assert not router.prefers_serial(sig)
    _pipeline(router, c_h=400, o_s=41, c_f=9)  # e.g. a full PreFilter per proposal
    assert router.prefers_serial(sig)


def _node(name: str) -> api.Node:
    return make_node(name).cap(cpu="2", memory="8Gi", pods=10).obj()


def test_the_coordinators_own_binds_reach_the_shards() -> None:
    """Six Pods scheduled by the coordinator fill three of four nodes' CPU; the two Pods
    the shards then place find the last free slots at once: no proposal is refused."""
    router = ScriptedRouter(2, [True] * 6 + [False] * 2)
    w = World([_node(f"n{i}") for i in range(4)], shards=2, round_size=4, router=router)
    try:
        pods = [make_pod(f"p{i}", "ns").req(cpu="1").obj() for i in range(8)]
        w.add(pods)
        w.run()
        w.check(pods)
        assert router.routed == {"serial": 6, "shards": 2}
        assert len(w.placements()) == 8
        binder = w.parallel.binder.stats
        assert sum(binder.proposals.values()) == 2
        assert not binder.conflicts, binder.conflicts
        summary = w.parallel.parallel_summary()
        assert summary["routing"]["pods"] == {"serial": 6, "shards": 2}
    finally:
        w.close()


def test_a_signature_never_measured_serially_still_tries_the_shards() -> None:
    """Serial cycles count only in steps without messages in flight; if another signature
    keeps the pipeline busy, a new one still gets its shard probe after a while."""
    router = Router(2, cores=2)
    assert _routes(router, "k", 4 * r.PROBE_SERIAL) == [True] * (4 * r.PROBE_SERIAL)
    assert _routes(router, "k", r.PROBE_SHARDS) == [False] * r.PROBE_SHARDS
    assert router.flips == 0


def test_the_serial_rest_is_kept_per_signature() -> None:
    """Pods that fail (or preempt) spend far more of their serial cycle outside the search
    than Pods that bind; their figures must not send the cheap ones to the shards."""
    router = Router(2, cores=2)
    _pipeline(router, c_h=50, o_s=40, c_f=10)
    for _ in range(4 * r.MIN_BATCH):
        router.serial("binds")
        router.served_serially("binds", 70 * US, 30 * US)
        router.serial("fails")
        router.served_serially("fails", 330 * US, 30 * US)
    serial, _ = router.predict(router.sigs["binds"])
    assert abs(serial - 70 * US) < 1 * US
    assert router.prefers_serial(router.sigs["binds"])
    assert not router.prefers_serial(router.sigs["fails"])


def test_the_coordinators_own_cycles_release_the_binders_kept_prefilter() -> None:
    """Kept PreFilter results are updated at every bind; while the coordinator schedules
    Pods itself nobody reads them, so its first own cycle drops them."""
    zone = "topology.kubernetes.io/zone"
    nodes = [
        make_node(f"n{i}").cap(cpu="4", memory="8Gi", pods=10).labels(**{zone: f"z{i % 2}"})
        for i in range(4)
    ]
    router = ScriptedRouter(2, [False] * 4 + [True] * 4)
    w = World([n.obj() for n in nodes], shards=2, round_size=4, router=router)
    try:
        pods = []
        for i in range(8):
            b = make_pod(f"p{i}", "ns").req(cpu="100m").labels(app="s")
            b.pod.topology_spread_constraints = (
                api.TopologySpreadConstraint(
                    1, zone, "DoNotSchedule", api.LabelSelector(match_labels=(("app", "s"),))
                ),
            )
            pods.append(b.obj())
        w.add(pods[:4])
        w.run()
        prefilter = w.parallel.binder.prefilter
        assert prefilter.kept  # the binder's full checks kept the spread signature's state
        w.add(pods[4:])
        w.run()
        assert router.routed == {"serial": 4, "shards": 4}
        assert not prefilter.kept
        w.check(pods)
    finally:
        w.close()


def test_refused_answers_count_against_the_pipeline() -> None:
    """A signature whose proposals the binder keeps refusing (preemptors contesting the same
    victims) pays one more pass per refusal: it stays serial."""
    router, sig = _measured(420, 250)
    assert not router.prefers_serial(sig)
    _, before = router.predict(sig)
    for i in range(200):
        router.answered("k")
        if i % 2 == 0:
            router.answered("k", refused=True)
    _, after = router.predict(sig)
    assert abs(after - 1.5 * before) < 1 * US
    for _ in range(400):  # PreemptionBasic's preemptors: refused ~1.2 times per answer
        router.answered("k")
        router.answered("k", refused=True)
        router.answered("k", refused=True)
    assert router.prefers_serial(sig)


def test_a_stretch_the_figures_clearly_turn_against_ends_early() -> None:
    router, sig = _measured(420, 250)
    sig.probing, sig.best, sig.serial, sig.left = False, False, False, 4096  # on the shards
    sig.tried = True
    assert _routes(router, "k", r.RECHECK) == [False] * r.RECHECK
    for _ in range(400):  # the binder refuses its proposals again and again
        router.answered("k")
        router.answered("k", refused=True)
        router.answered("k", refused=True)
    routes = _routes(router, "k", r.RECHECK + r.PROBE_SERIAL)
    assert routes[: r.RECHECK - 1] == [False] * (r.RECHECK - 1)
    assert routes[r.RECHECK - 1 :] == [True] * (r.PROBE_SERIAL + 1)  # a serial probe at once


def test_a_serial_stretch_runs_to_its_end() -> None:
    """Under load the serial figures scatter most; a wrong turn to the pipeline is the costly
    one, so only a stretch on the shards is cut short."""
    router, sig = _measured(30, 32)
    sig.probing, sig.best, sig.serial, sig.left = False, True, True, 1024
    for _ in range(4 * r.MIN_BATCH):  # the serial cycle looks ten times dearer for a while
        router.served_serially("k", 700 * US, 300 * US)
    assert not router.prefers_serial(sig)
    assert _routes(router, "k", 1024) == [True] * 1024


def test_before_any_pipeline_figures_a_search_below_the_floor_is_never_probed() -> None:
    """The first signature of a run: a pipeline that cost the coordinator twice the serial
    cycle's rest and a shard that rest again would still lose to a search under ~2.7 times
    that rest (2 shards, 2 cores), so no Pod goes to the shards -- their catch-up on every
    node and Pod so far would cost the run more than it could gain."""
    router = Router(2, cores=2)
    assert _routes(router, "cheap", r.PROBE_SERIAL) == [True] * r.PROBE_SERIAL
    for _ in range(r.PROBE_SERIAL):
        router.served_serially("cheap", 100 * US, 35 * US)  # SchedulingBasic: 35 + 65
    assert _routes(router, "cheap", 4 * r.FIRST_STRETCH) == [True] * (4 * r.FIRST_STRETCH)
    assert router.routed["shards"] == 0
    assert _routes(router, "costly", r.PROBE_SERIAL) == [True] * r.PROBE_SERIAL
    for _ in range(r.PROBE_SERIAL):
        router.served_serially("costly", 465 * US, 400 * US)  # anti-affinity: 6 x rest
    assert _routes(router, "costly", r.PROBE_SHARDS) == [False] * r.PROBE_SHARDS


def test_topology_spreading_is_not_probed() -> None:
    """TopologySpreading's spread Pods search ~1.9 times their serial rest (178 against
    95 µs); measured, the pipeline cost the coordinator 291 µs per Pod and lost (0.82×
    serial with every Pod on the shards), and the probe's catch-up alone cost the run a
    third of its speed: below the floor, they stay serial."""
    router = Router(2, cores=2)
    _routes(router, "spread", r.PROBE_SERIAL)
    for _ in range(r.PROBE_SERIAL):
        router.served_serially("spread", 273 * US, 178 * US)
    assert _routes(router, "spread", 4 * r.FIRST_STRETCH) == [True] * (4 * r.FIRST_STRETCH)
    assert router.routed["shards"] == 0


def test_anti_affinity_as_measured_goes_to_the_shards() -> None:
    """SchedulingPodAntiAffinity's figures as one run measured them (µs per Pod): serial
    search 618 and rest 118; on the shards a search of 721 and 184 besides, 14.6 per stream
    entry, the coordinator 162, 5 of 128 answers refused.  The model says 1.29x; the
    pipeline alone ran at 1.6x serial that morning: the signature goes to the shards."""
    router = Router(2, cores=2)
    sig = router.sigs["k"] = r.Signature()
    for _ in range(200):
        router.served_serially("k", 736 * US, 618 * US)
        router.searched_on_shard("k", 721 * US)
    _pipeline(router, c_h=162, o_s=184, c_f=14.6)
    for i in range(128):
        router.answered("k", refused=i < 5)
    serial, pipeline = router.predict(sig)
    assert 1.25 < serial / pipeline < 1.3
    assert not router.prefers_serial(sig)
