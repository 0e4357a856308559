"""Dormant shards: under auto routing, no commit stream while the coordinator works alone.

With auto routing (:mod:`~kubesched.parallel.router`) the coordinator may schedule every Pod
itself for long stretches -- for the whole run when every signature's search is too cheap
for the pipeline.  Keeping the shards' replicas current meanwhile costs the coordinator a
stream entry per event (and memory: the log grows until a shard reads it), and the shards a
catch-up on all of it at the next probe.  So :class:`Dormancy`, the part of the
coordinator's auto routing (:class:`~kubesched.parallel.routing.Routing`, which owns it)
that decides when the shards follow the stream, on the coordinator's stream state
(:class:`DormancyHost`):

- starts the shards **dormant** (``synced`` False): the informer handlers stream nothing
  (:mod:`~.streaming`), and the binder's cache observers (the fast path's anti-affinity
  counts, the kept PreFilter results, the tap that streams released holds) are detached,
  since no proposal is checked meanwhile;
- **wakes** them (:meth:`Dormancy.wake`) when the dispatcher hands a shard a Pod: the
  observers are attached again (the cache replays its Pods to them), and each shard's next
  message starts it over from a snapshot of the authoritative cache
  (:meth:`Dormancy.snapshot_stream`, pickled once for all shards; ``ToShard.reset``);
- lets them **doze** off again (:meth:`Dormancy.doze`) once every shard is idle (no
  message, Pod or Permit wait) and the log they have not read is at least half a snapshot
  (and :data:`DOZE_AFTER` entries):
  dropping it then costs a later wake at most twice the catch-up, and saves the stream
  for as long as the coordinator keeps working alone.

Without auto routing the shards always follow the stream, as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from kubesched.parallel import protocol as p
from kubesched.parallel.binder import Binder
from kubesched.parallel.dispatcher import Dispatcher
from kubesched.parallel.streaming import CacheTap, CommitStream, snapshot_entries
from kubesched.state.cache import ClusterState, Observer

DOZE_AFTER = 1024
"""The shards doze off only once they have this many stream entries unread: a shorter
log is cheap to catch up on (~10-20 µs per entry per shard), and a small cluster's shards
would otherwise doze and wake by turns."""


class DormancyHost(Protocol):
    """The coordinator's stream state that dozing and waking change."""

    cluster: ClusterState
    dispatcher: Dispatcher
    binder: Binder
    tap: CacheTap
    shard_count: int
    stream: CommitStream
    """Its ``synced`` says whether the shards' replicas follow it."""
    fresh: list[bool]
    """Shards whose next message replaces their replica by a snapshot."""
    outstanding: list[int]
    waiting: list[int]


class Dormancy:
    """Dormant shards for coordinator ``hub`` (see the module docstring); ``encoded`` is told
    how long pickling a snapshot of how many entries took."""

    def __init__(self, hub: DormancyHost, encoded: Callable[[float, int], None]) -> None:
        self.hub = hub
        self.encoded = encoded
        self._snap: bytes | None = None
        """This step's pickled snapshot (for the shards :meth:`wake` made fresh)."""

    def begin(self) -> None:
        """A step starts: a snapshot is pickled again when needed."""
        self._snap = None

    def observers(self) -> list[Observer]:
        """The binder's observers of the authoritative cache, and the stream's tap."""
        hub = self.hub
        return [hub.binder.fast, hub.binder.prefilter, hub.tap]

    def doze_if_cheaper(self) -> None:
        """At the end of a step: doze off if the shards are idle and a snapshot would cost
        them at most twice the log they have not read."""
        hub, stream = self.hub, self.hub.stream
        if not stream.synced or any(hub.outstanding) or any(hub.waiting):
            return
        if hub.dispatcher.in_flight or any(hub.dispatcher.outbox):
            return
        unread = stream.log_base + len(stream.log) - min(stream.cursor)
        cluster = hub.cluster
        size = len(cluster.nodes) + len(cluster.pods) + len(cluster.objects)
        if unread >= DOZE_AFTER and 2 * unread >= size:
            self.doze()

    def doze(self) -> None:
        """Stop streaming to the idle shards: the log is dropped, the binder's observers
        detached; every shard's next message starts it over from a snapshot."""
        hub, stream = self.hub, self.hub.stream
        stream.synced = False
        stream.log_base += len(stream.log)
        stream.log.clear()
        stream.cursor = [stream.log_base] * hub.shard_count
        stream.held_logged.clear()
        hub.fresh = [True] * hub.shard_count
        detached = self.observers()
        hub.cluster.observers = [o for o in hub.cluster.observers if o not in detached]
        hub.binder.prefilter.release()
        hub.binder.fast.anti_affinity_pods = hub.binder.fast.spanning_pods = 0

    def wake(self) -> None:
        """Pods are about to go to dormant shards: stream again from here, each shard's next
        message first replacing its replica by a snapshot (:meth:`snapshot_stream`)."""
        hub, stream = self.hub, self.hub.stream
        stream.synced = True
        hub.fresh = [True] * hub.shard_count
        stream.held_logged = {k for k, rec in hub.cluster.pods.items() if rec.assumed}
        hub.binder.fast.forget()
        hub.binder.refused = [[] for _ in range(hub.shard_count)]
        for observer in self.observers():
            hub.cluster.observe(observer)  # replays the cache's nodes and Pods to it

    def snapshot_stream(self) -> bytes:
        """The authoritative state as a pickled stream, once per step (:meth:`wake`)."""
        if self._snap is None:
            t0 = time.perf_counter()
            entries = snapshot_entries(self.hub.cluster)
            self._snap = p.encode_stream(entries)
            self.encoded(time.perf_counter() - t0, len(entries))
        return self._snap
