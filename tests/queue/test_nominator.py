"""The nominator (upstream ``nominator``): nominations by node, kept across updates that carry
none, dropped on delete; the scheduling queue keeps it current."""

from __future__ import annotations

import dataclasses

import pytest

from kubesched.api import objects as api
from kubesched.queue.nominator import Nominator
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.testing import make_pod


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
