"""The Kubernetes version and feature gates reach the scheduler's options and every plugin's
Handle, from the configuration (and across a spawned shard's reload of it)."""

from __future__ import annotations

from kubesched.config import featuregates
from kubesched.config.encode import config_to_dict
from kubesched.config.load import load_config
from kubesched.parallel import factory
from kubesched.parallel.shardmain import make_shard
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import SchedulerOptions


def test_gates_reach_the_options_and_the_handle() -> None:
    gates = featuregates.with_settings("1.35", {"NodeDeclaredFeatures": True})
    cfg = load_config(None, known_plugins=known_plugin_names(), gates=gates)
    s = factory.make_scheduler(cfg, clock=lambda: 0.0)
    assert s.options.feature_gates == gates
    assert s.handle.feature_gates.enabled("NodeDeclaredFeatures")
    assert s.handle.feature_gates.version == "1.35"


def test_a_spawned_shard_loads_its_configuration_under_the_same_version() -> None:
    gates = featuregates.with_settings("1.34", {})
    cfg = load_config(None, known_plugins=known_plugin_names(), gates=gates)
    shard = make_shard(config_to_dict(cfg), 0, SchedulerOptions(shards=2, feature_gates=gates))
    assert shard.config.feature_gates == gates
    assert shard.config.profiles == cfg.profiles
