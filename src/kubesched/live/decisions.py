"""The coordinator's decisions on shard answers (part of
:class:`~kubesched.live.coordinator.CoordinatorScheduler`).

A proposal is re-validated with :meth:`kubesched.parallel.binder.Checker.choose` on the
authoritative cache (always its full check: see the coordinator's docstring) and committed
through the serial scheduler's own commit step (:mod:`kubesched.scheduler.commit`), or
refused; a gang's members are decided together; a failure report fails the Pod as the
serial scheduler would, after granting the preemption it carries if every victim is still
there and unclaimed.  Every hand-out record (:class:`Flight`) is closed exactly once, here
or by the coordinator.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from kubesched.framework.interface import QueuedPodInfo
from kubesched.framework.outcomes import PostFilterResult
from kubesched.framework.runtime import Framework
from kubesched.live import sharding as sh
from kubesched.live.binder import LiveApi
from kubesched.live.client import ApiError, KubeClient
from kubesched.parallel import protocol as p
from kubesched.parallel.binder import Checker
from kubesched.parallel.conflicts import (
    Retries,
    check_together,
    reject_waiting_members,
    reported,
    victims_of,
)
from kubesched.parallel.host import Choice
from kubesched.parallel.observe import ParallelMetrics
from kubesched.scheduler import Diagnosis, Scheduler

log = logging.getLogger(__name__)

NAME = "ShardCoordinator"


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


class Decisions(Scheduler):
    """Decisions on answers; the state is the coordinator's (set in its ``__init__``)."""

    client: KubeClient
    live_api: LiveApi
    checker: Checker
    parallel_metrics: ParallelMetrics
    flights: dict[str, Flight]
    load: list[int]
    group_shard: dict[str, int]
    ready: list[str]
    claimed: dict[str, str]
    retries: Retries
    stats: Counter[str]

    # ------------------------------------------------------------------ decisions
    def _decide(self) -> bool:
        keys, self.ready = self.ready, []
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

    def _choose(self, fwk: Framework, f: Flight) -> Choice:
        prop = f.proposal
        assert prop is not None
        node = self.cluster.node(prop.node)
        if node is not None and _rv(node.raw) != prop.resource_version:
            self.stats["node_changed"] += 1
        alts = tuple((n, -1) for n, _ in prop.alternatives)
        res = p.Propose(f.qp.pod.key, prop.node, -1, alts, p.NOT_LOCAL, f.group)
        return self.checker.choose(fwk, f.qp.pod, res)

    def _single(self, f: Flight) -> None:
        self._close(f.qp.pod.key)
        assert f.proposal is not None
        if f.proposal.failed:
            self._failed(f, f.proposal)
            return
        t0 = time.perf_counter()
        fwk = self.profiles[f.qp.pod.scheduler_name]
        choice = self._choose(fwk, f)
        if choice.node is None:
            self._refuse(f, choice.reason)
        else:
            self._commit(fwk, f, choice)
        path = "refused" if choice.node is None else "full"
        self.parallel_metrics.binder_seconds(path, time.perf_counter() - t0)

    def _unit(self, unit: list[Flight]) -> None:
        for f in unit:
            self._close(f.qp.pod.key)
        if any(f.proposal is not None and f.proposal.failed for f in unit):
            for f in unit:
                assert f.proposal is not None
                if f.proposal.failed:
                    self._failed(f, f.proposal)
                else:
                    self._refuse(f, "gang_member_failed")
            return
        t0 = time.perf_counter()
        fwks = [self.profiles[f.qp.pod.scheduler_name] for f in unit]
        chosen, refusal = check_together(
            self.cluster,
            ((f.qp.pod, partial(self._choose, fwk, f)) for f, fwk in zip(unit, fwks, strict=True)),
        )
        if refusal is not None:
            refused = refusal.reason or "unknown"
            group = unit[0].group
            message = f"gang {group}: a member was refused ({refused})"
            reject_waiting_members(self.handle, group, NAME, message)
            self.committer.drain_waiting()
            for f in unit:
                self._refuse(f, "gang_" + refused)
            self.parallel_metrics.binder_seconds("refused", time.perf_counter() - t0)
            return
        for f, fwk, choice in zip(unit, fwks, chosen, strict=True):
            self._commit(fwk, f, choice)
        self.parallel_metrics.binder_seconds("gang", time.perf_counter() - t0)

    def _commit(self, fwk: Framework, f: Flight, choice: Choice) -> None:
        """Assume, Reserve, Permit and bind, as the serial scheduler after choosing."""
        node = str(choice.node)
        assert f.proposal is not None
        result = "committed" if node == f.proposal.node else "alternative"
        self.stats[result] += 1
        self.parallel_metrics.result(f.shard, result)
        if result == "alternative":
            self.parallel_metrics.conflict(choice.reason)
        self.retries.settled(f.qp.pod.key)
        assumed = self.committer.assume(f.qp.pod, node)
        self.committer.commit(fwk, choice.state, f.qp, assumed, f.start, f.cycle)

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
                self.parallel_metrics.conflict("bind_conflict")

        return counted

    def _refuse(self, f: Flight, reason: str) -> None:
        """Clear the hand-out, record why, hand the Pod out again (or back off)."""
        pod = f.qp.pod
        self.stats[f"refused:{reason}"] += 1
        self.parallel_metrics.conflict(reason)
        self.parallel_metrics.result(f.shard, "refused")
        marks: dict[str, str | None] = {sh.SHARD: None, sh.PROPOSAL: None, sh.REFUSED: reason}
        try:
            sh.annotate(self.client, pod.namespace, pod.name, marks)
        except ApiError as e:
            if e.code != 404:
                log.warning("could not record the refusal of %s: %s", pod.key, e)
        if self.retries.again(pod.key):
            self._requeue_now(f, "conflict")
            return
        fwk = self.profiles[pod.scheduler_name]
        status = Retries.gave_up("coordinator", reason, NAME)
        self.failing.fail(fwk, f.qp, status, f.cycle, f.start)

    def _failed(self, f: Flight, prop: sh.Proposal) -> None:
        self.stats["failed"] += 1
        qp = f.qp
        fwk = self.profiles[qp.pod.scheduler_name]
        if prop.nominated and prop.victims:
            why = self._preempt(f, prop)
            if why:
                self._refuse(f, why)
                return
        qp.pending_plugins = set(prop.pending)
        failure = reported(prop.failed, prop.message, prop.plugins, len(self.cluster.nodes))
        unschedulable = isinstance(failure, Diagnosis)
        self.parallel_metrics.result(f.shard, "unschedulable" if unschedulable else "error")
        self.failing.fail(fwk, qp, failure, f.cycle, f.start)

    def _preempt(self, f: Flight, prop: sh.Proposal) -> str:
        """Grant a preemption while every victim is there and unclaimed; '' when granted."""
        key = f.qp.pod.key
        victims, why = victims_of(self.cluster, self.claimed, key, prop.nominated, prop.victims)
        if why:
            return why
        for victim in victims:
            self.claimed[victim.key] = key
            held = self.handle.get_waiting_pod(victim.key)
            if held is not None:  # upstream prepareCandidate: a victim held at Permit is
                held.reject(NAME, "preempted")  # rejected, not deleted
                continue
            if victim.deletion_timestamp is None:
                try:
                    self.live_api.preempt_pod(
                        victim, f.qp.pod, prop.nominated, "preempted by the shard coordinator"
                    )
                except ApiError as e:
                    log.warning("could not delete victim %s: %s", victim.key, e)
                    return "victim_delete_failed"
        self.metrics.record_preemption(len(victims))
        self.failing.nominate(f.qp, PostFilterResult(prop.nominated, tuple(victims)))
        return ""

    def _close(self, key: str) -> Flight | None:
        f = self.flights.pop(key, None)
        if f is None:
            return None
        self.load[f.shard] -= 1
        if f.group and not any(g.group == f.group for g in self.flights.values()):
            self.group_shard.pop(f.group, None)
        return f

    def _requeue_now(self, f: Flight, reason: str) -> None:
        """Back to activeQ at once: the Pod did not fail on its own."""
        self.queue.requeue_at_once(f.qp)
        self.stats[f"requeued:{reason}"] += 1
        self.parallel_metrics.retry(reason)


def _rv(raw: dict[str, object]) -> str:
    meta = raw.get("metadata")
    return str(meta.get("resourceVersion", "")) if isinstance(meta, dict) else ""
