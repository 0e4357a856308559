"""The runner on the public benchmark set (``fast`` workloads) and on small made-up configs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.errors import InputError
from kubesched.bench import params as p
from kubesched.bench import runner
from kubesched.bench.config import load_test_cases
from kubesched.bench.loop import WorkloadError
from kubesched.bench.results import ATTEMPT_METRIC, WorkloadResult
from kubesched.config.args import NodeResourcesFitArgs
from kubesched.config.featuregates import FeatureGates
from kubesched.plugins.registry import UNMODELLED
from tests.bench.support import BENCHMARKS, basic_case, write_config

OPTIONS = runner.RunOptions(timeout=60.0)


def _fast() -> list[tuple[str, str, str]]:
    out = []
    for config in ("performance-config.yaml", "format-coverage-config.yaml"):
        for tc, w in p.select(load_test_cases(str(BENCHMARKS / config)), labels=("fast",)):
            out.append((config, tc.name, w.name))
    return out


def _plan(path: str, case: str, workload: str) -> tuple[Any, Any, list[p.Step]]:
    ((tc, w),) = p.select(load_test_cases(path), case=case, workload=workload)
    return tc, w, p.resolve(tc, w)


def _run(path: str, case: str, workload: str, **options: Any) -> runner._WorkloadRun:
    tc, w, steps = _plan(path, case, workload)
    run = runner._WorkloadRun(tc, w, steps, runner.RunOptions(**{"timeout": 60.0, **options}))
    try:
        run.run()
    except WorkloadError as err:
        run.result.error = str(err)
    finally:
        run.finish()
    return run


@pytest.mark.parametrize(("config", "case", "workload"), _fast())
def test_fast_workloads_of_every_public_case(config: str, case: str, workload: str) -> None:
    tc, w, steps = _plan(str(BENCHMARKS / config), case, workload)
    result = runner.run_workload(tc, w, steps, OPTIONS)
    created = sum(s.count for s in steps if isinstance(s, p.CreatePods))
    if case == "PreemptionBasic" and "DefaultPreemption" in UNMODELLED:
        # Only preemption can place the measured Pods: the runner says so at once.
        assert result.error is not None and "nothing left to try" in result.error
        assert "Insufficient cpu" in result.error and result.error.startswith("op 2:")
        return
    assert result.ok, result.summary_line()
    gated = sum(s.count for s in steps if isinstance(s, p.CreatePods) and s.skip_wait)
    assert result.pods_bound >= created - gated
    throughput = result.metric("SchedulingThroughput")
    assert throughput is not None and throughput["Average"] > 0
    assert result.items[0]["labels"] == {
        "Metric": "SchedulingThroughput",
        "Name": f"{case}/{workload}",
    }
    assert result.metric(ATTEMPT_METRIC) is not None
    assert result.summary_line().startswith(f"{case}/{workload}, ")


def test_topology_spreading_nodes_get_zones_round_robin_in_name_order() -> None:
    run = _run(str(BENCHMARKS / "performance-config.yaml"), "TopologySpreading", "100Nodes")
    nodes = sorted(run.api.nodes.values(), key=lambda n: n.name)
    zones = [n.labels["topology.kubernetes.io/zone"] for n in nodes]
    assert zones[:4] == ["moon-1", "moon-2", "moon-3", "moon-1"]
    assert Counter(zones) == {"moon-1": 34, "moon-2": 33, "moon-3": 33}
    assert all(n.name.startswith("scheduler-perf-") and len(n.name) == 20 for n in nodes)
    assert {pod.namespace for pod in run.api.pods.values()} == {"namespace-1", "namespace-2"}


def test_scheduling_while_gated_keeps_gated_pods_and_deletes_in_the_background() -> None:
    run = _run(str(BENCHMARKS / "performance-config.yaml"), "SchedulingWhileGated",
               "1Node_100GatedPods")  # fmt: skip
    assert run.result.ok, run.result.summary_line()
    assert list(run.api.nodes) == ["scheduler-perf-node"]
    gated = run.api.pods_in("namespace-1")
    assert len(gated) == 100 and not any(pod.node_name for pod in gated)
    assert run.api.count("namespace-1", "Attempted") == 100  # gated: PodScheduled=False
    assert run.api.count("namespace-5", "Scheduled") == 200
    assert len(run.api.pods_in("namespace-3")) <= 200  # deletion at 50/s had begun or not


def test_format_coverage_uses_every_part_of_the_format() -> None:
    run = _run(str(BENCHMARKS / "format-coverage-config.yaml"), "FormatCoverage", "10Nodes")
    assert run.result.ok, run.result.summary_line()
    names = set(run.api.nodes)
    assert {f"coverage-node-{i}" for i in range(10)} <= names
    assert run.api.nodes["coverage-node-3"].labels["pool-size"] == "10"
    assert run.api.nodes["coverage-node-3"].allocatable["example.com/accelerator-3"] == 1
    kinds = Counter(kind for kind, _ in run.api.objects)
    assert kinds["PodDisruptionBudget"] == 1 and kinds["Service"] >= 1
    assert {"shop-0", "shop-1"} <= run.api.namespaces
    indexed = [pod for pod in run.api.pods_in("shop-0") if pod.name.startswith("indexed-")]
    assert {pod.name for pod in indexed} == {f"indexed-{i}-of-30" for i in range(30)}
    web = run.api.pods_in("shop-0", {"app": "web"})
    assert web and all(pod.key in run.api.terminating for pod in web)  # deleted, grace 30
    warm = [pod for pod in run.api.pods_in("shop-0") if pod.name.startswith("web-")]
    signatures = {pod.labels["signature"] for pod in warm}
    assert signatures == {f"signature-label-{i}" for i in range(4)}  # 20 Pods, batches of 5
    (item,) = [i for i in run.result.items if i["labels"]["Metric"] == "SchedulingThroughput"]
    assert item["labels"]["Name"] == "FormatCoverage/10Nodes"
    fit = run.scheduler.config.profiles[0].plugin_config["NodeResourcesFit"]
    assert isinstance(fit, NodeResourcesFitArgs)
    assert fit.scoring_strategy.type == "MostAllocated"  # from schedulerConfigPath


def _config(tmp: Path, *cases: dict[str, Any], **templates: dict[str, Any]) -> str:
    return str(write_config(tmp, list(cases), **templates))


def _run_tmp(path: str, **options: Any) -> WorkloadResult:
    (result,) = runner.run_config(path, options=runner.RunOptions(**{"timeout": 30.0, **options}))
    return result


BIG = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"generateName": "big-"},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "9"}}}]},
}


def test_pods_that_fit_nowhere_fail_at_once(tmp_path: Path) -> None:
    case = basic_case()
    case["defaultPodTemplatePath"] = "big.yaml"
    result = _run_tmp(_config(tmp_path, case, big=BIG))
    assert result.error is not None and result.error.startswith("op 1: 0 of 6 Pods")
    assert "nothing left to try" in result.error and "Insufficient cpu" in result.error
    assert result.wall_seconds < 5


def test_a_wait_that_background_work_keeps_alive_times_out(tmp_path: Path) -> None:
    churn = {"opcode": "churn", "mode": "create", "templatePaths": ["pod.yaml"]}
    case = basic_case()
    case["workloadTemplate"].insert(1, {**churn, "intervalMilliseconds": 50})
    case["workloadTemplate"][2]["podTemplatePath"] = "big.yaml"
    result = _run_tmp(_config(tmp_path, case, big=BIG), timeout=0.5)
    assert result.error is not None and "timed out after 0.5 s" in result.error


def test_steady_state_replaces_every_bound_pod_until_the_duration(tmp_path: Path) -> None:
    case = basic_case()
    case["workloadTemplate"][1].update(steadyState=True, duration="500ms")
    result = _run_tmp(_config(tmp_path, case))
    assert result.ok, result.summary_line()
    assert result.pods_bound > 6


def test_delete_pods_at_a_rate_by_label_waits_unless_told_not_to(tmp_path: Path) -> None:
    case = basic_case()
    case["workloadTemplate"].append({"opcode": "deletePods", "namespace": "namespace-1",
                                     "labelSelector": {"signature": "signature-label-0"},
                                     "deletePodsPerSecond": 20})  # fmt: skip
    result = _run_tmp(_config(tmp_path, case))
    assert result.ok and result.wall_seconds >= 0.05  # one Pod at 20/s: one 50 ms tick


def test_barrier_on_an_unknown_namespace_fails(tmp_path: Path) -> None:
    case = basic_case()
    case["workloadTemplate"].append({"opcode": "barrier", "namespaces": ["nowhere"]})
    result = _run_tmp(_config(tmp_path, case))
    assert result.error == "op 2: unknown namespace nowhere"


def test_modelled_api_server_shows_the_client_rate_limit_as_ceiling(tmp_path: Path) -> None:
    case = basic_case(params={"nodes": 3, "pods": 40})
    result = _run_tmp(_config(tmp_path, case), binding="api", client_qps=50.0, client_burst=1,
                      api_latency=0.001)  # fmt: skip
    assert result.ok, result.summary_line()
    throughput = result.metric("SchedulingThroughput")
    assert throughput is not None and throughput["Average"] < 60  # the client's 50 qps
    assert result.api.throttled_calls >= 35
    assert "waited for the rate limit" in result.summary_line()


def test_feature_gates_map_to_scheduler_options() -> None:
    off = runner.workload_gates(FeatureGates(), {"OpportunisticBatching": False}, "w")
    assert runner.scheduler_options(off, OPTIONS) == {"batching": False}
    forced = runner.RunOptions(batching=True)
    assert runner.scheduler_options(off, forced) == {"batching": True}


def test_workload_gates_are_refused_as_upstream_refuses_them() -> None:
    with pytest.raises(InputError, match=r"w\.featureGates: unrecognized feature gate: Nope"):
        runner.workload_gates(FeatureGates(), {"Nope": True}, "w.featureGates")
    with pytest.raises(InputError, match="unrecognized feature gate: OpportunisticBatching"):
        runner.workload_gates(FeatureGates("1.34"), {"OpportunisticBatching": True}, "w")
    with pytest.raises(InputError, match="feature is locked to true"):
        runner.workload_gates(FeatureGates("1.37"), {"DRAExtendedResource": False}, "w")
    # the locked gates upstream's runner turns off by emulating an older release
    ndf = runner.workload_gates(FeatureGates("1.37"), {"NodeDeclaredFeatures": False}, "w")
    assert ndf.version == "1.36" and not ndf.enabled("NodeDeclaredFeatures")
    qh = runner.workload_gates(FeatureGates("1.34"), {"SchedulerQueueingHints": False}, "w")
    assert qh.version == "1.34" and not qh.enabled("SchedulerQueueingHints")


def test_an_unknown_workload_gate_refuses_the_run_before_it_starts(tmp_path: Path) -> None:
    case = basic_case()
    case["workloads"][0]["featureGates"] = {"NoSuchGate": True}
    with pytest.raises(InputError, match="unrecognized feature gate: NoSuchGate"):
        runner.run_config(_config(tmp_path, case), options=OPTIONS)


def test_without_templates_upstreams_base_node_and_pod_are_used(tmp_path: Path) -> None:
    case = basic_case()
    del case["defaultPodTemplatePath"], case["workloadTemplate"][0]["nodeTemplatePath"]
    (tc,) = load_test_cases(_config(tmp_path, case))
    w = tc.workloads[0]
    run = runner._WorkloadRun(tc, w, p.resolve(tc, w), OPTIONS)
    run.run()
    run.finish()
    assert run.result.ok, run.result.summary_line()
    assert all(n.startswith("node-0-") and len(n) == 12 for n in run.api.nodes)
    pods = run.api.pods_in("namespace-1")
    assert len(pods) == 6 and all(pod.name.startswith("pod-") for pod in pods)
    assert all(pod.requests["cpu"] == 100 and "signature" not in pod.labels for pod in pods)


def test_measured_phases_run_with_the_collector_thresholds_of_a_shard(tmp_path: Path) -> None:
    """Young collections only walk the Pods that keep piling up: raised while measuring
    (as in a shard process), the caller's thresholds back afterwards."""
    import gc

    from kubesched.parallel.shardmain import GC_THRESHOLDS

    seen: list[tuple[int, ...]] = []

    class Probe:  # stands in for the cProfile the runner switches on around each phase
        def enable(self) -> None:
            seen.append(gc.get_threshold())

        def disable(self) -> None:
            seen.append(gc.get_threshold())

    # The caller's own thresholds, whatever earlier tests' live replicas (which set the
    # process's while they run, in threads) left behind.
    saved = gc.get_threshold()
    gc.set_threshold(701, 11, 12)
    try:
        result = _run_tmp(_config(tmp_path, basic_case()), profiler=Probe())
        after = gc.get_threshold()
    finally:
        gc.set_threshold(*saved)
    assert result.ok, result.summary_line()
    assert seen and all(t == GC_THRESHOLDS for t in seen)
    assert after == (701, 11, 12)
