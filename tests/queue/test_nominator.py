"""The nominator (upstream ``nominator``): nominations by node, kept across updates that carry
none, dropped on delete; the scheduling queue keeps it current."""

from __future__ import annotations

import dataclasses

import pytest

from kubesched.api import objects as api
from kubesched.framework.interface import ClusterEventWithHint, Code, Status
from kubesched.queue.nominator import Nominator
from kubesched.queue.scheduling_queue import ACTIVE, GATED, SchedulingQueue
from kubesched.testing import make_pod
from tests.queue.support import NODE_ADD, Clock, make_queue, prio_sort


def _pod(name: str, nominated: str = "", node: str = "") -> api.Pod:
    p = make_pod(name).obj()
    p.nominated_node_name = nominated
    p.node_name = node
    return p


def _state(n: Nominator) -> dict[str, list[str]]:
    return {
        node: [p.name for p in n.nominated_pods_for_node(node)]
        for node in sorted(n.nominated_node_names())
    }


@pytest.mark.parametrize(
    ("steps", "want"),
    [
        ([("add", _pod("a"), "n1")], {"n1": ["a"]}),
        ([("add", _pod("a", "n2"), None)], {"n2": ["a"]}),  # ModeNoop: the Pod's own status
        ([("add", _pod("a"), None)], {}),
        ([("add", _pod("a"), "n1"), ("add", _pod("a"), "n2")], {"n2": ["a"]}),
        ([("add", _pod("a"), "n1"), ("add", _pod("a"), "")], {}),  # override with "" clears
        ([("add", _pod("a", node="n9"), "n1")], {}),  # bound Pods are never nominated
        ([("add", _pod("a"), "n1"), ("add", _pod("b"), "n1")], {"n1": ["a", "b"]}),
        ([("add", _pod("a"), "n1"), ("delete", _pod("a"), None)], {}),
        # an update carrying no nomination keeps the one made in memory
        ([("add", _pod("a"), "n1"), ("update", _pod("a"), _pod("a"))], {"n1": ["a"]}),
        # an update carrying one wins
        ([("add", _pod("a"), "n1"), ("update", _pod("a"), _pod("a", "n3"))], {"n3": ["a"]}),
        # the nomination being removed by the update clears it
        ([("add", _pod("a", "n1"), None), ("update", _pod("a", "n1"), _pod("a"))], {}),
    ],
)
def test_nominator_operations(
    steps: list[tuple[str, api.Pod, object]], want: dict[str, list[str]]
) -> None:
    n = Nominator()
    for op, p, arg in steps:
        if op == "add":
            assert arg is None or isinstance(arg, str)
            n.add(p, arg)
        elif op == "delete":
            n.delete(p.key)
        else:
            assert isinstance(arg, api.Pod)
            n.update(p, arg)
    assert _state(n) == want
    assert len(n) == sum(len(v) for v in want.values())


def test_the_queue_keeps_its_nominator_current() -> None:
    q = SchedulingQueue(clock=lambda: 0.0, sort_key=lambda qp: (-qp.pod.priority,))
    a = _pod("a", "n1")
    q.add(a)
    assert q.nominator.node_of(a.key) == "n1"
    q.update(a, dataclasses.replace(a, labels={"x": "y"}, nominated_node_name=""))
    assert q.nominator.node_of(a.key) == ""
    q.nominator.add(a, "n2")
    q.update(a, dataclasses.replace(a, nominated_node_name=""))
    assert q.nominator.node_of(a.key) == ""  # the update removed the Pod's own nomination
    b = _pod("b")
    q.add(b)
    q.nominator.add(b, "n3")
    q.update(b, dataclasses.replace(b, labels={"k": "v"}))
    assert q.nominator.node_of(b.key) == "n3"
    q.delete(b)
    assert len(q.nominator) == 0


def test_from_v1_37_a_gated_pod_is_nominated_as_it_is_added() -> None:
    """Upstream v1.37 ``addPod`` records an added Pod's nomination before ``moveToActiveQ``,
    gated or not (the scheduler passes ``nominate_gated`` from its feature gates' release)."""
    q = make_queue(Clock(), nominate_gated=True)
    g = dataclasses.replace(_pod("g", "n1"), scheduling_gates=("wait",))
    q.add(g)
    assert (q.queue_of(g.key), q.nominator.node_of(g.key)) == (GATED, "n1")
    a = _pod("a", "n2")
    q.add(a)
    assert (q.queue_of(a.key), q.nominator.node_of(a.key)) == (ACTIVE, "n2")


class _Switch:
    """A PreEnqueue plugin gating every Pod while ``closed`` (a cluster event lifts it)."""

    name = "Switch"
    closed = True

    def pre_enqueue(self, pod: api.Pod) -> Status:
        return Status(Code.UNSCHEDULABLE, ("closed",)) if self.closed else Status()


def test_a_pod_is_nominated_as_it_enters_active_q_not_while_gated() -> None:
    """Upstream ``PriorityQueue``: ``Add`` nominates a Pod only in ``moveToActiveQ`` (a gated
    one goes to the pool un-nominated); ``Update`` of a queued Pod, gated or not, runs
    ``UpdateNominatedPod``; an update of a Pod in flight leaves the nominator alone."""
    q = make_queue(Clock())
    g = dataclasses.replace(_pod("g", "n1"), scheduling_gates=("wait",))
    q.add(g)
    assert q.queue_of(g.key) == GATED
    assert q.nominator.node_of(g.key) == ""  # kubesched nominated it before PreEnqueue
    relabelled = dataclasses.replace(g, labels={"x": "y"})
    q.update(g, relabelled)  # still gated, but upstream's UpdateNominatedPod nominates it
    assert (q.queue_of(g.key), q.nominator.node_of(g.key)) == (GATED, "n1")
    q.delete(relabelled)
    assert len(q.nominator) == 0
    # the gate lifted by an update: nominated and in activeQ
    h = dataclasses.replace(_pod("h", "n2"), scheduling_gates=("wait",))
    q.add(h)
    assert q.nominator.node_of(h.key) == ""
    q.update(h, dataclasses.replace(h, scheduling_gates=()))
    assert (q.queue_of(h.key), q.nominator.node_of(h.key)) == (ACTIVE, "n2")
    # an update of a Pod the queue does not hold: nominated only if it enters activeQ
    u = dataclasses.replace(_pod("u", "n3"), scheduling_gates=("wait",))
    q.update(None, u)
    assert (q.queue_of(u.key), q.nominator.node_of(u.key)) == (GATED, "")
    v = _pod("v", "n3")
    q.update(None, v)
    assert (q.queue_of(v.key), q.nominator.node_of(v.key)) == (ACTIVE, "n3")
    # in flight: the update is recorded for the Pod's return, the nominator is left alone
    qp = q.pop()
    assert qp is not None and qp.pod.name == "h"
    q.update(qp.pod, dataclasses.replace(qp.pod, nominated_node_name="n9"))
    assert q.nominator.node_of(qp.pod.key) == "n2"


def test_a_gate_lifted_by_a_cluster_event_does_not_nominate() -> None:
    """Upstream ``moveToActiveQ`` nominates only on an unscheduled Pod's add or update."""
    switch = _Switch()
    q = SchedulingQueue(
        clock=Clock(),
        sort_key=prio_sort,
        pre_enqueue={api.DEFAULT_SCHEDULER_NAME: [switch]},
        hints={api.DEFAULT_SCHEDULER_NAME: {"Switch": [ClusterEventWithHint(NODE_ADD)]}},
    )
    p = _pod("p", "n1")
    q.add(p)
    assert (q.queue_of(p.key), q.nominator.node_of(p.key)) == (GATED, "")
    switch.closed = False
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert (q.queue_of(p.key), q.nominator.node_of(p.key)) == (ACTIVE, "")
