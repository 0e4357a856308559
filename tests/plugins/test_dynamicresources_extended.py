"""Extended resources backed by DRA devices (DRAExtendedResource: alpha and off at v1.35,
beta at v1.36, GA at v1.37): a DeviceClass's ``extendedResourceName`` (and its implicit
``deviceclass.resource.kubernetes.io/<class>``) lets a Pod's ``example.com/gpu`` request be
met by devices on a node whose allocatable lacks it (upstream's
``extendeddynamicresources.go`` and NodeResourcesFit's ``shouldDelegateResourceToDRA``)."""

from __future__ import annotations

from typing import Any

import kubesched
from kubesched.api import resource as r
from kubesched.devices import extended as ext
from tests.plugins._dra import CONFIG, cluster, device_class, gpus, node

GPU = "example.com/gpu"


def gpu_class(name: str = "gpu.example.com", created: str = "", backs: str | None = GPU) -> Any:
    out = device_class(name)
    if backs is not None:
        out["spec"]["extendedResourceName"] = backs
    if created:
        out["metadata"]["creationTimestamp"] = created
    return out


def parsed(obj: Any) -> r.DeviceClass:
    return r.parse_class(obj)


def ext_pod(amount: str = "2", resource: str = GPU, **more: Any) -> Any:
    res = {"cpu": "100m", resource: amount}
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "c",
                "image": "app",
                "resources": {"requests": res, "limits": {resource: amount}},
            }
        ],
        **more,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "uid-p"},
        "spec": spec,
    }


def with_allocatable(obj: Any, name: str, amount: str) -> Any:
    obj["status"]["allocatable"][name] = amount
    obj["status"]["capacity"][name] = amount
    return obj


def explain(items: list[Any], pod: Any, version: str, **kw: Any) -> dict[str, Any]:
    return kubesched.explain(cluster(*items), pod, CONFIG, kubernetes_version=version, **kw)


def reasons(out: dict[str, Any]) -> dict[str, list[str]]:
    return {n: v["reasons"] for n, v in out["nodes"].items()}


# ------------------------------------------------------------------ the class resolver
def test_newer_class_wins_an_extended_resource_name_and_ties_go_to_the_smaller_name() -> None:
    old = parsed(gpu_class("b", "2026-01-01T00:00:00Z"))
    new = parsed(gpu_class("c", "2026-02-01T00:00:00Z"))
    assert ext.resolver([old, new])[GPU].name == "c"
    assert ext.resolver([new, old])[GPU].name == "c"
    tie = parsed(gpu_class("a", "2026-02-01T00:00:00Z"))
    assert ext.resolver([new, tie])[GPU].name == "a"
    assert ext.resolver([tie, new])[GPU].name == "a"


def test_a_class_losing_when_added_loses_its_implicit_name_too() -> None:
    old = parsed(gpu_class("b", "2026-01-01T00:00:00Z"))
    new = parsed(gpu_class("c", "2026-02-01T00:00:00Z"))
    assert ext.DEVICE_CLASS_PREFIX + "b" not in ext.resolver([new, old])
    assert ext.resolver([old, new])[ext.DEVICE_CLASS_PREFIX + "b"].name == "b"
    plain = parsed(gpu_class("plain", backs=None))
    assert ext.resolver([plain]) == {ext.DEVICE_CLASS_PREFIX + "plain": plain}


# ------------------------------------------------------------------ requests and mappings
def test_device_requests_one_per_container_named_by_sorted_request_index() -> None:
    spec = {
        "initContainers": [
            {"name": "init", "resources": {"requests": {GPU: "3"}}},
            {"name": "side", "restartPolicy": "Always", "resources": {"requests": {GPU: "1"}}},
        ],
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1", GPU: "1"}}},
            {"name": "b", "resources": {"requests": {"cpu": "1"}}},
        ],
    }
    klass = parsed(gpu_class())
    requests, mappings = ext.device_requests(spec, [GPU], lambda n: klass)
    # init (index 0) reuses the sidecar's (1) and a's (2) devices, then asks for 1 more
    assert [(q["name"], q["exactly"]["count"]) for q in requests] == [
        ("container-0-request-0", 1),
        ("container-1-request-0", 1),
        ("container-2-request-1", 1),
    ]
    assert [(m.container, m.request) for m in mappings] == [
        ("side", "container-1-request-0"),
        ("a", "container-2-request-1"),
        ("init", "container-1-request-0"),
        ("init", "container-2-request-1"),
        ("init", "container-0-request-0"),
    ]


def test_an_init_container_met_by_later_containers_asks_for_nothing() -> None:
    spec = {
        "initContainers": [{"name": "init", "resources": {"requests": {GPU: "1"}}}],
        "containers": [{"name": "a", "resources": {"requests": {GPU: "2"}}}],
    }
    klass = parsed(gpu_class())
    requests, mappings = ext.device_requests(spec, [GPU], lambda n: klass)
    assert [q["name"] for q in requests] == ["container-1-request-0"]
    assert [m.container for m in mappings] == ["a", "init"]


# ------------------------------------------------------------------ Filter
def test_a_node_without_the_resource_gets_it_from_devices_from_v136() -> None:
    items = [node("n0"), node("n1"), gpus("n0", 1), gpus("n1", 2), gpu_class()]
    out = explain(items, ext_pod("2"), "1.37")
    assert out["result"] == "Scheduled" and out["selectedNode"] == "n1"
    assert reasons(out)["n0"] == ["cannot allocate all claims"]
    for version in ("1.34", "1.35"):  # alpha, off
        out = explain(items, ext_pod("2"), version)
        assert out["result"] == "Unschedulable", version
        assert reasons(out)["n1"] == [f"Insufficient {GPU}"]
    out = explain(items, ext_pod("2"), "1.35", feature_gates={"DRAExtendedResource": True})
    assert out["selectedNode"] == "n1"


def test_a_node_with_the_resource_in_allocatable_uses_its_device_plugin() -> None:
    items = [with_allocatable(node("n0"), GPU, "1"), gpus("n0", 4), gpu_class()]
    out = explain(items, ext_pod("2"), "1.37")
    assert out["result"] == "Unschedulable"
    assert reasons(out)["n0"] == [f"Insufficient {GPU}"]


def test_the_implicit_class_name_is_an_extended_resource_too() -> None:
    items = [node("n0"), gpus("n0", 1), gpu_class(backs=None)]
    name = ext.DEVICE_CLASS_PREFIX + "gpu.example.com"
    assert explain(items, ext_pod("1", name), "1.37")["selectedNode"] == "n0"
    assert explain(items, ext_pod("2", name), "1.37")["result"] == "Unschedulable"


def test_a_claim_an_earlier_cycle_created_rejects_every_node() -> None:
    stale = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": "p-extended-resources-abcde",
            "namespace": "default",
            "uid": "uid-stale",
            "annotations": {ext.CLAIM_ANNOTATION: "true"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p", "controller": True}
            ],
        },
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "container-0-request-0",
                        "exactly": {"deviceClassName": "gpu.example.com", "count": 1},
                    }
                ]
            }
        },
    }
    items = [node("n0"), gpus("n0", 2), gpu_class(), stale]
    out = explain(items, ext_pod("1"), "1.37")
    assert out["result"] == "Unschedulable"
    assert reasons(out)["n0"] == ["cannot schedule extended resource claim"]


# ------------------------------------------------------------------ binding
def test_schedule_creates_the_claim_and_a_second_pod_gets_the_other_devices() -> None:
    items = [node("n0"), gpus("n0", 3), gpu_class()]
    second = ext_pod("2")
    second["metadata"] |= {"name": "q", "uid": "uid-q"}
    out = kubesched.schedule(
        cluster(*items), [ext_pod("2"), second], CONFIG, kubernetes_version="1.37"
    )
    pods = out["pods"]
    assert pods["default/p"]["result"] == "Scheduled"
    assert pods["default/q"]["result"] == "Unschedulable"


# ------------------------------------------------------------------ queueing hint
def test_node_resources_fit_requeues_on_a_class_that_backs_what_the_pod_requests() -> None:
    from kubesched.api.pods import parse_pod
    from kubesched.framework.interface import QueueingHint
    from kubesched.plugins.noderesources_fit.hints import device_class_hint

    pod = parse_pod(ext_pod("1"))
    plain = gpu_class(backs=None)
    backing = gpu_class()
    assert device_class_hint(pod, None, backing) == QueueingHint.QUEUE
    assert device_class_hint(pod, plain, backing) == QueueingHint.QUEUE
    assert device_class_hint(pod, backing, backing) == QueueingHint.QUEUE_SKIP
    assert device_class_hint(pod, None, gpu_class(backs="example.com/other")) == (
        QueueingHint.QUEUE_SKIP
    )
    implicit = parse_pod(ext_pod("1", ext.DEVICE_CLASS_PREFIX + "gpu.example.com"))
    assert device_class_hint(implicit, None, plain) == QueueingHint.QUEUE


# ------------------------------------------------------------------ scoring from devices
def _scoring_config(strategy: str) -> dict[str, Any]:
    args = "kubescheduler.config.k8s.io/v1"
    fit = {
        "apiVersion": args,
        "kind": "NodeResourcesFitArgs",
        "scoringStrategy": {"type": strategy, "resources": [{"name": GPU, "weight": 1}]},
    }
    balanced = {
        "apiVersion": args,
        "kind": "NodeResourcesBalancedAllocationArgs",
        "resources": [{"name": "cpu", "weight": 1}, {"name": GPU, "weight": 1}],
    }
    profile = {
        "schedulerName": "default-scheduler",
        "pluginConfig": [
            {"name": "NodeResourcesFit", "args": fit},
            {"name": "NodeResourcesBalancedAllocation", "args": balanced},
        ],
    }
    return {**CONFIG, "profiles": [profile]}


def _held(device: str, node_name: str) -> list[Any]:
    """A running Pod's claim holding ``device`` of ``node_name``'s pool."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    result = {"request": "r", "driver": "gpu.example.com", "pool": node_name, "device": device}
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "held", "namespace": "default", "uid": "uid-held"},
        "spec": {
            "devices": {
                "requests": [{"name": "r", "exactly": {"deviceClassName": "gpu.example.com"}}]
            }
        },
        "status": {
            "allocation": {
                "devices": {"results": [result]},
                "nodeSelector": {"nodeSelectorTerms": [term]},
            },
            "reservedFor": [{"resource": "pods", "name": "run", "uid": "uid-run"}],
        },
    }
    run = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "run", "namespace": "default", "uid": "uid-run"},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "image": "app"}],
            "resourceClaims": [{"name": "r", "resourceClaimName": "held"}],
        },
        "status": {"phase": "Running"},
    }
    return [claim, run]


def test_a_resource_a_class_backs_is_scored_from_the_nodes_devices_from_v135() -> None:
    """v1.35+ (upstream ``calculateDRAResourceTotals``): on a node whose allocatable has none
    of ``example.com/gpu``, NodeResourcesFit and BalancedAllocation count the node's devices
    of the class (4 on n1, one of them allocated) and the Pod's request on top (2): Least
    ``(4 - 3) * 100 / 4``, Most ``3 * 100 / 4``; a node with the resource in its allocatable
    (n2: 8, a device plugin's) scores from that.  BalancedAllocation: cpu 100m of 8 and 3 of
    4 GPUs (v1.36 scores the change in balance).  Upstream's BalancedAllocation crashes
    here at v1.35 (no DRA manager) and on a class with selectors at every release (no CEL
    cache): kubesched scores as NodeResourcesFit does (docs/fidelity.md)."""
    items = [
        node("n1"),
        with_allocatable(node("n2"), GPU, "8"),
        gpus("n1", 4),
        gpu_class(),
        *_held("gpu-0", "n1"),
    ]
    pod = ext_pod("2")
    for version in ("1.35", "1.36", "1.37"):
        gates = {"DRAExtendedResource": True}
        for strategy, want in (("LeastAllocated", 25), ("MostAllocated", 75)):
            out = kubesched.explain(
                cluster(*items),
                pod,
                _scoring_config(strategy),
                kubernetes_version=version,
                feature_gates=gates,
            )
            scores = out["nodes"]["n1"]["scores"]
            assert scores["NodeResourcesFit"] == want, (version, strategy, out["nodes"]["n1"])
            fit_n2 = out["nodes"]["n2"]["scores"]["NodeResourcesFit"]
            assert fit_n2 == (75 if strategy == "LeastAllocated" else 25), version
        f_cpu, f_gpu = 100 / 8000, 3 / 4
        with_pod = int((1 - abs(f_cpu - f_gpu) / 2) * 100)
        want_balanced = with_pod
        if version != "1.35":
            without = int((1 - abs(0 - 1 / 4) / 2) * 100)
            want_balanced = 50 + (50 + with_pod - without) // 2
        assert scores["NodeResourcesBalancedAllocation"] == want_balanced, version
    # v1.34 has no such scoring: the resource is left out (no resource scored: 0)
    out = kubesched.explain(
        cluster(*items),
        pod,
        _scoring_config("MostAllocated"),
        kubernetes_version="1.34",
        feature_gates={"DRAExtendedResource": True},
    )
    assert out["nodes"]["n1"]["scores"]["NodeResourcesFit"] == 0
