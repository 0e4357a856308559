"""The job layer's Kueue fair sharing and requeueing in the simulator.

``kueue_fair_sharing.yaml``: two queues of weights 2 and 1 borrowing one pool converge to
8 and 4 GPUs (equal weighted shares) through fair-sharing preemption; the evicted
workloads are requeued, recreated and finish.  ``waitForPodsReady``: a workload whose Pods
are never bound is evicted after the timeout, requeued after its backoff, and deactivated
after ``backoffLimitCount`` requeues.
"""

from __future__ import annotations

import copy
from importlib import resources
from typing import Any

import pytest
import yaml

from kubesched.admission import kueue_config as kc
from kubesched.admission import objects as o
from kubesched.api.errors import InputError
from kubesched.api.parse import parse_objects
from kubesched.metrics import SchedulerMetrics
from kubesched.sim.admission_controller import AdmissionController
from kubesched.sim.apiserver import SimApiServer
from kubesched.sim.engine import EventLoop
from kubesched.sim.scenario import build_scenario
from kubesched.sim.simulate import invariants_hold, run_scenario
from tests.sim.test_admission_controller import node, pod, queues

GPU_CELL = "gpu/nvidia.com/gpu"


def doc(enable: bool = True, until: float | None = None) -> dict[str, Any]:
    text = resources.files("kubesched.sim").joinpath("scenarios/kueue_fair_sharing.yaml")
    d: dict[str, Any] = yaml.safe_load(text.read_text())
    d["spec"]["admission"]["configuration"]["fairSharing"]["enable"] = enable
    if until is not None:
        d["spec"]["durationSeconds"], d["spec"]["drainSeconds"] = until, 0
    return d


def used(r: dict[str, Any]) -> dict[str, int]:
    return {q: c["resources"][GPU_CELL]["used"] for q, c in r["clusterQueues"].items()}


@pytest.mark.parametrize("until", [8.0, 15.0])
def test_weighted_queues_converge_to_their_weighted_shares(until: float) -> None:
    r = run_scenario(build_scenario(doc(until=until)))
    assert used(r) == {"pool": 0, "team-a": 8, "team-b": 4}  # 2:1, the weights
    shares = {q: c["weightedShare"] for q, c in r["clusterQueues"].items()}
    assert shares == {"pool": 0, "team-a": 333, "team-b": 333}  # 8/12/2 == 4/12/1
    assert r["clusterQueues"]["team-a"]["pendingWorkloads"] > 0  # both still have backlog
    assert r["clusterQueues"]["team-b"]["pendingWorkloads"] > 0


def test_without_fair_sharing_the_first_team_keeps_the_pool() -> None:
    r = run_scenario(build_scenario(doc(enable=False, until=8.0)))
    assert used(r) == {"pool": 0, "team-a": 12, "team-b": 0}
    assert all("weightedShare" not in c for c in r["clusterQueues"].values())


def test_evicted_workloads_are_requeued_and_all_finish() -> None:
    m = SchedulerMetrics()
    r = run_scenario(build_scenario(doc()), metrics=m)
    wl = r["workloads"]
    evicted = {k: w for k, w in wl.items() if w["evictions"]}
    assert len(evicted) == 4 and all(k.startswith("team-a/") for k in evicted)
    for w in evicted.values():
        assert w["admissions"] == 2 and w["evictionReason"] == "Preempted"
        assert w["preemptionReason"] == "InCohortFairSharing"
        assert w["admittedAt"] > w["evictedAt"]  # the final admission
        assert [h["reason"] for h in w["evictionHistory"]] == ["Preempted"]
    assert all(w["admittedAt"] is not None for w in wl.values())  # nothing lost
    assert all(c["pendingWorkloads"] == 0 for c in r["clusterQueues"].values())
    assert r["clusterQueues"]["team-a"]["evictedWorkloadsByReason"] == {"Preempted": 4}
    assert r["podsScheduled"] == 60 and r["attempts"]["scheduled"] == 64  # 4 Pods rebound
    assert invariants_hold(r) and r["invariants"]["lostPods"] == []
    samples = m.samples()

    def value(name: str, **labels: str) -> float:
        want = set(labels.items())
        return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))

    assert value("scheduler_admission_evicted_workloads_total", cluster_queue="team-a") == 4
    assert (
        value(
            "scheduler_admission_preempted_workloads_total",
            preempting_cluster_queue="team-b",
            reason="InCohortFairSharing",
        )
        == 4
    )
    assert value("scheduler_admission_cluster_queue_weighted_share", cluster_queue="team-a") == 0


def test_bad_kueue_configuration_names_the_field() -> None:
    d = doc()
    d["spec"]["admission"]["configuration"]["fairSharing"]["preemptionStrategies"] = ["Nope"]
    with pytest.raises(InputError) as err:
        build_scenario(copy.deepcopy(d))
    assert err.value.problems[0][0] == (
        "spec.admission.configuration.fairSharing.preemptionStrategies"
    )


# ------------------------------------------------------------------ waitForPodsReady
def controller(config: kc.KueueConfig) -> tuple[EventLoop, SimApiServer, AdmissionController]:
    loop = EventLoop()
    server = SimApiServer(loop)
    server.create_node(parse_objects([node("n1")]).nodes[0])
    ctl = AdmissionController(server, loop, o.collect(queues(2)), config=config)
    return loop, server, ctl


def test_pods_ready_timeout_evicts_requeues_after_backoff_then_deactivates() -> None:
    config = kc.KueueConfig(
        wait_for_pods_ready=True,
        pods_ready_timeout=5.0,
        backoff_base_seconds=10,
        backoff_limit_count=2,
    )
    loop, server, ctl = controller(config)
    server.create_pod(ctl.gate(parse_objects([pod("p")]).pods[0]))
    loop.run()  # no scheduler: the Pod is never bound
    w = ctl.report()["workloads"]["t/p"]
    history = [h["at"] for h in w["evictionHistory"]]
    assert history == [5.0, 20.0, 45.0]  # admitted at 0, 15 (0+5+10), 40 (20+20)
    assert (w["admissions"], w["evictions"]) == (3, 3)
    assert w["evictionReason"] == "PodsReadyTimeout" and w["preemptionReason"] is None
    assert w["deactivated"] and w["admittedAt"] is None
    assert sorted(server.pods) == ["t/p-r3"]  # the live replacement, still gated
    assert o.KUEUE_GATE in server.pods["t/p-r3"].scheduling_gates
    assert ctl.origin("t/p-r3") == "t/p"


def test_pods_ready_in_time_are_not_evicted() -> None:
    loop, server, ctl = controller(kc.KueueConfig(wait_for_pods_ready=True, pods_ready_timeout=5))
    server.create_pod(ctl.gate(parse_objects([pod("p")]).pods[0]))
    loop.call_at(1.0, lambda: server.bind(server.pods["t/p"], "n1"))
    loop.run()
    w = ctl.report()["workloads"]["t/p"]
    assert (w["admissions"], w["evictions"]) == (1, 0) and w["allBoundAt"] == 1.0
