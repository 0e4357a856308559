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
decided together once all have answered.

What is live-only stays here: how a shard hears of a refusal (the Pod's annotations), how a
victim is evicted (an API call that may fail, which refuses the preemption), and the count
of failed binds.  Every hand-out record (:class:`Flight`) is closed exactly once, here or by
the coordinator.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from kubesched.api import objects as api
from kubesched.framework.interface import QueuedPodInfo
from kubesched.framework.runtime import Framework
from kubesched.live import sharding as sh
from kubesched.live.binder import LiveApi
from kubesched.live.client import ApiError, KubeClient
from kubesched.parallel import protocol as p
from kubesched.parallel.binder import Checker
from kubesched.parallel.conflicts import Outcomes, check_together
from kubesched.parallel.host import Choice, OutcomeHost

log = logging.getLogger(__name__)

NAME = "ShardCoordinator"
VICTIM_REASON = "preempted by the shard coordinator"


@dataclass(slots=True)
class Flight:
    """A Pod handed to a shard and not decided yet."""

    qp: QueuedPodInfo
    shard: int
    attempt: int
    cycle: int
    start: float
    """``time.perf_counter()`` at hand-out (attempt durations count from here)."""
    handed_at: float
    group: str
    proposal: sh.Proposal | None = None


class Decisions:
    """Decisions on the answers to the hand-outs in ``flights`` (see the module docstring).

    ``host`` is the coordinator; ``checker`` its binder's checks; ``client`` writes the
    refusals on the Pods and ``live_api`` evicts victims; ``close`` closes a hand-out record
    (the coordinator's); ``stats`` counts ``committed``, ``alternative``,
    ``refused:<reason>``, ``failed``, ``node_changed`` and ``bind_failed``."""

    def __init__(
        self,
        host: OutcomeHost,
        checker: Checker,
        *,
        client: KubeClient,
        live_api: LiveApi,
        flights: dict[str, Flight],
        close: Callable[[str], Flight | None],
        stats: Counter[str],
    ) -> None:
        self.host = host
        self.checker = checker
        self.client = client
        self.live_api = live_api
        self.flights = flights
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
            if f is None or f.proposal is None or key in done:
                continue
            if not f.group:
                done.add(key)
                self._single(f)
                continue
            unit = [g for g in self.flights.values() if (g.group, g.shard) == (f.group, f.shard)]
            if all(g.proposal is not None for g in unit):  # else wait for the others
                done.update(g.qp.pod.key for g in unit)
                self._unit(unit)
        return bool(done)

    def forget(self, key: str) -> None:
        """Pod ``key`` is gone: its refusals in a row and its claim as a victim with it."""
        self.outcomes.retries.settled(key)
        self.outcomes.forget_victim(key)

    def _choose(self, fwk: Framework, f: Flight) -> Choice:
        prop = f.proposal
        assert prop is not None
        node = self.host.cluster.node(prop.node)
        if node is not None and _rv(node.raw) != prop.resource_version:
            self.stats["node_changed"] += 1
        res = prop.result(f.qp.pod.key, f.group)
        assert isinstance(res, p.Propose)
        return self.checker.choose(fwk, f.qp.pod, res)

    def _single(self, f: Flight) -> None:
        self.close(f.qp.pod.key)
        assert f.proposal is not None
        if f.proposal.failed:
            self._failed(f, f.proposal)
            return
        t0 = time.perf_counter()
        fwk = self.host.profiles[f.qp.pod.scheduler_name]
        choice = self._choose(fwk, f)
        if choice.node is None:
            self._refuse(f, choice.reason)
        else:
            self._commit(fwk, f, choice)
        path = "refused" if choice.node is None else "full"
        self.host.parallel_metrics.binder_seconds(path, time.perf_counter() - t0)

    def _unit(self, unit: list[Flight]) -> None:
        for f in unit:
            self.close(f.qp.pod.key)
        if any(f.proposal is not None and f.proposal.failed for f in unit):
            for f in unit:
                assert f.proposal is not None
                if f.proposal.failed:
                    self._failed(f, f.proposal)
                else:
                    self._refuse(f, "gang_member_failed")
            return
        t0 = time.perf_counter()
        fwks = [self.host.profiles[f.qp.pod.scheduler_name] for f in unit]
        chosen, refusal = check_together(
            self.host.cluster,
            ((f.qp.pod, partial(self._choose, fwk, f)) for f, fwk in zip(unit, fwks, strict=True)),
        )
        if refusal is not None:
            refused = refusal.reason or "unknown"
            group = unit[0].group
            self.outcomes.gang_refused(group, f"gang {group}: a member was refused ({refused})")
            for f in unit:
                self._refuse(f, "gang_" + refused)
            self.host.parallel_metrics.binder_seconds("refused", time.perf_counter() - t0)
            return
        for f, fwk, choice in zip(unit, fwks, chosen, strict=True):
            self._commit(fwk, f, choice)
        self.host.parallel_metrics.binder_seconds("gang", time.perf_counter() - t0)

    def _commit(self, fwk: Framework, f: Flight, choice: Choice) -> None:
        """Assume, Reserve, Permit and bind, as the serial scheduler after choosing."""
        assert f.proposal is not None
        result = self.outcomes.committed(f.shard, f.qp.pod.key, f.proposal.node, choice)
        self.stats[result] += 1
        committer = self.host.committer
        assumed = committer.assume(f.qp.pod, str(choice.node))
        committer.commit(fwk, choice.state, f.qp, assumed, f.start, f.cycle)

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

    def _refuse(self, f: Flight, reason: str) -> None:
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

    def _failed(self, f: Flight, prop: sh.Proposal) -> None:
        self.stats["failed"] += 1
        res = prop.result(f.qp.pod.key, f.group)
        assert isinstance(res, p.Failed)
        why = self.outcomes.failed(f, res)
        if why:  # the preemption it carries is refused
            self._refuse(f, why)

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
