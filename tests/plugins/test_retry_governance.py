"""Retry governance (NodeResourcesFit ``retryGovernance``, beyond upstream, off by default):
a Pod rejected for resources wakes only when the event's node now has room for it, and a
Pod that becomes feasible is never left unwoken (compared with the setting off)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.config import types as t
from kubesched.config.encode import config_to_dict
from kubesched.config.load import load_config
from kubesched.plugins.registry import in_tree_registry, known_plugin_names
from kubesched.scheduler import Scheduler
from kubesched.testing import drain, make_node, make_pod, new_scheduler

FIT = "NodeResourcesFit"


def config(governed: bool | Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [{"name": FIT, "args": {"retryGovernance": governed}}],
            }
        ],
    }


# --------------------------------------------------------------------------- config
def load(raw: dict[str, Any] | None) -> t.KubeSchedulerConfiguration:
    return load_config(raw, known_plugins=known_plugin_names(in_tree_registry()))


def test_off_by_default_and_loaded_when_set() -> None:
    assert not load(None).profiles[0].plugin_config[FIT].retry_governance  # type: ignore[attr-defined]
    cfg = load(config(True))
    assert cfg.profiles[0].plugin_config[FIT].retry_governance  # type: ignore[attr-defined]
    again = load(config_to_dict(cfg))  # the round trip keeps it
    assert again.profiles[0].plugin_config[FIT].retry_governance  # type: ignore[attr-defined]


def test_a_bad_value_is_refused_with_its_field_path() -> None:
    with pytest.raises(InputError) as e:
        load(config("yes"))
    assert "profiles[0].pluginConfig[0].args.retryGovernance" in str(e.value)


# --------------------------------------------------------------------------- hints
def node(name: str, cpu: str = "4", pods: int = 110) -> api.Node:
    return make_node(name).cap(cpu=cpu, memory="64Gi", pods=pods).obj()


def bound(name: str, on: str, cpu: str = "1") -> api.Pod:
    return make_pod(name).req(cpu=cpu).node(on).priority(1000).obj()


def rejected(s: Scheduler, name: str, cpu: str) -> api.Pod:
    pod = make_pod(name).req(cpu=cpu).obj()
    s.on_pod_add(pod)
    drain(s)
    assert s.queue.pending_pods()["unschedulable"] >= 1
    return pod


def woken(s: Scheduler) -> int:
    p = s.queue.pending_pods()
    return p["active"] + p["backoff"]


@pytest.mark.parametrize("governed", [False, True])
def test_a_pod_larger_than_every_node_wakes_on_deletions_only_without_governance(
    governed: bool,
) -> None:
    s, _, _ = new_scheduler(config(governed))
    s.on_node_add(node("n"))
    s.on_pod_add(bound("a", "n"))
    rejected(s, "huge", cpu="100")
    s.on_pod_delete(bound("a", "n"))
    assert woken(s) == (0 if governed else 1)


def test_several_deletions_on_one_node_add_up() -> None:
    s, fake, clock = new_scheduler(config(True))
    s.on_node_add(node("n"))
    on_n = [bound(f"b{i}", "n") for i in range(4)]
    for p in on_n:
        s.on_pod_add(p)
    rejected(s, "two", cpu="2")
    s.on_pod_delete(on_n[0])
    assert woken(s) == 0  # 1 cpu free: still no room
    s.on_pod_delete(on_n[1])
    assert woken(s) == 1  # 2 cpu free now
    clock.now = 20.0
    s.queue.flush_backoff_completed()
    drain(s)
    assert fake.binds == {"default/two": "n"}


def test_a_deletion_on_another_full_node_does_not_wake_the_pod() -> None:
    s, _, _ = new_scheduler(config(True))
    s.on_node_add(node("n1"))
    s.on_node_add(node("n2"))
    s.on_pod_add(bound("x", "n1", cpu="4"))
    s.on_pod_add(bound("y", "n2", cpu="3"))
    s.on_pod_add(bound("z", "n2", cpu="1"))
    rejected(s, "p", cpu="4")
    s.on_pod_delete(bound("z", "n2", cpu="1"))  # n2: 1 cpu free
    assert woken(s) == 0
    s.on_pod_delete(bound("x", "n1", cpu="4"))  # n1: 4 cpu free
    assert woken(s) == 1


def test_a_deletion_that_frees_a_resource_few_nodes_have_wakes_the_pod() -> None:
    """Past MAX_DENSE_EXTENDED names a rare resource lives in the node table's sparse form;
    the hint must read it there (it read a missing dense column as "no room")."""
    from kubesched.state.nodes import MAX_DENSE_EXTENDED

    s, _, _ = new_scheduler(config(True))
    for i in range(MAX_DENSE_EXTENDED + 2):
        extra = {f"example.com/dev-{i}": 1}
        s.on_node_add(make_node(f"n{i}").cap(cpu="4", memory="64Gi", pods=110, **extra).obj())
    rare = {"example.com/dev-" + str(MAX_DENSE_EXTENDED + 1): 1}
    last = f"n{MAX_DENSE_EXTENDED + 1}"
    holder = make_pod("holder").req(cpu="1", **rare).node(last).priority(1000).obj()
    s.on_pod_add(holder)
    wants = make_pod("wants").req(cpu="1", **rare).obj()
    s.on_pod_add(wants)
    drain(s)
    assert s.queue.pending_pods()["unschedulable"] == 1
    s.on_pod_delete(holder)
    assert woken(s) == 1


def test_an_allocatable_raise_wakes_only_when_the_node_has_room_now() -> None:
    s, _, _ = new_scheduler(config(True))
    s.on_node_add(node("n", cpu="2"))
    s.on_pod_add(bound("a", "n", cpu="2"))
    rejected(s, "p", cpu="3")
    s.on_node_update(node("n", cpu="2"), node("n", cpu="4"))  # fits 4, but 2 free
    assert woken(s) == 0
    s.on_node_update(node("n", cpu="4"), node("n", cpu="5"))  # 3 free
    assert woken(s) == 1


def test_a_new_node_large_enough_wakes_the_pod() -> None:
    s, _, _ = new_scheduler(config(True))
    s.on_node_add(node("n"))
    rejected(s, "huge", cpu="16")
    s.on_node_add(node("small", cpu="8"))
    assert woken(s) == 0
    s.on_node_add(node("big", cpu="16"))
    assert woken(s) == 1


def test_too_many_pods_wakes_when_a_slot_frees() -> None:
    s, _, _ = new_scheduler(config(True))
    s.on_node_add(node("n", pods=1))
    s.on_pod_add(bound("a", "n"))
    rejected(s, "p", cpu="1")
    s.on_pod_delete(bound("a", "n"))
    assert woken(s) == 1


# --------------------------------------------------------------------------- never strands
Event = tuple[str, int, int]
"""``("delete", pod index, _)``, ``("raise", node index, new cpu)``, ``("add", _, cpu)``."""

events = st.lists(
    st.one_of(
        st.tuples(st.just("delete"), st.integers(0, 11), st.just(0)),
        st.tuples(st.just("raise"), st.integers(0, 2), st.integers(4, 12)),
        st.tuples(st.just("add"), st.just(0), st.integers(2, 12)),
    ),
    max_size=14,
)
pending_cpus = st.lists(st.integers(1, 10), min_size=1, max_size=6)


def run(governed: bool, cpus: list[int], script: list[Event]) -> tuple[dict[str, str], int]:
    """Three 4-cpu nodes full of 1-cpu Pods, Pods of ``cpus`` pending (distinct priorities,
    so both settings pop them in one order), then ``script``, each event followed by a
    backoff's wait and a drain.  The binds and the number of attempts."""
    s, fake, clock = new_scheduler(config(governed))
    cpu = [4, 4, 4]
    for i in range(3):
        s.on_node_add(node(f"n{i}"))
    running = {j: bound(f"b{j}", f"n{j // 4}") for j in range(12)}
    for p in running.values():
        s.on_pod_add(p)
    for i, c in enumerate(cpus):
        s.on_pod_add(make_pod(f"p{i}").req(cpu=str(c)).priority(100 - i).obj())
    drain(s)
    added = 0
    for kind, k, amount in script:
        if kind == "delete" and k in running:
            s.on_pod_delete(running.pop(k))
        elif kind == "raise" and amount > cpu[k]:
            s.on_node_update(node(f"n{k}", str(cpu[k])), node(f"n{k}", str(amount)))
            cpu[k] = amount
        elif kind == "add":
            s.on_node_add(node(f"new{added}", str(amount)))
            added += 1
        clock.now += 11.0  # past the longest backoff, never the 5-minute flush
        s.queue.flush_backoff_completed()
        drain(s)
    return fake.binds, sum(s.attempts.values())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pending_cpus, events)
def test_governance_never_strands_a_pod_that_fits(cpus: list[int], script: list[Event]) -> None:
    binds_off, attempts_off = run(False, cpus, script)
    binds_on, attempts_on = run(True, cpus, script)
    assert binds_on == binds_off
    assert attempts_on <= attempts_off


def test_a_pod_that_could_preempt_on_the_grown_node_is_woken() -> None:
    """Found by the property above: p0 (7 cpu) does not fit n1's free cpu after it grows to
    11, but preempting p1 (lower priority, bound there after the first raise) makes room, as
    upstream's hint lets it try; governance must wake it too."""
    script: list[Event] = [("raise", 1, 5), ("raise", 1, 11)]
    assert run(True, [7, 1, 1], script) == run(False, [7, 1, 1], script)


def test_governance_saves_attempts_on_a_fixed_script() -> None:
    script: list[Event] = [("delete", j, 0) for j in range(8)] + [("add", 0, 10)]
    binds_off, attempts_off = run(False, [9, 3], script)
    binds_on, attempts_on = run(True, [9, 3], script)
    assert binds_on == binds_off == {"default/p0": "new0", "default/p1": "n0"}
    assert attempts_on < attempts_off
