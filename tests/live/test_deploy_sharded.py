"""deploy/sharded/: one coordinator Deployment and one Deployment per shard index, whose
arguments ``kubesched run`` accepts and agree with each other, and RBAC for the extra calls
(annotation patches, the membership Leases)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from kubesched.cli import build_parser
from kubesched.cli.run import check_role
from kubesched.live import sharding as sh
from tests.live import rbac
from tests.live.conftest import Api, Role, node, pod, start
from tests.live.conftest import wait_for as wait

SHARDED = Path(__file__).resolve().parents[2] / "deploy" / "sharded"


def objects() -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for path in sorted(SHARDED.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


def run_args(dep: dict[str, Any]) -> Any:
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["args"])
    check_role(args)
    return args


def test_a_coordinator_and_one_deployment_per_shard_index() -> None:
    deps = {name: d for (kind, name), d in objects().items() if kind == "Deployment"}
    coordinator = run_args(deps.pop("kubesched-coordinator"))
    assert coordinator.role == "coordinator" and coordinator.in_cluster
    shards = [run_args(d) for d in deps.values()]
    assert all(a.role == "shard" and a.shards == coordinator.shards for a in shards)
    assert sorted(a.shard_index for a in shards) == list(range(coordinator.shards))
    for name, dep in deps.items():
        assert name == f"kubesched-shard-{run_args(dep).shard_index}"
        assert dep["spec"]["replicas"] >= 1
        assert dep["metadata"]["namespace"] == "kubesched-system"


def test_leases_each_role_holds_or_watches() -> None:
    objs = objects()
    shards = run_args(objs[("Deployment", "kubesched-coordinator")]).shards
    own = {
        "kubesched-coordinator-leases": {"kubesched"},
        "kubesched-shard-leases": {sh.lease_name(i) for i in range(shards)},
    }
    for role, names in own.items():
        rules = objs[("Role", role)]["rules"]
        (named,) = [rule for rule in rules if "resourceNames" in rule]
        assert set(named["resourceNames"]) == names and set(named["verbs"]) == {"get", "update"}
        open_verbs = {v for rule in rules if "resourceNames" not in rule for v in rule["verbs"]}
        # the coordinator watches every shard's Lease; a shard only creates its own
        assert open_verbs == ({"create", "list", "watch"} if "coordinator" in role else {"create"})


WRITES_ONLY_THE_COORDINATOR_MAKES = {
    ("create", "", "pods/binding"),
    ("delete", "", "pods"),
    ("patch", "", "pods/status"),
    ("create", "events.k8s.io", "events"),
}


def _account(name: str) -> str:
    return str(objects()[("Deployment", name)]["spec"]["template"]["spec"]["serviceAccountName"])


def test_each_role_has_its_own_service_account_and_only_its_own_calls() -> None:
    deps = {name: d for (kind, name), d in objects().items() if kind == "Deployment"}
    coordinator = _account("kubesched-coordinator")
    assert {_account(n) for n in deps if n != "kubesched-coordinator"} == {"kubesched-shard"}
    assert coordinator == "kubesched-coordinator"
    assert ("ServiceAccount", coordinator) in objects()
    assert ("ServiceAccount", "kubesched-shard") in objects()
    shard_rules = rbac.rules_of(objects(), "kubesched-shard")
    for verb, group, resource in WRITES_ONLY_THE_COORDINATOR_MAKES:
        assert not any(rbac.allows(r, (verb, group, resource, "x")) for r in shard_rules)
        assert any(
            rbac.allows(r, (verb, group, resource, "x"))
            for r in rbac.rules_of(objects(), coordinator)
        )
    # a shard holds its own Lease, never the coordinator's
    assert not any(
        rbac.allows(r, ("update", "coordination.k8s.io", "leases", "kubesched"))
        for r in shard_rules
    )


def _priority_pod(name: str, cpu: str, priority: int) -> dict[str, Any]:
    manifest = pod(name, cpu=cpu)
    manifest["spec"]["priority"] = priority
    return manifest


def test_the_manifests_grant_every_call_each_role_makes(
    api: Api, roles: Callable[..., Role]
) -> None:
    """Live, against the fake API server: a coordinator and two shards bind, preempt and
    report an unschedulable Pod; every request each one made is allowed by the RBAC its
    Deployment's ServiceAccount gets, and the shards made none of the coordinator's writes."""
    api.create(node("n1", cpu="1"))
    c, shards = start(roles)  # steady Leases: nobody fails over on a loaded machine
    api.create(_priority_pod("low", "1", 0))
    wait(lambda: api.node_of("low") == "n1")
    api.create(_priority_pod("high", "1", 100))  # preempts low
    api.create(_priority_pod("huge", "8", 0))  # fits nowhere: condition and Event

    # the preemptor's own FailedScheduling may come first: wait for the one about huge
    def huge_reported() -> bool:
        events = api.events("FailedScheduling")
        return any(e.get("regarding", {}).get("name") == "huge" for e in events)

    wait(lambda: api.node_of("high") == "n1" and huge_reported())
    stats = api.store.stats
    made = rbac.calls_of(stats, "kubesched-test (coordinator)")
    assert {(v, g, r) for v, g, r, _ in made} >= WRITES_ONLY_THE_COORDINATOR_MAKES
    assert rbac.denied(rbac.rules_of(objects(), _account("kubesched-coordinator")), made) == []
    shard_rules = rbac.rules_of(objects(), _account("kubesched-shard-0"))
    proposals = 0
    for i in range(len(shards)):
        made = rbac.calls_of(stats, f"kubesched-test (shard-{i})")
        proposals += sum(1 for v, _, r, _ in made if (v, r) == ("patch", "pods"))
        assert rbac.denied(shard_rules, made) == []
        assert not {(v, g, r) for v, g, r, _ in made} & WRITES_ONLY_THE_COORDINATOR_MAKES
    assert proposals >= 3  # low, high and huge were each proposed or reported by a shard
    assert c.coordinator.stats["committed"] >= 2
