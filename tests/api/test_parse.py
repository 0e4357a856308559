"""Pods and Nodes from manifests: the shared snapshot and every honoured field."""

from __future__ import annotations

import pytest

from kubesched.api import objects as api
from kubesched.api import parse
from tests.api.manifests import GI, MI, SNAPSHOT, node_manifest, pod_manifest

# ---------------------------------------------------------------- the shared snapshot


@pytest.fixture(scope="module")
def snapshot() -> parse.ParsedObjects:
    return parse.load_cluster(str(SNAPSHOT))


def test_snapshot_counts(snapshot: parse.ParsedObjects) -> None:
    assert len(snapshot.nodes) == 4
    assert len(snapshot.pods) == 21
    assert snapshot.others == []
    assert sum(1 for p in snapshot.pods if p.node_name) == 19


def test_snapshot_nodes(snapshot: parse.ParsedObjects) -> None:
    nodes = {n.name: n for n in snapshot.nodes}
    cp = nodes["kind-control-plane"]
    assert cp.allocatable["cpu"] == 15890
    assert cp.allocatable["memory"] == 61545432 * 1024
    assert cp.allocatable["pods"] == 110
    assert cp.allocatable["ephemeral-storage"] == 242541724467
    assert cp.taints == (api.Taint("node-role.kubernetes.io/control-plane", "", "NoSchedule"),)
    assert cp.labels["topology.kubernetes.io/zone"] == "z-a"
    gpu = nodes["gpu-node-0"]
    assert gpu.allocatable["nvidia.com/gpu"] == 8
    assert gpu.taints == (api.Taint("nvidia.com/gpu", "present", "NoSchedule"),)
    assert cp.images[0] == api.ImageState(
        ("registry.k8s.io/etcd@sha256:aaaa", "registry.k8s.io/etcd:3.5.15-0"), 56909194
    )
    assert cp.raw["metadata"]["resourceVersion"] == "1234"


def test_snapshot_pods(snapshot: parse.ParsedObjects) -> None:
    pods = {p.key: p for p in snapshot.pods}
    # A sidecar (restartable init container, 100m/128Mi) is added to the 500m/256Mi container.
    web = pods["shop/web-6d4cf56db6-0abcd"]
    assert web.requests == {"cpu": 600, "memory": 384 * MI}
    assert web.nonzero_requests == {"cpu": 600, "memory": 384 * MI}
    assert web.images == ("docker.io/istio/proxyv2:1.23.0", "docker.io/library/nginx:1.27")
    assert web.owner_references[0].kind == "ReplicaSet" and web.owner_references[0].controller
    assert web.uid == "11111111-0000-4000-8000-222514636369"
    spread = web.topology_spread_constraints[0]
    assert (spread.max_skew, spread.topology_key, spread.when_unsatisfiable) == (
        1,
        "topology.kubernetes.io/zone",
        "ScheduleAnyway",
    )
    assert spread.match_label_keys == ("pod-template-hash",)
    assert spread.label_selector == api.LabelSelector((("app", "web"),))

    pending = pods["shop/web-6d4cf56db6-3abcd"]
    assert (pending.node_name, pending.phase, pending.requests["cpu"]) == ("", "Pending", 4100)

    proxy = pods["kube-system/kube-proxy-plane"]
    assert proxy.requests == {}
    assert proxy.nonzero_requests == {"cpu": 100, "memory": 200 * MI}
    assert proxy.priority == 2000001000 and proxy.priority_class_name == "system-node-critical"
    assert proxy.node_affinity is not None and proxy.node_affinity.required is not None
    term = proxy.node_affinity.required[0]
    assert term.match_fields == (api.Requirement("metadata.name", "In", ("kind-control-plane",)),)
    assert proxy.tolerations == (api.Toleration("", "Exists", "", ""),)

    dns = pods["kube-system/coredns-7db6d8ff4d-0x9k"]
    assert dns.priority == 2000000000
    assert dns.requests == {"cpu": 100, "memory": 70 * MI}
    assert dns.pod_anti_affinity is not None
    assert dns.pod_anti_affinity.preferred[0].weight == 100
    assert dns.pod_anti_affinity.preferred[0].term.topology_key == "kubernetes.io/hostname"

    trainer = pods["ml/trainer-0"]
    assert trainer.requests == {"cpu": 8000, "memory": 64 * GI, "nvidia.com/gpu": 4}
    gated = pods["ml/gated-batch-0"]
    assert gated.scheduling_gates == ("kueue.x-k8s.io/admission",)
    assert gated.creation_timestamp == 1795251600.0  # 2026-11-21T09:00:00Z
    assert gated.scheduler_name == "default-scheduler"
    assert gated.raw["metadata"]["name"] == "gated-batch-0"


# ---------------------------------------------------------------- parse_pod


def test_pod_defaults() -> None:
    pod = parse.parse_pod(pod_manifest())
    assert (pod.namespace, pod.scheduler_name, pod.phase, pod.priority) == (
        "default",
        "default-scheduler",
        "Pending",
        0,
    )
    assert pod.preemption_policy == "PreemptLowerPriority"
    assert pod.node_affinity is None and pod.pod_affinity is None
    assert pod.creation_timestamp is None
    assert pod.uid == parse.parse_pod(pod_manifest()).uid  # deterministic
    other = pod_manifest()
    other["metadata"]["namespace"] = "x"
    assert parse.parse_pod(other).uid != pod.uid


def test_request_defaults_to_limit_and_init_containers_and_overhead() -> None:
    pod = parse.parse_pod(
        pod_manifest(
            containers=[
                {"name": "a", "image": "a:1", "resources": {"limits": {"cpu": "9"}}},
                {"name": "b", "image": "b:1", "resources": {"requests": {"memory": "1Gi"}}},
            ],
            initContainers=[
                {"name": "i", "image": "i:1", "resources": {"requests": {"cpu": "12"}}},
                {
                    "name": "s",
                    "image": "s:1",
                    "restartPolicy": "Always",
                    "resources": {"requests": {"cpu": "1"}},
                },
            ],
            overhead={"cpu": "250m", "memory": "10Mi"},
        )
    )
    # containers 9 + sidecar 1 = 10 < init 12: max is 12, then overhead
    assert pod.requests == {"cpu": 12250, "memory": GI + 10 * MI}
    assert pod.images == ("i:1", "s:1", "a:1", "b:1")


def test_pod_level_requests() -> None:
    pod = parse.parse_pod(
        pod_manifest(
            containers=[{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
            resources={"limits": {"cpu": "2", "memory": "1Gi"}},
        )
    )
    # API defaulting: cpu from the containers' aggregate, memory from the pod-level limit
    assert pod.requests == {"cpu": 100, "memory": GI}
    assert pod.nonzero_requests == {"cpu": 100, "memory": GI}


def test_host_ports() -> None:
    pod = parse.parse_pod(
        pod_manifest(
            containers=[
                {
                    "name": "c",
                    "ports": [
                        {"containerPort": 80},
                        {"containerPort": 80, "hostPort": 8080},
                        {
                            "containerPort": 53,
                            "hostPort": 53,
                            "protocol": "UDP",
                            "hostIP": "10.0.0.1",
                        },
                    ],
                }
            ],
            initContainers=[
                {"name": "once", "ports": [{"containerPort": 1, "hostPort": 9001}]},
                {
                    "name": "side",
                    "restartPolicy": "Always",
                    "ports": [{"containerPort": 1, "hostPort": 9002}],
                },
            ],
        )
    )
    assert pod.host_ports == (
        api.HostPort(9002, "TCP", "0.0.0.0"),
        api.HostPort(8080, "TCP", "0.0.0.0"),
        api.HostPort(53, "UDP", "10.0.0.1"),
    )


def test_host_network_claims_container_ports() -> None:
    pod = parse.parse_pod(
        pod_manifest(hostNetwork=True, containers=[{"name": "c", "ports": [{"containerPort": 80}]}])
    )
    assert pod.host_ports == (api.HostPort(80),)


def test_affinity_and_tolerations() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "zone", "operator": "In", "values": ["a", "b"]},
                            {"key": "cores", "operator": "Gt", "values": ["8"]},
                        ]
                    }
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 5,
                    "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]},
                }
            ],
        },
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "zone",
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "namespaceSelector": {},
                    "matchLabelKeys": ["v"],
                    "mismatchLabelKeys": ["t"],
                }
            ]
        },
    }
    pod = parse.parse_pod(
        pod_manifest(
            affinity=affinity,
            nodeSelector={"disk": "ssd"},
            tolerations=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
            priority=7,
            preemptionPolicy="Never",
            topologySpreadConstraints=[
                {
                    "maxSkew": 2,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "minDomains": 3,
                    "nodeAffinityPolicy": "Honor",
                    "nodeTaintsPolicy": "Ignore",
                }
            ],
        )
    )
    assert pod.node_selector == {"disk": "ssd"}
    na = pod.node_affinity
    assert na is not None and na.required is not None
    assert na.required[0].match_expressions[1] == api.Requirement("cores", "Gt", ("8",))
    assert na.preferred == (
        api.PreferredSchedulingTerm(5, api.NodeSelectorTerm((api.Requirement("ssd", "Exists"),))),
    )
    assert pod.pod_affinity is not None
    term = pod.pod_affinity.required[0]
    assert term.namespace_selector == api.LabelSelector()  # {} matches all namespaces
    assert (term.match_label_keys, term.mismatch_label_keys) == (("v",), ("t",))
    assert pod.pod_anti_affinity is None
    assert pod.tolerations == (api.Toleration("k", "Equal", "v", "NoSchedule"),)
    assert (pod.priority, pod.preemption_policy) == (7, "Never")
    tsc = pod.topology_spread_constraints[0]
    assert (tsc.min_domains, tsc.node_affinity_policy, tsc.node_taints_policy) == (
        3,
        "Honor",
        "Ignore",
    )


# ---------------------------------------------------------------- parse_node


def test_node_allocatable_falls_back_to_capacity() -> None:
    node = parse.parse_node(node_manifest(capacity={"cpu": "4", "memory": "8Gi", "pods": "110"}))
    assert node.allocatable == {"cpu": 4000, "memory": 8 * GI, "pods": 110}
    both = parse.parse_node(
        node_manifest(capacity={"cpu": "4", "nvidia.com/gpu": "8"}, allocatable={"cpu": "3500m"})
    )
    assert both.allocatable == {"cpu": 3500}  # allocatable present: capacity not consulted
    assert parse.parse_node(node_manifest()).allocatable == {}


def test_node_fields() -> None:
    obj = node_manifest(images=[{"names": ["a:1", "a@sha256:x"], "sizeBytes": 500}])
    obj["spec"] = {"unschedulable": True, "taints": [{"key": "k", "effect": "NoExecute"}]}
    node = parse.parse_node(obj)
    assert node.unschedulable
    assert node.taints == (api.Taint("k", "", "NoExecute"),)
    assert node.images == (api.ImageState(("a:1", "a@sha256:x"), 500),)
