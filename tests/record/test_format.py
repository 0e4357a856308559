"""What the recorder strips from objects (:func:`kubesched.record.format.sanitize`), and the
shipped JSON Schema agreeing with the reader on good and bad lines."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest

from kubesched.api.errors import InputError
from kubesched.record import format as fmt
from kubesched.record.reader import check_event
from tests.record.builders import node, pod

SECRET = "s3cr3t"


def test_secret_and_configmap_objects_are_never_recorded() -> None:
    for kind in ("Secret", "ConfigMap"):
        obj = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}, "data": {"k": SECRET}}
        assert fmt.sanitize(obj) is None


def test_workload_templates_are_stripped_as_pods_are() -> None:
    rs: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "rs",
            "namespace": "default",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": SECRET},
            "managedFields": [{"manager": SECRET}],
        },
        "spec": {
            "selector": {"matchLabels": {"app": "a"}},
            "template": {
                "metadata": {"labels": {"app": "a"}, "annotations": {"x": SECRET}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "i", "env": [{"name": "P", "value": SECRET}]}
                    ],
                    "initContainers": [{"name": "i", "command": [SECRET], "envFrom": [{}]}],
                },
            },
        },
        "status": {"replicas": 3},
    }
    before = copy.deepcopy(rs)
    out = fmt.sanitize(rs)
    assert rs == before  # the input is not modified
    assert out is not None and SECRET not in json.dumps(out)
    assert out["spec"]["selector"] == {"matchLabels": {"app": "a"}}
    tpl = out["spec"]["template"]
    assert tpl["metadata"] == {"labels": {"app": "a"}}
    assert tpl["spec"]["containers"] == [{"name": "c", "image": "i", "env": [{"name": "P"}]}]
    assert tpl["spec"]["initContainers"] == [{"name": "i"}]
    assert "status" not in out and "managedFields" not in out["metadata"]


def test_a_pdb_keeps_its_status_a_node_loses_its_heartbeats() -> None:
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"},
           "spec": {"minAvailable": 1}, "status": {"disruptionsAllowed": 0}}  # fmt: skip
    assert fmt.sanitize(pdb) == pdb
    n = node("n1")
    n["status"]["conditions"] = [
        {"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-01T00:00:00Z"}
    ]
    n["status"]["addresses"] = [{"type": "InternalIP", "address": "10.0.0.1"}]
    later = copy.deepcopy(n)
    later["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-01-01T00:00:10Z"
    later["metadata"]["resourceVersion"] = "2"
    a, b = fmt.sanitize(n), fmt.sanitize(later)
    assert a is not None and b is not None
    assert a["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    assert "addresses" not in a["status"]
    assert fmt.fingerprint(a) == fmt.fingerprint(b)  # a heartbeat is not an event
    b["spec"]["unschedulable"] = True
    assert fmt.fingerprint(a) != fmt.fingerprint(b)


GOOD = [
    {"seq": 1, "t": 0.5, "type": "PodCreated", "object": pod("a")},
    {"seq": 1, "t": 0, "type": "NodeDeleted", "node": "n1"},
    {
        "seq": 1,
        "t": 2,
        "type": "PodBound",
        "pod": "default/a",
        "uid": "u",
        "node": "n1",
        "scheduler": "default-scheduler",
        "bindSeconds": None,
    },
    {"seq": 1, "t": 2, "type": "Relisted", "kind": "Pod"},
]
BAD = [
    {"seq": 1, "t": 1, "type": "PodMoved"},
    {"seq": 1, "t": -1, "type": "NodeDeleted", "node": "n"},
    {"seq": 1, "t": 1, "type": "NodeDeleted"},
    {"seq": 1, "t": 1, "type": "NodeDeleted", "node": "n", "extra": 1},
    {"seq": 1, "t": 1, "type": "NodeAdded", "object": pod("a")},
    {
        "seq": 1,
        "t": 1,
        "type": "PodBound",
        "pod": "p",
        "uid": "u",
        "node": "n",
        "scheduler": "s",
        "bindSeconds": "soon",
    },
]


@pytest.mark.parametrize("event", GOOD)
def test_schema_and_reader_accept_the_same_good_lines(event: dict[str, Any]) -> None:
    jsonschema.validate(event, {**fmt.schema(), "$ref": "#/$defs/event"})
    assert check_event(event, 1, 0.0).type == event["type"]


@pytest.mark.parametrize("event", BAD)
def test_schema_and_reader_refuse_the_same_bad_lines(event: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(event, {**fmt.schema(), "$ref": "#/$defs/event"})
    with pytest.raises(InputError):
        check_event(event, 1, 0.0)


def test_the_schema_is_a_valid_json_schema_and_names_every_event_type() -> None:
    schema = fmt.schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    types = [e["properties"]["type"]["const"] for e in schema["$defs"]["event"]["oneOf"]]
    assert sorted(types) == sorted(fmt.EVENT_FIELDS)
    for e in schema["$defs"]["event"]["oneOf"]:
        fields = set(e["required"]) - {"seq", "t", "type"}
        assert fields == set(fmt.EVENT_FIELDS[e["properties"]["type"]["const"]])
