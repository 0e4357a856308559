"""GPU topology from Koordinator Device objects instead of the node annotation."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import gpu as g
from kubesched.api.errors import InputError
from kubesched.devices import koordinator
from kubesched.framework.interface import Handle
from kubesched.metrics import SchedulerMetrics
from kubesched.plugins import gpu_devices
from kubesched.sim.whatif import schedule
from kubesched.state import gpus
from kubesched.state.cache import ClusterState
from tests.plugins.test_gpu_metrics_export import CONFIG, gauges, items, node, pod
from tests.state.test_gpus import gpu_node


def device(name: str, numa: list[int], pcie: list[str] | None = None) -> dict[str, Any]:
    devs: list[dict[str, Any]] = [
        {
            "type": "gpu",
            "minor": i,
            "health": True,
            "topology": {"socketID": n, "nodeID": n, "pcieID": (pcie or [""] * len(numa))[i]},
        }
        for i, n in enumerate(numa)
    ]
    devs.insert(1, {"type": "rdma", "minor": 0, "topology": {"nodeID": 7}})  # not a GPU
    return {
        "apiVersion": koordinator.API_VERSION,
        "kind": "Device",
        "metadata": {"name": name},
        "spec": {"devices": devs},
    }


def test_device_gpus_reads_numa_and_pcie_switches_by_minor() -> None:
    dev = koordinator.device_gpus(device("n1", [0, 0, 1, 1], ["pci:3a", "pci:3a", "pci:b0", "x"]))
    assert dev.node == "n1"
    assert dev.numa == (0, 0, 1, 1)
    assert dev.pcie == (0, 0, 1, 2)
    assert koordinator.is_device(device("n1", [0]))
    assert not koordinator.is_device({"apiVersion": "v1", "kind": "Device"})


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda d: d["spec"]["devices"][0].pop("minor"), "spec.devices[0].minor"),
        (lambda d: d["spec"]["devices"][0]["topology"].update(nodeID="x"), "topology.nodeID"),
        (lambda d: d["spec"]["devices"][2].update(minor=5), "spec.devices"),
        (lambda d: d["metadata"].pop("name"), "metadata.name"),
    ],
)
def test_malformed_devices_name_the_field(mutate: Any, path: str) -> None:
    d = device("n1", [0, 1])
    mutate(d)
    with pytest.raises(InputError, match=path.replace("[", r"\[").replace("]", r"\]")):
        koordinator.device_gpus(d)


def test_device_topology_overrides_the_node_and_survives_node_updates() -> None:
    cl = ClusterState()
    cl.add_node(gpu_node("n1", 4))  # no annotation: one NUMA node, one PCIe switch per GPU
    plugin = gpu_devices.new(None, Handle(cl))
    t = gpus.table_for(cl)
    row = cl.nodes.row_of["n1"]
    plugin.on_object(device("n1", [0, 0, 1, 1], ["a", "a", "b", "b"]))
    assert t.numa[row, :4].tolist() == [0, 0, 1, 1]
    assert t.pcie[row, :4].tolist() == [0, 0, 1, 1]
    cl.update_node(gpu_node("n1", 4, model="H100"))  # the table re-reads the node ...
    assert t.numa[row, :4].tolist() == [0, 0, 1, 1]  # ... and the Device still wins
    # a 2-GPU Pod takes one PCIe switch of one NUMA node
    assert gpu_devices.choose_gpus(t, row, g.GpuRequest(2, 1000)) == (0, 1)
    plugin.on_object(device("n1", [0, 0, 1, 1]), True)  # deleted: the node's own again
    assert t.numa[row, :4].tolist() == [0, 0, 0, 0]
    plugin.on_object({"apiVersion": koordinator.API_VERSION, "kind": "Device"})  # ignored


def test_a_device_in_a_snapshot_decides_cross_numa_placement() -> None:
    # GPUs 1 and 2 are busy; the Device puts 0 and 3 on different NUMA nodes
    base = [node("c", 4), pod("r1", 1, "c", "1"), pod("r2", 1, "c", "2")]
    for objs, crossing in ((base, 0), ([*base, device("c", [0, 0, 1, 1])], 1)):
        metrics = SchedulerMetrics()
        out = schedule(items(*objs), items(pod("pair", 2)), CONFIG, metrics=metrics)
        assert out["pods"]["default/pair"]["node"] == "c"
        assert gauges(metrics)["scheduler_gpu_cross_numa_pods"] == crossing
