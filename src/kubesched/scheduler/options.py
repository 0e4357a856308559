"""How a scheduler decides beyond its ``KubeSchedulerConfiguration``, as one frozen object.

The factory (:func:`kubesched.parallel.hooks.make_scheduler`) builds a
:class:`SchedulerOptions` once; the serial :class:`~kubesched.scheduler.Scheduler`, the
parallel coordinator, each of its shards (in this process or another: the object pickles)
and live mode's roles read what they need from it, instead of keyword lists forwarded from
constructor to constructor.  What a scheduler is *wired to* (its clock, API client, cache,
metrics, where binding cycles run) stays constructor arguments of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubesched.config.featuregates import FeatureGates
from kubesched.framework.interface import PluginFactory


@dataclass(frozen=True, slots=True)
class SchedulerOptions:
    """See the module docstring; the defaults are the serial scheduler's."""

    seed: int = 0
    """Seeds the tie-breaking among equally scored nodes (a shard adds its index)."""
    pool_seed: int | None = None
    """Draws the order DynamicResources searches a node's device pools in (``Handle.pool_seed``;
    upstream: Go map order; None: by driver and pool name)."""
    batching: bool = True
    """Reuse of results across equivalent Pods (:mod:`kubesched.scheduler.batch`)."""
    registry: Mapping[str, PluginFactory] | None = None
    """Plugin factories by name (None: every in-tree and bundled plugin)."""
    shards: int = 1
    """Scheduler shards (1: the serial scheduler; :mod:`kubesched.parallel` beyond)."""
    alternatives: int = 3
    """Runner-up nodes a shard's proposal may carry for the binder."""
    round_size: int = 64
    """Pods the parallel dispatcher hands a shard per message."""
    routing: str = "all"
    """``all``: every Pod goes to a shard; ``auto``: the parallel router decides per
    signature (:mod:`kubesched.parallel.router`)."""
    feature_gates: FeatureGates | None = None
    """The Kubernetes version and feature gates modelled (None: the configuration's,
    :attr:`~kubesched.config.types.KubeSchedulerConfiguration.feature_gates`, which the
    factory copies here, so a shard in another process loads its configuration under the
    same version); plugins read them from their ``Handle.feature_gates``."""
