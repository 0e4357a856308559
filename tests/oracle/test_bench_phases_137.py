"""``kube-oracle bench`` at v1.37 runs the ops of v1.37's event_handling, starvation and dra
suites it refused until h/bench29b: ``updateAny`` (an Update, of the ``resize`` subresource
when named, then an UpdateStatus), ``startCollectingMetrics`` / ``stopCollectingMetrics``
(a measured phase over namespaces and a labelSelector), a barrier's ``labelSelector``, and
``createPods``' ``steadyState`` (every bound Pod deleted and replaced until ``duration``).

Each test looks at what the op did to the run (which Pods bind, which phases are measured)
and runs the same config through ``kubesched bench --kubernetes-version 1.37``: both engines
must bind the same Pods and exit alike.  Needs v1.37's kube-oracle, as
``test_bench_ops_137.py`` (skipped when it is not built).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.bench.support import ROOT
from tests.oracle.test_bench_deletes_137 import both, pod, write
from tests.oracle.test_bench_ops_137 import UPSTREAM_137, bench, bound, oracle_137

__all__ = ["oracle_137"]  # the fixture, shared


def named(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A Pod template named ``name-<Index>`` (as updateAny's templates name their Pods)."""
    doc = pod(labels, **spec)
    doc["metadata"] = {"name": name + "-{{ .Index }}", "labels": labels or {}}
    return doc


def node(name: str, cpu: str = "4", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": spec,
        "status": {
            "capacity": {"pods": "110", "cpu": cpu, "memory": "32Gi"},
            "conditions": [{"status": "True", "type": "Ready"}],
            "phase": "Running",
        },
    }


def run_json(oracle: Path, config: Path, tmp_path: Path) -> tuple[list[Any], list[Any]]:
    """The perf-dash items of kube-oracle bench and of kubesched bench on config."""
    up, ours = tmp_path / "up.json", tmp_path / "ours.json"
    bench(oracle, config, "--timeout", "60", "-o", str(up))
    subprocess.run(
        [sys.executable, "-m", "kubesched", "bench", str(config), "--kubernetes-version", "1.37",
         "--timeout", "60", "--no-progress", "-o", str(ours)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    return json.loads(up.read_text())["dataItems"], json.loads(ours.read_text())["dataItems"]


def test_update_any_removes_scheduling_gates(oracle_137: Path, tmp_path: Path) -> None:
    """event_handling's PodUpdate shape: 3 gated Pods are attempted (not bound); updateAny
    rewrites them without the gate (two at a time, as updatePerSecond allows) and a
    Scheduled barrier then waits for all 3."""
    case = {
        "name": "Gates",
        "workloadTemplate": [
            {"opcode": "createNodes", "count": 1},
            {"opcode": "createPods", "count": 3, "podTemplatePath": "gated.yaml",
             "namespace": "g", "skipWaitToCompletion": True},
            {"opcode": "barrier", "stageRequirement": "Attempted"},
            {"opcode": "updateAny", "countParam": "$updates", "templatePath": "open.yaml",
             "namespace": "g", "updatePerSecond": 20},
            {"opcode": "barrier", "namespaces": ["g"]},
            {"opcode": "createPods", "count": 1, "collectMetrics": True},
        ],
        "workloads": [{"name": "w", "params": {"updates": 3}}],
    }  # fmt: skip
    gated = named("p", schedulingGates=[{"name": "example.com/gate"}])
    config = write(tmp_path, case, gated=gated, open=named("p"))
    assert both(oracle_137, config, "30") == {"Gates/w": (4, 0)}


def test_update_any_of_a_node_and_a_resize(oracle_137: Path, tmp_path: Path) -> None:
    """event_handling's NodeUpdate and PodUpdate shapes: a Pod waits on an unschedulable Node
    until updateAny makes the Node schedulable (its Update keeps the stored status, its
    UpdateStatus writes the template's); then a Pod of 3 CPUs waits behind a bound one of 2
    until updateAny shrinks that one through the resize subresource (the measured Pod, a
    plain one, binds after)."""
    case = {
        "name": "Updates",
        "workloadTemplate": [
            {"opcode": "createNodes", "count": 1, "nodeTemplatePath": "cordoned.yaml"},
            {"opcode": "createPods", "count": 1, "namespace": "a",
             "skipWaitToCompletion": True},
            {"opcode": "barrier", "stageRequirement": "Attempted"},
            {"opcode": "updateAny", "templatePath": "uncordoned.yaml"},
            {"opcode": "barrier"},
            {"opcode": "createPods", "count": 1, "namespace": "b", "podTemplatePath": "two.yaml"},
            {"opcode": "createPods", "count": 1, "namespace": "c",
             "podTemplatePath": "three.yaml", "skipWaitToCompletion": True},
            {"opcode": "barrier", "namespaces": ["c"], "stageRequirement": "Attempted"},
            {"opcode": "updateAny", "templatePath": "small.yaml", "namespace": "b",
             "subresources": ["resize"]},
            {"opcode": "barrier", "namespaces": ["c"]},
            {"opcode": "createPods", "count": 1, "collectMetrics": True},
        ],
        "workloads": [{"name": "w", "params": {}}],
    }  # fmt: skip
    files = {
        "cordoned": node("n1", unschedulable=True),
        "uncordoned": node("n1"),
        "two": named("big", cpu="2"),
        "three": named("bigger", cpu="3"),
        "small": named("big", cpu="500m", nodeName="n1"),
    }
    assert both(oracle_137, write(tmp_path, case, **files), "30") == {"Updates/w": (4, 0)}


def test_update_any_of_a_missing_object_fails_the_workload(
    oracle_137: Path, tmp_path: Path
) -> None:
    case = {
        "name": "Missing",
        "workloadTemplate": [
            {"opcode": "createNodes", "count": 1},
            {"opcode": "createPods", "count": 1},
            {"opcode": "updateAny", "templatePath": "ghost.yaml", "namespace": "x"},
            {"opcode": "createPods", "count": 1, "collectMetrics": True},
        ],
        "workloads": [{"name": "w", "params": {}}],
    }  # fmt: skip
    config = write(tmp_path, case, ghost=named("ghost"))
    assert both(oracle_137, config, "10") == {"Missing/w": (1, 1)}


def blocked_case() -> dict[str, Any]:
    """event_handling's PodDelete shape on one Node of 4 CPUs: two blockers of 1.5 CPUs
    (type blocker), then two Pods of 1.5 CPUs (type unsched) that fit only once the
    blockers are deleted; the unsched Pods are measured by startCollectingMetrics's
    labelSelector and waited for by barriers with the same labelSelector."""
    unsched = {"type": "unsched"}
    return {
        "name": "Blocked",
        "workloadTemplate": [
            {"opcode": "createNodes", "count": 1},
            {"opcode": "createPods", "count": 2, "podTemplatePath": "blocker.yaml",
             "namespace": "a"},
            {"opcode": "startCollectingMetrics", "name": "unsched", "namespaces": ["a"],
             "labelSelector": unsched},
            {"opcode": "createPods", "count": 2, "podTemplatePath": "unsched.yaml",
             "namespace": "a", "skipWaitToCompletion": True},
            {"opcode": "barrier", "stageRequirement": "Attempted", "labelSelector": unsched},
            {"opcode": "deletePods", "namespace": "a", "labelSelector": {"type": "blocker"},
             "deletePodsPerSecond": 20, "skipWaitToCompletion": True},
            {"opcode": "barrier", "labelSelector": unsched},
            {"opcode": "stopCollectingMetrics"},
            {"opcode": "createPods", "count": 1, "collectMetrics": True},
        ],
        "workloads": [{"name": "w", "params": {}}],
    }  # fmt: skip


def test_barrier_label_selector_and_measured_phases(oracle_137: Path, tmp_path: Path) -> None:
    """The labelled barrier waits for the 2 unsched Pods to bind after the blockers go (the
    namespace's 2 bound blockers do not count towards it); both engines then measure two
    phases named after the workload, startCollectingMetrics's name and the last createPods'
    namespace."""
    files = {
        "blocker": pod({"type": "blocker"}, cpu="1500m", terminationGracePeriodSeconds=0),
        "unsched": pod({"type": "unsched"}, cpu="1500m"),
    }
    config = write(tmp_path, blocked_case(), **files)
    assert both(oracle_137, config, "30") == {"Blocked/w": (5, 0)}
    up, ours = run_json(oracle_137, config, tmp_path)

    def names(items: list[Any]) -> set[str]:
        return {
            i["labels"]["Name"] for i in items if i["labels"]["Metric"] == "SchedulingThroughput"
        }

    assert names(up) == names(ours) == {"Blocked/w/unsched", "Blocked/w/namespace-8"}


def test_stop_without_start_fails_the_workload(oracle_137: Path, tmp_path: Path) -> None:
    case = {
        "name": "Stop",
        "workloadTemplate": [
            {"opcode": "createNodes", "count": 1},
            {"opcode": "createPods", "count": 1},
            {"opcode": "stopCollectingMetrics"},
            {"opcode": "createPods", "count": 1, "collectMetrics": True},
        ],
        "workloads": [{"name": "w", "params": {}}],
    }  # fmt: skip
    assert both(oracle_137, write(tmp_path, case), "10") == {"Stop/w": (1, 1)}


def steady_case() -> dict[str, Any]:
    """One Node of 4 CPUs; 2 Pods of ``p.yaml`` kept in a steady state for 2 s (both
    settings from the workload's params, as the dra suite gives them)."""
    return {
        "name": "Steady",
        "workloadTemplate": [
            {"opcode": "createNodes", "count": 1},
            {
                "opcode": "createPods",
                "count": 2,
                "namespace": "s",
                "podTemplatePath": "p.yaml",
                "steadyStateParam": "$steady",
                "durationParam": "$duration",
                "collectMetrics": True,
            },
        ],
        "workloads": [{"name": "w", "params": {"steady": True, "duration": "2s"}}],
    }


def test_steady_state_replaces_each_bound_pod(oracle_137: Path, tmp_path: Path) -> None:
    """steadyState (from its param): 2 Pods, each deleted once bound and replaced by a new
    one for 2 s, so both engines bind far more than 2 and measure a throughput."""
    config = write(tmp_path, steady_case(), p=pod(cpu="100m"))
    ours = subprocess.run(
        [sys.executable, "-m", "kubesched", "bench", str(config), "--kubernetes-version", "1.37",
         "--no-progress"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    upstream = bench(oracle_137, config)
    for run in (upstream, ours):
        assert run.returncode == 0, run.stdout + run.stderr
        assert bound(run.stdout)["Steady/w"] > 20, run.stdout
        assert " pods/s (p50 " in run.stdout


def test_steady_state_without_a_bind_fails(oracle_137: Path, tmp_path: Path) -> None:
    """A steady state in which no Pod binds (each wants 8 CPUs of the Node's 4) is the
    workload's error in both engines once its 2 s are over, as upstream's
    createPodsSteadily."""
    config = write(tmp_path, steady_case(), p=pod(cpu="8"))
    ours = subprocess.run(
        [sys.executable, "-m", "kubesched", "bench", str(config), "--kubernetes-version", "1.37",
         "--timeout", "30", "--no-progress"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    upstream = bench(oracle_137, config, "--timeout", "30")
    for run in (upstream, ours):
        assert run.returncode == 1, run.stdout + run.stderr
        assert bound(run.stdout) == {"Steady/w": 0}
        assert "no pod at all got scheduled" in run.stdout, run.stdout


def test_create_pods_waits_for_as_many_bound_pods_of_its_namespace(
    oracle_137: Path, tmp_path: Path
) -> None:
    """Upstream's createPods waits until as many Pods of its namespace are bound as it
    creates, whichever they are: a Pod too big for the Node, created where one Pod is bound
    already, does not hold the workload up."""
    case = {
        "name": "Wait",
        "workloadTemplate": [
            {"opcode": "createNodes", "count": 1},
            {"opcode": "createPods", "count": 1, "namespace": "a"},
            {"opcode": "createPods", "count": 1, "namespace": "a", "podTemplatePath": "big.yaml"},
            {"opcode": "createPods", "count": 1, "collectMetrics": True},
        ],
        "workloads": [{"name": "w", "params": {}}],
    }  # fmt: skip
    config = write(tmp_path, case, big=pod(cpu="8"))
    assert both(oracle_137, config, "10") == {"Wait/w": (2, 0)}


def test_update_any_of_a_node_drops_labels_the_template_lacks(
    oracle_137: Path, tmp_path: Path
) -> None:
    """The Node's kubernetes.io/hostname label, given at its creation, is gone after an
    updateAny whose template lacks it (kube-apiserver stores the Update's labels): a Pod
    selecting it is then only attempted."""
    case = {
        "name": "Labels",
        "workloadTemplate": [
            {"opcode": "createNodes", "count": 1, "nodeTemplatePath": "n1.yaml"},
            {"opcode": "updateAny", "templatePath": "n1.yaml"},
            {"opcode": "createPods", "count": 1, "namespace": "a", "podTemplatePath": "sel.yaml",
             "skipWaitToCompletion": True},
            {"opcode": "barrier", "stageRequirement": "Attempted"},
            {"opcode": "createPods", "count": 1, "collectMetrics": True},
        ],
        "workloads": [{"name": "w", "params": {}}],
    }  # fmt: skip
    sel = pod(nodeSelector={"kubernetes.io/hostname": "n1"})
    config = write(tmp_path, case, n1=node("n1"), sel=sel)
    assert both(oracle_137, config, "10") == {"Labels/w": (1, 0)}


def test_dra_steady_state_frees_the_deleted_pods_devices(oracle_137: Path, tmp_path: Path) -> None:
    """dra's SchedulingWithResourceClaimTemplate in steady state on one Node of 10 devices:
    each deleted Pod's claim goes with it (the resourceclaim controller), so far more than
    10 Pods bind in the 2 s."""
    cases = yaml.safe_load((UPSTREAM_137 / "dra" / "performance-config.yaml").read_text())
    (case,) = [c for c in cases if c["name"] == "SchedulingWithResourceClaimTemplate"]
    params = {"nodesWithDRA": 1, "nodesWithoutDRA": 0, "initClaims": 0,
              "measurePods": 2, "steadyState": True, "duration": "2s"}  # fmt: skip
    case["workloads"] = [{"name": "w", "params": params}]
    (tmp_path / "templates").symlink_to(UPSTREAM_137 / "dra" / "templates")
    config = write(tmp_path, case)
    ours = subprocess.run(
        [sys.executable, "-m", "kubesched", "bench", str(config), "--kubernetes-version", "1.37",
         "--no-progress"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    upstream = bench(oracle_137, config)
    for run in (upstream, ours):
        assert run.returncode == 0, run.stdout + run.stderr
        assert bound(run.stdout)["SchedulingWithResourceClaimTemplate/w"] > 12, run.stdout
