"""The private mechanics of the scheduling queue: where a Pod goes, and how it gets there.

:class:`QueueCore` owns the sub-queues (the activeQ heap, ``BackoffQueue``,
``UnschedulablePool``, ``InFlightLog``) and the moves between them, after upstream v1.34
``moveToActiveQ``, ``moveToBackoffQ``, ``requeuePodWithQueueingStrategy`` and
``movePodsToActiveOrBackoffQueue``.  Every move records
``scheduler_queue_incoming_pods_total{queue, event}`` in :attr:`QueueCore.incoming_counts` the
way upstream does (once per entry into a queue; the pool counts only Pods not already in it).
:class:`~kubesched.queue.scheduling_queue.SchedulingQueue` adds the public operations.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from kubesched.api import objects as api
from kubesched.framework.interface import ClusterEvent, QueuedPodInfo
from kubesched.queue import events
from kubesched.queue.backoff import BackoffQueue, Entry
from kubesched.queue.heaps import KeyedHeap
from kubesched.queue.hints import HintMap, HintTable, Strategy, pod_uid
from kubesched.queue.inflight import InFlightLog
from kubesched.queue.nominator import Nominator
from kubesched.queue.periodic import Ticker
from kubesched.queue.unschedulable import PreEnqueuePlugin, UnschedulablePool, run_pre_enqueue

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"
IN_FLIGHT = "in_flight"

SortKey = Callable[[QueuedPodInfo], tuple[Any, ...]]
AssignedPodFilter = Callable[[QueuedPodInfo, api.Pod], bool]


class QueueCore:
    """Sub-queues and the moves between them; see :class:`SchedulingQueue` for the API."""

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        sort_key: SortKey,
        pre_enqueue: Mapping[str, Sequence[PreEnqueuePlugin]] | None = None,
        hints: HintMap | None = None,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = 300.0,
        assigned_pod_filter: AssignedPodFilter | None = None,
        nominate_gated: bool = False,
        target_pod_events: bool = False,
        flush_gated: bool = False,
        backoff_only: Callable[[api.Pod], bool] | None = None,
    ) -> None:
        """Sub-queues empty; ``assigned_pod_filter``, ``nominate_gated``,
        ``target_pod_events``, ``flush_gated`` and ``backoff_only`` are documented on
        SchedulingQueue."""
        self._backoff_only = backoff_only
        self._flush_gated = flush_gated
        self._nominate_gated = nominate_gated
        self._target_pod_events = target_pod_events
        self._clock = clock
        self._sort_key = sort_key
        self._pre_enqueue_plugins = {n: tuple(pls) for n, pls in (pre_enqueue or {}).items()}
        self._gating = sorted({p.name for pls in self._pre_enqueue_plugins.values() for p in pls})
        self._gated_events: dict[ClusterEvent, bool] = {}
        """Per event, whether some gating plugin registered for it (``_pool_for``)."""
        self._hints = HintTable(hints or {})
        self._backoff = BackoffQueue(clock, initial_backoff, max_backoff, sort_key)
        self._assigned_pod_filter = assigned_pod_filter
        self._entries: dict[str, Entry] = {}
        self._active: KeyedHeap[Entry] = KeyedHeap()
        self._pool = UnschedulablePool(max_in_unschedulable)
        self._in_flight = InFlightLog()
        self._cycle = 0
        self._seq = 0
        self.incoming_counts: Counter[tuple[str, str]] = Counter()
        """``(queue, event) -> n`` for ``scheduler_queue_incoming_pods_total``."""
        self.nominator = Nominator()
        """Pods nominated to nodes by preemption (upstream ``PodNominator``)."""
        self._backoff_ticker = Ticker()
        self._pool_ticker = Ticker()
        self._release_rng: random.Random | None = None
        """Set by :meth:`shuffle_releases`: the order one event's Pods leave the pool in."""

    def shuffle_releases(self, seed: int) -> None:
        """Draw, from ``seed``, the order in which the Pods one event (or one activation)
        moves out of the unschedulable pool are requeued, instead of the pool's order.
        Upstream walks its ``unschedulablePods`` map, so that order is Go's map iteration
        order, different run to run; where it decides something (v1.36 orders a PodGroup's
        members by the instant each first entered activeQ) each seed gives one of upstream's
        possible answers (``oracle/compare.py``, ``docs/fidelity.md``)."""
        self._release_rng = random.Random(seed)

    def _release_order(self, entries: list[Entry]) -> list[Entry]:
        """``entries`` in the order they are requeued (:meth:`shuffle_releases`)."""
        if self._release_rng is None or len(entries) < 2:
            return entries
        drawn = list(entries)
        self._release_rng.shuffle(drawn)
        return drawn

    def _new_entry(self, pod: api.Pod) -> Entry:
        qp = QueuedPodInfo(pod=pod, timestamp=self._clock(), seq=self._seq)
        self._seq += 1
        entry = Entry(qp, pod_uid(pod))
        self._entries[pod.key] = entry
        return entry

    def _adopt(self, qp: QueuedPodInfo) -> Entry:
        """A Pod the queue does not track (done() already called): treat as in flight."""
        entry = Entry(qp, pod_uid(qp.pod), where=IN_FLIGHT)
        self._entries[qp.pod.key] = entry
        return entry

    def _active_priority(self, qp: QueuedPodInfo) -> tuple[Any, ...]:
        return (*self._sort_key(qp), qp.seq)

    def _cross_topology(self, pod: api.Pod, event: ClusterEvent) -> list[Entry]:
        if not len(self._pool):  # nothing pooled: the common case while Pods keep fitting
            return []
        accept = self._assigned_pod_filter
        pooled = self._pool_for(event)
        if accept is None:
            return list(pooled)
        return [e for e in pooled if any(accept(m.qp, pod) for m in self._pods_of(e))]

    @staticmethod
    def _pods_of(entry: Entry) -> list[Entry]:
        """The Pods' records ``entry`` stands for: itself, or a PodGroup entity's members."""
        return [entry] if entry.members is None else list(entry.members.values())

    def _pool_for(self, event: ClusterEvent) -> Iterator[Entry]:
        """Pooled Pods an event may concern: gated ones only when a gating (PreEnqueue)
        plugin registered for the event, or (``flush_gated``, v1.37) it is a wildcard."""
        include = self._gated_events.get(event)
        if include is None:
            hints = self._hints
            include = (self._flush_gated and events.is_wildcard(event)) or any(
                hints.plugin_interested(name, event) for name in self._gating
            )
            self._gated_events[event] = include
        return self._pool.candidates(include_gated=include)

    @property
    def retries_after_backoff_alone(self) -> bool:
        """Whether some Pods' failed attempts are requeued after their backoff alone
        (``backoff_only``, documented on SchedulingQueue)."""
        return self._backoff_only is not None

    def _in_flight_strategy(self, entry: Entry) -> Strategy:
        """Upstream ``determineSchedulingHintForInFlightPod``."""
        qp = entry.qp
        if not qp.unschedulable_plugins and not qp.pending_plugins:
            return Strategy.AFTER_BACKOFF
        if self._backoff_only is not None and self._backoff_only(qp.pod):
            return Strategy.AFTER_BACKOFF
        recorded = self._in_flight.events_since(entry.uid)
        if recorded is None:
            return Strategy.AFTER_BACKOFF
        return self._hints.replay(qp, recorded)

    def _move_pods(self, entries: list[Entry], event: ClusterEvent, old: Any, new: Any) -> None:
        """Upstream ``movePodsToActiveOrBackoffQueue``."""
        if self._hints.is_event_of_interest(event):
            self._move_interesting(entries, event, old, new)

    def _move_interesting(
        self, entries: list[Entry], event: ClusterEvent, old: Any, new: Any
    ) -> None:
        """:meth:`_move_pods` for an ``event`` some plugin registered for (the caller
        asked :meth:`HintTable.is_event_of_interest`)."""
        label = events.event_label(event) if entries else ""
        # v1.37 (``flush_gated``): a wildcard event re-evaluates gated entities too, "so
        # they don't get stuck due to incomplete or incorrect queueing hints".
        wildcard = self._flush_gated and events.is_wildcard(event)
        for entry in self._release_order(entries):
            qp = entry.qp
            if entry.where != UNSCHEDULABLE:
                continue
            if (
                qp.gated
                and not wildcard
                and not self._hints.plugin_interested(qp.gating_plugin, event)
            ):
                continue
            strategy = self._worth(entry, event, old, new)
            if strategy == Strategy.SKIP:
                continue
            self._detach(entry)
            self._requeue(entry, strategy, label)
        self._in_flight.record(event, old, new)

    def _worth(self, entry: Entry, event: ClusterEvent, old: Any, new: Any) -> Strategy:
        """Upstream ``isEntityWorthRequeuing``: the strongest strategy any of the entity's
        Pods' rejectors give the event (a Pod alone: ``isPodWorthRequeuing``)."""
        best = Strategy.SKIP
        for member in self._pods_of(entry):
            best = max(best, self._hints.worth_requeuing(member.qp, event, old, new))
            if best == Strategy.IMMEDIATELY:
                break
        return best

    def _pre_enqueue(self, entry: Entry) -> None:
        """Upstream ``runPreEnqueuePlugins``: every Pod of the entity is checked, and the
        entity is gated when any of them is (with that Pod's gating plugin and message)."""
        if entry.members is None:
            run_pre_enqueue(self._pre_enqueue_plugins, entry.qp)
            return
        qp = entry.qp
        qp.gated, qp.gating_plugin = False, ""
        for member in entry.members.values():
            run_pre_enqueue(self._pre_enqueue_plugins, member.qp)
            if member.qp.gated:
                qp.gated, qp.gating_plugin = True, member.qp.gating_plugin
                qp.message = member.qp.message

    def _requeue(self, entry: Entry, strategy: Strategy, label: str) -> str:
        """Upstream ``requeuePodWithQueueingStrategy``; returns where the Pod went."""
        if strategy == Strategy.SKIP:
            self._pool_add(entry, label)
            return UNSCHEDULABLE
        if strategy == Strategy.AFTER_BACKOFF and self._backoff.is_backing_off(entry):
            return BACKOFF if self._move_to_backoff(entry, label) else UNSCHEDULABLE
        return ACTIVE if self._move_to_active(entry, label, from_backoff=False) else UNSCHEDULABLE

    def _move_to_active(self, entry: Entry, label: str, *, from_backoff: bool) -> bool:
        qp = entry.qp
        if not from_backoff:  # PreEnqueue already ran when it entered backoffQ
            self._pre_enqueue(entry)
        if qp.gated:
            if entry.where not in (ACTIVE, BACKOFF):
                self._pool_add(entry, label)
            return False
        for member in self._pods_of(entry):
            if member.qp.initial_attempt_timestamp is None:
                member.qp.initial_attempt_timestamp = self._clock()
                member.qp.initial_attempt_seq = self._seq
                self._seq += 1
        self._detach(entry)
        entry.where = ACTIVE
        self._active.push(entry.key, self._active_priority(qp), entry)
        self.incoming_counts[(ACTIVE, label)] += entry.size
        return True

    def _move_to_backoff(self, entry: Entry, label: str) -> bool:
        self._pre_enqueue(entry)
        if entry.qp.gated:
            self._pool_add(entry, label)
            return False
        self._detach(entry)
        entry.where = BACKOFF
        self._backoff.add(entry)
        self.incoming_counts[(BACKOFF, label)] += entry.size
        return True

    def _pool_add(self, entry: Entry, label: str) -> None:
        """Add to (or refresh in) the unschedulable pool."""
        qp = entry.qp
        if entry.where != UNSCHEDULABLE:
            self._detach(entry)
            entry.where = UNSCHEDULABLE
            self.incoming_counts[(UNSCHEDULABLE, label)] += entry.size
        times_out = (
            not qp.gated
            or self._flush_gated
            or self._hints.plugin_interested(qp.gating_plugin, events.EVENT_UNSCHEDULABLE_TIMEOUT)
        )
        self._pool.add_or_update(entry, times_out)

    def _detach(self, entry: Entry) -> None:
        """Take the Pod out of whichever structure holds it."""
        key = entry.key
        if entry.where == ACTIVE:
            self._active.remove(key)
        elif entry.where == BACKOFF:
            self._backoff.remove(key)
        elif entry.where == UNSCHEDULABLE:
            self._pool.remove(key)
        entry.where = ""
