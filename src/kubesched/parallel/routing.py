"""The coordinator's side of auto routing: runs the Pods the router keeps, and measures.

:class:`Routing` is the one strategy object
:class:`~kubesched.parallel.coordinator.ParallelScheduler` holds when routing is on (the
coordinator's ``sign`` and ``schedule_pod`` read it): each step it fills the shards'
outboxes through the dispatcher (:meth:`Routing.fill`, at most :data:`DRAINING` Pods of its
own while messages are outstanding), and it owns the shards' dormancy
(:mod:`~kubesched.parallel.dormancy`: woken when a Pod goes to a shard, dozing once idle).
The dispatcher offers it every popped Pod outside a gang (:meth:`Routing.divert`); for a Pod
of a signature the :class:`~.router.Router` keeps, it runs the serial scheduler's cycle on
the authoritative cache right there (the coordinator *is* a Scheduler), registered like a
proposal of shard -1, so the bind -- or, while it is held (a slow API server, a Permit
wait), the hold -- is streamed to every shard like the binder's.

It also feeds the router its figures, all in **CPU seconds** so that a busy neighbour does
not tilt the comparison: per step, the coordinator's CPU (``time.process_time``, twice a
step) is shared between its serial cycles, their searches and the pipeline's work in
proportion to their wall-clock time, with the time blocked on a shard's answer and the
stream's pickling (counted per entry) set apart; a shard's per-Pod search times (wall
clock) are scaled by its message's CPU over wall-clock time.  Serial cycles are measured
only in steps without messages in flight: while shards work beside it, the coordinator's
own cycles cost more CPU (two cores are often two hyper-threads of one), which would tilt
the comparison towards the pipeline.
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from typing import Protocol

from kubesched.api import objects as api
from kubesched.framework.interface import QueuedPodInfo
from kubesched.framework.runtime import Framework
from kubesched.parallel import protocol as p
from kubesched.parallel.dormancy import Dormancy, DormancyHost
from kubesched.parallel.router import Router
from kubesched.queue.scheduling_queue import SchedulingQueue

DRAINING = 8
"""Pods the coordinator schedules itself per step while shards still hold messages: a
switch to its own cycles lets the pipeline drain first (its cycles are measured only with
the shards idle)."""


class RoutingHost(DormancyHost, Protocol):
    """What auto routing needs of its coordinator: a Scheduler (its serial cycle) with a
    dispatcher, shards (``outstanding`` messages each) whose stream state dormancy changes,
    and a binder keeping PreFilter results (:mod:`~.prefilter`, released while the
    coordinator schedules itself)."""

    profiles: dict[str, Framework]
    queue: SchedulingQueue

    def sign(self, fwk: Framework, pod: api.Pod) -> tuple[object, ...] | None: ...

    def schedule_popped(self, qp: QueuedPodInfo) -> None: ...

    def committed(self, key: str) -> None:
        """The commit of ``key`` is made (streamed as held while its bind is in flight)."""


class Routing:
    """Auto routing for coordinator ``hub`` by ``router`` (see the module docstring)."""

    def __init__(self, hub: RoutingHost, router: Router) -> None:
        self.hub = hub
        self.router = router
        self.dormancy = Dormancy(hub, self.encoded)
        self.routed_pod: object = None
        self.routed_sig: object = None
        """The Pod whose cycle :meth:`divert` is running, and its signature."""
        self.timing = False
        """Whether that cycle is timed for the router (its search: :attr:`search`)."""
        self._last: tuple[object, object, Hashable, tuple[object, ...] | None] = (
            None,
            None,
            None,
            None,
        )
        """``(framework, signature, key, first signature)`` of the last Pod offered: a run of
        equivalent Pods shares one router key object and one signature object (compared
        with the previous Pod's, instead of hashed per Pod for the router and compared part
        by part again by result reuse)."""
        self.serial = 0.0
        self.search = 0.0
        self.blocked = 0.0
        self.encode = 0.0
        self.encoded_entries = 0
        self.answered = 0
        self.served = 0
        self.samples: list[tuple[Hashable, float, float]] = []
        """This step's serial cycles: ``(signature, seconds, of which searching)``."""
        self._t0 = 0.0
        self._c0 = 0.0

    # ------------------------------------------------------------------ a step
    def begin(self) -> None:
        """A step starts."""
        self.dormancy.begin()
        self.serial = self.search = self.blocked = self.encode = 0.0
        self.encoded_entries = self.answered = self.served = 0
        self.samples.clear()
        self._t0 = time.perf_counter()
        self._c0 = time.process_time()

    def fill(self) -> int:
        """The step's hand-outs: Pods popped and diverted here or handed to the shards (at
        most :data:`DRAINING` taken here while messages are outstanding); dormant shards
        about to get Pods are woken.  How many Pods were handed out or taken."""
        hub = self.hub
        budget = DRAINING if any(hub.outstanding) else None
        n = hub.dispatcher.fill(hub.queue, self.divert, budget)
        if not hub.stream.synced and any(hub.dispatcher.outbox):
            self.dormancy.wake()
        return n

    def end(self, pipeline: bool) -> None:
        """The step is over (``pipeline``: it sent or received a message): its figures,
        scaled from wall-clock to CPU time, go to the router; idle shards may doze off."""
        self._measured(pipeline)
        self.dormancy.doze_if_cheaper()

    def _measured(self, pipeline: bool) -> None:
        if not pipeline and not self.samples:
            return
        wall = time.perf_counter() - self._t0 - self.blocked
        cpu = time.process_time() - self._c0
        scale = min(1.0, cpu / wall) if wall > 0 else 1.0
        router = self.router
        if not pipeline and not any(self.hub.outstanding):  # the shards idle: a clean sample
            for key, seconds, search in self.samples:
                router.served_serially(key, seconds * scale, search * scale)
        if self.encoded_entries:
            router.encoded(self.encode * scale, self.encoded_entries)
        if pipeline:
            spent = max(0.0, wall - self.serial - self.encode)
            router.coordinator_step(spent * scale, self.answered)

    # ------------------------------------------------------------------ serial cycles
    def divert(self, qp: QueuedPodInfo, popped: float) -> tuple[bool, Hashable]:
        """Offered a popped Pod by the dispatcher (``popped``: ``perf_counter()`` before the
        pop): run its cycle here if the router says so, or if a preemption nominated it (the
        nomination and the victims' deletions are the coordinator's: the serial cycle tries
        the nominated node first, as upstream); ``(taken, signature)``."""
        hub = self.hub
        pod = qp.pod
        fwk = hub.profiles.get(pod.scheduler_name)
        if fwk is None:
            return False, None
        sig = hub.sign(fwk, pod)  # routed_pod is not this Pod yet: computed
        last = self._last
        if sig is not None and last[0] is fwk and last[1] == sig:
            # equal to the previous Pod's (whose parts are most often the same objects): the
            # same key, and the signature object result reuse already holds
            self._last = (fwk, sig, last[2], last[3])
            key, sig = last[2], last[3]
        else:
            key = (fwk.profile_name, sig)
            self._last = (fwk, sig, key, sig)
        router = self.router
        if not router.serial(key) and not (
            pod.nominated_node_name or hub.queue.nominator.node_of(pod.key)
        ):
            return False, key
        timed = self.timing = router.timing
        search = self.search if timed else 0.0
        prefilter = hub.binder.prefilter
        if prefilter.kept:
            prefilter.release()
        self.routed_pod, self.routed_sig = pod, sig
        try:
            hub.schedule_popped(qp)
        finally:
            self.routed_pod = None
        if hub.stream.synced:
            hub.committed(pod.key)
        dt = time.perf_counter() - popped
        if timed:
            self.samples.append((key, dt, self.search - search))
        self.serial += dt
        self.served += 1
        return True, key

    # ------------------------------------------------------------------ the pipeline
    def encoded(self, seconds: float, entries: int) -> None:
        """Pickling ``entries`` stream entries took ``seconds``."""
        self.encode += seconds
        self.encoded_entries += entries

    def reply(self, reply: p.FromShard, blocked: float) -> None:
        """A shard's answer (``blocked``: seconds spent waiting for and reading it): its
        figures for the router, read before the binder closes the Pods' records."""
        self.blocked += blocked
        self.answered += len(reply.results)
        router = self.router
        in_flight = self.hub.dispatcher.in_flight
        scale = min(1.0, reply.cpu / reply.busy) if reply.busy > 0 else 1.0
        searched = 0.0
        for res in reply.results:
            rec = in_flight.get(res.key)
            if rec is not None and rec.sig is not None:
                router.answered(rec.sig)
        for key, seconds in reply.search.items():
            rec = in_flight.get(key)
            if rec is not None and rec.sig is not None:
                router.searched_on_shard(rec.sig, seconds * scale)
            searched += seconds * scale
        rest = max(0.0, reply.cpu - reply.apply_cpu - searched)
        router.shard_message(rest, reply.apply_cpu, reply.applied, len(reply.results))
