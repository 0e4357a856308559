"""Generate a large ``kubectl get nodes,pods -A -o json``-like snapshot for the cold-start
benchmark (``cold_start.py``), and an incoming Pod to explain against it.

The default is 10,000 nodes and 200,000 Pods (115 MB of compact JSON), built to look
like a real cluster: nodes in three zones and four pools (labels of hostname, zone, region,
instance type, OS, architecture, pool; a GPU pool tainted ``NoSchedule`` with
``nvidia.com/gpu`` allocatable; a few cordoned nodes), Pods in twenty namespaces owned by
ReplicaSets, StatefulSets and two DaemonSets (one Pod per node, pinned by upstream's
``matchFields`` node affinity, with the usual tolerations), requests that fit their node,
and a few hundred pending and finished Pods.  Deterministic for a seed.

    .venv/bin/python benchmarks/make_snapshot.py -o /tmp/snap.json --pod-out /tmp/pod.json
        [--nodes 10000] [--pods 200000] [--seed 1]

The file is not committed (see ``benchmarks/RESULTS.md``, "Cold start").
"""

from __future__ import annotations

import argparse
import json
import random
from typing import Any

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
POOLS = (  # name, instance type, cpu millicores, memory Ki, gpus, share of nodes
    ("general", "m6i.4xlarge", 15890, 63_000_000, 0, 0.6),
    ("compute", "c6i.8xlarge", 31750, 61_000_000, 0, 0.2),
    ("memory", "r6i.4xlarge", 15890, 127_000_000, 0, 0.15),
    ("gpu", "p4d.24xlarge", 95690, 1_140_000_000, 8, 0.05),
)
NAMESPACES = (*(f"team-{i:02d}" for i in range(18)), "kube-system", "monitoring")
DAEMONSETS = ("kube-proxy", "node-exporter")


def _uid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def make_node(i: int, rng: random.Random) -> tuple[dict[str, Any], tuple[int, int]]:
    """Node ``i`` and its (cpu millicores, memory Ki) allocatable."""
    r, k = rng.random(), 0
    while k < len(POOLS) - 1 and r >= POOLS[k][5]:
        r, k = r - POOLS[k][5], k + 1
    pool, itype, cpu, mem_ki, gpus, _ = POOLS[k]
    name = f"ip-10-{i // 65536}-{(i // 256) % 256}-{i % 256}.ec2.internal"
    zone = ZONES[i % len(ZONES)]
    alloc = {
        "cpu": f"{cpu}m",
        "ephemeral-storage": "95551679124",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_ki}Ki",
        "pods": "110",
    }
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    spec: dict[str, Any] = {"providerID": f"aws:///{zone}/i-{i:017x}"}
    if gpus:
        spec["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    if i % 997 == 5:
        spec["unschedulable"] = True
        spec.setdefault("taints", []).append(
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
        )
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": _uid(rng),
            "resourceVersion": str(1000 + i),
            "creationTimestamp": "2026-11-01T08:00:00Z",
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": itype,
                "topology.kubernetes.io/region": "us-east-1",
                "topology.kubernetes.io/zone": zone,
                "example.com/pool": pool,
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": spec,
        "status": {
            "allocatable": alloc,
            "capacity": {**alloc, "cpu": str((cpu + 999) // 1000)},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastHeartbeatTime": "2026-12-01T08:00:00Z",
                    "lastTransitionTime": "2026-11-01T08:00:00Z",
                }
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.{i // 65536}.{(i // 256) % 256}.{i % 256}"},
                {"type": "Hostname", "address": name},
            ],
        },
    }
    return node, (cpu, mem_ki)


def _container(name: str, cpu_m: int, mem_mi: int) -> dict[str, Any]:
    return {
        "name": name,
        "image": f"{name}:1.{cpu_m % 7}",
        "resources": {"requests": {"cpu": f"{cpu_m}m", "memory": f"{mem_mi}Mi"}},
    }


def make_pod(
    name: str,
    ns: str,
    owner: tuple[str, str],
    container: dict[str, Any],
    node: str | None,
    uid: str,
    phase: str = "Running",
) -> dict[str, Any]:
    """One Pod owned by ``owner`` (kind, name), bound to ``node`` when given."""
    app = owner[1].rsplit("-", 1)[0] if owner[0] == "ReplicaSet" else owner[1]
    spec: dict[str, Any] = {"containers": [container]}
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": uid,
            "labels": {"app": app},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "controller": True}
            ],
        },
        "spec": spec,
        "status": {"phase": phase if node is not None else "Pending"},
    }


def daemon_pod(ds: str, node: str, j: int, rng: random.Random) -> dict[str, Any]:
    """A DaemonSet Pod pinned to ``node`` the way the DaemonSet controller pins it."""
    owner = ("DaemonSet", ds)
    pod = make_pod(f"{ds}-{j:05x}", "kube-system", owner, _container(ds, 50, 64), node, _uid(rng))
    pod["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            }
        }
    }
    pod["spec"]["tolerations"] = [
        {"operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    ]
    pod["spec"]["priorityClassName"] = "system-node-critical"
    return pod


def make_snapshot(n_nodes: int, n_pods: int, seed: int) -> dict[str, Any]:
    """The List: ``n_nodes`` Nodes then ``n_pods`` Pods (see the module docstring)."""
    rng = random.Random(seed)
    nodes, free = [], []
    for i in range(n_nodes):
        node, (cpu, mem_ki) = make_node(i, rng)
        nodes.append(node)
        free.append([cpu - 200, mem_ki // 1024 - 512, 108])  # kubelet reserve, 2 daemons
    pods = [
        daemon_pod(ds, n["metadata"]["name"], j, rng)
        for ds in DAEMONSETS
        for j, n in enumerate(nodes)
        if len(nodes) * len(DAEMONSETS) <= n_pods
    ]
    k = 0
    while len(pods) < n_pods:
        ns = NAMESPACES[k % len(NAMESPACES)]
        workload = rng.choice(("ReplicaSet", "ReplicaSet", "ReplicaSet", "StatefulSet"))
        app = f"svc-{k:05d}"
        owner = (workload, f"{app}-{rng.getrandbits(32):08x}" if workload == "ReplicaSet" else app)
        cpu_m, mem_mi = rng.choice((100, 250, 500, 1000)), rng.choice((128, 256, 512, 2048))
        container = _container(app, cpu_m, mem_mi)
        for r in range(min(rng.randint(1, 40), n_pods - len(pods))):
            name = (
                f"{owner[1]}-{r}"
                if workload == "StatefulSet"
                else f"{owner[1]}-{_uid(rng)[:4]}{r:x}"
            )
            host: str | None = None
            for _ in range(8):  # a node with room, or pending
                row = rng.randrange(len(nodes)) if nodes else 0
                f = free[row] if nodes else [0, 0, 0]
                if f[0] >= cpu_m and f[1] >= mem_mi and f[2] >= 1:
                    f[0], f[1], f[2] = f[0] - cpu_m, f[1] - mem_mi, f[2] - 1
                    host = nodes[row]["metadata"]["name"]
                    break
            phase = "Succeeded" if rng.random() < 0.002 else "Running"
            pods.append(make_pod(name, ns, owner, container, host, _uid(rng), phase))
        k += 1
    return {"apiVersion": "v1", "kind": "List", "items": nodes + pods, "metadata": {}}


def incoming_pod() -> dict[str, Any]:
    """The Pod to explain: a 2-CPU web Pod with a zone preference, spread by zone."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "incoming", "namespace": "team-03", "labels": {"app": "incoming"}},
        "spec": {
            "containers": [_container("incoming", 2000, 4096)],
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 10,
                            "preference": {
                                "matchExpressions": [
                                    {
                                        "key": "topology.kubernetes.io/zone",
                                        "operator": "In",
                                        "values": ["us-east-1a"],
                                    }
                                ]
                            },
                        }
                    ]
                }
            },
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "incoming"}},
                }
            ],
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", required=True, help="snapshot file to write")
    ap.add_argument("--pod-out", help="also write the incoming Pod here")
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--pods", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    snap = make_snapshot(args.nodes, args.pods, args.seed)
    with open(args.out, "w") as fh:
        json.dump(snap, fh, separators=(",", ":"))
    if args.pod_out:
        with open(args.pod_out, "w") as fh:
            json.dump(incoming_pod(), fh, indent=2)


if __name__ == "__main__":
    main()
