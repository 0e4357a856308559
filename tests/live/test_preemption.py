"""Preemption live, end to end against the fake API server: the victim is deleted through
the API, the preemptor is nominated (``status.nominatedNodeName``) and then bound -- by a
serial ``kubesched run`` and by a coordinator with two shards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.live.conftest import Api, Replica, Role, node, pod, start
from tests.live.conftest import wait_for as wait


def _pod(name: str, priority: int) -> dict[str, Any]:
    manifest = pod(name, cpu="1")
    manifest["spec"]["priority"] = priority
    return manifest


def _gone(api: Api, name: str) -> bool:
    try:
        api.pod(name)
    except Exception:  # the fake store raises for a missing object
        return True
    return False


def _preempts(api: Api) -> None:
    api.create(_pod("low", 0))
    wait(lambda: api.node_of("low") == "n1")
    api.create(_pod("high", 100))
    wait(lambda: _gone(api, "low"))
    wait(lambda: api.node_of("high") == "n1")
    assert api.store.stats.binds_per_pod == {"default/low": 1, "default/high": 1}
    high = api.pod("high")
    wait(lambda: len(api.events("Preempted")) == 1)
    [event] = api.events("Preempted")
    assert event["type"] == "Normal" and event["action"] == "Preempting"
    assert event["regarding"]["name"] == "low" and event["related"]["name"] == "high"
    assert event["note"] == f"Preempted by pod {high['metadata']['uid']} on node n1"
    [last] = [obj for _, kind, obj in api.store.history["/pods"] if kind == "DELETED"]
    [cond] = [c for c in last["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (cond["status"], cond["reason"]) == ("True", "PreemptionByScheduler")
    assert cond["message"] == "kubesched: preempting to accommodate a higher priority pod"


def test_serial_live_scheduler_preempts_through_the_api(
    api: Api, replicas: Callable[..., Replica]
) -> None:
    api.create(node("n1", cpu="1"))
    replicas("a")
    _preempts(api)


def test_sharded_live_scheduler_preempts_through_the_api(
    api: Api, roles: Callable[..., Role]
) -> None:
    api.create(node("n1", cpu="1"))
    c, _ = start(roles)
    _preempts(api)
    assert c.coordinator.stats["committed"] == 2
