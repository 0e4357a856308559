"""A shard's search over its own partition looks for as many feasible nodes as the serial
scheduler would in the whole cluster."""

from __future__ import annotations

from kubesched.config.load import load_config
from kubesched.parallel.shard import ShardScheduler
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import SchedulerOptions, num_feasible_nodes_to_find
from kubesched.testing import make_node


def _shard(nodes: int) -> ShardScheduler:
    cfg = load_config(None, known_plugins=known_plugin_names())
    shard = ShardScheduler(cfg, SchedulerOptions(shards=2), index=0)
    for i in range(nodes):
        shard.on_node_add(make_node(f"n{i}").cap(cpu="4", memory="8Gi", pods=110).obj())
    return shard


def test_partition_percentage_finds_the_serial_number_of_nodes() -> None:
    shard = _shard(1000)
    shard._restrict = True
    mine = int(shard.candidate_rows().size)
    assert 400 < mine < 600  # about half the nodes hash to shard 0
    pct = shard._partition_percentage(None)
    assert pct is not None
    want = num_feasible_nodes_to_find(None, 1000)  # 420 of 1,000 (adaptive 42 %)
    assert num_feasible_nodes_to_find(pct, mine) >= want
    assert num_feasible_nodes_to_find(pct - 1, mine) < want  # the smallest that does
    assert shard._partition_percentage(None) == pct  # remembered
    assert shard._partition_percentage(100) == 100
    shard.on_node_add(make_node("late").cap(cpu="4", memory="8Gi", pods=110).obj())
    assert shard._percentage[0][1] == 1000  # not recomputed until asked again
    shard._partition_percentage(None)
    assert shard._percentage[0][1] == 1001


def test_whole_cluster_search_keeps_the_configured_percentage() -> None:
    shard = _shard(50)
    assert shard._partition_percentage(30) == 30  # not restricted: every node is a candidate
