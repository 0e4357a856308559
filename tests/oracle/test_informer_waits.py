"""kube-oracle answers only once every informer its plugins read has delivered the snapshot.

A synced informer store says nothing about the handlers fed from it: VolumeBinding reads PVs
and PVCs from assume caches filled by informer handlers, each on its own goroutine, so an
answer given as soon as the stores synced sometimes found no PVC (``could not find
v1.PersistentVolumeClaim``, about 3 answers in 1,000 before kube-oracle waited for every
handler).  The test is probabilistic: without the wait, 1,000 answers all succeed with a
probability of about 5 %.
"""

from __future__ import annotations

from typing import Any


def _node(name: str) -> dict[str, Any]:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    labels = {"kubernetes.io/hostname": name}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": alloc, "capacity": dict(alloc)},
    }


def _volume(i: int) -> list[dict[str, Any]]:
    """A local PV on ``node-{i % 3}`` and the PVC ``data-{i}`` bound to it."""
    term = {"key": "kubernetes.io/hostname", "operator": "In", "values": [f"node-{i % 3}"]}
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"pv-{i}"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "claimRef": {"namespace": "default", "name": f"data-{i}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}},
            "local": {"path": "/mnt"},
        },
        "status": {"phase": "Bound"},
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": f"data-{i}",
            "namespace": "default",
            "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "volumeName": f"pv-{i}",
            "resources": {"requests": {"storage": "1Gi"}},
        },
        "status": {"phase": "Bound"},
    }
    return [pv, pvc]


def test_bound_volumes_are_always_found(oracle: Any) -> None:
    items = [_node(f"node-{k}") for k in range(3)]
    for i in range(4):
        items += _volume(i)
    cluster = {"apiVersion": "v1", "kind": "List", "items": items}
    failures = []
    for i in range(1000):
        volume = {"name": "data", "persistentVolumeClaim": {"claimName": f"data-{i % 4}"}}
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "incoming", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], "volumes": [volume]},
        }
        answer = oracle.ask({"cluster": cluster, "pod": pod, "config": None})
        if answer.get("selectedNode") != f"node-{i % 4 % 3}":
            failures.append(f"{i}: {answer.get('result')} {answer.get('message')}")
    assert not failures, failures[:3]
