"""A nomination taken off a node frees that node for the Pods of lower or equal priority, as
upstream's ``updatePodInSchedulingQueue`` does on the status patch (``AssignedPodDelete``
with the Pod as it was): a preemptor whose later attempt finds no victims loses its
nomination and the Pod its nomination kept out is tried again (v1.37 seed 18003 case 6)."""

from __future__ import annotations

from typing import Any

from kubesched.config.load import load_config
from kubesched.framework.outcomes import PostFilterResult
from kubesched.plugins.registry import in_tree_registry, known_plugin_names
from kubesched.scheduler import Scheduler, SchedulerOptions
from kubesched.testing import VirtualClock, make_node, make_pod
from tests.plugins._defaultpreemption import Api


def _scheduler() -> tuple[Scheduler, Api, VirtualClock]:
    fake, clock = Api(), VirtualClock()
    cfg = load_config(None, known_plugins=known_plugin_names())
    s = Scheduler(
        cfg, clock=clock, api_client=fake, options=SchedulerOptions(registry=in_tree_registry())
    )
    fake.scheduler = s
    s.on_node_add(make_node("n0").cap(cpu="2", memory="8Gi", pods=20).obj())
    return s, fake, clock


def test_a_preemptor_left_without_victims_releases_the_pod_its_nomination_kept_out() -> None:
    s, fake, clock = _scheduler()
    s.on_pod_add(make_pod("victim").req(cpu="2").node("n0").obj())
    s.on_pod_add(make_pod("pre").req(cpu="2").priority(100).obj())
    assert s.schedule_one()  # pre preempts the victim and is nominated to n0
    assert fake.deleted == ["default/victim"]
    assert s.queue.nominator.node_of("default/pre") == "n0"
    s.on_pod_add(make_pod("small").req(cpu="500m").obj())
    assert s.schedule_one()  # pre's nomination holds n0's 2 cpu for small (priority 0)
    assert "default/small" not in fake.binds
    s.on_pod_add(make_pod("big").req(cpu="1500m").priority(1000).obj())
    assert s.schedule_one()  # big ignores lower nominations: it takes the room
    assert fake.binds["default/big"] == "n0"
    clock.now += 11.0
    s.queue.flush_backoff_completed()
    while s.schedule_one():  # pre: no fit, no victims; its nomination is cleared
        pass
    assert s.queue.nominator.node_of("default/pre") == ""
    assert "default/pre" not in fake.binds
    assert fake.binds.get("default/small") == "n0"  # tried again at once, not after 5 min


def test_nominating_a_preemptor_releases_the_lower_nominations_on_its_node(
    monkeypatch: Any,
) -> None:
    """``prepareCandidate`` clears lower-priority nominations on the chosen node; each cleared
    Pod raises the event once the preemptor's failure is handled, offered to Pods of
    priority at most its own."""
    s, _, _ = _scheduler()
    lower = make_pod("lower").req(cpu="1").priority(50).obj().nominated_to("n0")
    equal = make_pod("equal").req(cpu="1").priority(100).obj().nominated_to("n0")
    s.queue.nominator.add(lower)
    s.queue.nominator.add(equal)
    heard: list[tuple[str, Any, Any, bool, bool]] = []

    def spy(event: Any, old: Any = None, new: Any = None, pre_check: Any = None) -> None:
        lo = make_pod("x").priority(old.priority).obj()
        hi = make_pod("y").priority(old.priority + 1).obj()
        heard.append((event.label, old, new, pre_check(lo), pre_check(hi)))

    monkeypatch.setattr(s.queue, "move_all_to_active_or_backoff", spy)
    s.on_pod_add(make_pod("pre").req(cpu="2").priority(100).obj())
    qp = s.queue.pop()
    assert qp is not None
    s.failing.nominate(qp, PostFilterResult("n0"))
    assert heard == []  # raised once the failed Pod is back in the queue
    s.failing.release_nominations()
    assert heard == [("AssignedPodDelete", lower, None, True, False)]
    assert s.queue.nominator.node_of("default/equal") == "n0"
