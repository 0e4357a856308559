"""Where the public benchmark set lives, and small config builders for the bench tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


BENCHMARKS = ROOT / "benchmarks" / "upstream"
"""The public scheduler_perf-format set, kept in the repository."""

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
