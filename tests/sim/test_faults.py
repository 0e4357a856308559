"""Fault drills at small scale: every drill runs with every invariant holding, reports the
Pods it touched and recovers; bad fault declarations name their field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api.errors import InputError
from kubesched.cli import main
from kubesched.sim.faultspec import parse_faults
from kubesched.sim.recovery import Sampler, recovery
from kubesched.sim.scenario import build_scenario
from kubesched.sim.simulate import invariants_hold, run_scenario

GANGS = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "multiPoint": {
                    "enabled": [{"name": "Coscheduling"}],
                    "disabled": [{"name": "PrioritySort"}],
                }
            },
        }
    ],
}


def scenario(faults: list[dict[str, Any]], *, gangs: bool = True, **timing: Any) -> dict[str, Any]:
    """120 nodes in three zones, steady web Pods, GPU Pods and 4-Pod gangs; faults at 12 s."""
    pod: dict[str, Any] = {"containers": [{"name": "c", "image": "i", "resources": {}}]}

    def tmpl(cpu: str, mem: str, gpu: bool = False) -> dict[str, Any]:
        t = copy.deepcopy(pod)
        t["containers"][0]["resources"]["requests"] = {"cpu": cpu, "memory": mem}
        if gpu:
            t["tolerations"] = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
            t["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
            t["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
        return {"metadata": {"labels": {"app": "x"}}, "spec": t}

    spec: dict[str, Any] = {
        "seed": 3,
        "durationSeconds": 30,
        "drainSeconds": 25,
        "timing": timing,
        "nodePools": [
            {"name": "cpu", "count": 110, "zones": ["za", "zb", "zc"],
             "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
            {"name": "gpu", "count": 10, "zones": ["za", "zb"],
             "taints": [{"key": "gpu", "value": "y", "effect": "NoSchedule"}],
             "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}},
        ],
        "workloads": [
            {"name": "web", "count": 450, "ratePerSecond": 15, "lifetimeSeconds": 40,
             "template": tmpl("500m", "1Gi")},
            {"name": "train", "count": 40, "ratePerSecond": 1.5, "lifetimeSeconds": 20,
             "gpuChoices": [1, 2, 4], "template": tmpl("2", "8Gi", gpu=True)},
            {"name": "gang", "count": 24, "ratePerSecond": 10, "startSeconds": 2,
             "podGroup": {"size": 4, "scheduleTimeoutSeconds": 10},
             "template": tmpl("1", "2Gi")},
        ],
        "faults": faults,
    }  # fmt: skip
    if gangs:
        spec["config"] = GANGS
    return {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "spec": spec}


def run(faults: list[dict[str, Any]], all_bound: bool = True, **kw: Any) -> dict[str, Any]:
    shards = kw.pop("shards", 1)
    summary = run_scenario(build_scenario(scenario(faults, **kw)), shards=shards)
    assert invariants_hold(summary), {k: v for k, v in summary["invariants"].items() if v}
    if all_bound:
        assert summary["podsScheduled"] == summary["podsSubmitted"]
    return summary


AT = 12.0


@pytest.mark.parametrize(
    ("fault", "affected_min"),
    [
        ({"kind": "bindFailures", "durationSeconds": 4, "rate": 0.5}, 10),
        ({"kind": "apiStorm", "durationSeconds": 3, "code": 429}, 10),
        ({"kind": "apiStorm", "durationSeconds": 3, "code": 500, "rate": 0.5}, 5),
        ({"kind": "latencySpike", "durationSeconds": 4, "bindLatencySeconds": 2.0}, 10),
        ({"kind": "nodeLoss", "count": 4}, 1),
        ({"kind": "zoneLoss", "zone": "za", "restoreAfterSeconds": 8}, 20),
        ({"kind": "bulkRelease", "fraction": 0.5}, 50),
    ],
    ids=lambda v: v["kind"] + str(v.get("code", "")) if isinstance(v, dict) else "",
)
def test_every_drill_holds_invariants_and_recovers(
    fault: dict[str, Any], affected_min: int
) -> None:
    summary = run([{**fault, "atSeconds": AT}])
    (row,) = summary["faults"]
    assert row["kind"] == fault["kind"]
    assert row["podsAffected"] >= affected_min, row
    assert row["recovered"], row
    assert 0 <= row["recoverySeconds"] <= 20, row
    for key in ("gangsPartiallyBound", "gangsHeldIncompletePastTimeout", "quotaExceeded"):
        assert summary["invariants"][key] == []


def test_storm_fails_binds_and_drops_status_updates() -> None:
    (row,) = run([{"kind": "apiStorm", "atSeconds": AT, "durationSeconds": 3}])["faults"]
    assert row["failedBinds"] >= row["podsAffected"] > 0


def test_lost_pods_are_replaced_and_bound() -> None:
    # A third of the capacity is gone for good: a few Pods may stay Pending, with a reason.
    summary = run([{"kind": "zoneLoss", "atSeconds": AT, "zone": "zb"}], all_bound=False)
    (row,) = summary["faults"]
    assert summary["podsPending"] <= 5
    assert row["nodesLost"] == 37 + 5  # every third CPU node and every other GPU node
    assert row["replacements"] == row["podsLost"] == row["podsAffected"] > 0
    assert summary["invariants"]["replacementPodsLost"] == []


def test_leader_failover_never_binds_an_assumed_pod_twice() -> None:
    """Slow binds keep Pods assumed-but-unbound when the leader dies; the standby takes over
    before those binds land, so it places some of them again and the API server refuses."""
    summary = run(
        [{"kind": "leaderFailover", "atSeconds": AT, "takeoverSeconds": 0.1}],
        bindLatencySeconds=0.5,
    )
    (row,) = summary["faults"]
    assert row["assumedInFlight"] > 0
    assert row["inFlightBindsLanded"] == row["assumedInFlight"]
    assert row["secondBindsRefused"] > 0
    assert summary["invariants"]["boundTwice"] == []
    assert row["recovered"]


def test_leader_failover_with_a_lease_gap_recovers_after_takeover() -> None:
    (row,) = run([{"kind": "leaderFailover", "atSeconds": AT, "takeoverSeconds": 5}])["faults"]
    assert row["endSeconds"] == AT + 5
    assert row["peakPending"] > row["preFaultPending"]
    assert row["recoverySeconds"] >= 5


def test_shard_crash_in_parallel_mode_restarts_the_shard() -> None:
    summary = run(
        [{"kind": "shardCrash", "atSeconds": AT, "shard": 1}],
        gangs=False,
        shards=2,
    )
    (row,) = summary["faults"]
    assert "skipped" not in row
    assert row["recovered"]
    assert [s["restarts"] for s in summary["parallel"]["perShard"]] == [0, 1]


def test_shard_crash_is_skipped_for_the_serial_scheduler() -> None:
    (row,) = run([{"kind": "shardCrash", "atSeconds": AT}], gangs=False)["faults"]
    assert "shards >= 2" in row["skipped"]


@pytest.mark.parametrize(
    ("faults", "field"),
    [
        ("nope", "spec.faults"),
        ([{"kind": "meteor", "atSeconds": 1}], "spec.faults[0].kind"),
        ([{"kind": "nodeLoss"}], "spec.faults[0].atSeconds"),
        ([{"kind": "bindFailures", "atSeconds": 1}], "spec.faults[0].durationSeconds"),
        ([{"kind": "bindFailures", "atSeconds": 1, "durationSeconds": 1, "rate": 2}],
         "spec.faults[0].rate"),
        ([{"kind": "apiStorm", "atSeconds": 1, "durationSeconds": 1, "code": 503}],
         "spec.faults[0].code"),
        ([{"kind": "zoneLoss", "atSeconds": 1}], "spec.faults[0].zone"),
        ([{"kind": "nodeLoss", "atSeconds": 1, "colour": "red"}], "spec.faults[0].colour"),
        ([{"kind": "bulkRelease", "atSeconds": 1, "selector": []}], "spec.faults[0].selector"),
    ],
)  # fmt: skip
def test_bad_faults_name_their_field(faults: Any, field: str) -> None:
    with pytest.raises(InputError) as err:
        parse_faults(faults)
    assert field in [p for p, _ in err.value.problems]


def test_a_scenario_with_a_bad_fault_is_rejected_by_path() -> None:
    doc = scenario([{"kind": "zoneLoss", "atSeconds": 1}])
    with pytest.raises(InputError) as err:
        build_scenario(doc)
    assert "spec.faults[0].zone" in str(err.value)


class _FakeSim:
    """Just enough of a SimCluster for a hand-made sample series."""


@pytest.mark.parametrize(
    ("bound", "pending", "recovered_at"),
    [
        # steady 10/s; stalled 3 samples; caught up with a burst; queue back at 5
        ([0, 10, 20, 30, 30, 30, 30, 80, 90, 100], [1, 1, 1, 1, 11, 21, 31, 1, 1, 1], 7.0),
        # never catches up: the queue keeps growing
        ([0, 10, 20, 30, 30, 30, 30, 31, 32, 33], [1, 1, 1, 1, 11, 21, 31, 40, 49, 58], None),
    ],
)
def test_recovery_needs_queue_and_throughput_back(
    bound: list[int], pending: list[int], recovered_at: float | None
) -> None:
    s = Sampler(_FakeSim())  # type: ignore[arg-type]
    s.t = [float(i) for i in range(10)]
    s.bound = bound
    s.created = [10 * i for i in range(10)]
    s.pending = pending
    out = recovery(s, 3.0, 4.0, baseline=3.0, window=1.0)
    assert out["preFaultPodsPerSecond"] == 10.0
    assert out["recovered"] is (recovered_at is not None)
    assert out["recoverySeconds"] == (None if recovered_at is None else recovered_at - 3.0)


def test_simulate_command_prints_each_drill(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "drill.yaml"
    doc = scenario([{"kind": "bulkRelease", "name": "release", "atSeconds": AT, "count": 20}])
    path.write_text(yaml.safe_dump(doc))
    assert main(["simulate", str(path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "fault release" in ln)
    assert "bulkRelease at 12.0 s: " in line and "recovered in 0.0 s" in line
    assert int(line.split(": ")[1].split()[0]) >= 20  # and the gangs they were in, whole
    assert "invariants            all hold" in out


def test_a_node_reregistered_under_its_name_still_counts_its_running_pods() -> None:
    """Issue 31 item 1 as a fault drill: the Node object is deleted while its Pod (3 of 4 cpu)
    keeps running, and created again 5 s later; Pods of 2 cpu arriving after that must stay
    Pending.  A cache that forgot the node's Pods would bind one there (overcommit)."""
    doc = {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "reregister"},
        "spec": {
            "durationSeconds": 30,
            "drainSeconds": 10,
            "objects": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": "n1"},
                    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
                },
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "running", "namespace": "default"},
                    "spec": {
                        "nodeName": "n1",
                        "containers": [
                            {"name": "c", "image": "i", "resources": {"requests": {"cpu": "3"}}}
                        ],
                    },
                },
            ],
            "workloads": [
                {
                    "name": "late",
                    "count": 3,
                    "ratePerSecond": 1,
                    "startSeconds": 15,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "i", "resources": {"requests": {"cpu": "2"}}}
                            ]
                        }
                    },
                }
            ],
            "faults": [
                {"kind": "nodeReregister", "nodes": ["n1"], "atSeconds": 5, "durationSeconds": 5}
            ],
        },
    }
    summary = run_scenario(build_scenario(doc))
    assert invariants_hold(summary), summary["invariants"]
    assert summary["podsScheduled"] == 1  # only the running Pod: the late ones do not fit
    (row,) = summary["faults"]
    assert row["kind"] == "nodeReregister"
