"""The Workload API objects (``scheduling.k8s.io`` Workload and PodGroup) per release: shape
validation in the one input path, what each release serves, the fields a disabled gate drops,
defaulting, and the Pod fields that name a group (upstream v1.35.4, v1.36.3, v1.37.2)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.api import workload
from kubesched.api.errors import InputError
from kubesched.api.parse import parse_objects
from kubesched.api.podquick import parse_pod
from kubesched.api.pods import parse_pod as full_parse_pod
from kubesched.cli import main
from kubesched.config.featuregates import FeatureGates, with_settings
from tests.explainer.test_explain import as_list, node

ON = {"GenericWorkload": True}


def pod_group(version: str = "v1beta1", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 4}}}
    body.update(spec)
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": body,
    }


def workload_v1alpha1(*groups: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "job"},
        "spec": {"podGroups": list(groups)},
    }


def workload_templates(version: str, *templates: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "Workload",
        "metadata": {"name": "job"},
        "spec": {"podGroupTemplates": list(templates)},
    }


def problems(obj: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(InputError) as err:
        parse_objects([obj])
    return err.value.problems


def gates(version: str, **settings: bool) -> FeatureGates:
    return with_settings(version, settings)


# --------------------------------------------------------------------------- shapes
def test_a_valid_pod_group_is_kept_and_not_taken_for_coscheduling() -> None:
    parsed = parse_objects([pod_group()])
    assert parsed.of_kind("PodGroup") == [pod_group()]
    from kubesched.admission import objects as job

    assert job.collect(parsed.others).pod_groups == {}  # not scheduler-plugins' PodGroup


def test_coscheduling_and_kube_scheduler_pod_groups_may_share_a_name() -> None:
    theirs = {**pod_group(), "apiVersion": "scheduling.x-k8s.io/v1alpha1", "spec": {"minMember": 2}}
    parsed = parse_objects([pod_group(), theirs])
    assert len(parsed.of_kind("PodGroup")) == 2
    with pytest.raises(InputError, match="duplicate PodGroup"):
        parse_objects([pod_group(), pod_group()])


def test_gang_min_count_is_required_and_at_least_one() -> None:
    # minCount is a required int32: 0 counts as missing (declarative RequiredValue)
    zero = pod_group(schedulingPolicy={"gang": {"minCount": 0}})
    assert problems(zero) == [("spec.schedulingPolicy.gang.minCount", "Required value")]
    assert problems(pod_group(schedulingPolicy={"gang": {}})) == [
        ("spec.schedulingPolicy.gang.minCount", "Required value")
    ]
    negative = pod_group(schedulingPolicy={"gang": {"minCount": -3}})
    assert problems(negative) == [
        (
            "spec.schedulingPolicy.gang.minCount",
            "Invalid value: -3: must be greater than or equal to 1",
        )
    ]


def test_the_policy_is_a_union_of_basic_and_gang() -> None:
    both = pod_group(schedulingPolicy={"basic": {}, "gang": {"minCount": 2}})
    assert problems(both) == [
        (
            "spec.schedulingPolicy",
            'Invalid value: "{basic, gang}": must specify exactly one of: `basic`, `gang`',
        )
    ]
    neither = pod_group(schedulingPolicy={})
    assert problems(neither) == [
        ("spec.schedulingPolicy", 'Invalid value: "": must specify one of: `basic`, `gang`')
    ]


def test_topology_constraints_at_most_one_with_a_label_key() -> None:
    tas = gates("1.37", TopologyAwareWorkloadScheduling=True, **ON)
    two = pod_group(schedulingConstraints={"topology": [{"key": "rack"}, {"key": "zone"}]})
    parse_objects([two])  # gated: checked once the gates say it is kept
    with pytest.raises(InputError) as err:
        workload.admit([two], tas, paths=[""])
    assert err.value.problems == [
        ("spec.schedulingConstraints.topology", "Too many: 2: must have at most 1 item")
    ]
    bad_key = pod_group(schedulingConstraints={"topology": [{"key": "bad key"}]})
    with pytest.raises(InputError) as err:
        workload.admit([bad_key], tas, paths=[""])
    ((path, message),) = err.value.problems
    assert path == "spec.schedulingConstraints.topology[0].key"
    assert message.startswith('Invalid value: "bad key": name part must consist of')


def test_workload_templates_unique_at_most_eight_one_priority() -> None:
    gang = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    dup = workload_templates("v1beta1", {"name": "w", **gang}, {"name": "w", **gang})
    parse_objects([dup])  # the duplicate's text is the stored item: told at admission
    with pytest.raises(InputError) as err:
        workload.admit([dup], gates("1.37", **ON), paths=[""])
    stored = '{"name":"w","schedulingPolicy":{"gang":{"minCount":2}},"schedulingConstraints":null}'
    assert err.value.problems == [("spec.podGroupTemplates[1]", f"Duplicate value: {stored}")]
    nine = workload_templates("v1beta1", *({"name": f"g{i}", **gang} for i in range(9)))
    assert problems(nine) == [("spec.podGroupTemplates", "Too many: 9: must have at most 8 items")]
    mixed = workload_templates(
        "v1alpha3", {"name": "a", "priority": 1, **gang}, {"name": "b", "priority": 2, **gang}
    )
    assert problems(mixed) == [
        ("spec", "Invalid value: null: detected multiple priority configurations")
    ]
    dotted = workload_templates("v1beta1", {"name": "w.1", **gang})
    assert problems(dotted) == [
        ("spec.podGroupTemplates[0].name", 'Invalid value: "w.1": must not contain dots')
    ]


def test_v1alpha1_workload_needs_pod_groups_and_has_no_pod_group_kind() -> None:
    empty = workload_v1alpha1()
    assert problems(empty) == [("spec.podGroups", "Required value: must have at least one item")]
    upper = workload_v1alpha1({"name": "Workers", "policy": {"basic": {}}})
    ((path, message),) = problems(upper)
    assert path == "spec.podGroups[0].name"
    assert "a lowercase RFC 1123 label" in message
    ((path, message),) = problems(pod_group("v1alpha1"))
    assert path == "kind"


def test_a_parent_composite_pod_group_needs_a_workload_ref() -> None:
    orphan = pod_group(parentCompositePodGroupName="all")
    assert workload.admit([orphan], gates("1.37", **ON)).pod_groups  # dropped: gate off
    composite = gates("1.37", CompositePodGroup=True, TopologyAwareWorkloadScheduling=True, **ON)
    with pytest.raises(InputError) as err:
        workload.admit([orphan], composite, paths=[""])
    assert err.value.problems == [
        (
            "spec.workloadRef",
            "Required value: must be set when parentCompositePodGroupName is set",
        )
    ]


def test_an_unknown_version_of_the_group_is_refused() -> None:
    ((path, message),) = problems(pod_group("v2"))
    assert path == "apiVersion"
    assert "scheduling.k8s.io/v1beta1" in message


# --------------------------------------------------------------------------- releases
@pytest.mark.parametrize(
    ("release", "obj"),
    [
        ("1.35", workload_v1alpha1({"name": "w", "policy": {"gang": {"minCount": 2}}})),
        ("1.36", pod_group("v1alpha2")),
        ("1.37", pod_group("v1beta1")),
        ("1.37", pod_group("v1alpha3")),
    ],
)
def test_each_release_serves_its_versions_only_with_generic_workload(
    release: str, obj: dict[str, Any]
) -> None:
    admitted = workload.admit([obj], gates(release, **ON))
    assert len(admitted.workloads) + len(admitted.pod_groups) == 1
    with pytest.raises(InputError) as err:
        workload.admit([obj], gates(release))  # GenericWorkload is off by default
    ((path, message),) = err.value.problems
    assert path.endswith("apiVersion")
    assert message.startswith(f'no matches for kind "{obj["kind"]}" in version')
    assert "with GenericWorkload on" in message


@pytest.mark.parametrize(
    ("release", "version"), [("1.36", "v1beta1"), ("1.37", "v1alpha2"), ("1.34", "v1beta1")]
)
def test_a_version_the_release_does_not_serve_is_refused(release: str, version: str) -> None:
    settings = ON if release != "1.34" else {}
    with pytest.raises(InputError, match="no matches for kind"):
        workload.admit([pod_group(version)], gates(release, **settings))


def test_the_gang_and_its_template_reference_per_version() -> None:
    v136 = pod_group(
        "v1alpha2",
        podGroupTemplateRef={"workload": {"workloadName": "job", "podGroupTemplateName": "w"}},
    )
    got = workload.admit([v136], gates("1.36", **ON)).pod_groups["ml/train"]
    assert (got.policy.min_count, got.policy.gang, got.workload, got.template) == (
        4,
        True,
        "job",
        "w",
    )
    v137 = pod_group(workloadRef={"workloadName": "job", "templateName": "w"})
    got = workload.admit([v137], gates("1.37", **ON)).pod_groups["ml/train"]
    assert (got.workload, got.template) == ("job", "w")
    basic = pod_group(schedulingPolicy={"basic": {}})
    got = workload.admit([basic], gates("1.37", **ON)).pod_groups["ml/train"]
    assert (got.policy.min_count, got.policy.gang) == (0, False)


def test_fields_of_disabled_gates_are_dropped() -> None:
    rack = pod_group(schedulingConstraints={"topology": [{"key": "rack"}]})
    off = workload.admit([rack], gates("1.37", **ON)).pod_groups["ml/train"]
    assert off.policy.topology_keys == ()
    on = workload.admit([rack], gates("1.37", TopologyAwareWorkloadScheduling=True, **ON))
    assert on.pod_groups["ml/train"].policy.topology_keys == ("rack",)
    # a dropped field is not validated either, as the API server drops it first
    bad = pod_group(schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]})
    assert workload.admit([bad], gates("1.37", **ON)).pod_groups


def test_v1alpha2_disruption_mode_pod_group_is_one_unit_under_its_gate() -> None:
    wap = gates("1.36", GangScheduling=True, WorkloadAwarePreemption=True, **ON)
    whole = pod_group("v1alpha2", disruptionMode="PodGroup")
    assert workload.admit([whole], wap).pod_groups["ml/train"].policy.disruption_all
    single = pod_group("v1alpha2", disruptionMode="Pod")
    assert not workload.admit([single], wap).pod_groups["ml/train"].policy.disruption_all
    # dropped without the gate, as the API server drops it
    off = workload.admit([whole], gates("1.36", **ON)).pod_groups["ml/train"]
    assert not off.policy.disruption_all
    with pytest.raises(InputError) as err:
        workload.admit([pod_group("v1alpha2", disruptionMode="Group")], wap)
    assert [m for _, m in err.value.problems] == [
        'Unsupported value: "Group": supported values: "Pod", "PodGroup"'
    ]


def test_priority_admission_fills_priority_and_preemption_policy() -> None:
    plain = pod_group()
    got = workload.admit([plain], gates("1.37", **ON)).pod_groups["ml/train"]
    assert (got.policy.priority, got.policy.preemption_policy) == (0, None)
    with_gate = gates("1.37", PodGroupPreemptionPolicy=True, **ON)
    got = workload.admit([plain], with_gate).pod_groups["ml/train"]
    assert (got.policy.priority, got.policy.preemption_policy) == (0, "PreemptLowerPriority")
    never = pod_group(preemptionPolicy="Never")
    with pytest.raises(InputError, match=r"the string value of PreemptionPolicy \(Never\)"):
        workload.admit([never], with_gate)
    low: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "low"},
        "value": 5,
        "preemptionPolicy": "Never",
    }
    classed = pod_group(priorityClassName="low", preemptionPolicy="Never")
    got = workload.admit([low, classed], with_gate).pod_groups["ml/train"]
    assert (got.policy.priority, got.policy.preemption_policy) == (5, "Never")
    with pytest.raises(InputError, match="priority set in the pod group \\(7\\) must match"):
        workload.admit([low, pod_group(priorityClassName="low", priority=7)], with_gate)
    with pytest.raises(InputError, match="no PriorityClass with name gone was found"):
        workload.admit([pod_group(priorityClassName="gone")], with_gate)


# --------------------------------------------------------------------------- Pods
def _pod(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    body.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": body,
    }


def test_pod_group_membership_per_release() -> None:
    member = parse_pod(_pod(schedulingGroup={"podGroupName": "train"}))
    assert member == full_parse_pod(copy.deepcopy(member.raw))
    assert workload.pod_group_key(member, gates("1.37", **ON)) == "ml/train"
    assert workload.pod_group_key(member, gates("1.36", **ON)) == "ml/train"
    assert workload.pod_group_key(member, gates("1.37")) is None  # dropped: gate off
    assert workload.pod_group_key(member, gates("1.35", **ON)) is None  # unknown in 1.35
    old = parse_pod(_pod(workloadRef={"name": "job", "podGroup": "w", "podGroupReplicaKey": "0"}))
    assert workload.pod_group_key(old, gates("1.35", **ON)) == "ml/job/w/0"
    assert workload.pod_group_key(old, gates("1.37", **ON)) is None


def test_pod_group_references_validated_per_release() -> None:
    nameless = parse_pod(_pod(schedulingGroup={}))
    assert workload.check_pod_refs([nameless], gates("1.37", **ON)) == [
        (
            "Pod ml/p: spec.schedulingGroup.podGroupName",
            "Invalid value: null: must specify one of: `podGroupName`",
        )
    ]
    assert workload.check_pod_refs([nameless], gates("1.37")) == []
    bad = parse_pod(_pod(workloadRef={"name": "job", "podGroup": "W.x"}))
    ((path, _),) = workload.check_pod_refs([bad], gates("1.35", **ON))
    assert path == "Pod ml/p: spec.workloadRef.podGroup"


# --------------------------------------------------------------------------- commands
def test_explain_refuses_a_bad_pod_group_with_file_and_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps(as_list(node("a", cpu="4"), pod_group(schedulingPolicy={}))))
    pod = tmp_path / "pod.json"
    pod.write_text(json.dumps(_pod(schedulingGroup={"podGroupName": "train"})))
    args = ["explain", "--cluster", str(cluster), "--pod", str(pod)]
    assert main([*args, "--feature-gates", "GenericWorkload=true"]) == 2
    err = capsys.readouterr().err
    assert str(cluster) in err and "items[1].spec.schedulingPolicy" in err
    cluster.write_text(json.dumps(as_list(node("a", cpu="4"), pod_group())))
    assert main(args) == 2  # served only with GenericWorkload on
    assert 'no matches for kind "PodGroup"' in capsys.readouterr().err
    assert main([*args, "--feature-gates", "GenericWorkload=true"]) == 0


def test_simulate_checks_a_scenarios_pod_groups_under_the_final_gates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.yaml"
    objects = [
        node("n1", cpu="4"),
        pod_group(schedulingPolicy={"gang": {"minCount": 1}}),
        _pod(schedulingGroup={"podGroupName": "train"}),
    ]
    doc = {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "wl"},
        "spec": {"durationSeconds": 10, "objects": objects},
    }
    scenario.write_text(json.dumps(doc))
    assert main(["simulate", str(scenario), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert str(scenario) in err and 'no matches for kind "PodGroup"' in err
    # the command line's gates count, not only the scenario's own
    on = ["--feature-gates", "GenericWorkload=true", "--no-progress"]
    assert main(["simulate", str(scenario), *on]) == 0
    capsys.readouterr()
    objects[1] = pod_group(schedulingPolicy={"gang": {"minCount": -1}})
    scenario.write_text(json.dumps(doc))
    assert main(["simulate", str(scenario), *on]) == 2
    assert "spec.schedulingPolicy.gang.minCount: Invalid value: -1" in capsys.readouterr().err


def test_v1_35_hand_written_validation_of_a_workloads_pod_groups() -> None:
    """v1.35 validates v1alpha1 by hand (``validateWorkloadSpec``), with its own texts."""
    zero = workload_v1alpha1({"name": "w", "policy": {"gang": {"minCount": 0}}})
    assert problems(zero) == [
        ("spec.podGroups[0].policy.gang.minCount", "Invalid value: 0: must be greater than zero")
    ]
    both = workload_v1alpha1({"name": "w", "policy": {"basic": {}, "gang": {"minCount": 1}}})
    exactly = "exactly one of `basic`, `gang` is required"
    assert problems(both) == [
        (
            "spec.podGroups[0].policy",
            f'Invalid value: "{{`basic`, `gang`}}": {exactly}, but multiple fields are set',
        )
    ]
    neither = workload_v1alpha1({"name": "w", "policy": {}})
    assert problems(neither) == [("spec.podGroups[0].policy", f"Required value: {exactly}")]
    dup = workload_v1alpha1(*({"name": "w", "policy": {"basic": {}}} for _ in range(2)))
    assert problems(dup) == [("spec.podGroups[1].name", 'Duplicate value: "w"')]
    nameless = workload_v1alpha1({"policy": {"basic": {}}})
    ((path, message),) = problems(nameless)
    assert path == "spec.podGroups[0].name" and message.startswith('Invalid value: "": a lowercase')


# --------------------------------------------------------------------------- CompositePodGroups
COMPOSITE = {"CompositePodGroup": True, "TopologyAwareWorkloadScheduling": True, **ON}


def composite_pod_group(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "workloadRef": {"workloadName": "job", "templateName": "all"},
        "schedulingPolicy": {"gang": {"minGroupCount": 2}},
    }
    body.update(spec)
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": "all", "namespace": "ml"},
        "spec": body,
    }


def test_a_composite_pod_group_is_parsed_with_its_gang_and_parent() -> None:
    obj = composite_pod_group(
        parentCompositePodGroupName="top",
        schedulingConstraints={"topology": [{"key": "example.com/rack"}]},
        disruptionMode={"all": {}},
    )
    admitted = workload.admit([obj], gates("1.37", **COMPOSITE))
    cpg = admitted.composite_pod_groups["ml/all"]
    assert (cpg.policy.min_count, cpg.parent) == (2, "top")
    assert (cpg.workload, cpg.template) == ("job", "all")
    assert cpg.policy.topology_keys == ("example.com/rack",)
    assert cpg.policy.disruption_all
    assert cpg.policy.priority == 0  # the priority admission plugin: no class, no default
    basic = composite_pod_group(schedulingPolicy={"basic": {}})
    assert (
        workload.admit([basic], gates("1.37", **COMPOSITE))
        .composite_pod_groups["ml/all"]
        .policy.min_count
        == 0
    )


def test_a_composite_pod_group_is_validated_with_field_paths() -> None:
    missing = composite_pod_group(schedulingPolicy={"gang": {}})
    del missing["spec"]["workloadRef"]
    assert sorted(problems(missing)) == [
        ("spec.schedulingPolicy.gang.minGroupCount", "Required value"),
        ("spec.workloadRef", "Required value"),
    ]
    both = composite_pod_group(disruptionMode={"single": {}, "all": {}}, priority=2_000_000_000)
    assert sorted(problems(both)) == [
        (
            "spec.disruptionMode",
            'Invalid value: "{single, all}": must specify exactly one of: `single`, `all`',
        ),
        ("spec.priority", "Invalid value: 2000000000: must be less than or equal to 1000000000"),
    ]
    beta = dict(composite_pod_group(), apiVersion="scheduling.k8s.io/v1beta1")
    ((path, message),) = problems(beta)
    assert path == "kind" and "v1alpha3" in message


def test_schedule_takes_a_tree_whose_root_has_a_topology_constraint() -> None:
    import kubesched

    member = pod_group(
        parentCompositePodGroupName="all",
        workloadRef={"workloadName": "job", "templateName": "train"},
        schedulingPolicy={"gang": {"minCount": 1}},
    )
    constrained = composite_pod_group(
        schedulingConstraints={"topology": [{"key": "rack"}]},
        schedulingPolicy={"gang": {"minGroupCount": 1}},
    )
    racked = node("n1")
    racked["metadata"].setdefault("labels", {})["rack"] = "r1"
    pod = _pod(schedulingGroup={"podGroupName": "train"})
    out = kubesched.schedule(
        as_list(racked, constrained, member),
        [pod],
        kubernetes_version="1.37",
        feature_gates=COMPOSITE,
    )
    assert [p["node"] for p in out["pods"].values()] == ["n1"]


def test_commands_take_a_composite_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    member = pod_group(
        parentCompositePodGroupName="all",
        workloadRef={"workloadName": "job", "templateName": "train"},
    )
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps(as_list(node("a", cpu="4"), composite_pod_group(), member)))
    pod = tmp_path / "pod.json"
    pod.write_text(json.dumps(_pod(schedulingGroup={"podGroupName": "train"})))
    gates_on = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true,CompositePodGroup=true"
    version = ["--kubernetes-version", "1.37", "--feature-gates", gates_on]
    # explain and schedule take the tree, its member that may preempt too
    assert main(["explain", "--cluster", str(cluster), "--pod", str(pod), *version]) == 0
    assert main(["schedule", "--cluster", str(cluster), "--pods", str(pod), *version]) == 0
    capsys.readouterr()


def test_a_stored_pod_group_keeps_its_constraints_and_a_created_one_loses_them() -> None:
    # The informer reads what the API server holds: a snapshot's PodGroup stored with a
    # topology constraint keeps it with TopologyAwareWorkloadScheduling off (v1.36's
    # workload-aware preemption reads it); one created during the run went through the
    # create's drop first.
    off = gates("1.36", GangScheduling=True, WorkloadAwarePreemption=True, **ON)
    rack = pod_group("v1alpha2", schedulingConstraints={"topology": [{"key": "rack"}]})
    stored = workload.read(rack, off)
    assert isinstance(stored, workload.PodGroup)
    assert stored.policy.topology_keys == ("rack",)
    created = workload.read(workload.as_created(rack, off), off)
    assert isinstance(created, workload.PodGroup)
    assert created.policy.topology_keys == ()
    # a constraint that could not have been stored is read as the create drops it
    bad = pod_group("v1alpha2", schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]})
    kept = workload.read(bad, off)
    assert isinstance(kept, workload.PodGroup)
    assert kept.policy.topology_keys == ()
