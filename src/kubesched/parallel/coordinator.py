"""The parallel scheduler's coordinator: dispatcher and binder around N shard processes.

:class:`ParallelScheduler` *is* a :class:`~kubesched.scheduler.Scheduler` -- same
constructor, same informer handlers (``on_node_add`` ... ``on_object``), same queue, cache,
metrics and ``schedule_one()`` -- so the benchmark loop, the simulator and tests drive it
exactly like the serial scheduler.  What differs is what one ``schedule_one()`` does (a
*step*):

1. the :class:`~kubesched.parallel.dispatcher.Dispatcher` pops Pods from the queue and hands
   each (a gang as one unit) to a shard;
2. every shard with work gets one message: the commit stream since its last message (the
   informer events this coordinator saw, plus the binder's assumes and forgets; pickled once
   per step for all shards reading the same stretch), the binder's refusals of its
   proposals, and its new Pods;
3. the oldest answer of each shard with :data:`DEPTH` messages outstanding (or none sent
   now) is read, in shard order, and the :class:`~kubesched.parallel.binder.Binder`
   handles its results (in bulk where binds complete at once: :mod:`~.bulk`).

With ``routing="auto"`` (:mod:`~kubesched.parallel.router`) the dispatcher offers each
popped Pod to the router first, and the coordinator runs the serial scheduler's cycle
itself for the Pods of signatures whose search is too cheap to pay for the pipeline; their
binds reach the shards through the commit stream like any other -- while the shards have
work: until then they are *dormant* (nothing streamed) and are woken by a snapshot
(:mod:`~kubesched.parallel.dormancy`).  Both are one strategy object the coordinator holds,
:class:`~kubesched.parallel.routing.Routing` (None without auto routing).

So shards schedule while the binder commits earlier steps (pipelined), and the outcome
depends only on the messages, never on timing: the same seed and inputs give the same
placements with processes as with in-process shards -- except with auto routing, where a
step in which the coordinator schedules Pods itself reads only the answers already in.

A shard that crashed (its pipe broke) is restarted with a snapshot of the authoritative cache;
every Pod it held goes back to activeQ.  A coordinator that restarts rebuilds its cache and
queue from the API server's list + watch like any scheduler; Pods its predecessor had handed
out are simply pending again, and the API server refuses a second bind.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubesched.api import objects as api
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework.interface import ApiClient, CycleState
from kubesched.framework.runtime import Framework
from kubesched.metrics import SchedulerMetrics
from kubesched.parallel import protocol as p
from kubesched.parallel import transport
from kubesched.parallel.binder import Binder
from kubesched.parallel.dispatcher import Dispatcher
from kubesched.parallel.host import Handed
from kubesched.parallel.observe import ParallelMetrics, binder_summary
from kubesched.parallel.router import Router
from kubesched.parallel.routing import Routing
from kubesched.parallel.streaming import CacheTap, CommitStream, snapshot_entries
from kubesched.scheduler import Scheduler, ScheduleResult, SchedulerOptions
from kubesched.scheduler.commit import resume

PARALLEL = SchedulerOptions(shards=2)
"""The parallel scheduler's default options: two shards."""
ROUTING = ("all", "auto")
"""``all``: every Pod goes to a shard; ``auto``: the router decides per signature."""
PATIENCE = 0.001
"""Seconds a routing coordinator with nothing else to do waits for a shard's answer in a
step before handing the turn back to its driver (timers, Pod creation)."""
DEPTH = 5
"""Messages in flight per shard: one being scheduled, one being committed, three waiting in
the socket so a shard finds work while the coordinator is off the CPU (~7 % over 3)."""


class ParallelScheduler(Scheduler):
    """Dispatcher + binder in this process, ``shards`` shards in their own (see module doc);
    its parts: the :class:`~kubesched.parallel.dispatcher.Dispatcher`, the
    :class:`~kubesched.parallel.binder.Binder` (whose
    :class:`~kubesched.parallel.host.BinderHost` it is), the
    :class:`~kubesched.parallel.streaming.CommitStream` its informer handlers feed, and with
    auto routing the :class:`~kubesched.parallel.routing.Routing` strategy."""

    def __init__(
        self,
        config: KubeSchedulerConfiguration,
        *,
        clock: Callable[[], float],
        api_client: ApiClient | None = None,
        submit_binding: Callable[[Callable[[], None]], None] | None = None,
        metrics: SchedulerMetrics | None = None,
        options: SchedulerOptions = PARALLEL,
        transport_kind: str = transport.PROCESS,
        start_method: str | None = None,
        router: Router | None = None,
    ) -> None:
        routing, shards, round_size = options.routing, options.shards, options.round_size
        if routing not in ROUTING:
            raise ValueError(f"routing must be one of {', '.join(ROUTING)}, got {routing!r}")
        self.shard_count = shards
        if router is None and routing == "auto":
            router = Router(shards)
        self.routing = Routing(self, router) if router is not None else None
        """Auto routing (None: every Pod goes to a shard)."""
        self.fresh = [False] * shards
        """Shards whose next message replaces their replica by a snapshot."""
        self._updating = False
        """While the Scheduler's ``on_pod_update`` runs: a bind it adds is streamed as one."""
        self.dispatcher = Dispatcher(
            shards, round_size=round_size, window=round_size * DEPTH, counted=self._counted
        )
        super().__init__(
            config,
            clock=clock,
            api_client=api_client,
            submit_binding=submit_binding,
            metrics=metrics,
            options=options,
        )
        self.binder = Binder(self, self.routing.router if self.routing is not None else None)
        self.parallel_metrics = ParallelMetrics(self.metrics, shards)
        self.stream = CommitStream(self.cluster, shards, synced=self.routing is None)
        self.tap = CacheTap(self.stream)
        self.cluster.observe(self.tap)
        self.outstanding = [0] * shards
        self.waiting = [0] * shards
        self.deadlines: list[float | None] = [None] * shards
        self._chunks: dict[tuple[int, int], bytes] = {}
        """This step's pickled stretches of the log, by absolute (start, end)."""
        self.last_step_pods = 0  # most results one shard returned in the last step
        self.handles: list[transport.ShardHandle] = [
            transport.start(transport_kind, i, config, options, start_method) for i in range(shards)
        ]
        if self.routing is None:
            for i in range(shards):
                self._snapshot(i)
        else:
            self.routing.dormancy.doze()  # dormant until a Pod goes to a shard

    # ------------------------------------------------------------------ bookkeeping
    def _counted(self, change: int) -> None:
        """The dispatcher handed a Pod out (+1) or closed its record (-1):
        ``in_flight_bindings`` counts binding cycles in flight plus Pods handed to shards and
        not answered yet."""
        self.in_flight_bindings += change

    def requeue_now(self, rec: Handed, reason: str) -> None:
        """Send a handed-out Pod straight back to activeQ (it did not fail on its own)."""
        self.queue.requeue_at_once(rec.qp)
        self.parallel_metrics.retry(reason)

    # ------------------------------------------------------------------ the commit stream
    def log_entry(self, entry: p.Entry) -> None:
        """Append to the commit stream every shard reads."""
        self.stream.entry(entry)

    def committing(self, key: str, shard: int, sent: api.Pod) -> None:
        """The binder is about to bind ``key`` proposed by ``shard``."""
        self.stream.committing(key, shard, sent)

    def forget_proposal(self, key: str) -> None:
        """The bind of ``key`` failed before anything was streamed."""
        self.stream.forget_proposal(key)

    def committed(self, key: str) -> None:
        """The commit of ``key`` is made (:meth:`CommitStream.committed`); if its binding
        cycle failed already, its proposer is told to forget its assumed copy."""
        shard = self.stream.committed(key)
        if shard >= 0:
            self.binder.refused[shard].append((key, "bind_failed"))

    # ------------------------------------------------------------------ informer events
    # (the Scheduler's handlers are called directly, not through a super object per event)
    def on_node_add(self, node: api.Node) -> None:
        Scheduler.on_node_add(self, node)
        self.stream.node_added(node)

    def on_node_update(self, old: api.Node, new: api.Node) -> None:
        Scheduler.on_node_update(self, old, new)
        self.stream.node_updated(old, new)

    def on_node_delete(self, node: api.Node) -> None:
        Scheduler.on_node_delete(self, node)
        self.binder.fast.forget()  # rows are recycled
        self.stream.node_deleted(node)

    def on_pod_add(self, pod: api.Pod) -> None:
        Scheduler.on_pod_add(self, pod)
        if self._updating:
            return  # a bind: on_pod_update streams it
        if not pod.node_name:
            if p.GROUP_LABEL in pod.labels:
                self.dispatcher.gangs.added(pod)
        else:
            self.stream.pod_added(pod)

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        self._updating = True
        try:
            Scheduler.on_pod_update(self, old, new)
        finally:
            self._updating = False
        if new.node_name and not old.node_name:
            if p.GROUP_LABEL in old.labels:
                self.dispatcher.gangs.gone(old)
            self.stream.pod_bound(old, new)
        elif new.node_name:
            self.stream.pod_updated(old, new)
        else:
            self.dispatcher.gangs.gone(old)
            self.dispatcher.gangs.added(new)

    def on_pods_bound(self, pairs: list[tuple[api.Pod, api.Pod]]) -> None:
        """Binds the API server made in one batch (``SimApiServer.bind_many``): each as
        :meth:`on_pod_update` would handle it; the binder's bulk path did not assume them,
        so the cache counts them here."""
        for old, new in pairs:
            self.on_pod_update(old, new)

    def on_pod_delete(self, pod: api.Pod) -> None:
        rec = self.dispatcher.close(pod.key)
        if rec is not None:
            self.queue.done(rec.qp.pod)
        Scheduler.on_pod_delete(self, pod)
        self.dispatcher.gangs.gone(pod)
        self.binder.forget_victim(pod.key)
        self.stream.pod_deleted(pod)

    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        Scheduler.on_object(self, obj, deleted=deleted)
        self.stream.object_changed(obj, deleted)

    # ------------------------------------------------------------------ the coordinator's search
    def sign(self, fwk: Framework, pod: api.Pod) -> tuple[object, ...] | None:
        """The signature auto routing computed for the Pod it runs here
        (:meth:`Routing.divert`), else computed.  (The Scheduler's methods are called
        directly here and below, not through a ``super`` object per Pod.)"""
        routing = self.routing
        if routing is not None and routing.routed_pod is pod:
            return routing.routed_sig  # type: ignore[return-value]
        return Scheduler.sign(self, fwk, pod)

    def schedule_pod(self, fwk: Framework, state: CycleState, pod: api.Pod) -> ScheduleResult:
        """The serial search, for the Pods auto routing keeps here (timed for its router
        when it samples the cycle)."""
        routing = self.routing
        if routing is None or not routing.timing:
            return Scheduler.schedule_pod(self, fwk, state, pod)
        t0 = time.perf_counter()
        try:
            return Scheduler.schedule_pod(self, fwk, state, pod)
        finally:
            routing.search += time.perf_counter() - t0

    # ------------------------------------------------------------------ one step
    def schedule_one(self) -> bool:
        """One step (see the module docstring); False when there was nothing to do."""
        routing = self.routing
        if routing is not None:
            routing.begin()
        self.expire_waiting_pods()
        self._chunks.clear()
        n = self.dispatcher.fill(self.queue) if routing is None else routing.fill()
        did = n > 0
        self.last_step_pods = routing.served if routing else 0
        now = self.clock()
        sent = [False] * self.shard_count
        for i in range(self.shard_count):
            if self.outstanding[i] >= DEPTH:
                continue
            due = self.deadlines[i]
            heartbeat = not self.outstanding[i] and due is not None and now >= due
            if self.dispatcher.outbox[i] or heartbeat:
                sent[i] = self._send(i, now)
        received = False
        # with routing, never wait long for an answer: the coordinator may have Pods of its
        # own (read only answers already in), or the driver Pods to create
        patience = None if routing is None else (0.0 if routing.served else PATIENCE)
        for i in range(self.shard_count):
            if self.outstanding[i] and (
                self.outstanding[i] >= DEPTH
                or (not sent[i] and (patience is None or self.handles[i].ready(patience)))
            ):
                self._receive(i)
                did = received = True
        self.committer.drain_waiting()
        self.stream.trim()
        self.parallel_metrics.in_flight(self.dispatcher.load)
        if routing is not None:
            routing.end(any(sent) or received)
        return did or any(self.outstanding)

    def _stream(self, start: int) -> bytes:
        """The log from ``start`` (an index into ``log``) on, pickled once per step."""
        log = self.stream.log
        key = (self.stream.log_base + start, self.stream.log_base + len(log))
        data = self._chunks.get(key)
        if data is None:
            t0 = time.perf_counter()
            data = self._chunks[key] = p.encode_stream(log[start:])
            if self.routing is not None:
                self.routing.encoded(time.perf_counter() - t0, len(log) - start)
        return data

    def _send(self, i: int, now: float) -> bool:
        reset = self.fresh[i]
        if reset:  # woken from dormancy (only auto routing makes shards fresh)
            assert self.routing is not None
            stream = self.routing.dormancy.snapshot_stream()
        else:
            stream = self._stream(self.stream.cursor[i] - self.stream.log_base)
        msg = p.ToShard(
            now,
            stream=stream,
            private=self.binder.refused[i],
            pods=self.dispatcher.take_outbox(i),
            reset=reset,
        )
        self.fresh[i] = False
        self.binder.refused[i] = []
        self.stream.cursor[i] = self.stream.log_base + len(self.stream.log)
        try:
            self.handles[i].send(msg)
        except transport.ShardCrashed:
            self._crashed(i)
            return False
        self.outstanding[i] += 1
        self.parallel_metrics.shards[i].messages += 1
        return True

    def _receive(self, i: int) -> None:
        t0 = time.perf_counter()
        try:
            reply = self.handles[i].recv()
        except transport.ShardCrashed:
            self._crashed(i)
            return
        self.outstanding[i] -= 1
        self.waiting[i] = reply.waiting
        self.deadlines[i] = reply.deadline
        self.parallel_metrics.shards[i].busy += reply.busy
        self.parallel_metrics.shards[i].cpu += reply.cpu
        self.parallel_metrics.shards[i].apply_cpu += reply.apply_cpu
        self.last_step_pods = max(self.last_step_pods, len(reply.results))
        self._resume_attempts(reply)
        if self.routing is not None:
            self.routing.reply(reply, time.perf_counter() - t0)
        self.binder.process(i, reply.results)
        if reply.activate:  # a waiting gang member's siblings (upstream PodsToActivate)
            self.queue.activate_keys(reply.activate)

    def _resume_attempts(self, reply: p.FromShard) -> None:
        """The attempts of the Pods a reply answers resume now, after their share of the
        shard's time on the message: the wall time between hand-out and reply (other
        shards' and Pods' work, the simulator's ``--pace`` sleeps) is not theirs."""
        if not reply.results:
            return
        start = resume(reply.busy / len(reply.results))
        in_flight = self.dispatcher.in_flight
        for res in reply.results:
            rec = in_flight.get(res.key)
            if rec is not None:
                rec.start = start

    # ------------------------------------------------------------------ crashes
    def _crashed(self, i: int) -> None:
        """Shard ``i`` is gone: its Pods go back to the queue; a fresh shard takes over."""
        lost = 0
        for key in self.dispatcher.held_by(i):
            rec = self.dispatcher.close(key, i)
            if rec is not None:
                self.requeue_now(rec, "shard_crash")
                lost += 1
        self.dispatcher.outbox[i] = []
        self.outstanding[i] = 0
        self.waiting[i] = 0
        self.deadlines[i] = None
        self.fresh[i] = False
        self.binder.refused[i] = []
        self.binder.fast.forget(i)
        self.parallel_metrics.shards[i].restarts += 1
        self.handles[i].restart()
        self._snapshot(i)

    def _snapshot(self, i: int) -> None:
        """Queue the authoritative state for a fresh shard ``i`` (its first message)."""
        entries = snapshot_entries(self.cluster)
        snapshot = p.ToShard(self.clock(), entries=entries)
        try:
            self.handles[i].send(snapshot)
            self.handles[i].recv()
        except transport.ShardCrashed:
            self.handles[i].restart()
            self.handles[i].send(snapshot)
            self.handles[i].recv()
        self.stream.cursor[i] = self.stream.log_base + len(self.stream.log)

    def crash_shard(self, i: int) -> None:
        """Test hook: kill shard ``i`` now (as if its process died)."""
        self.handles[i].kill()

    # ------------------------------------------------------------------ reporting, life
    def next_waiting_deadline(self) -> float | None:
        """The earliest Permit deadline here or in any shard."""
        times = [t for t in (super().next_waiting_deadline(), *self.deadlines) if t is not None]
        return min(times) if times else None

    def sync_metrics(self) -> None:
        super().sync_metrics()
        self.parallel_metrics.in_flight(self.dispatcher.load)

    def parallel_summary(self) -> dict[str, Any]:
        """Binder and shard numbers, JSON-ready (results and design note)."""
        out = {
            "shards": self.shard_count,
            "binder": binder_summary(self.binder.stats),
            "perShard": self.parallel_metrics.summary(),
        }
        if self.routing is not None:
            out["routing"] = self.routing.router.summary()
        return out

    def close(self) -> None:
        """Stop every shard (idempotent)."""
        for h in self.handles:
            h.close()

    def __enter__(self) -> ParallelScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
