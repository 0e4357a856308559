"""kubesched's own benchmark cases (``benchmarks/kubesched-config.yaml``): the ``fast``
workloads run, and their Pods land where the cases say they must."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.bench import params as p
from kubesched.bench import runner
from kubesched.bench.config import load_test_cases
from kubesched.bench.loop import WorkloadError

CONFIG = str(Path(__file__).resolve().parents[2] / "benchmarks" / "kubesched-config.yaml")


def _run(case: str, workload: str) -> runner._WorkloadRun:
    ((tc, w),) = p.select(load_test_cases(CONFIG), case=case, workload=workload)
    run = runner._WorkloadRun(tc, w, p.resolve(tc, w), runner.RunOptions(timeout=60.0))
    try:
        run.run()
    except WorkloadError as err:
        run.result.error = str(err)
    finally:
        run.finish()
    return run


def test_the_config_loads_with_a_fast_and_a_performance_workload_per_case() -> None:
    cases = load_test_cases(CONFIG)
    assert {tc.name for tc in cases} == {
        "RareExtendedResources",
        "SymmetricAntiAffinity",
        "PreemptionAsync",
        "SchedulingDaemonset",
    }
    for tc in cases:
        labels = [set(w.labels) for w in tc.workloads]
        assert {"fast"} in labels and {"performance"} in labels


@pytest.mark.parametrize(
    ("case", "workload"),
    [
        ("RareExtendedResources", "100Nodes"),
        ("SymmetricAntiAffinity", "100Nodes"),
        ("PreemptionAsync", "100Nodes"),
        ("SchedulingDaemonset", "5Nodes"),
    ],
)
def test_fast_workloads_place_their_pods_where_the_case_says(case: str, workload: str) -> None:
    run = _run(case, workload)
    assert run.result.ok, run.result.summary_line()
    pods = list(run.api.pods.values())
    nodes = run.api.nodes
    if case == "RareExtendedResources":  # each Pod on the one node with its resource
        own = [p for p in pods if p.name.startswith("pod-own-resource-")]
        assert len(own) == 100
        for pod in own:
            (device,) = (r for r in pod.requests if r.startswith("example.com/"))
            assert nodes[pod.node_name].allocatable.get(device) == 1
    elif case == "SymmetricAntiAffinity":  # no green Pod where a guard runs
        guarded = {p.node_name for p in pods if p.labels.get("role") == "guard"}
        green = [p for p in pods if p.labels.get("color") == "green"]
        assert guarded and len(green) == 100
        assert not guarded & {p.node_name for p in green}
    elif case == "SchedulingDaemonset":
        assert {p.node_name for p in pods} == {"scheduler-perf-node"}
    else:  # PreemptionAsync: the measured default Pods (op 3's namespace) all bound
        measured = [p for p in pods if p.namespace == "namespace-3"]
        assert len(measured) == 100 and all(p.node_name for p in measured)
