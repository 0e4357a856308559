"""The job layer's scenarios: Flood, Piecemeal deadlock, Borrow and reclaim.

Each loads the built-in scenario YAML and shrinks it so the test runs in seconds; the
``slow`` variants run the files as shipped (``pytest -m slow``).
"""

from __future__ import annotations

import copy
from importlib import resources
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubesched.api.errors import InputError
from kubesched.cli import main
from kubesched.metrics import SchedulerMetrics
from kubesched.sim.scenario import build_scenario, load_scenario
from kubesched.sim.simulate import invariants_hold, run_scenario


def doc(name: str) -> dict[str, Any]:
    text = resources.files("kubesched.sim").joinpath(f"scenarios/{name}.yaml").read_text()
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


def run(d: dict[str, Any], **fields: Any) -> dict[str, Any]:
    sc = build_scenario(copy.deepcopy(d))
    for k, v in fields.items():
        setattr(sc, k, v)
    return run_scenario(sc)


# ------------------------------------------------------------------ Flood
def small_flood() -> dict[str, Any]:
    d = doc("flood")
    spec = d["spec"]
    spec["durationSeconds"], spec["drainSeconds"] = 5, 3
    spec["nodePools"][0]["count"] = 2  # 16 GPUs
    spec["nodePools"][1]["count"] = 2
    cq = next(o for o in spec["objects"] if o["kind"] == "ClusterQueue")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 16
    flood, steady = spec["workloads"]
    flood.update(count=160, ratePerSecond=200, lifetimeSeconds=2)
    steady.update(count=80, ratePerSecond=20, lifetimeSeconds=2)
    return d


def check_flood(on: dict[str, Any], off: dict[str, Any]) -> None:
    a_on, a_off = on["namespaces"]["tenant-a"], off["namespaces"]["tenant-a"]
    b_on, b_off = on["namespaces"]["tenant-b"], off["namespaces"]["tenant-b"]
    # attempts spent on Pods that could not fit fall by at least 90 %
    assert a_off["failedAttempts"] > 100
    assert a_on["failedAttempts"] <= 0.1 * a_off["failedAttempts"]
    # the other tenant's queueing time does not grow
    assert b_on["queueingSeconds"]["p99"] <= b_off["queueingSeconds"]["p99"] + 1e-3
    assert b_on["bound"] == b_off["bound"] == b_on["pods"]
    # freed GPUs: the next waiting Pods are admitted and bound within one simulated second
    freed = [w["freedToBoundSeconds"] for w in on["workloads"].values() if "freedAt" in w]
    assert len(freed) > 10 and all(f is not None and f <= 1.0 for f in freed)
    # both ways report attempts and the success ratio
    for r in (on, off):
        assert set(r["attempts"]) == {"scheduled", "unschedulable", "error"}
        assert 0 <= r["successRatio"] <= 1
        assert invariants_hold(r)
    assert on["successRatio"] > off["successRatio"]
    usage = on["clusterQueues"]["tenant-a"]["resources"]["gpu-pool/nvidia.com/gpu"]
    assert 0 <= usage["used"] <= usage["nominal"]
    assert off["workloads"] == {} and off["pendingPods"]["gated"] == 0


def test_flood_admission_saves_attempts_and_admits_on_release() -> None:
    d = small_flood()
    check_flood(run(d, admission=True), run(d, admission=False))


@pytest.mark.slow
def test_flood_as_shipped() -> None:
    d = doc("flood")
    check_flood(run(d, admission=True), run(d, admission=False))


# ------------------------------------------------------------------ Piecemeal deadlock
def test_piecemeal_deadlock_without_gangs() -> None:
    r = run(doc("piecemeal"), config=None)
    gangs = r["gangs"]
    assert r["podsScheduled"] == 16  # every GPU is held ...
    assert all(g["completeAt"] is None for g in gangs.values())  # ... and no job can start
    assert sum(1 for g in gangs.values() if g["running"] > 0) >= 3


def test_piecemeal_with_gangs_runs_two_jobs_whole() -> None:
    r = run(doc("piecemeal"))
    gangs = r["gangs"]
    whole = [k for k, g in gangs.items() if g["running"] == 8 and g["completeAt"] is not None]
    idle = [k for k, g in gangs.items() if g["running"] == 0]
    assert len(whole) == 2 and len(idle) == 2
    assert r["utilization"]["nvidia.com/gpu"] == 100.0
    for g in gangs.values():
        assert g["longestIncompleteHoldSeconds"] <= 5.0 + 1e-6  # scheduleTimeoutSeconds
    assert invariants_hold(r)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=st.integers(1, 4),
    size=st.integers(2, 6),
    gpus=st.sampled_from([4, 8, 12]),
    near=st.booleans(),
    timeout=st.integers(1, 3),
    rate=st.sampled_from([5, 40, 400]),
    seed=st.integers(0, 1000),
)
@example(jobs=1, size=2, gpus=12, near=True, timeout=2, rate=40, seed=1)
@example(jobs=4, size=4, gpus=8, near=False, timeout=1, rate=400, seed=2)
def test_no_gang_holds_resources_incomplete_past_its_timeout(
    jobs: int, size: int, gpus: int, near: bool, timeout: int, rate: int, seed: int
) -> None:
    """``near``: one gang a single GPU too big for the pool, so its members wait at Permit
    (PostFilter leaves gangs missing at most 10 % alone) until the timeout releases them."""
    d = doc("piecemeal")
    spec = d["spec"]
    spec["seed"], spec["durationSeconds"], spec["drainSeconds"] = seed, 2, 3 * timeout + 4
    spec["nodePools"][0]["count"] = gpus // 4
    spec["nodePools"][0]["allocatable"]["nvidia.com/gpu"] = "4"
    base = spec["workloads"][0]
    sizes = [gpus + 1] if near else [size] * jobs
    spec["workloads"] = [
        {
            **copy.deepcopy(base),
            "name": f"job-{i}",
            "count": n,
            "ratePerSecond": rate,
            "podGroup": {"minMember": n, "scheduleTimeoutSeconds": timeout},
        }
        for i, n in enumerate(sizes)
    ]
    r = run(d)
    cycle = r["config"]["cycleSeconds"]
    for key, g in r["gangs"].items():
        assert g["longestIncompleteHoldSeconds"] <= timeout + cycle + 1e-9, key
        assert g["running"] in (0, g["minMember"])  # all or nothing bound at the end
    if near and gpus == 12:
        assert max(g["longestIncompleteHoldSeconds"] for g in r["gangs"].values()) > 0.5
    assert invariants_hold(r)


# ------------------------------------------------------------------ Borrow and reclaim
def test_borrow_and_reclaim() -> None:
    r = run(doc("borrow_reclaim"))
    quotas = r["quotas"]
    a, b = (
        quotas["team-a"]["resources"]["nvidia.com/gpu"],
        quotas["team-b"]["resources"]["nvidia.com/gpu"],
    )
    assert b["peak"] == 16  # b borrowed a's idle min
    assert a["used"] == 8 and b["used"] == 8  # a got its min back, b kept its own
    assert quotas["team-b"]["reclaimedPods"] == 8 and quotas["team-a"]["reclaimedPods"] == 0
    for cell in (a, b):
        assert cell["peak"] <= cell["max"]  # nobody ever exceeded max
    ns = r["namespaces"]
    assert ns["team-a"]["bound"] == 8 and ns["team-b"]["bound"] == 16
    assert invariants_hold(r)


def test_borrow_without_owner_demand_keeps_everything() -> None:
    d = doc("borrow_reclaim")
    d["spec"]["workloads"] = d["spec"]["workloads"][:1]
    r = run(d)
    assert r["quotas"]["team-b"]["resources"]["nvidia.com/gpu"]["used"] == 16
    assert r["quotas"]["team-b"]["reclaimedPods"] == 0


# ------------------------------------------------------------------ metrics
def sample(m: SchedulerMetrics, name: str, **labels: str) -> float:
    want = tuple(sorted(labels.items()))
    return sum(v for (n, ls), v in m.samples().items() if n == name and set(want) <= set(ls))


def test_job_layer_metrics() -> None:
    m = SchedulerMetrics()
    run_scenario(build_scenario(doc("piecemeal")), metrics=m)
    assert sample(m, "scheduler_gang_attempts_total", result="scheduled") == 2
    assert sample(m, "scheduler_gang_time_to_complete_seconds_count") == 2
    assert sample(m, "scheduler_gangs_waiting") == 0
    m = SchedulerMetrics()
    run_scenario(build_scenario(doc("borrow_reclaim")), metrics=m)
    assert sample(m, "scheduler_quota_reclaim_victims_total", quota="team-b") == 8
    assert sample(m, "scheduler_quota_limit", quota="team-a", limit="min") == 8
    assert sample(m, "scheduler_quota_limit", quota="team-a", limit="runtime") == 8
    assert sample(m, "scheduler_quota_borrowed", quota="team-b") == 0
    m = SchedulerMetrics()
    d = small_flood()
    run_scenario(build_scenario(d), metrics=m)
    assert sample(m, "scheduler_admission_wait_duration_seconds_count") > 16
    assert sample(m, "scheduler_admission_pending_workloads", cluster_queue="tenant-a") >= 0


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (
            lambda s: (
                s["objects"][0]["metadata"].update(
                    labels={"quota.scheduling.koordinator.sh/parent": "team-b"}
                )
                or s["objects"][1]["metadata"].update(
                    labels={"quota.scheduling.koordinator.sh/parent": "team-a"}
                )
            ),
            "ElasticQuota/team-",
        ),
        (
            lambda s: (
                s["objects"][1]["metadata"].update(
                    labels={"quota.scheduling.koordinator.sh/parent": "team-a"}
                )
                or s["objects"][0]["spec"]["min"].update({"nvidia.com/gpu": 4})
            ),
            "ElasticQuota/team-a.spec.min[nvidia.com/gpu]",
        ),
        (
            lambda s: s["objects"][0]["metadata"].update(
                labels={"quota.scheduling.koordinator.sh/parent": "nobody"}
            ),
            "ElasticQuota/team-a.metadata.labels[quota.scheduling.koordinator.sh/parent]",
        ),
        (
            lambda s: s["objects"].append(
                {
                    "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                    "kind": "PodGroup",
                    "metadata": {"name": "orphan", "namespace": "team-a"},
                    "spec": {"minMember": 2},
                }
            ),
            "PodGroup/team-a/orphan.metadata.name",
        ),
    ],
)
def test_bad_job_layer_input_names_object_and_field(edit: Any, path: str, tmp_path: Any) -> None:
    d = doc("borrow_reclaim")
    edit(d["spec"])
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(d))
    with pytest.raises(InputError) as err:
        load_scenario(str(f))
    assert err.value.file == str(f)
    assert any(p.startswith(path) for p, _m in err.value.problems), err.value.problems
    assert main(["simulate", "--no-progress", str(f)]) == 2
