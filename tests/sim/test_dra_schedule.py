"""DRA in ``schedule`` and the simulator: the resourceclaim controller makes a claim per Pod
from its template, DynamicResources allocates devices (never one twice), PreBind writes the
allocation, the driver prepares the devices, and deleting a Pod frees them."""

from __future__ import annotations

from collections import Counter
from typing import Any

import kubesched
from kubesched.api.parse import parse_node, parse_pod
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim.driver import SimCluster
from kubesched.sim.resourceclaims import POD_CLAIM_ANNOTATION, generated_claim_name
from tests.plugins._dra import (
    DRIVER,
    claim,
    cluster,
    device_class,
    gpus,
    node,
    pod,
    request,
    slice_,
    template,
)

SEVENTH = (
    "0/3 nodes are available: 3 cannot allocate all claims. "
    "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)
"""The seventh Pod's message as v1.37 (the default release) writes it."""
SEVENTH_1_34 = SEVENTH.replace("preemption:", "still not schedulable, preemption:")
"""v1.34's: DynamicResources' PostFilter said ``still not schedulable`` until v1.37."""


def twelve_gpus(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        *(node(f"n{i}") for i in range(3)),
        *(gpus(f"n{i}", 4) for i in range(3)),
        device_class(),
        template("two-gpus", request(count=2)),
        *extra,
    ]


def claiming(name: str, tmpl: str = "two-gpus") -> dict[str, Any]:
    return pod(name, ("gpu", "resourceClaimTemplateName", tmpl))


def run(objects: list[dict[str, Any]], pods: list[dict[str, Any]]) -> SimCluster:
    sim = SimCluster(load_config(None, known_plugins=known_plugin_names()))
    for obj in objects:
        if obj["kind"] == "Node":
            sim.api.create_node(parse_node(obj))
        else:
            sim.api.apply_object(obj)
    for p in pods:
        sim.api.create_pod(parse_pod(p))
    settle(sim)
    return sim


def settle(sim: SimCluster) -> None:
    while not sim.quiet() and sim.loop.step():
        pass


def claims_of(sim: SimCluster) -> dict[str, dict[str, Any]]:
    return {k[1]: o for k, o in sim.api.objects.items() if k[0] == "ResourceClaim"}


def devices(claim: dict[str, Any]) -> list[tuple[str, str, str]]:
    results = claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])
    return [(d["driver"], d["pool"], d["device"]) for d in results]


def test_twelve_gpus_seven_pods_of_two_schedule_exactly_six() -> None:
    out = kubesched.schedule(cluster(*twelve_gpus()),
                             cluster(*(claiming(f"p{i}") for i in range(7))))  # fmt: skip
    results = Counter(v["result"] for v in out["pods"].values())
    assert results == {"Scheduled": 6, "Unschedulable": 1}
    (stuck,) = [v for v in out["pods"].values() if v["result"] != "Scheduled"]
    assert stuck["message"] == SEVENTH
    assert Counter(v["node"] for v in out["pods"].values() if v["node"]) == {
        "n0": 2, "n1": 2, "n2": 2}  # fmt: skip


def test_no_device_is_allocated_twice_and_each_claim_is_its_pods() -> None:
    sim = run(twelve_gpus(), [claiming(f"p{i}") for i in range(7)])
    claims = claims_of(sim)
    assert len(claims) == 7  # the controller made one per Pod, even for the one that waits
    taken = [d for c in claims.values() for d in devices(c)]
    assert len(taken) == 12 and len(set(taken)) == 12
    for key, bound in sim.api.pods.items():
        if not bound.node_name:
            continue
        ((_, claim_name),) = bound.resource_claim_statuses
        claim = claims[f"default/{claim_name}"]
        assert {pool for _, pool, _ in devices(claim)} == {bound.node_name}
        assert claim["status"]["reservedFor"] == [
            {"resource": "pods", "name": bound.name, "uid": bound.uid}
        ]
        assert [d["device"] for d in claim["status"]["devices"]] == [
            d for _, _, d in devices(claim)
        ]  # the driver prepared them
        terms = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"]
        assert terms[0]["matchFields"][0]["values"] == [bound.node_name]
        del key


def test_claims_are_named_and_owned_as_the_controller_makes_them() -> None:
    sim = run(twelve_gpus(), [claiming("web-0")])
    live = sim.api.pods["default/web-0"]
    ((pod_claim, name),) = live.resource_claim_statuses
    assert pod_claim == "gpu" and name == generated_claim_name(live, "gpu")
    assert name.startswith("web-0-gpu-") and len(name) == len("web-0-gpu-") + 5
    meta = claims_of(sim)[f"default/{name}"]["metadata"]
    assert meta["annotations"] == {POD_CLAIM_ANNOTATION: "gpu"}
    assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "web-0",
                                        "uid": live.uid, "controller": True,
                                        "blockOwnerDeletion": True}]  # fmt: skip
    assert "resource.kubernetes.io/delete-protection" in meta["finalizers"]


def test_long_names_are_cut_in_proportion_as_upstream() -> None:
    p = parse_pod(claiming("a" * 60))
    name = generated_claim_name(p, "b" * 20)
    # 60 * 57 // 82 = 41 and 20 * 57 // 82 = 13, no trailing dash, then 5 characters
    assert name[:-5] == "a" * 41 + "-" + "b" * 13


def test_deleting_a_pod_frees_its_devices_for_the_one_waiting() -> None:
    sim = run(twelve_gpus(), [claiming(f"p{i}") for i in range(7)])
    waiting = [p for p in sim.api.pods.values() if not p.node_name]
    assert len(waiting) == 1
    victim = next(p for p in sim.api.pods.values() if p.node_name)
    sim.api.delete_pod(victim)
    settle(sim)
    assert sim.api.pods[waiting[0].key].node_name == victim.node_name
    claims = claims_of(sim)
    assert len(claims) == 6  # the deleted Pod's claim was deallocated, then deleted
    taken = [d for c in claims.values() for d in devices(c)]
    assert len(taken) == 12 and len(set(taken)) == 12


def test_a_cel_capacity_selector_is_honoured_in_schedule() -> None:
    big = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("80Gi")) >= 0'
    objects = [node("small"), node("large"), gpus("small", 4), gpus("large", 2, mem="80Gi"),
               device_class(), template("big", request(selectors=(big,)))]  # fmt: skip
    out = kubesched.schedule(cluster(*objects),
                             cluster(*(claiming(f"p{i}", "big") for i in range(3))))  # fmt: skip
    nodes = sorted(str(v["node"]) for v in out["pods"].values())
    assert nodes == ["None", "large", "large"]


def test_a_shared_claim_puts_its_pods_on_one_node_with_one_allocation() -> None:
    shared = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"name": "shared", "namespace": "default", "uid": "uid-shared"},
              "spec": {"devices": {"requests": [request()]}}}  # fmt: skip
    pods = [pod(f"p{i}", ("gpu", "resourceClaimName", "shared")) for i in range(3)]
    sim = run([*twelve_gpus(), shared], pods)
    assert len({p.node_name for p in sim.api.pods.values()}) == 1
    claim = claims_of(sim)["default/shared"]
    assert len(devices(claim)) == 1
    assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == ["p0", "p1", "p2"]


def _scenario(lifetime: float | None) -> dict[str, Any]:
    resources = {"claims": [{"name": "gpu"}], "requests": {"cpu": "1"}}
    spec = {
        "containers": [{"name": "c", "image": "x", "resources": resources}],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "two-gpus"}],
    }
    workload: dict[str, Any] = {
        "name": "train", "count": 20, "ratePerSecond": 2, "template": {"spec": spec}}  # fmt: skip
    if lifetime is not None:
        workload["lifetimeSeconds"] = lifetime
    objects = [*(gpus(f"gpu-{i:05d}", 4) for i in range(3)), device_class(),
               template("two-gpus", request(count=2))]  # fmt: skip
    return {"kind": "Scenario", "apiVersion": "kubesched.io/v1alpha1", "spec": {
        "seed": 1, "durationSeconds": 30, "drainSeconds": 60, "objects": objects,
        "nodePools": [{"name": "gpu", "count": 3,
                       "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}}],
        "workloads": [workload]}}  # fmt: skip


def test_simulate_reuses_devices_as_pods_finish() -> None:
    from kubesched.sim.scenario import build_scenario
    from kubesched.sim.simulate import run_scenario

    forever = run_scenario(build_scenario(_scenario(None)))
    assert (forever["podsScheduled"], forever["podsPending"]) == (6, 14)
    finishing = run_scenario(build_scenario(_scenario(5.0)))
    assert (finishing["podsScheduled"], finishing["podsPending"]) == (20, 0)


ZONE_A = {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}  # fmt: skip


def _sharing(where: dict[str, Any], device: dict[str, Any] | None = None) -> SimCluster:
    """Three nodes (a1, a2 in zone a, b1 in zone b) with room for one Pod each, one GPU
    offered by a slice placed by ``where``, and three Pods sharing one claim for it."""
    nodes = [node("a1", {"zone": "a"}), node("a2", {"zone": "a"}), node("b1", {"zone": "b"})]
    for n in nodes:
        n["status"]["allocatable"]["pods"] = n["status"]["capacity"]["pods"] = "1"
    gpu = {"name": "gpu-0", **(device or {})}
    pods = [pod(f"p{i}", ("gpu", "resourceClaimName", "shared")) for i in range(3)]
    return run(
        [*nodes, slice_(None, [gpu], pool="net", **where), device_class(),
         claim("shared", request())],
        pods,
    )  # fmt: skip


def _placed(sim: SimCluster) -> list[str]:
    return sorted(p.node_name for p in sim.api.pods.values() if p.node_name)


def test_a_claim_from_a_node_selector_slice_follows_the_selector_not_the_first_node() -> None:
    """Upstream's allocation copies the slice's node selector, so the Pods sharing the claim
    spread over every node it matches (kubesched once pinned the claim to the first Pod's
    node: ``dra/workloadresourceclaims`` bound 110 of 1,000 Pods)."""
    sim = _sharing({"nodeSelector": ZONE_A})
    assert _placed(sim) == ["a1", "a2"]
    allocation = claims_of(sim)["default/shared"]["status"]["allocation"]
    assert allocation["nodeSelector"] == ZONE_A


def test_the_selectors_of_several_slices_merge_into_one_term() -> None:
    """Devices from an ``allNodes`` slice add nothing; two slices' selectors add each
    requirement once (upstream ``addNewNodeSelectorRequirements``)."""
    tiered = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["a"]},
        {"key": "tier", "operator": "Exists"}]}]}  # fmt: skip
    nodes = [node("a1", {"zone": "a", "tier": "x"}), node("a2", {"zone": "a", "tier": "y"}),
             node("b1", {"zone": "b", "tier": "x"})]  # fmt: skip
    for n in nodes:
        n["status"]["allocatable"]["pods"] = n["status"]["capacity"]["pods"] = "1"
    slices = [
        slice_(None, [{"name": "g0"}], name="all", pool="all", allNodes=True),
        slice_(None, [{"name": "g1"}], name="za", pool="za", nodeSelector=ZONE_A),
        slice_(None, [{"name": "g2"}], name="zt", pool="zt", nodeSelector=tiered),
    ]
    pods = [pod(f"p{i}", ("gpu", "resourceClaimName", "shared")) for i in range(3)]
    sim = run([*nodes, *slices, device_class(), claim("shared", request(count=3))], pods)
    assert _placed(sim) == ["a1", "a2"]
    allocation = claims_of(sim)["default/shared"]["status"]["allocation"]
    assert allocation["nodeSelector"] == tiered


def test_a_partitionable_device_brings_its_own_node_selector() -> None:
    sim = _sharing({"perDeviceNodeSelection": True}, {"nodeSelector": ZONE_A})
    assert _placed(sim) == ["a1", "a2"]
    allocation = claims_of(sim)["default/shared"]["status"]["allocation"]
    assert allocation["nodeSelector"] == ZONE_A


def test_a_device_that_binds_to_its_node_pins_the_claim_to_the_first_node() -> None:
    """``bindsToNode`` (read by v1.37's default ``incubating`` allocator) names the node even
    for a device of a ``nodeSelector`` slice."""
    sim = _sharing({"nodeSelector": ZONE_A}, {"bindsToNode": True})
    (placed,) = _placed(sim)
    allocation = claims_of(sim)["default/shared"]["status"]["allocation"]
    fields = [{"key": "metadata.name", "operator": "In", "values": [placed]}]
    assert allocation["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": fields}]}


def test_a_templates_claims_share_its_spec_and_the_informer_parses_it_once(
    monkeypatch: Any,
) -> None:
    import kubesched.api.resource as resource

    parsed: list[int] = []
    real = resource.parse_claim_spec

    def counting(spec: Any, path: str) -> Any:
        parsed.append(id(spec))
        return real(spec, path)

    monkeypatch.setattr(resource, "parse_claim_spec", counting)
    sim = run(twelve_gpus(), [claiming(f"p{i}") for i in range(6)])
    tmpl = sim.api.objects[("ResourceClaimTemplate", "default/two-gpus")]
    claims = claims_of(sim)
    assert len(claims) == 6
    assert all(c["spec"] is tmpl["spec"]["spec"] for c in claims.values())
    assert all(len(devices(c)) == 2 for c in claims.values())  # each Pod's claim allocated
    # the six claims, each heard several times (made, allocated, prepared): one spec parsed
    assert parsed.count(id(tmpl["spec"]["spec"])) == 1
