"""A small sweep on disk: a 500-node scenario with a few hundred Pods, and its sweep file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SCENARIO: dict[str, Any] = {
    "apiVersion": "kubesched.io/v1alpha1",
    "kind": "Scenario",
    "metadata": {"name": "small-500"},
    "spec": {
        "seed": 1,
        "durationSeconds": 8,
        "drainSeconds": 10,
        "nodePools": [
            {"name": "cpu", "count": 450, "zones": ["a", "b", "c"],
             "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
            {"name": "gpu", "count": 50, "zones": ["a", "b"],
             "taints": [{"key": "gpu", "value": "y", "effect": "NoSchedule"}],
             "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110",
                             "nvidia.com/gpu": "8"}},
        ],
        "workloads": [
            {"name": "web", "count": 160, "ratePerSecond": 40, "lifetimeSeconds": 30,
             "template": {"spec": {"containers": [{"name": "c", "image": "i", "resources": {
                 "requests": {"cpu": "1", "memory": "2Gi"}}}]}}},
            {"name": "train", "count": 40, "ratePerSecond": 10, "gpuChoices": [1, 2, 4, 8],
             "template": {"spec": {
                 "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                 "containers": [{"name": "c", "image": "i", "resources": {
                     "requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"},
                     "limits": {"nvidia.com/gpu": "1"}}}]}}},
            {"name": "gang", "count": 16, "ratePerSecond": 20, "podGroup": {"size": 4},
             "template": {"spec": {"containers": [{"name": "c", "image": "i", "resources": {
                 "requests": {"cpu": "1", "memory": "1Gi"}}}]}}},
        ],
    },
}  # fmt: skip

PCT = [0, 10, 20, 50, 100]


def write_sweep(tmp: Path, **spec: Any) -> Path:
    """``scenario.yaml`` and ``sweep.yaml`` in ``tmp``: percentageOfNodesToScore x 3 seeds
    unless ``spec`` says otherwise; the sweep file's path."""
    (tmp / "scenario.yaml").write_text(yaml.safe_dump(SCENARIO))
    doc = {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Sweep",
        "metadata": {"name": "pct"},
        "spec": {
            "base": {"scenario": "scenario.yaml"},
            "seeds": [1, 2, 3],
            "vary": {"percentageOfNodesToScore": PCT},
            **spec,
        },
    }
    path = tmp / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path
