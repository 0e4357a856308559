"""The live coordinator's decisions on shard answers: the binder's, over a live transport.

:class:`Decisions` is a part the live
:class:`~kubesched.live.coordinator.CoordinatorScheduler` holds (not a base class of it).
Each answer a shard wrote on its Pod (:class:`~kubesched.live.sharding.Proposal`) is read
back as the in-process shard's message (:meth:`~kubesched.live.sharding.Proposal.result`),
re-validated with the binder's :class:`~kubesched.parallel.binder.Checker` on the
authoritative cache (always its full check: see the coordinator's docstring) and decided by
the binder's own :class:`~kubesched.parallel.conflicts.Outcomes`, over the coordinator as
its :class:`~kubesched.parallel.host.OutcomeHost`: committed through the serial scheduler's
commit step (:mod:`kubesched.scheduler.commit`), or refused and handed out again (or backed
off), or failed as the serial scheduler would after granting the preemption it carries if
every victim is still there and unclaimed.  A gang's members handed to one shard are
decided together once all have answered, by the binder's own
:func:`~kubesched.parallel.gangs.commit_unit` (each failure report on its own, the
proposals all or nothing), :class:`Decisions` being its
:class:`~kubesched.parallel.gangs.GangDecisions`.

What is live-only stays here: how a shard hears of a refusal (the Pod's annotations), how a
victim is evicted (an API call that may fail, which refuses the preemption), and the count
of failed binds.  Every hand-out record (the dispatcher's
:class:`~kubesched.parallel.dispatcher.InFlight`) is closed exactly once, here or by the
coordinator.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

from kubesched.api import objects as api
from kubesched.framework.runtime import Framework
from kubesched.live import sharding as sh
from kubesched.live.binder import LiveApi
from kubesched.live.client import ApiError, KubeClient
from kubesched.parallel import protocol as p
from kubesched.parallel.binder import Checker
from kubesched.parallel.conflicts import Outcomes
from kubesched.parallel.dispatcher import InFlight
from kubesched.parallel.gangs import commit_unit
from kubesched.parallel.host import Choice, OutcomeHost

log = logging.getLogger(__name__)

NAME = "ShardCoordinator"
VICTIM_REASON = "preempted by the shard coordinator"


class Decisions:
    """Decisions on the answers to the hand-outs in ``flights`` (see the module docstring).

    ``host`` is the coordinator; ``checker`` its binder's checks; ``client`` writes the
    refusals on the Pods and ``live_api`` evicts victims; ``answers``: the shard's answer
    that arrived for each hand-out; ``close`` closes a hand-out record (the coordinator's,
    dropping its answer); ``stats`` counts ``committed``, ``alternative``,
    ``refused:<reason>``, ``failed``, ``node_changed`` and ``bind_failed``."""

    def __init__(
        self,
        host: OutcomeHost,
        checker: Checker,
        *,
        client: KubeClient,
        live_api: LiveApi,
        flights: dict[str, InFlight],
        answers: dict[str, sh.Proposal],
        close: Callable[[str], InFlight | None],
        stats: Counter[str],
    ) -> None:
        self.host = host
        self.checker = checker
        self.client = client
        self.live_api = live_api
        self.flights = flights
        self.answers = answers
        self.close = close
        self.stats = stats
        self.outcomes = Outcomes(host, "coordinator", NAME, self._evict)
        """Refusals, failure reports and preemptions, decided as the binder decides them."""

    def decide(self, keys: list[str]) -> bool:
        """Decide the answers that arrived for ``keys`` (a gang's once all its members handed
        to that shard have answered); whether any was decided."""
        done: set[str] = set()
        for key in keys:
            f = self.flights.get(key)
            if f is None or key not in self.answers or key in done:
                continue
            if not f.group:
                done.add(key)
                self._single(f)
                continue
            unit = [g for g in self.flights.values() if (g.group, g.shard) == (f.group, f.shard)]
            if all(g.qp.pod.key in self.answers for g in unit):  # else wait for the others
                done.update(g.qp.pod.key for g in unit)
                self._unit(unit)
        return bool(done)

    def forget(self, key: str) -> None:
        """Pod ``key`` is gone: its refusals in a row and its claim as a victim with it."""
        self.outcomes.retries.settled(key)
        self.outcomes.forget_victim(key)

    def _take(self, f: InFlight) -> p.Result:
        """Close ``f``'s hand-out record; the answer that arrived for it, as the in-process
        shard's message (a proposal whose node's ``resourceVersion`` moved since the shard
        decided counts as ``node_changed``)."""
        key = f.qp.pod.key
        prop = self.answers[key]
        self.close(key)
        if not prop.failed:
            node = self.host.cluster.node(prop.node)
            if node is not None and _rv(node.raw) != prop.resource_version:
                self.stats["node_changed"] += 1
        return prop.result(key, f.group)

    def _single(self, f: InFlight) -> None:
        res = self._take(f)
        if isinstance(res, p.Failed):
            self._failed(f, res)
            return
        t0 = time.perf_counter()
        fwk = self.host.profiles[f.qp.pod.scheduler_name]
        choice = self.check(fwk, f, res)
        if choice.node is None:
            self.refuse(f, choice.reason)
        else:
            self.accept(fwk, f, res, choice)
        path = "refused" if choice.node is None else "full"
        self.timed(t0, path)

    def _unit(self, unit: list[InFlight]) -> None:
        """A gang's members handed to one shard, all answered: decided as the binder decides
        a reply's gang members (:func:`~kubesched.parallel.gangs.commit_unit`): each failure
        report on its own, the proposals all or nothing."""
        answers = [(f, self._take(f)) for f in unit]
        proposed: list[tuple[p.Propose, InFlight]] = []
        for f, res in answers:
            if isinstance(res, p.Failed):
                self._failed(f, res)
            else:
                proposed.append((res, f))
        if proposed:
            commit_unit(self, unit[0].group, proposed)

    # ------------------------------------------------------------------ GangDecisions
    def check(self, fwk: Framework, rec: InFlight, res: p.Propose) -> Choice:
        """Re-validate a proposal with the binder's full check."""
        return self.checker.choose(fwk, rec.qp.pod, res)

    def accept(self, fwk: Framework, rec: InFlight, res: p.Propose, choice: Choice) -> None:
        """Assume, Reserve, Permit and bind, as the serial scheduler after choosing."""
        result = self.outcomes.committed(rec.shard, rec.qp.pod.key, res.node, choice)
        self.stats[result] += 1
        committer = self.host.committer
        assumed = committer.assume(rec.qp.pod, str(choice.node))
        committer.commit(fwk, choice.state, rec.qp, assumed, rec.start, rec.cycle)

    def tentative(self, nodes: list[str]) -> None:
        """Nothing to tell: live shards read node changes from their own informers."""

    def timed(self, t0: float, path: str) -> None:
        """One decision by ``path`` took ``time.perf_counter() - t0``."""
        self.host.parallel_metrics.binder_seconds(path, time.perf_counter() - t0)

    def counting_bind_errors(self, binding_cycle: Callable[[], None]) -> Callable[[], None]:
        """``binding_cycle`` (run straight after Permit, or once a Pod held there is
        allowed), counting its failed bind: one the API server refused with 409 (the Pod was
        bound or re-created meanwhile) is a conflict.  Either way a failed bind has requeued
        the Pod (backoff), and it is handed out again as a new attempt."""

        def counted() -> None:
            self.live_api.take_bind_error()
            binding_cycle()
            err = self.live_api.take_bind_error()
            if err is None:
                return
            self.stats["bind_failed"] += 1
            if isinstance(err, ApiError) and err.code == 409:
                self.stats["refused:bind_conflict"] += 1
                self.host.parallel_metrics.conflict("bind_conflict")

        return counted

    def refuse(self, f: InFlight, reason: str) -> None:
        """Clear the hand-out, record why, hand the Pod out again (or back off)."""
        pod = f.qp.pod
        self.stats[f"refused:{reason}"] += 1
        marks: dict[str, str | None] = {sh.SHARD: None, sh.PROPOSAL: None, sh.REFUSED: reason}
        try:
            sh.annotate(self.client, pod.namespace, pod.name, marks)
        except ApiError as e:
            if e.code != 404:
                log.warning("could not record the refusal of %s: %s", pod.key, e)
        self.outcomes.refused(f, reason)

    def _failed(self, f: InFlight, res: p.Failed) -> None:
        self.stats["failed"] += 1
        why = self.outcomes.failed(f, res)
        if why:  # the preemption it carries is refused
            self.refuse(f, why)

    def _evict(self, victim: api.Pod, preemptor: api.Pod, node: str) -> str:
        """Evict a granted preemption's victim: '' once done, else why the preemption is
        refused.  A victim held at Permit is rejected there, not deleted (upstream
        ``prepareCandidate``)."""
        held = self.host.handle.get_waiting_pod(victim.key)
        if held is not None:
            held.reject(NAME, "preempted")
            return ""
        if victim.deletion_timestamp is None:
            try:
                self.live_api.preempt_pod(victim, preemptor, node, VICTIM_REASON)
            except ApiError as e:
                log.warning("could not delete victim %s: %s", victim.key, e)
                return "victim_delete_failed"
        return ""


def _rv(raw: dict[str, object]) -> str:
    meta = raw.get("metadata")
    return str(meta.get("resourceVersion", "")) if isinstance(meta, dict) else ""
