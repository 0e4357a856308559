"""``kubesched run``: the real-time loop around the same Scheduler the simulator drives.

Threads: one informer per watched kind, the leader elector, the background recorder, the
metrics/health server, and the scheduling thread (the caller of :meth:`LiveScheduler.run`).
The Scheduler is not thread-safe, so informers never touch it: they put deltas on one queue
and the scheduling thread applies them between cycles; every scheduler call happens there.

The loop, while this replica leads: apply pending deltas, run the scheduling queue's periodic
work that is due (:meth:`~kubesched.queue.scheduling_queue.SchedulingQueue.due`: upstream's
``flushBackoffQCompleted`` every second and ``flushUnschedulablePodsLeftover`` every 30 s),
run ``schedule_one()``; with nothing to do, wait for the next delta or timer.  Binding cycles
run on a pool of binding workers (upstream: one goroutine per binding), each touching the
scheduler only in a turn the loop grants between two cycles (:mod:`kubesched.live.turns`): a
slow bind stalls neither scheduling nor other binds, and scheduler state still has one user at
a time (the coordinator role too).  A binding cycle that is only the bind (the default profile,
a Pod without claims: :meth:`~kubesched.scheduler.commit.Commit.binds_only`) needs neither:
its POST is sent by the client's writes thread (:class:`~kubesched.live.client.WritesInFlight`)
and the answer, queued back to this loop, ends the cycle here (:meth:`LiveScheduler._bind_later`).

Leadership: standbys keep their informers (and so their cache) warm unless
``delayCacheUntilActive``; no cycle runs without the Lease.  On acquiring it the replica
relists every kind and reconciles its cache with the fresh lists before the first cycle, so
the cache it schedules from is the API's state, never another replica's assumptions.  Each
cycle and each bind first checks that the Lease was renewed within the renew deadline; a
replica that lost the Lease stops at once and :meth:`run` returns 1 (upstream exits).
A bind's timeout is at most ``leaseDuration - renewDeadline``, so no bind of the old leader
is still in flight when another replica may take over.

The sharded roles (:mod:`kubesched.live.roles`, :mod:`kubesched.live.shard`) are this
replica with another scheduler, delta dispatch and step (:meth:`LiveScheduler.make_scheduler`,
:meth:`LiveScheduler.make_dispatch`, :meth:`LiveScheduler.step`).
"""

from __future__ import annotations

import gc
import logging
import queue
import threading
import time
from collections.abc import Callable

from kubesched.api import objects as api
from kubesched.api.source import FREEZE_AFTER, resume_collector
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.live.binder import LiveApi
from kubesched.live.client import KubeClient
from kubesched.live.dispatch import Dispatcher
from kubesched.live.informer import MODIFIED, Delta, Informer, Kind, Timing, scheduler_kinds
from kubesched.live.leader import LeaderElector
from kubesched.live.recorder import Recorder
from kubesched.live.startup import StartupTracker
from kubesched.live.turns import BindingPool, Turns
from kubesched.metrics import SchedulerMetrics
from kubesched.scheduler import Scheduler

log = logging.getLogger(__name__)

METRICS_SYNC_PERIOD = 1.0
MAX_DELTAS_PER_TURN = 10_000
EXIT_LOST_LEASE = 1
BIND_DRAIN_SECONDS = 5.0
"""At shutdown, how long binding cycles in flight may take to finish."""
GC_THRESHOLDS = (10_000, 20, 100)
"""The cyclic collector's thresholds while the loop runs (Python's are 700, 10, 10): every
Pod seen leaves a few hundred long-lived objects (its manifest as decoded, the parsed Pod,
its queue and cache entries), so frequent young collections only walk them again and again
(as a shard process, :data:`kubesched.parallel.shardmain.GC_THRESHOLDS`).  Set while any
:meth:`LiveScheduler.run` of the process runs (:class:`_Collector`), the process's own back
when the last returns.  Only garbage in reference cycles waits for the collector, and it
waits a little longer."""


class _Collector:
    """The process's collector thresholds, shared by the loops that run in it (one in
    ``kubesched run``; several in one process when embedded, a coordinator's replicas, or
    tests): raised by the first to start, restored by the last to end, whatever order they
    end in."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._saved: tuple[int, ...] = ()
        self._frozen = False

    def freeze_first_sync(self) -> bool:
        """Whether this process's first synced loop is the caller (true once per process):
        that loop's first lists are frozen whatever their size (:meth:`LiveScheduler.
        _resume_collector`); later loops of the same process (replicas embedded, tests)
        freeze only what passes :data:`~kubesched.api.source.FREEZE_AFTER`, so a
        process that starts many leaves no more of their garbage frozen."""
        with self._lock:
            first, self._frozen = not self._frozen, True
            return first

    def enter(self) -> None:
        with self._lock:
            if self._running == 0:
                self._saved = gc.get_threshold()
                gc.set_threshold(*GC_THRESHOLDS)
            self._running += 1

    def leave(self) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                gc.set_threshold(*self._saved)


_COLLECTOR = _Collector()
_WAKE = Delta("", "", None, {})
"""Wakes the loop from its wait (ignored when applied)."""


class LiveScheduler:
    """One replica: informers, leader election, the scheduling loop."""

    tracks_startup = True
    """Export the startup split of the Pods it schedules (:mod:`kubesched.live.startup`)."""

    def __init__(
        self,
        config: KubeSchedulerConfiguration,
        client: KubeClient,
        *,
        identity: str,
        metrics: SchedulerMetrics | None = None,
        timing: Timing | None = None,
        resync_seconds: float = 0.0,
        kinds: tuple[Kind, ...] | None = None,
        election_client: KubeClient | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.identity = identity
        self.resync_seconds = resync_seconds
        self.stop_event = threading.Event()
        self.deltas: queue.SimpleQueue[Delta] = queue.SimpleQueue()
        le = config.leader_election
        metrics = metrics or SchedulerMetrics()
        self.elector = (
            LeaderElector(
                election_client or client,
                le,
                identity,
                metrics=metrics.leader_election,
            )
            if le.leader_elect
            else None
        )
        bind_timeout = 5.0
        if self.elector is not None:
            margin = le.lease_duration_seconds - le.renew_deadline_seconds
            bind_timeout = max(0.2, min(bind_timeout, margin))
        # Events and conditions get their own limiter (upstream's event client is separate),
        # so a storm of failures cannot starve binds of QPS.
        self.recorder = Recorder(client.sibling(client.limiter.qps, client.limiter.burst))
        self.startup = StartupTracker(p.scheduler_name for p in config.profiles)
        self.api = LiveApi(
            client,
            self.recorder,
            bind_timeout=bind_timeout,
            guard=self.leading,
            on_bound=lambda pod: self.startup.bound(pod.uid),
        )
        self.turns = Turns(lambda: self.deltas.put(_WAKE))
        self.binding_pool: BindingPool | None = None
        self._answers: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        """Binding cycles to end on the scheduling thread: their binds answered."""
        self.binds_later = 0
        """Binds handed to :meth:`_bind_later` and not ended yet (scheduling thread only)."""
        self.scheduler = self.make_scheduler(metrics)
        if self.tracks_startup:
            self.startup.metrics = self.scheduler.metrics
        self.dispatch = self.make_dispatch()
        self.informers = [
            Informer(
                *(client, k, self.deltas.put, self.stop_event, timing),
                batch_lists=True,
                texts=k.kind == "Pod",  # read by the dispatcher's parse (Delta.text)
                trim_managed_fields=k.kind == "Pod",  # as upstream's Pod informer
            )
            for k in (scheduler_kinds(config.feature_gates) if kinds is None else kinds)
        ]
        self.exit_code = 0
        self.cycles = 0
        self.loop_alive = False
        self._threads: list[threading.Thread] = []
        self._relist_from: dict[int, int] | None = None
        self._relist_asked = 0.0
        self._collector_paused = False

    # ------------------------------------------------------------------ roles
    def make_scheduler(self, metrics: SchedulerMetrics | None) -> Scheduler:
        """The scheduler this replica drives (the sharded roles override it); its binding
        cycles run on :attr:`binding_pool`."""
        pool = self.binding_pool = BindingPool(self.turns)
        self.api.io = self.turns.released
        scheduler = Scheduler(
            self.config,
            clock=time.monotonic,
            api_client=self.api,
            metrics=metrics,
            submit_binding=lambda fn: pool.submit(self.startup.binding_cycle(fn)),
        )
        if self.api.can_bind_later():
            scheduler.committer.bind_later = self._bind_later
        return scheduler

    def _bind_later(self, pod: api.Pod, answered: Callable[[Exception | None], None]) -> None:
        """The committer's asynchronous bind (a binding cycle that is only the bind): the
        POST is sent by the client's writes thread; its answer is queued for the scheduling
        thread, which ends the binding cycle there (:meth:`_end_answered`) -- no binding
        worker and no turn for it.  The startup split sees it as a binding cycle from this
        hand-over to that end."""
        got: list[Exception | None] = []
        node = pod.node_name

        def end() -> None:
            self.api.finish_bind(pod, node, got[0])
            answered(got[0])

        cycle = self.startup.binding_cycle(end)

        def answer(err: Exception | None) -> None:  # on the writes (or a settling) thread
            got.append(err)
            self._answers.put(cycle)
            self.deltas.put(_WAKE)

        self.binds_later += 1
        self.api.bind_later(pod, node, answer)

    def _end_answered(self) -> int:
        """End the binding cycles whose binds answered; how many."""
        ended = 0
        while True:
            try:
                cycle = self._answers.get_nowait()
            except queue.Empty:
                return ended
            self.binds_later -= 1
            ended += 1
            try:
                cycle()
            except Exception:
                log.exception("binding cycle failed")

    def make_dispatch(self) -> Dispatcher:
        """What applies informer deltas to :attr:`scheduler`."""
        return Dispatcher(
            self.scheduler,
            report=lambda pod, message: self.recorder.pod_failed(pod, "SchedulerError", message),
        )

    def step(self) -> bool:
        """One unit of work while leading (a scheduling cycle); False when idle."""
        return self.scheduler.schedule_one()

    # ------------------------------------------------------------------ state
    def leading(self) -> bool:
        """May this replica schedule now?"""
        return True if self.elector is None else self.elector.leading()

    def synced(self) -> bool:
        """Every informer has listed at least once."""
        return all(i.synced.is_set() for i in self.informers)

    def healthy(self) -> bool:
        """The loop runs and leader election is healthy."""
        return self.loop_alive and (self.elector is None or self.elector.healthy())

    def stop(self) -> None:
        """Ask for a graceful shutdown (safe from a signal handler or another thread)."""
        self.stop_event.set()
        self.deltas.put(_WAKE)

    # ------------------------------------------------------------------ run
    def run(self) -> int:
        """Run until :meth:`stop` or a lost Lease; the exit code (0, or 1 when lost)."""
        self._spawn("recorder", lambda: self.recorder.run(self.stop_event))
        if self.elector is not None:
            elector = self.elector
            self._spawn("leader-election", lambda: elector.run(self.stop_event))
        started = False
        if not self.config.delay_cache_until_active:
            self._start_informers()
            started = True
        self.loop_alive = True
        _COLLECTOR.enter()
        try:
            self._loop(started)
        finally:
            self.loop_alive = False
            self._shutdown()
            _COLLECTOR.leave()
        return self.exit_code

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        t = threading.Thread(target=target, name=f"kubesched-{name}", daemon=True)
        t.start()
        self._threads.append(t)

    def _start_informers(self) -> None:
        """Start every informer, the cyclic garbage collector paused until their first lists
        are applied (:meth:`_resume_collector`): the lists run at once on their threads, and
        each one's own pause would end with the first list done (a small kind's) and let the
        collector walk the large ones' objects again and again while they are built."""
        if gc.isenabled():
            gc.disable()
            self._collector_paused = True
        for inf in self.informers:
            self._spawn(f"informer-{inf.kind.kind}", inf.run)

    def _resume_collector(self, synced: bool = False) -> None:
        """End the pause of :meth:`_start_informers`: a large cluster's lists are moved out
        of the collector's sight (:func:`~kubesched.api.source.resume_collector`).  Once
        ``synced`` (the first lists applied, not a shutdown before that), the process's
        first loop freezes what was built meanwhile whatever its size: the Nodes and
        bound Pods of a cluster below :data:`~kubesched.api.source.FREEZE_AFTER` objects
        live as long as the loop, and unfrozen they are walked again by the first young
        collection, the first middle one and every full one (h/live34b in
        benchmarks/RESULTS.md).  Only a reference cycle among them that
        later becomes garbage is never collected; acyclic objects are freed as usual."""
        if self._collector_paused:
            self._collector_paused = False
            first = synced and _COLLECTOR.freeze_first_sync()
            resume_collector(0 if first else FREEZE_AFTER)

    def _loop(self, started: bool) -> None:
        was_leading = in_sync = False
        now = time.monotonic()
        next_metrics = now
        next_resync = now + self.resync_seconds
        q = self.scheduler.queue
        q.start_periodic()
        while not self.stop_event.is_set():
            self.turns.serve()
            self._end_answered()
            listed = self._collector_paused and self.synced()
            self._drain()
            if listed:  # every first list was queued before synced() and is applied now
                self._resume_collector(synced=True)
            if not self.leading():
                if was_leading or (self.elector is not None and self.elector.lost.is_set()):
                    if not self.stop_event.is_set():
                        log.error("%s lost the Lease; stopping", self.identity)
                        self.exit_code = EXIT_LOST_LEASE
                    return
                self._wait(0.1)
                continue
            if not was_leading:
                was_leading = True
                if not started:
                    self._start_informers()
                    started = True
                elif self.elector is not None:  # without election, no other replica's cache
                    self._request_relist()
            if not self._caught_up():
                self._wait(0.05)
                continue
            if not in_sync:  # apply every delta the fresh lists produced before a cycle
                in_sync = True
                continue
            now = time.monotonic()
            q.due(now)
            if now >= next_metrics:
                self.scheduler.sync_metrics()
                next_metrics = now + METRICS_SYNC_PERIOD
            if self.resync_seconds > 0 and now >= next_resync:
                self._resync()
                next_resync = now + self.resync_seconds
            if self.step():
                self.cycles += 1
                continue
            wake = q.next_wakeup()
            until = next_metrics if wake is None else min(wake, next_metrics)
            self._wait(min(0.5, until - time.monotonic()))

    # ------------------------------------------------------------------ deltas
    def _drain(self) -> None:
        for _ in range(MAX_DELTAS_PER_TURN):
            try:
                delta = self.deltas.get_nowait()
            except queue.Empty:
                return
            self._apply(delta)

    def _wait(self, seconds: float) -> None:
        try:
            delta = self.deltas.get(timeout=max(seconds, 0.001))
        except queue.Empty:
            return
        self._apply(delta)

    def _apply(self, delta: Delta) -> None:
        if delta is _WAKE:
            return
        try:
            if delta.listed:
                self.dispatch.apply_listed(delta)
            else:
                self.dispatch.apply(delta)
        except Exception:  # one bad object must not stop the scheduler
            log.exception("failed to apply %s %s", delta.type, delta.kind)
        try:
            if delta.listed:
                self.startup.observe_listed(delta.kind, delta.listed)
            else:
                self.startup.observe(delta)
        except Exception:  # nor keep the next deltas from it
            log.exception("failed to follow the startup of %s %s", delta.type, delta.kind)

    def _resync(self) -> None:
        for inf in self.informers:
            for obj in inf.snapshot():
                self._apply(Delta(inf.kind.kind, MODIFIED, obj, obj))

    # ------------------------------------------------------------------ leadership
    def _request_relist(self) -> None:
        """Relist every kind that already listed; scheduling waits for the fresh lists.  A
        kind the API server does not serve (``absent``: an optional CRD not installed) is
        empty, nothing to reconcile: waiting for it would wait out its retry backoff."""
        listed = [i for i in self.informers if i.lists > 0 and not i.absent]
        self._relist_from = {id(i): i.lists for i in listed}
        for inf in listed:
            inf.request_relist()
        self.client.abort()
        self._relist_asked = time.monotonic()

    def _caught_up(self) -> bool:
        if not self.synced():
            return False
        if self._relist_from is None:
            return True
        behind = [
            i
            for i in self.informers
            if i.lists <= self._relist_from.get(id(i), -1) and not i.absent
        ]
        if not behind:
            self._relist_from = None
            log.info("cache reconciled with fresh lists; scheduling")
            return True
        if time.monotonic() - self._relist_asked > 0.5:
            self.client.abort()  # a watch opened just after the first cut
            self._relist_asked = time.monotonic()
        return False

    # ------------------------------------------------------------------ shutdown
    def _shutdown(self) -> None:
        self.stop_event.set()
        self._resume_collector()
        self._finish_binds(BIND_DRAIN_SECONDS)
        self.client.stop_watches()
        self.recorder.wake()
        deadline = time.monotonic() + 5.0
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            log.warning("threads still running at exit: %s", ", ".join(alive))

    def _finish_binds(self, seconds: float) -> None:
        """Grant turns until the binding cycles in flight are done (bounded), then no more."""
        pool = self.binding_pool
        deadline = time.monotonic() + seconds
        while (
            (pool is not None and pool.busy()) or self.binds_later
        ) and time.monotonic() < deadline:
            if not self.turns.serve() and not self._end_answered():
                time.sleep(0.005)
        self.turns.close()
        if self.binds_later:
            log.warning("%d bind(s) still unanswered at exit", self.binds_later)
        if pool is not None and pool.busy():
            log.warning("%d binding cycle(s) still in flight at exit", pool.busy())
