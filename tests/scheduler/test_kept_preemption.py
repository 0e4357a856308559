"""Preemption's kept work changes no decision: the failed Filter pass kept per node
(:mod:`kubesched.scheduler.keptrows`) and the dry-run results kept per node
(``plugins/defaultpreemption/dryrun.py``, ``KeptResults``) give the same binds, victims,
nominations, messages and round-robin walk as the full passes, under churn: preemptors of
two signatures and priorities, victims of several priorities and start times, a
PodDisruptionBudget, Pods deleted and nodes updated between attempts."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.config.load import load_config
from kubesched.framework.interface import CycleState
from kubesched.plugins.defaultpreemption import DefaultPreemption, dryrun
from kubesched.plugins.registry import in_tree_registry, known_plugin_names
from kubesched.scheduler import Scheduler, SchedulerOptions
from kubesched.scheduler.keptrows import KeptFailures
from kubesched.scheduler.types import FitError
from kubesched.testing import VirtualClock, make_node, make_pod
from tests.plugins._defaultpreemption import Api


class SlowDeletes(Api):
    """Binds reach the scheduler at once; deletions when :meth:`deliver` is called, so
    preemptors stay nominated while others try."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[api.Pod] = []

    def delete_pod(self, pod: api.Pod, reason: str) -> None:
        self.deleted.append(pod.key)
        self.pending.append(pod)

    def deliver(self) -> None:
        assert self.scheduler is not None
        for pod in self.pending:
            if self.scheduler.cluster.has_pod(pod.key):
                self.scheduler.on_pod_delete(pod)
        self.pending.clear()


PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "guard", "namespace": "default"},
    "spec": {"selector": {"matchLabels": {"app": "guarded"}}},
    "status": {"disruptionsAllowed": 1},
}


def _preemption(s: Scheduler) -> DefaultPreemption:
    fwk = s.profiles["default-scheduler"]
    plugin = fwk.instances["DefaultPreemption"]
    assert isinstance(plugin, DefaultPreemption)
    return plugin


def _run(kept: bool, seed: int) -> tuple[dict[str, Any], Scheduler]:
    rng = random.Random(seed)
    fake, clock = SlowDeletes(), VirtualClock()
    cfg = load_config(None, known_plugins=known_plugin_names())
    s = Scheduler(
        cfg, clock=clock, api_client=fake, options=SchedulerOptions(registry=in_tree_registry())
    )
    fake.scheduler = s
    s.search.kept_failures.enabled = kept
    if not kept:
        _preemption(s).kept = None
    s.cluster.apply_object(PDB)
    nodes = [f"n{i}" for i in range(12)]
    for name in nodes:
        s.on_node_add(make_node(name).cap(cpu=rng.choice(("2", "4")), memory="8Gi", pods=20).obj())
    for i in range(48):
        b = make_pod(f"low{i}").req(cpu=rng.choice(("500m", "900m", "1200m")))
        b = b.priority(rng.choice((0, 0, 5, 50)))
        if rng.random() < 0.2:
            b = b.labels(app="guarded")
        p = b.node(rng.choice(nodes)).obj()
        p.start_time = rng.choice((None, 10.0, 20.0))
        s.on_pod_add(p)
    trace: list[object] = []
    for step in range(40):
        r = rng.random()
        if r < 0.6:
            cpu, prio = rng.choice((("1500m", 1000), ("1500m", 1000), ("700m", 100)))
            s.on_pod_add(make_pod(f"hi{step}").req(cpu=cpu).priority(prio).obj())
        elif r < 0.7 and len(s.queue.nominator):
            name = rng.choice(sorted(s.queue.nominator.nominated_node_names()))
            s.on_pod_delete(s.queue.nominator.nominated_pods_for_node(name)[0])
        elif r < 0.8 and s.cluster.pods:
            key = rng.choice(sorted(s.cluster.pods))
            s.on_pod_delete(s.cluster.pods[key].pod)
        else:
            name = rng.choice(nodes)
            old = s.cluster.node(name)
            assert old is not None
            s.on_node_update(
                old,
                make_node(name).cap(cpu=rng.choice(("2", "4", "6")), memory="8Gi", pods=20).obj(),
            )
        clock.now += rng.choice((0.5, 2.0, 11.0))
        if rng.random() < 0.5:
            fake.deliver()
        s.queue.flush_backoff_completed()
        while s.schedule_one():
            pass
        nominated = sorted((k, s.queue.nominator.node_of(k)) for k in s.queue.nominator._node_of)
        trace.append((dict(s.attempts), nominated, s.search.next_start_node_index))
    out = {
        "binds": list(fake.bound),
        "deleted": list(fake.deleted),
        "failed": list(fake.failed),
        "preemptions": dict(s.preemptions),
        "trace": trace,
    }
    return out, s


def test_kept_preemption_work_changes_no_decision() -> None:
    hits = 0
    kept_rows = 0
    violating = 0
    for seed in range(6):
        full, s_full = _run(False, seed)
        kept, s_kept = _run(True, seed)
        assert kept == full, seed
        assert s_full.search.kept_failures.hits == 0
        hits += s_kept.search.kept_failures.hits
        results = _preemption(s_kept).kept
        assert results is not None
        kept_rows += len(results.rows)
        # the walk looks for PDB-violating candidates and faults only while some row
        # has one: its counts are the kinds column's
        for kind in (dryrun.FINE, dryrun.VIOLATING, dryrun.REJECTED, dryrun.FAULT):
            assert results.counts[kind] == int((results.kind == kind).sum()), (seed, kind)
        violating += results.counts[dryrun.VIOLATING]
        assert full["deleted"]  # preemption happened
    assert hits > 0 and kept_rows > 0  # and the kept work answered some of it
    assert violating > 0  # the PDB made PDB-violating candidates (their walk ran)


def test_a_changed_node_is_filtered_again() -> None:
    """A node whose Pods changed since the kept pass is filtered again: a low Pod deleted
    between two equal preemptors makes its node fit the second one without preemption."""
    fake, clock = Api(), VirtualClock()
    cfg = load_config(None, known_plugins=known_plugin_names())
    s = Scheduler(
        cfg, clock=clock, api_client=fake, options=SchedulerOptions(registry=in_tree_registry())
    )
    for i in range(3):
        s.on_node_add(make_node(f"n{i}").cap(cpu="2", memory="8Gi", pods=20).obj())
        s.on_pod_add(make_pod(f"low{i}").req(cpu="1500m").node(f"n{i}").obj())
    blocker = make_pod("block").req(cpu="1500m").priority(2000).obj()
    s.queue.nominator.add(blocker, "n0")  # someone holds n0's room: every node fails
    s.on_pod_add(_never("a"))
    assert s.schedule_one()
    assert "default/a" not in fake.binds
    assert s.search.kept_failures.kept is not None  # every node failed: the pass is kept
    s.on_pod_delete(s.cluster.pods["default/low2"].pod)  # n2 now fits a Pod like "a"
    s.on_pod_add(_never("b"))
    while s.schedule_one():
        pass
    assert fake.binds.get("default/b") == "n2"
    assert not fake.deleted


def _never(name: str) -> api.Pod:
    p = make_pod(name).req(cpu="1").priority(1000).obj()
    p.preemption_policy = "Never"
    return p


def _fit_error_rows(s: Scheduler, pod: api.Pod) -> list[int]:
    """The rows of the failed pass ``pod``'s search gives, in the order it walked them."""
    fwk = s.profiles["default-scheduler"]
    with pytest.raises(FitError) as raised:
        s.search.run(fwk, CycleState(), pod)
    outcome = raised.value.diagnosis.outcome
    assert outcome is not None and outcome.feasible.size == 0
    rows: list[int] = outcome.failed.tolist()
    return rows


def _default_scheduler() -> Scheduler:
    """A scheduler of the default profile on a virtual clock, binding through a fake API."""
    return Scheduler(
        load_config(None, known_plugins=known_plugin_names()),
        clock=VirtualClock(),
        api_client=Api(),
        options=SchedulerOptions(registry=in_tree_registry()),
    )


def test_the_kept_pass_walks_the_rotation_of_its_own_start() -> None:
    """The search keeps its rotated node order while the list and the start index are the
    same (the kept failed pass then compares its rows by identity); a moved start index or a
    changed node list is rotated anew, and the kept pass answers in that walk's order."""
    s = _default_scheduler()
    for i in range(4):
        s.on_node_add(make_node(f"n{i}").cap(cpu="2", memory="8Gi", pods=20).obj())
        s.on_pod_add(make_pod(f"low{i}").req(cpu="1500m").node(f"n{i}").obj())
    blocker = make_pod("block").req(cpu="1500m").priority(2000).obj()
    s.queue.nominator.add(blocker, "n0")  # a nomination: no static failure kept instead
    order = s.cluster.nodes.order().tolist()
    s.search.next_start_node_index = 1
    assert _fit_error_rows(s, _never("a")) == order[1:] + order[:1]
    kept = s.search.kept_failures
    assert kept.kept is not None and kept.hits == 0
    assert _fit_error_rows(s, _never("b")) == order[1:] + order[:1]
    assert kept.hits == 1
    s.search.next_start_node_index = 3  # as a Pod placed after looking at two nodes leaves it
    assert _fit_error_rows(s, _never("c")) == order[3:] + order[:3]
    assert kept.hits == 2  # answered from the kept verdicts, in the new walk's order
    rows = s.cluster.nodes.order()
    again = s.search.rotation(rows, 3)
    assert again is s.search.rotation(rows, 3) and not again.flags.writeable
    s.on_node_add(make_node("n4").cap(cpu="2", memory="8Gi", pods=20).obj())
    longer = s.cluster.nodes.order()
    assert s.search.rotation(longer, 3).tolist() == longer.tolist()[3:] + longer.tolist()[:3]


def test_a_row_the_kept_pass_had_no_verdict_for_is_filtered() -> None:
    """A row outside the pass that was kept (no verdict for it) is filtered when a later
    pass walks it: here it fits, so the kept verdicts answer nothing."""
    s = _default_scheduler()
    for i in range(4):
        s.on_node_add(make_node(f"n{i}").cap(cpu="2", memory="8Gi", pods=20).obj())
    for i in range(3):  # n3 stays empty
        s.on_pod_add(make_pod(f"low{i}").req(cpu="1500m").node(f"n{i}").obj())
    fwk = s.profiles["default-scheduler"]
    pod = _never("a")
    state = CycleState()
    _, status, _ = fwk.run_pre_filter(state, pod)
    assert status.is_success()
    rows = s.cluster.nodes.order()
    full = fwk.run_filter(state, pod, rows)
    assert full.feasible.tolist() == [int(rows[3])]  # n3 fits, the others do not
    kept = KeptFailures()
    three = np.asarray(rows[:3], dtype=np.int64)
    first = fwk.run_filter(state, pod, three)
    assert first.feasible.size == 0
    kept.store("key", first, three, s.cluster.nodes, s.queue.nominator)
    assert kept.kept is not None
    assert kept.outcome(fwk, state, "key", pod, three, s.cluster.nodes, s.queue.nominator)
    assert kept.outcome(fwk, state, "key", pod, rows, s.cluster.nodes, s.queue.nominator) is None
