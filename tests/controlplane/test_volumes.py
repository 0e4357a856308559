"""``kubesched run`` binds claims as upstream's scheduler does, against a real control plane:
a StatefulSet-shaped workload (Pods ``db-<i>``, each with its own ``WaitForFirstConsumer``
claim ``data-db-<i>``) over pre-created local PVs, each usable on one node only.  kubesched
(under ``deploy/rbac.yaml``) picks a node inside a free PV's node affinity, and its
VolumeBinding PreBind writes the PV's ``claimRef`` and waits; kube-controller-manager's PV
binder binds the claim; only then is the Pod bound.  No StorageClass provisioner runs (the
class is ``kubernetes.io/no-provisioner``), so every claim is bound to a static PV."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.controlplane.conftest import ControlPlane, config
from tests.live.conftest import Replica, node, pod
from tests.live.conftest import wait_for as wait
from tests.live.test_volume_binding import LOCAL_CLASS, claim, local_pv

pytestmark = pytest.mark.controlplane
T = 60.0
"""Seconds any one wait may take (a loaded 2-core machine; PreBind polls every second)."""
REPLICAS = 3


def stateful_pod(i: int) -> dict[str, Any]:
    """Pod ``db-<i>`` with claim ``data-db-<i>`` (a StatefulSet's volumeClaimTemplates)."""
    manifest = pod(f"db-{i}")
    manifest["metadata"]["labels"] = {"app": "db"}
    manifest["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": f"data-db-{i}"}}
    ]
    return manifest


@pytest.fixture
def storage(pv_controller: ControlPlane) -> Iterator[ControlPlane]:
    """Four nodes, a local PV on each of n1..n3 (none on n4), the class, the claims; all
    deleted afterwards (the Pods first: the claims' protection waits for them)."""
    cp = pv_controller
    for i in range(1, 5):
        cp.apply(node(f"n{i}"))
    cp.apply(LOCAL_CLASS)
    for i in range(1, REPLICAS + 1):
        cp.apply(local_pv(f"pv-n{i}", f"n{i}"))
    for i in range(REPLICAS):
        cp.apply(claim(f"data-db-{i}"))
    yield cp
    cp.kubectl("delete", "pods", "-l", "app=db", "--force", "--grace-period=0", "--wait")
    cp.kubectl("delete", "pvc", "--all", "-n", "default", "--wait", "--timeout=60s")
    cp.kubectl("delete", "pv", "--all", "--wait", "--timeout=60s")
    cp.kubectl("delete", "storageclass", "local", "--wait")


def test_a_stateful_workload_gets_its_claims_bound_and_its_pods_placed_on_their_volumes(
    storage: ControlPlane,
) -> None:
    cp = storage
    for i in range(REPLICAS):
        cp.apply(stateful_pod(i))
    r = Replica(cp.sa, "a", config(leader=False)).start()
    try:
        wait(lambda: all(cp.node_of(f"db-{i}") for i in range(REPLICAS)), T)
    finally:
        r.stop()
    used = set()
    for i in range(REPLICAS):
        c = cp.get("pvc", f"data-db-{i}")
        assert c is not None and c["status"]["phase"] == "Bound", c
        pv_name = c["spec"]["volumeName"]
        pv = cp.get("pv", pv_name, "")
        assert pv is not None and pv["status"]["phase"] == "Bound"
        assert pv["spec"]["claimRef"]["name"] == f"data-db-{i}"
        (term,) = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        (allowed,) = term["matchExpressions"][0]["values"]
        assert cp.node_of(f"db-{i}") == allowed  # inside its PV's node affinity
        used.add(pv_name)
    assert len(used) == REPLICAS  # one PV per claim; n4 (no PV) got no Pod
    assert r.live.api.bind_errors == 0 and r.live.api.volumes.updates == REPLICAS
