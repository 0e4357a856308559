"""Manifests for the Workload API PodGroup tests (v1.37, namespace ``ns``): nodes, gang
PodGroups and the Pods that join them."""

from __future__ import annotations

from typing import Any


def node(name: str, cpu: str) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": res, "capacity": res},
    }


def member(name: str, group: str, cpu: str) -> dict[str, Any]:
    """A Pod of ``cpu`` joining PodGroup ``group``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "schedulingGroup": {"podGroupName": group},
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def gang(name: str, min_count: int) -> dict[str, Any]:
    """A v1beta1 PodGroup with the gang policy."""
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }
