"""kubesched's queueing hints against upstream v1.34's (``kube-oracle hints``).

Generated hint cases (``oracle/hint_cases.py``, ``oracle/storage_hint_cases.py`` for
storage objects and ``oracle/dra_hint_cases.py`` for DRA objects; ``ORACLE_HINT_CASES``,
default 200 each, from ``ORACLE_SEED``): for one Node, Pod, storage or DRA object change,
the cluster events both derive and every plugin's hint for each event it registered must be
the same (``oracle/diff.py --verb hints --seed S --start I --cases 1`` reproduces a case).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from compare import Oracle, OracleMissing, binary
from dra_hint_cases import dra_hint_case
from hint_cases import hint_case, hint_differences, ours_hints
from storage_hint_cases import storage_hint_case

from tests.oracle.conftest import _oracle, generated_seed, mismatches


@pytest.fixture(scope="module")
def hint_oracle() -> Iterator[Any]:
    """``kube-oracle hints``."""
    yield from _oracle("hints")


HINT_FAMILIES: dict[str, tuple[str, Callable[[int, int], dict[str, Any]]]] = {
    "default": ("hints", hint_case),
    "storage": ("storage hints", storage_hint_case),
    "dra": ("dra hints", dra_hint_case),
}
"""``oracle/diff.py --verb hints --family F``'s generators: a Pod or Node change
(``oracle/hint_cases.py``), a storage object's (``oracle/storage_hint_cases.py``: the volume
plugins' hints), a DRA object's or the Pod's generated claims named
(``oracle/dra_hint_cases.py``: DynamicResources' hints); each with its seed's label."""


@pytest.mark.parametrize("family", sorted(HINT_FAMILIES))
def test_generated_hints_match_upstream(hint_oracle: Any, family: str) -> None:
    """``ORACLE_HINT_CASES`` (200) cases of one family against ``kube-oracle hints``."""
    label, draw = HINT_FAMILIES[family]
    n = int(os.environ.get("ORACLE_HINT_CASES", "200"))
    seed = generated_seed(label, n)
    failures = mismatches(n, lambda i: draw(seed, i), ours_hints, hint_oracle, hint_differences)
    assert not failures, (
        f"seed {seed}: {len(failures)}/{n} {family} hint cases differ from upstream "
        f"(reproduce: oracle/diff.py --verb hints --family {family} --seed {seed} --cases {n})\n"
        + "\n".join(failures[:10])
    )


def test_dra_hint_cases_change_every_kind() -> None:
    events = [dra_hint_case(3, i)["event"] for i in range(200)]
    kinds = {(e.get("new") or e.get("old"))["kind"] for e in events}
    assert kinds == {"ResourceClaim", "ResourceSlice", "DeviceClass", "Pod"}
    assert {e["op"] for e in events} == {"add", "update", "delete"}
    assert dra_hint_case(3, 7) == dra_hint_case(3, 7)


def test_storage_hint_cases_change_every_kind() -> None:
    events = [storage_hint_case(3, i)["event"] for i in range(200)]
    kinds = {(e.get("new") or e.get("old"))["kind"] for e in events}
    assert kinds == {"PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode",
                     "CSIDriver", "CSIStorageCapacity", "VolumeAttachment", "Pod"}  # fmt: skip
    assert {e["op"] for e in events} == {"add", "update", "delete"}
    assert storage_hint_case(3, 7) == storage_hint_case(3, 7)


# The Workload API object each release's GangScheduling hears (GenericWorkload on).
_WORKLOAD_KIND = {
    "1.35": ("scheduling.k8s.io/v1alpha1", "Workload"),
    "1.36": ("scheduling.k8s.io/v1alpha2", "PodGroup"),
    "1.37": ("scheduling.k8s.io/v1beta1", "PodGroup"),
}


def _upstream_agrees(version: str, cases: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    """``(ours, upstream's)`` hint answers of ``cases`` at ``version``, asserted equal
    (skipped when ``oracle/bin/vV``'s kube-oracle is not built)."""
    try:
        with Oracle(binary=binary(version), verb="hints") as upstream:
            answers = [(ours_hints(c, version), upstream.ask(c)) for c in cases]
    except OracleMissing as e:
        pytest.skip(str(e))
    failures = [d for ours, theirs in answers for d in hint_differences(ours, theirs)]
    assert not failures, "\n".join(failures[:10])
    return answers


def _pod_group_cases(seed: int, n: int, version: str = "1.37") -> list[dict[str, Any]]:
    """The hint cases at ``version`` among the first ``n`` of ``seed`` whose event is a
    Workload API object's (a Workload at v1.35, a PodGroup from v1.36)."""
    cases = [hint_case(seed, i, version) for i in range(n)]
    kinds = {"Workload", "PodGroup"}
    return [c for c in cases if (c["event"].get("new") or c["event"]["old"])["kind"] in kinds]


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_hint_cases_draw_workload_api_events(version: str) -> None:
    """From v1.35 some cases are the release's Workload API object's add, update or delete
    (v1.35 a ``v1alpha1`` Workload, v1.36 a ``v1alpha2`` PodGroup, v1.37 a ``v1beta1``
    one; GenericWorkload on, and GangScheduling, a gate of its own before v1.37); v1.34's
    draw none."""
    cases = _pod_group_cases(1, 300, version)
    assert {c["event"]["op"] for c in cases} == {"add", "update", "delete"}
    objects = [c["event"][k] for c in cases for k in ("old", "new") if k in c["event"]]
    shapes = {(o["apiVersion"], o["kind"]) for o in objects}
    assert shapes == {_WORKLOAD_KIND[version]}
    assert all(c["featureGates"]["GenericWorkload"] for c in cases)
    if version < "1.37":
        assert all(c["featureGates"]["GangScheduling"] for c in cases)
    kinds = {(hint_case(1, i)["event"].get("new") or {}).get("kind") for i in range(300)}
    assert not kinds & {"PodGroup", "Workload"}


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_workload_api_hints_match_upstream(version: str) -> None:
    """GangScheduling's Workload (v1.35) and PodGroup (v1.36 Add; v1.37 Add and Update) hints
    against kube-oracle's of the release (skipped when ``oracle/bin/vV`` is not built): the
    label upstream's event carries and the hint, ``Queue`` and ``QueueSkip`` both answered."""
    answers = _upstream_agrees(version, _pod_group_cases(1, 300, version))
    hints = {h["hint"] for _, theirs in answers for h in theirs["hints"]}
    assert hints == {"Queue", "QueueSkip"}


def _member_or_tree_cases(seed: int, n: int, version: str) -> list[dict[str, Any]]:
    """The hint cases at ``version`` among the first ``n`` of ``seed`` whose event is a Pod
    added that names its group (``member-new``) or a CompositePodGroup's."""
    out = []
    for i in range(n):
        case = hint_case(seed, i, version)
        obj = case["event"].get("new") or case["event"]["old"]
        if obj["kind"] == "CompositePodGroup" or obj["metadata"]["name"] == "member-new":
            out.append(case)
    return out


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36", "1.37"])
def test_hint_cases_draw_members_added_and_composite_trees(version: str) -> None:
    """From v1.35 some cases add a Pod, pending or bound, that names a group by the
    release's field (v1.35 ``workloadRef``, v1.36+ ``schedulingGroup``), and at v1.37 some
    add, update or delete a ``v1alpha3`` CompositePodGroup (its gate and the gates it needs
    on); v1.34's draw neither."""
    cases = _member_or_tree_cases(1, 300, version)
    if version == "1.34":
        assert cases == []
        return
    field = "workloadRef" if version == "1.35" else "schedulingGroup"
    added = [c["event"]["new"] for c in cases if c["event"]["op"] == "add"]
    members = [p for p in added if p["kind"] == "Pod"]
    assert {bool(p["spec"].get("nodeName")) for p in members} == {True, False}
    assert any(field in p["spec"] for p in members)
    assert all(c["featureGates"]["GenericWorkload"] for c in cases)
    trees = [c for c in cases if c["featureGates"].get("CompositePodGroup")]
    if version < "1.37":
        assert trees == []
        return
    events = [c["event"] for c in trees]
    composite = [e for e in events if (e.get("new") or e["old"])["kind"] == "CompositePodGroup"]
    assert {e["op"] for e in composite} == {"add", "update", "delete"}
    objects = [e[k] for e in composite for k in ("old", "new") if k in e]
    assert {o["apiVersion"] for o in objects} == {"scheduling.k8s.io/v1alpha3"}
    assert all(c["featureGates"]["TopologyAwareWorkloadScheduling"] for c in trees)


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_member_and_tree_hints_match_upstream(version: str) -> None:
    """GangScheduling's hints on a Pod added that names a group (a pending one: the
    queue's ``UnscheduledPodAdd``) and, at v1.37, on a composite tree's objects, against
    kube-oracle's of the release (skipped when ``oracle/bin/vV`` is not built): ``Queue``
    and ``QueueSkip`` both answered."""
    answers = _upstream_agrees(version, _member_or_tree_cases(1, 300, version))
    gang = {h["hint"] for _, t in answers for h in t["hints"] if h["plugin"] == "GangScheduling"}
    assert gang == {"Queue", "QueueSkip"}
    assert any(e.startswith("Unsched") for _, t in answers for e in t["events"])


def _declared_feature_cases(seed: int, n: int, version: str) -> list[dict[str, Any]]:
    """The first ``n`` hint cases of ``seed`` at ``version`` whose Nodes declare features."""
    out = []
    for i in range(n):
        case = hint_case(seed, i, version)
        nodes = [o for o in case["cluster"]["items"] if o["kind"] == "Node"]
        if any("declaredFeatures" in node["status"] for node in nodes):
            out.append(case)
    return out


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36", "1.37"])
def test_hint_cases_draw_declared_features(version: str) -> None:
    """From v1.35 some cases' Nodes declare features (``status.declaredFeatures``), the
    NodeDeclaredFeatures gate on where a user may set it (v1.35 Alpha, v1.36 Beta; GA and
    locked at v1.37); v1.34's declare none."""
    cases = _declared_feature_cases(1, 300, version)
    if version == "1.34":
        assert cases == []
        return
    assert len(cases) >= 20
    gates = {c.get("featureGates", {}).get("NodeDeclaredFeatures") for c in cases}
    assert gates == ({True} if version < "1.37" else {None})


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_declared_feature_hints_match_upstream(version: str) -> None:
    """NodeDeclaredFeatures' hints on a Node added or one whose declared features change,
    against kube-oracle's of the release (skipped when ``oracle/bin/vV`` is not built): the
    plugin asked (its gate on), ``Queue`` answered (upstream skips only a Node whose declared
    features stay as they were, which asks it nothing)."""
    answers = _upstream_agrees(version, _declared_feature_cases(1, 300, version))
    ndf = {
        h["hint"] for _, t in answers for h in t["hints"] if h["plugin"] == "NodeDeclaredFeatures"
    }
    assert "Queue" in ndf


def test_hint_cases_reproduce_and_vary() -> None:
    assert hint_case(3, 7) == hint_case(3, 7)
    ops = {hint_case(3, i)["event"]["op"] for i in range(60)}
    assert ops == {"add", "update", "delete"}


def test_differences_name_the_plugin_and_event() -> None:
    ours = {"events": ["NodeAdd"], "hints": [{"event": "NodeAdd", "plugin": "A", "hint": "Queue"}]}
    theirs = {
        "events": ["NodeAdd"],
        "hints": [
            {"event": "NodeAdd", "plugin": "A", "hint": "QueueSkip"},
            # Asked upstream only for a Pod its asynchronous preemption holds: left out.
            {"event": "NodeAdd", "plugin": "DefaultPreemption", "hint": "QueueSkip"},
        ],
    }
    assert hint_differences(ours, theirs) == ["A on NodeAdd: ours Queue, upstream QueueSkip"]
    assert hint_differences({"error": "x"}, {"error": "y"}) == []
    assert hint_differences(ours, {"error": "bad"})[0].startswith("error:")
