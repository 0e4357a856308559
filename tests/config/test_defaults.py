"""Upstream defaults and mergePlugins (ported from default_plugins_test.go); the other
versions' default profiles are in test_versions.py."""

from __future__ import annotations

import pytest

from kubesched.config import args, defaults, load
from kubesched.config import types as t
from kubesched.config.featuregates import FeatureGates
from tests.config.conftest import KNOWN

P = t.PluginRef


def test_default_multipoint_matches_upstream_v134() -> None:
    want = [
        ("SchedulingGates", None),
        ("PrioritySort", None),
        ("NodeUnschedulable", None),
        ("NodeName", None),
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodePorts", None),
        ("NodeResourcesFit", 1),
        ("VolumeRestrictions", None),
        ("NodeVolumeLimits", None),
        ("VolumeBinding", None),
        ("VolumeZone", None),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DynamicResources", None),  # DRA is GA (on) in v1.34: inserted before DefaultPreemption
        ("DefaultPreemption", None),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
        ("DefaultBinder", None),
    ]
    v134 = defaults.default_plugins(FeatureGates("1.34"))
    got = [(p.name, p.weight) for p in v134.multi_point.enabled]
    assert got == want
    for point in t.EXTENSION_POINTS:
        assert v134.get(point) == t.PluginSet()


def test_upstream_names_exclude_removed_volume_limit_plugins() -> None:
    assert len(defaults.UPSTREAM_PLUGIN_NAMES) == 19 + len(defaults.LATER_PLUGIN_NAMES)
    assert not set(defaults.REMOVED_PLUGIN_NAMES) & defaults.UPSTREAM_PLUGIN_NAMES


def test_load_none_gives_upstream_defaults() -> None:
    cfg = load.load_config(None, known_plugins=KNOWN)
    assert cfg == t.KubeSchedulerConfiguration()
    assert (cfg.parallelism, cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (
        16,
        1,
        10,
    )
    assert cfg.percentage_of_nodes_to_score is None
    assert (cfg.client_connection.qps, cfg.client_connection.burst) == (50.0, 100)
    assert cfg.leader_election.resource_lock == "leases"
    assert cfg.leader_election.resource_namespace == "kube-system"
    (profile,) = cfg.profiles
    assert profile.scheduler_name == "default-scheduler"
    assert profile.plugins == defaults.DEFAULT_PLUGINS
    assert profile.plugin_config["NodeResourcesFit"] == args.NodeResourcesFitArgs()
    assert profile.plugin_config["DefaultPreemption"] == {
        "minCandidateNodesPercentage": 10,
        "minCandidateNodesAbsolute": 100,
    }
    assert profile.plugin_config["VolumeBinding"] == {"bindTimeoutSeconds": 600}
    assert profile.plugin_config["PodTopologySpread"] == {"defaultingType": "System"}
    assert "NodePorts" not in profile.plugin_config  # no args type upstream
    assert cfg.profile("default-scheduler") is profile
    assert cfg.profile("nope") is None


def _set(enabled: list[P] | None = None, disabled: list[str] | None = None) -> t.PluginSet:
    return t.PluginSet(tuple(enabled or ()), tuple(P(n) for n in disabled or ()))


# (name, default Plugins kwargs, custom Plugins kwargs or None, expected Plugins kwargs)
MERGE_CASES = [
    (
        "AppendCustomPlugin",
        {"filter": _set([P("DefaultPlugin1"), P("DefaultPlugin2")])},
        {"filter": _set([P("CustomPlugin")])},
        {"filter": _set([P("DefaultPlugin1"), P("DefaultPlugin2"), P("CustomPlugin")])},
    ),
    (
        "InsertAfterDefaultPlugins2",
        {"filter": _set([P("DefaultPlugin1"), P("DefaultPlugin2")])},
        {"filter": _set([P("CustomPlugin"), P("DefaultPlugin2")], ["DefaultPlugin2"])},
        {
            "filter": _set(
                [P("DefaultPlugin1"), P("CustomPlugin"), P("DefaultPlugin2")], ["DefaultPlugin2"]
            )
        },
    ),
    (
        "InsertBeforeAllPlugins",
        {"filter": _set([P("DefaultPlugin1"), P("DefaultPlugin2")])},
        {"filter": _set([P("CustomPlugin"), P("DefaultPlugin1"), P("DefaultPlugin2")], ["*"])},
        {"filter": _set([P("CustomPlugin"), P("DefaultPlugin1"), P("DefaultPlugin2")], ["*"])},
    ),
    (
        "ReorderDefaultPlugins",
        {"filter": _set([P("DefaultPlugin1"), P("DefaultPlugin2")])},
        {"filter": _set([P("DefaultPlugin2"), P("DefaultPlugin1")], ["*"])},
        {"filter": _set([P("DefaultPlugin2"), P("DefaultPlugin1")], ["*"])},
    ),
    (
        "ApplyNilCustomPlugin",
        {"filter": _set([P("DefaultPlugin1"), P("DefaultPlugin2")])},
        None,
        {"filter": _set([P("DefaultPlugin1"), P("DefaultPlugin2")])},
    ),
    (
        "CustomPluginOverrideDefaultPlugin",
        {"filter": _set([P("Plugin1"), P("Plugin2"), P("Plugin3")])},
        {"filter": _set([P("Plugin1", 2), P("Plugin3", 3)])},
        {"filter": _set([P("Plugin1", 2), P("Plugin2"), P("Plugin3", 3)])},
    ),
    (
        "OrderPreserveAfterOverride",
        {"filter": _set([P("Plugin1"), P("Plugin2"), P("Plugin3")])},
        {"filter": _set([P("Plugin2", 2), P("Plugin1", 1)])},
        {"filter": _set([P("Plugin1", 1), P("Plugin2", 2), P("Plugin3")])},
    ),
    (
        "RepeatedCustomPlugin",
        {"filter": _set([P("Plugin1"), P("Plugin2"), P("Plugin3")])},
        {"filter": _set([P("Plugin1"), P("Plugin2", 2), P("Plugin3"), P("Plugin2", 4)])},
        {"filter": _set([P("Plugin1"), P("Plugin2", 4), P("Plugin3"), P("Plugin2", 2)])},
    ),
    (
        "Append custom MultiPoint plugin",
        {"multi_point": _set([P("DefaultPlugin1"), P("DefaultPlugin2")])},
        {"multi_point": _set([P("CustomPlugin")])},
        {"multi_point": _set([P("DefaultPlugin1"), P("DefaultPlugin2"), P("CustomPlugin")])},
    ),
    (
        "Append disabled Multipoint plugins",
        {"multi_point": _set([P("DefaultPlugin1"), P("DefaultPlugin2")])},
        {
            "multi_point": _set([P("CustomPlugin"), P("CustomPlugin2")], ["DefaultPlugin2"]),
            "score": _set(disabled=["CustomPlugin2"]),
        },
        {
            "multi_point": _set(
                [P("DefaultPlugin1"), P("CustomPlugin"), P("CustomPlugin2")], ["DefaultPlugin2"]
            ),
            "score": _set(disabled=["CustomPlugin2"]),
        },
    ),
    (
        "override default MultiPoint plugins with custom value",
        {"multi_point": _set([P("DefaultPlugin")])},
        {"multi_point": _set([P("DefaultPlugin", 5)])},
        {"multi_point": _set([P("DefaultPlugin", 5)])},
    ),
    (
        "disabled MultiPoint plugin in default set",
        {"multi_point": _set([P("DefaultPlugin")], ["DefaultPlugin2"])},
        {"multi_point": _set([P("CustomPlugin")])},
        {"multi_point": _set([P("DefaultPlugin"), P("CustomPlugin")], ["DefaultPlugin2"])},
    ),
    (
        "disabled MultiPoint plugin in default set for specific extension point",
        {"multi_point": _set([P("DefaultPlugin")]), "score": _set(disabled=["DefaultPlugin2"])},
        {"multi_point": _set([P("CustomPlugin")])},
        {
            "multi_point": _set([P("DefaultPlugin"), P("CustomPlugin")]),
            "score": _set(disabled=["DefaultPlugin2"]),
        },
    ),
    (
        "multipoint with only disabled gets merged",
        {"multi_point": _set([P("DefaultPlugin")])},
        {"multi_point": _set(disabled=["DefaultPlugin"])},
        {"multi_point": _set(disabled=["DefaultPlugin"])},
    ),
]


@pytest.mark.parametrize(
    ("default", "custom", "want"),
    [pytest.param(dflt, cust, want, id=name) for name, dflt, cust, want in MERGE_CASES],
)
def test_merge_plugins(default: dict, custom: dict | None, want: dict) -> None:
    got = defaults.merge_plugins(
        t.Plugins(**default), None if custom is None else t.Plugins(**custom)
    )
    assert got == t.Plugins(**want)


def test_reenabled_default_keeps_position_with_user_weight() -> None:
    custom = t.Plugins(multi_point=_set([P("ImageLocality", 7), P("Extra")]))
    merged = defaults.merge_plugins(defaults.default_plugins(FeatureGates("1.34")), custom)
    names = [p.name for p in merged.multi_point.enabled]
    assert names[-3:] == ["ImageLocality", "DefaultBinder", "Extra"]
    assert merged.multi_point.enabled[-3] == P("ImageLocality", 7)


def test_disable_star_drops_every_default() -> None:
    custom = t.Plugins(multi_point=_set([P("PrioritySort"), P("DefaultBinder")], ["*"]))
    merged = defaults.merge_plugins(defaults.DEFAULT_PLUGINS, custom)
    assert [p.name for p in merged.multi_point.enabled] == ["PrioritySort", "DefaultBinder"]
