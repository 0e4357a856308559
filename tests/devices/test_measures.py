"""GPU placement measures for the metrics and report panels."""

from __future__ import annotations

import pytest

from kubesched.devices import measures
from kubesched.devices.fragmentation import Shape, target_workload
from kubesched.state.cache import ClusterState
from tests.state.test_gpus import gpu_node, gpu_pod


def test_gpu_measures() -> None:
    cl = ClusterState()
    cl.add_node(gpu_node("a", 8, topo={"numa": [0, 0, 0, 0, 1, 1, 1, 1]}))
    cl.add_node(gpu_node("b", 8))
    cl.add_node(gpu_node("c", 2))
    assert measures.idle_whole_gpu_nodes(cl) == 2
    cl.add_pod(gpu_pod("x", "a", whole=2, index="3,4"))  # across NUMA nodes 0 and 1
    cl.add_pod(gpu_pod("y", "b", whole=2, index="0,1"))
    assert measures.idle_whole_gpu_nodes(cl) == 0
    assert measures.cross_numa_placements(cl) == 1
    pending = [gpu_pod("big", whole=8), gpu_pod("six", whole=6), gpu_pod("one", whole=1)]
    assert measures.pods_waiting_for_whole_node(cl, pending) == 1
    # half the workload asks no GPU: half the idle capacity is fragment; a 0.6 GPU share
    # leaves 400 that the 1-GPU shape cannot use
    tw = target_workload({Shape(0, 0, 0): 1.0, Shape(1000, 1000, 1): 1.0})
    cl.add_pod(gpu_pod("s", "c", milli=600))
    idle = 18000 - 4000 - 600
    want = (0.5 * idle + 0.5 * 400) / 18000 * 100
    assert measures.fragmentation_percent(cl, tw) == pytest.approx(want)
    assert measures.fragmentation_percent(ClusterState(), tw) == 0.0
