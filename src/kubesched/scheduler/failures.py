"""Failure handling (upstream ``handleSchedulingFailure``): PostFilter (preemption) and
its nomination, the recorded reason, metrics, and requeue with backoff.

A nomination taken off a node (cleared, or moved to another node) frees what the Pod held
there for every Pod of lower or equal priority, as a deleted Pod would: upstream hears the
Pod's status patch back from its informer and moves those Pods with ``AssignedPodDelete``
(``updatePodInSchedulingQueue``: ``hasNominatedNodeNameChanged``).  kubesched's nominations
are in memory, so :meth:`Failures.nominate` keeps each such Pod as it was and
:meth:`Failures.release_nominations` raises the event once the failed Pod is requeued (v1.36
with GenericWorkload and SchedulerAsyncAPICalls: once the patch's update is heard, later,
:attr:`Failures.defer_releases`).

:class:`Failures` is a part of :class:`kubesched.scheduler.Scheduler`; the commit step
(:mod:`kubesched.scheduler.commit`), the parallel binder and live mode's coordinator fail a
Pod through it too."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence

from kubesched.api import objects as api
from kubesched.api.objects import Pod  # in ``Failures.__init__``, ``api`` is the client
from kubesched.framework import events
from kubesched.framework.interface import (
    ApiClient,
    Code,
    CycleState,
    FailureReporter,
    QueuedPodInfo,
    Status,
)
from kubesched.framework.outcomes import PostFilterResult
from kubesched.framework.runtime import Framework
from kubesched.metrics import SchedulerMetrics
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.types import (
    POD_REASON_SCHEDULER_ERROR,
    POD_REASON_UNSCHEDULABLE,
    PREEMPTION_PLUGIN,
    Diagnosis,
    truncate_message,
)

log = logging.getLogger("kubesched.scheduler")

PATCHES_TO_HEAR = 2
"""Without SchedulerAsyncAPICalls, how many later status patches of the same cycle's
failure handling a v1.36 PodGroup member's nomination patch waits for before its update is
heard (:meth:`Failures.hear_patched_before`): one is not enough (3 of 4 asks), two are
(seed 24362 case 72) and three (seed 24361 case 162, 5 of 6)."""


class Failures:
    """What failed attempts leave behind, and how a Pod is failed (see the module
    docstring); ``api`` reports the failure (condition and Event) when it can."""

    def __init__(
        self, queue: SchedulingQueue, metrics: SchedulerMetrics, api: ApiClient | None
    ) -> None:
        self.queue = queue
        self.metrics = metrics
        self.api = api
        self.reporter = api if isinstance(api, FailureReporter) else None
        """``api`` when it reports failures (checked once: a runtime Protocol check per
        failed attempt was 1 % of a preemption workload)."""
        self.attempts: Counter[str] = Counter()
        """Attempts by result: ``scheduled``, ``unschedulable``, ``error``."""
        self.last: dict[str, tuple[str, str]] = {}
        """Pod key to (reason, message) of its last failed attempt."""
        self.preemptions: dict[str, tuple[str, tuple[str, ...]]] = {}
        """Preemptor key to (node, victim keys) of its last successful preemption."""
        self.preempted_by: dict[str, str] = {}
        """Victim key to the key of the Pod that preempted it."""
        self.failing_again: Callable[[QueuedPodInfo], None] | None = None
        """Told of each Pod :meth:`fail` fails, before it is requeued
        (:meth:`kubesched.scheduler.commit.Commit.failed_again`)."""
        self.released: list[Pod] = []
        """Pods whose nomination :meth:`nominate` took off a node, each as it was (still
        nominated there), for :meth:`release_nominations`."""
        self.unheard: dict[str, tuple[QueuedPodInfo, list[tuple[str, bool]]]] = {}
        """Pod key to the Pod and its status patches not yet heard, in order, each the node
        it nominates and whether a scheduling cycle has begun since (:meth:`nominate` with
        ``heard_later``).  Upstream's failure handler puts a nomination on the nominator at
        once (``AddNominatedPod``: other Pods' Filters count it) but the Pod's own
        ``status.nominatedNodeName``, which ``findNodesThatFitPod`` tries first, only comes
        with the update event of its status patch (the API dispatcher's call, then the
        informer); a v1.36 PodGroup popped again soon after (from backoffQ when activeQ is
        empty) searches its members without it.  Without SchedulerAsyncAPICalls the
        failure handler patches at once and the update is heard during the next cycle
        (seed 19601 case 24), or sooner, while a later member of the same cycle is failed
        and patched (:meth:`hear_patched_before`).  With it (:attr:`async_api`) the API
        dispatcher's goroutine patches later, and the update comes while the scheduler is
        busy for milliseconds: during the first later cycle that is a :meth:`slow_step`
        (seed 22363 case 122: the group's next cycle), not during a single Pod's cycle that
        evicts nothing (well under a millisecond at upstream's pace: seed 23362 case 10,
        two such cycles between the group's, its members searched afresh in 8 of 11 asks).
        :meth:`hear_nominations` puts them on the Pods."""
        self.async_api = False
        """SchedulerAsyncAPICalls is on (set by the scheduler)."""
        self.slow_steps = 0
        """How many cycles so far took the informer long enough to deliver an update
        (:meth:`slow_step`)."""
        self._slow_steps_heard = 0
        """:attr:`slow_steps` at the last :meth:`hear_nominations`."""
        self.defer_releases = False
        """v1.36 with GenericWorkload and SchedulerAsyncAPICalls: :meth:`release_nominations`
        keeps the lost nominations in :attr:`unheard_releases` until the status patches'
        update events are heard (:meth:`hear_nominations`), as a member's nomination is.
        The API dispatcher sends the patch after the failure handler returns, and
        ``updatePodInSchedulingQueue`` raises ``AssignedPodDelete`` for the old nomination
        only with its update event (``hasNominatedNodeNameChanged``), so the Pods it moves
        stay pooled through the short cycles that follow (seed 24365 case 72: ``plain-1``
        loses its nomination with no victims; kube-oracle v1.36.3 heard the update during
        ``group-0``'s next cycle, 170 ms later, and ``plain-0``, pooled still, was not tried
        in between).  Other releases and gates: at once, as before."""
        self.unheard_releases: list[tuple[Pod, bool]] = []
        """The lost nominations :meth:`release_nominations` holds (:attr:`defer_releases`),
        each with whether a scheduling cycle has begun since, as :attr:`unheard`'s."""
        self._patched_after: dict[str, int] = {}
        """Pod key to how many other Pods' patches the failure handler has sent since its
        :attr:`unheard` patches (:meth:`hear_patched_before`)."""

    def slow_step(self) -> None:
        """The cycle running takes milliseconds at upstream's pace: a PodGroup cycle (each
        member searched, its Permit run, its own preemption tried) or a preemption that
        evicts victims (API calls, :meth:`record_victims`)."""
        self.slow_steps += 1

    def post_filter(
        self, fwk: Framework, state: CycleState, pod: api.Pod, diagnosis: Diagnosis
    ) -> PostFilterResult | None:
        """Run PostFilter (preemption); the result says how to change the nomination."""
        if not fwk.plugins["post_filter"]:
            return None
        result = None
        try:
            result, status = fwk.run_post_filter(state, pod, diagnosis)
        except Exception as e:  # PostFilter faults never lose the Pod
            log.exception("PostFilter fault for %s", pod.key)
            status = Status(Code.ERROR, (str(e),))
        if status.reasons:
            diagnosis.post_filter_msg = status.message()
        if any(p.name == PREEMPTION_PLUGIN for p in fwk.plugins["post_filter"]):
            victims = len(result.victims) if isinstance(result, PostFilterResult) else 0
            self.metrics.record_preemption(victims)
        return result if isinstance(result, PostFilterResult) else None

    def nominate(
        self,
        qp: QueuedPodInfo,
        result: PostFilterResult,
        *,
        clear_lower: bool = True,
        heard_later: bool = False,
    ) -> None:
        """Apply a PostFilter nomination (upstream ``AddNominatedPod`` + status patch); after a
        preemption, lower-priority Pods nominated to the same node lose their nomination
        (upstream ``prepareCandidate``; not for a PodGroup's members, ``clear_lower`` False:
        its preemption's candidate is the whole cluster, no node).  With ``heard_later`` a
        nomination to a node reaches the Pod itself only at :meth:`hear_nominations`
        (:attr:`unheard`)."""
        node, pod = result.nominated_node_name, qp.pod
        nominator = self.queue.nominator
        if node and clear_lower:
            for other in nominator.nominated_pods_for_node(node):
                if other.priority < pod.priority:
                    nominator.delete(other.key)
                    self.released.append(other)
                    queued = self.queue.get(other.key)
                    if queued is not None and queued.pod.nominated_node_name:
                        queued.pod = queued.pod.nominated_to("")
        self.record_victims(pod.key, node, result.victims)
        if pod.nominated_node_name != node:
            if pod.nominated_node_name:
                self.released.append(pod)
            if heard_later and node:
                self.unheard.setdefault(pod.key, (qp, []))[1].append((node, False))
                nominator.add(pod.nominated_to(node), node)
                return
            qp.pod = pod.nominated_to(node)
        nominator.add(qp.pod, node)

    def hear_nominations(self, *, all_of_them: bool) -> None:
        """Hear the :attr:`unheard` status patches, called before each pop: those sent
        before the cycle that just ended (with :attr:`async_api`: if it was a
        :meth:`slow_step`), or all of them (``all_of_them``) when no Pod can be popped at
        once; each puts its node on the Pod (its update event), whatever the nominator
        holds since.  The :attr:`unheard_releases` are heard by the same rule, each raising
        ``AssignedPodDelete`` (:meth:`nomination_freed`)."""
        slow = self.slow_steps != self._slow_steps_heard or not self.async_api
        self._slow_steps_heard = self.slow_steps
        if self.unheard_releases:
            releases, self.unheard_releases = self.unheard_releases, []
            for old, raced in releases:
                if (raced and slow) or all_of_them:
                    self.nomination_freed(old)
                else:
                    self.unheard_releases.append((old, True))
        for key, (qp, patches) in list(self.unheard.items()):
            kept: list[tuple[str, bool]] = []
            for node, raced in patches:
                if (raced and slow) or all_of_them:
                    if self.queue.get(key) is not None and not qp.pod.node_name:
                        qp.pod = qp.pod.nominated_to(node)
                else:
                    kept.append((node, True))  # heard during a later cycle
            if kept:
                self.unheard[key] = (qp, kept)
            else:
                del self.unheard[key]
                self._patched_after.pop(key, None)

    def hear_patched_before(self, key: str) -> None:
        """Without :attr:`async_api`, the Pod ``key`` is about to be failed and its status
        patched by the failure handler itself, after the earlier ones of the same cycle: the
        informer delivers an earlier patch's update once :data:`PATCHES_TO_HEAR` later
        patches have been sent (every :attr:`unheard` patch but ``key``'s own counts one
        more).  v1.36 seed 24361 case 162: a PodGroup's first member, nominated by the
        group's preemption with three members failed after it, is found nominated by the
        group's next cycle, popped at once from backoffQ, in 5 of 6 asks; seed 24362 case
        72 likewise with two failed after it; with one member failed after it
        (``test_without_the_gate_each_member_preempts_for_itself_and_the_group_waits``) it
        is not, in 3 of 4."""
        if self.async_api:
            return
        for other, (qp, patches) in list(self.unheard.items()):
            if other == key:
                continue
            sent = self._patched_after.get(other, 0) + 1
            if sent < PATCHES_TO_HEAR:
                self._patched_after[other] = sent
                continue
            if self.queue.get(other) is not None and not qp.pod.node_name:
                qp.pod = qp.pod.nominated_to(patches[-1][0])
            del self.unheard[other]
            self._patched_after.pop(other, None)

    def release_nominations(self) -> None:
        """Raise ``AssignedPodDelete`` for each Pod :meth:`nominate` took off a node since
        the last call, offered to the pooled Pods of lower or equal priority (upstream
        ``updatePodInSchedulingQueue`` on the status patch; see the module docstring).
        :meth:`fail` calls it once the failed Pod is back in the queue, as upstream's
        patch follows ``AddUnschedulablePodIfNotPresent``."""
        released, self.released = self.released, []
        if self.defer_releases:
            self.unheard_releases.extend((old, False) for old in released)
            return
        for old in released:
            self.nomination_freed(old)

    def nomination_freed(self, old: api.Pod) -> None:
        """``old`` (as it was, nominated to a node) holds that node no longer: the Pods of
        lower or equal priority that counted it as assigned there hear ``AssignedPodDelete``
        (upstream's ``getLEPriorityPreCheck``).  Also a nominated pending Pod's deletion
        (``Scheduler.on_pod_delete``, upstream ``deletePodFromSchedulingQueue``)."""
        self.queue.move_all_to_active_or_backoff(
            events.ASSIGNED_POD_DELETE, old, None, _at_most_priority(old.priority)
        )

    def record_victims(self, preemptor: str, node: str, victims: Sequence[api.Pod]) -> None:
        """Remember that ``preemptor`` (a Pod key) evicted ``victims`` for ``node`` ("": a
        PodGroup's preemption that nominated none of its members, v1.36)."""
        if victims:
            self.slow_step()
            keys = tuple(v.key for v in victims)
            self.preemptions[preemptor] = (node, keys)
            for k in keys:
                self.preempted_by[k] = preemptor

    def keep_nomination(self, qp: QueuedPodInfo, node: str) -> None:
        """The failed Pod ``qp`` stays nominated to ``node`` (its ``status.nominatedNodeName``
        left behind by NominatedNodeNameForExpectation, see ``Commit.nominate_held``); the
        queue's nominator hears it from the Pod's next update, as upstream's does."""
        if qp.pod.nominated_node_name != node:
            qp.pod = qp.pod.nominated_to(node)
        self.queue.nominator.add(qp.pod, node)

    def drop_nomination(self, qp: QueuedPodInfo, node: str) -> None:
        """The update of ``qp``'s Pod that clears its ``status.nominatedNodeName`` (``node``)
        is heard: the nominator lets it go, and Pods of lower or equal priority hear
        ``AssignedPodDelete`` (upstream ``updatePodInSchedulingQueue``)."""
        old = qp.pod if qp.pod.nominated_node_name == node else qp.pod.nominated_to(node)
        self.queue.nominator.delete(old.key)
        if qp.pod.nominated_node_name:
            qp.pod = qp.pod.nominated_to("")
        self.nomination_freed(old)

    def fail(
        self,
        fwk: Framework,
        qp: QueuedPodInfo,
        why: Diagnosis | Status,
        cycle: int,
        start: float,
    ) -> None:
        """Upstream ``handleSchedulingFailure``: record, then requeue with backoff."""
        if isinstance(why, Diagnosis):
            reason, message = POD_REASON_UNSCHEDULABLE, why.message()
            qp.unschedulable_plugins = set(why.unschedulable_plugins)
            result = "unschedulable"
        elif why.is_rejected():
            reason, message = POD_REASON_UNSCHEDULABLE, why.message()
            qp.unschedulable_plugins = {why.plugin} if why.plugin else set()
            result = "unschedulable"
        else:
            reason, message = POD_REASON_SCHEDULER_ERROR, why.message()
            qp.unschedulable_plugins = set()
            result = "error"
        self.record(result, fwk, start)
        qp.message = message
        self.last[qp.pod.key] = (reason, message)
        if self.failing_again is not None:
            self.failing_again(qp)
        self.queue.add_unschedulable_if_not_present(qp, cycle)
        self.release_nominations()
        if self.reporter is not None:
            self.reporter.pod_scheduling_failed(qp.pod, reason, truncate_message(message))

    def record(self, result: str, fwk: Framework, start: float) -> None:
        """Count an attempt's ``result`` and observe its duration (from ``start``,
        ``time.perf_counter()``)."""
        self.attempts[result] += 1
        self.metrics.record_attempt(result, fwk.profile_name, time.perf_counter() - start)

    def clear(self, key: str) -> None:
        """The Pod ``key`` was bound (or is gone): its last failure no longer stands."""
        self.last.pop(key, None)


def _at_most_priority(priority: int) -> Callable[[api.Pod], bool]:
    """Upstream ``getLEPriorityPreCheck``: Pods of priority at most ``priority``."""
    return lambda pod: pod.priority <= priority
