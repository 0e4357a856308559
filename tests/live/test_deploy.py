"""deploy/: the manifests parse, the ConfigMap holds a valid configuration for a secondary
scheduler, the Deployment's arguments are ones ``kubesched run`` accepts, every Deployment
meets the restricted Pod Security level with a writable /tmp, a NetworkPolicy admits only
the metrics port, and the RBAC rules grant exactly the calls kubesched makes (checked
against the calls a live replica made, too), and for storage objects exactly what upstream's
scheduler roles grant."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli import build_parser
from kubesched.config.featuregates import with_settings
from kubesched.config.load import load_config
from kubesched.live.informer import SCHEDULER_KINDS, workload_kinds
from kubesched.plugins.registry import known_plugin_names
from tests.live import rbac
from tests.live.conftest import Api, Replica, make_config, node, pod
from tests.live.conftest import wait_for as wait

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


READ = ("get", "list", "watch")
UPDATE = (*READ, "update", "patch")
"""Upstream's ``Read`` and ``ReadUpdate`` verb sets (``bootstrappolicy``)."""
NEEDED_CLUSTER = {
    *(
        (g, p, v)
        for k in (
            *SCHEDULER_KINDS,
            *(
                w
                for release in ("1.35", "1.36", "1.37")
                for w in workload_kinds(with_settings(release, {"GenericWorkload": True}))
            ),
        )
        for g, p in [_group_plural(k.path)]
        for v in ("list", "watch")
    ),
    ("", "pods/binding", "create"),
    ("", "pods/status", "patch"),
    ("scheduling.k8s.io", "podgroups/status", "patch"),  # a PodGroup's condition (v1.36+)
    ("", "pods", "delete"),
    ("", "pods", "get"),  # re-GET of a Pod whose bind's outcome is unknown
    ("events.k8s.io", "events", "create"),
    # storage: upstream's system:kube-scheduler and system:volume-scheduler rules as they are
    # (VolumeBinding's PreBind updates PVs and claims and GETs them until bound)
    *(("", r, v) for r in ("persistentvolumes", "persistentvolumeclaims") for v in UPDATE),
    *(
        ("storage.k8s.io", r, v)
        for r in ("storageclasses", "csinodes", "csidrivers", "csistoragecapacities")
        for v in READ
    ),
    ("storage.k8s.io", "volumeattachments", "get"),
}


def test_cluster_role_grants_exactly_what_kubesched_calls() -> None:
    assert granted("ClusterRole", "kubesched") == NEEDED_CLUSTER


@pytest.mark.parametrize("verb", ["create", "get", "update"])
def test_lease_role_grants_the_election_verbs(verb: str) -> None:
    assert ("coordination.k8s.io", "leases", verb) in granted("Role", "kubesched-leader-election")


def deployments() -> dict[str, dict[str, Any]]:
    """Every Deployment of deploy/ and deploy/sharded/ by name."""
    objs = {**rbac.manifests(DEPLOY), **rbac.manifests(DEPLOY / "sharded")}
    return {name: d for (kind, name), d in objs.items() if kind == "Deployment"}


@pytest.mark.parametrize("name", sorted(deployments()))
def test_every_deployment_meets_the_restricted_pod_security_level(name: str) -> None:
    spec = deployments()[name]["spec"]["template"]["spec"]
    pod_sc = spec["securityContext"]
    assert pod_sc["seccompProfile"] == {"type": "RuntimeDefault"} and pod_sc["runAsNonRoot"]
    for container in spec["containers"]:
        sc = container["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["runAsUser"] != 0
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert "seccompProfile" not in sc or sc["seccompProfile"]["type"] == "RuntimeDefault"


@pytest.mark.parametrize("name", sorted(deployments()))
def test_a_read_only_root_filesystem_comes_with_a_writable_tmp(name: str) -> None:
    """Extender TLS material given inline (``certData``/``keyData``) is written to a
    temporary file (:func:`kubesched.config.extenders.tls_context`): /tmp must be writable."""
    spec = deployments()[name]["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    for container in spec["containers"]:
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        [tmp] = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
        assert not tmp.get("readOnly") and "emptyDir" in volumes[tmp["name"]]


def test_the_network_policy_admits_only_the_metrics_port_of_every_role() -> None:
    policy = objects()[("NetworkPolicy", "kubesched-metrics")]["spec"]
    assert policy["policyTypes"] == ["Ingress"]
    selector = policy["podSelector"]["matchLabels"]
    for dep in deployments().values():
        template = dep["spec"]["template"]
        assert selector.items() <= template["metadata"]["labels"].items()  # selected
        (container,) = template["spec"]["containers"]
        args = build_parser().parse_args(container["args"])
        [metrics] = [p for p in container["ports"] if p["name"] == "metrics"]
        assert metrics["containerPort"] == args.metrics_port
    [rule] = policy["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": "metrics"}]
    assert rule["from"] and all(f.get("namespaceSelector") for f in rule["from"])


def test_the_rbac_grants_every_call_a_live_replica_makes(
    api: Api, replicas: Callable[..., Replica]
) -> None:
    """A serial ``kubesched run`` binds, preempts and reports an unschedulable Pod against
    the fake API server: each request it made is one deploy/rbac.yaml allows."""
    api.create(node("n1", cpu="1"))
    replicas("a", make_config(lease=("15s", "10s", "100ms")))  # no failover when loaded
    for name, cpu, priority in (("low", "1", 0), ("high", "1", 100), ("huge", "8", 0)):
        manifest = pod(name, cpu=cpu)
        manifest["spec"]["priority"] = priority
        api.create(manifest)
        if name == "low":
            wait(lambda: api.node_of("low") == "n1")
    wait(lambda: api.node_of("high") == "n1" and len(api.events("FailedScheduling")) >= 1)
    made = rbac.calls_of(api.store.stats, "kubesched-test (a)")
    assert {("delete", "", "pods", "low"), ("create", "", "pods/binding", "high")} <= made
    assert rbac.denied(rbac.rules_of(objects(), "kubesched"), made) == []
