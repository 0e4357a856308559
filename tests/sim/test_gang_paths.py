"""Gangs as whole units in ``simulate`` (issue 33 item 3), both kinds: time until every
member is bound and Ready, the held-past-timeout invariant, the same jobs expressed as
Coscheduling and as Workload API gangs side by side, and where gangs land on racks."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesched.api.errors import InputError
from kubesched.cli import main
from kubesched.sim import gangpaths, jobs
from kubesched.sim.gangplacement import PlacementProbe
from kubesched.sim.scenario import build_scenario
from kubesched.sim.simulate import invariants_hold, run_scenario

STARTUP = 3.0


def scenario(
    *,
    api: str = "coscheduling",
    gpus: int = 8,
    racks: int = 1,
    members: int = 4,
    member_gpus: int = 2,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``racks`` nodes of ``gpus`` GPUs (label ``rack``), one job of ``members`` Pods."""
    pod_group: dict[str, Any] = {"minMember": members, **(extra or {})}
    if api == "workload":
        pod_group["api"] = "workload"
    return {
        "kind": "Scenario",
        "spec": {
            "seed": 3,
            "kubernetesVersion": "1.37",
            "featureGates": {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True},
            "durationSeconds": 1,
            "drainSeconds": 30,
            "config": {
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
                        "pluginConfig": [
                            {
                                "name": "Coscheduling",
                                "args": {
                                    "permitWaitingTimeSeconds": 5,
                                    "podGroupBackoffSeconds": 2,
                                },
                            }
                        ],
                    }
                ],
            },
            "nodePools": [
                {
                    "name": f"r{r}",
                    "count": 1,
                    "labels": {"rack": f"r{r}"},
                    "allocatable": {
                        "cpu": "64",
                        "memory": "256Gi",
                        "pods": "110",
                        "nvidia.com/gpu": str(gpus),
                    },
                }
                for r in range(racks)
            ],
            "workloads": [
                {
                    "name": "job",
                    "count": members,
                    "ratePerSecond": 20,
                    "nodeStartupSeconds": STARTUP,
                    "podGroup": pod_group,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "x",
                                    "resources": {
                                        "requests": {"cpu": "1", "nvidia.com/gpu": str(member_gpus)}
                                    },
                                }
                            ]
                        }
                    },
                }
            ],
        },
    }


@pytest.mark.parametrize(
    ("api", "rows", "kind"),
    [
        ("coscheduling", "gangs", "coscheduling"),
        ("workload", "podGroups", "workloadApi"),
    ],
)
def test_every_member_bound_and_ready(api: str, rows: str, kind: str) -> None:
    r = run_scenario(build_scenario(scenario(api=api)))
    row = r[rows]["default/job"]
    # members are created over time: every member is bound after the first was created,
    # and Ready exactly the (constant) node startup after the last bind
    assert row["allBoundSeconds"] >= row["completeSeconds"] > 0
    assert row["allReadySeconds"] == pytest.approx(row["allBoundSeconds"] + STARTUP)
    c = r["gangCompletion"][kind]
    assert (c["gangs"], c["allBound"], c["allReady"]) == (1, 1, 1)
    assert c["allReadySeconds"]["p50"] == pytest.approx(row["allReadySeconds"], abs=1e-4)
    assert invariants_hold(r)


@pytest.mark.parametrize("api", ["coscheduling", "workload"])
def test_a_gang_that_never_fits_has_no_times(api: str) -> None:
    r = run_scenario(build_scenario(scenario(api=api, members=5)))  # 10 GPUs of 8
    rows = r["gangs"] if api == "coscheduling" else r["podGroups"]
    assert rows["default/job"]["allBoundSeconds"] is None
    c = next(iter(r["gangCompletion"].values()))
    assert (c["allBound"], c["allReady"], c["allBoundSeconds"]["p99"]) == (0, 0, None)
    assert invariants_hold(r)


def test_a_partial_gang_held_past_its_timeout_is_an_invariant_violation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Coscheduling holds the members that fit at Permit for ``permitWaitingTimeSeconds``
    (5 s; its PostFilter leaves a gang missing at most 10 % alone): within the timeout the
    invariant holds; with the slack made negative the same hold is past it and the gang is
    named."""
    d = scenario(gpus=10, members=11, member_gpus=1)  # 10 of 11 fit: they wait, then go
    r = run_scenario(build_scenario(copy.deepcopy(d)))
    hold = r["gangs"]["default/job"]["longestIncompleteHoldSeconds"]
    assert 4.0 < hold <= 5.0 + jobs.HOLD_SLACK
    assert r["invariants"]["gangsHeldIncompletePastTimeout"] == []
    monkeypatch.setattr(jobs, "HOLD_SLACK", -2.0)
    r = run_scenario(build_scenario(d))
    assert r["invariants"]["gangsHeldIncompletePastTimeout"] == ["default/job"]


def test_the_rack_constraint_keeps_a_job_in_one_rack() -> None:
    """Two racks of 8 GPUs, a job of 4 x 3 GPUs: each rack fits two members, but not
    four; only the rack-constrained Workload API gang refuses to spread."""
    spread = scenario(api="workload", racks=2, member_gpus=3)
    r = run_scenario(build_scenario(spread))
    assert r["podGroups"]["default/job"]["allBoundSeconds"] is not None
    d = scenario(api="workload", racks=2, member_gpus=3, extra={"topologyKey": "rack"})
    r = run_scenario(build_scenario(d))
    assert r["podGroups"]["default/job"]["allBoundSeconds"] is None
    assert r["podsScheduled"] == 0


@pytest.mark.parametrize(
    ("extra", "version", "field", "message"),
    [
        ({"topologyKey": "rack"}, "1.37", "topologyKey", "needs api: workload"),
        (
            {"api": "workload", "scheduleTimeoutSeconds": 5},
            "1.37",
            "scheduleTimeoutSeconds",
            "is Coscheduling's",
        ),
        ({"api": "workload"}, "1.35", "api", "needs Kubernetes 1.36 or later"),
        ({"api": "slurm"}, "1.37", "api", "must be one of coscheduling, workload"),
    ],
)
def test_bad_pod_group_fields_are_refused(
    extra: dict[str, Any], version: str, field: str, message: str
) -> None:
    d = scenario(extra=extra)
    d["spec"]["kubernetesVersion"] = version
    d["spec"].pop("featureGates")
    with pytest.raises(InputError) as e:
        build_scenario(d)
    path, text = e.value.problems[0][:2]
    assert path == f"spec.workloads[0].podGroup.{field}"
    assert message in text


def test_the_same_jobs_both_ways() -> None:
    """``as_workload_api`` keeps the arrivals and makes the gangs Workload API ones; the
    comparison puts both runs' gangs side by side."""
    sc = build_scenario(scenario(members=4))
    wl = gangpaths.as_workload_api(sc, topology_key="rack")
    assert [a.at for a in wl.arrivals] == [a.at for a in sc.arrivals]
    assert {a.pod.scheduling_group for a in wl.arrivals} == {"job"}
    assert all(a.pod.scheduling_group is None for a in sc.arrivals)  # the original is kept
    groups = [o for o in wl.others if o.get("kind") == "PodGroup"]
    assert groups[0]["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert wl.gates.enabled("TopologyAwareWorkloadScheduling")
    runs = {"Coscheduling": run_scenario(sc), "Workload API": run_scenario(wl)}
    assert "gangs" not in runs["Workload API"] or not runs["Workload API"]["gangs"]
    c = gangpaths.compare(runs)
    assert [r["allReady"] for r in c["runs"].values()] == [1, 1]
    table = gangpaths.rows(c)
    assert table[0] == ("", "Coscheduling", "Workload API")
    assert ("Every member Ready (job started)", "1", "1") in table


def test_compare_gangs_on_the_command_line(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario()))
    assert main(["simulate", str(path), "--no-progress", "--compare-gangs"]) == 0
    out = capsys.readouterr().out
    assert "gang paths, same jobs and seed:" in out
    assert "Coscheduling" in out and "Workload API" in out


def test_placement_probe_counts_fragments_and_racks() -> None:
    """Two racks of one 8-GPU node; a job of 2 x 3 GPUs on one node leaves 2 GPUs there
    that a 4-GPU member cannot use (2 of 16: 12.5 %) and one rack idle; a Pod of 9 GPUs
    stays pending so every sample counts."""
    d = scenario(api="workload", racks=2, members=2, member_gpus=3, extra={"topologyKey": "rack"})
    big = copy.deepcopy(d["spec"]["workloads"][0])
    big.update(name="big", count=1)
    big.pop("podGroup")
    big["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "9"
    d["spec"]["workloads"].append(big)
    sc = build_scenario(d)
    probe = PlacementProbe("rack", 4, until=31.0, interval=1.0)
    probe.count([a.pod for a in sc.arrivals])
    run_scenario(sc, setup=probe.install)
    out = probe.report()
    assert (out["jobs"], out["oneRackPercent"], out["racksPerJob"]) == (1, 100.0, 1.0)
    assert probe.fragmented[-1] == 12.5
    assert probe.idle_racks[-1] == 1


def test_a_constant_lifetime() -> None:
    d = scenario()
    d["spec"]["workloads"][0]["lifetimeSeconds"] = {"distribution": "constant", "seconds": 7}
    assert {a.lifetime for a in build_scenario(d).arrivals} == {7.0}
