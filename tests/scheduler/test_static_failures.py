"""A Pod every node rejects for static reasons (requests above every node's allocatable, a
selector no node matches) takes its kept Filter outcome on retries
(:mod:`kubesched.scheduler.verdicts`): the same messages, attempts, queue handling,
placements and plugin evaluation counts as the full Filter pass, under churn."""

from __future__ import annotations

import random
from typing import Any

from kubesched.api import objects as api
from kubesched.config.load import load_config
from kubesched.framework.interface import CycleState, IntArray
from kubesched.framework.runtime import Framework
from kubesched.plugins.registry import in_tree_registry, known_plugin_names
from kubesched.scheduler import Scheduler, SchedulerOptions
from kubesched.scheduler.types import FitError, ScheduleResult
from kubesched.testing import FakeApi, VirtualClock, drain, make_node, make_pod, new_scheduler


def messages(fake: FakeApi) -> list[tuple[str, str]]:
    """Every failure message in order, not only the last per Pod."""
    return [(key, message) for key, _reason, message in fake.failed]


def _run(static: bool, seed: int) -> tuple[dict[str, Any], Scheduler]:
    fake, clock = FakeApi(), VirtualClock()
    cfg = load_config(None, known_plugins=known_plugin_names())
    s = Scheduler(
        cfg, clock=clock, api_client=fake, options=SchedulerOptions(registry=in_tree_registry())
    )
    s.search.static_failures.enabled = static
    s.search.kept_failures.enabled = static  # the full path keeps no per-node verdicts either
    for i in range(6):
        s.on_node_add(make_node(f"n{i}").cap(cpu="4", memory="8Gi", pods=3).obj())
    for i in range(2):
        s.on_node_add(make_node(f"g{i}").cap(cpu="64", memory="64Gi", pods=3).taint("gpu").obj())
    s.on_pod_add(make_pod("huge").req(cpu="100", memory="1Gi").obj())
    s.on_pod_add(make_pod("lost").req(cpu="1").node_selector(pool="none").obj())
    rng = random.Random(seed)
    bound: dict[str, api.Pod] = {}
    trace: list[object] = []
    for step in range(60):
        if bound and rng.random() < 0.4:
            key = rng.choice(sorted(bound))
            s.on_pod_delete(bound.pop(key))
        else:
            s.on_pod_add(make_pod(f"w{step}").req(cpu=rng.choice(("100m", "3"))).obj())
        clock.now += rng.choice((0.5, 2.0, 11.0, 301.0))
        s.queue.flush_backoff_completed()
        s.queue.flush_unschedulable_left_over()  # every 5 minutes the static Pods retry
        drain(s)
        for key in fake.binds:
            if key not in bound and key not in ("default/huge", "default/lost"):
                pod = s.cluster.pods[key].pod if key in s.cluster.pods else None
                if pod is not None:
                    bound[key] = pod
        trace.append(
            (dict(s.attempts), dict(s.queue.pending_pods()), s.search.next_start_node_index)
        )
    # a node grows past the huge Pod's request: the kept outcome is stale, the Pod fits
    s.on_node_update(
        s.cluster.node("n0") or make_node("n0").obj(),
        make_node("n0").cap(cpu="200", memory="8Gi", pods=110).obj(),
    )
    clock.now += 20
    s.queue.flush_backoff_completed()
    drain(s)
    fwk = s.profiles["default-scheduler"]
    out = {
        "messages": messages(fake),
        "binds": dict(fake.binds),
        "attempts": dict(s.attempts),
        "pod_attempts": dict(s.pod_attempts),
        "trace": trace,
        "evaluations": dict(fwk.evaluations),
    }
    return out, s


def retry(s: Scheduler, clock: VirtualClock) -> None:
    """Five minutes later: every unschedulable Pod is tried again."""
    clock.now += 301
    s.queue.flush_backoff_completed()
    s.queue.flush_unschedulable_left_over()
    drain(s)


def test_kept_outcomes_change_nothing_but_the_work() -> None:
    for seed in range(4):
        full, s_full = _run(False, seed)
        kept, s_kept = _run(True, seed)
        assert kept == full
        assert s_full.search.static_failures.hits == 0
        assert s_kept.search.static_failures.hits > 0
        assert full["binds"].get("default/huge") == "n0"
        assert "default/lost" not in full["binds"]


def test_the_message_follows_a_node_that_fills_up() -> None:
    """ "Too many pods" joins a static node's reasons when it fills: the kept outcome is
    refreshed, not repeated."""
    s, fake, clock = new_scheduler()
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=1).obj())
    s.on_pod_add(make_pod("huge").req(cpu="100").obj())
    drain(s)
    first = fake.failures["default/huge"][1]
    assert first.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    s.on_pod_add(make_pod("small").req(cpu="100m").obj())
    drain(s)
    assert fake.binds == {"default/small": "n0"}
    retry(s, clock)
    second = fake.failures["default/huge"][1]
    assert second.startswith("0/1 nodes are available: 1 Insufficient cpu, 1 Too many pods.")
    retry(s, clock)
    assert fake.failures["default/huge"][1] == second
    assert s.search.static_failures.hits == 1


def test_a_failure_that_pods_can_lift_is_not_kept() -> None:
    """Insufficient only because of the Pods running there: not static, never reused."""
    s, fake, clock = new_scheduler()
    s.on_node_add(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_pod_add(make_pod("a").req(cpu="3").obj())
    drain(s)
    s.on_pod_add(make_pod("b").req(cpu="3").obj())
    for _ in range(3):
        retry(s, clock)
    assert fake.failures["default/b"][1].startswith("0/1 nodes are available: 1 Insufficient")
    assert s.search.static_failures.hits == 0 and not s.search.static_failures.entries


class PartitionFirst(Scheduler):
    """Tries half the nodes first, then all of them, as a parallel shard does."""

    restrict = False

    def candidate_rows(self) -> IntArray:
        order = super().candidate_rows()
        return order[: order.size // 2] if self.restrict else order

    def schedule_pod(self, fwk: Framework, state: CycleState, pod: api.Pod) -> ScheduleResult:
        self.restrict = True
        try:
            return super().schedule_pod(fwk, state, pod)
        except FitError:
            state.clear()
            state.skip_filter.clear()
            state.skip_score.clear()
        finally:
            self.restrict = False
        return super().schedule_pod(fwk, state, pod)


def test_a_pass_over_part_of_the_nodes_is_not_kept() -> None:
    fake, clock = FakeApi(), VirtualClock()
    cfg = load_config(None, known_plugins=known_plugin_names())
    options = SchedulerOptions(registry=in_tree_registry())
    s = PartitionFirst(cfg, clock=clock, api_client=fake, options=options)
    for i in range(4):
        s.on_node_add(make_node(f"n{i}").cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_pod_add(make_pod("huge").req(cpu="100").obj())
    for _ in range(3):
        drain(s)
        assert fake.failures["default/huge"][1].startswith(
            "0/4 nodes are available: 4 Insufficient cpu."
        )
        retry(s, clock)
    assert s.search.static_failures.hits == 3


def test_a_rare_resource_larger_than_any_node_has_is_a_static_failure_too() -> None:
    """Past MAX_DENSE_EXTENDED names a rare resource is held sparse: NodeResourcesFit's
    static rejections read it there (the dense columns alone do not line up with the
    request), and the kept outcome answers the retry with the same message."""
    from kubesched.state.nodes import MAX_DENSE_EXTENDED

    outcomes = []
    for static in (False, True):
        fake, clock = FakeApi(), VirtualClock()
        cfg = load_config(None, known_plugins=known_plugin_names())
        s = Scheduler(
            cfg, clock=clock, api_client=fake, options=SchedulerOptions(registry=in_tree_registry())
        )
        s.search.static_failures.enabled = static
        for i in range(MAX_DENSE_EXTENDED + 3):
            extra = {f"example.com/dev-{i}": 2}
            s.on_node_add(make_node(f"n{i}").cap(cpu="4", memory="8Gi", pods=10, **extra).obj())
        rare = {f"example.com/dev-{MAX_DENSE_EXTENDED + 2}": 3}
        s.on_pod_add(make_pod("big").req(cpu="100", **rare).obj())
        drain(s)
        retry(s, clock)
        retry(s, clock)
        outcomes.append((messages(fake), dict(s.attempts)))
        assert s.search.static_failures.hits == (2 if static else 0)  # both retries were kept
    assert outcomes[0] == outcomes[1]
    assert len(outcomes[1][0]) == 3
