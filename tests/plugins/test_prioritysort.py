"""PrioritySort: upstream ``priority_sort_test.go`` (Less) plus the heap key."""

from __future__ import annotations

import heapq

import pytest

from kubesched.framework.interface import Handle, QueuedPodInfo
from kubesched.plugins import prioritysort as ps
from kubesched.testing import make_cluster, make_pod

LOW, HIGH = 10, 100
T1, T2 = 1000.0, 1001.0


def qpi(priority: int, ts: float = 0.0, seq: int = 0, name: str = "p") -> QueuedPodInfo:
    return QueuedPodInfo(make_pod(name).priority(priority).obj(), timestamp=ts, seq=seq)


def plugin() -> ps.PrioritySort:
    return ps.new(None, Handle(make_cluster([])))


# name, p1, p2, want p1 before p2
LESS_CASES = [
    ("p1.priority less than p2.priority", qpi(LOW), qpi(HIGH), False),
    ("p1.priority greater than p2.priority", qpi(HIGH), qpi(LOW), True),
    ("equal priority, p1 added earlier", qpi(HIGH, T1), qpi(HIGH, T2), True),
    ("equal priority, p2 added earlier", qpi(HIGH, T2), qpi(HIGH, T1), False),
    ("higher priority wins over earlier", qpi(LOW, T1), qpi(HIGH, T2), False),
    ("negative priorities", qpi(-5), qpi(-10), True),
]


@pytest.mark.parametrize(
    ("p1", "p2", "want"), [c[1:] for c in LESS_CASES], ids=[c[0] for c in LESS_CASES]
)
def test_less_and_sort_key_agree(p1: QueuedPodInfo, p2: QueuedPodInfo, want: bool) -> None:
    p = plugin()
    assert p.less(p1, p2) == want
    assert (p.sort_key(p1) < p.sort_key(p2)) == want


def test_seq_breaks_ties_fifo() -> None:
    p = plugin()
    items = [qpi(HIGH, T1, seq=s, name=f"p{s}") for s in (3, 1, 2)]
    assert not p.less(items[0], items[1]) and not p.less(items[1], items[0])
    assert p.sort_key(items[1]) < p.sort_key(items[2]) < p.sort_key(items[0])


def test_heap_pops_in_upstream_order() -> None:
    p = plugin()
    items = [
        qpi(LOW, T1, 0, "low-early"),
        qpi(HIGH, T2, 1, "high-late"),
        qpi(HIGH, T1, 2, "high-early"),
        qpi(HIGH, T1, 3, "high-early-2"),
    ]
    heap = [(p.sort_key(q), q.seq, q) for q in items]
    heapq.heapify(heap)
    order = [heapq.heappop(heap)[2].pod.name for _ in items]
    assert order == ["high-early", "high-early-2", "high-late", "low-early"]


def test_name() -> None:
    assert ps.NAME == "PrioritySort" == plugin().name
    assert not hasattr(plugin(), "events_to_register")
