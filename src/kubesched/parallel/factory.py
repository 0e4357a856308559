"""How ``bench``, ``simulate`` and other drivers get a serial or a parallel scheduler.

``make_scheduler(config, shards=N, ...)`` takes the serial
:class:`~kubesched.scheduler.Scheduler`'s keyword arguments: ``shards=1`` (the default) *is*
the serial scheduler; ``shards >= 2`` gives a
:class:`~kubesched.parallel.coordinator.ParallelScheduler` with that many shard processes
(``--shards auto``: :func:`shard_count` of :data:`AUTO` is :func:`auto_shards`).  Every Pod
goes through the shards (``routing="all"``, the default: deterministic with in-process shards
and in ``simulate``) unless ``routing="auto"`` (:mod:`~kubesched.parallel.router`: Pods whose
search is too cheap for the pipeline are scheduled by the coordinator itself; opt-in until a
quiet machine shows it at least as fast as the serial scheduler on cheap Pods, as the
instruction counts do, docs/parallel.md §4.1).
Both are driven the same way (informer handlers, ``schedule_one()``, ``queue``); call
:func:`close` when done (it stops shard processes and is a no-op for the serial scheduler)
and :func:`summary` for the parallel numbers (None for the serial scheduler).

:func:`step_weight` is the virtual-time cost of the last ``schedule_one()`` in scheduling
cycles: 1 for the serial scheduler; for the parallel one, the most Pods any one shard
answered for in that step (shards work side by side), at least 1.  The command-line flags
that choose these are :mod:`kubesched.cli.shards`.
"""

from __future__ import annotations

import os
from typing import Any

from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.parallel import transport
from kubesched.parallel.coordinator import ParallelScheduler
from kubesched.scheduler import Scheduler, SchedulerOptions

OPTIONS = ("seed", "batching", "registry", "alternatives", "pool_seed")
""":func:`make_scheduler` keyword arguments that are :class:`SchedulerOptions` fields."""
AUTO = "auto"
"""``shards``: one per core (:func:`auto_shards`); ``routing``: the router decides."""
ALL = "all"
"""``routing``: every Pod goes to a shard."""


def auto_shards() -> int:
    """The shard count ``--shards auto`` means: one per core besides the coordinator's, at
    least 2 and at most 8 (beyond that the single binder is the limit, docs/parallel.md §5)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(2, min(8, cpus - 1))


def shard_count(shards: int | str) -> int:
    """``--shards`` as a number (``auto``: :func:`auto_shards`)."""
    return auto_shards() if shards == AUTO else int(shards)


def make_scheduler(
    config: KubeSchedulerConfiguration,
    *,
    shards: int | str = 1,
    transport_kind: str = transport.PROCESS,
    round_size: int = 64,
    routing: str = ALL,
    **kwargs: Any,
) -> Scheduler:
    """A serial (``shards == 1``) or parallel scheduler with the serial one's arguments
    (``seed``, ``batching``, ``registry`` and ``alternatives`` become its
    :class:`~kubesched.scheduler.SchedulerOptions`; the others are passed on)."""
    n = shard_count(shards)
    if n < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    decided = {k: kwargs.pop(k) for k in OPTIONS if k in kwargs}
    options = SchedulerOptions(
        shards=n,
        round_size=round_size,
        routing=routing,
        feature_gates=config.feature_gates,
        **decided,
    )
    if n == 1:
        return Scheduler(config, options=options, **kwargs)
    return ParallelScheduler(config, options=options, transport_kind=transport_kind, **kwargs)


def close(scheduler: Scheduler) -> None:
    """Stop a parallel scheduler's shards (nothing to do for a serial one)."""
    if isinstance(scheduler, ParallelScheduler):
        scheduler.close()


def shards_of(scheduler: Scheduler) -> int:
    """The shard processes a scheduler runs (1: the serial scheduler)."""
    if isinstance(scheduler, ParallelScheduler):
        return scheduler.shard_count
    return 1


def crash_shard(scheduler: Scheduler, shard: int) -> bool:
    """Kill shard ``shard`` of a parallel scheduler (a fault drill); False when the scheduler
    is serial or has no such shard."""
    if not isinstance(scheduler, ParallelScheduler) or shard >= scheduler.shard_count:
        return False
    scheduler.crash_shard(shard)
    return True


def held_by(scheduler: Scheduler, shard: int) -> list[str]:
    """Keys of the Pods shard ``shard`` of a parallel scheduler holds (none for a serial one)."""
    if isinstance(scheduler, ParallelScheduler):
        return list(scheduler.dispatcher.held_by(shard))
    return []


def summary(scheduler: Scheduler) -> dict[str, Any] | None:
    """Binder and per-shard numbers of a parallel scheduler; None for a serial one."""
    if isinstance(scheduler, ParallelScheduler):
        return scheduler.parallel_summary()
    return None


def step_weight(scheduler: Scheduler) -> int:
    """Scheduling cycles the last ``schedule_one()`` stands for (see the module doc)."""
    if isinstance(scheduler, ParallelScheduler):
        return max(1, scheduler.last_step_pods)
    return 1
