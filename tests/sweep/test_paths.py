"""Sweep variables: classes and setting values by path."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.errors import InputError
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.sweep import paths

FIT_TYPE = "profiles[0].pluginConfig[NodeResourcesFit].args.scoringStrategy.type"


@pytest.mark.parametrize(
    ("path", "cls"),
    [
        ("percentageOfNodesToScore", "search"),
        ("profiles[0].percentageOfNodesToScore", "search"),
        ("parallelism", "parallelism"),
        ("podMaxBackoffSeconds", "backoff"),
        (FIT_TYPE, "scoring"),
        ("profiles[0].plugins.score.enabled[NodeResourcesBalancedAllocation].weight", "scoring"),
        ("profiles[0].pluginConfig[InterPodAffinity].args.hardPodAffinityWeight", "plugins"),
        ("profiles[0].plugins.filter.disabled[0].name", "plugins"),
        ("clientConnection.qps", "client"),
        ("client.burst", "client"),
        ("api.latencySeconds", "apiLatency"),
        ("shards", "shards"),
        ("policy", "policy"),
        ("delayCacheUntilActive", "config"),
    ],
)
def test_classes(path: str, cls: str) -> None:
    assert paths.classify(path) == cls


def test_tokens() -> None:
    assert paths.tokens("a.b[0][Name].c") == ["a", "b", 0, "=Name", "c"]
    with pytest.raises(ValueError, match="malformed"):
        paths.tokens("a..b")


@pytest.mark.parametrize(
    ("path", "value", "check"),
    [
        ("percentageOfNodesToScore", 20, lambda c: c.percentage_of_nodes_to_score == 20),
        (
            FIT_TYPE,
            "MostAllocated",
            lambda c: (
                c.profiles[0].plugin_config["NodeResourcesFit"].scoring_strategy.type
                == "MostAllocated"
            ),
        ),
        (
            "profiles[0].plugins.score.enabled[NodeResourcesBalancedAllocation].weight",
            7,
            lambda c: (
                {p.name: p.weight for p in c.profiles[0].plugins.score.enabled}[
                    "NodeResourcesBalancedAllocation"
                ]
                == 7
            ),
        ),
    ],
)
def test_set_path_gives_a_valid_configuration(path: str, value: Any, check: Any) -> None:
    doc = paths.base_config(None)
    paths.set_path(doc, path, value)
    cfg = load_config(doc, known_plugins=known_plugin_names())
    assert check(cfg)


def test_set_path_keeps_an_existing_named_entry() -> None:
    doc = {"profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {"a": 1}}]}]}
    paths.set_path(doc, "profiles[0].pluginConfig[NodeResourcesFit].args.b", 2)
    assert doc["profiles"][0]["pluginConfig"] == [
        {"name": "NodeResourcesFit", "args": {"a": 1, "b": 2}}
    ]


@pytest.mark.parametrize(
    "path", ["profiles[3].x", "percentageOfNodesToScore.x", "profiles[Name]", "profiles.x"]
)
def test_set_path_refuses_shapes_that_disagree(path: str) -> None:
    doc = {"percentageOfNodesToScore": 5, "profiles": [{}]}
    with pytest.raises(InputError) as err:
        paths.set_path(doc, path, 1)
    assert err.value.problems[0][0] == path
