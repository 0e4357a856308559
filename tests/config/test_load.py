"""Reading files, strict decoding and round trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api.errors import InputError
from kubesched.config import args as a
from kubesched.config import encode, load
from kubesched.config import types as t
from tests.config.conftest import KNOWN, base_config

CONFIG_YAML = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 32
percentageOfNodesToScore: 20
podMaxBackoffSeconds: 30
leaderElection:
  leaderElect: false
clientConnection:
  qps: 100
profiles:
  - schedulerName: default-scheduler
  - schedulerName: bin-packing
    percentageOfNodesToScore: 0
    plugins:
      score:
        disabled:
          - name: NodeResourcesBalancedAllocation
        enabled:
          - name: NodeResourcesFit
            weight: 5
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources:
              - name: cpu
                weight: 1
              - name: nvidia.com/gpu
                weight: 5
      - name: NodeAffinity
        args:
          addedAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
                - matchExpressions:
                    - key: pool
                      operator: In
                      values: [batch]
"""


def test_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(CONFIG_YAML)
    cfg = load.load_config(path, known_plugins=KNOWN)
    assert (cfg.parallelism, cfg.percentage_of_nodes_to_score) == (32, 20)
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 30)
    assert cfg.client_connection == t.ClientConnection(qps=100.0)
    assert cfg.leader_election == t.LeaderElection(leader_elect=False)
    default, packing = cfg.profiles
    assert default == t.Profile()
    assert packing.percentage_of_nodes_to_score == 0
    assert packing.plugins.score == t.PluginSet(
        enabled=(t.PluginRef("NodeResourcesFit", 5),),
        disabled=(t.PluginRef("NodeResourcesBalancedAllocation"),),
    )
    fit = packing.plugin_config["NodeResourcesFit"]
    assert fit == a.NodeResourcesFitArgs(
        scoring_strategy=a.ScoringStrategy(
            a.MOST_ALLOCATED, (a.ResourceSpec("cpu", 1), a.ResourceSpec("nvidia.com/gpu", 5))
        )
    )
    affinity = packing.plugin_config["NodeAffinity"]
    assert isinstance(affinity, a.NodeAffinityArgs) and affinity.added_affinity is not None
    assert affinity.added_affinity.required is not None
    assert affinity.added_affinity.required[0].match_expressions[0].values == ("batch",)


@pytest.mark.parametrize("source", ["yaml", "json", "mapping"])
def test_round_trip(tmp_path: Path, source: str) -> None:
    first = load.load_config(yaml.safe_load(CONFIG_YAML), known_plugins=KNOWN)
    data = encode.config_to_dict(first)
    src: Any = data
    if source == "yaml":
        src = tmp_path / "dump.yaml"
        src.write_text(yaml.safe_dump(data))
    elif source == "json":
        src = tmp_path / "dump.json"
        src.write_text(json.dumps(data))
    assert load.load_config(src, known_plugins=KNOWN) == first


def test_round_trip_of_the_validation_base_config() -> None:
    first = load.load_config(base_config(), known_plugins=KNOWN)
    again = load.load_config(encode.config_to_dict(first), known_plugins=KNOWN)
    assert again == first


@pytest.mark.parametrize(
    ("mutate", "want"),
    [
        (lambda c: c.update(parallelizm=3), [("parallelizm", "unknown field")]),
        (
            lambda c: c["profiles"][0].update(plugin={}),
            [("profiles[0].plugin", "unknown field")],
        ),
        (
            lambda c: c["profiles"][0]["plugins"].update(scores={}),
            [("profiles[0].plugins.scores", "unknown field")],
        ),
        (
            lambda c: c["profiles"][0]["plugins"]["score"].update(enabled=[{"nam": "x"}]),
            [
                ("profiles[0].plugins.score.enabled[0].nam", "unknown field"),
                ("profiles[0].plugins.score.enabled[0].name", "Required value"),
            ],
        ),
        (
            lambda c: c["leaderElection"].update(leaseDuration=30),
            [
                (
                    "leaderElection.leaseDuration",
                    'Invalid value: 30: must be a duration such as "15s" or "1m30s"',
                )
            ],
        ),
        (
            lambda c: c.update(parallelism="8"),
            [("parallelism", 'Invalid value: "8": must be an integer')],
        ),
        (
            lambda c: c.update(parallelism=2**31),
            [
                (
                    "parallelism",
                    "Invalid value: 2147483648: must be an integer in [-2147483648, 2147483647]",
                )
            ],
        ),
        (lambda c: c.update(profiles={}), [("profiles", "Invalid value: {}: must be a list")]),
        (
            lambda c: c.update(apiVersion="kubescheduler.config.k8s.io/v1beta3"),
            [
                (
                    "apiVersion",
                    'Unsupported value: "kubescheduler.config.k8s.io/v1beta3": supported values: '
                    '"kubescheduler.config.k8s.io/v1"',
                )
            ],
        ),
        (lambda c: c.pop("kind"), [("kind", "Required value")]),
        (
            lambda c: c.update(enableProfiling="yes"),
            [("enableProfiling", 'Invalid value: "yes": must be a boolean')],
        ),
    ],
)
def test_strict_decoding(mutate: Any, want: list) -> None:
    cfg = base_config()
    mutate(cfg)
    with pytest.raises(InputError) as err:
        load.load_config(cfg, known_plugins=KNOWN)
    assert err.value.problems == want


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(CONFIG_YAML.replace("parallelism: 32", "parallelism: 0"))
    with pytest.raises(InputError) as err:
        load.load_config(str(path), known_plugins=KNOWN)
    assert err.value.file == str(path)
    assert str(err.value).startswith(f"{path}: parallelism: Invalid value: 0")


def test_duplicate_yaml_key_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(CONFIG_YAML + "parallelism: 4\n")
    with pytest.raises(InputError) as err:
        load.load_config(path, known_plugins=KNOWN)
    assert 'key "parallelism" already set in map' in str(err.value)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a: [1, 2\n", "invalid YAML"),
        ("", "expected one document, found 0"),
        ("a: 1\n---\nb: 2\n", "expected one document, found 2"),
        ("- 1\n", "a KubeSchedulerConfiguration must be a mapping"),
    ],
)
def test_unreadable_files(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load.load_config(path, known_plugins=KNOWN)
    assert fragment in str(err.value)


def test_missing_file() -> None:
    with pytest.raises(InputError, match="no such file"):
        load.load_config("/nonexistent/sched.yaml", known_plugins=KNOWN)


def test_defaults_fill_absent_fields() -> None:
    cfg = load.load_config(
        {"apiVersion": t.API_VERSION, "kind": t.KIND, "profiles": [{"schedulerName": "x"}]},
        known_plugins=KNOWN,
    )
    assert cfg == t.KubeSchedulerConfiguration(profiles=(t.Profile(scheduler_name="x"),))
    assert cfg.enable_contention_profiling is True


def test_contention_profiling_follows_profiling() -> None:
    raw = {"apiVersion": t.API_VERSION, "kind": t.KIND, "enableProfiling": False}
    cfg = load.load_config(raw, known_plugins=KNOWN)
    assert (cfg.enable_profiling, cfg.enable_contention_profiling) == (False, False)
