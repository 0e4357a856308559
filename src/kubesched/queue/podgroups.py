"""A PodGroup as one queue entity (upstream v1.37.2 ``backend/queue``, GenericWorkload).

v1.37 queues the members of a PodGroup together (``QueuedPodGroupInfo``): the group is one
entry of activeQ, backoffQ or the unschedulable pool, popped whole for its PodGroup cycle.
Here that entry is an :class:`~kubesched.queue.backoff.Entry` whose ``members`` hold the
members' own records (``where`` :data:`GROUPED`); its ``qp`` stands for the group in the
heaps: the PodGroup's priority (``PodGroupPriority``: ``spec.priority``, 0 without) and the
group's own timestamp, so QueueSort orders it among Pods as upstream's ``Less`` does.

- **joining** (``addPodGroupMember``): a member arriving (added, or failed in a cycle)
  joins its group's queued entity, which is requeued where it was (activeQ again, with
  PreEnqueue; backoffQ or activeQ by its backoff; the pool stays the pool); while the
  group is in flight (the entity popped last) the member waits aside (:data:`PENDING`,
  ``pendingPodGroupPods``); otherwise it starts a new entity with its own timestamp, to
  activeQ.
- **PreEnqueue** runs for every member; one gated member gates the entity.
- **events** are judged per entity (``isEntityWorthRequeuing``): the strongest strategy
  any member's rejectors give.
- **backoff** is the group's own: its ``UnschedulableCount`` / ``ConsecutiveErrorsCount``,
  capped at the maximum backoff times the square root of the members queued
  (``calculateBackoffDuration``).  The entity names no rejector plugin, so it backs off in
  the error heap and is never popped before its backoff ends (KEP-5142 pops only the
  other heap).
- **after the cycle** (:meth:`GroupQueueCore.add_attempted_pod_group`,
  ``AddAttemptedPodGroupIfNeeded``): the members waiting aside make the new entity with the
  group's queueing record; a feasible cycle resets the counts and goes to activeQ at once,
  keeping the group's timestamp when one of the cycle's members failed (so it may preempt
  for them before equals that came later); an unschedulable one counts one more
  ``UnschedulableCount``, an error one more ``ConsecutiveErrorsCount``, and goes to backoffQ
  while backing off, else to activeQ.  After a cycle the entity never enters the pool
  unless PreEnqueue gates it.

- **the holding area** (``incompletePodGroupPods``): a member whose PodGroup object the
  queue has not observed is held outside the queues (:data:`INCOMPLETE`): no PreEnqueue, no
  attempt, not in the pool, its own record (timestamp of its arrival) kept.  The object's
  add (:meth:`GroupQueueCore.pod_group_added`, upstream ``AddPodGroup``, before the event's
  ``MoveAllToActiveOrBackoffQueue``) sends every held member through ``addPodGroupMember``
  again: the first starts the entity (its timestamp, activeQ with ``UnscheduledPodAdd``,
  PreEnqueue now running), the others join it.  The object's delete
  (:meth:`GroupQueueCore.pod_group_deleted`, ``DeletePodGroup``) takes a queued entity out
  of its queue and holds its members again (an in-flight group's pending members too; the
  members of the cycle follow when their failure returns them).  A member returned by a
  failed cycle or left waiting aside after its PodGroup went is held the same way.

``pending_pods`` counts the held members under ``incomplete`` and the members waiting aside
under ``pending`` (v1.37's two stores, reported even empty).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.api import objects as api
from kubesched.framework.interface import QueuedPodInfo
from kubesched.queue import events
from kubesched.queue.backoff import Entry
from kubesched.queue.core import ACTIVE, BACKOFF, IN_FLIGHT, UNSCHEDULABLE, QueueCore
from kubesched.queue.hints import Strategy
from kubesched.queue.unschedulable import run_pre_enqueue

GROUPED = "grouped"
"""A member's record inside its group's queued entity."""
PENDING = "pending"
"""A member waiting for its in-flight group's requeue (``pendingPodGroupPods``)."""
INCOMPLETE = "incomplete"
"""A member held until its PodGroup object is observed (``incompletePodGroupPods``)."""

EntityOf = Callable[[api.Pod], "tuple[str, int] | None"]
"""A Pod's PodGroup entity: ``(namespace/name, the PodGroup's priority)``, or None when the
Pod is queued alone (no member, not v1.37, or its PodGroup not observed)."""
MemberOf = Callable[[api.Pod], "str | None"]
"""A PodGroup member's group ``namespace/name`` whether or not its object is observed
(upstream ``isPodGroupMember``), None for a Pod that is no member."""

_WHERE_STRATEGY = {
    ACTIVE: Strategy.IMMEDIATELY,
    BACKOFF: Strategy.AFTER_BACKOFF,
    UNSCHEDULABLE: Strategy.SKIP,
}
"""``deleteFromAnyQueue``'s strategy: the queue an entity is requeued to after a change."""
_FAILURE = events.SCHEDULE_ATTEMPT_FAILURE
_UNSCHEDULED_ADD = events.event_label(events.EVENT_UNSCHEDULED_POD_ADD)


class GroupQueueCore(QueueCore):
    """:class:`QueueCore` with PodGroup entities (see the module docstring); ``entity_of``
    None: every Pod is queued alone (before v1.37, or GenericWorkload off)."""

    def __init__(
        self,
        *,
        entity_of: EntityOf | None = None,
        member_of: MemberOf | None = None,
        group_stores: bool = False,
        **options: Any,
    ) -> None:
        """``member_of`` (with ``entity_of``): members whose PodGroup is not observed are
        held (:data:`INCOMPLETE`); None: such a member is queued alone.  ``group_stores``
        (v1.37): ``pending_pods`` reports ``incomplete`` and ``pending``."""
        super().__init__(**options)
        self._entity_of = entity_of
        self._member_of = member_of if entity_of is not None else None
        self._group_stores = group_stores
        self._incomplete: dict[str, dict[str, Entry]] = {}
        """Group key to its members held until its object is observed
        (``incompletePodGroupPods``)."""
        self._groups: dict[str, Entry] = {}
        """Group key to its entity, queued or in flight."""
        self._popped: dict[str, list[QueuedPodInfo]] = {}
        """Group key to the members popped with its entity, until the group is requeued."""
        self._pending: dict[str, dict[str, Entry]] = {}
        """Group key to the members waiting for its requeue (``pendingPodGroupPods``)."""
        self._last_popped = ""
        """The group whose entity was popped last and not requeued yet (``lastPoppedEntity``)."""

    @property
    def retries_after_backoff_alone(self) -> bool:
        """Also v1.37's PodGroup entities: a group whose cycle failed goes back to backoffQ
        and is retried after its backoff, for ever (``AddAttemptedPodGroupIfNeeded``)."""
        return self._entity_of is not None or super().retries_after_backoff_alone

    def _group_of(self, pod: api.Pod) -> tuple[str, int] | None:
        return None if self._entity_of is None else self._entity_of(pod)

    def _is_member(self, pod: api.Pod) -> bool:
        """Upstream ``isPodGroupMember``: queued with its group (or held), never alone."""
        if self._member_of is not None:
            return self._member_of(pod) is not None
        return self._group_of(pod) is not None

    def _hold(self, entry: Entry) -> str:
        """Hold a member whose PodGroup is not observed (``incompletePodGroupPods.add``)."""
        assert self._member_of is not None
        key = self._member_of(entry.qp.pod)
        assert key is not None
        entry.where, entry.group = INCOMPLETE, key
        self._incomplete.setdefault(key, {})[entry.key] = entry
        return INCOMPLETE

    def pod_group_added(self, key: str) -> None:
        """The PodGroup ``key`` is observed (upstream ``AddPodGroup``): its held members go
        through ``addPodGroupMember`` again, in the order they were held.  Call it after
        the object reached ``entity_of`` and before the event's move of the pool."""
        for entry in list(self._incomplete.pop(key, {}).values()):
            entry.where, entry.group = "", ""
            self._add_member(entry, _UNSCHEDULED_ADD)  # held again while still unobserved

    def held_gate(self, pod_key: str) -> str:
        """For a member held until its PodGroup is observed: the message of the PreEnqueue
        plugin that would keep it out of activeQ now (run on a copy of its record, as
        ``explain`` runs PreEnqueue: the holding area itself runs none), "" when none
        would or the Pod is not held."""
        entry = self._entries.get(pod_key)
        if entry is None or entry.where != INCOMPLETE:
            return ""
        probe = QueuedPodInfo(pod=entry.qp.pod, timestamp=entry.qp.timestamp)
        run_pre_enqueue(self._pre_enqueue_plugins, probe)
        return probe.message if probe.gated else ""

    def pod_group_deleted(self, key: str) -> None:
        """The PodGroup ``key`` is gone (upstream ``DeletePodGroup``): its queued entity
        leaves its queue and every member is held again; while the group is in flight its
        members waiting aside are held (the cycle's own follow on their failure)."""
        if self._member_of is None:
            return
        group = self._groups.get(key)
        if group is not None and group.where in _WHERE_STRATEGY:
            assert group.members is not None
            self._detach(group)
            del self._groups[key]
            for entry in group.members.values():
                entry.where, entry.group = "", ""
                self._hold(entry)
            return
        if self._last_popped == key:
            for entry in self._pending.pop(key, {}).values():
                entry.where, entry.group = "", ""
                self._hold(entry)

    def _new_group(self, key: str, priority: int, first: Entry) -> Entry:
        """An empty entity for ``key`` with ``first``'s timestamp
        (``newQueuedPodGroupInfoFromRootLookup``); a composite tree's root key carries its
        kind before the namespace (``composite:``)."""
        namespace, name = key.rpartition(":")[2].split("/", 1)
        stand_in = api.Pod(
            name=f"podgroup:{name}", namespace=namespace, uid=f"podgroup:{key}", priority=priority
        )
        qp = QueuedPodInfo(pod=stand_in, timestamp=first.qp.timestamp, seq=first.qp.seq)
        group = Entry(qp, stand_in.uid, members={}, group=key)
        self._groups[key] = group
        return group

    def _join(self, group: Entry, entry: Entry, priority: int) -> None:
        assert group.members is not None
        entry.where, entry.group = GROUPED, group.group
        group.members[entry.key] = entry
        if group.qp.pod.priority != priority:  # the PodGroup's priority as now observed
            group.qp.pod = api.Pod(
                name=group.qp.pod.name,
                namespace=group.qp.pod.namespace,
                uid=group.qp.pod.uid,
                priority=priority,
            )

    def _add_member(self, entry: Entry, label: str) -> str:
        """Upstream ``addPodGroupMember`` for a member's record ``entry`` (out of every
        queue); where the member went: its entity's queue, or :data:`PENDING`."""
        ref = self._group_of(entry.qp.pod)
        if ref is None:  # its PodGroup is not observed: held (incompletePodGroupPods)
            return self._hold(entry)
        key, priority = ref
        group = self._groups.get(key)
        if group is not None and group.where in _WHERE_STRATEGY:
            strategy = _WHERE_STRATEGY[group.where]
            self._detach(group)
            self._join(group, entry, priority)
            return self._requeue(group, strategy, label)
        if self._last_popped == key:
            entry.where, entry.group = PENDING, key
            self._pending.setdefault(key, {})[entry.key] = entry
            return PENDING
        group = self._new_group(key, priority, entry)
        self._join(group, entry, priority)
        return ACTIVE if self._move_to_active(group, label, from_backoff=False) else UNSCHEDULABLE

    def _requeue(self, entry: Entry, strategy: Strategy, label: str) -> str:
        """:meth:`QueueCore._requeue`, a Pod queued alone whose PodGroup is now observed
        joining its entity instead (:meth:`_regroup`)."""
        if self._regroup(entry, label):
            return GROUPED
        return super()._requeue(entry, strategy, label)

    def _regroup(self, entry: Entry, label: str) -> bool:
        """A Pod queued alone whose PodGroup is now observed joins its entity instead of
        being requeued alone (its group's object arrived: ``AddPodGroup``)."""
        if entry.members is not None or entry.group or self._group_of(entry.qp.pod) is None:
            return False
        self._detach(entry)
        self._add_member(entry, label)
        return True

    def _pop_group(self, group: Entry) -> QueuedPodInfo:
        """The entity popped: every member in flight with one more attempt each (and one
        for the group), the first of them returned (:meth:`group_members` gives them all)."""
        assert group.members is not None
        key = group.group
        group.qp.attempts += 1
        group.where = IN_FLIGHT
        members = sorted(group.members.values(), key=lambda m: m.qp.seq)
        group.members = {}
        popped = []
        for m in members:
            m.qp.attempts += 1
            m.backoff_expiration = None
            m.where = IN_FLIGHT
            self._in_flight.start(m.uid, m.key)
            m.qp.unschedulable_plugins.clear()
            m.qp.pending_plugins.clear()
            popped.append(m.qp)
        self._popped[key] = popped
        self._last_popped = key
        return popped[0]

    def group_members(self, qp: QueuedPodInfo) -> list[QueuedPodInfo] | None:
        """Every member popped with ``qp``'s PodGroup entity (``qp`` among them), or None
        when ``qp`` was popped alone."""
        entry = self._entries.get(qp.pod.key)
        if entry is None or not entry.group:
            return None
        popped = self._popped.get(entry.group)
        return popped if popped is not None and qp in popped else None

    def add_attempted_pod_group(self, key: str, outcome: str) -> str | None:
        """Upstream ``AddAttemptedPodGroupIfNeeded`` after the cycle of group ``key``:
        ``outcome`` is the cycle's status (``success``, ``rejected`` or ``error``).  Returns
        where the group went, None when no member was left to requeue."""
        if self._last_popped == key:
            self._last_popped = ""
        group = self._groups.get(key)
        popped = {qp.pod.key for qp in self._popped.pop(key, [])}
        pending = self._pending.pop(key, {})
        if group is None or group.where != IN_FLIGHT:  # not popped as an entity: none to reuse
            for entry in pending.values():
                entry.where, entry.group = "", ""
                self._requeue_alone_or_hold(entry)
            return None
        if not pending:
            del self._groups[key]
            return None
        failed_here = any(k in popped for k in pending)
        ref = self._group_of(next(iter(pending.values())).qp.pod)
        if ref is None:  # the PodGroup is gone: its members are held (or queued alone)
            del self._groups[key]
            for entry in pending.values():
                entry.where, entry.group = "", ""
                self._requeue_alone_or_hold(entry)
            return None
        group.where = ""
        for entry in pending.values():
            self._join(group, entry, ref[1])
        at_once = outcome == "success"
        if at_once:
            group.unschedulable_count = group.consecutive_errors = 0
        elif outcome == "rejected":
            group.unschedulable_count += 1
            group.consecutive_errors = 0
            group.backoff_expiration = None
        else:
            group.consecutive_errors += 1
            group.backoff_expiration = None
        if not (at_once and failed_here):
            group.qp.timestamp = self._clock()
            group.qp.seq = self._seq
            self._seq += 1
        if not at_once and self._backoff.is_backing_off(group):
            return BACKOFF if self._move_to_backoff(group, _FAILURE) else UNSCHEDULABLE
        return (
            ACTIVE if self._move_to_active(group, _FAILURE, from_backoff=False) else UNSCHEDULABLE
        )

    def _requeue_alone_or_hold(self, entry: Entry) -> None:
        """A member out of its group whose PodGroup is not observed: held, or (without
        ``member_of``) requeued alone after its backoff."""
        if self._member_of is not None and self._group_of(entry.qp.pod) is None:
            self._hold(entry)
        else:
            self._requeue(entry, Strategy.AFTER_BACKOFF, _FAILURE)

    def _member_left(self, entry: Entry) -> None:
        """A member's record leaves its entity or the pending members (deleted); an entity
        left with members is requeued where it was, an empty one is dropped
        (``deletePodGroupMember``)."""
        key = entry.group
        if entry.where == PENDING:
            self._pending.get(key, {}).pop(entry.key, None)
            return
        if entry.where == INCOMPLETE:
            held = self._incomplete.get(key, {})
            held.pop(entry.key, None)
            if not held:
                self._incomplete.pop(key, None)
            return
        group = self._groups.get(key)
        if group is None or group.members is None:
            return
        group.members.pop(entry.key, None)
        if group.where not in _WHERE_STRATEGY:
            return
        strategy = _WHERE_STRATEGY[group.where]
        self._detach(group)
        if not group.members:
            del self._groups[key]
            return
        self._requeue(group, strategy, _UNSCHEDULED_ADD)

    def _entity(self, entry: Entry) -> Entry:
        """The queued record ``entry`` moves with: its group's entity for a member inside
        one, else itself."""
        if entry.where == GROUPED:
            return self._groups[entry.group]
        return entry

    def _member_store_counts(self) -> dict[str, int]:
        """``pending_pods``' two v1.37 stores: members held (``incomplete``) and members
        waiting aside for their group's requeue (``pending``); empty before v1.37."""
        if not self._group_stores:
            return {}
        return {
            INCOMPLETE: sum(len(held) for held in self._incomplete.values()),
            PENDING: sum(len(waiting) for waiting in self._pending.values()),
        }

    def _group_counts(self) -> dict[str, int]:
        """Pods beyond the first of each queued entity, per queue (``gated`` apart)."""
        extra = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, "gated": 0}
        for group in self._groups.values():
            where = group.where
            if where == UNSCHEDULABLE and group.qp.gated:
                where = "gated"
            if where in extra:
                extra[where] += group.size - 1
        return extra
