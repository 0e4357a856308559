"""``createPodGroups`` (upstream ``runCreatePodGroupsOp``) and the Workload API suites of
upstream v1.37 (``podgroup/*``, ``default_preemption``, ``workload_preemption``,
``starvation``'s ``StarvationPodGroup``) through the bench runner, with what kubesched's
scheduler does not model said in the result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api.errors import InputError
from kubesched.bench import params as p
from kubesched.bench import runner
from kubesched.bench.config import load_test_cases
from tests.bench.test_upstream_137 import config, run

INTEGRATION = [
    ("podgroup/basicscheduling", "BasicScheduling", "10Nodes_3Groups", 9),
    ("podgroup/basicscheduling", "BasicScheduling", "100Nodes_10Groups", 30),
    ("podgroup/gangscheduling", "GangScheduling", "10Nodes_3Gangs", 9),
    ("podgroup/gangscheduling", "GangScheduling", "100Nodes_10Gangs", 30),
    ("podgroup/tas", "TopologyAwareScheduling", "10Nodes_3Gangs", 9),
    ("podgroup/tas", "TopologyAwareScheduling", "100Nodes_10Gangs", 30),
    ("starvation", "StarvationPodGroup", "10Nodes_100Cloggers_Podgroup", 50),
    ("default_preemption", "PreemptionPodGroupDisruptionMode", "FastTest_NoPodGroup", 5),
    (
        "default_preemption",
        "PreemptionPodGroupDisruptionMode",
        "FastTest_PodGroupDisruptionMode_Single",
        5,
    ),
]


CHURNING = {"starvation": "pod-churn-"}
"""Suites with a ``churn`` op, and its Pods' ``generateName``: it creates one per wall-clock
interval while the workload runs, so a slow run on a loaded machine binds more of them, and
``createPods``' wait (upstream's, for any ``count`` Pods of the namespace) can end on churn
Pods before the op's own are all bound."""


def _own_bound(done: runner._WorkloadRun, churn: str) -> int:
    return sum(1 for p in done.api.pods.values() if p.node_name and not p.name.startswith(churn))


@pytest.mark.parametrize(("suite", "case", "workload", "bound"), INTEGRATION)
def test_the_integration_workloads_run_to_the_end(
    suite: str, case: str, workload: str, bound: int
) -> None:
    churn = CHURNING.get(suite)

    def settle(done: runner._WorkloadRun) -> None:
        """The workload's own Pods (the starvation-prone victims) all bind: none starved."""
        if churn is not None:
            done.loop.wait(
                lambda: _own_bound(done, churn) >= bound,
                lambda: f"{_own_bound(done, churn)} of the workload's {bound} Pods bound",
                timeout=60.0,
                stall_fails=False,
            )

    done = run(config(suite), case, workload, after=settle)
    assert done.result.error is None
    if churn is not None:  # counted: the workload's own Pods bound at the end
        assert _own_bound(done, churn) == bound
    else:
        assert done.result.pods_bound == bound
    assert done.result.limitations == []


def test_pod_groups_are_created_as_upstream_names_them() -> None:
    """gang-0..gang-2 in gang-ns-0, each a v1beta1 gang of podsPerGroup, known to the
    scheduler's PodGroup manager, each Pod bound with its two gang mates."""
    done = run(config("podgroup/gangscheduling"), "GangScheduling", "10Nodes_3Gangs")
    groups = {k: v for k, v in done.api.objects.items() if k[0] == "PodGroup"}
    assert sorted(groups) == [("PodGroup", f"gang-ns-0/gang-{i}") for i in range(3)]
    for obj in groups.values():
        assert obj["apiVersion"] == "scheduling.k8s.io/v1beta1"
        assert obj["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    manager = done.scheduler.pod_group_manager
    assert manager is not None
    assert sorted(manager.pod_groups) == [f"gang-ns-0/gang-{i}" for i in range(3)]
    members: dict[str, int] = {}
    for pod in done.api.pods.values():
        assert pod.node_name and pod.scheduling_group is not None
        members[pod.scheduling_group] = members.get(pod.scheduling_group, 0) + 1
    assert members == {f"gang-{i}": 3 for i in range(3)}


def test_the_shared_template_keeps_its_priority_and_disruption_mode() -> None:
    """``../templates/podgroup.yaml`` says ``v1alpha3``: created as v1beta1 (the typed
    client's version), its ``spec.priority`` kept (no Priority admission plugin upstream)."""
    done = run(
        config("default_preemption"),
        "PreemptionPodGroupDisruptionMode",
        "FastTest_PodGroupDisruptionMode_Single",
    )
    obj = done.api.objects[("PodGroup", "gang-preempt-1/gang-0")]
    assert obj["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert obj["spec"]["priority"] == 1000
    assert obj["spec"]["disruptionMode"] == {"single": {}}


def test_an_ordinary_pod_preempting_a_disruption_all_member_evicts_its_group_whole() -> None:
    """Upstream (v1.37, GenericWorkload) evicts a disruptionMode=all group whole when an
    ordinary Pod preempts one of its members; so does kubesched, with nothing flagged."""
    done = run(
        config("default_preemption"),
        "PreemptionPodGroupDisruptionMode",
        "FastTest_PodGroupDisruptionMode_All",
    )
    assert done.result.error is None and not done.result.limitations
    assert "NOT AS UPSTREAM" not in done.result.summary_line()
    hit: dict[str, int] = {}
    for pod in done.client.victims:
        assert pod.scheduling_group is not None
        key = f"{pod.namespace}/{pod.scheduling_group}"
        hit[key] = hit.get(key, 0) + 1
    sizes: dict[str, int] = {}
    for (kind, key), _obj in done.api.objects.items():
        if kind == "PodGroup":
            sizes[key] = 0
    for pod in [*done.api.pods.values(), *done.client.victims]:
        if pod.scheduling_group is not None:
            key = f"{pod.namespace}/{pod.scheduling_group}"
            sizes[key] = sizes.get(key, 0) + 1
    assert hit and all(n == sizes[k] for k, n in hit.items())


@pytest.mark.parametrize(
    "case", ["GangPreemptionBasic", "GangPreemptionPodGroups", "GangPreemptionAffinity"]
)
def test_a_gang_that_needs_preemption_never_fails_silently(case: str) -> None:
    """workload_preemption's gangs fit only by PodGroupPostFilter preemption: the workload
    binds every Pod, or its error names what the scheduler lacks."""
    ((_, w),) = p.select(
        load_test_cases(config("workload_preemption")), case=case, labels=["integration-test"]
    )
    done = run(config("workload_preemption"), case, w.name)
    if done.result.error is None:
        assert done.result.pods_unbound == 0
    else:
        assert "PodGroupPostFilter" in done.result.error


# ---------------------------------------------------------------- the op itself
POD_GROUP = """apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata:
  name: g-{{.Index}}
spec:
  {{if .priority}}priority: {{.priority}}{{end}}
  schedulingPolicy:
    gang:
      minCount: {{.minCount}}
"""
POD = """apiVersion: v1
kind: Pod
metadata:
  name: p-{{.Index}}
spec:
  schedulingGroup:
    podGroupName: g-{{DivideInt .Index 2}}
  containers:
  - name: c
    image: pause
"""


def write_config(tmp_path: Path, op: dict[str, Any], gates: bool = True, pod: str = POD) -> str:
    (tmp_path / "pg.yaml").write_text(POD_GROUP)
    (tmp_path / "pod.yaml").write_text(pod)
    case: dict[str, Any] = {
        "name": "C",
        "workloadTemplate": [
            {"opcode": "createNodes", "count": 2},
            {"opcode": "createPodGroups", "templatePath": "pg.yaml", **op},
            {
                "opcode": "createPods",
                "countParam": "$groups",
                "countMultiplierParam": "$two",
                "namespace": "ns",
                "podTemplatePath": "pod.yaml",
                "collectMetrics": True,
            },
        ],
        "workloads": [{"name": "w", "params": {"groups": 2, "two": 2, "min": 2}}],
    }
    if gates:
        case["featureGates"] = {"GenericWorkload": True}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump([case]))
    return str(path)


def test_count_param_and_template_params_resolve(tmp_path: Path) -> None:
    op = {"namespace": "ns", "countParam": "$groups", "templateParams": {"minCount": "$min"}}
    path = write_config(tmp_path, op)
    ((tc, w),) = p.select(load_test_cases(path))
    step = p.resolve(tc, w)[1]
    assert isinstance(step, p.CreatePodGroups)
    assert (step.namespace, step.count, dict(step.template_params)) == ("ns", 2, {"minCount": 2})
    done = run(path, "C", "w")
    assert done.result.error is None and done.result.pods_bound == 4


@pytest.mark.parametrize(
    ("op", "where", "message"),
    [
        ({"count": 1, "templateParams": {"minCount": 1}}, "namespace", "must be set"),
        ({"namespace": "ns", "count": -1}, "count", "must be >= 0"),
        ({"namespace": "ns", "count": 1, "bogus": 1}, "bogus", 'unknown field "bogus"'),
    ],
)
def test_the_op_is_checked_at_load(
    tmp_path: Path, op: dict[str, Any], where: str, message: str
) -> None:
    with pytest.raises(InputError) as err:
        load_test_cases(write_config(tmp_path, op))
    assert any(
        path.endswith(f"workloadTemplate[1].{where}") and message in text
        for path, text in err.value.problems
    ), err.value.problems


def test_a_count_of_zero_is_refused_once_resolved(tmp_path: Path) -> None:
    """Upstream ``isValid(false)``: at least one PodGroup."""
    op = {"namespace": "ns", "count": 0, "templateParams": {"minCount": 1}}
    ((tc, w),) = p.select(load_test_cases(write_config(tmp_path, op)))
    with pytest.raises(InputError, match="must be greater than 0, got 0"):
        p.resolve(tc, w)


def test_an_invalid_pod_group_fails_the_workload_as_the_api_server_refuses_it(
    tmp_path: Path,
) -> None:
    op = {"namespace": "ns", "count": 1, "templateParams": {"minCount": 0, "unused": "$min"}}
    done = run(write_config(tmp_path, op), "C", "w")
    assert done.result.error is not None
    assert "op 1: creating PodGroup" in done.result.error
    assert "minCount: Required value" in done.result.error


def test_pod_groups_need_the_generic_workload_gate(tmp_path: Path) -> None:
    op = {"namespace": "ns", "count": 1, "templateParams": {"minCount": "$min"}}
    done = run(write_config(tmp_path, op, gates=False), "C", "w")
    assert done.result.error is not None
    assert 'no matches for kind "PodGroup"' in done.result.error


def test_a_given_priority_is_kept_without_a_priority_class(tmp_path: Path) -> None:
    """The Priority admission plugin (off in upstream's scheduler_perf cluster) would forbid
    a priority no class gives.  The Pods are given the same priority (kept too, with no
    admission plugin to set it): upstream's ``validatePodGroup`` refuses a group whose
    members' priority differs from the PodGroup's, and its members would go back to backoff
    until the workload's timeout.  So the gangs bind only if the scheduler sees 7."""
    op = {"namespace": "ns", "countParam": "$groups"}
    op["templateParams"] = {"minCount": "$min", "priority": 7}
    pod = POD.replace("spec:\n", "spec:\n  priority: 7\n", 1)
    done = run(write_config(tmp_path, op, pod=pod), "C", "w")
    assert done.result.error is None and done.result.pods_bound == 4
    assert done.api.objects[("PodGroup", "ns/g-1")]["spec"]["priority"] == 7


def test_a_gang_short_of_members_stalls_without_blaming_preemption(tmp_path: Path) -> None:
    """minCount 3 with 2 members: PreEnqueue holds them; nothing lower is bound, so the
    stall is not put down to the missing workload-aware preemption."""
    op: dict[str, Any] = {"namespace": "ns", "countParam": "$groups"}
    op["templateParams"] = {"minCount": 3, "spare": "$min"}  # every param used
    done = run(write_config(tmp_path, op), "C", "w")
    assert done.result.error is not None and "0 of 4 Pods" in done.result.error
    assert "PodGroupPostFilter" not in done.result.error
