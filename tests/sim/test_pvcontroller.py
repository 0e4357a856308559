"""The simulator's PV controller (:mod:`kubesched.sim.pvcontroller`): VolumeBinding's PreBind
writes the selected-node annotation or the PV's ``claimRef`` and waits; the controller binds
(a static match at once, a claim to provision after its class's latency); a bind that takes
longer than ``bindTimeoutSeconds`` fails the Pod with upstream's error and requeues it; a
deleted claim's PV is reclaimed as its policy says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api import storage as st
from kubesched.sim.apiserver import SimApiServer
from kubesched.sim.engine import EventLoop
from kubesched.sim.pvcontroller import PVController
from kubesched.sim.scenario import build_scenario, default_scenario_text
from kubesched.sim.simulate import run_scenario
from tests.plugins._storage import pv, pvc

SCENARIO = Path(__file__).with_name("stateful_scenario.yaml")
INVARIANTS = ("pvClaimedTwice", "rwopClaimsShared", "outsideVolumeTopology", "overAttachLimit")
ZONAL = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "zonal"},
    "provisioner": "ebs.csi.aws.com",
    "volumeBindingMode": "WaitForFirstConsumer",
    "reclaimPolicy": "Delete",
    "allowedTopologies": [
        {"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["z2"]}]}
    ],
}


def _provisioned_doc(count: int, latency: float, timeout: int | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(SCENARIO.read_text())
    wl = doc["spec"]["workloads"][0]
    wl["count"] = count
    wl["volumeClaimTemplates"][0]["spec"]["storageClassName"] = "zonal"
    doc["spec"]["objects"] = [ZONAL]
    doc["spec"]["provisioningSeconds"] = {"zonal": latency}
    doc["spec"]["durationSeconds"] = 5
    doc["spec"]["drainSeconds"] = 120
    if timeout is not None:
        doc["spec"]["config"] = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "pluginConfig": [
                        {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": timeout}}
                    ],
                }
            ],
        }
    return doc


def _binding_waits(sim: Any) -> list[float]:
    bound = sim.api.stats.bound_at
    return [bound[k] - sim.scheduled_at[k] for k in bound if k in sim.scheduled_at]


def test_a_static_match_is_bound_by_the_controller_after_the_decision() -> None:
    """PreBind writes the PV's claimRef; the controller binds both; PreBind's first poll
    (one second, as upstream's) sees it: the binding segment holds that second."""
    held: list[Any] = []
    summary = run_scenario(build_scenario(yaml.safe_load(SCENARIO.read_text())), setup=held.append)
    assert summary["podsScheduled"] == 3
    sim = held[0]
    waits = _binding_waits(sim)
    assert len(waits) == 3 and all(1.0 <= w < 1.1 for w in waits)
    for (kind, _), o in sim.api.objects.items():
        if kind == "PersistentVolume" and o["spec"].get("claimRef"):
            assert o["status"]["phase"] == "Bound"
    assert summary["podStartupSeconds"]["binding"]["p50"] >= 1.0


def test_provisioning_takes_the_class_latency() -> None:
    held: list[Any] = []
    summary = run_scenario(build_scenario(_provisioned_doc(3, 7.0)), setup=held.append)
    assert summary["podsScheduled"] == 3
    sim = held[0]
    waits = _binding_waits(sim)
    assert len(waits) == 3 and all(7.0 <= w < 8.1 for w in waits), waits
    pvs = [o for (k, _), o in sim.api.objects.items() if k == "PersistentVolume"]
    assert len(pvs) == 3 and all(o["status"]["phase"] == "Bound" for o in pvs)
    for (k, _), o in sim.api.objects.items():
        if k == "PersistentVolumeClaim":
            assert o["metadata"]["annotations"][st.ANN_SELECTED_NODE].startswith("zb-")
    assert all(summary["invariants"][k] == [] for k in INVARIANTS)


def test_a_bind_past_the_timeout_fails_with_upstreams_error_and_requeues() -> None:
    held: list[Any] = []
    failures: list[tuple[str, str]] = []

    def setup(sim: Any) -> None:
        held.append(sim)
        record = sim.api.pod_scheduling_failed

        def failed(pod: Any, reason: str, message: str) -> None:
            failures.append((pod.name, message))
            record(pod, reason, message)

        sim.api.pod_scheduling_failed = failed

    summary = run_scenario(build_scenario(_provisioned_doc(1, 30.0, timeout=3)), setup=setup)
    assert ("db-000000", "binding volumes: context deadline exceeded") in failures
    # the claim keeps its selected node and is provisioned there; the requeued Pod binds
    # once it is (within its PV's zone)
    assert summary["podsScheduled"] == 1
    sim = held[0]
    pod = sim.api.pods["default/db-000000"]
    claim = sim.api.objects[("PersistentVolumeClaim", "default/data-db-000000")]
    assert claim["metadata"]["annotations"][st.ANN_SELECTED_NODE].startswith("zb-")
    assert claim["spec"]["volumeName"]
    assert pod.node_name.startswith("zb-")
    assert sim.api.stats.bound_at[pod.key] >= 30.0
    assert summary["invariants"]["outsideVolumeTopology"] == []


def _claim(name: str, volume: str = "") -> dict[str, Any]:
    return pvc(name, klass="zonal", volume=volume, bound=False)


def _bound_pv(name: str, claim: str, policy: str) -> dict[str, Any]:
    return pv(
        name,
        "1Gi",
        klass="zonal",
        claim=claim,
        phase="Bound",
        persistentVolumeReclaimPolicy=policy,
    )


def test_a_deleted_claim_releases_its_pv_as_its_policy_says() -> None:
    loop = EventLoop()
    server = SimApiServer(loop)
    server.watch(PVController(server, loop))
    for obj in (
        _claim("a", "pv-del"),
        _claim("b", "pv-keep"),
        _bound_pv("pv-del", "a", "Delete"),
        _bound_pv("pv-keep", "b", "Retain"),
    ):
        server.apply_object(obj)
    server.delete_object("PersistentVolumeClaim", "default", "a")
    server.delete_object("PersistentVolumeClaim", "default", "b")
    loop.run()
    assert ("PersistentVolume", "default/pv-del") not in server.objects
    kept = server.objects[("PersistentVolume", "default/pv-keep")]
    assert kept["status"]["phase"] == "Released"
    assert kept["spec"]["claimRef"]["name"] == "b"  # never bound again


def test_without_the_controller_prebind_binds_at_once() -> None:
    """A world with no PV controller (the benchmark's) keeps the immediate bind."""
    server = SimApiServer(EventLoop())
    assert not server.binds_claims()


def _default_stateful_pool() -> dict[str, Any]:
    """The embedded default scenario cut to its stateful pool (nodes, workload, objects)."""
    doc: dict[str, Any] = yaml.safe_load(default_scenario_text())
    spec = doc["spec"]
    spec["nodePools"] = [p for p in spec["nodePools"] if p["name"] == "storage"]
    spec["workloads"] = [w for w in spec["workloads"] if w["name"] == "db"]
    spec["durationSeconds"] = 20
    spec["drainSeconds"] = 30
    spec["workloads"][0]["ratePerSecond"] = 5
    return doc


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_default_stateful_pool_keeps_the_storage_invariants(seed: int) -> None:
    """Zonal provisioned volumes, attach limits of 3 on 12 nodes: 36 of the 40 replicas run,
    each in its volume's zone, no node above its limit; the rest wait naming the limit."""
    held: list[Any] = []
    summary = run_scenario(build_scenario(_default_stateful_pool(), seed=seed), setup=held.append)
    assert summary["podsScheduled"] == 36
    assert all(summary["invariants"][k] == [] for k in INVARIANTS)
    sim = held[0]
    pvs = {
        o["metadata"]["name"]: o for (k, _), o in sim.api.objects.items() if k == "PersistentVolume"
    }
    assert len(pvs) == 36 and all(o["status"]["phase"] == "Bound" for o in pvs.values())
    per_node: dict[str, int] = {}
    for pod in sim.api.pods.values():
        if pod.node_name:
            per_node[pod.node_name] = per_node.get(pod.node_name, 0) + 1
    assert max(per_node.values()) <= 3
    assert all(w >= 4.0 for w in _binding_waits(sim))  # the class's 4 s of provisioning
    # why Pending names the claims the four replicas left out wait on
    waiting = summary["waiting"]["volumes"]
    assert sorted(row["pod"] for row in waiting) == [f"default/db-0000{j}" for j in range(36, 40)]
    for row in waiting:
        assert row["claims"] == [
            {
                "claim": "default/data-" + row["pod"].split("/")[1],
                "phase": "Pending",
                "selectedNode": None,
                "provisioning": None,
            }
        ]
        assert "exceed max volume count" in row["message"]


def test_a_run_without_claims_names_none() -> None:
    doc: dict[str, Any] = yaml.safe_load(SCENARIO.read_text())
    del doc["spec"]["workloads"][0]["volumeClaimTemplates"]
    doc["spec"]["objects"] = []
    doc["spec"]["workloads"][0]["template"]["spec"]["nodeSelector"] = {"none": "x"}
    summary = run_scenario(build_scenario(doc))
    assert summary["waiting"]["count"] == 6 and "volumes" not in summary["waiting"]
