"""Where the public benchmark set lives, and small config builders for the bench tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _find_benchmarks() -> Path | None:
    # The shared folder sits beside the repository (../shared) in CI and in the lab.
    for base in (ROOT / "shared", ROOT.parent / "shared"):
        if (base / "benchmarks" / "performance-config.yaml").is_file():
            return base / "benchmarks"
    return None


BENCHMARKS = _find_benchmarks()
needs_shared = pytest.mark.skipif(BENCHMARKS is None, reason="shared/benchmarks not found")

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"generateName": "node-"},
    "status": {"capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"}},
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"generateName": "pod-"},
    "spec": {
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}]
    },
}


def write_config(tmp: Path, cases: list[dict[str, Any]], **templates: dict[str, Any]) -> Path:
    """Write ``node.yaml``, ``pod.yaml`` (plus ``templates``) and ``config.yaml`` in ``tmp``."""
    for name, doc in {"node": NODE, "pod": POD, **templates}.items():
        (tmp / f"{name}.yaml").write_text(yaml.safe_dump(doc))
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(cases, sort_keys=False))
    return path


def basic_case(**workload: Any) -> dict[str, Any]:
    """A SchedulingBasic-like case: nodes, then measured Pods; ``workload`` overrides."""
    w = {"name": "w", "params": {"nodes": 3, "pods": 6}, **workload}
    return {
        "name": "Basic",
        "defaultPodTemplatePath": "pod.yaml",
        "workloadTemplate": [
            {"opcode": "createNodes", "countParam": "$nodes", "nodeTemplatePath": "node.yaml"},
            {"opcode": "createPods", "countParam": "$pods", "collectMetrics": True},
        ],
        "workloads": [w],
    }
