"""Out-of-tree plugins through the ``kubesched.plugins`` entry-point group.

The example package ``examples/kubesched-example-plugin`` is installed into the test
environment (``.ci/run``), so its ``PreferNodeLabel`` is a real installed entry point here.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

import pytest

import kubesched
from kubesched.config.load import load_config
from kubesched.metrics import PLUGIN_SAMPLE_EVERY
from kubesched.plugins import entrypoints
from kubesched.plugins.registry import full_registry, in_tree_registry, known_plugin_names
from kubesched.scheduler import Scheduler, SchedulerOptions
from kubesched.testing import FakeApi, drain, make_node, make_pod

EXAMPLE = "PreferNodeLabel"


def config(**args: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"score": {"enabled": [{"name": EXAMPLE, "weight": 10}]}},
                "pluginConfig": [{"name": EXAMPLE, "args": args}],
            }
        ],
    }


def test_the_installed_example_is_in_the_full_registry_only() -> None:
    assert EXAMPLE in full_registry(), "pip install -e examples/kubesched-example-plugin"
    assert EXAMPLE not in in_tree_registry()
    assert EXAMPLE in known_plugin_names()
    assert set(in_tree_registry()) < set(full_registry())


def test_enabled_by_configuration_it_changes_placements_and_is_timed() -> None:
    cfg = load_config(config(labelKey="pool", labelValue="gpu"), known_plugins=known_plugin_names())
    fake = FakeApi()
    s = Scheduler(cfg, clock=lambda: 0.0, api_client=fake, options=SchedulerOptions(batching=False))
    for i in range(5):
        s.on_node_add(make_node(f"n{i}").cap(cpu="8", memory="32Gi", pods=50).obj())
    s.on_node_update(
        s.cluster.node("n1"),  # type: ignore[arg-type]
        make_node("n1").cap(cpu="8", memory="32Gi", pods=50).labels(pool="gpu").obj(),
    )
    for i in range(2 * PLUGIN_SAMPLE_EVERY):
        s.on_pod_add(make_pod(f"p{i}").req(cpu="100m").obj())
    drain(s)
    assert set(fake.binds.values()) == {"n1"}
    timed = s.metrics.histogram("scheduler_plugin_execution_duration_seconds", "plugin")
    assert timed[EXAMPLE]["count"] >= 1  # sampled cycles time it like any plugin


def test_explain_shows_its_score() -> None:
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": n, "labels": {"pool": p}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
        }
        for n, p in (("a", "cpu"), ("b", "gpu"))
    ]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}
    pod["spec"] = {"containers": [{"name": "c"}]}
    out = kubesched.explain(
        {"apiVersion": "v1", "kind": "List", "items": nodes},
        pod,
        config(labelKey="pool", labelValue="gpu"),
    )
    assert out["selectedNode"] == "b"
    assert out["nodes"]["b"]["scores"][EXAMPLE] == 100
    assert out["nodes"]["a"]["scores"][EXAMPLE] == 0


class FakeEntryPoint:
    def __init__(self, name: str, value: Any, dist: str) -> None:
        self.name, self.value, self._obj = name, f"{dist}.mod:new", value
        self.dist = type("Dist", (), {"name": dist})()

    def load(self) -> Any:
        if isinstance(self._obj, Exception):
            raise self._obj
        return self._obj


def factory(args: Any, handle: Any) -> Any:
    return None


@pytest.mark.parametrize(
    ("eps", "error"),
    [
        ([("A", factory, "one"), ("A", factory, "two")], "registered by both 'one' and 'two'"),
        ([("NodeName", factory, "one")], "clash with in-tree plugin names"),
        ([("B", 42, "one")], "is not a plugin factory"),
        ([("C", ImportError("no module"), "one")], "cannot load"),
    ],
)
def test_registration_errors(
    monkeypatch: pytest.MonkeyPatch, eps: list[tuple[str, Any, str]], error: str
) -> None:
    fakes = [FakeEntryPoint(*e) for e in eps]
    monkeypatch.setattr(metadata, "entry_points", lambda group: fakes)
    entrypoints.refresh()
    try:
        with pytest.raises(entrypoints.PluginRegistryError, match=error):
            full_registry()
    finally:
        monkeypatch.undo()
        entrypoints.refresh()
    assert EXAMPLE in full_registry()
