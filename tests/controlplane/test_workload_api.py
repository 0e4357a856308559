"""The Workload API objects against the real kube-apiserver v1.37.2: every manifest of
:data:`CASES` is created with ``dryRun=All`` and kubesched must agree with the server on
whether it is accepted and, when not, on every ``(field, message)`` cause; an accepted
PodGroup's stored form (gated fields dropped, ``preemptionPolicy`` defaulted) must be what
:func:`kubesched.api.workload.admit` makes of it.  Run twice: GenericWorkload alone, and with
every gate that adds a field on.  (Only the v1.34 and v1.37 control planes are built, so
v1.35's and v1.36's shapes are checked against upstream's source, in tests/api, only.)

It starts its own control plane (``oracle/controlplane.sh``, ``APISERVER_EXTRA_ARGS``),
v1.37's whatever ``ORACLE_KUBERNETES_VERSION`` says."""

from __future__ import annotations

import json
import re
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched.api import workload
from kubesched.api.errors import InputError
from kubesched.api.parse import parse_objects
from kubesched.api.pods import parse_pod
from kubesched.config.featuregates import FeatureGates, with_settings
from tests.controlplane.conftest import ROOT, v137_api_server

pytestmark = pytest.mark.controlplane

BIN = ROOT / "oracle" / "bin" / "v1.37"
RUNTIME = "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true"
GATE_SETS = {
    "generic": {"GenericWorkload": True},
    "all": {
        "GenericWorkload": True,
        "TopologyAwareWorkloadScheduling": True,
        "PodGroupPreemptionPolicy": True,
        "DRAWorkloadResourceClaims": True,
        "CompositePodGroup": True,
    },
}


def pg(version: str = "v1beta1", name: str = "train", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 4}}}
    body.update(spec)
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
    }


def wl(version: str = "v1beta1", *templates: dict[str, Any], **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"podGroupTemplates": list(templates)}
    body.update(spec)
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "Workload",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": body,
    }


def pod(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": body}


G = {"schedulingPolicy": {"gang": {"minCount": 2}}}
RACK = {"topology": [{"key": "rack"}]}
CASES: dict[str, dict[str, Any]] = {
    "valid": pg(),
    "basic": pg(schedulingPolicy={"basic": {}}),
    "both": pg(schedulingPolicy={"basic": {}, "gang": {"minCount": 2}}),
    "neither": pg(schedulingPolicy={}),
    "no-policy": {**pg(), "spec": {}},
    "min0": pg(schedulingPolicy={"gang": {"minCount": 0}}),
    "min-neg": pg(schedulingPolicy={"gang": {"minCount": -3}}),
    "min-missing": pg(schedulingPolicy={"gang": {}}),
    "topology": pg(schedulingConstraints=RACK),
    "topology-two": pg(schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]}),
    "topology-bad-key": pg(schedulingConstraints={"topology": [{"key": "bad key"}]}),
    "topology-no-key": pg(schedulingConstraints={"topology": [{}]}),
    "bad-name": pg(name="Train_1"),
    "dotted-name": pg(name="train.v1"),
    "wref": pg(workloadRef={"workloadName": "job", "templateName": "w"}),
    "wref-bad": pg(workloadRef={"workloadName": "Job", "templateName": "w.x"}),
    "wref-empty": pg(workloadRef={}),
    "parent-no-ref": pg(parentCompositePodGroupName="all"),
    "claims-five": pg(
        resourceClaims=[{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]
    ),
    "preemption-never": pg(preemptionPolicy="Never"),
    "preemption-bad": pg(preemptionPolicy="Sometimes"),
    "alpha3": pg("v1alpha3"),
    "alpha3-both": pg("v1alpha3", schedulingPolicy={"basic": {}, "gang": {"minCount": 1}}),
    "wl-valid": wl("v1beta1", {"name": "w", **G}),
    "wl-dup": wl("v1beta1", {"name": "w", **G}, {"name": "w", **G}),
    "wl-dup-rack": wl(
        "v1beta1",
        {"name": "w", **G, "schedulingConstraints": RACK},
        {"name": "w", **G, "schedulingConstraints": RACK},
    ),
    "wl-nine": wl("v1beta1", *({"name": f"g{i}", **G} for i in range(9))),
    "wl-empty": wl("v1beta1"),
    "wl-bad-tname": wl("v1beta1", {"name": "W.1", **G}),
    "wl-dotted-tname": wl("v1beta1", {"name": "w.1", **G}),
    "wl-noname": wl("v1beta1", {**G}),
    "wl-min0": wl("v1beta1", {"name": "w", "schedulingPolicy": {"gang": {"minCount": 0}}}),
    "wl-ctrl": wl("v1beta1", {"name": "w", **G}, controllerRef={"name": "x"}),
    "wl-ctrl-ok": wl(
        "v1beta1",
        {"name": "w", **G},
        controllerRef={"kind": "Job", "name": "x", "apiGroup": "batch"},
    ),
    "wl-alpha3": wl("v1alpha3", {"name": "w", **G}),
    "wl-alpha3-prio": wl(
        "v1alpha3", {"name": "a", "priority": 1, **G}, {"name": "b", "priority": 2, **G}
    ),
}


def cpg(name: str = "all", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "workloadRef": {"workloadName": "job", "templateName": "all"},
        "schedulingPolicy": {"gang": {"minGroupCount": 2}},
    }
    body.update(spec)
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
    }


COMPOSITE_CASES: dict[str, dict[str, Any]] = {
    "cpg-valid": cpg(),
    "cpg-basic": cpg(schedulingPolicy={"basic": {}}),
    "cpg-both": cpg(schedulingPolicy={"basic": {}, "gang": {"minGroupCount": 1}}),
    "cpg-neither": cpg(schedulingPolicy={}),
    "cpg-min0": cpg(schedulingPolicy={"gang": {"minGroupCount": 0}}),
    "cpg-min-neg": cpg(schedulingPolicy={"gang": {"minGroupCount": -1}}),
    "cpg-min-missing": cpg(schedulingPolicy={"gang": {}}),
    "cpg-no-ref": {**cpg(), "spec": {"schedulingPolicy": {"basic": {}}}},
    "cpg-ref-bad": cpg(workloadRef={"workloadName": "Job", "templateName": "a.b"}),
    "cpg-parent": cpg(parentCompositePodGroupName="top"),
    "cpg-parent-bad": cpg(parentCompositePodGroupName="Top_1"),
    "cpg-topology": cpg(schedulingConstraints=RACK),
    "cpg-topology-two": cpg(schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]}),
    "cpg-topology-bad-key": cpg(schedulingConstraints={"topology": [{"key": "bad key"}]}),
    "cpg-topology-no-key": cpg(schedulingConstraints={"topology": [{}]}),
    "cpg-disruption-all": cpg(disruptionMode={"all": {}}),
    "cpg-disruption-both": cpg(disruptionMode={"single": {}, "all": {}}),
    "cpg-priority-given": cpg(priority=5),
    "cpg-preemption-never": cpg(preemptionPolicy="Never"),
    "cpg-bad-name": cpg(name="All_1"),
}
"""CompositePodGroups: served only with CompositePodGroup on (the ``all`` gate set)."""
POD_CASES: dict[str, dict[str, Any]] = {
    "member": pod(schedulingGroup={"podGroupName": "train"}),
    "member-dotted": pod(schedulingGroup={"podGroupName": "train.v1"}),
    "member-bad": pod(schedulingGroup={"podGroupName": "Train"}),
    "member-nameless": pod(schedulingGroup={}),
}


class Server:
    """A v1.37 API server with some gates on, called as admin over HTTPS."""

    def __init__(self, directory: Path, gates: FeatureGates) -> None:
        text = (directory / "admin.kubeconfig").read_text()
        self.url = re.search(r"server: (\S+)", text).group(1)  # type: ignore[union-attr]
        self.token = re.search(r"token: (\S+)", text).group(1)  # type: ignore[union-attr]
        self.ssl = ssl.create_default_context(cafile=str(directory / "pki" / "ca.crt"))
        self.gates = gates

    def create(self, obj: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """POST ``obj`` with dryRun=All: the status code and the body."""
        plural = {
            "Workload": "workloads",
            "PodGroup": "podgroups",
            "CompositePodGroup": "compositepodgroups",
            "Pod": "pods",
        }[obj["kind"]]
        prefix = "api" if obj["apiVersion"] == "v1" else "apis"
        url = f"{self.url}/{prefix}/{obj['apiVersion']}/namespaces/default/{plural}?dryRun=All"
        request = urllib.request.Request(
            url,
            data=json.dumps(obj).encode(),
            method="POST",
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, context=self.ssl, timeout=20) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as err:
            return err.code, json.load(err)


@pytest.fixture(scope="module", params=sorted(GATE_SETS))
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    if not (BIN / "kube-apiserver").exists():
        pytest.skip("v1.37's control plane is not built: run bash oracle/build.sh")
    settings = GATE_SETS[request.param]
    directory = tmp_path_factory.mktemp(f"workload-{request.param}")
    with v137_api_server(directory, settings, RUNTIME):
        yield Server(directory, with_settings("1.37", settings))


def _causes(code: int, body: dict[str, Any]) -> list[tuple[str, str]]:
    if code < 400:
        return []
    causes = body.get("details", {}).get("causes", [])
    if not causes:
        return [("", str(body.get("message")))]
    return sorted((c.get("field", ""), c["message"]) for c in causes)


def _both_validate(
    server: Server, obj: dict[str, Any]
) -> tuple[workload.WorkloadObjects | None, int, dict[str, Any]]:
    """``obj`` created on the API server and read and admitted by kubesched: both refuse it
    for the same causes, or both accept it.  kubesched's admitted objects (None when
    refused) and the server's status code and body."""
    code, body = server.create(obj)
    admitted: workload.WorkloadObjects | None = None
    try:
        parse_objects([obj])
        admitted = workload.admit([obj], server.gates, paths=[""])
        ours: list[tuple[str, str]] = []
    except InputError as err:
        ours = sorted(err.problems)
    assert ours == _causes(code, body)
    return admitted, code, body


@pytest.mark.parametrize("case", sorted(CASES))
def test_kubesched_validates_as_the_api_server(server: Server, case: str) -> None:
    obj = CASES[case]
    admitted, code, body = _both_validate(server, obj)
    if code == 201 and obj["kind"] == "PodGroup":
        key = f"default/{obj['metadata']['name']}"
        stored = workload.admit([body], server.gates).pod_groups[key]
        assert admitted is not None and admitted.pod_groups[key] == stored


@pytest.mark.parametrize("case", sorted(COMPOSITE_CASES))
def test_kubesched_validates_composite_pod_groups_as_the_api_server(
    server: Server, case: str
) -> None:
    if not server.gates.enabled("CompositePodGroup"):
        pytest.skip("CompositePodGroups are served only with CompositePodGroup on")
    obj = COMPOSITE_CASES[case]
    admitted, code, body = _both_validate(server, obj)
    if code == 201:
        key = f"default/{obj['metadata']['name']}"
        stored = workload.admit([body], server.gates).composite_pod_groups[key]
        assert admitted is not None and admitted.composite_pod_groups[key] == stored


@pytest.mark.parametrize("case", sorted(POD_CASES))
def test_pod_group_references_validated_as_the_api_server(server: Server, case: str) -> None:
    obj = POD_CASES[case]
    code, body = server.create(obj)
    theirs = [c for c in _causes(code, body) if "schedulingGroup" in c[0]]
    ours = workload.check_pod_refs([parse_pod(obj)], server.gates)
    assert [(p.removeprefix("Pod default/p: "), m) for p, m in ours] == theirs
    if code == 201:
        assert body["spec"].get("schedulingGroup") == obj["spec"]["schedulingGroup"]
