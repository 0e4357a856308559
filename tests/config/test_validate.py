"""Whole-configuration validation (ported from upstream validation_test.go, plus ours)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kubesched.api.errors import InputError
from kubesched.config import load
from kubesched.config.types import KubeSchedulerConfiguration
from tests.config.conftest import KNOWN, base_config

Cfg = dict[str, Any]


def _set(path: str, value: Any) -> Callable[[Cfg], None]:
    """A mutation that sets a dotted path (``profiles.1.schedulerName``) of the config."""

    def apply(cfg: Cfg) -> None:
        *parents, last = path.split(".")
        node: Any = cfg
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return apply


REMOVED = (
    'was invalid in version "kubescheduler.config.k8s.io/v1" '
    '(KubeSchedulerConfiguration is version "kubescheduler.config.k8s.io/v1")'
)

# (name, mutation, expected (path, message) problems, exactly)
CASES: list[tuple[str, Callable[[Cfg], None], list[tuple[str, str]]]] = [
    (
        "bad-parallelism-invalid-value",
        _set("parallelism", 0),
        [("parallelism", "Invalid value: 0: should be an integer value greater than zero")],
    ),
    (
        "resource-lock-not-leases",
        _set("leaderElection.resourceLock", "configmap"),
        [
            (
                "leaderElection.resourceLock",
                'Invalid value: "configmap": resourceLock value must be "leases"',
            )
        ],
    ),
    (
        "lease-not-longer-than-renew",
        _set("leaderElection.leaseDuration", "10s"),
        [
            (
                "leaderElection.leaseDuration",
                "Invalid value: 15s: LeaseDuration must be greater than RenewDeadline",
            )
        ],
    ),
    (
        "bad-percentage-of-nodes-to-score",
        _set("percentageOfNodesToScore", 101),
        [("percentageOfNodesToScore", "Invalid value: 101: not in valid range [0-100]")],
    ),
    (
        "bad-profile-percentage",
        _set("profiles.0.percentageOfNodesToScore", -1),
        [("profiles[0].percentageOfNodesToScore", "Invalid value: -1: not in valid range [0-100]")],
    ),
    (
        "scheduler-name-not-set",
        _set("profiles.1.schedulerName", ""),
        [("profiles[1].schedulerName", "Required value")],
    ),
    (
        "repeated-scheduler-name",
        _set("profiles.0.schedulerName", "other"),
        [("profiles[1].schedulerName", 'Duplicate value: "other"')],
    ),
    (
        "different-queue-sort",
        _set("profiles.1.plugins.queueSort.enabled.0.name", "AnotherSort"),
        [
            (
                "profiles[1].plugins.queueSort",
                'Invalid value: {"enabled":[{"name":"AnotherSort"}],"disabled":[]}: '
                "must be the same for all profiles",
            )
        ],
    ),
    (
        "one-empty-queue-sort",
        lambda c: c["profiles"][0].pop("plugins"),
        [
            (
                "profiles[1].plugins.queueSort",
                'Invalid value: {"enabled":[{"name":"CustomSort"}],"disabled":[]}: '
                "must be the same for all profiles",
            )
        ],
    ),
    (
        "two-queue-sorts",
        lambda c: [
            p["plugins"]["queueSort"]["enabled"].append({"name": "AnotherSort"})
            for p in c["profiles"]
        ],
        [
            (
                "profiles[0].plugins.queueSort.enabled",
                "Invalid value: 2: only one queue sort plugin can be enabled",
            )
        ],
    ),
    (
        "extender-negative-weight",
        _set("extenders.0.weight", -1),
        [("extenders[0].weight", "Invalid value: -1: must have a positive weight applied to it")],
    ),
    (
        "extender-duplicate-managed-resources",
        _set(
            "extenders.0.managedResources",
            [{"name": "example.com/foo"}, {"name": "example.com/foo"}],
        ),
        [
            (
                "extenders[0].managedResources[1].name",
                'Invalid value: "example.com/foo": duplicate extender managed resource name',
            )
        ],
    ),
    (
        "extender-invalid-resource-name",
        _set("extenders.0.managedResources", [{"name": "kubernetes.io/foo"}]),
        [
            (
                "extenders[0].managedResources[0].name",
                'Invalid value: "kubernetes.io/foo": is an invalid extended resource name',
            )
        ],
    ),
    (
        "extender-duplicate-bind",
        lambda c: c["extenders"].extend([{"bindVerb": "foo"}, {"bindVerb": "bar"}]),
        [
            (
                "extenders",
                'Invalid value: "found 2 extenders implementing bind": '
                "only one extender can implement bind",
            )
        ],
    ),
    (
        "invalid-node-percentage",
        _set("profiles.0.pluginConfig.0.args.minCandidateNodesPercentage", 200),
        [
            (
                "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage",
                "Invalid value: 200: not in valid range [0, 100]",
            )
        ],
    ),
    (
        "duplicated-plugin-config",
        lambda c: c["profiles"][0]["pluginConfig"].append({"name": "DefaultPreemption"}),
        [("profiles[0].pluginConfig[1]", 'Duplicate value: "DefaultPreemption"')],
    ),
    (
        "mismatch-queue-sort",
        lambda c: c["profiles"][0]["plugins"].update(
            queueSort={"enabled": [{"name": "PrioritySort"}]}
        ),
        [
            (
                "profiles[1].plugins.queueSort",
                'Invalid value: {"enabled":[{"name":"CustomSort"}],"disabled":[]}: '
                "must be the same for all profiles",
            )
        ],
    ),
    (
        "queue-sort-args-differ",
        lambda c: [
            c["profiles"][0]["pluginConfig"].append({"name": "CustomSort", "args": {"a": 1}}),
            c["profiles"][1].update(pluginConfig=[{"name": "CustomSort", "args": {"a": 2}}]),
        ],
        [
            (
                "profiles[1].pluginConfig.args",
                'Invalid value: {"a":2}: queueSort must be the same for all profiles',
            )
        ],
    ),
    (
        "bad-removed-plugins",
        lambda c: c["profiles"][0]["plugins"]["score"].update(
            enabled=[{"name": "EBSLimits", "weight": 2}]
        ),
        [("profiles[0].plugins.score.enabled[0]", f'Invalid value: "EBSLimits": {REMOVED}')],
    ),
    (
        "bad-plugins-config",
        lambda c: c["profiles"][0]["pluginConfig"].append({"name": "GCEPDLimits"}),
        [("profiles[0].pluginConfig[1]", f'Invalid value: "GCEPDLimits": {REMOVED}')],
    ),
    (
        "initial-backoff-zero",
        _set("podInitialBackoffSeconds", 0),
        [("podInitialBackoffSeconds", "Invalid value: 0: must be greater than 0")],
    ),
    (
        "max-backoff-below-initial",
        _set("podInitialBackoffSeconds", 5),
        [
            (
                "podMaxBackoffSeconds",
                "Invalid value: 1: must be greater than or equal to PodInitialBackoffSeconds",
            )
        ],
    ),
    (
        "negative-burst",
        _set("clientConnection.burst", -1),
        [("clientConnection.burst", "Invalid value: -1: must be non-negative")],
    ),
    # kubesched additions
    (
        "unknown-plugin-enabled",
        _set("profiles.0.plugins.filter", {"enabled": [{"name": "NodeNmae"}]}),
        [
            (
                "profiles[0].plugins.filter.enabled[0]",
                'Invalid value: "NodeNmae": no plugin of that name is registered',
            )
        ],
    ),
    (
        "unknown-plugin-disabled",
        _set("profiles.0.plugins.filter", {"disabled": [{"name": "Typo"}]}),
        [
            (
                "profiles[0].plugins.filter.disabled[0]",
                'Invalid value: "Typo": no plugin of that name is registered',
            )
        ],
    ),
    (
        "negative-score-weight",
        _set(
            "profiles.0.plugins.score",
            {"enabled": [{"name": "ImageLocality"}, {"name": "NodeAffinity", "weight": -2}]},
        ),
        [
            (
                "profiles[0].plugins.score.enabled[1].weight",
                "Invalid value: -2: must be positive (0 or unset means the default, 1)",
            )
        ],
    ),
]


@pytest.mark.parametrize(
    "entry",
    [
        {"name": "Nope", "args": {"anything": 1}},  # an unknown plugin: upstream accepts
        {  # Fit's values are checked only where the profile enables it, as upstream
            "name": "NodeResourcesFit",
            "args": {"scoringStrategy": {"type": "Bogus"}},
        },
    ],
)
def test_plugin_config_of_a_plugin_no_profile_enables_is_accepted(
    valid: Cfg, entry: dict[str, Any]
) -> None:
    prof = valid["profiles"][1]
    prof["pluginConfig"] = [entry]
    prof.setdefault("plugins", {})["multiPoint"] = {"disabled": [{"name": "NodeResourcesFit"}]}
    load.load_config(valid, known_plugins=KNOWN)
    prof["plugins"]["multiPoint"] = {}
    if entry["name"] == "NodeResourcesFit":  # enabled again: refused
        with pytest.raises(InputError):
            load.load_config(valid, known_plugins=KNOWN)


def test_base_config_is_valid() -> None:
    cfg = load.load_config(base_config(), known_plugins=KNOWN)
    assert [p.scheduler_name for p in cfg.profiles] == ["me", "other"]
    assert cfg.parallelism == 8
    assert cfg.leader_election.lease_duration_seconds == 30.0


@pytest.mark.parametrize(("mutate", "want"), [pytest.param(m, w, id=n) for n, m, w in CASES])
def test_validation_cases(valid: Cfg, mutate: Callable[[Cfg], None], want: list) -> None:
    mutate(valid)
    with pytest.raises(InputError) as err:
        load.load_config(valid, known_plugins=KNOWN)
    assert err.value.problems == want


def _score_enabled(cfg: KubeSchedulerConfiguration) -> list[tuple[str, int | None]]:
    return [(r.name, r.weight) for r in cfg.profiles[0].plugins.score.enabled]


# (mutation, what the loaded configuration then holds)
VALID_VARIANTS: list[Any] = [
    pytest.param(
        lambda c: c["profiles"][0]["plugins"]["score"].update(
            enabled=[{"name": "PodTopologySpread", "weight": 2}]
        ),
        lambda cfg: (
            _score_enabled(cfg) == [("PodTopologySpread", 2)]
            and [r.name for r in cfg.profiles[0].plugins.score.disabled] == ["*"]
        ),
        id="good-removed-plugins",
    ),
    pytest.param(
        _set("profiles.0.plugins.filter", {"disabled": [{"name": "VolumeBinding"}]}),
        lambda cfg: (
            [r.name for r in cfg.profiles[0].plugins.filter.disabled] == ["VolumeBinding"]
            and not cfg.profiles[0].plugins.filter.enabled
        ),
        id="disabling an upstream plugin kubesched lacks is fine",
    ),
    pytest.param(
        _set("percentageOfNodesToScore", 0),
        lambda cfg: cfg.percentage_of_nodes_to_score == 0,  # 0: upstream's adaptive rule
        id="zero percentage is adaptive",
    ),
    pytest.param(
        _set("leaderElection", {"leaderElect": False, "leaseDuration": "0s"}),
        lambda cfg: (
            not cfg.leader_election.leader_elect
            and cfg.leader_election.lease_duration_seconds == 0.0
            and cfg.leader_election.resource_name == "kube-scheduler"  # the rest defaulted
        ),
        id="le off",
    ),
]


@pytest.mark.parametrize(("mutate", "holds"), VALID_VARIANTS)
def test_valid_variants(
    valid: Cfg,
    mutate: Callable[[Cfg], None],
    holds: Callable[[KubeSchedulerConfiguration], bool],
) -> None:
    mutate(valid)
    cfg = load.load_config(valid, known_plugins=KNOWN)
    assert holds(cfg), cfg
    # what the variant did not touch is the base configuration's
    assert [p.scheduler_name for p in cfg.profiles] == ["me", "other"] and cfg.parallelism == 8


def test_enabling_an_upstream_plugin_we_lack_says_so(valid: Cfg) -> None:
    valid["profiles"][1]["plugins"]["filter"] = {"enabled": [{"name": "VolumeZone"}]}
    with pytest.raises(InputError) as err:
        load.load_config(valid, known_plugins=KNOWN - {"VolumeZone"})
    assert err.value.problems == [
        (
            "profiles[1].plugins.filter.enabled[0]",
            'Invalid value: "VolumeZone": is an upstream plugin that kubesched does not '
            "implement yet",
        )
    ]


def test_three_mistakes_are_reported_together(valid: Cfg) -> None:
    valid["percentageOfNodesToScore"] = 150
    valid["profiles"][1]["schedulerName"] = "me"
    valid["profiles"][0]["plugins"]["score"] = {
        "enabled": [
            {"name": "ImageLocality"},
            {"name": "NodeAffinity"},
            {"name": "X", "weight": -1},
        ]
    }
    with pytest.raises(InputError) as err:
        load.load_config(valid, known_plugins=KNOWN | {"X"})
    assert sorted(path for path, _ in err.value.problems) == [
        "percentageOfNodesToScore",
        "profiles[0].plugins.score.enabled[2].weight",
        "profiles[1].schedulerName",
    ]
    text = str(err.value)
    assert "percentageOfNodesToScore: Invalid value: 150" in text
    assert 'profiles[1].schedulerName: Duplicate value: "me"' in text


def test_multiple_profiles_need_names() -> None:
    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{}, {}],
    }
    with pytest.raises(InputError) as err:
        load.load_config(raw, known_plugins=KNOWN)
    assert err.value.problems == [
        ("profiles[0].schedulerName", "Required value"),
        ("profiles[1].schedulerName", "Required value"),
    ]
