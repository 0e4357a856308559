"""``scheduler_scheduling_attempt_duration_seconds`` measures the attempt's own work.

Upstream (``schedule_one.go``) observes it from the cycle's start: for a scheduled Pod when
its binding cycle has bound it (``metrics.PodScheduled``), for a failure when the failure
handler runs (``PodUnschedulable`` / ``PodScheduleError``).  In kube-scheduler the binding
cycle is a goroutine of its own, so that time is this Pod's.  Here the binding cycle runs
later (in virtual time, after other Pods' cycles, ``--pace`` sleeps, a binder's queue):
those pauses must not count.  The wall clock is faked (``time.perf_counter`` advanced by
hand) so no test sleeps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from kubesched.config.load import load_config
from kubesched.metrics import SchedulerMetrics
from kubesched.plugins.registry import in_tree_registry, known_plugin_names
from kubesched.scheduler import Scheduler, SchedulerOptions
from kubesched.sim.scenario import build_scenario
from kubesched.sim.simulate import run_scenario
from kubesched.testing import FakeApi, VirtualClock, drain, make_node, make_pod
from tests.parallel.harness import World
from tests.scheduler.test_waiting_pods import CONFIG, Gate

PAUSE = 100.0
"""Wall seconds of someone else's time between a Pod's cycle and its binding cycle."""
METRIC = "scheduler_scheduling_attempt_duration_seconds"


class Wall:
    """``time.perf_counter`` plus a hand-advanced offset."""

    def __init__(self, real: Callable[[], float]) -> None:
        self.real = real
        self.offset = 0.0

    def __call__(self) -> float:
        return self.real() + self.offset

    def sleep(self, seconds: float) -> None:
        self.offset += max(0.0, seconds)


@pytest.fixture
def wall(monkeypatch: pytest.MonkeyPatch) -> Wall:
    w = Wall(time.perf_counter)
    monkeypatch.setattr(time, "perf_counter", w)
    monkeypatch.setattr(time, "sleep", w.sleep)
    return w


def observed(metrics: SchedulerMetrics, result: str) -> tuple[float, float]:
    """``(_sum, _count)`` of the attempt duration for ``result``."""
    labels = {"result": result, "profile": "default-scheduler"}
    get = metrics.registry.get_sample_value
    return get(f"{METRIC}_sum", labels) or 0.0, get(f"{METRIC}_count", labels) or 0.0


def deferred_scheduler(config: dict[str, Any] | None = None) -> tuple[Scheduler, list[Any], Any]:
    """A scheduler whose binding cycles wait in a list until the test runs them."""
    reg = in_tree_registry()
    reg["Gate"] = Gate
    cfg = load_config(config, known_plugins=known_plugin_names(reg))
    later: list[Callable[[], None]] = []
    fake = FakeApi()
    s = Scheduler(
        cfg,
        clock=VirtualClock(),
        api_client=fake,
        submit_binding=later.append,
        options=SchedulerOptions(registry=reg),
    )
    s.on_node_add(make_node("n").cap(cpu="4", memory="8Gi", pods=10).obj())
    return s, later, fake


def run_all(later: list[Callable[[], None]]) -> None:
    while later:
        later.pop(0)()


def test_a_delayed_binding_cycle_does_not_count_the_pause(wall: Wall) -> None:
    s, later, fake = deferred_scheduler()
    s.on_pod_add(make_pod("p").req(cpu="1").obj())
    drain(s)
    wall.offset += PAUSE  # other Pods' cycles, a --pace sleep, the simulated bind latency
    run_all(later)
    assert fake.binds == {"default/p": "n"}
    total, count = observed(s.metrics, "scheduled")
    assert count == 1 and total < 1.0


def test_a_failed_bind_after_a_pause_does_not_count_it(wall: Wall) -> None:
    s, later, fake = deferred_scheduler()
    fake.fail_binds = True
    s.on_pod_add(make_pod("p").req(cpu="1").obj())
    drain(s)
    wall.offset += PAUSE
    run_all(later)
    total, count = observed(s.metrics, "error")
    assert count == 1 and total < 1.0


@pytest.mark.parametrize("allow", [True, False], ids=["allowed", "rejected"])
def test_the_wait_at_permit_does_not_count(wall: Wall, allow: bool) -> None:
    s, later, _fake = deferred_scheduler(CONFIG)
    s.on_pod_add(make_pod("p").req(cpu="1").labels(wait="30").obj())
    drain(s)
    wall.offset += PAUSE  # held at Permit while the simulator runs other work
    wp = s.handle.get_waiting_pod("default/p")
    assert wp is not None
    if allow:
        wp.allow("Gate")
    else:
        wp.reject("Gate", "no quorum")
    s.schedule_one()
    wall.offset += PAUSE
    run_all(later)
    total, count = observed(s.metrics, "scheduled" if allow else "unschedulable")
    assert count == 1 and total < 1.0


def test_an_unschedulable_attempt_also_observes_the_algorithm_latency(wall: Wall) -> None:
    """Upstream defers ``SchedulingAlgorithmLatency`` on the failure path too."""
    s, _later, _fake = deferred_scheduler()
    s.on_pod_add(make_pod("big").req(cpu="64").obj())
    drain(s)
    count = s.metrics.registry.get_sample_value(
        "scheduler_scheduling_algorithm_duration_seconds_count"
    )
    assert count == 1


def scenario() -> dict[str, Any]:
    return {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "paced"},
        "spec": {
            "seed": 3,
            "durationSeconds": 20,
            "drainSeconds": 10,
            "timing": {"bindLatencySeconds": 2.0},
            "nodePools": [
                {
                    "name": "cpu",
                    "count": 4,
                    "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                }
            ],
            "workloads": [
                {
                    "name": "web",
                    "count": 40,
                    "ratePerSecond": 2.0,
                    "lifetimeSeconds": 30,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "resources": {"requests": {"cpu": "500m"}}}
                            ]
                        }
                    },
                }
            ],
        },
    }


@pytest.mark.parametrize("shards", [1, 2])
def test_pace_and_bind_latency_do_not_inflate_the_histogram(wall: Wall, shards: int) -> None:
    """At ``--pace 1`` the 30 virtual seconds take 30 (fake) wall seconds, most of them
    while Pods wait 2 s for their simulated binds; the attempts' sum stays the code's."""
    metrics = SchedulerMetrics()
    run_scenario(build_scenario(scenario()), metrics=metrics, pace=1.0, shards=shards)
    slept = wall.offset
    total, count = observed(metrics, "scheduled")
    assert slept > 20.0 and count >= 30
    assert total < 0.1 * slept, (total, slept)


def test_a_shard_reply_taken_a_step_later_does_not_count_the_pause(wall: Wall) -> None:
    """The coordinator pipelines: a Pod handed out in one step is answered in the next;
    what the simulator does in between is not the Pod's attempt."""
    w = World([make_node(f"n{i}").cap(cpu="8", memory="8Gi", pods=20).obj() for i in range(4)])
    try:
        w.add(make_pod(f"p{i}").req(cpu="100m").obj() for i in range(12))
        for _ in range(200):
            if not w.step():
                break
            wall.offset += PAUSE
        assert sum(w.binds.values()) == 12
        total, count = observed(w.sched.metrics, "scheduled")
        assert count == 12 and total < 1.0, total
    finally:
        w.close()
