"""In-flight Pods and the cluster events that happened while they were being scheduled.

Upstream v1.34 keeps ``inFlightPods`` (UID -> list element) and ``inFlightEvents`` (a linked
list interleaving popped Pods and events) in ``active_queue.go``.  When a Pod comes back
unschedulable, every event recorded after it was popped is replayed through the queueing
hints (``determineSchedulingHintForInFlightPod``), so an event that arrived mid-attempt is not
lost.  Events older than the oldest in-flight Pod are pruned when a Pod is done.

Here the list is a sequence-numbered log: Pods remember the sequence number at which they were
popped; events are appended with increasing numbers; :meth:`InFlightLog.events_since` bisects.
Everything is O(log n) or amortised O(1).
"""

from __future__ import annotations

import bisect
from collections import deque
from typing import Any

from kubesched.framework.interface import ClusterEvent

Recorded = tuple[ClusterEvent, Any, Any]
"""``(event, old_obj, new_obj)``."""


class InFlightLog:
    """Which Pods are being scheduled, and what happened meanwhile."""

    def __init__(self) -> None:
        self._seq = 0
        self._pods: dict[str, tuple[int, str]] = {}  # uid -> (start seq, pod key)
        self._order: deque[tuple[int, str]] = deque()  # (start seq, uid), oldest first
        self._events: list[tuple[int, Recorded]] = []
        self._head = 0  # events before this index are pruned
        self._counts: dict[ClusterEvent, int] = {}
        """How many of the events from ``_head`` on are each event (kept as they are logged
        and pruned, so the once-a-second gauge does not walk a burst's long log)."""

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def start(self, uid: str, key: str) -> None:
        """Pod ``uid`` (queue key ``key``) was popped."""
        self._seq += 1
        self._pods[uid] = (self._seq, key)
        self._order.append((self._seq, uid))

    def key_of(self, uid: str) -> str | None:
        """The queue key of in-flight Pod ``uid``."""
        rec = self._pods.get(uid)
        return None if rec is None else rec[1]

    def record(self, event: ClusterEvent, old: Any, new: Any) -> bool:
        """Log ``event`` if any Pod is in flight (upstream ``addEventIfAnyInFlight``)."""
        if not self._pods:
            return False
        self._seq += 1
        self._events.append((self._seq, (event, old, new)))
        self._counts[event] = self._counts.get(event, 0) + 1
        return True

    def record_for_pod(self, uid: str, evs: list[ClusterEvent], old: Any, new: Any) -> bool:
        """Log ``evs`` if Pod ``uid`` is in flight (upstream ``addEventsIfPodInFlight``)."""
        if uid not in self._pods:
            return False
        counts = self._counts
        for ev in evs:
            self._seq += 1
            self._events.append((self._seq, (ev, old, new)))
            counts[ev] = counts.get(ev, 0) + 1
        return True

    def events_since(self, uid: str) -> list[Recorded] | None:
        """Events recorded after Pod ``uid`` was popped; None if it is not in flight."""
        rec = self._pods.get(uid)
        if rec is None:
            return None
        start = bisect.bisect_right(self._events, rec[0], lo=self._head, key=lambda e: e[0])
        return [e for _, e in self._events[start:]]

    def done(self, uid: str) -> str | None:
        """Pod ``uid`` finished its attempt; returns its key (None if it was not in flight)."""
        rec = self._pods.pop(uid, None)
        if rec is None:
            return None
        order = self._order
        while order and self._pods.get(order[0][1], (None,))[0] != order[0][0]:
            order.popleft()
        if not order:
            self._events.clear()
            self._head = 0
            self._counts.clear()
        else:
            oldest = order[0][0]
            events, counts = self._events, self._counts
            while self._head < len(events) and events[self._head][0] < oldest:
                ev = events[self._head][1][0]
                left = counts[ev] - 1
                if left:
                    counts[ev] = left
                else:
                    del counts[ev]
                self._head += 1
            if self._head > 1024 and self._head * 2 > len(events):
                del events[: self._head]
                self._head = 0
        return rec[1]

    def tracked(self) -> tuple[int, dict[ClusterEvent, int]]:
        """How many Pods are in flight and how many of each event are still logged for them:
        what upstream's ``inFlightEvents`` list holds (``scheduler_inflight_events``)."""
        return len(self._pods), dict(self._counts)

    def pods(self) -> list[str]:
        """UIDs of the Pods in flight, oldest first."""
        return [uid for seq, uid in self._order if self._pods.get(uid, (None,))[0] == seq]
