"""deploy/: the manifests parse, the ConfigMap holds a valid configuration for a secondary
scheduler, the Deployment's arguments are ones ``kubesched run`` accepts, and the RBAC rules
grant exactly the calls kubesched makes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli import build_parser
from kubesched.config.load import load_config
from kubesched.live.informer import KINDS
from kubesched.plugins.registry import known_plugin_names

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def objects() -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for path in sorted(DEPLOY.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


def test_configmap_holds_a_secondary_scheduler_configuration() -> None:
    cm = objects()[("ConfigMap", "kubesched-config")]
    config = load_config(
        yaml.safe_load(cm["data"]["config.yaml"]), known_plugins=known_plugin_names()
    )
    assert [p.scheduler_name for p in config.profiles] == ["kubesched"]
    le = config.leader_election
    assert le.resource_name != "kube-scheduler" and le.resource_namespace == "kubesched-system"
    assert (le.lease_duration_seconds, le.renew_deadline_seconds, le.retry_period_seconds) == (
        15.0,
        10.0,
        2.0,
    )


def test_deployment_arguments_parse() -> None:
    dep = objects()[("Deployment", "kubesched")]
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["args"])
    assert args.command == "run" and args.in_cluster and args.config == "/etc/kubesched/config.yaml"
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert "/etc/kubesched" in mounts
    probes = {
        container["livenessProbe"]["httpGet"]["path"],
        container["readinessProbe"]["httpGet"]["path"],
    }
    assert probes == {"/healthz", "/readyz"}


def granted(kind: str, name: str) -> set[tuple[str, str, str]]:
    out = set()
    for rule in objects()[(kind, name)]["rules"]:
        for g in rule["apiGroups"]:
            for r in rule["resources"]:
                for v in rule["verbs"]:
                    out.add((g, r, v))
    return out


def _group_plural(path: str) -> tuple[str, str]:
    parts = path.strip("/").split("/")
    return ("" if parts[0] == "api" else parts[1]), parts[-1]


NEEDED_CLUSTER = {
    *((g, p, v) for k in KINDS for g, p in [_group_plural(k.path)] for v in ("list", "watch")),
    ("", "pods/binding", "create"),
    ("", "pods/status", "patch"),
    ("", "pods", "delete"),
    ("", "pods", "get"),  # re-GET of a Pod whose bind's outcome is unknown
    ("events.k8s.io", "events", "create"),
}


def test_cluster_role_grants_exactly_what_kubesched_calls() -> None:
    assert granted("ClusterRole", "kubesched") == NEEDED_CLUSTER


@pytest.mark.parametrize("verb", ["create", "get", "update"])
def test_lease_role_grants_the_election_verbs(verb: str) -> None:
    assert ("coordination.k8s.io", "leases", verb) in granted("Role", "kubesched-leader-election")
