"""The serial scheduler: one scheduling cycle at a time, binding cycles handed off.

Reads like upstream ``schedule_one.go``: pop, the search (:mod:`kubesched.scheduler.search`:
reuse, PreFilter, static rejections, the nominated node, Filter, Score, select host), then
the commit step (:mod:`kubesched.scheduler.commit`: assume → Reserve → Permit → hold at
Permit or the binding cycle through ``submit_binding``, every undo beside its twin).  The
scheduler owns its parts as objects: the search (``search``), the commit step
(``committer``), the Pods held at Permit (``held``) and failure handling (``failing``); its
informer handlers (upstream ``eventhandlers.go``) update the cache (bound Pods) or the queue
(ours, unbound), tell the plugins' event handlers, and move waiting Pods whose queueing
hints say the event may help, each event's handling time observed as
``scheduler_event_handling_duration_seconds`` under upstream's labels.

Time and the outside world come in through small interfaces: ``clock()`` returns seconds,
``api`` binds and deletes, and informer-style ``on_*`` methods feed cluster events.  The same
code runs in the simulator, the benchmark and live mode; a subclass (a parallel shard, the
parallel or live coordinator) narrows the search through :meth:`Scheduler.candidate_rows`,
:meth:`Scheduler.select_host` and :meth:`Scheduler.sign` (:class:`~kubesched.scheduler.
search.SearchHost`) and extends the ``on_*`` handlers."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.api import workload
from kubesched.api.pods import skip_pod_level_resources
from kubesched.config import extenders as extender_config
from kubesched.config.featuregates import FeatureGates
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework import events, podgroups, sampling
from kubesched.framework.interface import (
    ActionType,
    ApiClient,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    ExtenderError,
    Handle,
    IntArray,
    QueuedPodInfo,
    Resource,
    Status,
)
from kubesched.framework.runtime import Framework, PluginError
from kubesched.metrics import PLUGIN_SAMPLE_EVERY, SchedulerMetrics
from kubesched.plugins.registry import full_registry
from kubesched.queue import events as qevents
from kubesched.queue.core import ACTIVE, BACKOFF
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.commit import Commit
from kubesched.scheduler.extenders import EXTENDER_NAME, Extenders
from kubesched.scheduler.failures import Failures
from kubesched.scheduler.options import SchedulerOptions
from kubesched.scheduler.podgroup import PodGroupCycle
from kubesched.scheduler.podgroup_tree import TreeCycle
from kubesched.scheduler.search import Search, Signature
from kubesched.scheduler.types import (
    PREEMPTION_PLUGIN,
    AttemptWork,
    FitError,
    NoNodesError,
    ScheduleResult,
    costly_plugins,
)
from kubesched.scheduler.waiting import Waiting
from kubesched.state.cache import POD_LEVEL_RESIZE_GATE, RESIZE_TOTALS_SINCE, ClusterState

log = logging.getLogger("kubesched.scheduler")


class Scheduler:
    """The scheduling loop over one cache, one queue and one framework per profile."""

    def __init__(
        self,
        config: KubeSchedulerConfiguration,
        *,
        clock: Callable[[], float],
        api_client: ApiClient | None = None,
        cluster: ClusterState | None = None,
        submit_binding: Callable[[Callable[[], None]], None] | None = None,
        metrics: SchedulerMetrics | None = None,
        options: SchedulerOptions | None = None,
    ) -> None:
        self.options = options = options or SchedulerOptions()
        """Seed, result reuse, plugin registry (:mod:`kubesched.scheduler.options`)."""
        self.config = config
        self.clock = clock
        self.api = api_client
        self.cluster = cluster or ClusterState()
        gates = options.feature_gates or config.feature_gates
        self.cluster.count_resize_totals(
            gates.at_least(RESIZE_TOTALS_SINCE), gates.enabled(POD_LEVEL_RESIZE_GATE)
        )
        self.pod_level_resources = gates.enabled("PodLevelResources")
        """Whether Pods' pod-level ``spec.resources`` count (off: the containers' only)."""
        if not self.pod_level_resources:
            self.cluster.skip_pod_level_resources()
        self.metrics = metrics or SchedulerMetrics()
        self.rng = np.random.default_rng(options.seed)
        self.handle = Handle(
            self.cluster,
            api_client,
            clock=clock,
            metrics=self.metrics,
            rng=self.rng,
            feature_gates=gates,
            pool_seed=options.pool_seed,
        )
        self.unscheduled_add_moves = podgroups.unscheduled_add_moves(gates)
        """Whether a new pending Pod is also a cluster event for the Pods already pooled
        (upstream ``addPodToSchedulingQueue`` under GangScheduling (v1.35-1.36) or
        GenericWorkload (v1.37): a member may complete its gang)."""
        self.pod_group_manager: podgroups.PodGroupManager | None = None
        """The Workload API groups' runtime state (v1.35+ with GenericWorkload; else None)."""
        if podgroups.enabled(gates):
            manager = podgroups.PodGroupManager(gates, self.cluster)
            self.handle.add_event_handler(manager)
            self.handle.services.provide(podgroups.POD_GROUP_MANAGER, manager)
            self.pod_group_manager = manager
        reg = options.registry or full_registry()
        ext_configs = extender_config.parse_extenders(config.extenders)
        self.extenders = (
            Extenders(ext_configs, self.metrics.record_extender) if ext_configs else None
        )
        """The configured extenders (:mod:`kubesched.scheduler.extenders`), or None."""
        if self.extenders is not None:  # DefaultPreemption calls the preempt verbs
            self.handle.extenders = self.extenders
        self.profiles: dict[str, Framework] = {
            p.scheduler_name: Framework(
                p,
                reg,
                self.handle,
                percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
                observe=self.metrics.observe_extension_point(p.scheduler_name),
            )
            for p in extender_config.apply_ignored_resources(config.profiles, ext_configs)
        }
        self.metrics.start_profiles(self.profiles)
        recorder = self.metrics.plugin_recorder()
        self._sampled = {n: sampling.sampled_twin(f, recorder) for n, f in self.profiles.items()}
        """Profile twins that time each plugin call (every PLUGIN_SAMPLE_EVERY-th cycle)."""
        first = next(iter(self.profiles.values()))
        hints = {n: f.events_to_register() for n, f in self.profiles.items()}
        if self.extenders is not None:  # upstream: extender rejections requeue on any event
            for per_plugin in hints.values():
                any_event = ClusterEvent(Resource.WILDCARD, ActionType.ALL)
                per_plugin[EXTENDER_NAME] = [ClusterEventWithHint(any_event)]
        self.queue = SchedulingQueue(
            clock=clock,
            sort_key=first.queue_sort_key(),
            pre_enqueue={n: f.plugins["pre_enqueue"] for n, f in self.profiles.items()},
            hints=hints,
            initial_backoff=float(config.pod_initial_backoff_seconds),
            max_backoff=float(config.pod_max_backoff_seconds),
            nominate_gated=self.handle.feature_gates.at_least("1.37"),
            target_pod_events=self.handle.feature_gates.at_least("1.37"),
            flush_gated=self.handle.feature_gates.at_least("1.37"),
            entity_of=podgroups.queue_entity(self.pod_group_manager),
            member_of=podgroups.queue_member(self.pod_group_manager),
            group_stores=self.handle.feature_gates.at_least("1.37"),
            backoff_only=_v136_group_member if _v136_groups(self.handle.feature_gates) else None,
        )
        for f in (*self.profiles.values(), *self._sampled.values()):
            f.nominator = self.queue.nominator
        self.queue.set_hint_recorder(self.metrics.hint_recorder())
        self._event_timer = self.metrics.event_recorder()
        """``scheduler_event_handling_duration_seconds``: ``(seconds, event label)``."""
        self.held = Waiting(self.handle, clock, self.metrics)
        """Pods held at Permit (gangs)."""
        self.failing = Failures(self.queue, self.metrics, api_client)
        """Failed attempts: PostFilter, the recorded reasons, requeue with backoff."""
        self.committer = Commit(
            cluster=self.cluster,
            queue=self.queue,
            waiting=self.held,
            failures=self.failing,
            metrics=self.metrics,
            clock=clock,
            extenders=self.extenders,
            submit_binding=submit_binding or (lambda fn: fn()),
        )
        """The commit step: assume, Reserve, Permit, hold or bind, and their undo."""
        self.committer.nominate_held = gates.enabled("NominatedNodeNameForExpectation")
        self.committer.async_api = gates.enabled("SchedulerAsyncAPICalls")
        self.failing.async_api = self.committer.async_api
        self.failing.defer_releases = self.failing.async_api and _v136_groups(gates)
        self.committer.v135_patch_timing = gates.version == "1.35"
        self.search = Search(
            self,
            cluster=self.cluster,
            queue=self.queue,
            extenders=self.extenders,
            rng=self.rng,
            batching=options.batching,
            clock=clock,
        )
        """The search, stage by stage (:mod:`kubesched.scheduler.search`)."""
        self.search.unheard = self.failing.unheard
        self.placement: IntArray | None = None
        """The rows of the PodGroup cycle's placement being tried (None: no placement)."""
        self._placement_rows: tuple[IntArray, IntArray, IntArray] | None = None
        """(node order, placement, the order's rows in the placement) last narrowed."""
        self._held_deletions: list[api.Pod] | None = None
        """Pods deleted while :meth:`hold_deletions` holds them, in order."""
        self.lag_victims = self.failing.defer_releases
        """v1.36 with GenericWorkload and SchedulerAsyncAPICalls: the victims a single Pod's
        preemption deletes reach the scheduler's view during the next cycle, after its
        search (:attr:`_lagged_deletions`).  Upstream's PostFilter deletes them with
        synchronous API calls, and the informer delivers the delete events while the next
        Pod popped is in flight: kube-oracle v1.36.3 (``KUBE_ORACLE_V=4``), seed 24365 case
        72, four preemptions by ``plain-1``, each last victim's delete heard during the
        next Pod's cycle (so that Pod, failing on the snapshot with the victim, is requeued
        to backoffQ by the in-flight event, not pooled); seed 24362 case 140 likewise
        (54 µs after the next cycle began).  Only the last victim's: an earlier one's event
        comes while the next victim is being deleted (72: ``running-group-0-0``'s at .7704,
        ``running-group-0-1`` deleted at .7714).  A PodGroup cycle next hears it before
        its view (:meth:`hold_deletions`): seed 24366 case 32, ``group-2-2`` bound in the
        room of ``plain-0``'s three victims in 4 of 4 asks; yet at seed 24362 case 67 a
        group's cycle did not hear it (4 of 4 asks), so that case stays open."""
        self._lagged_deletions: list[api.Pod] = []
        """Victims deleted in the last cycle, for the next (:attr:`lag_victims`)."""
        self.pod_group_cycle: PodGroupCycle | None = None
        """The PodGroup scheduling cycle (:mod:`kubesched.scheduler.podgroup`), with the
        Workload API on."""
        if self.pod_group_manager is not None:
            self.pod_group_cycle = TreeCycle(
                manager=self.pod_group_manager,
                cluster=self.cluster,
                queue=self.queue,
                committer=self.committer,
                failures=self.failing,
                schedule_pod=self.schedule_pod,
                restrict=self.restrict_to,
                hold_deletions=self.hold_deletions,
            )
        self.batch = self.search.batch
        """Reuse of results across equivalent Pods (see :mod:`kubesched.scheduler.batch`)."""
        self.record_work = False
        """Whether to keep ``last_work`` (the simulator sets it for its cost model of
        upstream's speed; off, an attempt pays nothing for it)."""
        self.last_work: AttemptWork | None = None
        """What the last scheduling attempt did (None when it did not search or
        ``record_work`` is off)."""
        self.pod_attempts: Counter[str] = Counter()
        self.unreadable: dict[str, str] = {}
        """Pending Pods for this scheduler that the informer holds but that could not be read
        (live mode): key to why.  Counted as unschedulable in ``scheduler_pending_pods``."""

    # ------------------------------------------------------------------ the parts' state
    @property
    def submit_binding(self) -> Callable[[Callable[[], None]], None]:
        """Runs a binding cycle: at once, later in virtual time, or on a thread."""
        return self.committer.submit_binding

    @submit_binding.setter
    def submit_binding(self, submit: Callable[[Callable[[], None]], None]) -> None:
        self.committer.submit_binding = submit

    @property
    def in_flight_bindings(self) -> int:
        """Pods past Permit whose binding cycle has not ended (the parallel coordinator
        adds the Pods handed to shards and not answered yet)."""
        return self.committer.in_flight

    @in_flight_bindings.setter
    def in_flight_bindings(self, n: int) -> None:
        self.committer.in_flight = n

    @property
    def attempts(self) -> Counter[str]:
        """Attempts by result: ``scheduled``, ``unschedulable``, ``error``."""
        return self.failing.attempts

    @attempts.setter
    def attempts(self, counter: Counter[str]) -> None:  # a standby carries the run's on
        self.failing.attempts = counter

    @property
    def failures(self) -> dict[str, tuple[str, str]]:
        """Pod key to (reason, message) of its last failed attempt."""
        return self.failing.last

    @property
    def preemptions(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """Preemptor key to (node, victim keys) of its last successful preemption."""
        return self.failing.preemptions

    @property
    def preempted_by(self) -> dict[str, str]:
        """Victim key to the key of the Pod that preempted it."""
        return self.failing.preempted_by

    # ------------------------------------------------------------------ informer events
    def responsible_for(self, pod: api.Pod) -> bool:
        """Whether one of our profiles schedules this Pod."""
        return pod.scheduler_name in self.profiles

    def _handled(self, start: float, *labels: str) -> None:
        """An informer event took from ``start`` until now (upstream ``EventHandlingLatency``,
        observed under each of ``labels``)."""
        seconds = time.perf_counter() - start
        for label in labels:
            self._event_timer(seconds, label)

    def on_node_add(self, node: api.Node) -> None:
        """A node appeared."""
        start = time.perf_counter()
        self.cluster.add_node(node)
        self.queue.move_all_to_active_or_backoff(events.NODE_ADD, None, node)
        self._handled(start, "NodeAdd")

    def on_node_update(self, old: api.Node, new: api.Node) -> None:
        """A node changed; requeue by what changed (each change timed with the cache update,
        as upstream)."""
        start = time.perf_counter()
        self.cluster.update_node(new)
        updating = time.perf_counter() - start
        for event in events.node_update_events(old, new):
            moving = time.perf_counter()
            self.queue.move_all_to_active_or_backoff(event, old, new)
            self._handled(moving - updating, qevents.event_label(event))

    def on_node_delete(self, node: api.Node) -> None:
        """A node went away with its Pods."""
        start = time.perf_counter()
        self.cluster.remove_node(node.name)
        self.queue.move_all_to_active_or_backoff(events.NODE_DELETE, node, None)
        self._handled(start, "NodeDelete")

    def _tell(self, method: str, *args: Any) -> None:
        """Pass an informer event on to the plugins' event handlers."""
        for hear in self.handle.listeners[method]:
            hear(*args)

    def on_pod_add(self, pod: api.Pod) -> None:
        """A Pod appeared: bound ones go to the cache, ours to the queue."""
        start = time.perf_counter()
        if not self.pod_level_resources:
            skip_pod_level_resources(pod)
        self._tell("on_pod_add", pod)
        if pod.node_name:  # one whose node the cache lacks waits for it (ClusterState.ghosts)
            self.cluster.add_pod(pod)
            self.queue.assigned_pod_added(pod)
            self._handled(start, "AssignedPodAdd")
        elif self.responsible_for(pod):
            self.queue.add(pod)
            if self.unscheduled_add_moves:
                self.queue.move_all_to_active_or_backoff(
                    qevents.EVENT_UNSCHEDULED_POD_ADD, None, pod
                )
            self._handled(start, "UnschedulablePodAdd")

    def on_pods_added(self, pods: list[api.Pod]) -> None:
        """:meth:`on_pod_add` for each of ``pods`` (a first LIST's, none in the cache yet):
        the same cache, queue and handler calls, with the bound Pods entering the cache in
        one bulk load (:meth:`ClusterState.add_bound_pods`) and each one's share of its
        time observed as its event.  A subclass that extends :meth:`on_pod_add` gets it
        called once per Pod instead."""
        bound = [p for p in pods if p.node_name]
        if type(self).on_pod_add is not Scheduler.on_pod_add or any(
            p.key in self.cluster.pods for p in bound
        ):
            for pod in pods:
                self.on_pod_add(pod)
            return
        start = time.perf_counter()
        if self.handle.event_handlers:
            for pod in pods:
                self._tell("on_pod_add", pod)
        self.cluster.add_bound_pods(bound)  # those whose node is missing wait for it
        for pod in bound:
            self.queue.assigned_pod_added(pod)
        share = (time.perf_counter() - start) / max(1, len(bound))
        for _ in bound:
            self._event_timer(share, "AssignedPodAdd")
        for pod in pods:
            if not pod.node_name and self.responsible_for(pod):
                start = time.perf_counter()
                self.queue.add(pod)
                if self.unscheduled_add_moves:
                    self.queue.move_all_to_active_or_backoff(
                        qevents.EVENT_UNSCHEDULED_POD_ADD, None, pod
                    )
                self._handled(start, "UnschedulablePodAdd")

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        """A Pod changed (a bind confirmed, labels changed, gates removed, ...)."""
        start = time.perf_counter()
        self._tell("on_pod_update", old, new)
        if new.node_name:
            if not old.node_name:  # upstream: the unscheduled informer's delete, then an add
                self.queue.delete(old)
                self._handled(start, "UnschedulablePodDelete")
                self.on_pod_add(new)
                return
            self.cluster.add_pod(new)
            self.queue.assigned_pod_updated(old, new)
            self._handled(start, "AssignedPodUpdate")
        elif self.responsible_for(new):
            self.queue.update(old, new)
            labels = {
                qevents.event_label(e) for e in qevents.pod_scheduling_properties_change(new, old)
            }
            self._handled(
                start, "UnschedulablePodUpdate", *sorted(labels - {"UnschedulablePodUpdate"})
            )

    def hold_deletions(self, hold: bool) -> None:
        """While held, Pods deleted are kept for later (the PodGroup cycle's view,
        :data:`kubesched.scheduler.podgroup.HoldDeletions`); released, each is applied."""
        if hold:
            # the last cycle's victim (``lag_victims``) is heard before a PodGroup cycle's view
            self._deliver_lagged()
            self._held_deletions = []
            return
        held, self._held_deletions = self._held_deletions, None
        for pod in held or ():
            self.on_pod_delete(pod)

    def on_pod_delete(self, pod: api.Pod) -> None:
        """A Pod was deleted: free its resources or drop it from the queue.  An unbound Pod
        nominated to a node raises ``AssignedPodDelete`` for the Pods of lower or equal
        priority, which counted it as if it were assigned there (upstream's
        ``deletePodFromSchedulingQueue``)."""
        if self._held_deletions is not None:
            self._held_deletions.append(pod)
            return
        start = time.perf_counter()
        self._tell("on_pod_delete", pod)
        if not pod.node_name and pod.key in self.cluster.pods:
            # An assumed Pod (a Permit waiter, or in its binding cycle) leaves the queue
            # first, as upstream's deletePodFromSchedulingQueue deletes every unbound Pod
            # from it: its failure that follows is not requeued (handleSchedulingFailure
            # requeues nothing the informer no longer has).
            self.queue.delete(pod)
        if self.handle.reject_waiting_pod(pod.key):
            self.committer.drain_waiting()
        if (record := self.cluster.remove_pod(pod.key)) is not None:
            # An assumed Pod deleted before its bind lands (a preemption's victim still in
            # its binding cycle) is an unbound Pod to the API server; from v1.35 upstream's
            # handleAssumedPodDeletion raises the event with the cache's copy, on its node,
            # so the hints see room freed there (v1.34 hands them the deleted object).
            assumed = not pod.node_name and self.handle.feature_gates.at_least("1.35")
            gone = record.pod if assumed else pod
            self.queue.move_all_to_active_or_backoff(events.ASSIGNED_POD_DELETE, gone, None)
            label = "AssignedPodDelete"
        else:
            self.queue.delete(pod)
            label = "UnschedulablePodDelete"
            if pod.nominated_node_name:
                self.failing.nomination_freed(pod)
        self.failing.clear(pod.key)
        self._handled(start, label)

    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        """A Namespace, Service, PodDisruptionBudget or other object changed.  The queue's
        hints get the object before and after the change, as upstream's handlers pass them:
        ``(None, obj)`` for an add, ``(known, obj)`` for an update and ``(obj, None)`` for a
        deletion."""
        start = time.perf_counter()
        before = self.cluster.known_object(obj)
        kind = self.cluster.apply_object(obj, deleted=deleted)
        self._tell("on_object", obj, deleted)
        group = podgroups.workload_pod_group_key(obj)
        if deleted and group is not None:  # upstream DeletePodGroup, before the event
            self.queue.pod_group_deleted(group)
        elif not deleted:  # AddPodGroup / AddCompositePodGroup: held members released
            for released in podgroups.released_groups(self.pod_group_manager, obj):
                self.queue.pod_group_added(released)
        event = events.object_event(
            kind, deleted, before is not None, workload_api=workload.is_workload_api(obj)
        )
        if event is not None:
            if deleted:
                self.queue.move_all_to_active_or_backoff(event, obj, None)
            else:
                self.queue.move_all_to_active_or_backoff(event, before, obj)
            self._handled(start, qevents.event_label(event))

    # ------------------------------------------------------------------ the search
    def schedule_pod(self, fwk: Framework, state: CycleState, pod: api.Pod) -> ScheduleResult:
        """Find the node for ``pod`` (upstream ``schedulePod``: :meth:`Search.run`); raises
        :class:`FitError`."""
        return self.search.run(fwk, state, pod)

    def candidate_rows(self) -> IntArray:
        """Rows the search walks (every live node; a parallel shard narrows this to its
        partition first, see :mod:`kubesched.parallel.shard`; within a PodGroup cycle's
        placement, that placement's nodes)."""
        rows = self.cluster.nodes.order()
        if self.placement is None:
            return rows
        memo = self._placement_rows
        if memo is not None and memo[0] is rows and memo[1] is self.placement:
            return memo[2]  # every member of a group searches the same placement
        narrowed = rows[np.isin(rows, self.placement)]
        self._placement_rows = (rows, self.placement, narrowed)
        return narrowed

    def outside_placement(self, node: str) -> bool:
        """Whether ``node`` lies outside the placement :meth:`restrict_to` set (upstream's
        snapshot then has no such node in the placement, and ``evaluateNominatedNode``
        skips a nominated node there)."""
        if self.placement is None:
            return False
        row = self.cluster.nodes.row_of.get(node)
        return row is None or not bool(np.isin(row, self.placement))

    def restrict_to(self, placement: IntArray | None) -> None:
        """Search only ``placement``'s rows from now on (None: every node again): a
        PodGroup cycle trying a placement (upstream ``AssumePlacement``)."""
        self.placement = placement

    def select_host(
        self,
        total: IntArray | None,
        rows: IntArray,
        order: IntArray | None = None,
        ties: IntArray | list[int] | None = None,
    ) -> int:
        """Index into ``rows`` of the highest total score, ties broken by the seeded
        generator (:meth:`Search.pick`)."""
        return self.search.pick(total, rows, order, ties)

    def sign(self, fwk: Framework, pod: api.Pod) -> Signature | None:
        """The Pod's result-reuse signature (:meth:`Search.sign`)."""
        return self.search.sign(fwk, pod)

    # ------------------------------------------------------------------ the cycle
    def schedule_one(self) -> bool:
        """Run one scheduling cycle; False when no Pod was ready to pop.  Waiting Pods whose
        Permit timed out are rejected first; Pods allowed or rejected during the cycle then
        start (or undo) their binding cycle."""
        self.expire_waiting_pods()
        ran = self._schedule_one()
        self.committer.drain_waiting()
        if self.committer.renominate and self._idle_for_renomination():
            # idle: the failed waiters' updates are heard before time moves on
            self.committer.renominate_due(all_of_them=True)
        return ran

    def _idle_for_renomination(self) -> bool:
        """Whether the failed Permit waiters' updates are all heard now
        (``Commit.renominate_due``'s ``all_of_them``): no other Pod's cycle can begin before
        them.  With SchedulerAsyncAPICalls that needs backoffQ empty too, since a pop takes
        from backoffQ when activeQ is empty (SchedulerPopFromBackoffQ) and the update comes
        after the patch's round trip (v1.35 seed 23351 case 87: ``group-2-2`` times out
        while the Pods its failure moves back off; kubesched heard its nomination back
        before their cycles, upstream after them, in some asks).  Without the gate the rule
        is activeQ alone, as before (not measured otherwise)."""
        pending = self.queue.pending_pods()
        if self.committer.async_api:
            return not (pending[ACTIVE] or pending[BACKOFF])
        return not pending[ACTIVE]

    def _schedule_one(self) -> bool:
        if self.committer.renominate:
            self.committer.renominate_due(all_of_them=self._idle_for_renomination())
        if self.failing.unheard or self.failing.unheard_releases:
            pending = self.queue.pending_pods()  # a pop takes from backoffQ when activeQ is empty
            self.failing.hear_nominations(all_of_them=not (pending[ACTIVE] or pending[BACKOFF]))
        qp = self.queue.pop()
        if qp is None and self._lagged_deletions:
            self._deliver_lagged()  # idle: the informer delivers them
            qp = self.queue.pop()
        if qp is None:
            return False
        self.schedule_popped(qp)
        return True

    def unheard_events(self) -> bool:
        """Whether events are still on their way to the scheduler: the last cycle's victims
        (:attr:`lag_victims`) or lost nominations (``Failures.unheard_releases``).  A run is
        not quiet until they are heard (the next :meth:`schedule_one` delivers them)."""
        return bool(self._lagged_deletions or self.failing.unheard_releases)

    def _deliver_lagged(self) -> None:
        """The last cycle's victims (:attr:`lag_victims`) reach the scheduler's view."""
        lagged, self._lagged_deletions = self._lagged_deletions, []
        for victim in lagged:
            self.on_pod_delete(victim)

    def schedule_popped(self, qp: QueuedPodInfo) -> None:
        """The scheduling cycle of a Pod just popped from the queue (the parallel
        coordinator runs it for the Pods it schedules itself)."""
        pod = qp.pod
        self.last_work = None
        fwk = self.profiles.get(pod.scheduler_name)
        entity = self.queue.group_members(qp) is not None  # popped as its PodGroup's entity
        if fwk is None or (self.cluster.is_assumed(pod.key) and not entity):
            self.queue.done(pod)
            return
        if self.queue.scheduling_cycle % PLUGIN_SAMPLE_EVERY == 0:
            fwk = self._sampled[pod.scheduler_name]
        groups = self.pod_group_cycle
        if groups is not None and groups.handles(pod):
            for member in groups.run(fwk, qp, self.queue.scheduling_cycle):
                self.pod_attempts[member.pod.key] += 1
            return
        self.pod_attempts[pod.key] += 1
        start = time.perf_counter()
        state = CycleState()
        cycle = self.queue.scheduling_cycle
        failing = self.failing
        try:
            result = self.schedule_pod(fwk, state, pod)
        except FitError as fit:
            if self.record_work:
                outcome = fit.diagnosis.outcome
                self.last_work = AttemptWork(
                    fit.diagnosis.num_all_nodes,
                    outcome.processed if outcome is not None else 0,
                    0,
                    costly_plugins(pod),
                    any(p.name == PREEMPTION_PLUGIN for p in fwk.plugins["post_filter"]),
                )
            # the last cycle's victims arrive in flight, after this cycle's view
            arriving, self._lagged_deletions = self._lagged_deletions, []
            lag = self.lag_victims and self._held_deletions is None
            if lag:
                self._held_deletions = []
            nominating = failing.post_filter(fwk, state, pod, fit.diagnosis)
            if lag:
                victims, self._held_deletions = self._held_deletions or [], None
                for victim in victims[:-1]:  # heard while the next one is deleted
                    self.on_pod_delete(victim)
            for victim in arriving:
                self.on_pod_delete(victim)
            if lag:
                self._lagged_deletions = victims[-1:]
            if nominating is not None:
                failing.nominate(qp, nominating)
            self.metrics.algorithm_duration.observe(time.perf_counter() - start)  # upstream
            failing.fail(fwk, qp, fit.diagnosis, cycle, start)  # defers it past PostFilter
            return
        except NoNodesError as e:
            # Upstream's ErrNoNodesAvailable: UnschedulableAndUnresolvable, no plugin to
            # wait for (so retried after backoff), the Pod's condition Unschedulable.
            self.metrics.algorithm_duration.observe(time.perf_counter() - start)
            why = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(e),))
            failing.fail(fwk, qp, why, cycle, start)
            return
        except (PluginError, ExtenderError) as e:
            self.metrics.algorithm_duration.observe(time.perf_counter() - start)
            failing.fail(fwk, qp, Status(Code.ERROR, (str(e),)), cycle, start)
            return
        except Exception as e:  # a faulty plugin must not stop the loop
            log.exception("plugin fault while scheduling %s", pod.key)
            failing.fail(fwk, qp, Status(Code.ERROR, (f"{type(e).__name__}: {e}",)), cycle, start)
            return
        self.metrics.algorithm_duration.observe(time.perf_counter() - start)
        if self.record_work:
            scored = result.feasible if result.feasible > 1 else 0
            self.last_work = AttemptWork(
                self.search.last_nodes, result.evaluated, scored, costly_plugins(pod), bound=True
            )
        self._deliver_lagged()  # in flight, after this cycle's view (``lag_victims``)
        assumed = self.committer.assume(pod, result.node)
        if result.entry is not None:
            result.entry.version = self.cluster.version
            result.entry.nominations = self.queue.nominator.version
            result.entry.cycle = cycle
            self.batch.store(result.entry)
        self.committer.commit(fwk, state, qp, assumed, start, cycle)

    # ------------------------------------------------------------------ held at Permit
    def expire_waiting_pods(self) -> None:
        """Reject waiting Pods whose earliest Permit deadline passed (upstream: one timer per
        waiting Pod, on the scheduler's clock), and undo them."""
        self.committer.expire_waiting()

    def next_waiting_deadline(self) -> float | None:
        """Earliest Permit deadline among waiting Pods (None: nobody waits)."""
        return self.held.next_deadline()

    # ------------------------------------------------------------------ metrics
    def sync_metrics(self) -> None:
        """Bring gauges and queue counters up to date; the loops call this about once a
        (real or simulated) second, so nothing is paid per Pod (see :mod:`kubesched.metrics`)."""
        q = self.queue
        pods = self.cluster.pods
        pending = q.pending_pods()
        if self.unreadable:
            pending = {
                **pending,
                "unschedulable": pending.get("unschedulable", 0) + len(self.unreadable),
            }
        self.metrics.sync(
            pending=pending,
            incoming=q.incoming_counts,
            entities=q.queued_entities(),
            rejected=(
                (qp.pod.scheduler_name, qp.unschedulable_plugins | qp.pending_plugins)
                for qp in q.pending_pod_infos()
            ),
            cache={
                "nodes": len(self.cluster.nodes),
                "pods": len(pods),
                "assumed_pods": self.cluster.assumed_count,
            },
            batch_profile=next(iter(self.profiles)),
            batch_attempts=self.batch.attempts,
            batch_flushes=self.batch.flushes,
            evaluations={
                (plugin, point, name): n
                for name, fwk in self.profiles.items()
                for (plugin, point), n in fwk.evaluations.items()
            },
            inflight=q.inflight_events(),
        )
        for fwk in self.profiles.values():
            for plugin in fwk.metrics_syncers:
                plugin.sync_metrics()  # plugin-owned gauges (quota runtime / min / max)


def _v136_groups(gates: FeatureGates) -> bool:
    """v1.36 with GenericWorkload: a PodGroup member's failed attempt is requeued after its
    backoff alone (:class:`~kubesched.queue.scheduling_queue.SchedulingQueue`'s
    ``backoff_only``)."""
    return gates.version == "1.36" and gates.enabled("GenericWorkload")


def _v136_group_member(pod: api.Pod) -> bool:
    """Whether ``pod`` names a PodGroup (``spec.schedulingGroup``)."""
    return pod.scheduling_group is not None
