"""GPU requests of Pods and GPU devices of Nodes (kubesched.api.gpu)."""

from __future__ import annotations

import json

import pytest

from kubesched.api import gpu as g
from kubesched.api.errors import InputError
from kubesched.testing import make_node, make_pod


@pytest.mark.parametrize(
    ("requests", "models", "want"),
    [
        ({}, "", g.GpuRequest(0, 0, ())),
        ({g.GPU_RESOURCE: 2}, "", g.GpuRequest(2, 1000, ())),
        ({g.GPU_MILLI_RESOURCE: 250}, "", g.GpuRequest(1, 250, ())),
        ({g.GPU_MILLI_RESOURCE: 1000}, "", g.GpuRequest(1, 1000, ())),
        ({g.GPU_RESOURCE: 1}, "V100M32|V100M16|", g.GpuRequest(1, 1000, ("V100M16", "V100M32"))),
    ],
)
def test_pod_gpu_request(requests: dict[str, int], models: str, want: g.GpuRequest) -> None:
    pod = make_pod().res(requests).obj()
    if models:
        pod.annotations[g.GPU_MODEL_ANNOTATION] = models
    assert g.pod_gpu_request(pod) == want


@pytest.mark.parametrize(
    "requests",
    [{g.GPU_RESOURCE: 1, g.GPU_MILLI_RESOURCE: 500}, {g.GPU_MILLI_RESOURCE: 1500}],
)
def test_malformed_pod_gpu_request(requests: dict[str, int]) -> None:
    with pytest.raises(InputError):
        g.pod_gpu_request(make_pod().res(requests).obj())


def test_request_properties() -> None:
    shared = g.GpuRequest(1, 300, ("T4",))
    assert shared.shared and shared.total_milli == 300
    assert shared.accepts("T4") and not shared.accepts("A10")
    assert not g.GpuRequest(2, 1000).shared and g.GpuRequest(2, 1000).total_milli == 2000


def test_node_gpus_defaults_and_topology() -> None:
    node = make_node("n").res({g.GPU_RESOURCE: 4}).labels(**{g.GPU_PRODUCT_LABEL: "A100"}).obj()
    dev = g.node_gpus(node)
    assert (dev.count, dev.model) == (4, "A100")
    assert dev.numa == (0, 0, 0, 0) and dev.pcie == (0, 1, 2, 3) and dev.nvlink == (0, 0, 0, 0)
    node.annotations[g.GPU_TOPOLOGY_ANNOTATION] = json.dumps(
        {"numa": [0, 0, 1, 1], "nvlink": [0, 0, -1, -1]}
    )
    dev = g.node_gpus(node)
    assert dev.numa == (0, 0, 1, 1) and dev.nvlink == (0, 0, -1, -1) and dev.pcie == (0, 1, 2, 3)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("{", "not JSON"),
        ("[1]", "JSON object"),
        ('{"numa": [0, 1]}', "2 entries for 4 GPUs"),
        ('{"numa": ["a", 0, 0, 0]}', "list of integers"),
        ('{"rack": [0, 0, 0, 0]}', "unknown level"),
    ],
)
def test_malformed_topology(raw: str, fragment: str) -> None:
    node = make_node("n").res({g.GPU_RESOURCE: 4}).obj()
    node.annotations[g.GPU_TOPOLOGY_ANNOTATION] = raw
    with pytest.raises(InputError, match=fragment):
        g.node_gpus(node)


def test_index_annotation_round_trip() -> None:
    assert g.format_indices([3, 1]) == "3,1"
    assert g.parse_indices("3,1") == (3, 1)
    assert g.parse_indices("") is None and g.parse_indices("a,1") is None
