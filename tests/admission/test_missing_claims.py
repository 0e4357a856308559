"""A snapshot whose Pods name claims it lacks: one warning per claim naming the kubectl
command that includes storage objects, and the Pod gets upstream's answer."""

from __future__ import annotations

import logging

import pytest

from kubesched.admission import references
from kubesched.api import pods as podparse
from kubesched.api.storage import SNAPSHOT_COMMAND
from tests.plugins._storage import claim_volume, explain, node, pod, pvc


def test_missing_claim_warns_with_the_command(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    answer = explain(
        [node("n1"), pvc("here")], pod("p", claim_volume("gone"), claim_volume("here"))
    )
    assert answer["result"] == "Unschedulable"
    assert 'persistentvolumeclaim "gone" not found' in answer["message"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert 'PersistentVolumeClaim "default/gone" not found (named by Pod/default/p)' in warnings[0]
    assert SNAPSHOT_COMMAND in warnings[0]
    assert (
        "kubectl get nodes,pods,pv,pvc,storageclass,csinode,csidriver,csistoragecapacities "
        "-A -o json" in warnings[0]
    )


def test_pending_pods_ephemeral_claims_are_not_missing() -> None:
    eph = {
        "name": "s",
        "ephemeral": {
            "volumeClaimTemplate": {
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                }
            }
        },
    }
    pending = podparse.parse_pod(pod("p", eph))
    running = podparse.parse_pod(pod("q", eph, node_name="n1"))
    found = references.missing_claims([], [pending, running])
    assert [(d.key, d.referrer) for d in found] == [("default/q-s", "Pod/default/q")]
