"""PreferNodeLabel: conformance, registration through the entry point, and placements.

Built on kubesched's public test kit (:mod:`kubesched.testing`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from kubesched_example_plugin import NAME, new
from kubesched_example_plugin.prefer_label import preferred

from kubesched.api import objects as api
from kubesched.config.load import load_config
from kubesched.plugins.registry import full_registry, known_plugin_names
from kubesched.scheduler import Scheduler
from kubesched.testing import FakeApi, VirtualClock, conformance, drain, make_node, make_pod

ARGS = {"labelKey": "example.com/pool", "labelValue": "spot"}


def node(name: str, **labels: str) -> api.Node:
    return make_node(name).cap(cpu="4", memory="8Gi", pods=110).label_map(labels).obj()


def pod(name: str) -> api.Pod:
    return make_pod(name).req(cpu="100m", memory="256Mi").obj()


def config(enabled: bool) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
    }
    if enabled:
        cfg["profiles"] = [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"score": {"enabled": [{"name": NAME, "weight": 10}]}},
                "pluginConfig": [{"name": NAME, "args": ARGS}],
            }
        ]
    return cfg


def run(enabled: bool) -> dict[str, str]:
    cfg = load_config(config(enabled), known_plugins=known_plugin_names())
    fake = FakeApi()
    s = Scheduler(cfg, clock=VirtualClock(), api_client=fake)
    for i in range(4):
        labels = {"example.com/pool": "spot" if i == 3 else "on-demand"}
        s.on_node_add(node(f"n{i}", **labels))
    for i in range(6):
        s.on_pod_add(pod(f"p{i}"))
    drain(s)
    return fake.binds


def test_registered_through_the_entry_point() -> None:
    assert full_registry()[NAME] is new
    assert NAME in known_plugin_names()


def test_conformant() -> None:
    conformance.assert_conformant(new, {"labelKey": "topology.kubernetes.io/zone"})


def test_changes_placements_as_designed() -> None:
    assert set(run(enabled=True).values()) == {"n3"}  # every Pod on the spot node
    assert len(set(run(enabled=False).values())) > 1  # default scoring spreads them


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("example.com/pool", "spot", [False, True, False]),
        ("example.com/pool", "", [True, True, False]),
        ("example.com/pool", "never-seen", [False, False, False]),
        ("absent", "", [False, False, False]),
    ],
)
def test_preferred_kernel(key: str, value: str, expected: list[bool]) -> None:
    from kubesched.testing import make_cluster

    pool = "example.com/pool"
    nodes = [node("a", **{pool: "on-demand"}), node("b", **{pool: "spot"}), node("c")]
    cluster = make_cluster(nodes)
    rows = cluster.nodes.order()
    assert preferred(cluster.nodes, rows, key, value).tolist() == expected
    assert preferred(cluster.nodes, rows[:0], key, value).shape == (0,)


@pytest.mark.parametrize("args", [None, {}, {"labelKey": ""}, {"labelKey": "k", "labelValue": 3}])
def test_bad_args_are_refused(args: object) -> None:
    with pytest.raises(ValueError, match="PreferNodeLabel"):
        new(args, None)  # type: ignore[arg-type]


def test_scores_are_int64_max_node_score() -> None:
    from kubesched.framework.interface import CycleState, Handle
    from kubesched.testing import make_cluster

    cluster = make_cluster([node("a", **{"example.com/pool": "spot"}), node("b")])
    plugin = new(ARGS, Handle(cluster))
    scores = plugin.score(CycleState(), pod("p"), cluster, cluster.nodes.order())
    assert scores.dtype == np.int64 and scores.tolist() == [100, 0]
