"""Malformed Pod and Node fields fail with their full field path."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import parse
from kubesched.api.errors import InputError
from tests.api.manifests import node_manifest, pod_manifest

C0 = "spec.containers[0]"
NA = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


def _set(obj: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``a.b[0].c`` in a manifest (creating mappings on the way); None deletes."""
    parts: list[str | int] = []
    for piece in dotted.split("."):
        name, _, rest = piece.partition("[")
        parts.append(name)
        if rest:
            parts.append(int(rest.rstrip("]")))
    cur: Any = obj
    for key in parts[:-1]:
        cur = cur.setdefault(key, {}) if isinstance(key, str) else cur[key]
    if value is None:
        del cur[parts[-1]]
    else:
        cur[parts[-1]] = value


@pytest.mark.parametrize(
    ("field", "value", "where", "message"),
    [
        (
            f"{C0}.resources.requests.cpu",
            "abc",
            f"{C0}.resources.requests.cpu",
            "quantities must match",
        ),
        (f"{C0}.resources.limits.memory", "-1Gi", f"{C0}.resources.limits.memory", ">= 0"),
        (f"{C0}.resources.requests", ["1"], f"{C0}.resources.requests", "must be a mapping"),
        (f"{C0}.resources.requests.cpu", [1], f"{C0}.resources.requests.cpu", "must be a string"),
        ("spec.overhead.cpu", "1x", "spec.overhead.cpu", "quantities must match"),
        ("spec.containers", None, "spec.containers", "Required value"),
        ("spec.containers", [], "spec.containers", "Required value"),
        ("spec.containers", [3], C0, "must be a mapping"),
        ("metadata.name", None, "metadata.name", "Required value"),
        ("metadata.labels", {"app": 1}, "metadata.labels.app", "must be a string"),
        ("metadata.creationTimestamp", "yesterday", "metadata.creationTimestamp", "RFC3339"),
        ("spec.priority", "high", "spec.priority", "must be an integer"),
        ("spec.priority", True, "spec.priority", "must be an integer"),
        ("spec.preemptionPolicy", "Sometimes", "spec.preemptionPolicy", "Unsupported value"),
        ("spec.nodeName", 5, "spec.nodeName", "must be a string"),
        (
            "spec.tolerations",
            [{"key": "k", "operator": "Maybe"}],
            "spec.tolerations[0].operator",
            "Unsupported value",
        ),
        (
            "spec.tolerations",
            [{"operator": "Equal", "value": "v"}],
            "spec.tolerations[0].operator",
            "operator must be Exists",
        ),
        (
            "spec.tolerations",
            [{"key": "k", "operator": "Exists", "value": "v"}],
            "spec.tolerations[0].operator",
            "value must be empty",
        ),
        (
            "spec.tolerations",
            [{"key": "k", "operator": "Gt", "value": "07"}],
            "spec.tolerations[0].value",
            "valid decimal integer",
        ),
        (
            "spec.tolerations",
            [{"key": "k", "operator": "Lt", "value": "9223372036854775808"}],
            "spec.tolerations[0].value",
            "valid decimal integer",
        ),
        (
            "spec.tolerations",
            [{"key": "k", "effect": "Sometimes"}],
            "spec.tolerations[0].effect",
            "Unsupported value",
        ),
        (
            f"{NA}.nodeSelectorTerms",
            [{"matchExpressions": [{"key": "a", "operator": "Foo"}]}],
            f"{NA}.nodeSelectorTerms[0].matchExpressions[0].operator",
            "Unsupported value",
        ),
        (
            f"{NA}.nodeSelectorTerms",
            [{"matchExpressions": [{"key": "a", "operator": "In"}]}],
            f"{NA}.nodeSelectorTerms[0].matchExpressions[0].values",
            "must be specified",
        ),
        (
            f"{NA}.nodeSelectorTerms",
            [{"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1", "2"]}]}],
            f"{NA}.nodeSelectorTerms[0].matchExpressions[0].values",
            "single value",
        ),
        (
            f"{NA}.nodeSelectorTerms",
            [{"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]}],
            f"{NA}.nodeSelectorTerms[0].matchFields[0].key",
            "not a valid field selector key",
        ),
        (f"{NA}.nodeSelectorTerms", [], f"{NA}.nodeSelectorTerms", "at least one"),
        (
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
            [{"weight": 0, "preference": {}}],
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
            "range 1-100",
        ),
        (
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
            [{"labelSelector": {}}],
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            ".topologyKey",
            "Required value",
        ),
        (
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution",
            [
                {
                    "topologyKey": "z",
                    "labelSelector": {
                        "matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]
                    },
                }
            ],
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            ".labelSelector.matchExpressions[0].values",
            "may not be specified",
        ),
        (
            "spec.topologySpreadConstraints",
            [{"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}],
            "spec.topologySpreadConstraints[0].maxSkew",
            "greater than zero",
        ),
        (
            "spec.topologySpreadConstraints",
            [{"maxSkew": 1, "topologyKey": "z"}],
            "spec.topologySpreadConstraints[0].whenUnsatisfiable",
            "Required value",
        ),
        (
            "spec.topologySpreadConstraints",
            [
                {
                    "maxSkew": 1,
                    "topologyKey": "z",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "minDomains": 2,
                }
            ],
            "spec.topologySpreadConstraints[0].minDomains",
            "whenUnsatisfiable=DoNotSchedule",
        ),
        (
            "spec.topologySpreadConstraints",
            [
                {
                    "maxSkew": 1,
                    "topologyKey": "z",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "nodeTaintsPolicy": "Maybe",
                }
            ],
            "spec.topologySpreadConstraints[0].nodeTaintsPolicy",
            "Unsupported value",
        ),
        (
            f"{C0}.ports",
            [{"containerPort": 1, "hostPort": 70000}],
            f"{C0}.ports[0].hostPort",
            "between 1 and 65535",
        ),
        (
            f"{C0}.ports",
            [{"hostPort": 80, "protocol": "HTTP"}],
            f"{C0}.ports[0].protocol",
            "Unsupported value",
        ),
        ("spec.schedulingGates", [{}], "spec.schedulingGates[0].name", "Required value"),
        (
            "spec.initContainers",
            [{"name": "i", "resources": {"requests": {"memory": "1 Gi"}}}],
            "spec.initContainers[0].resources.requests.memory",
            "quantities must match",
        ),
    ],
)
def test_pod_error_paths(field: str, value: Any, where: str, message: str) -> None:
    obj = pod_manifest()
    _set(obj, field, value)
    with pytest.raises(InputError) as info:
        parse.parse_pod(obj, "items[3]")
    [(got_where, got_message)] = info.value.problems
    assert got_where == f"items[3].{where}"
    assert message.replace(">= 0", "greater than or equal to 0") in got_message


def test_pod_error_without_prefix() -> None:
    obj = pod_manifest()
    _set(obj, f"{C0}.resources.requests.cpu", "x")
    with pytest.raises(InputError, match=r"^spec\.containers\[0\]\.resources\.requests\.cpu: "):
        parse.parse_pod(obj)


@pytest.mark.parametrize(
    ("mutate", "where", "message"),
    [
        (lambda o: o.update(spec={"taints": [{"key": "k"}]}), "spec.taints[0].effect", "Required"),
        (
            lambda o: o.update(spec={"taints": [{"key": "k", "effect": "Never"}]}),
            "spec.taints[0].effect",
            "Unsupported value",
        ),
        (
            lambda o: o.update(spec={"taints": [{"effect": "NoSchedule"}]}),
            "spec.taints[0].key",
            "Required",
        ),
        (
            lambda o: o["status"].update(allocatable={"cpu": "lots"}),
            "status.allocatable.cpu",
            "quantities must match",
        ),
        (
            lambda o: o["status"].update(images=[{"names": "a", "sizeBytes": 1}]),
            "status.images[0].names",
            "must be a list",
        ),
        (lambda o: o["metadata"].pop("name"), "metadata.name", "Required"),
        (
            lambda o: o.update(spec={"unschedulable": "yes"}),
            "spec.unschedulable",
            "must be a boolean",
        ),
    ],
)
def test_node_error_paths(mutate: Any, where: str, message: str) -> None:
    obj = node_manifest()
    mutate(obj)
    with pytest.raises(InputError) as info:
        parse.parse_node(obj, "items[0]")
    [(got_where, got_message)] = info.value.problems
    assert got_where == f"items[0].{where}"
    assert message in got_message
