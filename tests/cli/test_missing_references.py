"""A reference to an object the input lacks is a fact about the cluster, not an input error
(docs/design.md section 5): ``kubectl get nodes,pods`` never prints PodGroups or LocalQueues.

Bound Pods keep running; a pending member of a missing PodGroup is rejected at Permit by
Coscheduling as scheduler-plugins does (``PodGroupNotFound``), with upstream's one-node
``FitError`` message; a Pod naming a missing LocalQueue stays gated, its workload
inadmissible with Kueue's reason; one warning per missing object; errors that remain name
the file they come from.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

import kubesched
from kubesched.admission import objects as o
from kubesched.cli import main
from kubesched.sim.scenario import build_scenario
from kubesched.sim.simulate import invariants_hold, run_scenario
from kubesched.sim.whatif import schedule

LOGGER = "kubesched.admission.references"
COSCHEDULING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
                "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
            },
        }
    ],
}
PERMIT_REJECTION = "0/1 nodes are available: 1 PodGroup not found."


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
    }


def pod(name: str, node_name: str = "", **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "labels": labels},
        "spec": spec,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


GANG = {o.POD_GROUP_LABEL: "trainer"}
QUEUED = {o.QUEUE_NAME_LABEL: "team-ml"}


def snapshot() -> dict[str, Any]:
    """What ``kubectl get nodes,pods -A -o json`` prints for a cluster running gangs and
    Kueue: the Pods, never their PodGroup or LocalQueue."""
    items = [node("n1"), pod("trainer-0", "n1", **GANG, **QUEUED), pod("trainer-1", "n1", **GANG)]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_schedule_runs_a_real_snapshot_and_warns_once_per_missing_object(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, pods = tmp_path / "cluster.json", tmp_path / "pods.yaml"
    cluster.write_text(json.dumps(snapshot()))
    pods.write_text(yaml.safe_dump_all([pod("trainer-2", **GANG), pod("job-1", **QUEUED)]))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        code = main(["schedule", "--cluster", str(cluster), "--pods", str(pods), "-o", "json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    # no Coscheduling in the default profile: the label means nothing to the scheduler
    assert out["pods"]["ml/trainer-2"]["result"] == "Scheduled"
    assert out["pods"]["ml/job-1"]["result"] == "Gated"
    assert out["workloads"]["ml/job-1"]["inadmissible"] == {
        "reason": "Inadmissible",
        "message": "LocalQueue team-ml doesn't exist",
    }
    warned = messages(caplog)
    assert [w.split(" (")[0] for w in warned] == [
        'PodGroup "ml/trainer" not found',
        'LocalQueue "ml/team-ml" not found',
    ]
    assert "named by Pod/ml/trainer-0 and 2 more" in warned[0]


def test_a_pending_member_of_a_missing_pod_group_is_rejected_at_permit() -> None:
    """scheduler-plugins ``Permit``: ``PodGroupNotFound`` -> Unschedulable ``PodGroup not
    found``; kube-scheduler reports a Permit rejection as a FitError over one node."""
    r = schedule(snapshot(), [pod("trainer-2", **GANG)], COSCHEDULING)
    entry = r["pods"]["ml/trainer-2"]
    assert (entry["result"], entry["message"]) == ("Unschedulable", PERMIT_REJECTION)
    assert entry["attempts"] >= 1


def test_bound_pods_naming_missing_objects_keep_running() -> None:
    """The snapshot's two running Pods still hold 2 of n1's 8 CPUs: 6 more fit, not 7."""
    r = schedule(snapshot(), [pod(f"other-{i}") for i in range(7)], COSCHEDULING)
    results = [v["result"] for v in r["pods"].values()]
    assert results.count("Scheduled") == 6 and results.count("Unschedulable") == 1


def test_explain_gives_the_permit_rejection(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        out = kubesched.explain(snapshot(), pod("trainer-2", **GANG), COSCHEDULING)
    assert (out["result"], out["message"], out["selectedNode"]) == (
        "Unschedulable",
        PERMIT_REJECTION,
        None,
    )
    assert out["nodes"]["n1"]["feasible"]  # the filters passed: Permit said no
    assert [w.split(" (")[0] for w in messages(caplog)] == ['PodGroup "ml/trainer" not found']
    plain = kubesched.explain(snapshot(), pod("trainer-2", **GANG))
    assert plain["result"] == "Scheduled"  # without Coscheduling nobody reads the label


def test_explain_cli_accepts_the_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, p, cfg = tmp_path / "c.json", tmp_path / "p.yaml", tmp_path / "cfg.yaml"
    cluster.write_text(json.dumps(snapshot()))
    p.write_text(yaml.safe_dump(pod("trainer-2", **GANG)))
    cfg.write_text(yaml.safe_dump(COSCHEDULING))
    args = ["explain", "--cluster", str(cluster), "--pod", str(p), "--config", str(cfg)]
    assert main([*args, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["message"] == PERMIT_REJECTION


def test_remaining_job_layer_errors_name_the_cluster_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_quota = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "a", "namespace": "ml", "labels": {o.QUOTA_PARENT_LABEL: "a"}},
        "spec": {"min": {"cpu": "1"}, "max": {"cpu": "2"}},
    }
    cluster, pods = tmp_path / "cluster.json", tmp_path / "pods.yaml"
    cluster.write_text(json.dumps({**snapshot(), "items": [*snapshot()["items"], bad_quota]}))
    pods.write_text(yaml.safe_dump(pod("p")))
    for cmd in (["schedule", "--pods", str(pods)], ["explain", "--pod", str(pods)]):
        assert main([*cmd, "--cluster", str(cluster)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {cluster}: ") and "ElasticQuota/a" in err


def test_a_pod_may_name_the_snapshots_priority_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}
    high |= {"metadata": {"name": "high"}, "value": 1000}
    cluster, pods = tmp_path / "cluster.json", tmp_path / "pods.yaml"
    cluster.write_text(json.dumps({**snapshot(), "items": [*snapshot()["items"], high]}))
    named = {**pod("p"), "spec": {**pod("p")["spec"], "priorityClassName": "high"}}
    pods.write_text(yaml.safe_dump(named))
    assert main(["schedule", "--cluster", str(cluster), "--pods", str(pods), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["pods"]["ml/p"]["result"] == "Scheduled"


def test_simulate_runs_literal_objects_naming_missing_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    doc = {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "refs"},
        "spec": {
            "durationSeconds": 5,
            "drainSeconds": 5,
            "config": COSCHEDULING,
            "objects": [*snapshot()["items"], pod("trainer-2", **GANG)],
        },
    }
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        sc = build_scenario(doc)
        result = run_scenario(sc)
    assert [w.split(" (")[0] for w in messages(caplog)] == [
        'PodGroup "ml/trainer" not found',
        'LocalQueue "ml/team-ml" not found',
    ]
    assert invariants_hold(result)
