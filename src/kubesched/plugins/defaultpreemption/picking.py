"""Which victims matter more, and which candidate node to preempt on (upstream
``util.MoreImportantPod``, ``GetEarliestPodStartTime`` and ``pickOneNodeForPreemption``).

A Pod without ``status.startTime`` counts as starting *now* (upstream ``GetPodStartTime``),
i.e. after every Pod that has one; two such Pods tie (upstream compares two ``time.Now()``
calls, so its order there is arbitrary).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kubesched.api import objects as api

PRIORITY_OFFSET = 2**31
"""Upstream adds ``MaxInt32 + 1`` to every victim priority before summing them."""


@dataclass(slots=True)
class Candidate:
    """A node where preemption makes the Pod fit: victims most important first."""

    node: str
    row: int
    victims: list[api.Pod]
    num_pdb_violations: int = 0
    rank: tuple[float, ...] | None = None
    """:func:`rank`, once computed (a kept candidate keeps it: ``dryrun.KeptResults``)."""


def start_time(pod: api.Pod) -> float:
    """``status.startTime``, or +inf ("now") for a Pod that has none."""
    return math.inf if pod.start_time is None else pod.start_time


def importance_key(pod: api.Pod) -> tuple[int, float]:
    """Sort key putting more important Pods first: higher priority, then earlier start."""
    return (-pod.priority, start_time(pod))


def by_importance(pods: Sequence[api.Pod]) -> list[api.Pod]:
    """``pods`` most important first (stable for ties)."""
    return sorted(pods, key=importance_key)


def earliest_start_of_highest(victims: Sequence[api.Pod]) -> float:
    """Upstream ``GetEarliestPodStartTime``: earliest start among the highest-priority victims."""
    top = max(p.priority for p in victims)
    return min(start_time(p) for p in victims if p.priority == top)


_CRITERIA: tuple[Callable[[Candidate], float], ...] = (
    lambda c: -c.num_pdb_violations,
    lambda c: -c.victims[0].priority,
    lambda c: -sum(p.priority + PRIORITY_OFFSET for p in c.victims),
    lambda c: -len(c.victims),
    lambda c: earliest_start_of_highest(c.victims),
)
"""Upstream's criteria in order, each a score where higher is better: fewest PDB violations,
lowest highest-priority victim, smallest sum of priorities, fewest victims, latest start of
the highest-priority victims."""


def rank(candidate: Candidate) -> tuple[float, ...]:
    """The candidate's scores under every criterion, in order (kept on the candidate)."""
    r = candidate.rank
    if r is None:
        r = candidate.rank = tuple(score(candidate) for score in _CRITERIA)
    return r


def pick_one_node(candidates: Sequence[Candidate]) -> int:
    """Index of the candidate to preempt on: each criterion keeps the best-scoring ones, the
    next breaks their tie; the first remaining candidate wins (-1 when there is none).  That
    is the first candidate of the greatest :func:`rank` in lexicographic order."""
    if len(candidates) <= 1:
        return len(candidates) - 1
    best, top = 0, rank(candidates[0])
    for i in range(1, len(candidates)):
        r = rank(candidates[i])
        if r > top:
            best, top = i, r
    return best
