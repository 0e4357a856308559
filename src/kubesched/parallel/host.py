"""The binder's contracts: what it needs of its coordinator, and what its helpers need of it.

The shared-pool binder (:mod:`~kubesched.parallel.binder`) and its helpers (the bulk commit,
:mod:`~kubesched.parallel.bulk`; the gang commit, :mod:`~kubesched.parallel.gangs`) depend
on these Protocols, not on the classes that implement them, so ``parallel/`` imports as a
tree:

- :class:`OutcomeHost`: what the decisions both coordinators share
  (:class:`~kubesched.parallel.conflicts.Outcomes`: refusals, failure reports, preemptions)
  need of the coordinator -- implemented by the in-process coordinator and by the live one
  (:class:`~kubesched.live.coordinator.CoordinatorScheduler`) alike; :class:`Handed`: the
  record of a Pod handed to a shard, as those decisions read it;
- :class:`BinderHost`: what the binder reads and calls on the coordinator it runs in
  (:class:`~kubesched.parallel.coordinator.ParallelScheduler`): the authoritative cache,
  queue and profiles, the dispatcher's records, the commit stream, and the serial
  scheduler's commit step and failure handling (its parts
  :class:`~kubesched.scheduler.commit.Commit` and
  :class:`~kubesched.scheduler.failures.Failures`);
- :class:`BinderCore`: what the bulk commit calls on the binder (the gang commit's
  contract is :class:`~kubesched.parallel.gangs.GangDecisions`, which the live decisions
  implement too);
- :class:`Choice`: where a re-validated proposal can be committed;
- :class:`BulkBinds`: an API client that can bind a batch in one call (the bulk commit's).

The checks alone (:class:`~kubesched.parallel.binder.Checker`) need only the cache and the
nominator, which is how the live coordinator shares them with the binder.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kubesched.api.objects import Pod
from kubesched.framework.interface import ApiClient, CycleState, Handle, QueuedPodInfo
from kubesched.framework.runtime import Framework
from kubesched.metrics import SchedulerMetrics
from kubesched.parallel import protocol as p
from kubesched.parallel.dispatcher import Dispatcher, InFlight
from kubesched.parallel.fastpath import FastPath
from kubesched.parallel.observe import BinderStats, ParallelMetrics
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.commit import Commit
from kubesched.scheduler.extenders import Extenders
from kubesched.scheduler.failures import Failures
from kubesched.state.cache import ClusterState

NAME = "ParallelBinder"
"""The binder's name in statuses and events."""


@dataclass(slots=True)
class Choice:
    """Where a proposal can be committed (``node`` None: nowhere; ``reason`` says why)."""

    node: str | None
    state: CycleState
    path: str = "full"
    reason: str = ""


@runtime_checkable
class BulkBinds(Protocol):
    """An API client whose binds may complete at once (the benchmark's in-memory API server),
    so the bulk commit (:mod:`~kubesched.parallel.bulk`) binds a run of proposals in one call.

    Invariant: while :attr:`bulk_binds` is true, ``bind_many(pairs)`` binds each ``(pod,
    node)`` in order with the checks ``bind`` makes, returns one error (or None) per pair, and
    every bind it made is complete when it returns; the binder calls it only then.
    """

    @property
    def bulk_binds(self) -> bool:
        """Whether :meth:`bind_many` may be used now (binds complete at once)."""
        ...

    def bind_many(self, pairs: list[tuple[Pod, str]]) -> Sequence[Exception | None]:
        """Bind every pair; the error of each (None: bound)."""
        ...


class Handed(Protocol):
    """A Pod handed to a shard and not decided yet, as the shared decisions read it (the
    in-process dispatcher's :class:`~kubesched.parallel.dispatcher.InFlight`, the live
    coordinator's :class:`~kubesched.live.decisions.Flight`)."""

    qp: QueuedPodInfo
    shard: int
    cycle: int
    """The queue's scheduling cycle when it was handed out."""
    start: float
    """``time.perf_counter()`` its attempt's duration counts from."""


class OutcomeHost(Protocol):
    """What the decisions both coordinators share (:class:`~.conflicts.Outcomes`) need of
    the coordinator: a :class:`~kubesched.scheduler.Scheduler`'s cache, profiles, Permit
    waits, metrics and failure handling, the sharded metrics, and a way to send a handed-out
    Pod straight back to activeQ."""

    cluster: ClusterState
    profiles: dict[str, Framework]
    handle: Handle
    metrics: SchedulerMetrics
    parallel_metrics: ParallelMetrics
    committer: Commit
    failing: Failures

    def requeue_now(self, rec: Handed, reason: str) -> None:
        """Send a handed-out Pod straight back to activeQ (it did not fail on its own)."""


class BinderHost(OutcomeHost, Protocol):
    """What the binder needs of its coordinator (a :class:`~kubesched.scheduler.Scheduler`
    with a dispatcher and a commit stream)."""

    queue: SchedulingQueue
    api: ApiClient | None
    extenders: Extenders | None
    clock: Callable[[], float]
    pod_attempts: Counter[str]
    shard_count: int
    dispatcher: Dispatcher

    # the commit stream
    def committing(self, key: str, shard: int, sent: Pod) -> None:
        """``key``, proposed by ``shard`` (``sent``: the Pod as handed out), is being bound."""

    def committed(self, key: str) -> None:
        """The commit of ``key`` is made (its bind may still be in flight)."""

    def forget_proposal(self, key: str) -> None:
        """The bind of ``key`` failed before anything was streamed."""

    def log_entry(self, entry: p.Entry) -> None:
        """Append to the commit stream every shard reads."""


class BinderCore(Protocol):
    """What the bulk commit needs of the binder."""

    hub: BinderHost
    fast: FastPath
    stats: BinderStats
    refused: list[list[tuple[str, str]]]
    """Per shard: ``(key, reason)`` of proposals to forget, sent with its next message."""

    def fast_ok(self, fwk: Framework) -> bool:
        """Whether the profile allows the fast path at all."""
        ...

    def take(self, shard: int, res: p.Result) -> InFlight | None:
        """Close the dispatcher's record of the Pod ``res`` answers (None: not ``shard``'s)."""
        ...

    def choose(self, fwk: Framework, pod: Pod, res: p.Propose, shard: int = -1) -> Choice:
        """The first of the proposed node and its alternatives that passes now."""
        ...

    def commit(
        self, fwk: Framework, rec: InFlight, node: str, state: CycleState, shard: int
    ) -> bool:
        """Assume, Reserve, Permit and bind, as the serial scheduler does after choosing."""
        ...

    def counted(self, shard: int, res: p.Propose, choice: Choice) -> None:
        """Count a proposal committed on ``choice.node``."""

    def settled(self, key: str) -> None:
        """``key`` was committed: its refusals in a row start over."""

    def conflict(self, shard: int, rec: InFlight, reason: str) -> None:
        """Refuse a proposal: count it, tell the shard, send the Pod back to the queue."""

    def timed(self, t0: float, path: str) -> None:
        """The binder spent ``time.perf_counter() - t0`` on one decision by ``path``."""
