"""The Kubernetes version of a run: parsing, inference, the generated gate table, upstream's
``--feature-gates`` refusals (component-base/featuregate texts) and each version's default
profile as its ``pkg/scheduler/apis/config/v1/default_plugins.go`` builds it."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from kubesched.api.errors import InputError
from kubesched.config import defaults, featuregates, load, versions
from kubesched.config import types as t
from kubesched.config.featuregates import FeatureGates
from tests.config.conftest import KNOWN

V134 = [
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
    ("DynamicResources", None),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
]
# v1.35: DynamicResources gets weight 2; NodeDeclaredFeatures is Alpha (off) there.
V135 = [("DynamicResources", 2) if n == "DynamicResources" else (n, w) for n, w in V134]
# v1.36: NodeDeclaredFeatures is Beta (on): appended.
V136 = [*V135, ("NodeDeclaredFeatures", None)]
# v1.37: NodeName before NodeUnschedulable; NodeDeclaredFeatures GA.
V137 = [V136[0], V136[1], V136[3], V136[2], *V136[4:]]

NAMES = [n for n, _ in V137]


@pytest.mark.parametrize(
    ("version", "want"), [("1.34", V134), ("1.35", V135), ("1.36", V136), ("1.37", V137)]
)
def test_default_profile_per_version(version: str, want: list) -> None:
    got = defaults.default_multi_point(FeatureGates(version))
    assert [(p.name, p.weight) for p in got] == want


def test_default_version_is_the_newest() -> None:
    assert versions.DEFAULT_VERSION == "1.37" == versions.SUPPORTED_VERSIONS[-1]
    assert load.load_config(None, known_plugins=KNOWN).feature_gates == FeatureGates("1.37")
    assert [(p.name, p.weight) for p in defaults.DEFAULT_MULTI_POINT] == V137


def test_gates_add_the_workload_and_resize_plugins() -> None:
    gates = featuregates.with_settings(
        "1.37",
        {
            "GenericWorkload": True,
            "TopologyAwareWorkloadScheduling": True,
            "InPlacePodVerticalScalingSchedulerPreemption": True,
        },
    )
    got = [(p.name, p.weight) for p in defaults.default_multi_point(gates)]
    fit = got.index(("NodeResourcesFit", 1))
    assert got[fit - 1] == ("DeferredPodScheduling", None)
    assert got[-4:] == [
        ("NodeDeclaredFeatures", None),
        ("GangScheduling", None),
        ("TopologyPlacementGenerator", None),
        ("PodGroupPodsCount", 1),
    ]
    v135 = featuregates.with_settings("1.35", {"GangScheduling": True, "GenericWorkload": True})
    assert defaults.default_multi_point(v135)[-1] == t.PluginRef("GangScheduling")
    off = FeatureGates("1.36", (("NodeDeclaredFeatures", False),))
    assert [(p.name, p.weight) for p in defaults.default_multi_point(off)] == V135
    # ... a setting upstream refuses, as gates enabled by default depend on it
    assert "depends on features that are disabled: [NodeDeclaredFeatures]" in _refusal(
        "1.36", "NodeDeclaredFeatures=false"
    )


def test_later_plugin_refused_in_an_older_version() -> None:
    raw = {
        "apiVersion": t.API_VERSION,
        "kind": t.KIND,
        "profiles": [
            {
                "schedulerName": "s",
                "plugins": {"filter": {"enabled": [{"name": "NodeDeclaredFeatures"}]}},
            }
        ],
    }
    with pytest.raises(InputError, match=r"not an in-tree plugin of Kubernetes 1\.34"):
        load.load_config(raw, known_plugins=KNOWN, gates=FeatureGates("1.34"))
    load.load_config(raw, known_plugins=KNOWN, gates=FeatureGates("1.36"))


@pytest.mark.parametrize("text", ["1.34", "v1.35", "1.36.3", "v1.37.2-gke.100"])
def test_parse_version(text: str) -> None:
    assert versions.parse_version(text) == text.lstrip("v")[:4]


@pytest.mark.parametrize("text", ["1.33", "1.38", "2", "latest"])
def test_parse_version_refuses_unsupported(text: str) -> None:
    with pytest.raises(InputError, match=r"supported versions are 1\.34, 1\.35, 1\.36, 1\.37"):
        versions.parse_version(text)


def test_version_of_nodes_and_server() -> None:
    assert versions.version_of_nodes(["v1.36.3", "v1.36.1", "v1.37.2"]) == "1.36"
    assert versions.version_of_nodes(["v1.35.0", "v1.37.2"]) == "1.37"  # tie: the newest
    assert versions.version_of_nodes(["v1.20.0", ""]) is None
    assert versions.version_of_server({"gitVersion": "v1.35.4", "major": "1"}) == "1.35"
    assert versions.version_of_server({"major": "1", "minor": "34+"}) == "1.34"
    assert versions.version_of_server({"gitVersion": "v1.30.0"}) is None


def test_gate_table_read_from_upstream() -> None:
    ndf = {v: featuregates.gate_table(v).get("NodeDeclaredFeatures") for v in ("1.34", "1.35")}
    assert ndf == {"1.34": None, "1.35": featuregates.GateSpec(False, "Alpha", False)}
    assert featuregates.gate_table("1.36")["NodeDeclaredFeatures"] == (True, "Beta", False)
    assert featuregates.gate_table("1.37")["NodeDeclaredFeatures"] == (True, "GA", True)
    assert featuregates.gate_table("1.37")["DRAExtendedResource"] == (True, "GA", True)
    assert featuregates.gate_table("1.34")["DRAExtendedResource"] == (False, "Alpha", False)
    # component-base gates the scheduler registers too
    assert "ContextualLogging" in featuregates.gate_table("1.34")
    assert "AllAlpha" in featuregates.gate_table("1.37")


def _refusal(version: str, flag: str) -> str:
    with pytest.raises(InputError) as err:
        featuregates.with_settings(version, featuregates.parse_flag(flag))
    ((path, message),) = err.value.problems
    assert path == "--feature-gates"
    return message


def test_refusals_use_upstream_text() -> None:
    assert _refusal("1.37", "Nope=true") == "unrecognized feature gate: Nope"
    assert _refusal("1.34", "NodeDeclaredFeatures=true") == (
        "unrecognized feature gate: NodeDeclaredFeatures"
    )
    assert _refusal("1.37", "NodeDeclaredFeatures=false") == (
        "cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true"
    )
    assert _refusal("1.37", "X") == "missing bool value for X"
    assert _refusal("1.37", "X=maybe") == (
        'invalid value of X=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax'
    )
    assert _refusal(
        "1.37",
        "DRAConsumableCapacity=true,DynamicResourceAllocation=true,"
        "DRAFractionalCapacityRange=true,DRAConsumableCapacity=false",
    ) == (
        "DRAFractionalCapacityRange is enabled, but depends on features that are disabled: "
        "[DRAConsumableCapacity]"
    )


def test_alpha_gate_needs_no_all_alpha_and_all_alpha_switches_unset_ones() -> None:
    gates = featuregates.with_settings("1.35", featuregates.parse_flag("NodeDeclaredFeatures=1"))
    assert gates.enabled("NodeDeclaredFeatures")
    assert not FeatureGates("1.35").enabled("NodeDeclaredFeatures")
    every = FeatureGates("1.35", (("AllAlpha", True), ("GangScheduling", False)))
    assert every.enabled("NodeDeclaredFeatures") and not every.enabled("GangScheduling")
    assert not FeatureGates("1.34").enabled("NodeDeclaredFeatures")  # unknown there: off


def test_gates_pickle_and_describe() -> None:
    gates = featuregates.with_settings("1.36", {"GenericWorkload": True})
    assert pickle.loads(pickle.dumps(gates)) == gates
    assert gates.describe() == "1.36 (GenericWorkload=true)"
    assert FeatureGates().describe() == "1.37"


def _dra_args(version: str, args: dict | None = None, gates: dict | None = None) -> Any:
    raw: dict = {"apiVersion": t.API_VERSION, "kind": t.KIND}
    if args is not None:
        raw["profiles"] = [
            {"schedulerName": "s", "pluginConfig": [{"name": "DynamicResources", "args": args}]}
        ]
    fg = featuregates.with_settings(version, gates or {})
    cfg = load.load_config(raw, known_plugins=KNOWN, gates=fg)
    return cfg.profiles[0].plugin_config["DynamicResources"]


def test_dynamic_resources_binding_timeout_follows_the_version_and_gates() -> None:
    """v1.35+'s SetDefaults_DynamicResourcesArgs / ValidateDynamicResourcesArgs."""
    assert dict(_dra_args("1.34")) == {}
    assert dict(_dra_args("1.35")) == {}  # DRADeviceBindingConditions is Alpha (off) there
    assert dict(_dra_args("1.36")) == {"bindingTimeout": "10m0s"}
    with pytest.raises(InputError, match="unknown field"):
        _dra_args("1.34", {"bindingTimeout": "5m"})
    with pytest.raises(InputError, match="feature gate is disabled"):
        _dra_args("1.35", {"bindingTimeout": "5m"})
    with pytest.raises(InputError, match="must be at least 1 second"):
        _dra_args("1.37", {"bindingTimeout": "500ms"})
    with pytest.raises(InputError, match="DRASchedulingFilterTimeout feature gate is disabled"):
        _dra_args("1.37", {"filterTimeout": "5s"}, {"DRASchedulerFilterTimeout": False})
