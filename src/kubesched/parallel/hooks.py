"""How ``bench``, ``simulate`` and other drivers get a serial or a parallel scheduler.

``make_scheduler(config, shards=N, ...)`` takes the serial
:class:`~kubesched.scheduler.Scheduler`'s keyword arguments: ``shards=1`` (the default) *is*
the serial scheduler; ``shards >= 2`` gives a
:class:`~kubesched.parallel.coordinator.ParallelScheduler` with that many shard processes.
Both are driven the same way (informer handlers, ``schedule_one()``, ``queue``); call
:func:`close` when done (it stops shard processes and is a no-op for the serial scheduler)
and :func:`summary` for the parallel numbers (None for the serial scheduler).

:func:`step_weight` is the virtual-time cost of the last ``schedule_one()`` in scheduling
cycles: 1 for the serial scheduler; for the parallel one, the most Pods any one shard
answered for in that step (shards work side by side), at least 1.
"""

from __future__ import annotations

from typing import Any

from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.parallel import transport
from kubesched.parallel.coordinator import ParallelScheduler
from kubesched.scheduler import Scheduler

SHARDS_HELP = (
    "scheduler shards: 1 is the serial scheduler; N >= 2 runs a dispatcher and a "
    "conflict-checking binder here and N shard processes (see docs/parallel.md)"
)


def make_scheduler(
    config: KubeSchedulerConfiguration,
    *,
    shards: int = 1,
    transport_kind: str = transport.PROCESS,
    round_size: int = 64,
    **kwargs: Any,
) -> Scheduler:
    """A serial (``shards == 1``) or parallel scheduler with the serial one's arguments."""
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    if shards == 1:
        return Scheduler(config, **kwargs)
    return ParallelScheduler(
        config, shards=shards, transport_kind=transport_kind, round_size=round_size, **kwargs
    )


def close(scheduler: Scheduler) -> None:
    """Stop a parallel scheduler's shards (nothing to do for a serial one)."""
    if isinstance(scheduler, ParallelScheduler):
        scheduler.close()


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


def add_shards_argument(parser: Any) -> None:
    """Add ``--shards N`` (default 1) to an argparse parser."""
    parser.add_argument("--shards", type=int, default=1, metavar="N", help=SHARDS_HELP)
