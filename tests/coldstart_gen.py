"""Small random clusters as ``kubectl get nodes,pods -A -o json`` Lists, for the tests that
check the bulk load (quick Pod parse, ``add_bound_pods``, plugin indexes filled in one pass,
live mode's first LIST) against the one-by-one path.

Every Pod feature the bulk path treats on its own is drawn now and then: required and
preferred (anti-)affinity, topology spread, host ports (and ``hostNetwork``), volumes, resource
claims, init containers, per-node extended resources (held sparse), terminating and finished
Pods, Pods bound to a node the List lacks, pending Pods.
"""

from __future__ import annotations

import random
from typing import Any

ZONES = ("z1", "z2", "z3")
APPS = ("web", "db", "cache")


def _selector(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.5:
        return {"matchLabels": {"app": rng.choice(APPS)}}
    return {"matchExpressions": [{"key": "app", "operator": "In", "values": list(APPS[:2])}]}


def _term(rng: random.Random) -> dict[str, Any]:
    key = rng.choice(("kubernetes.io/hostname", "topology.kubernetes.io/zone"))
    return {"labelSelector": _selector(rng), "topologyKey": key}


def node(i: int, rng: random.Random) -> dict[str, Any]:
    """Node ``n{i}``: a zone, some with a device resource of their own (held sparse)."""
    name = f"n{i}"
    alloc = {"cpu": "8", "memory": "16Gi", "pods": "20"}
    if rng.random() < 0.8:  # devices of its own: past the first 16 names, sparse columns
        alloc.update({f"example.com/dev-{i}-{k}": "2" for k in range(4)})
    if rng.random() < 0.3:
        alloc["example.com/shared"] = "4"
    spec: dict[str, Any] = {}
    if rng.random() < 0.1:
        spec["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    labels = {
        "kubernetes.io/hostname": name,
        "topology.kubernetes.io/zone": ZONES[i % len(ZONES)],
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def pod(j: int, rng: random.Random, n_nodes: int) -> dict[str, Any]:
    """Pod ``p{j}`` with a random mix of the features the module docstring lists."""
    app = rng.choice(APPS)
    requests = {"cpu": rng.choice(("100m", "250m", "1")), "memory": rng.choice(("64Mi", "1Gi"))}
    if rng.random() < 0.3:
        requests[f"example.com/dev-{rng.randrange(n_nodes)}-{rng.randrange(4)}"] = "1"
    if rng.random() < 0.1:
        requests["example.com/shared"] = "1"
    container: dict[str, Any] = {"name": "c", "image": f"{app}:1", "resources": {}}
    if rng.random() < 0.8:
        container["resources"]["requests"] = requests
    if rng.random() < 0.2:
        container["resources"]["limits"] = {"cpu": "2"}
    spec: dict[str, Any] = {"containers": [container]}
    if rng.random() < 0.15:
        container["ports"] = [{"containerPort": 8080, "hostPort": rng.choice((80, 443))}]
    elif rng.random() < 0.2:
        container["ports"] = [{"containerPort": 8080}]
    if rng.random() < 0.05:
        spec["hostNetwork"] = True
        container["ports"] = [{"containerPort": 9100}]
    affinity: dict[str, Any] = {}
    if rng.random() < 0.15:
        required = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(rng)]}
        affinity["podAntiAffinity"] = required
    if rng.random() < 0.15:
        weighted = {"weight": rng.randint(1, 100), "podAffinityTerm": _term(rng)}
        affinity["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [weighted]}
    if rng.random() < 0.1:
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n0"]}]}
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    if affinity:
        spec["affinity"] = affinity
    if rng.random() < 0.15:
        key = rng.choice(("topology.kubernetes.io/zone", "kubernetes.io/hostname"))
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": key,
                "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    if rng.random() < 0.2:
        spec["volumes"] = [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {}}]
    if rng.random() < 0.05:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"claim-{j}"}]
    if rng.random() < 0.1:
        spec["initContainers"] = [
            {"name": "init", "image": "busybox", "resources": {"requests": {"cpu": "2"}}}
        ]
    if rng.random() < 0.2:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    if rng.random() < 0.1:
        spec["priority"] = rng.choice((0, 100, 1000))
    meta: dict[str, Any] = {
        "name": f"p{j}",
        "namespace": rng.choice(("default", "team")),
        "uid": f"uid-{j}",
        "labels": {"app": app},
        "creationTimestamp": "2026-11-01T08:00:00Z",
    }
    status: dict[str, Any] = {"phase": "Running"}
    roll = rng.random()
    if roll < 0.85:  # bound, sometimes to a node the List lacks
        spec["nodeName"] = f"n{rng.randrange(n_nodes + 1)}"
        status["startTime"] = "2026-11-01T08:00:05Z"
    else:
        status["phase"] = "Pending"
    if rng.random() < 0.05:
        meta["deletionTimestamp"] = "2026-11-01T09:00:00Z"
    if rng.random() < 0.05:
        status["phase"] = rng.choice(("Succeeded", "Failed"))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def snapshot(seed: int, n_nodes: int = 6, n_pods: int = 60) -> dict[str, Any]:
    """A List of ``n_nodes`` Nodes and ``n_pods`` Pods (see the module docstring)."""
    rng = random.Random(seed)
    nodes = [node(i, rng) for i in range(n_nodes)]
    pods = [pod(j, rng, n_nodes) for j in range(n_pods)]
    return {"apiVersion": "v1", "kind": "List", "items": nodes + pods}


def incoming(seed: int) -> dict[str, Any]:
    """A pending Pod to explain against a :func:`snapshot`."""
    rng = random.Random(seed + 10_000)
    obj = pod(99_999, rng, 1)
    obj["spec"].pop("nodeName", None)
    obj["spec"].pop("resourceClaims", None)
    obj["status"] = {"phase": "Pending"}
    obj["metadata"].pop("deletionTimestamp", None)
    obj["metadata"]["name"] = "incoming"
    return obj
