"""A bind whose outcome the client never learns (the API server writes it after the client's
timeout) must keep its capacity assumed until it is settled, and must not stall scheduling.

The fault is :meth:`~tests.live.fakeapi.FakeApiServer.slow_bind`: the binding is written
late whether or not the client still waits.  Issue 17: a 6 s write against a 5 s timeout let
kubesched forget the Pod, put a second Pod in its place, and both landed (overcommit).  Here
the same fault at a smaller scale: the bind timeout is ``leaseDuration - renewDeadline``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.live.conftest import Api, Replica, Role, make_config, node, pod, start
from tests.live.conftest import wait_for as wait
from tests.live.fakestore import by_plural


def _cpu_on(api: Api, node_name: str) -> int:
    items, _ = api.store.list(by_plural("pods"), "", "", "")
    return sum(
        int(p["spec"]["containers"][0]["resources"]["requests"]["cpu"].rstrip("m"))
        for p in items
        if p["spec"].get("nodeName") == node_name
    )


def test_a_bind_written_after_the_client_timed_out_never_overcommits(
    api: Api, replicas: Callable[..., Replica]
) -> None:
    api.create(node("n1", cpu="1"))
    r = replicas("a", make_config(lease=("2s", "1500ms", "100ms")))  # bind timeout 0.5 s
    assert r.live.api.bind_timeout == 0.5
    api.server.slow_bind("first", 1.5)
    api.create(pod("first", cpu="600m"))
    wait(lambda: r.live.scheduler.cluster.is_assumed("default/first"), timeout=10)
    time.sleep(0.7)  # past the client's timeout, before the write lands
    api.create(pod("second", cpu="600m"))
    wait(lambda: api.node_of("first") == "n1", timeout=10)  # the late write landed
    time.sleep(1.5)  # time for a wrong second bind
    assert api.node_of("second") == "", "both Pods were bound: n1 is overcommitted"
    assert _cpu_on(api, "n1") <= 1000
    wait(lambda: not r.live.scheduler.cluster.is_assumed("default/first"))
    assert r.live.scheduler.cluster.overcommitted_nodes() == []
    # The late bind counted as a success, once: no requeue, no second Scheduled attempt.
    wait(lambda: r.live.scheduler.attempts["scheduled"] == 1)
    assert api.store.stats.binds_per_pod["default/first"] == 1


def test_a_slow_bind_does_not_stall_other_pods(api: Api, replicas: Callable[..., Replica]) -> None:
    api.create(node("n1"))
    r = replicas("solo", make_config(leader=False))  # bind timeout 5 s: the bind just waits
    api.server.slow_bind("slow", 3.0)
    api.create(pod("slow"))
    wait(lambda: r.live.scheduler.cluster.is_assumed("default/slow"), timeout=10)
    t0 = time.monotonic()
    api.create(pod("quick"))
    wait(lambda: api.node_of("quick") == "n1", timeout=10)
    assert time.monotonic() - t0 < 2.0, "the quick Pod waited for the slow bind"
    assert api.node_of("slow") == ""
    wait(lambda: api.node_of("slow") == "n1", timeout=10)
    wait(lambda: r.live.scheduler.attempts["scheduled"] == 2)


def test_a_slow_bind_does_not_stall_the_coordinator(api: Api, roles: Callable[..., Role]) -> None:
    api.create(node("n1"))
    c, _ = start(roles, config=make_config(lease=("8s", "3s", "100ms")))  # bind timeout 5 s
    api.server.slow_bind("slow", 3.0)
    api.create(pod("slow"))
    wait(lambda: c.coordinator.cluster.is_assumed("default/slow"), timeout=10)
    t0 = time.monotonic()
    api.create(pod("quick"))
    wait(lambda: api.node_of("quick") == "n1", timeout=10)
    assert time.monotonic() - t0 < 2.0, "the quick Pod waited for the slow bind"
    assert api.node_of("slow") == ""
    wait(lambda: api.node_of("slow") == "n1", timeout=10)
