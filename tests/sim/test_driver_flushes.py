"""The simulator calls the queue's periodic work (``due``) when ``next_wakeup`` says: a Pod
leaves backoffQ the moment its backoff ends, the pool is flushed every 30 s from the
scheduler's start, and a standby's queue starts its own flushes when it takes over."""

from __future__ import annotations

from kubesched.api.parse import parse_node, parse_pod
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim.driver import SimCluster
from tests.explainer.test_explain import node, pod


def _sim() -> SimCluster:
    sim = SimCluster(load_config(None, known_plugins=known_plugin_names()))
    sim.api.create_node(parse_node(node("n0", cpu="1")))
    return sim


def test_an_unschedulable_pod_waits_for_the_pool_flush_every_30_s() -> None:
    sim = _sim()
    sim.loop.call_at(12.0, lambda: sim.api.create_pod(parse_pod(pod("big", cpu="2"))))
    sim.run(until=13.0)
    q = sim.scheduler.queue
    assert q.queue_of("default/big") == "unschedulable"
    assert q.next_wakeup() == 30.0  # the pool's flush, 30 s after the start


def test_a_standby_starts_its_own_flushes_at_takeover() -> None:
    sim = _sim()

    def failover() -> None:
        sim.kill_scheduler()
        sim.start_standby()
        sim.api.create_pod(parse_pod(pod("big", cpu="2")))

    sim.loop.call_at(12.0, failover)
    sim.run(until=13.0)
    q = sim.scheduler.queue
    assert q.queue_of("default/big") == "unschedulable"
    assert q.next_wakeup() == 42.0  # 30 s after the takeover, not the dead leader's 30.0
