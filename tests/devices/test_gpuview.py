"""What the GPU plugins share: target workload args and the learned workload."""

from __future__ import annotations

import pytest

from kubesched.api.errors import InputError
from kubesched.devices import gpuview as gv
from kubesched.devices.fragmentation import Shape
from kubesched.state import gpus
from kubesched.state.cache import ClusterState
from tests.state.test_gpus import gpu_node, gpu_pod


def test_parse_target_workload() -> None:
    args = {
        "targetWorkload": [
            {"cpu": "4", "gpuMilli": 500, "gpuCount": 1, "weight": 3},
            {"cpu": "500m", "gpuMilli": 1000, "gpuCount": 2, "models": "B|A"},
            {"cpu": "2"},
        ]
    }
    assert gv.parse_target_workload(args, "args") == {
        Shape(4000, 500, 1): 3.0,
        Shape(500, 1000, 2, ("A", "B")): 1.0,
        Shape(2000, 0, 0): 1.0,
    }
    assert gv.parse_target_workload(None, "args") == {}


@pytest.mark.parametrize(
    ("items", "fragment"),
    [
        ("x", "must be a list"),
        ([1], "must be an object"),
        ([{"gpuMilli": 500, "gpuCount": 2}], "gpuMilli must be"),
        ([{"gpuMilli": 500, "gpuCount": 1, "weight": 0}], "weight"),
        ([{"cpu": "lots"}], "invalid value"),
    ],
)
def test_bad_target_workload(items: object, fragment: str) -> None:
    with pytest.raises(InputError, match=fragment):
        gv.parse_target_workload({"targetWorkload": items}, "args")


def test_learned_workload_follows_pods() -> None:
    cl = ClusterState()
    cl.add_node(gpu_node("a", 2))
    cl.add_pod(gpu_pod("x", "a", milli=300))
    wm = gv.WorkloadModel({})
    wm.see_cluster(cl)
    wm.see("default/y", Shape(1000, 1000, 1))
    wm.see("default/y", Shape(1000, 1000, 1))  # counted once
    tw = wm.workload()
    assert set(tw.shapes) == {Shape(1000, 300, 1), Shape(1000, 1000, 1)}
    fm, hv = wm.models(gpus.table_for(cl))
    assert fm.workload.shapes == tw.shapes and hv.v[1000] == 0
    fixed = gv.WorkloadModel({Shape(0, 0, 0): 1.0})
    fixed.see("default/z", Shape(1000, 1000, 1))
    assert fixed.workload().shapes == (Shape(0, 0, 0),)
