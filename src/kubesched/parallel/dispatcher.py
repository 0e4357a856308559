"""The dispatcher: owns the queue's popped Pods and hands each to exactly one shard.

Both coordinators hand out through it: the in-process one
(:class:`~kubesched.parallel.coordinator.ParallelScheduler`) and the live one
(:class:`~kubesched.live.coordinator.CoordinatorScheduler`).  It pops from the coordinator's
:class:`~kubesched.queue.scheduling_queue.SchedulingQueue` (so PreEnqueue, QueueSort, backoff
and queueing hints stay upstream's), chooses the shard, and records every Pod it hands out
in :attr:`Dispatcher.in_flight` (Pod key -> :class:`InFlight`): a Pod is held by one shard at
a time, and its record is closed exactly once (:meth:`Dispatcher.close`): by the binder
(committed, refused, or reported unschedulable), by a crash or loss of its shard (back to
the queue), or by its deletion.

- **Transport**: how a hand-out reaches its shard is a :class:`Courier`'s.  In process the
  dispatcher is its own: the stripped Pod joins the shard's :attr:`Dispatcher.outbox`, sent
  with its next message.  Live, the coordinator's courier patches the Pod's annotations
  (:mod:`kubesched.live.coordinator`), which may fail: then no record is kept.

- **Units**: a gang (Pods labelled ``scheduling.x-k8s.io/pod-group``) goes to one shard as
  a whole: when one member is popped, every other member waiting in the queue is taken with
  it (:class:`PendingGangs`, which the live coordinator uses too), and while any member is
  in flight later members follow to the same shard.
- **Balance**: every other Pod goes to the open shard (:meth:`Courier.open`) with the fewest
  Pods in flight (ties go round the shards, one turn per Pod handed out), at most
  ``window`` in flight (in process also at most ``round_size`` new Pods per shard per step).
- **Partitions**: nodes belong to shards by :func:`~kubesched.parallel.protocol.partition_of`;
  shards search their own partition first.  The dispatcher needs no node knowledge for
  that, so it never touches the cache.
- **Routing**: with a ``divert`` callback (the coordinator's auto routing,
  :mod:`~kubesched.parallel.router`) each popped Pod outside a gang is offered to it first;
  a Pod it takes was scheduled by the coordinator itself, at most ``round_size`` per shard
  per step (the coordinator may ask for fewer), so the step still serves the shards.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Container, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from kubesched.api import objects as api
from kubesched.framework.interface import QueuedPodInfo
from kubesched.parallel import protocol as p
from kubesched.queue.scheduling_queue import SchedulingQueue


@dataclass(slots=True)
class InFlight:
    """A Pod handed to a shard: its queue record, the step it left in, the Pod as sent."""

    qp: QueuedPodInfo
    shard: int
    cycle: int
    start: float
    """``time.perf_counter()`` when handed out (attempt durations count from here)."""
    sent: api.Pod
    """The :func:`~kubesched.parallel.protocol.strip`-ped Pod the shard got."""
    group: str
    sig: Hashable = None
    """The Pod's routing signature (:mod:`~kubesched.parallel.router`; None without)."""
    attempt: int = 0
    """The hand-out's number on the Pod (live: its ``kubesched.io/attempt``; 0 in process)."""
    handed_at: float = 0.0
    """The coordinator's clock when handed out (live: the dispatch timeout counts from
    here; 0 in process)."""


class Courier(Protocol):
    """How a hand-out reaches its shard (module docstring): the in-process dispatcher's
    outboxes, the live coordinator's annotation patches."""

    def open(self, shard: int) -> bool:
        """Whether ``shard`` may take another Pod now (besides the dispatcher's window)."""
        ...

    def send(self, rec: InFlight) -> bool:
        """Hand ``rec.qp``'s Pod to ``rec.shard``, filling in what the transport numbers
        (``sent``, ``attempt``, ``handed_at``, ``start``).  False: it was not handed out and
        the courier has done with the Pod (back to the queue, or failed); the dispatcher
        keeps no record of it."""
        ...


@dataclass(slots=True)
class PendingGangs:
    """The pending members of each gang, so that a gang goes to one shard whole (both
    coordinators' rule: the in-process :class:`Dispatcher` and the live
    :class:`~kubesched.live.coordinator.CoordinatorScheduler`)."""

    members: dict[str, set[str]] = field(default_factory=dict)
    """Gang ``namespace/group`` to the keys of its pending members."""

    def added(self, pod: api.Pod) -> None:
        """A pending Pod appeared (gang members are indexed by group)."""
        group = p.group_of(pod)
        if group:
            self.members.setdefault(group, set()).add(pod.key)

    def gone(self, pod: api.Pod) -> None:
        """A pending Pod was bound or deleted."""
        group = p.group_of(pod)
        if group and group in self.members:
            self.members[group].discard(pod.key)
            if not self.members[group]:
                del self.members[group]

    def take_siblings(
        self, queue: SchedulingQueue, pod: api.Pod, group: str, held: Container[str]
    ) -> Iterator[QueuedPodInfo]:
        """The other pending members of ``pod``'s gang ``group`` that are not ``held`` (handed
        out already) and wait in ``queue`` (activeQ, backoff or unschedulable, not gated), in key
        order, each taken out of it as a pop would (:meth:`SchedulingQueue.take`: a new
        attempt, in flight) just before it is yielded."""
        for key in sorted(self.members.get(group, ())):
            if key == pod.key or key in held:
                continue
            qp = queue.take(key)
            if qp is not None:
                yield qp


Divert = Callable[[QueuedPodInfo, float], tuple[bool, Hashable]]
"""Offered a popped Pod and the ``time.perf_counter()`` before its pop: ``(taken,
signature)``; a Pod taken was scheduled by the caller."""


@dataclass(slots=True)
class Dispatcher:
    """See the module docstring."""

    shards: int
    round_size: int = 64
    window: int = 192
    in_flight: dict[str, InFlight] = field(default_factory=dict)
    load: list[int] = field(default_factory=list)
    outbox: list[list[api.Pod]] = field(default_factory=list)
    gangs: PendingGangs = field(default_factory=PendingGangs)
    group_load: Counter[str] = field(default_factory=Counter)
    group_shard: dict[str, int] = field(default_factory=dict)
    handed: int = 0
    counted: Callable[[int], None] | None = None
    """Told +1 for each Pod handed out and -1 for each record closed (the coordinator counts
    them among its bindings in flight)."""
    courier: Courier | None = None
    """The transport of hand-outs (None: the dispatcher's own outboxes)."""
    _via: Courier = field(init=False)

    def __post_init__(self) -> None:
        self.load = [0] * self.shards
        self.outbox = [[] for _ in range(self.shards)]
        self._via = self if self.courier is None else self.courier

    # ------------------------------------------------------------------ handing out
    def fill(
        self, queue: SchedulingQueue, divert: Divert | None = None, budget: int | None = None
    ) -> int:
        """Pop Pods while a shard has room this step and ``divert`` took fewer than
        ``budget`` (default ``round_size`` per shard); returns how many were handed out or
        taken (see the module docstring)."""
        if budget is None:
            budget = self.round_size * self.shards
        n = 0
        served = 0
        room = self._room()
        clock, label = time.perf_counter, p.GROUP_LABEL
        while room and served < budget:
            t0 = clock()
            qp = queue.pop()
            if qp is None:
                return n
            group = p.group_of(qp.pod) if label in qp.pod.labels else ""
            sig: Hashable = None
            if divert is not None and not group:
                taken, sig = divert(qp, t0)
                if taken:
                    served += 1
                    n += 1
                    continue
            if group and group in self.group_shard:  # its members in flight are there
                target = self.group_shard[group]
            else:  # least loaded; ties go round the shards
                start = self.handed % self.shards
                target = min(room, key=lambda i: (self.load[i], (i - start) % self.shards))
            n += self._hand(qp, target, group, queue.scheduling_cycle, sig)
            if group:
                for sibling in self.gangs.take_siblings(queue, qp.pod, group, self.in_flight):
                    n += self._hand(sibling, target, group, queue.scheduling_cycle)
            room = self._room()
        return n

    def _room(self) -> list[int]:
        """The shards that may take another Pod now."""
        via = self._via
        return [i for i in range(self.shards) if self.load[i] < self.window and via.open(i)]

    def _hand(
        self, qp: QueuedPodInfo, target: int, group: str, cycle: int, sig: Hashable = None
    ) -> int:
        rec = InFlight(qp, target, cycle, time.perf_counter(), qp.pod, group, sig)
        if not self._via.send(rec):
            return 0
        self.in_flight[qp.pod.key] = rec
        if self.counted is not None:
            self.counted(1)
        self.load[target] += 1
        if group:
            self.group_shard[group] = target
            self.group_load[group] += 1
        self.handed += 1
        return 1

    # ------------------------------------------------------------------ the in-process courier
    def open(self, shard: int) -> bool:
        """In process: at most ``round_size`` new Pods per shard per message."""
        return len(self.outbox[shard]) < self.round_size

    def send(self, rec: InFlight) -> bool:
        """In process: the :func:`~kubesched.parallel.protocol.strip`-ped Pod joins the
        shard's outbox."""
        rec.sent = p.strip(rec.qp.pod)
        self.outbox[rec.shard].append(rec.sent)
        return True

    def take_outbox(self, shard: int) -> list[api.Pod]:
        """The Pods handed to ``shard`` since its last message."""
        out, self.outbox[shard] = self.outbox[shard], []
        return out

    # ------------------------------------------------------------------ closing records
    def close(self, key: str, shard: int | None = None) -> InFlight | None:
        """Close the record of ``key`` (only if ``shard`` holds it, when given)."""
        rec = self.in_flight.get(key)
        if rec is None or (shard is not None and rec.shard != shard):
            return None
        del self.in_flight[key]
        if self.counted is not None:
            self.counted(-1)
        self.load[rec.shard] -= 1
        if rec.group:
            self.group_load[rec.group] -= 1
            if self.group_load[rec.group] <= 0:
                del self.group_load[rec.group]
                self.group_shard.pop(rec.group, None)
        return rec

    def held_by(self, shard: int) -> list[str]:
        """Keys of the Pods ``shard`` holds, in the order they were handed out."""
        return [k for k, r in self.in_flight.items() if r.shard == shard]
