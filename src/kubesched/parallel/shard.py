"""A scheduler shard: the normal scheduler on a replica of the cluster, proposing placements.

A shard is a :class:`~kubesched.scheduler.Scheduler` (every plugin of every profile, the
same scheduling cycle, result reuse, Reserve / Permit with gangs waiting, PostFilter
preemption) whose cache is a *replica* kept current from the binder's commit stream, and
whose API client turns the binding cycle's ``bind`` into a **proposal** instead of a write:

- the search walks the shard's own partition of the nodes first
  (:meth:`ShardScheduler.candidate_rows`) and falls back to every node only when no node
  of the partition fits, so shards rarely reach for the same node;
- the proposal names the chosen node with its version (the authoritative
  ``NodeTable.generation`` the shard last heard for that node) and up to ``alternatives``
  runner-up nodes by score (captured in :meth:`ShardScheduler.select_host`);
- the Pod stays *assumed* in the replica until the commit stream confirms it (``Bound``),
  moves it (the binder chose an alternative) or the binder refuses it (``private``).

A Pod that fits nowhere is reported with its rejecting plugins (and, after a preemption, the
nominated node and the victims the binder must still find present) and dropped from the
shard's queue: the dispatcher owns the queue.  :func:`~kubesched.parallel.shardmain.serve`
is the process entry point.
"""

from __future__ import annotations

import dataclasses
import logging
import time

import numpy as np

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework.interface import CycleState, IntArray, QueuedPodInfo
from kubesched.framework.runtime import Framework
from kubesched.metrics import ExtensionPointObserver, SchedulerMetrics
from kubesched.parallel import protocol as p
from kubesched.scheduler import (
    FitError,
    Scheduler,
    ScheduleResult,
    SchedulerOptions,
    num_feasible_nodes_to_find,
)

log = logging.getLogger(__name__)

HOT_MESSAGES = 4
"""After a refusal, proposals carry alternatives for this many messages."""


class _ShardApi:
    """The shard's API client: a bind becomes a proposal; deletes and status writes are
    the binder's to make, so they are only recorded."""

    def __init__(self, shard: ShardScheduler) -> None:
        self.shard = shard

    def bind(self, pod: api.Pod, node_name: str) -> None:
        self.shard.propose(pod, node_name)

    def delete_pod(self, pod: api.Pod, reason: str) -> None:
        del pod, reason  # the victims travel with the failure (Scheduler.preemptions)

    def pod_scheduling_failed(self, pod: api.Pod, reason: str, message: str) -> None:
        self.shard.failed.append((pod, reason, message))


class _Mute(ExtensionPointObserver):
    def __call__(self, point: str, status: str, seconds: float) -> None:
        del point, status, seconds


class _ShardMetrics(SchedulerMetrics):
    """A shard's own attempts are not what the cluster exports (the coordinator records the
    outcome of every Pod), so the per-Pod recording is skipped."""

    def record_attempt(self, result: str, profile: str, seconds: float) -> None:
        del result, profile, seconds

    def record_scheduled(self, attempts: int, sli_seconds: float) -> None:
        del attempts, sli_seconds

    def observe_extension_point(self, profile: str) -> ExtensionPointObserver:
        return _Mute(self.extension_point_duration, profile)


class ShardScheduler(Scheduler):
    """Shard ``index`` of ``shards``: see the module docstring."""

    def __init__(
        self, config: KubeSchedulerConfiguration, options: SchedulerOptions, *, index: int
    ) -> None:
        self.now = 0.0
        super().__init__(
            config,
            clock=lambda: self.now,
            api_client=_ShardApi(self),
            metrics=_ShardMetrics(),
            options=dataclasses.replace(options, seed=options.seed * 7919 + index),
        )
        self.index = index
        self.shards = options.shards
        self.alternatives = options.alternatives
        self.seen: dict[str, int] = {}
        """Node name to the authoritative generation last heard from the commit stream."""
        self.contended = False
        """Whether the binder refused a proposal of ours lately: then every proposal carries
        alternatives (they cost a partial sort); otherwise only those outside our
        partition, where other shards may be placing too."""
        self._hot = 0
        self.failed: list[tuple[api.Pod, str, str]] = []
        self.results: list[p.Result] = []
        self._restrict = False
        self._own: IntArray = np.zeros(0, dtype=np.int64)
        self._own_for: IntArray | None = None
        self._percentage: tuple[tuple[int, int, int | None], int | None] = ((-1, -1, None), None)
        """The last answer of :meth:`_partition_percentage` and what it was computed from."""
        self._alts: tuple[int, ...] = ()
        self._decisions: dict[str, tuple[tuple[int, ...], int]] = {}
        self._lean_profiles: dict[str, bool] = {}
        self.applied = 0
        """Commit-stream entries the last message carried."""
        self.searched: dict[str, float] = {}
        """This message's Pods: seconds each search took (wall clock)."""
        self._cross = {
            name: fwk.capabilities.cross_node & {pl.name for pl in fwk.filter_plugins}
            for name, fwk in self.profiles.items()
        }
        self.committer.direct_bind = self._propose_at_once
        self.committer.activate = self._activate
        self.activations: list[str] = []
        """This message's Pods to activate that the coordinator holds (``FromShard.activate``)."""

    # ------------------------------------------------------------------ one message
    def process(self, msg: p.ToShard) -> p.FromShard:
        """Apply the commit stream, take the new Pods, schedule them, answer."""
        t0 = time.perf_counter()
        c0 = time.process_time()
        self.now = msg.now
        stream = p.decode_stream(msg.stream)
        self.applied = len(msg.entries) + len(stream)
        for entry in msg.entries:
            self.apply(entry)
        for entry in stream:
            self.apply(entry)
        c1 = time.process_time()
        self._hot = HOT_MESSAGES if msg.private else max(0, self._hot - 1)
        self.contended = self._hot > 0
        for key, _reason in msg.private:
            rec = self.cluster.pods.get(key)
            if rec is not None and rec.assumed:
                self.cluster.forget_pod(rec.pod)
        for pod in msg.pods:
            self.on_pod_add(pod)
        while self.schedule_one():
            self._report_failures()
        self.expire_waiting_pods()
        self._report_failures()
        out = p.FromShard(
            self.results,
            waiting=len(self.handle.waiting_pods),
            deadline=self.next_waiting_deadline(),
            applied=self.applied,
            search=self.searched,
            activate=self.activations,
        )
        self.results = []
        self.searched = {}
        self.activations = []
        out.busy = time.perf_counter() - t0
        out.cpu = time.process_time() - c0
        out.apply_cpu = c1 - c0
        return out

    def _activate(self, pods: list[api.Pod]) -> None:
        """``PodsToActivate``: those in this shard's queue here, the others (pending Pods the
        dispatcher holds: a waiting gang member's siblings) by the coordinator."""
        self.queue.activate(pods)
        self.activations.extend(pod.key for pod in pods if self.queue.queue_of(pod.key) is None)

    def _report_failures(self) -> None:
        for pod, reason, message in self.failed:
            qp = self.queue.get(pod.key)
            plugins = tuple(sorted(qp.unschedulable_plugins)) if qp is not None else ()
            pending = tuple(sorted(qp.pending_plugins)) if qp is not None else ()
            nominated, victims = self.preemptions.pop(pod.key, ("", ()))
            self.results.append(
                p.Failed(pod.key, reason, message, plugins, pending, nominated, victims)
            )
            self.queue.delete(pod)
            self.failing.clear(pod.key)
        self.failed.clear()

    # ------------------------------------------------------------------ the commit stream
    def apply(self, e: p.Entry) -> None:
        """Apply one commit-stream entry to the replica (through the informer handlers)."""
        if isinstance(e, p.Bound):
            self.seen[e.node] = e.gen
            sent = e.pod
            rec = self.cluster.pods.get(e.key) if e.proposer == self.index or not sent else None
            if rec is not None:
                self._bound(rec.pod, e.node)
            elif sent is not None:  # decoded from this message: ours to change
                self._bound(p.as_pod(sent), e.node, owned=True)
        elif isinstance(e, p.Assumed):
            self.seen[e.node] = e.gen
            rec = self.cluster.pods.get(e.key)
            if rec is not None and rec.node == e.node:
                return
            pod = self._pod(e.key, e.pod, e.proposer)
            if rec is not None:
                self.cluster.remove_pod(e.key)
            if pod is not None:
                self.cluster.assume_pod(pod.bound_to(e.node), e.node)
        elif isinstance(e, p.Forgot):
            self.seen[e.node] = e.gen
            rec = self.cluster.pods.get(e.key)
            if rec is not None and rec.assumed:
                self.cluster.remove_pod(e.key)
        elif isinstance(e, p.NodeAdd):
            self.on_node_add(e.node)
            self.seen[e.node.name] = e.gen
        elif isinstance(e, p.NodeUpdate):
            self.on_node_update(e.old, e.new)
            self.seen[e.new.name] = e.gen
        elif isinstance(e, p.NodeDelete):
            self.on_node_delete(e.node)
            self.seen.pop(e.node.name, None)
        elif isinstance(e, p.PodAdd):
            pod = p.as_pod(e.pod)
            self.on_pod_add(pod)
            self.seen[pod.node_name] = e.gen
        elif isinstance(e, p.PodUpdate):
            self.on_pod_update(p.as_pod(e.old), p.as_pod(e.new))
        elif isinstance(e, p.PodDelete):
            self.on_pod_delete(p.as_pod(e.pod))
            if e.node:
                self.seen[e.node] = e.gen
        elif isinstance(e, p.ObjectEvent):
            self.on_object(e.obj, deleted=e.deleted)
        elif isinstance(e, p.Generations):
            self.seen.update(e.gens)

    def _bound(self, pod: api.Pod, node: str, owned: bool = False) -> None:
        """``on_pod_update`` for a bind, without the queue's part: the shard's queue never
        keeps a Pod between messages, so there is nothing for the event to move.  An
        ``owned`` Pod (decoded from the stream, referenced nowhere else) is bound in place."""
        if pod.node_name == node:
            new = pod
        elif owned and not self.handle.event_handlers:
            pod.node_name = node
            new = pod
        else:
            new = pod.bound_to(node)
        if self.handle.event_handlers:
            self._tell("on_pod_update", pod.bound_to(""), new)
            self._tell("on_pod_add", new)
        self.cluster.add_pod(new)  # a Pod whose node the replica lacks waits for it

    def _pod(self, key: str, sent: api.Pod | bytes | None, proposer: int) -> api.Pod | None:
        """The Pod of a stream entry: our own copy when we proposed it, else the entry's."""
        if proposer == self.index or sent is None:
            rec = self.cluster.pods.get(key)
            if rec is not None:
                return rec.pod
        return p.as_pod(sent) if sent is not None else None

    # ------------------------------------------------------------------ the search
    def candidate_rows(self) -> IntArray:
        """The shard's own partition while :meth:`schedule_pod` tries it, else every node."""
        order = self.cluster.nodes.order()
        if not self._restrict:
            return order
        if self._own_for is not order:
            names = self.cluster.nodes.names
            mine = [p.partition_of(names[r], self.shards) == self.index for r in order.tolist()]
            self._own = order[np.asarray(mine, dtype=np.bool_)] if mine else order[:0]
            self._own_for = order
        return self._own if self._own.size else order

    def schedule_pod(self, fwk: Framework, state: CycleState, pod: api.Pod) -> ScheduleResult:
        """Own partition first; every node when nothing there fits (timed for routing)."""
        t0 = time.perf_counter()
        try:
            return self._search(fwk, state, pod)
        finally:
            self.searched[pod.key] = time.perf_counter() - t0

    def _search(self, fwk: Framework, state: CycleState, pod: api.Pod) -> ScheduleResult:
        self._alts = ()
        if self.shards > 1:
            self._restrict = True
            saved = fwk.percentage_of_nodes_to_score
            try:
                fwk.percentage_of_nodes_to_score = self._partition_percentage(saved)
                result = super().schedule_pod(fwk, state, pod)
                self._remember(fwk, state, pod)
                return result
            except FitError:
                state.clear()
                state.skip_filter.clear()
                state.skip_score.clear()
                self.batch.invalidate("fallback")
                self._alts = ()
            finally:
                fwk.percentage_of_nodes_to_score = saved
                self._restrict = False
        result = super().schedule_pod(fwk, state, pod)
        self._remember(fwk, state, pod)
        return result

    def _partition_percentage(self, configured: int | None) -> int | None:
        """The percentage of the partition that finds as many feasible nodes as the serial
        scheduler looks for in the whole cluster (upstream's adaptive percentage would
        otherwise look at a larger share of a smaller list)."""
        mine = int(self.candidate_rows().size)
        everyone = len(self.cluster.nodes)
        key = (mine, everyone, configured)
        if self._percentage[0] != key:
            pct = configured
            if 0 < mine < everyone:
                want = num_feasible_nodes_to_find(configured, everyone)
                pct = min(100, -(-100 * want // mine))
            self._percentage = (key, pct)
        return self._percentage[1]

    def _remember(self, fwk: Framework, state: CycleState, pod: api.Pod) -> None:
        active = self._cross[fwk.profile_name] - state.skip_filter
        local = p.LOCAL if not active else p.NOT_LOCAL
        if active == {names.INTER_POD_AFFINITY} and p.node_domain_only(pod):
            local = p.NODE_DOMAIN
        self._decisions[pod.key] = (self._alts, local)

    def select_host(
        self,
        total: IntArray | None,
        rows: IntArray,
        order: IntArray | None = None,
        ties: IntArray | list[int] | None = None,
    ) -> int:
        """The scheduler's pick; the next best nodes are kept as alternatives."""
        pick = super().select_host(total, rows, order, ties)
        k = self.alternatives if self.contended or not self._restrict else 0
        if total is not None and k > 0 and rows.shape[0] > 1:
            m = min(k + 1, int(rows.shape[0]))
            top = np.argpartition(-total, m - 1)[:m]
            top = top[np.lexsort((rows[top], -total[top]))]
            self._alts = tuple(int(rows[i]) for i in top.tolist() if i != pick)[:k]
        return pick

    # ------------------------------------------------------------------ proposals
    def _lean(self, fwk: Framework) -> bool:
        """Whether the profile's binding cycle is only the DefaultBinder's bind (no PreBind,
        PostBind or extenders): then the shard proposes at once (the binder runs the real
        binding cycle; the shard's metrics are muted anyway).  DynamicResources' PreBind does
        nothing for a Pod without claims; a Pod with claims always runs the full cycle."""
        lean = self._lean_profiles.get(fwk.profile_name)
        if lean is None:
            plugins = fwk.plugins
            lean = (
                all(pl.name in fwk.capabilities.claims for pl in plugins["pre_bind"])
                and not plugins["post_bind"]
                and [pl.name for pl in plugins["bind"]] == [names.DEFAULT_BINDER]
                and self.extenders is None
            )
            self._lean_profiles[fwk.profile_name] = lean
        return lean

    def _propose_at_once(self, fwk: Framework, qp: QueuedPodInfo, assumed: api.Pod) -> bool:
        """The commit step's direct bind (:attr:`~kubesched.scheduler.commit.Commit.
        direct_bind`): a lean profile's Pod without claims is proposed without its binding
        cycle."""
        if not self._lean(fwk) or qp.pod.has_claims:
            return False
        self.propose(assumed, assumed.node_name)
        return True

    def propose(self, pod: api.Pod, node: str) -> None:
        """The binding cycle reached Bind: send the placement to the binder."""
        alts, local = self._decisions.pop(pod.key, ((), p.NOT_LOCAL))
        names = self.cluster.nodes.names
        alternatives = tuple(
            (names[r], self.seen.get(names[r], -1)) for r in alts if names[r] != node
        )
        self.results.append(
            p.Propose(pod.key, node, self.seen.get(node, -1), alternatives, local, p.group_of(pod))
        )
