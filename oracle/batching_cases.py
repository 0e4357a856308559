"""Generated OpportunisticBatching cases (``--family batching``, v1.35+): equal Pods in a row.

Upstream v1.35+ gives the next of consecutive Pods with equal signatures the next node of
the previous cycle's sorted scores (``kubesched.scheduler.hints``), which can differ from
what a fresh cycle picks in two ways this family draws:

- **sampling** (two cases in five): 100-180 nodes and ``percentageOfNodesToScore`` 5-50, so
  a fresh cycle filters the next window of the round robin while the hint comes from the
  window the list was built over; a dozen nodes spread at random are nearly free, each
  with its own usage (0-1100m of 4 CPUs), the others busy (1600-1900m), so each window's
  best nodes are distinct and not tied (scores have 101 levels: ties among a hundred
  evenly used nodes would make most answers random);
- **stale normalization** (the others): 3-10 nodes, scores that are normalized over the
  feasible nodes (NodeAffinity's preferred terms, TaintToleration's ``PreferNoSchedule``,
  each weighted at random) beside resource scores that are not, so that once the best node
  is full a fresh cycle may reorder the rest where the hint keeps the old order.

The submitted Pods (2-6) are equal but for their names, each asking for most of a node's
free CPU (one per node) or, in one case in four, for less (two fit: v1.35 and v1.36 then
search afresh, v1.37 scores that node again); a different Pod sometimes comes between them
(another signature).  Every Pod has ``preemptionPolicy: Never``.  The profile signs Pods
only without PodTopologySpread's default constraints, so four cases in five list none
(``defaultingType: List``); the rest are the control (no batching).  Node sizes and usage
are distinct, so ties are rare (diff.py asks again when upstream's answer varies).
"""

from __future__ import annotations

import random
from typing import Any


def _node(i: int, cpu_m: int, mem_gi: int, labels: dict[str, str], taints: list[Any]) -> Any:
    name = f"node-{i:03d}"
    alloc = {"cpu": f"{cpu_m}m", "memory": f"{mem_gi}Gi", "pods": "110"}
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": alloc, "capacity": dict(alloc)},
    }
    if taints:
        node["spec"] = {"taints": taints}
    return node


def _running(i: int, node: str, cpu_m: int, mem_mi: int) -> Any:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"running-{i}", "namespace": "default", "uid": f"running-{i}"},
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": f"{cpu_m}m", "memory": f"{mem_mi}Mi"}},
                }
            ],
        },
        "status": {"phase": "Running"},
    }


def _pod(name: str, cpu_m: int, mem_mi: int, spec_extra: dict[str, Any]) -> Any:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": name, "labels": {"app": "x"}},
        "spec": {
            "preemptionPolicy": "Never",
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": f"{cpu_m}m", "memory": f"{mem_mi}Mi"}},
                }
            ],
            **spec_extra,
        },
    }


def batching_schedule_case(seed: int, index: int, version: str | None = None) -> dict[str, Any]:
    """The ``index``-th batching schedule case of ``seed`` (module docstring)."""
    r = random.Random(f"batching/{seed}/{index}")
    sampling = r.random() < 0.4
    n = r.randint(100, 180) if sampling else r.randint(3, 10)
    node_cpu = 4000
    items: list[Any] = []
    running: list[Any] = []
    used: list[int] = []
    prefs = ["p1", "p2", "p3"]
    # sampling: a dozen good nodes of distinct usage spread over the cluster, the others
    # busy (ties among them never decide), so each window's best nodes are distinct
    k = min(n, 12)
    good = dict(zip(r.sample(range(n), k), r.sample(range(0, 1200, 100), k), strict=True))
    for i in range(n):
        cpu = node_cpu + (0 if sampling else 100 * r.randint(0, 20))
        labels = {"pref": r.choice([*prefs, "none"]), "tier": r.choice(["gold", "silver"])}
        taints = []
        if not sampling and r.random() < 0.3:
            taints = [{"key": "soft", "value": str(r.randint(1, 3)), "effect": "PreferNoSchedule"}]
        items.append(_node(i, cpu, 16, labels, taints))
        # distinct usage: the free CPU decides much of the order
        if sampling:
            u = good[i] if i in good else r.randint(1600, 1900)
        else:
            u = r.randint(0, 75) * 20 + i
        used.append(cpu - u)
        if u:
            running.append(_running(i, f"node-{i:03d}", u, 64 * r.randint(1, 16)))
    items += running
    low, high = min(used), max(used)
    two_fit = r.random() < 0.25
    if sampling:
        cpu = r.randint(1000, 1400) if two_fit else r.randint(2100, 2300)
    elif two_fit:
        cpu = r.randint(low // 4, low // 2 - 10)
    else:
        cpu = r.randint(min(high // 2 + 10, low), low)
    spec_extra: dict[str, Any] = {}
    if not sampling:
        terms = [
            {
                "weight": w,
                "preference": {
                    "matchExpressions": [{"key": "pref", "operator": "In", "values": [v]}]
                },
            }
            for v, w in zip(prefs, r.sample(range(5, 101, 5), 3), strict=True)
        ]
        if r.random() < 0.5:
            terms.append(
                {
                    "weight": r.randint(1, 100),
                    "preference": {
                        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]
                    },
                }
            )
        spec_extra["affinity"] = {
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}
        }
    pods = []
    for i in range(r.randint(2, 6)):
        if i and r.random() < 0.1:
            pods.append(_pod(f"other-{i}", cpu // 2, 128, {"preemptionPolicy": "Never"}))
        pods.append(_pod(f"pod-{i}", cpu, 256, spec_extra))
    profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
    plugin_config: list[Any] = []
    if r.random() < 0.8:
        plugin_config.append({"name": "PodTopologySpread", "args": {"defaultingType": "List"}})
    if r.random() < 0.3:
        # sampling: MostAllocated would make the busy nodes the best, tied
        strategy = "LeastAllocated" if sampling else r.choice(["LeastAllocated", "MostAllocated"])
        plugin_config.append(
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": strategy,
                        "resources": [
                            {"name": "cpu", "weight": 1},
                            {"name": "memory", "weight": 1},
                        ],
                    }
                },
            }
        )
    if plugin_config:
        profile["pluginConfig"] = plugin_config
    if not sampling and r.random() < 0.7:
        profile["plugins"] = {
            "score": {
                "enabled": [
                    {"name": name, "weight": r.randint(1, 10)}
                    for name in ("NodeAffinity", "TaintToleration", "NodeResourcesFit")
                ]
            }
        }
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }
    if sampling:
        config["percentageOfNodesToScore"] = r.choice([5, 10, 20, 30, 50])
    request: dict[str, Any] = {
        "cluster": {"apiVersion": "v1", "kind": "List", "items": items},
        "pods": pods,
        "config": config,
    }
    if version is not None and _minor(version) >= 35:
        # drawn last, each from a stream of its own: a seed's other draws stay as they were
        _extended_resource(random.Random(f"batching-dra/{seed}/{index}"), request, version)
    if version is not None and _minor(version) >= 36:
        _pod_group(random.Random(f"batching-podgroup/{seed}/{index}"), request, version)
    return request


def _minor(version: str) -> int:
    return int(version.split(".")[1])


def _gates(request: dict[str, Any], version: str, wanted: dict[str, bool]) -> bool:
    """Add ``wanted`` to the request's feature gates where the release lets a user set them;
    False (nothing added) when the release refuses the combination."""
    from kubesched.config.featuregates import check_settings, gate_table

    table = gate_table(version)
    gates = dict(request.get("featureGates", {}))
    for name, value in wanted.items():
        spec = table.get(name)
        if spec is None or (spec.lock_to_default and spec.default != value):
            continue
        if not spec.lock_to_default:
            gates[name] = value
    if check_settings(version, sorted(gates.items())):
        return False
    if gates:
        request["featureGates"] = gates
    return True


def _pod_group(r: random.Random, request: dict[str, Any], version: str) -> None:
    """v1.36+, half the cases: a run of the equal Pods are the members of one PodGroup
    (GenericWorkload on), scheduled in one PodGroup cycle.  v1.37 lets each member take the
    node hint a sibling left (the members share the cycle count); v1.36 takes the other
    members out of the queue one pop each, so only a group of one follows the cycle before
    it.  Sometimes the first equal Pod stays outside (its list may serve the first member),
    a ``gang`` ``minCount`` more than fit (the group fails and its members are undone, the
    list stays), and under TopologyAwareWorkloadScheduling a constraint on the nodes'
    ``tier`` (two placements: a hint may lie outside the one tried)."""
    if r.random() >= 0.5:
        return
    from podgroup_cases import API_VERSION

    pods = request["pods"]
    equal = [i for i, p in enumerate(pods) if p["metadata"]["name"].startswith("pod-")]
    start = 1 if len(equal) > 1 and r.random() < 0.35 else 0
    room = len(equal) - start
    size = 1 if room == 1 or r.random() < 0.15 else r.randint(2, room)
    members = [pods[i] for i in equal[start : start + size]]
    if r.random() < 0.35:
        policy: dict[str, Any] = {"basic": {}}
    else:
        top = size + 1 if r.random() < 0.15 else size
        policy = {"gang": {"minCount": r.randint(1, top)}}
    wanted = {"GenericWorkload": True, "GangScheduling": True}
    tas = r.random() < 0.35
    if tas:
        wanted["TopologyAwareWorkloadScheduling"] = True
    if not _gates(request, version, wanted):
        return
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if tas and r.random() < 0.6:
        spec["schedulingConstraints"] = {"topology": [{"key": "tier"}]}
    request["cluster"]["items"].append(
        {
            "apiVersion": f"scheduling.k8s.io/{API_VERSION[version]}",
            "kind": "PodGroup",
            "metadata": {"name": "group-0", "namespace": "default"},
            "spec": spec,
        }
    )
    for pod in members:
        pod["spec"]["schedulingGroup"] = {"podGroupName": "group-0"}


EXT_GPU = "example.com/gpu"


def _extended_resource(r: random.Random, request: dict[str, Any], version: str) -> None:
    """v1.35+, a case in four: every Pod asks for one ``example.com/gpu`` that every node's
    device plugin offers (allocatable 4, so NodeResourcesFit answers on every node), and a
    DeviceClass names that resource (``extendedResourceName``) or, the control, another
    one; DRAExtendedResource at random where it can be set.  Under the gate
    NodeResourcesFit and BalancedAllocation sign no Pod whose extended resource a class backs
    (v1.35: no Pod at all), so upstream gives no hint."""
    if r.random() >= 0.25:
        return
    backed = r.random() < 0.7
    if not _gates(request, version, {"DRAExtendedResource": r.random() < 0.8}):
        return
    items = request["cluster"]["items"]
    for node in items:
        if node["kind"] == "Node":
            node["status"]["allocatable"][EXT_GPU] = "4"
            node["status"]["capacity"][EXT_GPU] = "4"
    items.append(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"},
            "spec": {
                "extendedResourceName": EXT_GPU if backed else "example.com/other",
                "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
            },
        }
    )
    for pod in request["pods"]:
        for c in pod["spec"]["containers"]:
            c["resources"]["requests"][EXT_GPU] = "1"
            c["resources"]["limits"] = {EXT_GPU: "1"}
