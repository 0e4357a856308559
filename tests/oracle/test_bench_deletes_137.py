"""``kube-oracle bench`` at v1.37 runs the ops of v1.37's misc, affinity and dra suites it
refused until h/bench29: ``deletePods`` (with kube-apiserver's graceful deletion), ``churn``
in mode ``recreate`` (any kind), ``barrier`` with ``stageRequirement: Attempted`` (gated Pods
count once the API server wrote their SchedulingGated condition), ``createPodSets`` with
``createNamespaces``' ``namespaceTemplatePath``, and ``allocResourceClaims``.

Each test looks at what the op did to the run (which Pods bind), and runs the same config
through ``kubesched bench --kubernetes-version 1.37``: both engines must bind the same Pods.
Needs v1.37's kube-oracle, as ``test_bench_ops_137.py`` (skipped when it is not built).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.bench.support import ROOT
from tests.oracle.test_bench_ops_137 import UPSTREAM_137, bench, bound, oracle_137

__all__ = ["oracle_137"]  # the fixture, shared

PAUSE = {"name": "pause", "image": "registry.k8s.io/pause:3.10.1"}


def pod(labels: dict[str, str] | None = None, cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    container = {**PAUSE, "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "pod-", "labels": labels or {}},
        "spec": {"containers": [container], **spec},
    }


def write(tmp_path: Path, case: dict[str, Any], **files: Any) -> Path:
    for name, doc in files.items():
        (tmp_path / f"{name}.yaml").write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump([case]))
    return path


def both(oracle: Path, config: Path, timeout: str) -> dict[str, tuple[int, int]]:
    """Pods bound per workload, and the exit code, of kube-oracle bench and of kubesched
    bench (which must agree) on config."""
    ours = subprocess.run(
        [sys.executable, "-m", "kubesched", "bench", str(config), "--kubernetes-version", "1.37",
         "--timeout", timeout, "--no-progress"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    upstream = bench(oracle, config, "--timeout", timeout)
    got = {k: (n, upstream.returncode) for k, n in bound(upstream.stdout).items()}
    assert got == {k: (n, ours.returncode) for k, n in bound(ours.stdout).items()}, (
        upstream.stdout + upstream.stderr + ours.stdout + ours.stderr
    )
    return got


def test_attempted_barrier_waits_for_gated_pods(oracle_137: Path, tmp_path: Path) -> None:
    """misc's SchedulingWhileGated shape: the gated Pods never bind, yet the Attempted barrier
    passes (kube-apiserver gave them PodScheduled=False at creation) and the measured Pods
    bind after it."""
    case = {
        "name": "Gated",
        "workloadTemplate": [
            {"opcode": "createNodes", "count": 1},
            {"opcode": "createPods", "count": 3, "podTemplatePath": "gated.yaml",
             "skipWaitToCompletion": True},
            {"opcode": "barrier", "stageRequirement": "Attempted"},
            {"opcode": "createPods", "count": 2, "collectMetrics": True},
        ],
        "workloads": [{"name": "w", "params": {}}],
    }  # fmt: skip
    config = write(tmp_path, case, gated=pod(schedulingGates=[{"name": "example.com/gate"}]))
    assert both(oracle_137, config, "60") == {"Gated/w": (2, 0)}


@pytest.mark.parametrize(("grace", "want"), [(0, 3), (30, 2)])
def test_deleted_bound_pods_keep_their_node_for_their_grace_period(
    oracle_137: Path, tmp_path: Path, grace: int, want: int
) -> None:
    """A bound Pod deleted by deletePods with a grace period stays terminating (no kubelet in
    scheduler_perf's cluster), so the next Pod that needs its CPU is only attempted; with
    terminationGracePeriodSeconds 0 it is gone at once and the next Pod binds (the measured
    one, small, binds either way)."""
    big = pod(cpu="3", terminationGracePeriodSeconds=grace)
    case = {
        "name": "Delete",
        "workloadTemplate": [
            {"opcode": "createNodes", "count": 1},
            {"opcode": "createPods", "count": 1, "namespace": "first",
             "podTemplatePath": "big.yaml"},
            {"opcode": "deletePods", "namespace": "first"},
            {"opcode": "createPods", "count": 1, "namespace": "second",
             "podTemplatePath": "big.yaml", "skipWaitToCompletion": True},
            {"opcode": "barrier", "namespaces": ["second"], "stageRequirement": "Attempted"},
            {"opcode": "createPods", "count": 1, "collectMetrics": True},
        ],
        "workloads": [{"name": "w", "params": {}}],
    }  # fmt: skip
    assert both(oracle_137, write(tmp_path, case, big=big), "60") == {"Delete/w": (want, 0)}


def test_churn_recreate_creates_and_deletes_nodes(oracle_137: Path, tmp_path: Path) -> None:
    """misc's SchedulingWithMixedChurn shape: a cluster with no Node but churn's, a Node
    created and deleted in turn every 130 ms: the Pods bind on the churned Nodes.  (Not
    every 100 ms: the Pods' first retries come at the queue's 1-second backoff flush, which
    kubesched bench starts with the churn, so with a period dividing a second every flush
    lands on the tick that deletes the Node; docs/fidelity.md.)"""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"generateName": "node-churn-"},
        "status": {
            "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
            "conditions": [{"status": "True", "type": "Ready"}],
            "phase": "Running",
        },
    }
    case = {
        "name": "Churn",
        "workloadTemplate": [
            {"opcode": "churn", "mode": "recreate", "number": 1, "intervalMilliseconds": 130,
             "templatePaths": ["node.yaml"]},
            {"opcode": "createPods", "count": 3, "collectMetrics": True},
        ],
        "workloads": [{"name": "w", "params": {}}],
    }  # fmt: skip
    assert both(oracle_137, write(tmp_path, case, node=node), "60") == {"Churn/w": (3, 0)}


def test_pod_sets_land_in_namespaces_made_from_the_template(
    oracle_137: Path, tmp_path: Path
) -> None:
    """affinity's NSSelector shape: createPodSets puts a Pod labelled app=x in each of
    team-0 and team-1, Namespaces labelled team=devops by their template; a Pod anti-affine
    to app=x in the Namespaces selected by team=devops then fits nowhere on the one Node (the
    measured Pod, a plain one, binds)."""
    anti = pod(
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "x"}},
                        "namespaceSelector": {"matchLabels": {"team": "devops"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    )
    case = {
        "name": "Sets",
        "workloadTemplate": [
            {"opcode": "createNodes", "count": 1},
            {"opcode": "createNamespaces", "prefix": "team", "count": 2,
             "namespaceTemplatePath": "ns.yaml"},
            {"opcode": "createPodSets", "countParam": "$sets", "namespacePrefix": "team",
             "createPodsOp": {"opcode": "createPods", "count": 1, "podTemplatePath": "x.yaml"}},
            {"opcode": "createPods", "count": 1, "namespace": "measure",
             "podTemplatePath": "anti.yaml", "skipWaitToCompletion": True},
            {"opcode": "barrier", "namespaces": ["measure"], "stageRequirement": "Attempted"},
            {"opcode": "createPods", "count": 1, "collectMetrics": True},
        ],
        "workloads": [{"name": "w", "params": {"sets": 2}}],
    }  # fmt: skip
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"labels": {"team": "devops"}},
    }
    config = write(tmp_path, case, ns=namespace, x=pod({"app": "x"}), anti=anti)
    assert both(oracle_137, config, "60") == {"Sets/w": (3, 0)}


@pytest.mark.parametrize(("init_claims", "want"), [(8, 2), (9, 1)])
def test_alloc_resource_claims_takes_devices_before_the_pods(
    oracle_137: Path, tmp_path: Path, init_claims: int, want: int
) -> None:
    """dra's SchedulingWithResourceClaimTemplate on one Node with 10 devices: the
    ``init_claims`` claims allocateResourceClaims allocates take their devices, so of the two
    measured Pods (a device each) both bind after 8, one after 9 (the other waits)."""
    cases = yaml.safe_load((UPSTREAM_137 / "dra" / "performance-config.yaml").read_text())
    (case,) = [c for c in cases if c["name"] == "SchedulingWithResourceClaimTemplate"]
    params = {"nodesWithDRA": 1, "nodesWithoutDRA": 0, "initClaims": init_claims,
              "measurePods": 2, "steadyState": False, "duration": "0s"}  # fmt: skip
    case["workloads"] = [{"name": "w", "params": params}]
    (tmp_path / "templates").symlink_to(UPSTREAM_137 / "dra" / "templates")
    config = write(tmp_path, case)
    got = both(oracle_137, config, "20" if want == 2 else "5")
    assert got == {"SchedulingWithResourceClaimTemplate/w": (want, 0 if want == 2 else 1)}
