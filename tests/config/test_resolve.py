"""multiPoint expansion and score weights (ported from upstream framework_test.go)."""

from __future__ import annotations

import pytest

from kubesched.api.errors import InputError
from kubesched.config import load, resolve
from kubesched.config import types as t
from kubesched.config.featuregates import FeatureGates
from tests.config.conftest import KNOWN

P = t.PluginRef
ALL_BUT_PRE_ENQUEUE = frozenset(t.EXTENSION_POINTS) - {"pre_enqueue"}

# The plugins of upstream's framework_test.go registry and the points each implements.
TEST_REGISTRY: dict[str, frozenset[str]] = {
    "test-plugin": ALL_BUT_PRE_ENQUEUE,
    "score-plugin-1": frozenset({"pre_score", "score"}),
    "score-with-normalize-plugin-1": frozenset({"score"}),
    "no-op-queue-sort-plugin": frozenset({"queue_sort"}),
    "bind-plugin": frozenset({"bind"}),
    "plugin-not-implementing-score": frozenset(),
    "duplicate-plugin": frozenset({"pre_filter"}),
}


def registry_impl(name: str, point: str) -> bool:
    return point in TEST_REGISTRY.get(name, frozenset())


def _on(*names: str) -> t.PluginSet:
    return t.PluginSet(enabled=tuple(P(n) for n in names))


def _off(*names: str) -> t.PluginSet:
    return t.PluginSet(disabled=tuple(P(n) for n in names))


def _everywhere(name: str, score: list[tuple[str, int]], skip: tuple[str, ...] = ()) -> dict:
    want: dict[str, list[tuple[str, int]]] = {p: [] for p in t.EXTENSION_POINTS}
    for point in ALL_BUT_PRE_ENQUEUE - set(skip):
        want[point] = [(name, 0)]
    want["score"] = score
    return want


TP, S1, SN1 = "test-plugin", "score-plugin-1", "score-with-normalize-plugin-1"

EXPANSION_CASES = [
    (
        "plugin expansion",
        t.Plugins(multi_point=t.PluginSet(enabled=(P(TP, 5),))),
        _everywhere(TP, [(TP, 5)]),
    ),
    (
        "disable MultiPoint plugin at some extension points",
        t.Plugins(multi_point=_on(TP), pre_score=_off(TP), score=_off(TP)),
        _everywhere(TP, [], skip=("pre_score",)),
    ),
    (
        "Multiple MultiPoint plugins",
        t.Plugins(multi_point=_on(TP, S1)),
        {**_everywhere(TP, [(TP, 1), (S1, 1)]), "pre_score": [(TP, 0), (S1, 0)]},
    ),
    (
        "disable MultiPoint extension",
        t.Plugins(multi_point=_on(TP, S1), pre_score=_off("*")),
        {**_everywhere(TP, [(TP, 1), (S1, 1)]), "pre_score": []},
    ),
    (
        "Reorder MultiPoint plugins (specified extension takes precedence)",
        t.Plugins(multi_point=_on(SN1, TP, S1), score=_on(S1, TP)),
        {**_everywhere(TP, [(S1, 1), (TP, 1), (SN1, 1)]), "pre_score": [(TP, 0), (S1, 0)]},
    ),
    (
        "Reorder MultiPoint plugins (specified extension only takes precedence when it exists "
        "in MultiPoint)",
        t.Plugins(multi_point=_on(TP, S1), score=_on(SN1, S1, TP)),
        {**_everywhere(TP, [(S1, 1), (TP, 1), (SN1, 1)]), "pre_score": [(TP, 0), (S1, 0)]},
    ),
    (
        "Override MultiPoint plugins weights",
        t.Plugins(multi_point=_on(TP, S1), score=t.PluginSet(enabled=(P(S1, 5), P(TP, 3)))),
        {**_everywhere(TP, [(S1, 5), (TP, 3)]), "pre_score": [(TP, 0), (S1, 0)]},
    ),
    (
        "disable and enable MultiPoint plugins with '*'",
        t.Plugins(
            multi_point=t.PluginSet(
                enabled=(P("no-op-queue-sort-plugin"), P("bind-plugin"), P(S1)), disabled=(P("*"),)
            )
        ),
        {
            **{p: [] for p in t.EXTENSION_POINTS},
            "queue_sort": [("no-op-queue-sort-plugin", 0)],
            "pre_score": [(S1, 0)],
            "score": [(S1, 1)],
            "bind": [("bind-plugin", 0)],
        },
    ),
    (
        "disable and enable MultiPoint plugin by name",
        t.Plugins(
            multi_point=t.PluginSet(
                enabled=(P("bind-plugin"), P("no-op-queue-sort-plugin"), P(S1)),
                disabled=(P(S1),),
            )
        ),
        {
            **{p: [] for p in t.EXTENSION_POINTS},
            "queue_sort": [("no-op-queue-sort-plugin", 0)],
            "pre_score": [(S1, 0)],
            "score": [(S1, 1)],
            "bind": [("bind-plugin", 0)],
        },
    ),
]


@pytest.mark.parametrize(
    ("plugins", "want"), [pytest.param(p, w, id=n) for n, p, w in EXPANSION_CASES]
)
def test_multipoint_expansion(plugins: t.Plugins, want: dict) -> None:
    got = resolve.resolve_plugins(t.Profile(plugins=plugins, plugin_config={}), registry_impl)
    assert got == want


SORT_AND_BIND = {"queue_sort": _on("no-op-queue-sort-plugin"), "bind": _on("bind-plugin")}

ERROR_CASES = [
    ("already registered", t.Plugins(multi_point=_on(TP, TP)), "already registered"),
    (
        "duplicate plugin name",
        t.Plugins(pre_filter=_on("duplicate-plugin", "duplicate-plugin"), **SORT_AND_BIND),
        'plugin "duplicate-plugin" already registered as "PreFilterPlugin"',
    ),
    (
        "enabled Score plugin doesn't extend the ScorePlugin interface",
        t.Plugins(score=_on("plugin-not-implementing-score"), **SORT_AND_BIND),
        'plugin "plugin-not-implementing-score" does not extend ScorePlugin plugin',
    ),
    (
        "enabled Score plugin doesn't exist in registry",
        t.Plugins(score=_on("notExist"), **SORT_AND_BIND),
        "does not extend ScorePlugin",
    ),
    ("no queue sort", t.Plugins(bind=_on("bind-plugin")), "only one queue sort plugin required"),
    ("no bind", t.Plugins(queue_sort=_on("no-op-queue-sort-plugin")), "at least one bind plugin"),
]


@pytest.mark.parametrize(("plugins", "want"), [pytest.param(p, w, id=n) for n, p, w in ERROR_CASES])
def test_resolve_errors(plugins: t.Plugins, want: str) -> None:
    with pytest.raises(InputError) as err:
        resolve.resolve_plugins(t.Profile(plugins=plugins, plugin_config={}), registry_impl)
    assert want in str(err.value)


def test_resolve_error_paths_use_the_given_prefix() -> None:
    plugins = t.Plugins(score=_on("plugin-not-implementing-score"), **SORT_AND_BIND)
    with pytest.raises(InputError) as err:
        resolve.resolve_plugins(t.Profile(plugins=plugins), registry_impl, path="profiles[2]")
    assert err.value.problems[0][0] == "profiles[2].plugins.score"


# Extension points of upstream's default plugins (v1.34), enough for these tests.
UPSTREAM_POINTS: dict[str, set[str]] = {
    "SchedulingGates": {"pre_enqueue"},
    "PrioritySort": {"queue_sort"},
    "NodeUnschedulable": {"filter"},
    "NodeName": {"filter"},
    "TaintToleration": {"filter", "pre_score", "score"},
    "NodeAffinity": {"pre_filter", "filter", "pre_score", "score"},
    "NodePorts": {"pre_filter", "filter"},
    "NodeResourcesFit": {"pre_filter", "filter", "pre_score", "score"},
    "PodTopologySpread": {"pre_filter", "filter", "pre_score", "score"},
    "InterPodAffinity": {"pre_filter", "filter", "pre_score", "score"},
    "DefaultPreemption": {"post_filter"},
    "NodeResourcesBalancedAllocation": {"pre_score", "score"},
    "ImageLocality": {"score"},
    "DefaultBinder": {"bind"},
}


def upstream_impl(name: str, point: str) -> bool:
    return point in UPSTREAM_POINTS.get(name, set())


DEFAULT_SCORE = [
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
]


@pytest.mark.parametrize(
    ("plugins", "point", "want"),
    [
        pytest.param(None, "score", DEFAULT_SCORE, id="defaults"),
        pytest.param(
            None,
            "filter",
            [(n, 0) for n in ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity")]
            + [(n, 0) for n in ("NodePorts", "NodeResourcesFit", "PodTopologySpread")]
            + [("InterPodAffinity", 0)],
            id="default filters",
        ),
        pytest.param(
            {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 5}]}},
            "score",
            [("NodeResourcesFit", 5)] + [s for s in DEFAULT_SCORE if s[0] != "NodeResourcesFit"],
            id="re-enabling at score moves it first with its weight",
        ),
        pytest.param(
            {
                "score": {
                    "disabled": [{"name": "*"}],
                    "enabled": [{"name": "ImageLocality", "weight": 4}],
                }
            },
            "score",
            [("ImageLocality", 4)],
            id="disable all scores then enable one",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 9}]}},
            "score",
            [("TaintToleration", 9), *DEFAULT_SCORE[1:]],
            id="multiPoint override of a default keeps its place",
        ),
        pytest.param(
            {"filter": {"disabled": [{"name": "NodeName"}, {"name": "NodePorts"}]}},
            "pre_filter",
            [(n, 0) for n in ("NodeAffinity", "NodePorts", "NodeResourcesFit")]
            + [("PodTopologySpread", 0), ("InterPodAffinity", 0)],
            id="disabling at filter leaves pre_filter alone",
        ),
    ],
)
def test_loaded_profiles_resolve_like_upstream(
    plugins: dict | None, point: str, want: list
) -> None:
    prof: dict = {"schedulerName": "s"} | ({"plugins": plugins} if plugins else {})
    cfg = load.load_config(
        {"apiVersion": t.API_VERSION, "kind": t.KIND, "profiles": [prof]},
        known_plugins=KNOWN,
        gates=FeatureGates("1.34"),  # the order these cases were read from
    )
    got = resolve.resolve_plugins(cfg.profiles[0], upstream_impl)
    assert got[point] == want
    assert got["queue_sort"] == [("PrioritySort", 0)]
    assert got["bind"] == [("DefaultBinder", 0)]
