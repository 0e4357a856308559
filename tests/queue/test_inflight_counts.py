"""The in-flight log's per-event counts (``scheduler_inflight_events``) are kept as events are
logged and pruned: they must equal what the log still holds for the Pods in flight, whatever
order the Pods finish in (the long log of a burst is not walked once a second)."""

from __future__ import annotations

import random
from collections import Counter

from kubesched.framework.clusterevents import ActionType, ClusterEvent, Resource
from kubesched.queue.inflight import InFlightLog

EVENTS = (
    ClusterEvent(Resource.NODE, ActionType.ADD),
    ClusterEvent(Resource.POD, ActionType.UPDATE),
    ClusterEvent(Resource.ASSIGNED_POD, ActionType.ADD),
)


def _logged(log: InFlightLog, in_flight: list[str]) -> Counter[ClusterEvent]:
    """The events logged since the oldest Pod in flight was popped (from the log itself)."""
    if not in_flight:
        return Counter()
    since = log.events_since(in_flight[0])
    assert since is not None
    return Counter(ev for ev, _, _ in since)


def test_counts_follow_logging_and_pruning() -> None:
    rng = random.Random(7)
    log = InFlightLog()
    in_flight: list[str] = []  # oldest first
    n = 0
    for step in range(20_000):
        roll = rng.random()
        if roll < 0.3:
            n += 1
            uid = f"u{n}"
            log.start(uid, f"ns/p{n}")
            in_flight.append(uid)
        elif roll < 0.55 and in_flight:
            uid = rng.choice(in_flight[:3]) if rng.random() < 0.7 else rng.choice(in_flight)
            assert log.done(uid) is not None
            in_flight.remove(uid)
        elif roll < 0.85:
            log.record(rng.choice(EVENTS), None, None)
        elif in_flight:
            log.record_for_pod(rng.choice(in_flight), list(EVENTS[:2]), None, None)
        if step % 97 == 0 or not in_flight:
            pods, counts = log.tracked()
            assert pods == len(in_flight)
            assert counts == dict(_logged(log, in_flight)), step
