"""GpuDevices: per-GPU filter, topology preference on small hand-made nodes, Reserve /
Unreserve symmetry and the GPU-index annotation at PreBind."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.api import gpu as g
from kubesched.devices import policies as gp
from kubesched.framework.interface import Code, CycleState, Handle
from kubesched.plugins import gpu_devices
from kubesched.state import gpus
from kubesched.state.cache import ClusterState
from tests.state.test_gpus import gpu_node, gpu_pod


def setup(*nodes, pods=()) -> tuple[ClusterState, gpu_devices.GpuDevices]:  # type: ignore[no-untyped-def]
    cl = ClusterState()
    for n in nodes:
        cl.add_node(n)
    for p in pods:
        cl.add_pod(p)
    return cl, gpu_devices.new(None, Handle(cl))


def rows(cl: ClusterState) -> np.ndarray:
    return cl.nodes.order()


def test_filter_model_and_capacity() -> None:
    cl, plugin = setup(
        gpu_node("t4", 2, "T4"),
        gpu_node("a100", 2, "A100"),
        gpu_node("busy", 2, "T4"),
        pods=[gpu_pod("x", "busy", milli=700), gpu_pod("y", "busy", milli=700)],
    )
    pod = gpu_pod("p", milli=400)
    pod.annotations[g.GPU_MODEL_ANNOTATION] = "T4"
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, cl)
    assert status.is_success()
    v = plugin.filter(state, pod, cl, rows(cl))
    assert v.codes.tolist() == [0, 1, 2]
    assert v.table[1].reasons == (gpu_devices.ERR_MODEL,)
    assert v.table[1].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert v.table[2].reasons == (gpu_devices.ERR_CAPACITY,)
    # CPU-only Pods skip the filter
    assert plugin.pre_filter(CycleState(), gpu_pod("c"), cl)[1].code == Code.SKIP


@pytest.mark.parametrize(
    ("topo", "used", "want"),
    [
        # one NVLink domain per half; the smaller fitting domain, lowest indices first
        ({"nvlink": [0, 0, 0, 0, 1, 1, 1, 1]}, "0,4,5", (6, 7)),
        # NVLink pairs beat lowest indices (0, 3) that would cross pairs
        ({"nvlink": [0, 0, 1, 1, 2, 2, 3, 3], "numa": [0, 0, 0, 0, 1, 1, 1, 1]}, "1,2", (4, 5)),
        # no NVLink: one NUMA node rather than (3, 4) across two
        ({"nvlink": [-1] * 8, "numa": [0, 0, 0, 0, 1, 1, 1, 1]}, "0,1,2", (4, 5)),
        # no NVLink pair left whole: one NUMA node
        ({"nvlink": [0, 0, 1, 1, 2, 2, 3, 3], "numa": [0, 0, 0, 0, 1, 1, 1, 1]}, "0,2,4,6", (1, 3)),
    ],
)
def test_reserve_prefers_one_nvlink_domain_then_one_numa_node(
    topo: dict, used: str, want: tuple[int, int]
) -> None:
    n_used = len(used.split(","))
    cl, plugin = setup(
        gpu_node("n", 8, topo=topo), pods=[gpu_pod("u", "n", whole=n_used, index=used)]
    )
    pod = gpu_pod("p", whole=2)
    state = CycleState()
    plugin.pre_filter(state, pod, cl)
    assert plugin.reserve(state, pod, "n").is_success()
    assert gpus.table_for(cl).indices_of(pod.key) == want


def test_topology_score() -> None:
    cl, plugin = setup(
        gpu_node("split", 4, topo={"nvlink": [0, 0, 1, 1], "numa": [0, 1, 0, 1]}),
        gpu_node("whole", 4, topo={"nvlink": [0, 0, 1, 1], "numa": [0, 0, 1, 1]}),
        pods=[gpu_pod("u", "split", whole=1, index="0")],
    )
    pod = gpu_pod("p", whole=2)
    state = CycleState()
    plugin.pre_filter(state, pod, cl)
    assert plugin.pre_score(state, pod, cl, rows(cl)).is_success()
    # split: NVLink domain 1 {2, 3} idle (50) but on two NUMA nodes; whole: domain 0 is also
    # one NUMA node (50 + 30); no PCIe switch holds two GPUs (default: one per GPU)
    assert plugin.score(state, pod, cl, rows(cl)).tolist() == [50, 80]
    assert plugin.pre_score(CycleState(), gpu_pod("s", milli=300), cl, rows(cl)).code == Code.SKIP


def test_reserve_unreserve_prebind() -> None:
    cl, plugin = setup(gpu_node("n", 2), pods=[gpu_pod("u", "n", milli=500, index="1")])
    t = gpus.table_for(cl)
    pod = gpu_pod("p", "n", milli=400)
    cl.assume_pod(pod, "n")  # provisional choice: the tightest GPU (1)
    assert t.indices_of(pod.key) == (1,)
    state = CycleState()
    plugin.pre_filter(state, pod, cl)
    state[gp.CHOICE_KEY] = {cl.nodes.row_of["n"]: 0}  # a policy scored GPU 0 best
    assert plugin.reserve(state, pod, "n").is_success()
    assert t.indices_of(pod.key) == (0,) and t.free[0, :2].tolist() == [600, 500]
    plugin.unreserve(state, pod, "n")
    assert t.indices_of(pod.key) == (1,) and t.free[0, :2].tolist() == [1000, 100]
    assert plugin.reserve(state, pod, "n").is_success()
    assert plugin.pre_bind(state, pod, "n").is_success()
    assert pod.annotations[g.GPU_INDEX_ANNOTATION] == "0"
    cl.forget_pod(pod)
    assert t.free[0, :2].tolist() == [1000, 500]


def test_reserve_fails_rather_than_oversubscribe() -> None:
    cl, plugin = setup(gpu_node("n", 1), pods=[gpu_pod("u", "n", milli=800)])
    pod = gpu_pod("p", milli=400)
    state = CycleState()
    plugin.pre_filter(state, pod, cl)
    status = plugin.reserve(state, pod, "n")
    assert status.code == Code.UNSCHEDULABLE
    assert gpus.table_for(cl).free[0, 0] == 200
