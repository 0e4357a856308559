"""Upstream's v1.37 scheduler_perf suites (``benchmarks/upstream-1.37``, copied unchanged) and
what they need of the runner: ``createPodSets``, ``updateAny`` and the ``nodedeclaredfeatures``
suite's mock node features (``numNodeDeclaredFeatures``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from kubesched.api.errors import InputError
from kubesched.api.parse import parse_pod
from kubesched.bench import declaredfeatures, runner
from kubesched.bench import params as p
from kubesched.bench.config import TestCase, load_test_cases
from kubesched.bench.loop import WorkloadError
from kubesched.bench.update import UpdateAny
from kubesched.config.featuregates import FeatureGates
from kubesched.framework.interface import Handle
from kubesched.plugins import nodedeclaredfeatures as ndf
from kubesched.state.cache import ClusterState

SUITES = Path(__file__).resolve().parents[2] / "benchmarks" / "upstream-1.37"
NAMES = (
    "misc",
    "affinity",
    "topology_spreading",
    "event_handling",
    "batching",
    "nodedeclaredfeatures",
    "starvation",
    "podgroup/basicscheduling",
    "podgroup/gangscheduling",
    "podgroup/tas",
    "default_preemption",
    "workload_preemption",
)
NOT_YET: dict[str, str] = {}
"""Suites refused at load, with the refusal (none since ``createPodGroups``)."""


def config(suite: str) -> str:
    return str(SUITES / suite / "performance-config.yaml")


def run(
    path: str,
    case: str,
    workload: str,
    after: Callable[[runner._WorkloadRun], None] | None = None,
) -> runner._WorkloadRun:
    """One workload through the runner at v1.37, its error kept in the result; ``after``
    runs once the workload's ops are done, before the run is finished."""
    ((tc, w),) = p.select(load_test_cases(path), case=case, workload=workload)
    gates = runner.workload_gates(FeatureGates("1.37"), {**tc.feature_gates, **w.feature_gates}, "")
    opts = runner.RunOptions(timeout=60.0, gates=gates)
    run = runner._WorkloadRun(tc, w, p.resolve(tc, w), opts)
    try:
        run.run()
        if after is not None:
            after(run)
    except WorkloadError as err:
        run.result.error = str(err)
    finally:
        run.finish()
    return run


@pytest.mark.parametrize("suite", NAMES)
def test_every_vendored_suite_is_accepted(suite: str) -> None:
    """Each suite loads, and each workload's params resolve and its gates are accepted."""
    if suite in NOT_YET:
        with pytest.raises(InputError, match=NOT_YET[suite]):
            load_test_cases(config(suite))
        return
    cases = load_test_cases(config(suite))
    assert cases
    for tc in cases:
        for w in tc.workloads:
            assert p.resolve(tc, w)
            gates = {**tc.feature_gates, **w.feature_gates}
            runner.workload_gates(FeatureGates("1.37"), gates, f"{tc.name}/{w.name}")


def test_the_suites_are_upstreams_files_unchanged() -> None:
    """Every template a config names is where upstream's layout puts it."""
    for suite in NAMES:
        text = (SUITES / suite / "performance-config.yaml").read_text()
        assert "kubesched" not in text
        for line in text.splitlines():
            item = line.strip().startswith("- ") and line.strip().endswith(".yaml")
            if "Path:" in line or item:
                rel = line.split(":", 1)[-1].strip().lstrip("- ").strip()
                assert (SUITES / suite / rel).is_file(), (suite, rel)


# ---------------------------------------------------------------- createPodSets
POD_SETS = """
- name: Sets
  workloadTemplate:
  - opcode: createNodes
    countParam: $nodes
  - opcode: createPodSets
    countParam: $sets
    namespacePrefix: init-ns
    createPodsOp:
      opcode: createPods
      countParam: $perSet
  - opcode: createPods
    count: 1
    collectMetrics: true
  workloads:
  - name: w
    params: {nodes: 2, sets: 3, perSet: 2}
"""


def test_create_pod_sets_unrolls_one_create_pods_per_namespace(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(POD_SETS)
    ((tc, w),) = p.select(load_test_cases(str(path)))
    steps = p.resolve(tc, w)
    pods = [s for s in steps if isinstance(s, p.CreatePods)]
    assert [(s.namespace, s.count) for s in pods[:3]] == [(f"init-ns-{i}", 2) for i in range(3)]
    # upstream numbers the unrolled ops: the last createPods is op 4, so namespace-4
    assert (pods[3].index, pods[3].namespace) == (4, "namespace-4")


def test_create_pod_sets_runs(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(POD_SETS)
    done = run(str(path), "Sets", "w")
    assert done.result.error is None and done.result.pods_bound == 7
    assert {pod.namespace for pod in done.api.pods.values()} == {
        "init-ns-0",
        "init-ns-1",
        "init-ns-2",
        "namespace-4",
    }


def test_create_pod_sets_checks_its_create_pods_op(tmp_path: Path) -> None:
    doc = yaml.safe_load(POD_SETS)
    doc[0]["workloadTemplate"][1]["createPodsOp"]["bogus"] = 1
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match=r"workloadTemplate\[1\]\.createPodsOp\.bogus"):
        load_test_cases(str(path))


def test_the_affinity_namespace_selector_cases_run() -> None:
    done = run(config("affinity"), "SchedulingRequiredPodAffinityWithNSSelector", "10Nodes")
    assert done.result.error is None and done.result.pods_bound == 14
    assert done.result.pods_unbound == 0


# ---------------------------------------------------------------- updateAny
def test_update_any_is_parsed_with_its_fields() -> None:
    ((tc, w),) = p.select(
        load_test_cases(config("event_handling")),
        case="EventHandlingPodUpdate",
        workload="1Node_10Pods",
    )
    updates = [s for s in p.resolve(tc, w) if isinstance(s, UpdateAny)]
    assert len(updates) == 5
    resize = next(s for s in updates if s.subresources)
    assert (resize.namespace, resize.count, resize.per_second) == ("blocker", 10, 100)
    assert resize.subresources == ("resize",) and resize.template.endswith("scale-down.yaml")


@pytest.mark.parametrize(
    ("case", "workload"),
    [("EventHandlingPodUpdate", "1Node_10Pods"), ("EventHandlingNodeUpdate", "2Nodes_20Pods")],
)
def test_updates_make_the_blocked_pods_schedulable(case: str, workload: str) -> None:
    """Pods blocked by labels, taints, gates, resources, unschedulable nodes: each updateAny
    (Pods through ``resize`` too) lifts one block; every barrier is reached."""
    done = run(config("event_handling"), case, workload)
    assert done.result.error is None
    assert done.result.pods_unbound == 0 and done.result.pods_bound > 0


def test_update_any_of_a_missing_object_fails_the_workload(tmp_path: Path) -> None:
    (tmp_path / "node.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "ghost"}})
    )
    cases = [
        {
            "name": "C",
            "workloadTemplate": [
                {"opcode": "updateAny", "templatePath": "node.yaml"},
                {"opcode": "createPods", "count": 1, "collectMetrics": True},
            ],
            "workloads": [{"name": "w"}],
        }
    ]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cases))
    done = run(str(path), "C", "w")
    assert "ghost" in (done.result.error or "") and "not found" in (done.result.error or "")


# ---------------------------------------------------------------- nodedeclaredfeatures
def test_declared_features_param_is_the_suites_mock_registry() -> None:
    """5 mock features: every Node declares them, every Pod (pod-level resources) needs
    them, and the plugin asks the mock registry."""
    done = run(
        config("nodedeclaredfeatures"), "NodeDeclaredFeaturesEnabled", "5Nodes5DeclaredFeatures"
    )
    names = tuple(f"Feature{i}" for i in range(1, 6))
    assert done.result.error is None and done.result.pods_bound == 10
    assert all(node.declared_features == names for node in done.api.nodes.values())
    assert all(pod.required_features == names for pod in done.api.pods.values())


def test_mock_features_sort_as_go_strings_and_filter() -> None:
    mock = declaredfeatures.MockFeatures(tuple(sorted(f"Feature{i}" for i in range(1, 12))))
    assert mock.names[:3] == ("Feature1", "Feature10", "Feature11")
    plugin = mock.registry("1.37")[ndf.NAME](None, Handle(ClusterState()))
    assert isinstance(plugin, ndf.NodeDeclaredFeatures)
    doc = {
        "metadata": {"name": "p"},
        "spec": {"resources": {"requests": {"cpu": "1"}}, "containers": [{"name": "c"}]},
    }
    pod = parse_pod(doc)
    mock.require(pod, doc)
    assert plugin.requirements(pod) == mock.names
    plain = {"metadata": {"name": "q"}, "spec": {"containers": [{"name": "c"}]}}
    other = parse_pod(plain)
    mock.require(other, plain)
    assert plugin.requirements(other) == ()


@pytest.mark.parametrize("on_case", [False, True])
def test_declared_features_param_without_the_gate_is_unused(tmp_path: Path, on_case: bool) -> None:
    """Upstream's hooks read the param only when the workload itself sets the gate (the test
    case's ``featureGates`` are not what they look at)."""
    doc = yaml.safe_load((SUITES / "nodedeclaredfeatures" / "performance-config.yaml").read_text())
    gates = doc[0]["workloads"][0].pop("featureGates")
    if on_case:
        doc[0]["featureGates"] = gates
    ((tc, w),) = p.select(load_test_cases_from(doc, tmp_path), workload="5Nodes5DeclaredFeatures")
    assert declaredfeatures.mock_features(w) is None
    with pytest.raises(InputError, match="numNodeDeclaredFeatures"):
        p.resolve(tc, w)


def load_test_cases_from(doc: object, tmp_path: Path) -> list[TestCase]:
    """``doc`` written beside the suite's templates (in a copy of its folder)."""
    folder = tmp_path / "nodedeclaredfeatures"
    folder.mkdir()
    (folder / "templates").symlink_to(SUITES / "nodedeclaredfeatures" / "templates")
    path = folder / "performance-config.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_test_cases(str(path))
