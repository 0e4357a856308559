"""DRAWorkloadResourceClaims (v1.36 alpha, v1.37 beta): a PodGroup's claims are its members',
reserved for the group; its template claims are made once for the group."""

from __future__ import annotations

from typing import Any

import kubesched
from kubesched.api.parse import parse_node, parse_pod
from kubesched.config import featuregates
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim.driver import SimCluster
from tests.plugins._dra import (
    CONFIG,
    claim,
    cluster,
    device_class,
    gpus,
    node,
    pod,
    request,
    template,
)

GROUP_API = "scheduling.k8s.io/v1beta1"
GATES = {"GenericWorkload": True, "DRAWorkloadResourceClaims": True}


def pod_group(name: str, *claims: tuple[str, str, str], **status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"basic": {}}}
    if claims:
        spec["resourceClaims"] = [{"name": c[0], c[1]: c[2]} for c in claims]
    out = {
        "apiVersion": GROUP_API,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-pg-{name}"},
        "spec": spec,
    }
    if status:
        out["status"] = status
    return out


def member(name: str, group: str, *claims: tuple[str, str, str], **kw: Any) -> dict[str, Any]:
    out = pod(name, *claims, **kw)
    out["spec"]["schedulingGroup"] = {"podGroupName": group}
    return out


def owned_by_group(name: str, group: str) -> dict[str, Any]:
    out = claim(name, request())
    out["metadata"]["ownerReferences"] = [
        {
            "apiVersion": GROUP_API,
            "kind": "PodGroup",
            "name": group,
            "uid": f"uid-pg-{group}",
            "controller": True,
        }
    ]
    return out


TEMPLATE_ENTRY = ("gpu", "resourceClaimTemplateName", "t")


def explain_member(gates: dict[str, bool], claim_owner: str) -> dict[str, Any]:
    statuses = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "pg-gpu-x"}]}
    items = cluster(
        node("n1"),
        gpus("n1", 1),
        device_class(),
        template("t", request()),
        pod_group("pg", TEMPLATE_ENTRY, **statuses),
        owned_by_group("pg-gpu-x", claim_owner),
    )
    the_pod = member("p", "pg", TEMPLATE_ENTRY, statuses=(("gpu", "pg-gpu-x"),))
    return kubesched.explain(items, the_pod, CONFIG, kubernetes_version="1.37", feature_gates=gates)


def test_a_claim_the_pods_podgroup_owns_is_the_pods_under_the_gate() -> None:
    out = explain_member(GATES, "pg")
    assert out["result"] == "Scheduled"
    assert out["selectedNode"] == "n1"


def test_without_the_gate_a_podgroups_claim_is_not_the_pods() -> None:
    out = explain_member({"GenericWorkload": True}, "pg")
    assert out["result"] == "Gated"
    assert out["message"] == (
        "ResourceClaim default/pg-gpu-x was not created for Pod default/p (Pod is not owner)"
    )


def test_a_claim_another_podgroup_owns_is_refused_with_upstreams_words() -> None:
    out = explain_member(GATES, "other")
    assert out["result"] == "Gated"
    assert out["message"] == (
        "ResourceClaim default/pg-gpu-x was not created for Pod default/p "
        "(neither Pod nor PodGroup pg is the owner)"
    )


def test_members_share_the_podgroups_template_claim_on_one_device() -> None:
    # one device: without the group's claim each member would get a claim of its own and
    # only the first could run
    objects = [
        node("n1"),
        gpus("n1", 1),
        device_class(),
        template("t", request()),
        pod_group("pg", TEMPLATE_ENTRY),
    ]
    pods = [member(f"p{i}", "pg", TEMPLATE_ENTRY) for i in range(3)]
    out = kubesched.schedule(
        cluster(*objects), pods, CONFIG, kubernetes_version="1.37", feature_gates=GATES
    )
    bound = {k: v["node"] for k, v in out["pods"].items()}
    assert bound == {f"default/p{i}": "n1" for i in range(3)}, out["pods"]


def run(objects: list[dict[str, Any]], pods: list[dict[str, Any]]) -> SimCluster:
    gates = featuregates.from_spec("1.37", GATES, "spec")
    sim = SimCluster(load_config(None, known_plugins=known_plugin_names(), gates=gates))
    for obj in objects:
        if obj["kind"] == "Node":
            sim.api.create_node(parse_node(obj))
        else:
            sim.api.apply_object(obj)
    for p in pods:
        sim.api.create_pod(parse_pod(p))
    while not sim.quiet() and sim.loop.step():
        pass
    return sim


def test_a_podgroup_claim_is_reserved_for_the_group_not_its_pods() -> None:
    entry = ("gpu", "resourceClaimName", "shared")
    objects = [node("n1"), gpus("n1", 1), device_class(), claim("shared", request())]
    sim = run([*objects, pod_group("pg", entry)], [member(f"p{i}", "pg", entry) for i in range(2)])
    assert {p.name: p.node_name for p in sim.api.pods.values()} == {"p0": "n1", "p1": "n1"}
    reserved = sim.api.objects[("ResourceClaim", "default/shared")]["status"]["reservedFor"]
    ref = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "pg"}
    assert reserved == [{**ref, "uid": "uid-pg-pg"}]


def test_the_controller_makes_one_claim_for_the_group_and_names_it_in_every_member() -> None:
    objects = [node("n1"), gpus("n1", 1), device_class(), template("t", request())]
    pods = [member(f"p{i}", "pg", TEMPLATE_ENTRY) for i in range(2)]
    sim = run([*objects, pod_group("pg", TEMPLATE_ENTRY)], pods)
    claims = [o for (k, _), o in sim.api.objects.items() if k == "ResourceClaim"]
    assert len(claims) == 1
    made = claims[0]["metadata"]
    assert made["name"].startswith("pg-gpu-")
    assert made["ownerReferences"][0]["kind"] == "PodGroup"
    group = sim.api.objects[("PodGroup", "default/pg")]
    assert group["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": made["name"]}
    ]
    for p in sim.api.pods.values():
        assert p.resource_claim_statuses == (("gpu", made["name"]),)
        assert p.node_name == "n1"
