"""Reading manifest files and streams of objects: Lists, paths, duplicates, priorities."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api import parse, source
from kubesched.api.errors import InputError
from tests.api.manifests import (
    GI,
    SNAPSHOT,
    as_list,
    node_manifest,
    pod_manifest,
    priority_class,
    write,
)

# ---------------------------------------------------------------- load_documents


def test_load_snapshot_flattens_the_list() -> None:
    docs = parse.load_documents(str(SNAPSHOT))
    assert len(docs) == 25
    assert isinstance(docs, parse.Documents)
    assert docs.paths[0] == "items[0]" and docs.paths[24] == "items[24]"
    assert [d["kind"] for d in docs].count("Node") == 4


def test_multi_document_yaml_paths(tmp_path: Path) -> None:
    text = """
apiVersion: v1
kind: Node
metadata: {name: a}
---
---
apiVersion: v1
kind: PodList
items:
- {apiVersion: v1, kind: Pod, metadata: {name: p0}, spec: {containers: [{name: c}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: p1}, spec: {containers: [{name: c}]}}
"""
    docs = parse.load_documents(write(tmp_path, text))
    assert [d["metadata"]["name"] for d in docs] == ["a", "p0", "p1"]
    assert docs.paths == ["[0]", "[1].items[0]", "[1].items[1]"]  # type: ignore[attr-defined]


def test_single_plain_object_is_the_root(tmp_path: Path) -> None:
    docs = parse.load_documents(write(tmp_path, json.dumps(pod_manifest()), "p.json"))
    assert docs.paths == [""]  # type: ignore[attr-defined]


def test_yaml_timestamps_stay_strings(tmp_path: Path) -> None:
    text = """
kind: Pod
metadata:
  name: p
  creationTimestamp: 2026-11-20T08:00:00Z
  labels: {day: 2024-01-01}
spec: {containers: [{name: c}]}
"""
    docs = parse.load_documents(write(tmp_path, text))
    assert docs[0]["metadata"]["labels"]["day"] == "2024-01-01"
    pod = parse.parse_pod(docs[0])
    assert pod.creation_timestamp == 1795161600.0
    assert pod.labels == {"day": "2024-01-01"}


def test_missing_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yaml")
    with pytest.raises(InputError) as info:
        parse.load_documents(missing)
    assert info.value.file == missing
    assert "no such file" in str(info.value)


def test_bad_yaml_reports_line(tmp_path: Path) -> None:
    path = write(tmp_path, "kind: Pod\nmetadata:\n  name: [unclosed\n")
    with pytest.raises(InputError) as info:
        parse.load_documents(path)
    assert info.value.file == path
    where, message = info.value.problems[0]
    assert where.startswith("line ")
    assert "invalid YAML" in message


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("- a\n- b\n", "[0]"),
        ("just a string\n", "document"),
        ('{"kind": "List", "items": [{"kind": "Pod"}, 3]}', "items[1]"),
        ('{"kind": "List", "items": {"a": 1}}', "items"),
        ("kind: Node\n---\n42\n", "[1]"),
    ],
)
def test_documents_must_be_mappings(tmp_path: Path, text: str, where: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        parse.load_documents(path)
    assert info.value.file == path
    assert info.value.problems[0][0] == where


# ---------------------------------------------------------------- parse_objects


def test_parse_objects_sorts_kinds_and_keeps_others() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}
    pg = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ml"},
        "spec": {"minMember": 2},
    }
    out = parse.parse_objects(as_list(node_manifest(), pod_manifest(), ns, pg))
    assert [n.name for n in out.nodes] == ["n"]
    assert [p.key for p in out.pods] == ["default/p"]
    assert out.others == [ns, pg]
    assert out.of_kind("PodGroup") == [pg]


def test_parse_objects_collects_every_problem_with_file() -> None:
    bad_pod = pod_manifest("bad")
    bad_pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1.2.3"}}
    nameless = node_manifest()
    del nameless["metadata"]["name"]
    kindless = {"metadata": {"name": "x"}}
    docs = as_list(pod_manifest(), bad_pod, nameless, kindless)
    with pytest.raises(InputError) as info:
        parse.parse_objects(docs, file="cluster.json")
    assert info.value.file == "cluster.json"
    assert [w for w, _ in info.value.problems] == [
        "items[1].spec.containers[0].resources.requests.cpu",
        "items[2].metadata.name",
        "items[3].kind",
    ]
    assert str(info.value).startswith("cluster.json: ")


def test_plain_list_of_documents_uses_document_indexes() -> None:
    with pytest.raises(InputError) as info:
        parse.parse_objects([pod_manifest("a"), pod_manifest("b", containers=[])])
    assert info.value.problems[0][0] == "[1].spec.containers"


@pytest.mark.parametrize(
    ("first", "second", "duplicate"),
    [
        (pod_manifest("a"), pod_manifest("a"), True),
        (node_manifest("a"), node_manifest("a"), True),
        (pod_manifest("a"), node_manifest("a"), False),  # different kinds
        (
            pod_manifest("a"),
            {**pod_manifest("a"), "metadata": {"name": "a", "namespace": "x"}},
            False,
        ),
        (
            pod_manifest("a"),
            {**pod_manifest("a"), "metadata": {"name": "a", "namespace": "default"}},
            True,
        ),
    ],
)
def test_duplicates(first: dict[str, Any], second: dict[str, Any], duplicate: bool) -> None:
    docs = as_list(first, second)
    if not duplicate:
        parse.parse_objects(docs)
        return
    with pytest.raises(InputError) as info:
        parse.parse_objects(docs)
    [(where, message)] = info.value.problems
    assert where == "items[1].metadata.name"
    assert "duplicate" in message and "items[0]" in message


def test_priorities_from_priority_classes() -> None:
    docs = as_list(
        pod_manifest("named", priorityClassName="high"),
        pod_manifest("explicit", priorityClassName="high", priority=5),
        pod_manifest("system", priorityClassName="system-node-critical"),
        pod_manifest("defaulted"),
        priority_class("high", 1000, preemptionPolicy="Never"),
        priority_class("low-default", 10, default=True),
        priority_class("lower-default", 3, default=True),
    )
    out = parse.parse_objects(docs)
    pods = {p.name: p for p in out.pods}
    assert (pods["named"].priority, pods["named"].preemption_policy) == (1000, "Never")
    assert (pods["explicit"].priority, pods["explicit"].preemption_policy) == (
        5,
        "PreemptLowerPriority",
    )
    assert pods["system"].priority == 2000001000
    assert pods["defaulted"].priority == 3  # lowest of the global defaults
    assert len(out.of_kind("PriorityClass")) == 3


def test_unknown_priority_class() -> None:
    with pytest.raises(InputError) as info:
        parse.parse_objects(as_list(pod_manifest("p", priorityClassName="gold")))
    [(where, message)] = info.value.problems
    assert where == "items[0].spec.priorityClassName"
    assert "no PriorityClass with name gold" in message


def test_priority_class_without_value() -> None:
    with pytest.raises(InputError) as info:
        parse.parse_objects(as_list(priority_class("x", None)))
    assert info.value.problems == [("items[0].value", "Required value")]


def test_resolve_priorities_helper() -> None:
    pods = [
        parse.parse_pod(pod_manifest("a", priorityClassName="high")),
        parse.parse_pod(pod_manifest("b")),
    ]
    parse.resolve_priorities(pods, [priority_class("high", 7)])
    assert [p.priority for p in pods] == [7, 0]
    with pytest.raises(InputError, match="Pod default/a"):
        parse.resolve_priorities(pods[:1], [])


def test_load_cluster_yaml(tmp_path: Path) -> None:
    text = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {capacity: {cpu: "2", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec:
  nodeName: n1
  containers: [{name: c, resources: {requests: {cpu: 250m}}}]
"""
    out = parse.load_cluster(write(tmp_path, text))
    assert out.nodes[0].allocatable == {"cpu": 2000, "memory": 4 * GI, "pods": 10}
    assert out.pods[0].requests == {"cpu": 250}
    bad = write(tmp_path, text.replace("250m", "250q"), "bad.yaml")
    with pytest.raises(InputError) as info:
        parse.load_cluster(bad)
    assert info.value.file == bad
    assert info.value.problems[0][0] == "[1].spec.containers[0].resources.requests.cpu"


def test_parsing_ten_thousand_pods() -> None:
    base = json.loads(SNAPSHOT.read_text())
    templates = [o for o in base["items"] if o["kind"] == "Pod"]
    items = []
    for i in range(10_000):
        pod = copy.deepcopy(templates[i % len(templates)])
        pod["metadata"]["name"] += f"-{i}"
        items.append(pod)
    out = parse.parse_objects(as_list(*items))  # how fast: a benchmark's job, not a test's
    assert len(out.pods) == 10_000
    assert len({p.key for p in out.pods}) == 10_000


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_nesting_limit_is_exact(fmt: str) -> None:
    """100 levels (mappings and lists mixed, among scalars) pass; 101 are refused."""

    def nested(levels: int) -> object:
        doc: object = "leaf"
        for i in range(levels):
            doc = {"k": doc, "n": 1} if i % 2 else [3, doc, "s"]
        return doc

    def dump(doc: object) -> str:
        return json.dumps(doc) if fmt == "json" else yaml.safe_dump(doc)

    assert source.load_text(dump(nested(source.MAX_DEPTH)))
    with pytest.raises(InputError, match="nested deeper than 100 levels"):
        source.load_text(dump(nested(source.MAX_DEPTH + 1)))
