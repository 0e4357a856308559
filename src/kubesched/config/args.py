"""Typed plugin args of ``pluginConfig`` (upstream ``kubescheduler.config.k8s.io/v1`` types).

Each is a frozen dataclass whose defaults are upstream's defaults, so a plugin constructed
with ``Args()`` behaves like upstream with no ``pluginConfig`` entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubesched.api import objects as api

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SCORING_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A resource and its weight in a scoring formula (weight 1..100)."""

    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceSpec(api.CPU, 1), ResourceSpec(api.MEMORY, 1))


@dataclass(frozen=True, slots=True)
class UtilizationShapePoint:
    """A point of RequestedToCapacityRatio's shape: utilization 0..100 to score 0..10."""

    utilization: int
    score: int


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    """NodeResourcesFit's ``scoringStrategy``."""

    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[UtilizationShapePoint, ...] = ()
    """``requestedToCapacityRatio.shape`` (only for that strategy)."""


@dataclass(frozen=True, slots=True)
class NodeResourcesFitArgs:
    """Args of NodeResourcesFit."""

    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)
    retry_governance: bool = False
    """``retryGovernance`` (kubesched only, not upstream's: kube-scheduler refuses the field):
    queueing hints that wake a Pod only when the event's node now has room for it
    (docs/tuning.md, "Retry governance")."""


@dataclass(frozen=True, slots=True)
class NodeResourcesBalancedAllocationArgs:
    """Args of NodeResourcesBalancedAllocation."""

    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    score_balance_change: bool = False
    """Score the change in balance the Pod makes (upstream v1.36+) instead of the balance
    with the Pod (v1.34, v1.35).  Not a field of the configuration file (upstream's args
    have no such field, the release decides): a per-version profile sets it."""


@dataclass(frozen=True, slots=True)
class NodeAffinityArgs:
    """Args of NodeAffinity: ``addedAffinity`` applied to every Pod of the profile."""

    added_affinity: api.NodeAffinity | None = None


PluginArgs = NodeResourcesFitArgs | NodeResourcesBalancedAllocationArgs | NodeAffinityArgs
