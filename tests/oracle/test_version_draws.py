"""The generator draws what each release adds (``cases.version_draws``): Node declared
features, the Pods that need them, random ``--feature-gates`` the release accepts (passed
to kubesched and, ``--feature-gates``, to kube-oracle) and numeric taints with ``Gt``/``Lt``
tolerations; the cases of a seed stay as they were."""

from __future__ import annotations

import json
from typing import Any

import cases
import compare
import pytest

from kubesched.config.featuregates import check_settings, gate_table


def test_the_cases_of_a_seed_stay_as_they_were() -> None:
    for i in range(60):
        before = cases.case(21, i)
        assert cases.case(21, i, "1.34") == before
        assert cases.schedule_case(21, i, "1.34") == cases.schedule_case(21, i)
        newer = cases.case(21, i, "1.36")
        numeric = any(
            t.get("operator") in ("Gt", "Lt") for t in newer["pod"]["spec"].get("tolerations", [])
        )
        if (
            "featureGates" not in newer
            and not numeric
            and not any(
                "declaredFeatures" in o.get("status", {}) for o in newer["cluster"]["items"]
            )
        ):
            assert newer == before


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_the_drawn_gates_are_ones_the_release_accepts(version: str) -> None:
    table = gate_table(version)
    seen_gates = seen_features = 0
    for i in range(200):
        request = cases.case(21, i, version)
        gates: dict[str, bool] = request.get("featureGates", {})
        seen_gates += bool(gates)
        seen_features += any(
            "declaredFeatures" in o.get("status", {}) for o in request["cluster"]["items"]
        )
        assert check_settings(version, sorted(gates.items())) == []
        for name in gates:
            assert table[name].pre_release in ("Alpha", "Beta") and not table[name].lock_to_default
    assert seen_gates > 20 and seen_features > 20


def test_the_gates_reach_kubesched_and_kube_oracle() -> None:
    assert compare.kubesched_options("1.36", {}) == {"kubernetes_version": "1.36"}
    assert compare.kubesched_options("1.36", {"PodLevelResources": False}) == {
        "kubernetes_version": "1.36",
        "feature_gates": {"PodLevelResources": False},
    }
    flag = compare.gates_flag({"OpportunisticBatching": False, "NodeDeclaredFeatures": True})
    assert flag == "--feature-gates=NodeDeclaredFeatures=true,OpportunisticBatching=false"


def _needs_a_declared_feature(gates: dict[str, bool]) -> dict[str, Any]:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-0"},
        "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"}},
    }
    container = {
        "name": "c",
        "image": "nginx:1.27",
        "restartPolicy": "Never",
        "restartPolicyRules": [
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
        ],
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "p"},
        "spec": {"containers": [container]},
    }
    request = {"cluster": {"apiVersion": "v1", "kind": "List", "items": [node]}, "pod": pod}
    request["config"] = None
    if gates:
        request["featureGates"] = gates
    return request


def test_a_case_gate_reaches_both_sides() -> None:
    """v1.35's NodeDeclaredFeatures is Alpha (off): the Pod that needs a feature the Node does
    not declare fits unless the case turns the gate on, on both sides."""
    try:
        oracle = compare.Oracle(compare.binary("1.35"))
    except compare.OracleMissing:
        pytest.skip("oracle/bin/v1.35/kube-oracle is not built (bash oracle/build.sh)")
    with oracle:
        for gates, fits in (({}, True), ({"NodeDeclaredFeatures": True}, False)):
            request = _needs_a_declared_feature(gates)
            ours = compare.ours(request, "1.35")
            assert compare.differences(ours, oracle.ask(request)) == []
            assert (ours.get("selectedNode") is not None) == fits, ours


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_pods_with_pod_level_resources_are_drawn_mid_resize(version: str) -> None:
    """Pods with pod-level ``spec.resources`` resizing, with their own ``status.resources``
    at times, under InPlacePodLevelResourcesVerticalScaling as the release has it (the
    alpha gate turned on at v1.35, the beta one off at times later)."""
    resizing = own_status = gate_set = 0
    for i in range(300):
        request = cases.case(21, i, version)
        pods = [o for o in request["cluster"]["items"] if o["kind"] == "Pod"]
        resizing += any(o["spec"].get("resources") and _resizing(o) for o in pods)
        own_status += any(o["spec"].get("resources") and "resources" in o["status"] for o in pods)
        gate = request.get("featureGates", {}).get("InPlacePodLevelResourcesVerticalScaling")
        gate_set += gate is (version == "1.35")
    assert resizing > 5 and own_status > 5 and gate_set > 0


def _resizing(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions", [])
    return any(c["type"] in ("PodResizeInProgress", "PodResizePending") for c in conditions)


def test_storage_cases_draw_volume_limit_scaling_from_v135_only() -> None:
    """The storage family's release draws (``storage_extras.release_storage``) come last and
    only from v1.35: a seed's v1.34 cases are what they were; from v1.35 the gate
    VolumeLimitScaling is set at times, and from v1.36 CSIDrivers opt in at times."""
    import storage_cases

    gated = opted = classes = 0
    for i in range(60):
        assert storage_cases.storage_case(3, i, "1.34") == storage_cases.storage_case(3, i)
        for version in ("1.35", "1.37"):
            case = storage_cases.storage_case(3, i, version)
            gates = case.get("featureGates", {})
            gated += "VolumeLimitScaling" in gates
            assert not check_settings(version, sorted(gates.items()))
            drivers = [o for o in case["cluster"]["items"] if o["kind"] == "CSIDriver"]
            has = any("preventPodSchedulingIfMissing" in d["spec"] for d in drivers)
            assert not (has and version == "1.35")  # no such field at v1.35
            opted += has
            classes += "volumeAttributesClassName" in str(case)
    assert gated and opted and classes


def test_dra_cases_draw_fractional_ranges_at_v137_only() -> None:
    import dra_cases

    drawn = 0
    for i in range(40):
        assert "cores" not in str(dra_cases.dra_case(5, i, "1.36"))
        case = dra_cases.dra_case(5, i, "1.37")
        gates = case.get("featureGates", {})
        assert not check_settings("1.37", sorted(gates.items()))
        drawn += '"cores"' in json.dumps(case)
    assert drawn
