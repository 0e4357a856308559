"""The conflict-checking binder: re-validates each shard's proposal on the authoritative state.

The binder runs in the coordinator on the coordinator's own cache (the authoritative one,
fed by the API server's watch) with the coordinator's own framework per profile.  For each
proposal ``(node, version, alternatives)``, in the order the shard sent them:

1. **Fast path** -- the node is as the shard saw it (its authoritative ``generation`` is
   the version the shard decided on, or every change since was a commit of that shard's
   own proposals, which its replica held), the Pod had no cross-node Filter to satisfy and
   no Pod's required anti-affinity can object (or all of it is by hostname and the node is
   alone in its hostname domain), nothing is nominated, and the profile's Filters are the
   node-local in-tree ones without Reserve / Permit plugins: the shard's verdict holds
   (:mod:`~kubesched.parallel.fastpath`).
2. **Cross-node check** -- only the cross-node condition fails: the node-local verdicts
   stand, and just PodTopologySpread and InterPodAffinity run (kept PreFilter state below).
3. **Full check** -- otherwise the profile's PreFilter plugins run on the authoritative state
   (or their result for the Pod's signature is reused, kept current from every change since
   by the plugins' PreFilterExtensions: :mod:`~kubesched.parallel.prefilter`)
   and its Filter plugins on that one node (with nominated Pods, as the serial scheduler):
   resources, host ports, pod count, taints and affinity, topology spread and inter-pod
   (anti-)affinity as they are *now*, quota, gang readiness.
4. The first candidate (proposal, then alternatives) that passes is committed exactly as
   the serial scheduler commits its choice: assume in the cache, Reserve, Permit (a gang
   member waits there for its siblings), then the binding cycle through the API server.
   A proposal whose node fails a cross-node Filter is retried once the rest of its reply is
   committed (its shard placed them counting each other) -- out of the shard's order, so
   without its own-commit chain; one no candidate passes is refused: the conflict is
   counted by its proposed node's reason, the shard forgets its assumed copy, and the Pod
   goes back to activeQ (after :data:`~.conflicts.FAST_RETRIES` conflicts, to backoff as an
   error).

Where binds complete at once (in-memory), runs of fast-path and checked proposals are
committed in bulk (:mod:`~kubesched.parallel.bulk`): the same decisions, one bind call.

Gangs are all-or-nothing: the members a shard proposed together are checked together (each
tentatively assumed so the next one sees it) and committed only if every member passes.
Preemption proposals are granted only while every victim is still on its node and no other
preemptor claimed it first; the binder then deletes the victims and nominates the Pod.
Whichever proposal the binder handles first wins a contested node, victim or slot.
"""

from __future__ import annotations

import time

import numpy as np

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework.interface import CycleState, preempt_pod
from kubesched.framework.runtime import Framework
from kubesched.parallel import protocol as p
from kubesched.parallel.bulk import BulkCommitter
from kubesched.parallel.conflicts import Outcomes
from kubesched.parallel.dispatcher import InFlight
from kubesched.parallel.fastpath import NO, FastPath
from kubesched.parallel.gangs import commit_unit
from kubesched.parallel.host import NAME, BinderHost, Choice
from kubesched.parallel.observe import BinderStats
from kubesched.parallel.prefilter import PreFilterCache
from kubesched.parallel.router import Router
from kubesched.queue.nominator import Nominator
from kubesched.state.cache import ClusterState

VICTIM_REASON = "preempted by the parallel binder"
REASONS = {
    names.NODE_RESOURCES_FIT: "resources",
    names.NODE_PORTS: "host_ports",
    names.POD_TOPOLOGY_SPREAD: "topology_spread",
    names.INTER_POD_AFFINITY: "pod_affinity",
    names.COSCHEDULING: "gang",
    names.CAPACITY_SCHEDULING: "quota",
    names.NODE_AFFINITY: "node_affinity",
    names.TAINT_TOLERATION: "taints",
    names.NODE_UNSCHEDULABLE: "node_unschedulable",
}
"""Conflict reason labels of the plugins that may refuse a proposal (others: the name in
lower case)."""


Deferred = list[tuple[p.Propose, InFlight]]
"""Proposals refused for a cross-node constraint, to retry after the rest of the reply."""


def reason_of(plugin: str) -> str:
    """Conflict reason label for the plugin that refused a proposal."""
    return REASONS.get(plugin, plugin.lower() or "unknown")


def cross_node_reasons(fwk: Framework) -> frozenset[str]:
    """Refusal reasons that other Pods of the same reply may lift (:meth:`Binder._retry`):
    those of the profile's plugins declaring
    :attr:`~kubesched.framework.contract.Locality.CROSS_NODE`."""
    return frozenset(reason_of(name) for name in fwk.capabilities.cross_node)


class Checker:
    """The binder's re-validation of proposals on the authoritative cache ``cluster`` (fast,
    cross-node and full checks, module docstring), with its queue's ``nominator``; shared by
    the live coordinator, whose proposals always take the full check."""

    def __init__(self, cluster: ClusterState, nominator: Nominator, shards: int) -> None:
        self.cluster = cluster
        self.fast = FastPath(cluster, nominator, shards)
        self.prefilter = PreFilterCache(cluster)

    def fast_ok(self, fwk: Framework) -> bool:
        """Whether the profile allows the fast path at all (:mod:`~.fastpath`)."""
        return self.fast.profile_ok(fwk)

    def choose(self, fwk: Framework, pod: api.Pod, res: p.Propose, shard: int = -1) -> Choice:
        """The first of the proposed node and its alternatives that passes on the
        authoritative state (``shard``: the proposer, for the own-commit chain)."""
        table = self.cluster.nodes
        fast = NO if pod.has_claims else self.fast.allowed(fwk, res.local)
        state: CycleState | None = None
        allowed: frozenset[str] | None = None
        first = ""
        for node, version in ((res.node, res.version), *res.alternatives):
            row = table.row_of.get(node)
            reason = ""
            if row is None:
                reason = "node_gone"
            elif self.fast.check(fast, shard, row, version):
                return Choice(node, CycleState(), "fast", first)
            else:
                if state is None:
                    state, pre, status = self.prefilter.pre_filter(fwk, pod)
                    if not status.is_success():
                        return Choice(None, state, "full", first or reason_of(status.plugin))
                    allowed = pre.node_names if pre is not None else None
                if allowed is not None and node not in allowed:
                    reason = "prefilter"
                else:
                    rows = np.asarray([row], dtype=np.int64)
                    if not pod.has_claims and self.fast.cross_only(fwk, shard, row, version):
                        plugin = self.fast.cross_filter(fwk, state, pod, rows)
                        if not plugin:
                            return Choice(node, state, "cross", first)
                        reason = reason_of(plugin)
                    else:
                        outcome = fwk.run_filter_with_nominated(state, pod, rows)
                        if outcome.feasible.size:
                            return Choice(node, state, "full", first)
                        reason = reason_of(outcome.status_of(0).plugin)
            first = first or reason
        return Choice(None, state or CycleState(), "full", first or "no_candidate")


class Binder:
    """See the module docstring; ``hub`` is the coordinator, ``router`` its auto routing's
    router (told of refusals), if any."""

    def __init__(self, hub: BinderHost, router: Router | None = None) -> None:
        self.hub = hub
        self.router = router
        self.stats = BinderStats()
        self.outcomes = Outcomes(hub, "binder", NAME, self._evict)
        """Refusals, failure reports and preemptions, decided as the live coordinator does."""
        self.checker = Checker(hub.cluster, hub.queue.nominator, hub.shard_count)
        self.fast = self.checker.fast
        self.prefilter = self.checker.prefilter
        self.refused: list[list[tuple[str, str]]] = [[] for _ in range(hub.shard_count)]
        """Per shard: ``(key, reason)`` of proposals to forget, sent with its next message."""
        self.bulk = BulkCommitter(self)

    # ------------------------------------------------------------------ one reply
    def process(self, shard: int, results: list[p.Result]) -> None:
        """Handle a shard's results in order; gang members proposed together as one unit;
        runs of fast-path proposals committed in bulk where the API allows it; proposals
        refused for a cross-node constraint retried once the rest of the reply is in."""
        units: dict[str, list[p.Propose]] = {}
        for res in results:
            if isinstance(res, p.Propose) and res.group:
                units.setdefault(res.group, []).append(res)
        done: set[str] = set()
        bulk = self.bulk if self.bulk.enabled() else None
        deferred: Deferred = []
        for res in results:
            if bulk is not None and isinstance(res, p.Propose) and not res.group:
                rec = self.take(shard, res)
                if rec is None:
                    continue
                fwk = self.hub.profiles[rec.qp.pod.scheduler_name]
                if bulk.offer(shard, res, rec, fwk):
                    continue
                bulk.settle()
                self._decide(shard, res, rec, deferred, bulk=bulk)
                continue
            if bulk is not None:
                bulk.flush()
            if isinstance(res, p.Failed):
                self._failed(shard, res)
            elif not res.group:
                rec = self.take(shard, res)
                if rec is not None:
                    self._decide(shard, res, rec, deferred)
            elif res.group not in done:
                done.add(res.group)
                taken = [(r, self.take(shard, r)) for r in units[res.group]]
                commit_unit(self, res.group, [(r, rec) for r, rec in taken if rec is not None])
        if bulk is not None:
            bulk.settle()
        self._retry(shard, deferred, bulk)
        if bulk is not None:
            bulk.flush()

    def _retry(self, shard: int, deferred: Deferred, bulk: BulkCommitter | None) -> None:
        """Decide deferred proposals again while some pass (the shard placed them counting
        each other: one refused early in a reply may fit after the rest); then the rest --
        out of the shard's order, so without its own-commit chain (``in_order=False``)."""
        progress = True
        while deferred and progress:
            progress = False
            for item in list(deferred):
                res, rec = item
                if self._decide(shard, res, rec, retry=True, bulk=bulk, in_order=False):
                    deferred.remove(item)
                    progress = True
        for res, rec in deferred:
            self._decide(shard, res, rec, bulk=bulk, in_order=False)

    def take(self, shard: int, res: p.Result) -> InFlight | None:
        proposal = isinstance(res, p.Propose)
        rec = self.hub.dispatcher.close(res.key, shard)
        if rec is None and proposal:
            self.refused[shard].append((res.key, "stale"))
        if rec is not None:
            if proposal:
                self.stats.proposals[shard] += 1
            self.hub.pod_attempts[res.key] += 1
        return rec

    def _decide(
        self,
        shard: int,
        res: p.Propose,
        rec: InFlight,
        deferred: Deferred | None = None,
        retry: bool = False,
        bulk: BulkCommitter | None = None,
        in_order: bool = True,
    ) -> bool:
        """Commit the proposal on its node or an alternative, else refuse it -- or, when
        its node failed a cross-node Filter and ``deferred`` is given, keep it for
        :meth:`_retry` (``retry``: only commit on the proposed node, refuse nothing).
        With ``bulk``, a commit that is only the bind joins its run.  ``in_order``: none the
        shard decided after it is committed yet, so its own-commit chain applies."""
        t0 = time.perf_counter()
        fwk = self.hub.profiles[rec.qp.pod.scheduler_name]
        choice = self.choose(fwk, rec.qp.pod, res, shard if in_order else -1)
        if retry and choice.node != res.node:
            self.stats.seconds += time.perf_counter() - t0
            return False
        if (
            choice.node != res.node
            and deferred is not None
            and choice.reason in cross_node_reasons(fwk)
        ):
            deferred.append((res, rec))
            self.stats.seconds += time.perf_counter() - t0
            return False
        if choice.node is None:
            self.conflict(shard, rec, choice.reason)
        else:
            self.counted(shard, res, choice)
            if bulk is None or not bulk.add_checked(shard, res, rec, fwk, choice.node):
                row = self.hub.cluster.nodes.row_of[choice.node]
                base = self.fast.base(shard, row)
                ok = self.commit(fwk, rec, choice.node, choice.state, shard)
                if ok and choice.node == res.node:  # the replica holds it there
                    self.fast.committed(shard, row, base)
        self.timed(t0, choice.path if choice.node is not None else "refused")
        return choice.node is not None

    def timed(self, t0: float, path: str) -> None:
        dt = time.perf_counter() - t0
        self.stats.seconds += dt
        self.hub.parallel_metrics.binder_seconds(path, dt)

    def counted(self, shard: int, res: p.Propose, choice: Choice) -> None:
        if self.outcomes.committed(shard, res.key, res.node, choice) == "alternative":
            self.stats.conflicts[choice.reason] += 1
            self.stats.committed["alternative"] += 1
        else:
            self.stats.committed[choice.path] += 1

    def settled(self, key: str) -> None:
        """``key`` was committed: its refusals in a row start over."""
        self.outcomes.retries.settled(key)

    # ------------------------------------------------------------------ validation
    def fast_ok(self, fwk: Framework) -> bool:
        """Whether the profile allows the fast path at all (:mod:`~.fastpath`)."""
        return self.checker.fast_ok(fwk)

    def choose(self, fwk: Framework, pod: api.Pod, res: p.Propose, shard: int = -1) -> Choice:
        """The first of the proposed node and its alternatives that passes on the
        authoritative state (``shard``: the proposer, for the own-commit chain)."""
        return self.checker.choose(fwk, pod, res, shard)

    # ------------------------------------------------------------------ commit
    def commit(
        self, fwk: Framework, rec: InFlight, node: str, state: CycleState, shard: int
    ) -> bool:
        """Assume, Reserve, Permit and bind through the serial scheduler's commit step
        (:class:`~kubesched.scheduler.commit.Commit`), the commit stream told once Permit
        passed; a rejection is undone there and refused to the shard here."""
        hub, qp = self.hub, rec.qp
        assumed = hub.committer.assume(qp.pod, node)
        rejected = hub.committer.commit(
            fwk,
            state,
            qp,
            assumed,
            rec.start,
            rec.cycle,
            committing=lambda: hub.committing(assumed.key, shard, rec.sent),
        )
        if rejected is not None:
            self.refused[shard].append((qp.pod.key, rejected.message()))
            return False
        hub.committed(assumed.key)
        return True

    # ------------------------------------------------------------------ refusals, failures
    def conflict(self, shard: int, rec: InFlight, reason: str) -> None:
        """Refuse a proposal: count it, tell the shard, send the Pod back to the queue."""
        key = rec.qp.pod.key
        if self.router is not None and rec.sig is not None:
            self.router.answered(rec.sig, refused=True)
        self.stats.conflicts[reason] += 1
        self.refused[shard].append((key, reason))
        if self.outcomes.refused(rec, reason):
            self.stats.retries["conflict"] += 1

    # ------------------------------------------------------------------ GangDecisions
    def check(self, fwk: Framework, rec: InFlight, res: p.Propose) -> Choice:
        """A gang member's proposal re-validated (out of the shard's order)."""
        return self.choose(fwk, rec.qp.pod, res)

    def accept(self, fwk: Framework, rec: InFlight, res: p.Propose, choice: Choice) -> None:
        """Count and commit a gang member that passed."""
        self.counted(rec.shard, res, choice)
        self.commit(fwk, rec, str(choice.node), choice.state, rec.shard)

    def refuse(self, rec: InFlight, reason: str) -> None:
        """Refuse a gang member (:meth:`conflict`)."""
        self.conflict(rec.shard, rec, reason)

    def tentative(self, nodes: list[str]) -> None:
        """Stream the generations of ``nodes``, which the gang's check assumed on and
        released (``Generations``), for the shards' versions."""
        hub = self.hub
        table = hub.cluster.nodes
        hub.log_entry(p.Generations({n: int(table.generation[table.row_of[n]]) for n in nodes}))

    def _failed(self, shard: int, res: p.Failed) -> None:
        rec = self.take(shard, res)
        if rec is None:
            return
        why = self.outcomes.failed(rec, res)
        if why:  # the preemption it carries is refused
            self.conflict(shard, rec, why)

    def _evict(self, victim: api.Pod, preemptor: api.Pod, node: str) -> str:
        """Evict a granted preemption's victim through the API client (one held at Permit is
        rejected there instead: :func:`~kubesched.framework.interface.preempt_pod`)."""
        hub = self.hub
        if victim.deletion_timestamp is None and hub.api is not None:
            preempt_pod(
                hub.api, victim, preemptor, node, VICTIM_REASON, waiting=hub.handle, plugin=NAME
            )
        return ""

    def forget_victim(self, key: str) -> None:
        """A victim is gone for good."""
        self.outcomes.forget_victim(key)
