"""Dormant shards: under auto routing, no commit stream while the coordinator works alone.

With auto routing (:mod:`~kubesched.parallel.router`) the coordinator may schedule every Pod
itself for long stretches -- for the whole run when every signature's search is too cheap
for the pipeline.  Keeping the shards' replicas current meanwhile costs the coordinator a
stream entry per event (and memory: the log grows until a shard reads it), and the shards a
catch-up on all of it at the next probe.  So :class:`Dormancy`, a part of
:class:`~kubesched.parallel.coordinator.ParallelScheduler`:

- starts the shards **dormant** (``synced`` False): the informer handlers stream nothing
  (:mod:`~.streaming`), and the binder's cache observers (the fast path's anti-affinity
  counts, the kept PreFilter results, the tap that streams released holds) are detached,
  since no proposal is checked meanwhile;
- **wakes** them (:meth:`Dormancy._wake`) when the dispatcher hands a shard a Pod: the
  observers are attached again (the cache replays its Pods to them), and each shard's next
  message starts it over from a snapshot of the authoritative cache
  (:meth:`Dormancy._snapshot_stream`, pickled once for all shards; ``ToShard.reset``);
- lets them **doze** off again (:meth:`Dormancy._doze`) once every shard is idle (no
  message, Pod or Permit wait) and the log they have not read is at least half a snapshot
  (and :data:`DOZE_AFTER` entries):
  dropping it then costs a later wake at most twice the catch-up, and saves the stream
  for as long as the coordinator keeps working alone.

Without auto routing the shards always follow the stream, as before.
"""

from __future__ import annotations

import time

from kubesched.parallel import protocol as p
from kubesched.parallel.binder import Binder
from kubesched.parallel.dispatcher import Dispatcher
from kubesched.parallel.routing import Routing
from kubesched.parallel.streaming import CacheTap, snapshot_entries
from kubesched.scheduler import Scheduler
from kubesched.state.cache import Observer

DOZE_AFTER = 1024
"""The shards doze off only once they have this many stream entries unread: a shorter
log is cheap to catch up on (~10-20 µs per entry per shard), and a small cluster's shards
would otherwise doze and wake by turns."""


class Dormancy(Scheduler):
    """Dormant shards (see the module docstring); the coordinator sets the attributes."""

    synced: bool
    fresh: list[bool]
    log: list[p.Entry]
    log_base: int
    cursor: list[int]
    outstanding: list[int]
    waiting: list[int]
    held_logged: set[str]
    shard_count: int
    dispatcher: Dispatcher
    binder: Binder
    routing: Routing | None
    tap: CacheTap
    _snap: bytes | None

    def _observers(self) -> list[Observer]:
        """The binder's observers of the authoritative cache, and the stream's tap."""
        return [self.binder.fast, self.binder.prefilter, self.tap]

    def _doze_if_cheaper(self) -> None:
        """At the end of a step: doze off if the shards are idle and a snapshot would cost
        them at most twice the log they have not read."""
        if not self.synced or any(self.outstanding) or any(self.waiting):
            return
        if self.dispatcher.in_flight or any(self.dispatcher.outbox):
            return
        unread = self.log_base + len(self.log) - min(self.cursor)
        cluster = self.cluster
        size = len(cluster.nodes) + len(cluster.pods) + len(cluster.objects)
        if unread >= DOZE_AFTER and 2 * unread >= size:
            self._doze()

    def _doze(self) -> None:
        """Stop streaming to the idle shards: the log is dropped, the binder's observers
        detached; every shard's next message starts it over from a snapshot."""
        self.synced = False
        self.log_base += len(self.log)
        self.log.clear()
        self.cursor = [self.log_base] * self.shard_count
        self.held_logged.clear()
        self.fresh = [True] * self.shard_count
        detached = self._observers()
        self.cluster.observers = [o for o in self.cluster.observers if o not in detached]
        self.binder.prefilter.release()
        self.binder.fast.anti_affinity_pods = self.binder.fast.spanning_pods = 0

    def _wake(self) -> None:
        """Pods are about to go to dormant shards: stream again from here, each shard's next
        message first replacing its replica by a snapshot (``_send``)."""
        self.synced = True
        self.fresh = [True] * self.shard_count
        self.held_logged = {k for k, rec in self.cluster.pods.items() if rec.assumed}
        self.binder.fast.forget()
        self.binder.refused = [[] for _ in range(self.shard_count)]
        for observer in self._observers():
            self.cluster.observe(observer)  # replays the cache's nodes and Pods to it

    def _snapshot_stream(self) -> bytes:
        """The authoritative state as a pickled stream, once per step (:meth:`_wake`)."""
        if self._snap is None:
            t0 = time.perf_counter()
            entries = snapshot_entries(self.cluster)
            self._snap = p.encode_stream(entries)
            if self.routing is not None:
                self.routing.encoded(time.perf_counter() - t0, len(entries))
        return self._snap
