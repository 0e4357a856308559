"""The scheduling queue: activeQ, backoffQ, the unschedulable pool and gated Pods.

Upstream v1.34 ``PriorityQueue`` (``pkg/scheduler/backend/queue/scheduling_queue.go``) with its
default feature gates (``SchedulerQueueingHints``, ``SchedulerPopFromBackoffQ``), driven by the
caller instead of goroutines: :meth:`SchedulingQueue.pop` never blocks, and the caller (a loop
in virtual or wall-clock time) calls :meth:`~SchedulingQueue.due`, which runs the periodic
flushes that are due (upstream's ``flushBackoffQCompleted`` every second and
``flushUnschedulablePodsLeftover`` every 30 s, :mod:`kubesched.queue.periodic`), again at
:meth:`~SchedulingQueue.next_wakeup` or earlier.

Life of a Pod: ``add`` runs the profile's PreEnqueue plugins (a failing one *gates* the Pod in
the pool until an event its gating plugin registered passes the hints); ``pop`` takes activeQ's
head by ``sort_key`` (ties FIFO by ``QueuedPodInfo.seq``), or backoffQ's head when activeQ is
empty (KEP-5142), increments ``attempts`` and the cycle, and clears the last rejectors;
``initial_attempt_timestamp`` is set when the Pod first enters activeQ (as upstream: gated
time does not count).  After a failed attempt the caller fills ``unschedulable_plugins`` /
``pending_plugins`` and calls ``add_unschedulable_if_not_present``: ``timestamp`` becomes now
(backoff counts from the last failure), and the events recorded while the Pod was in flight are
replayed through the rejectors' hints (v1.34's in-flight check, not the older
``moveRequestCycle`` rule): any Queue sends it to backoffQ (activeQ if its backoff already
passed, or a *pending* plugin said Queue), otherwise it joins the unschedulable pool; with no
rejector (an error) it goes to backoffQ's error heap.  Cluster events, updates of pooled Pods
(their ``UpdatePod*`` events) and the 5-minute time-out move pooled Pods out the same way.
``delete`` removes a Pod wherever it is (an in-flight Pod is dropped when its attempt ends).
``add`` / ``update`` / ``delete`` also keep :attr:`nominator` (Pods nominated to nodes by
preemption, :mod:`kubesched.queue.nominator`) current, as upstream's queue does: a new Pod's
``status.nominatedNodeName`` counts once PreEnqueue lets it into activeQ (a gated Pod is not
nominated; a gate lifted by a cluster event does not nominate it either, as upstream's
``moveToActiveQ`` nominates only on a Pod add or update), an update of a queued Pod (gated
or not) goes through ``Nominator.update``, an update of a Pod in flight leaves the
nominator alone, and ``delete`` drops the nomination.

The queue imports no plugin: PreEnqueue plugins, hints and the QueueSort key arrive through
the constructor.  Every operation is O(log n) except those that, as upstream, visit the whole
pool (a cluster event).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from kubesched.api import objects as api
from kubesched.framework.interface import ClusterEvent, QueuedPodInfo
from kubesched.metrics.catalog import POD_POPPED_IN_FLIGHT_EVENT
from kubesched.queue import events
from kubesched.queue.backoff import Entry
from kubesched.queue.core import (
    ACTIVE,
    BACKOFF,
    GATED,
    IN_FLIGHT,
    UNSCHEDULABLE,
    AssignedPodFilter,
    SortKey,
)
from kubesched.queue.hints import HintObserver, pod_uid
from kubesched.queue.periodic import BACKOFF_FLUSH_PERIOD, UNSCHEDULABLE_FLUSH_PERIOD
from kubesched.queue.podgroups import (
    GROUPED,
    INCOMPLETE,
    PENDING,
    EntityOf,
    GroupQueueCore,
)
from kubesched.queue.unschedulable import PreEnqueuePlugin

__all__ = [
    "ACTIVE",
    "BACKOFF",
    "GATED",
    "IN_FLIGHT",
    "UNSCHEDULABLE",
    "AssignedPodFilter",
    "EntityOf",
    "PreEnqueuePlugin",
    "SchedulingQueue",
    "SortKey",
]

_UNSCHEDULED_ADD = events.event_label(events.EVENT_UNSCHEDULED_POD_ADD)
_UNSCHEDULED_UPDATE = events.event_label(events.EVENT_UNSCHEDULED_POD_UPDATE)


class SchedulingQueue(GroupQueueCore):
    """Upstream ``PriorityQueue`` semantics with a caller-driven clock.

    Constructor (keyword-only): ``clock`` (seconds), ``sort_key`` (QueueSort: smaller pops
    first), ``pre_enqueue`` (profile -> PreEnqueue plugins), ``hints`` (profile -> plugin ->
    registered events), ``initial_backoff`` / ``max_backoff`` (1 s / 10 s),
    ``max_in_unschedulable`` (300 s), and ``assigned_pod_filter(qp, pod)``, standing in for
    upstream's ``getUnschedulablePodsWithCrossTopologyTerm`` (PodTopologySpread / inter-pod
    affinity knowledge): only pooled Pods it accepts are offered assigned-Pod add/update
    events; None offers every pooled Pod and lets the hints decide.  ``nominate_gated``
    (v1.37's ``addPod``): a new Pod's nomination is recorded even when PreEnqueue keeps it
    out of activeQ; before v1.37 only a Pod let into activeQ is nominated.
    ``flush_gated`` (v1.37's ``moveEntitiesToActiveOrBackoffQueue`` and
    ``flushUnschedulableEntitiesLeftover``): a wildcard event (the 5-minute time-out flush)
    re-runs PreEnqueue on gated Pods too, whatever their gating plugin registered, and a Pod
    is flushed again 5 minutes after its last flush; before v1.37 a gated Pod is offered
    only the events its gating plugin registered.
    ``target_pod_events`` (v1.37's ``PodSchedulingPropertiesChange(..., isTargetPod)``): a
    pending Pod's own update raises ``TargetPod`` events, and a grown request
    ``UpdatePodScaleUp``; before v1.37, ``UnschedulablePod`` events and no scale-up.
    ``entity_of`` (v1.37 with GenericWorkload): a Pod's PodGroup, whose members are queued
    as one entity (:mod:`kubesched.queue.podgroups`); None queues every Pod alone.
    ``member_of`` (with it): a member's PodGroup observed or not, so a member whose PodGroup
    is missing is held apart (``incompletePodGroupPods``); ``group_stores`` (v1.37): the
    ``incomplete`` and ``pending`` counts of :meth:`pending_pods`.
    ``backoff_only(pod)`` (v1.36 with GenericWorkload: a PodGroup member): a failed attempt
    of such a Pod is requeued after its backoff whatever happened while it was in flight
    (upstream v1.36 ``determineSchedulingHintForInFlightPod``: "event-based requeueing
    logic is not yet implemented for pod group level"), never into the unschedulable pool.
    """

    # ------------------------------------------------------------------ informer side
    def add(self, pod: api.Pod) -> None:
        """A new pending Pod (a known one is treated as an update)."""
        known = self._entries.get(pod.key)
        if known is not None:
            self.update(known.latest_pod or known.qp.pod, pod)
            return
        if self._is_member(pod):  # v1.37 addPod: a member joins its group's entity (or is held)
            self.nominator.add(pod)
            self._add_member(self._new_entry(pod), _UNSCHEDULED_ADD)
        elif self._nominate_gated:
            self.nominator.add(pod)  # upstream v1.37 addPod: before moveToActiveQ, gated or not
            self._move_to_active(self._new_entry(pod), _UNSCHEDULED_ADD, from_backoff=False)
        elif self._move_to_active(self._new_entry(pod), _UNSCHEDULED_ADD, from_backoff=False):
            self.nominator.add(pod)  # upstream moveToActiveQ: only a Pod let into activeQ

    def update(self, old: api.Pod | None, new: api.Pod) -> None:
        """A pending Pod changed; a pooled Pod moves if its hints say the change may help."""
        v137 = self._target_pod_events
        evs = (
            events.pod_scheduling_properties_change(new, old, target=v137, since_v137=v137)
            if old is not None
            else [events.EVENT_UNSCHEDULED_POD_UPDATE]
        )
        entry = self._entries.get(new.key)
        if entry is None:
            if self._is_member(new):  # upstream Update: addPod, a member joins
                self.add(new)
            elif self._move_to_active(
                self._new_entry(new), _UNSCHEDULED_UPDATE, from_backoff=False
            ):
                self.nominator.add(new)
            return
        if entry.where == IN_FLIGHT:  # upstream leaves the nominator alone too
            entry.latest_pod = new
            self._in_flight.record_for_pod(entry.uid, evs, old, new)
            return
        # Queued (gated ones included): upstream UpdateNominatedPod, before the hints run.
        if old is not None:
            self.nominator.update(old, new)
        else:
            self.nominator.add(new)
        entry.qp.pod = new
        if entry.where in (GROUPED, PENDING, INCOMPLETE):
            self._update_member(entry, evs, old, new)
        elif entry.where == ACTIVE:
            self._active.push(entry.key, self._active_priority(entry.qp), entry)
        elif entry.where == BACKOFF:
            self._backoff.update(entry)
        elif entry.where == UNSCHEDULABLE:
            for ev in evs:
                strategy = self._hints.worth_requeuing(entry.qp, ev, old, new)
                if self._requeue(entry, strategy, events.event_label(ev)) != UNSCHEDULABLE:
                    break

    def _update_member(
        self, entry: Entry, evs: list[ClusterEvent], old: api.Pod | None, new: api.Pod
    ) -> None:
        """A member of a PodGroup entity changed (its record updated already): an entity in
        the pool moves if the change is worth it for the entity (upstream ``Update``)."""
        if entry.where != GROUPED:
            return
        group = self._entity(entry)
        if group.where == BACKOFF:
            self._backoff.update(group)
        if group.where != UNSCHEDULABLE:
            return
        for ev in evs:
            strategy = self._worth(group, ev, old, new)
            if self._requeue(group, strategy, events.event_label(ev)) != UNSCHEDULABLE:
                break

    def delete(self, pod: api.Pod) -> None:
        """The Pod is gone (or was bound elsewhere): forget it wherever it is."""
        self.nominator.delete(pod.key)
        entry = self._entries.get(pod.key)
        if entry is None:
            return
        if entry.where == IN_FLIGHT:
            entry.deleted = True
            return
        del self._entries[entry.key]
        if entry.where in (GROUPED, PENDING, INCOMPLETE):
            self._member_left(entry)
            return
        self._detach(entry)

    def activate_keys(self, keys: Iterable[str]) -> None:
        """:meth:`activate` of the Pods this queue holds (queued or in flight) by key; the
        others are ignored (a coordinator told by a shard's ``PodsToActivate``)."""
        self.activate([e.qp.pod for k in keys if (e := self._entries.get(k)) is not None])

    def activate(self, pods: Iterable[api.Pod]) -> None:
        """Force Pods from the pool or backoffQ into activeQ (PreEnqueue still applies).

        An in-flight Pod gets a ``ForceActivate`` event so it is requeued when it comes back.
        """
        found: dict[str, api.Pod] = {}
        records: dict[str, Entry] = {}
        for pod in pods:
            if (e := self._entries.get(pod.key)) is not None:
                entity = self._entity(e)  # a member activates its whole group
                found.setdefault(entity.key, pod)
                records.setdefault(entity.key, entity)
        for entry in self._release_order(list(records.values())):
            pod = found[entry.key]
            if entry.where == UNSCHEDULABLE:
                self._move_to_active(entry, events.FORCE_ACTIVATE, from_backoff=False)
            elif entry.where == BACKOFF:
                self._detach(entry)
                self._move_to_active(entry, events.FORCE_ACTIVATE, from_backoff=True)
            elif entry.where == IN_FLIGHT:
                self._in_flight.record_for_pod(entry.uid, [events.EVENT_FORCE_ACTIVATE], None, pod)

    # ------------------------------------------------------------------ scheduler side
    @property
    def scheduling_cycle(self) -> int:
        """Number of Pods popped so far."""
        return self._cycle

    def pop(self) -> QueuedPodInfo | None:
        """The next Pod to schedule, or None when activeQ and backoffQ are both empty."""
        entry = self._active.pop()
        if entry is None:
            entry = self._backoff.pop_backoff()
            if entry is None:
                return None
            self.incoming_counts[(ACTIVE, events.POP_FROM_BACKOFF_Q)] += entry.size
        self._cycle += 1
        if entry.members is not None:
            return self._pop_group(entry)
        self._last_popped = ""
        return self._start_attempt(entry)

    def poppable(self) -> bool:
        """Whether :meth:`pop` has a Pod to give now (activeQ, or a rejected Pod popped
        from backoffQ early)."""
        return len(self._active) > 0 or self._backoff.has_rejected()

    def take(self, key: str, *, counted: bool = False) -> QueuedPodInfo | None:
        """Take the queued Pod ``key`` out of activeQ, backoffQ or the unschedulable pool
        (not gated) as :meth:`pop` would: a new attempt, in flight from now on, so its own
        updates and the cluster's events are recorded for its requeue as for a popped Pod
        (a gang's siblings handed out with the member popped).  None: not queued there.
        ``counted``: the take is a scheduling cycle too (v1.36's ``PopSpecificPod``, whose
        ``movePodToInFlight`` counts one as a pop does; OpportunisticBatching reads it)."""
        entry = self._entries.get(key)
        if entry is None or entry.where not in (ACTIVE, BACKOFF, UNSCHEDULABLE):
            return None
        if entry.where == UNSCHEDULABLE and self._pool.is_gated(key):
            return None
        self._detach(entry)
        if counted:
            self._cycle += 1
        return self._start_attempt(entry)

    def _start_attempt(self, entry: Entry) -> QueuedPodInfo:
        qp = entry.qp
        qp.attempts += 1
        if qp.initial_attempt_timestamp is None:
            qp.initial_attempt_timestamp = self._clock()
            qp.initial_attempt_seq = self._seq
            self._seq += 1
        entry.backoff_expiration = None
        entry.where = IN_FLIGHT
        self._in_flight.start(entry.uid, entry.key)
        qp.unschedulable_plugins.clear()
        qp.pending_plugins.clear()
        return qp

    def add_unschedulable_if_not_present(
        self, qp: QueuedPodInfo, pod_scheduling_cycle: int
    ) -> None:
        """Requeue a Pod after a failed attempt and mark the attempt done.

        ``qp.unschedulable_plugins`` / ``pending_plugins`` name the rejectors (both empty: the
        attempt failed with an error).  ``pod_scheduling_cycle`` is accepted for upstream
        parity; v1.34 decides with in-flight events, not the cycle number.  A Pod already
        queued, or deleted while in flight, is left alone.
        """
        del pod_scheduling_cycle
        entry = self._entries.get(qp.pod.key)
        if entry is None:
            entry = self._adopt(qp)
        elif entry.where != IN_FLIGHT:
            self.done(entry.uid)
            return
        entry.qp = qp
        try:
            if entry.deleted:
                del self._entries[entry.key]
                return
            if entry.latest_pod is not None:
                qp.pod, entry.latest_pod = entry.latest_pod, None
            if not qp.unschedulable_plugins and not qp.pending_plugins:
                entry.consecutive_errors += 1
            else:
                entry.unschedulable_count += 1
                entry.consecutive_errors = 0
            qp.timestamp = self._clock()
            entry.backoff_expiration = None
            if self._is_member(qp.pod):  # addUnschedulablePodGroupMember (held: no PodGroup)
                qp.seq, self._seq = self._seq, self._seq + 1  # the real clock's order
                entry.where = ""
                self._add_member(entry, events.SCHEDULE_ATTEMPT_FAILURE)
                return
            self._last_popped = ""  # clearPoppedEntity
            strategy = self._in_flight_strategy(entry)
            entry.where = ""
            self._requeue(entry, strategy, events.SCHEDULE_ATTEMPT_FAILURE)
        finally:
            self._in_flight.done(entry.uid)

    def requeue_at_once(self, qp: QueuedPodInfo) -> None:
        """A popped Pod whose attempt ended through no fault of its own (a parallel binder's
        conflict, a lost shard) goes straight back to activeQ, keeping its attempt count and
        first-attempt time."""
        self.done(qp.pod)
        self.add(qp.pod)
        again = self.get(qp.pod.key)
        if again is not None:
            again.attempts = qp.attempts
            again.initial_attempt_timestamp = qp.initial_attempt_timestamp
            again.initial_attempt_seq = qp.initial_attempt_seq

    def done(self, pod: api.Pod | str) -> None:
        """The attempt for this Pod (a Pod, its UID or its key) is over: bound, dropped or
        requeued; stop tracking it in flight.  A Pod neither requeued nor deleted is forgotten."""
        uid = pod_uid(pod) if isinstance(pod, api.Pod) else pod
        if uid not in self._in_flight:
            entry = self._entries.get(pod.key if isinstance(pod, api.Pod) else pod)
            if entry is None:
                return
            uid = entry.uid
        key = self._in_flight.done(uid)
        if key is not None:
            entry = self._entries.get(key)
            if entry is not None and entry.where == IN_FLIGHT:
                del self._entries[key]

    # ------------------------------------------------------------------ cluster events
    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        pre_check: Callable[[api.Pod], bool] | None = None,
    ) -> None:
        """A cluster event: pooled Pods whose rejectors' hints say Queue move out."""
        if not self._hints.is_event_of_interest(event):
            return
        pooled = [
            e
            for e in self._pool_for(event)
            if pre_check is None or any(pre_check(m.qp.pod) for m in self._pods_of(e))
        ]
        self._move_interesting(pooled, event, old, new)

    def assigned_pod_added(self, pod: api.Pod) -> None:
        """A bound Pod appeared (may satisfy affinity / spread of pooled Pods)."""
        ev = events.EVENT_ASSIGNED_POD_ADD
        self._move_pods(self._cross_topology(pod, ev), ev, None, pod)

    def assigned_pod_updated(
        self, old: api.Pod, new: api.Pod, event: ClusterEvent | None = None
    ) -> None:
        """A bound Pod changed; a scale-down is offered to every pooled Pod.

        Without ``event`` each of ``pod_scheduling_properties_change(new, old)`` is applied.
        """
        v137 = self._target_pod_events
        for ev in (
            [event]
            if event is not None
            else events.pod_scheduling_properties_change(new, old, since_v137=v137)
        ):
            if events.matches(events.EVENT_POD_SCALE_DOWN, ev):
                self.move_all_to_active_or_backoff(ev, old, new)
            else:
                self._move_pods(self._cross_topology(new, ev), ev, old, new)

    def flush_backoff_completed(self) -> None:
        """Move Pods whose backoff completed to activeQ (upstream: every aligned second)."""
        for entry in self._backoff.pop_all_completed():
            entry.where = ""
            self._move_to_active(entry, events.BACKOFF_COMPLETE, from_backoff=True)

    def flush_unschedulable_left_over(self) -> None:
        """Move Pods pooled longer than ``max_in_unschedulable`` (upstream: every 30 s).

        Before v1.37 a Pod the flush leaves in the pool (gated) is due again at the next
        flush; v1.37 (``flush_gated``) marks each flushed Pod's ``FlushTimestamp`` and counts
        its next time-out from it, so a Pod that stays gated is flushed every 5 minutes."""
        now = self._clock()
        due = self._pool.pop_due(now)
        if not due:
            return
        if self._flush_gated:
            for entry in due:
                entry.flushed_at = now
        self._move_pods(due, events.EVENT_UNSCHEDULABLE_TIMEOUT, None, None)
        for entry in due:  # still in the pool (gated): when upstream retries it
            if entry.where == UNSCHEDULABLE:
                if self._flush_gated:
                    since = max(entry.qp.timestamp, entry.flushed_at)
                    self._pool.retry_at(entry, since + self._pool.max_in_unschedulable)
                else:
                    self._pool.retry_at(entry, now + UNSCHEDULABLE_FLUSH_PERIOD)

    # ------------------------------------------------------------------ periodic work
    def start_periodic(self, backoff_period: float = BACKOFF_FLUSH_PERIOD) -> None:
        """Start the periodic flushes from now (upstream ``PriorityQueue.Run``): backoffQ
        every ``backoff_period`` seconds (0: at every :meth:`due`, the moment a Pod's backoff
        ends, as the simulator does in virtual time), the pool every 30 s.  Until then
        :meth:`due` runs both flushes at every call."""
        now = self._clock()
        self._backoff_ticker.start(now, backoff_period)
        self._pool_ticker.start(now, UNSCHEDULABLE_FLUSH_PERIOD)

    def due(self, now: float) -> None:
        """Run the periodic work due at ``now`` (the queue's clock): the unschedulable pool's
        flush, then backoffQ's."""
        if self._pool_ticker.fire(now):
            self.flush_unschedulable_left_over()
        if self._backoff_ticker.fire(now):
            self.flush_backoff_completed()

    def next_wakeup(self) -> float | None:
        """When :meth:`due` may next move a Pod (None: no Pod waits for a flush).

        While backoffQ holds a Pod: its next flush, or, with a period of 0 (or before
        :meth:`start_periodic`), the instant the first backoff ends.  While the pool holds a
        Pod that can time out: its next flush if an ungated Pod waits, else (only gated Pods
        waiting to be retried) the later of that flush and the first retry time; before
        :meth:`start_periodic`, just after the first time-out.  Right after :meth:`due` of a
        started queue, the time is after ``now``.
        """
        times = []
        backoff = self._backoff.next_completion()
        if backoff is not None:
            ticker = self._backoff_ticker
            times.append(backoff if ticker.period == 0 else ticker.next_at)
        timeout = self._pool.next_timeout()
        if timeout is not None:
            after, ticker = math.nextafter(timeout, math.inf), self._pool_ticker
            if ticker.period == 0:
                times.append(after)
            elif len(self._pool) > self._pool.gated_count:
                times.append(ticker.next_at)
            else:
                times.append(max(after, ticker.next_at))
        return min(times) if times else None

    # ------------------------------------------------------------------ reporting
    def pending_pods(self) -> dict[str, int]:
        """Pods per queue, as ``scheduler_pending_pods{queue}`` (v1.37 adds ``incomplete``
        and ``pending``: :mod:`kubesched.queue.podgroups`)."""
        gated = self._pool.gated_count
        extra = self._group_counts()
        return {
            ACTIVE: len(self._active) + extra[ACTIVE],
            BACKOFF: len(self._backoff) + extra[BACKOFF],
            UNSCHEDULABLE: len(self._pool) - gated + extra[UNSCHEDULABLE],
            GATED: gated + extra[GATED],
            **self._member_store_counts(),
        }

    def queued_entities(self) -> dict[tuple[str, str], int]:
        """``scheduler_queued_entities{queue, type}`` (v1.37, ``group_stores``; empty
        before): the entities queued per queue (``gated`` apart from ``unschedulable``),
        ``pod`` for a Pod queued alone, ``podgroup`` for a PodGroup entity; only the
        non-zero ones.  Members held or waiting aside are in no queue."""
        if not self._group_stores:
            return {}
        out: dict[tuple[str, str], int] = {}
        records = [e for e in self._entries.values() if e.where in (ACTIVE, BACKOFF)]
        records += [e for e in self._entries.values() if e.where == UNSCHEDULABLE]
        records += [g for g in self._groups.values() if g.where in (ACTIVE, BACKOFF, UNSCHEDULABLE)]
        for entry in records:
            where = entry.where
            if where == UNSCHEDULABLE and self._pool.is_gated(entry.key):
                where = GATED
            kind = "pod" if entry.members is None else "podgroup"
            out[(where, kind)] = out.get((where, kind), 0) + 1
        return out

    def pending_pod_infos(self) -> list[QueuedPodInfo]:
        """Every queued Pod (not in flight; members held for their PodGroup included, as
        upstream's ``PendingPods``); see :meth:`queue_of` for where each one is."""
        queued = (ACTIVE, BACKOFF, UNSCHEDULABLE, GROUPED, INCOMPLETE)
        return [e.qp for e in self._entries.values() if e.where in queued]

    def queue_of(self, pod_key: str) -> str | None:
        """``active``, ``backoff``, ``unschedulable``, ``gated``, ``in_flight`` (a member
        waiting aside for its group in flight too), ``incomplete`` (held until its PodGroup is
        observed) or None."""
        entry = self._entries.get(pod_key)
        if entry is None or not entry.where:
            return None
        if entry.where == PENDING:
            return IN_FLIGHT
        if entry.where == INCOMPLETE:
            return INCOMPLETE
        entry = self._entity(entry)
        if entry.where == UNSCHEDULABLE and self._pool.is_gated(entry.key):
            return GATED
        return entry.where

    def get(self, pod_key: str) -> QueuedPodInfo | None:
        """The queue's record of a Pod (queued or in flight)."""
        entry = self._entries.get(pod_key)
        return None if entry is None else entry.qp

    def set_hint_recorder(self, observe: HintObserver | None) -> None:
        """Time every queueing hint call into ``observe(seconds, plugin, event, hint)``."""
        self._hints.observe = observe

    def inflight_events(self) -> dict[str, int]:
        """``scheduler_inflight_events``: per event label the events kept for Pods in flight,
        and ``PodPopped`` -> the Pods in flight (upstream's ``inFlightEvents`` list)."""
        pods, counts = self._in_flight.tracked()
        out: dict[str, int] = {POD_POPPED_IN_FLIGHT_EVENT: pods}
        for ev, n in counts.items():
            label = events.event_label(ev)
            out[label] = out.get(label, 0) + n
        return out

    def in_flight_pods(self) -> list[str]:
        """UIDs of Pods popped and not yet done."""
        return self._in_flight.pods()
