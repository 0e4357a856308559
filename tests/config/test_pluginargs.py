"""Plugin args: decoding, defaults, validation (ported from validation_pluginargs_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.config import args as a
from kubesched.config import load, pluginargs
from kubesched.config import types as t
from tests.config.conftest import KNOWN

R = a.ResourceSpec
U = a.UtilizationShapePoint
LEAST = a.ScoringStrategy()


def _load_args(name: str, args: dict[str, Any] | None) -> object:
    raw = {
        "apiVersion": t.API_VERSION,
        "kind": t.KIND,
        "profiles": [{"pluginConfig": [{"name": name, "args": args}]}],
    }
    return load.load_config(raw, known_plugins=KNOWN).profiles[0].plugin_config[name]


def _problems(name: str, args: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(InputError) as err:
        _load_args(name, args)
    prefix = "profiles[0].pluginConfig[0].args."
    assert all(p.startswith(prefix) for p, _ in err.value.problems), err.value.problems
    return [(p.removeprefix(prefix), m) for p, m in err.value.problems]


@pytest.mark.parametrize(
    ("fit", "want"),
    [
        (
            a.NodeResourcesFitArgs(ignored_resources=("longvalue" + "a" * 64,)),
            ["ignoredResources[0]"],
        ),
        (a.NodeResourcesFitArgs(ignored_resources=("example.com/",)), ["ignoredResources[0]"] * 2),
        (
            a.NodeResourcesFitArgs(ignored_resources=("example.com/aaa/bbb",)),
            ["ignoredResources[0]"],
        ),
        (a.NodeResourcesFitArgs(ignored_resources=("example.com",)), []),
        (a.NodeResourcesFitArgs(ignored_resource_groups=("example.com",)), []),
        (
            a.NodeResourcesFitArgs(ignored_resource_groups=("example.com/",)),
            ["ignoredResourceGroups[0]"] * 3,
        ),
        (a.NodeResourcesFitArgs(ignored_resource_groups=("a" * 64,)), ["ignoredResourceGroups[0]"]),
        (
            a.NodeResourcesFitArgs(ignored_resource_groups=("example.com/aa",)),
            ["ignoredResourceGroups[0]"],
        ),
    ],
)
def test_fit_ignored_resources(fit: a.NodeResourcesFitArgs, want: list[str]) -> None:
    assert [p for p, _ in pluginargs.validate_fit_args(fit)] == want


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("longvalue" + "a" * 64, "name part must be no more than 63 characters"),
        ("example.com/", "name part must be non-empty"),
        ("example.com/aaa/bbb", "a qualified name must consist of alphanumeric characters"),
    ],
)
def test_fit_ignored_resource_messages(value: str, fragment: str) -> None:
    problems = pluginargs.validate_fit_args(a.NodeResourcesFitArgs(ignored_resources=(value,)))
    assert any(fragment in msg for _, msg in problems), problems


def test_group_with_slash_message() -> None:
    args = a.NodeResourcesFitArgs(ignored_resource_groups=("example.com/aa",))
    assert pluginargs.validate_fit_args(args) == [
        (
            "ignoredResourceGroups[0]",
            "Invalid value: \"example.com/aa\": resource group name can't contain '/'",
        )
    ]


@pytest.mark.parametrize("strategy", [a.LEAST_ALLOCATED, a.MOST_ALLOCATED])
@pytest.mark.parametrize(
    ("resources", "want"),
    [
        ((R("cpu", 1), R("memory", 10)), []),
        ((R("cpu", 0),), ["scoringStrategy.resources[0].weight"]),
        ((R("cpu", 101),), ["scoringStrategy.resources[0].weight"]),
        (
            (R("cpu", 0), R("memory", 101)),
            ["scoringStrategy.resources[0].weight", "scoringStrategy.resources[1].weight"],
        ),
    ],
)
def test_allocated_strategies(strategy: str, resources: tuple, want: list[str]) -> None:
    args = a.NodeResourcesFitArgs(scoring_strategy=a.ScoringStrategy(strategy, resources))
    assert [p for p, _ in pluginargs.validate_fit_args(args)] == want


SHAPE = "scoringStrategy.requestedToCapacityRatio.shape"


@pytest.mark.parametrize(
    ("resources", "shape", "want"),
    [
        ((), (), [SHAPE]),
        ((R("cpu", 101),), (U(30, 3),), ["scoringStrategy.resources[0].weight"]),
        ((R("cpu", 0),), (U(30, 3),), ["scoringStrategy.resources[0].weight"]),
        ((), (U(30, 3),), []),
        ((), (U(-1, 3),), [f"{SHAPE}[0].utilization"]),
        ((), (U(101, 3),), [f"{SHAPE}[0].utilization"]),
        ((), (U(10, 3), U(10, 3)), [f"{SHAPE}[1].utilization"]),
        ((), (U(10, 3), U(20, 3), U(30, 3)), []),
        ((), (U(10, 3), U(20, 3), U(15, 3)), [f"{SHAPE}[2].utilization"]),
        ((), (U(10, -1),), [f"{SHAPE}[0].score"]),
        ((), (U(10, 11),), [f"{SHAPE}[0].score"]),
    ],
)
def test_requested_to_capacity_ratio(resources: tuple, shape: tuple, want: list[str]) -> None:
    strategy = a.ScoringStrategy(a.REQUESTED_TO_CAPACITY_RATIO, resources, shape)
    got = pluginargs.validate_fit_args(a.NodeResourcesFitArgs(scoring_strategy=strategy))
    assert [p for p, _ in got] == want


def test_fit_args_decode_with_defaults() -> None:
    got = _load_args(
        "NodeResourcesFit",
        {
            "kind": "NodeResourcesFitArgs",
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "nvidia.com/gpu", "weight": 3}, {"name": "cpu"}],
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0}, {"utilization": 100, "score": 10}]
                },
            },
            "ignoredResourceGroups": ["example.com"],
        },
    )
    assert got == a.NodeResourcesFitArgs(
        ignored_resource_groups=("example.com",),
        scoring_strategy=a.ScoringStrategy(
            a.REQUESTED_TO_CAPACITY_RATIO,
            (R("nvidia.com/gpu", 3), R("cpu", 1)),
            (U(0, 0), U(100, 10)),
        ),
    )
    assert _load_args("NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated"}}) == (
        a.NodeResourcesFitArgs(scoring_strategy=a.ScoringStrategy(a.MOST_ALLOCATED))
    )
    assert _load_args("NodeResourcesFit", None) == a.NodeResourcesFitArgs()


@pytest.mark.parametrize(
    ("args", "want"),
    [
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            [
                (
                    "scoringStrategy.requestedToCapacityRatio",
                    "Required value: must be specified when type is RequestedToCapacityRatio",
                )
            ],
        ),
        (
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "requestedToCapacityRatio": {"shape": []},
                }
            },
            [
                (
                    "scoringStrategy.requestedToCapacityRatio",
                    "Forbidden: must be nil when type is not RequestedToCapacityRatio",
                )
            ],
        ),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 200}]}},
            [
                (
                    "scoringStrategy.type",
                    'Unsupported value: "": supported values: "LeastAllocated", '
                    '"MostAllocated", "RequestedToCapacityRatio"',
                ),
                (
                    "scoringStrategy.resources[0].weight",
                    "Invalid value: 200: resource weight of cpu not in valid range (0, 100]",
                ),
            ],
        ),
        (
            {"scoringStrategy": {"type": "LeastAllocated", "resourcez": []}, "kind": "FooArgs"},
            [
                (
                    "kind",
                    'Invalid value: "FooArgs": '
                    "args for plugin NodeResourcesFit must be NodeResourcesFitArgs",
                ),
                ("scoringStrategy.resourcez", "unknown field"),
            ],
        ),
    ],
)
def test_fit_args_problems(args: dict, want: list) -> None:
    assert _problems("NodeResourcesFit", args) == want


@pytest.mark.parametrize(
    ("resources", "want"),
    [
        ([{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}], []),
        (
            [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
            [("resources[0].weight", "Invalid value: 2: must be 1")],
        ),
        (
            [{"name": "cpu"}, {"name": "cpu", "weight": 1}],
            [("resources[1].name", 'Duplicate value: "cpu"')],
        ),
    ],
)
def test_balanced_allocation(resources: list, want: list) -> None:
    if want:
        assert _problems("NodeResourcesBalancedAllocation", {"resources": resources}) == want
    else:
        got = _load_args("NodeResourcesBalancedAllocation", {"resources": resources})
        assert got == a.NodeResourcesBalancedAllocationArgs((R("cpu", 1), R("memory", 1)))


VALID_AFFINITY = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "label-1", "operator": "In", "values": ["label-1-val"]}]}
        ]
    },
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {
            "weight": 1,
            "preference": {
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]
            },
        }
    ],
}


def test_node_affinity_valid() -> None:
    got = _load_args("NodeAffinity", {"addedAffinity": VALID_AFFINITY})
    assert got == a.NodeAffinityArgs(
        api.NodeAffinity(
            required=(api.NodeSelectorTerm((api.Requirement("label-1", "In", ("label-1-val",)),)),),
            preferred=(
                api.PreferredSchedulingTerm(
                    1,
                    api.NodeSelectorTerm(
                        match_fields=(api.Requirement("metadata.name", "In", ("node-1",)),)
                    ),
                ),
            ),
        )
    )
    assert _load_args("NodeAffinity", {}) == a.NodeAffinityArgs()


def test_node_affinity_invalid_reports_upstream_paths() -> None:
    added = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "invalid/label/key", "operator": "In", "values": ["v"]}
                    ]
                },
                {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["x1"]}]},
                {"matchExpressions": [{"key": "k", "operator": "Near"}]},
                {},
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 1,
                "preference": {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["node-1", "node-2"]}
                    ]
                },
            },
            {"weight": 0, "preference": {"matchFields": [{"key": "x", "operator": "Exists"}]}},
        ],
    }
    got = _problems("NodeAffinity", {"addedAffinity": added})
    req = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    assert [p for p, _ in got] == [
        f"{req}[0].matchExpressions[0].key",
        f"{req}[1].matchExpressions[0].values[0]",
        f"{req}[2].matchExpressions[0].operator",
        "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values",
    ]
    assert (
        got[1][1] == "Invalid value: \"x1\": for 'Gt', 'Lt' operators, the value must be an integer"
    )
    assert got[2][1] == 'Unsupported value: "Near"'
    assert got[3][1] == 'Invalid value: ["node-1","node-2"]: must have one element'
