"""The commit step: what follows the choice of a node, each undo written beside its twin.

Upstream ``schedule_one.go`` after ``schedulePod``: assume the Pod on its node in the cache,
Reserve, Permit, then either hold it at Permit (a gang member waits for its siblings) or
start its binding cycle (PreBind, Bind, PostBind) through ``submit_binding`` (run at once,
later in virtual time, or on a thread).  Every step that can fail undoes the steps before
it, in reverse order:

==============  ================================================================
step            undo
==============  ================================================================
assume          forget, and tell the queue the Pod's resources are free again
Reserve         Unreserve
Permit (hold)   a rejected held Pod is undone like a failed bind
binding cycle   Unreserve, forget, record the failure and requeue with backoff
==============  ================================================================

The serial scheduler commits its own choices through :class:`Commit`; so do the parallel
shards (whose bind is a proposal), the parallel binder (which commits a shard's proposal
on the authoritative cache) and live mode's shard coordinator.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework import events
from kubesched.framework.contract import PreBindTiming
from kubesched.framework.interface import (
    PODS_TO_ACTIVATE_KEY,
    Code,
    CycleState,
    QueuedPodInfo,
    Status,
)
from kubesched.framework.runtime import Framework
from kubesched.metrics import SchedulerMetrics
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.extenders import Extenders
from kubesched.scheduler.failures import Failures
from kubesched.scheduler.types import Diagnosis, rejected_on_node
from kubesched.scheduler.waiting import Waiting
from kubesched.state.cache import ClusterState

DirectBind = Callable[[Framework, QueuedPodInfo, api.Pod], bool]
"""``(profile, queue info, assumed Pod) -> bound``: a bind that replaces the whole binding
cycle when it returns True (see :attr:`Commit.direct_bind`)."""
BindLater = Callable[[api.Pod, Callable[[Exception | None], None]], None]
"""``(assumed Pod, answered)``: start the Pod's bind and return at once; ``answered(error)``
(None: bound) is called later on the thread that owns the scheduler (see
:attr:`Commit.bind_later`)."""


@dataclass(frozen=True, slots=True)
class Submission:
    """The binding cycle :attr:`Commit.submit_binding` is being handed: its profile, cycle
    state and assumed Pod (on its node)."""

    fwk: Framework
    state: CycleState
    pod: api.Pod

    def pre_bind_timing(self) -> PreBindTiming:
        """How its PreBind will go (:meth:`Framework.pre_bind_timing`), without running it."""
        return self.fwk.pre_bind_timing(self.state, self.pod, self.pod.node_name)


SYNC_PATCH_CYCLES = 2
"""Without SchedulerAsyncAPICalls, how many scheduling cycles begin before the update events
of Permit waiters rejected at once are heard, when there are several (one alone: one cycle;
:meth:`Commit.renominate_due`).  Each failure handler patches the API server from its own
binding goroutine: kube-oracle v1.35.4's log at seed 24354 case 140 shows three members
timed out together, their patches begun over 2.2 ms, and the second moved Pod's Filter
(4.5 ms after the first timeout) still finding their node free; seed 21352 case 134 (one
member) heard it before the second.  At v1.35 two waiters rejected at once are heard after
one cycle as one alone is (:meth:`Commit.heard_after`; seed 24356 case 33: the second moved
Pod found both nominations, upstream 10 of 10 later asks; seed 22352 case 14, 4 of 4)."""

ASYNC_PATCH_CYCLES = 6
"""With SchedulerAsyncAPICalls, how many scheduling cycles a failed Permit waiter's status
patch call (the API dispatcher's, against the API server) and the update event it sets off
take (:meth:`Commit.renominate_due`).  Upstream's vary with the machine's load: kube-oracle
v1.35.4's log heard the update after the sixth cycle at seed 22354 case 6 (5.8 ms), before
the first at seed 22352 case 69 (2.5 ms); a waiter retried before it is heard loses its
nomination (:meth:`Commit.failed_again`).  At v1.35 a waiter rejected alone takes
:data:`ASYNC_LONE_PATCH_CYCLES` instead (:meth:`Commit.heard_after`)."""

ASYNC_LONE_PATCH_CYCLES = 64
"""At v1.35 with SchedulerAsyncAPICalls, how many scheduling cycles the update of a Permit
waiter rejected alone (no other waiter rejected with it) takes, unless the queue goes idle
first (:meth:`Commit.renominate_due`): in practice once the Pods its failure moved have
been tried.  Upstream retries them in a burst of quick cycles (failures and binds without
waits, 0.1-0.6 ms each in kube-oracle v1.35.4's logs) while the patch makes its round trip
through the dispatcher's goroutine, the fake API server and the informer (2.5 to 8 ms): at
seed 23351 case 202 all twelve cycles of the burst ran before the update (7.7 ms), as
upstream answered in 6 of 6 asks, where six cycles (:data:`ASYNC_PATCH_CYCLES`) heard it
between them in none.  The count is a bound, not a measurement: 12 or 16 broke seed 22354
case 110 (upstream 0 of 6 asks; 20 to 64 do not), and with 64 the answers at 2,478
schedules with the gate on (seeds 21351-24355) are those of hearing it only when idle
(h/v135e in ``benchmarks/RESULTS.md``)."""


@dataclass
class Renomination:
    """A failed Permit waiter whose ``status.nominatedNodeName`` (``node``) the queue has not
    heard back yet (:attr:`Commit.renominate`)."""

    qp: QueuedPodInfo
    node: str
    cycles: int = 0
    """Scheduling cycles begun since it failed."""
    together: int = 1
    """Permit waiters rejected at once with it (itself included)."""
    failed_again: bool = False
    """With SchedulerAsyncAPICalls: it failed another scheduling cycle before the update was
    heard, so that failure's patch call cleared the field (:meth:`Commit.failed_again`)."""


def resume(spent: float) -> float:
    """A ``start`` for an attempt that resumes now after ``spent`` wall seconds of its own
    work: ``time.perf_counter() - start`` then counts that work and what follows, not the
    pause between (other Pods' cycles, the simulator's virtual latencies and ``--pace``
    sleeps, the queue of the binding thread)."""
    return time.perf_counter() - spent


class Commit:
    """The commit step of one scheduler (see the module docstring).

    ``start`` arguments are ``time.perf_counter()`` at the attempt's start (attempt
    durations count from there), ``cycle`` the queue's scheduling cycle the attempt ran in.
    """

    def __init__(
        self,
        *,
        cluster: ClusterState,
        queue: SchedulingQueue,
        waiting: Waiting,
        failures: Failures,
        metrics: SchedulerMetrics,
        clock: Callable[[], float],
        extenders: Extenders | None,
        submit_binding: Callable[[Callable[[], None]], None],
    ) -> None:
        self.cluster = cluster
        self.queue = queue
        self.waiting = waiting
        self.failures = failures
        self.metrics = metrics
        self.clock = clock
        self.extenders = extenders
        self.submit_binding = submit_binding
        """Runs a binding cycle: at once, later in virtual time, or on a thread."""
        self.submitting: Submission | None = None
        """The binding cycle ``submit_binding`` is being handed, while it runs (the simulator
        answers one whose PreBind or binding the API server refuses at once by it)."""
        self.in_flight = 0
        """Pods past Permit (held there or binding) whose binding cycle has not ended."""
        self.nominate_held = False
        """NominatedNodeNameForExpectation (v1.35+, on by default): the binding cycle of a
        Pod that will wait at Permit first patches ``status.nominatedNodeName`` to its node,
        and when the wait fails (rejected, timed out) nothing clears it (the failure's patch
        compares with the scheduler's copy of the Pod, the assumed one, which never had it),
        so the Pod stays nominated to that node, its resources counted there for Pods of no
        higher priority.  With SchedulerAsyncAPICalls too: the patch call carries that copy's
        status and is synced with the informer's only when an update of the Pod arrives
        before the call runs (v1.35.4 at seed 22352 case 69).  The queue hears the field from the
        Pod's update event, which arrives while the first Pod the failure moved straight to
        activeQ is tried (with SchedulerAsyncAPICalls: once activeQ and backoffQ are empty, the
        patch call runs on the dispatcher's goroutine): :attr:`renominate` holds it until
        :meth:`renominate_due`."""
        self.async_api = False
        """SchedulerAsyncAPICalls: status patches go through upstream's API dispatcher, which
        merges a Pod's new call into the one still queued or in flight for it
        (:meth:`failed_again`)."""
        self.v135_patch_timing = False
        """v1.35 (set by the scheduler): the failed waiters' updates are heard as measured
        against kube-oracle v1.35.4 (:meth:`heard_after`); later releases keep the counts
        before session 27's measurements, not measured otherwise."""
        self.renominate: list[Renomination] = []
        """Failed Permit waiters whose nomination comes back with their next update event."""
        self.direct_bind: DirectBind | None = None
        """When set and it returns True for a Pod, it has bound the Pod itself and only the
        cache's and queue's bookkeeping of the binding cycle follows (a parallel shard
        proposes at once when the profile's binding cycle is only DefaultBinder's bind)."""
        self.bind_later: BindLater | None = None
        """When set, the binding cycle of a Pod for which it is only DefaultBinder's bind
        (:meth:`binds_only`) does not go to ``submit_binding``: the bind is handed to
        ``bind_later`` and the cycle ends when it answers, on the scheduler's thread (live
        mode's asynchronous binds, as upstream's API dispatcher: no thread per bind)."""
        self._binds_only: dict[str, bool] = {}
        self.activate: Callable[[list[api.Pod]], None] = queue.activate
        failures.failing_again = self.failed_again
        """Upstream's ``PodsToActivate`` after Permit: the queue's ``activate`` (a parallel
        shard's also tells its coordinator, who holds the Pods the shard does not)."""

    # ------------------------------------------------------------------ assume / forget
    def assume(self, pod: api.Pod, node: str) -> api.Pod:
        """Assume ``pod`` on ``node`` in the cache (its nomination ends); the assumed copy."""
        assumed = pod.bound_to(node)
        self.cluster.assume_pod(assumed, node)
        self.queue.nominator.delete(pod.key)
        return assumed

    def forget(self, assumed: api.Pod, status: Status) -> None:
        """Undo of :meth:`assume` (when the Pod is still assumed): its resources are free
        again, so the queue hears an assigned Pod's deletion (upstream); after a rejection
        (``status``) the Pod itself is not moved by it."""
        if self.cluster.is_assumed(assumed.key):
            self.cluster.forget_pod(assumed)
        if status.is_rejected():
            self.queue.move_all_to_active_or_backoff(
                events.ASSIGNED_POD_DELETE, assumed, None, lambda p: p.key != assumed.key
            )
        else:
            self.queue.move_all_to_active_or_backoff(events.ASSIGNED_POD_DELETE, assumed, None)

    # ------------------------------------------------------------------ Reserve, Permit
    def commit(
        self,
        fwk: Framework,
        state: CycleState,
        qp: QueuedPodInfo,
        assumed: api.Pod,
        start: float,
        cycle: int,
        committing: Callable[[], None] | None = None,
    ) -> Status | None:
        """Reserve and Permit ``assumed`` (from :meth:`assume`), then hold it at Permit or
        start its binding cycle; None then.  A rejection or error is undone (Unreserve,
        forget, the Pod failed) and returned.  ``committing`` runs once Permit passed,
        before the Pod is held or bound."""
        node = assumed.node_name
        waits: dict[str, float] = {}
        try:
            status = fwk.run_reserve(state, assumed, node)
            if status.is_success():
                status, waits = fwk.run_permit_plugins(state, assumed, node)
        except Exception as e:
            status = Status(Code.ERROR, (f"{type(e).__name__}: {e}",))
        if not status.is_success() and status.code != Code.WAIT:
            self.undo(fwk, state, qp, assumed, status, rejected_on_node(status), cycle, start)
            return status
        if committing is not None:
            committing()
        pods = state.pop(PODS_TO_ACTIVATE_KEY, None)  # upstream PodsToActivate
        if pods:
            self.activate(list(pods.values()))
        self.in_flight += 1
        if status.code == Code.WAIT:
            spent = time.perf_counter() - start  # the wait at Permit is not the attempt's work
            self.waiting.hold(assumed, waits, fwk, state, qp, spent, cycle)
            return None
        self.submit(fwk, state, qp, assumed, start, cycle)
        return None

    def undo(
        self,
        fwk: Framework,
        state: CycleState,
        qp: QueuedPodInfo,
        assumed: api.Pod,
        status: Status,
        why: Diagnosis | Status,
        cycle: int,
        start: float,
    ) -> None:
        """Undo a commit Reserve was run for (``status`` ended it): Unreserve, forget, and
        fail the Pod for ``why`` (requeued with backoff)."""
        fwk.run_unreserve(state, assumed, assumed.node_name)
        self.forget(assumed, status)
        self.failures.fail(fwk, qp, why, cycle, start)

    # ------------------------------------------------------------------ held at Permit
    def drain_waiting(self) -> None:
        """Start the binding cycle of held Pods that were allowed; undo rejected ones
        (upstream ``WaitOnPermit`` returning in the binding goroutine)."""
        rejected: list[Renomination] = []
        while (decided := self.waiting.next_decided()) is not None:
            wp, held = decided
            assert wp.status is not None
            start = resume(held.spent)
            if wp.status.is_success():
                self.submit(held.fwk, held.state, held.qp, wp.pod, start, held.cycle)
                continue
            self.in_flight -= 1
            why = rejected_on_node(wp.status)
            self.undo(held.fwk, held.state, held.qp, wp.pod, wp.status, why, held.cycle, start)
            if self.nominate_held:
                rejected.append(Renomination(held.qp, wp.pod.node_name))
        for r in rejected:
            r.together = len(rejected)
        self.renominate.extend(rejected)

    def renominate_due(self, *, all_of_them: bool) -> None:
        """Nominate the failed Permit waiters again (:attr:`nominate_held`): upstream's
        failure handler drops the nomination, patches the Pod's status (the patch returns
        before the Pods the freed room may help are moved) and then moves them; the Pod's
        update event (carrying the field the failure did not clear) brings the nomination
        back a fraction of a millisecond later.  The first moved Pod that went straight to
        activeQ is popped at once and its Filter runs before that event; the next Pod's
        cycle begins after it (kube-oracle v1.35.4's log at seed 21352 case 134: the update
        event of the timed-out member is heard during the first moved Pod's cycle, before
        the second's).  So called before each pop, it nominates again the waiters that
        failed before the previous cycle began, or all of them (``all_of_them``) when
        activeQ is empty: those still backing off wait for the backoff flush, by which time
        the informer has delivered the update.

        With SchedulerAsyncAPICalls (:attr:`async_api`) the patch call runs on the API
        dispatcher's goroutine and takes milliseconds against the API server, longer than
        a cycle: the nomination comes back after :data:`ASYNC_PATCH_CYCLES` cycles
        (:meth:`heard_after`), or once
        activeQ and backoffQ are empty (``all_of_them``: ``Scheduler._idle_for_renomination``;
        a pop takes from backoffQ when activeQ is empty).  A waiter that failed again before
        that (:meth:`failed_again`) loses it instead, its Pods of lower or equal priority
        moved as by a deleted Pod.  Without the gate, waiters rejected at once
        (:attr:`Renomination.together`) are heard after :data:`SYNC_PATCH_CYCLES` cycles.

        A waiter tried again and assumed by the time its update is heard (held at Permit
        again) takes nothing from it: upstream's ``updatePodInSchedulingQueue`` returns for
        an assumed Pod (``IsAssumedPod``), so neither the nomination nor the move follows
        (v1.35 seed 24354 case 122: kept, ``group-1-2`` held node-3 by its first round's
        nomination while waiting on node-1 in its second)."""
        keep: list[Renomination] = []
        for r in self.renominate:
            r.cycles += 1  # one is about to begin
            heard_after = self.heard_after(r)
            if not all_of_them and r.cycles <= heard_after:
                keep.append(r)
                continue
            if self.cluster.is_assumed(r.qp.pod.key):
                continue  # tried again and assumed (at Permit): the update is dropped
            queued = self.queue.get(r.qp.pod.key)
            if r.failed_again:
                self.failures.drop_nomination(queued or r.qp, r.node)
            elif queued is not None:
                self.failures.keep_nomination(queued, r.node)
        self.renominate = keep

    def heard_after(self, r: Renomination) -> int:
        """How many cycles begin before ``r``'s update is heard (:meth:`renominate_due`):
        with SchedulerAsyncAPICalls :data:`ASYNC_PATCH_CYCLES` (at v1.35 a waiter rejected
        alone :data:`ASYNC_LONE_PATCH_CYCLES`, :attr:`v135_patch_timing`); without it one for
        a waiter rejected alone, :data:`SYNC_PATCH_CYCLES` for several (at v1.35 one for two
        as well: seed 24356 case 33)."""
        if self.async_api:
            if r.together == 1 and self.v135_patch_timing:
                return ASYNC_LONE_PATCH_CYCLES
            return ASYNC_PATCH_CYCLES
        if self.v135_patch_timing:
            return min(max(r.together - 1, 1), SYNC_PATCH_CYCLES)
        return min(r.together, SYNC_PATCH_CYCLES)

    def failed_again(self, qp: QueuedPodInfo) -> None:
        """``qp`` fails a scheduling cycle (:meth:`Failures.fail`, before it is requeued).  A
        failed Permit waiter whose update has not been heard yet is nominated again at once:
        upstream's failure handler nominates the informer's copy, which still carries the
        field.  With SchedulerAsyncAPICalls its failure's patch call finds the first one's
        (``clearNominatedNode``) still queued or in flight and takes its nomination over
        (``PodStatusPatchCall.Merge``): the field is cleared, and the update that says so
        comes once the queue is idle (v1.35.4 at seed 22354 case 6, 11 of 14 asks: the
        timed-out ``group-0-0``, force-activated by its sibling and rejected again, loses
        node-0, where ``group-1-0`` then fits).  Without it the Pod's update has restored
        the nomination already."""
        key = qp.pod.key
        for r in self.renominate:
            if r.qp.pod.key != key or r.failed_again:
                continue
            self.failures.keep_nomination(qp, r.node)
            if self.async_api:
                r.failed_again = True
            else:
                self.renominate.remove(r)
            return

    def expire_waiting(self) -> None:
        """Reject held Pods whose Permit deadline passed, and undo them."""
        self.waiting.expire()
        self.drain_waiting()

    # ------------------------------------------------------------------ binding cycle
    def submit(
        self,
        fwk: Framework,
        state: CycleState,
        qp: QueuedPodInfo,
        assumed: api.Pod,
        start: float,
        cycle: int,
    ) -> None:
        """Hand the binding cycle to ``submit_binding`` (or its bind to ``bind_later``)."""
        spent = time.perf_counter() - start
        later = self.bind_later
        if later is not None and self.binds_only(fwk, assumed):
            self.in_flight -= 1  # the binding cycle starts: PreBind has nothing to run
            began = time.perf_counter()

            def answered(err: Exception | None) -> None:
                status = fwk.bound(began, None if err is None else str(err))
                self.end_binding(fwk, state, qp, assumed, status, began - spent, cycle)

            later(assumed, answered)
            return

        def binding_cycle() -> None:  # waiting for the binder does not count (see resume)
            self.binding_cycle(fwk, state, qp, assumed, resume(spent), cycle)

        self.submitting = Submission(fwk, state, assumed)
        try:
            self.submit_binding(binding_cycle)
        finally:
            self.submitting = None

    def binding_cycle(
        self,
        fwk: Framework,
        state: CycleState,
        qp: QueuedPodInfo,
        assumed: api.Pod,
        start: float,
        cycle: int,
    ) -> None:
        """PreBind, Bind (a binding extender first), PostBind; a failure is undone."""
        self.in_flight -= 1
        direct = self.direct_bind
        if direct is not None and direct(fwk, qp, assumed):
            self.cluster.finish_binding(assumed)
            self.failures.clear(assumed.key)
            self.queue.done(assumed)
            return
        node = assumed.node_name
        try:
            status = fwk.run_pre_bind(state, assumed, node)
            if status.is_success():
                status = self._bind(fwk, state, assumed, node)
        except Exception as e:
            status = Status(Code.ERROR, (f"{type(e).__name__}: {e}",))
        self.end_binding(fwk, state, qp, assumed, status, start, cycle)

    def end_binding(
        self,
        fwk: Framework,
        state: CycleState,
        qp: QueuedPodInfo,
        assumed: api.Pod,
        status: Status,
        start: float,
        cycle: int,
    ) -> None:
        """The binding cycle after Bind answered ``status``: PostBind and the Pod done, or
        the failure undone."""
        self.cluster.finish_binding(assumed)
        if not status.is_success():
            self.undo(fwk, state, qp, assumed, status, status, cycle, start)
            self.drain_waiting()
            return
        fwk.run_post_bind(state, assumed, assumed.node_name)
        self.failures.record("scheduled", fwk, start)
        now = self.clock()
        first = qp.initial_attempt_timestamp if qp.initial_attempt_timestamp is not None else now
        self.metrics.record_scheduled(qp.attempts, now - first)
        self.failures.clear(assumed.key)
        self.queue.done(assumed)

    def binds_only(self, fwk: Framework, pod: api.Pod) -> bool:
        """Whether ``pod``'s binding cycle in ``fwk`` is only DefaultBinder's bind: no PreBind
        plugin runs for it (none, or only claim plugins and the Pod has no claims), no
        PostBind, no binding extender."""
        if pod.has_claims or self.extenders is not None:
            return False
        lean = self._binds_only.get(fwk.profile_name)
        if lean is None:
            plugins = fwk.plugins
            lean = self._binds_only[fwk.profile_name] = (
                all(pl.name in fwk.capabilities.claims for pl in plugins["pre_bind"])
                and not plugins["post_bind"]
                and [pl.name for pl in plugins["bind"]] == [names.DEFAULT_BINDER]
            )
        return lean

    def _bind(self, fwk: Framework, state: CycleState, pod: api.Pod, node: str) -> Status:
        """Upstream ``bind``: a binding extender first, else the Bind plugins."""
        if self.extenders is not None:
            status = self.extenders.bind(pod, node)
            if status is not None:
                return status
        return fwk.run_bind(state, pod, node)
