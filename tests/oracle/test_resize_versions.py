"""A running Pod's in-place resize as each release counts it (found for issue 30;
``docs/fidelity.md``).

v1.34-v1.36 take, per container, the largest of the spec's, the status's and the allocated
request, then sum; v1.37 takes the largest of the three sums.  Upstream's answers below
were recorded from ``oracle/bin/vV/kube-oracle``.
"""

from __future__ import annotations

from typing import Any

import pytest
from compare import ours


def _container(name: str, cpu: str) -> dict[str, Any]:
    return {"name": name, "image": "x", "resources": {"requests": {"cpu": cpu}}}


def _status(name: str, cpu: str) -> dict[str, Any]:
    return {
        "name": name,
        "ready": True,
        "restartCount": 0,
        "image": "x",
        "imageID": "",
        "resources": {"requests": {"cpu": cpu}},
        "allocatedResources": {"cpu": cpu},
    }


def _request() -> dict[str, Any]:
    """A 1-CPU node running a Pod resized from a 500m / b 100m to a 100m / b 500m: 1000m per
    container, 600m as totals; a 300m Pod to place."""
    alloc = {"cpu": "1", "memory": "4Gi", "pods": "110"}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n0", "labels": {"kubernetes.io/hostname": "n0"}},
        "status": {"allocatable": alloc, "capacity": dict(alloc)},
    }
    running = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "r", "namespace": "default", "uid": "u-r"},
        "spec": {
            "nodeName": "n0",
            "containers": [_container("a", "500m"), _container("b", "100m")],
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-01-01T00:00:00Z",
            "containerStatuses": [_status("a", "100m"), _status("b", "500m")],
        },
    }
    incoming = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "i", "namespace": "default", "uid": "u-i"},
        "spec": {"containers": [_container("c", "300m")]},
    }
    return {
        "cluster": {"apiVersion": "v1", "kind": "List", "items": [node, running]},
        "pod": incoming,
        "config": None,
    }


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36"])
def test_per_container_resize_until_v136(version: str) -> None:
    answer = ours(_request(), version)
    assert answer["result"] == "Unschedulable"
    assert answer["message"] == "0/1 nodes are available: 1 Insufficient cpu."


def test_resize_totals_at_v137() -> None:
    answer = ours(_request(), "1.37")
    assert answer["result"] == "Scheduled"
    assert answer["selectedNode"] == "n0"
