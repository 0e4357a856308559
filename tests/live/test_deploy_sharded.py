"""deploy/sharded/: one coordinator Deployment and one Deployment per shard index, whose
arguments ``kubesched run`` accepts and agree with each other, and RBAC for the extra calls
(annotation patches, the membership Leases)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubesched.cli import build_parser
from kubesched.cli.run import check_role
from kubesched.live import sharding as sh

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


def test_rbac_grants_annotation_patches_and_the_membership_leases() -> None:
    objs = objects()
    rules = objs[("ClusterRole", "kubesched-sharded")]["rules"]
    assert {(r, v) for rule in rules for r in rule["resources"] for v in rule["verbs"]} == {
        ("pods", "patch"),
        ("pods", "get"),
    }
    lease_rules = objs[("Role", "kubesched-sharded-leases")]["rules"]
    open_verbs = {v for rule in lease_rules if "resourceNames" not in rule for v in rule["verbs"]}
    assert {"list", "watch", "create"} <= open_verbs
    (named,) = [rule for rule in lease_rules if "resourceNames" in rule]
    shards = run_args(objs[("Deployment", "kubesched-coordinator")]).shards
    wanted = {"kubesched", *(sh.lease_name(i) for i in range(shards))}
    assert set(named["resourceNames"]) == wanted and set(named["verbs"]) == {"get", "update"}
