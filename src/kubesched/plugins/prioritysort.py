"""PrioritySort: the default QueueSort plugin (upstream ``queuesort/priority_sort.go``).

Upstream orders the activeQ with ``Less(a, b)``: higher ``spec.priority`` first, then the Pod
that entered the queue earlier (``QueuedPodInfo.Timestamp``).  kubesched's queue is a heap of
sort keys, so the same order is expressed as a key where smaller pops first.

Deviation: the key ends with ``QueuedPodInfo.seq`` (insertion counter), so Pods equal in
priority and timestamp pop FIFO instead of in Go's unspecified heap order; runs are
deterministic.  Upstream takes no args and registers no events; neither does this.
"""

from __future__ import annotations

from kubesched.config import names
from kubesched.framework.interface import Handle, QueuedPodInfo

NAME = names.PRIORITY_SORT


class PrioritySort:
    """QueueSort by priority (descending), then queue timestamp, then insertion order."""

    name = NAME

    def __init__(self, args: object | None, handle: Handle) -> None:
        self.handle = handle

    def sort_key(self, qp: QueuedPodInfo) -> tuple[int, float, int]:
        """``(-priority, timestamp, seq)``: the smallest key is the Pod to try first."""
        return (-qp.pod.priority, qp.timestamp, qp.seq)

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Upstream ``Less``: whether ``a`` goes before ``b`` (ignores ``seq``)."""
        return less(a, b)


def less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """Upstream ``PrioritySort.Less``: higher priority, or equal priority and earlier."""
    pa, pb = a.pod.priority, b.pod.priority
    return pa > pb or (pa == pb and a.timestamp < b.timestamp)


def new(args: object | None, handle: Handle) -> PrioritySort:
    """Factory; PrioritySort has no args (anything given is ignored, as upstream)."""
    return PrioritySort(args, handle)
