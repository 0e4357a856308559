"""Real shard processes: placements, a killed shard, a restarted coordinator, determinism."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.parallel.coordinator import ParallelScheduler
from kubesched.scheduler import SchedulerOptions
from kubesched.testing import make_node, make_pod
from tests.parallel.harness import World

HOST = "kubernetes.io/hostname"


def _nodes(n: int = 12, cpu: str = "2") -> list[api.Node]:
    return [
        make_node(f"node-{i:02d}")
        .cap(cpu=cpu, memory="8Gi", pods=20)
        .labels(**{HOST: f"n{i}"})
        .obj()
        for i in range(n)
    ]


def _pods(n: int, cpu: str = "250m", prefix: str = "p") -> list[api.Pod]:
    return [make_pod(f"{prefix}{i:03d}", "ns").req(cpu=cpu, memory="256Mi").obj() for i in range(n)]


def _run(kind: str, shards: int, seed: int = 0, **kw: Any) -> dict[str, str]:
    w = World(_nodes(), shards=shards, kind=kind, seed=seed, round_size=8)
    try:
        pods = _pods(80)
        w.add(pods)
        w.run(max_steps=2000, **kw)
        w.check(pods)
        return w.placements()
    finally:
        w.close()


def test_process_shards_place_everything_and_match_inline_shards() -> None:
    with_processes = _run("process", 2)
    assert len(with_processes) == 80
    assert with_processes == _run("inline", 2)


@pytest.mark.parametrize("shards", [1, 2])
def test_same_seed_same_placements(shards: int) -> None:
    assert _run("inline", shards, seed=3) == _run("inline", shards, seed=3)


def test_killed_shard_loses_nothing() -> None:
    w = World(_nodes(), shards=2, kind="process", round_size=8)
    try:
        pods = _pods(96)  # 24 CPUs of requests on 24 CPUs: every slot is taken in the end
        w.add(pods)
        w.run(max_steps=3000, crash={2: 0, 5: 1})
        w.check(pods)
        assert len(w.placements()) == 96
        restarts = [s["restarts"] for s in w.parallel.parallel_summary()["perShard"]]
        assert restarts == [1, 1]
    finally:
        w.close()


def _relist(w: World, sched: ParallelScheduler) -> None:
    """What a new scheduler's informers do first: list everything, then watch (the old
    coordinator is gone: it hears nothing more)."""
    w.api.watchers.clear()
    w.api.watch(sched)


def test_restarted_coordinator_rebuilds_from_the_api_server() -> None:
    w = World(_nodes(), shards=2, kind="inline", round_size=4)
    pods = _pods(90)
    w.add(pods)
    for _ in range(6):
        w.step()
    first = len(w.placements())
    assert 0 < first < 90
    w.close()  # the coordinator dies with Pods handed out and proposals unanswered
    w.sched = ParallelScheduler(
        w.cfg,
        clock=lambda: w.now,
        api_client=w.client,
        submit_binding=w.client.submit_binding,
        options=SchedulerOptions(shards=2, round_size=4),
        transport_kind="inline",
    )
    _relist(w, w.parallel)
    assert len(w.parallel.cluster.pods) == first
    w.run(max_steps=2000)
    try:
        w.check(pods)
        assert len(w.placements()) == 90
    finally:
        w.close()


def test_last_free_slot_goes_to_exactly_one_shard() -> None:
    # One node with room for one more Pod; both shards see it free and both propose it.
    node = make_node("only").cap(cpu="1", memory="8Gi", pods=10).labels(**{HOST: "only"}).obj()
    w = World([node], shards=2, kind="inline", round_size=1)
    try:
        pods = _pods(2, cpu="600m")
        w.add(pods)
        w.run(max_steps=200)
        w.check(pods)
        assert len(w.placements()) == 1
        summary = w.parallel.parallel_summary()["binder"]
        assert summary["conflicts"] == {"resources": 1}
        assert w.sched.failures  # the loser is pending with a recorded reason
    finally:
        w.close()
