"""A shard's ``PodsToActivate`` for Pods only the coordinator holds (a gang's siblings)."""

from __future__ import annotations

from kubesched.config.load import load_config
from kubesched.parallel import protocol as p
from kubesched.parallel.shard import ShardScheduler
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import SchedulerOptions
from kubesched.testing import make_node, make_pod
from tests.parallel.harness import GANG_CONFIG, pod_group


def test_a_waiting_member_asks_the_coordinator_to_activate_its_failed_siblings() -> None:
    """Members handed out one by one: the first fails PreFilter (too few siblings yet) and
    leaves the shard's queue; the last reaches Permit and activates its siblings (upstream
    Coscheduling's ``ActivateSiblings``), which only the coordinator's queue holds now: the
    reply says so, or the first would sit unschedulable while the last times out."""
    cfg = load_config(GANG_CONFIG, known_plugins=known_plugin_names())
    shard = ShardScheduler(cfg, SchedulerOptions(shards=1), index=0)
    for i in range(2):
        shard.on_node_add(make_node(f"n{i}").cap(cpu="4", memory="8Gi", pods=110).obj())
    shard.on_object(pod_group("g", "ns", 2))
    first, last = (
        make_pod(n, "ns").req(cpu="1").labels(**{p.GROUP_LABEL: "g"}).obj() for n in ("a", "b")
    )
    reply = shard.process(p.ToShard(1.0, pods=[first]))
    assert [type(r) for r in reply.results] == [p.Failed] and reply.activate == []
    reply = shard.process(p.ToShard(2.0, pods=[last]))
    assert reply.results == [] and reply.waiting == 1  # the last waits at Permit
    assert reply.activate == [first.key]
