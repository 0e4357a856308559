"""Raw plugin args (DefaultPreemption, InterPodAffinity, VolumeBinding, PodTopologySpread):
defaults and validation ported from validation_pluginargs_test.go."""

from __future__ import annotations

import pytest

from tests.config.test_pluginargs import _load_args, _problems


@pytest.mark.parametrize(
    ("name", "args", "want"),
    [
        (
            "DefaultPreemption",
            {"minCandidateNodesPercentage": -1},
            [("minCandidateNodesPercentage", "Invalid value: -1: not in valid range [0, 100]")],
        ),
        (
            "DefaultPreemption",
            {"minCandidateNodesAbsolute": -1},
            [("minCandidateNodesAbsolute", "Invalid value: -1: not in valid range [0, inf)")],
        ),
        (
            "DefaultPreemption",
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            [
                (
                    "minCandidateNodesPercentage",
                    "Invalid value: 0: "
                    "cannot be zero at the same time as minCandidateNodesAbsolute",
                ),
                (
                    "minCandidateNodesAbsolute",
                    "Invalid value: 0: "
                    "cannot be zero at the same time as minCandidateNodesPercentage",
                ),
            ],
        ),
        (
            "InterPodAffinity",
            {"hardPodAffinityWeight": 101},
            [("hardPodAffinityWeight", "Invalid value: 101: not in valid range [0, 100]")],
        ),
        (
            "VolumeBinding",
            {"bindTimeoutSeconds": -10},
            [
                (
                    "bindTimeoutSeconds",
                    "Invalid value: -10: "
                    "invalid BindTimeoutSeconds, should not be a negative value",
                )
            ],
        ),
        (
            # StorageCapacityScoring is on at the default release (v1.37): the shape is
            # checked as upstream's validateFunctionShape (off: refused, test_volumebinding)
            "VolumeBinding",
            {"shape": [{"utilization": 1, "score": 11}]},
            [("shape[0].score", "Invalid value: 11: not in valid range [0, 10]")],
        ),
        (
            "PodTopologySpread",
            {"defaultingType": "unknown"},
            [
                (
                    "defaultingType",
                    'Unsupported value: "unknown": supported values: "System", "List"',
                )
            ],
        ),
        (
            "PodTopologySpread",
            {
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}
                ]
            },
            [("defaultingType", 'Invalid value: "System": when .defaultConstraints are not empty')],
        ),
        (
            "PodTopologySpread",
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": -1,
                        "topologyKey": "",
                        "whenUnsatisfiable": "Sometimes",
                        "labelSelector": {},
                    },
                    {"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "Sometimes"},
                ],
            },
            [
                ("defaultConstraints[0].maxSkew", "Invalid value: -1: not in valid range (0, inf)"),
                ("defaultConstraints[0].topologyKey", "Required value: can not be empty"),
                (
                    "defaultConstraints[0].whenUnsatisfiable",
                    'Unsupported value: "Sometimes": '
                    'supported values: "DoNotSchedule", "ScheduleAnyway"',
                ),
                (
                    "defaultConstraints[0].labelSelector",
                    "Forbidden: constraint must not define a selector, "
                    "as they deduced for each pod",
                ),
                ("defaultConstraints[1].topologyKey", "Required value: can not be empty"),
                (
                    "defaultConstraints[1].whenUnsatisfiable",
                    'Unsupported value: "Sometimes": '
                    'supported values: "DoNotSchedule", "ScheduleAnyway"',
                ),
                ("defaultConstraints[1]", 'Duplicate value: "{, Sometimes}"'),
            ],
        ),
        (
            "InterPodAffinity",
            {"hardPodAffinityWeigth": 1},
            [("hardPodAffinityWeigth", "unknown field")],
        ),
    ],
)
def test_raw_args_problems(name: str, args: dict, want: list) -> None:
    assert _problems(name, args) == want


def test_raw_args_are_defaulted_and_read_only() -> None:
    got = _load_args("DefaultPreemption", {"minCandidateNodesPercentage": 0})
    assert got == {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 100}
    with pytest.raises(TypeError):
        got["x"] = 1  # type: ignore[index]
    # Args of a plugin upstream has no args type for are kept as given.
    assert _load_args("NodePorts", {"anything": [1]}) == {"anything": [1]}
