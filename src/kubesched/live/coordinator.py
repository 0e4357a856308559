"""``kubesched run --role coordinator``: dispatcher and binder of the sharded architecture, live.

The coordinator is a leader-elected replica (its own Lease, as ``kubesched run``) whose
scheduler, :class:`CoordinatorScheduler`, keeps the authoritative informer cache and the
queue (PreEnqueue, QueueSort, backoff and queueing hints stay upstream's) but searches no
nodes.  Each step (:meth:`CoordinatorScheduler.step`):

1. **membership**: shards whose Lease expired lose their Pods, which go straight back to
   activeQ (:mod:`kubesched.live.sharding`); so do Pods whose shard gave no answer within
   ``dispatch_timeout``;
2. **decide** (:class:`~kubesched.live.decisions.Decisions`, the binder's checks and
   outcomes over this live transport): every proposal that arrived on the Pod watch for
   the current hand-out (same shard, same attempt) is re-validated against the
   authoritative cache with :meth:`kubesched.parallel.binder.Checker.choose` (PreFilter,
   then the profile's Filters on the proposed node and then its alternatives: resources,
   host ports, topology spread and inter-pod (anti-)affinity as they are *now*), committed
   as the serial scheduler commits (assume, Reserve, Permit, the ``binding`` subresource),
   or **refused**: the annotations are cleared, ``kubesched.io/refused`` says why, and the
   Pod is handed out again (after :data:`~kubesched.parallel.conflicts.FAST_RETRIES`
   refusals in a row it backs off as an error).  A gang's members handed to one shard are
   decided together once all have answered, as the binder decides them
   (:func:`~kubesched.parallel.gangs.commit_unit`): a member reported unschedulable fails on
   its own, the proposals all pass (each tentatively assumed so the next sees it) or all
   are refused.  A shard's ``kubesched.io/activate`` on a Pod (a waiting gang member's
   siblings, upstream ``PodsToActivate``) activates it in this queue.  A shard's failure
   report fails the Pod as the serial scheduler would (condition, Event, unschedulable
   pool); a preemption is granted only while every victim
   is still there and unclaimed;
3. **dispatch**: the in-process :class:`~kubesched.parallel.dispatcher.Dispatcher` pops
   Pods and hands each to the live shard with the fewest Pods in flight (ties rotate; at
   most ``window`` each), a gang whole, later members following to its shard, and keeps
   the hand-out records; this coordinator is its
   :class:`~kubesched.parallel.dispatcher.Courier`, the transport: it patches
   ``kubesched.io/shard`` and ``kubesched.io/attempt`` (a failed patch keeps no record).

Nothing is lost or bound twice: a hand-out is closed exactly once (decision, deletion, bind
seen on the watch, shard loss, timeout); the ``binding`` subresource is first-writer-wins, and
a bind refused with 409 fails the attempt like any bind error (requeue, handed out again).
A restarted or new leader relists (``kubesched run``'s leadership rules) and hands every
pending Pod out again with the next attempt number, so answers to its predecessor's
hand-outs are ignored.

Deviations from the in-process form (``docs/parallel.md`` §3): the binder's fast path is
off -- a proposal quotes the node's ``resourceVersion``, which does not move when Pods land
on the node, so it cannot stand in for the node's generation, and every proposal gets the
full check; and the coordinator's holds (assumed, not yet bound) are not published, so a
shard may propose a slot the coordinator holds, which the full check refuses.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

from kubesched.api import objects as api
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework.interface import Code, Status
from kubesched.live import sharding as sh
from kubesched.live.binder import LiveApi
from kubesched.live.client import ApiError, KubeClient
from kubesched.live.decisions import Decisions
from kubesched.metrics import SchedulerMetrics
from kubesched.parallel.binder import Checker
from kubesched.parallel.dispatcher import Dispatcher, InFlight
from kubesched.parallel.host import Handed
from kubesched.parallel.observe import ParallelMetrics
from kubesched.scheduler import Scheduler

log = logging.getLogger(__name__)

WINDOW = 64
"""Pods in flight per shard."""
DISPATCH_TIMEOUT = 120.0
"""Seconds a shard may hold a Pod without answering (longer than a gang's Permit wait)."""


class CoordinatorScheduler(Scheduler):
    """See the module docstring; ``client`` writes the annotations, ``api_client`` binds.

    It is the :class:`~kubesched.parallel.host.OutcomeHost` of its
    :attr:`decisions`, as the in-process coordinator is its binder's."""

    def __init__(
        self,
        config: KubeSchedulerConfiguration,
        *,
        clock: Callable[[], float],
        api_client: LiveApi,
        client: KubeClient,
        shards: int,
        membership: sh.Membership,
        metrics: SchedulerMetrics | None = None,
        guard: Callable[[], bool] = lambda: True,
        window: int = WINDOW,
        dispatch_timeout: float = DISPATCH_TIMEOUT,
        submit_binding: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        submit = submit_binding or (lambda fn: fn())
        super().__init__(
            config,
            clock=clock,
            api_client=api_client,
            metrics=metrics,
            submit_binding=lambda cycle: submit(self.decisions.counting_bind_errors(cycle)),
        )
        self.client = client
        self.shard_count = shards
        self.membership = membership
        self.guard = guard
        self.window = window
        self.dispatch_timeout = dispatch_timeout
        self.dispatcher = Dispatcher(shards, window=window, courier=self)
        """Hand-outs: the in-process coordinator's choice of shard and records, this
        coordinator their transport."""
        self.flights = self.dispatcher.in_flight
        self.load = self.dispatcher.load
        self.gangs = self.dispatcher.gangs
        """Pending gang members (the in-process dispatcher's index)."""
        self.answers: dict[str, sh.Proposal] = {}
        """The answer that arrived for each hand-out in flight (not decided yet)."""
        self.last_attempt: dict[str, int] = {}
        """Highest hand-out number seen on each pending Pod (ours or a predecessor's)."""
        self.ready: list[str] = []
        self.stats: Counter[str] = Counter()
        """``dispatched``, ``committed``, ``alternative``, ``refused:<reason>``,
        ``requeued:<reason>``, ``failed``, ``stale_proposal``, ``node_changed``,
        ``bind_failed``."""
        self.live: list[int] = []
        self.parallel_metrics = ParallelMetrics(self.metrics, shards)
        """The in-process coordinator's metrics: conflicts by reason, results per shard,
        binder latency, hand-outs again by reason, Pods in flight per shard."""
        self.decisions = Decisions(
            self,
            Checker(self.cluster, self.queue.nominator, shards),  # live: never its fast path
            client=client,
            live_api=api_client,
            flights=self.flights,
            answers=self.answers,
            close=self._close,
            stats=self.stats,
        )

    # ------------------------------------------------------------------ informer events
    def on_pod_add(self, pod: api.Pod) -> None:
        self._note(pod)
        super().on_pod_add(pod)
        if not pod.node_name:
            self.gangs.added(pod)

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        self._note(new)
        super().on_pod_update(old, new)
        if new.node_name:
            if not old.node_name:
                self.gangs.gone(old)
                flight = self._close(new.key)  # bound by us (already closed) or someone else
                if flight is not None:
                    self.queue.done(flight.qp.pod)
            return
        self.gangs.gone(old)
        self.gangs.added(new)
        self._arrived(new)
        mark = new.annotations.get(sh.ACTIVATE)
        if mark and mark != old.annotations.get(sh.ACTIVATE):  # a shard's PodsToActivate
            self.queue.activate([new])

    def on_pod_delete(self, pod: api.Pod) -> None:
        flight = self._close(pod.key)
        if flight is not None:
            self.queue.done(flight.qp.pod)
        super().on_pod_delete(pod)
        self.gangs.gone(pod)
        self.last_attempt.pop(pod.key, None)
        self.decisions.forget(pod.key)

    def _note(self, pod: api.Pod) -> None:
        if not pod.node_name:
            seen = sh.attempt_of(pod.annotations)
            if seen > self.last_attempt.get(pod.key, 0):
                self.last_attempt[pod.key] = seen

    def _arrived(self, pod: api.Pod) -> None:
        """A pending Pod changed: is it the answer to its current hand-out?"""
        flight = self.flights.get(pod.key)
        text = pod.annotations.get(sh.PROPOSAL)
        if flight is None or text is None or pod.key in self.answers:
            return
        prop = sh.Proposal.decode(text)
        if prop is None or (prop.shard, prop.attempt) != (flight.shard, flight.attempt):
            self.stats["stale_proposal"] += 1
            return
        self.answers[pod.key] = prop
        self.ready.append(pod.key)

    # ------------------------------------------------------------------ one step
    def step(self) -> bool:
        """Membership, decisions, hand-outs (see the module docstring); False when idle."""
        self.expire_waiting_pods()
        did = self._membership()
        keys, self.ready = self.ready, []
        did = self.decisions.decide(keys) or did
        did = self._fill() > 0 or did
        self.committer.drain_waiting()
        return did

    def _membership(self) -> bool:
        live = self.membership.live()
        now = self.clock()
        lost = [
            f
            for key, f in self.flights.items()
            if f.shard not in live
            or (key not in self.answers and now - f.handed_at > self.dispatch_timeout)
        ]
        for f in lost:
            why = "shard_lost" if f.shard not in live else "timeout"
            self._close(f.qp.pod.key)
            self.requeue_now(f, why)
        changed = live != self.live
        if changed:
            log.info("live shards: %s", live)
            self.live = live
        return changed or bool(lost)

    # ------------------------------------------------------------------ hand-out records
    def _close(self, key: str) -> InFlight | None:
        """Close the hand-out record of ``key`` (None: there is none) and drop its answer."""
        self.answers.pop(key, None)
        return self.dispatcher.close(key)

    def requeue_now(self, rec: Handed, reason: str) -> None:
        """Back to activeQ at once: the Pod did not fail on its own."""
        self.queue.requeue_at_once(rec.qp)
        self.stats[f"requeued:{reason}"] += 1
        self.parallel_metrics.retry(reason)

    # ------------------------------------------------------------------ hand-outs
    def _fill(self) -> int:
        """Hand out popped Pods (the :class:`~kubesched.parallel.dispatcher.Dispatcher`'s
        choice of shard, this coordinator its :class:`~kubesched.parallel.dispatcher.Courier`)."""
        if not self.live:
            return 0
        return self.dispatcher.fill(self.queue)

    def open(self, shard: int) -> bool:
        """The courier's: live shards take Pods while this replica leads."""
        return shard in self.live and self.guard()

    def send(self, rec: InFlight) -> bool:
        """The courier's: patch ``kubesched.io/shard`` and ``kubesched.io/attempt`` on the
        Pod (the next hand-out number).  A Pod not ours or already assumed is done; one
        deleted meanwhile (404) is left to its watch event; any other error fails the
        attempt as an error."""
        qp = rec.qp
        pod = qp.pod
        if pod.scheduler_name not in self.profiles or self.cluster.is_assumed(pod.key):
            self.queue.done(pod)
            return False
        attempt = self.last_attempt.get(pod.key, 0) + 1
        marks: dict[str, str | None] = {
            sh.SHARD: str(rec.shard),
            sh.ATTEMPT: str(attempt),
            sh.PROPOSAL: None,
        }
        try:
            sh.annotate(self.client, pod.namespace, pod.name, marks)
        except ApiError as e:
            if e.code == 404:  # deleted; its watch event follows
                self.queue.done(pod)
                return False
            fwk = self.profiles[pod.scheduler_name]
            status = Status(Code.ERROR, (f"cannot hand the Pod to shard {rec.shard}: {e}",))
            self.failing.fail(fwk, qp, status, rec.cycle, time.perf_counter())
            return False
        self.last_attempt[pod.key] = attempt
        self.pod_attempts[pod.key] += 1
        rec.attempt = attempt
        rec.start = time.perf_counter()
        rec.handed_at = self.clock()
        self.stats["dispatched"] += 1
        return True

    def sync_metrics(self) -> None:
        super().sync_metrics()
        self.parallel_metrics.in_flight(self.load)
