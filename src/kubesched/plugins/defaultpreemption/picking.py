"""Which victims matter more, and which candidate node to preempt on (upstream
``util.MoreImportantPod``, ``GetEarliestPodStartTime`` and ``pickOneNodeForPreemption``).

A Pod without ``status.startTime`` counts as starting *now* (upstream ``GetPodStartTime``),
i.e. after every Pod that has one.  Victims are ordered as upstream's ``sort.Slice`` orders
them (:func:`order_victims`, :mod:`kubesched.kernels.gosort`), from the node's Pods in
``NodeInfo`` order (``ClusterState.pods_on_node``): Pods of equal priority and start time
come out in the order Go's pdqsort leaves them, not in input order once there are more than
12.  Two Pods of equal priority without a start time: v1.34 to v1.36's ``MoreImportantPod``
reads ``time.Now()`` for each at every comparison, the first argument's earlier, so each is
"more important" than the other (``less`` true both ways, which pdqsort's walk then decides);
v1.37's ``MoreImportantVictim`` reads it once per victim as the node's Pods are listed, so
the one listed first is more important.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubesched.api import objects as api
from kubesched.kernels import gosort

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


def order_victims(
    pods: Sequence[api.Pod], *, timed_at_listing: bool, listed: Mapping[str, int] | None = None
) -> list[api.Pod]:
    """``pods`` most important first, as upstream's ``sort.Slice`` with ``MoreImportantPod``
    (``timed_at_listing`` False: v1.34 to v1.36) or ``MoreImportantVictim`` (True: v1.37 and
    later) orders them from this order (the node's ``NodeInfo`` order for the potential
    victims; module docstring).  ``listed``: each Pod key's place in the node's ``NodeInfo``
    order, which times the Pods without a start time from v1.37 (default: ``pods``' order)."""
    if timed_at_listing:
        at = listed if listed is not None else {p.key: i for i, p in enumerate(pods)}
        return gosort.sorted_by_key(
            pods,
            lambda p: (-p.priority, start_time(p), 0 if p.start_time is not None else at[p.key]),
        )
    unstarted = [p.priority for p in pods if p.start_time is None]
    if len(unstarted) == len(set(unstarted)):  # less is a strict weak order: by key
        return gosort.sorted_by_key(pods, importance_key)
    if len(pods) <= gosort.MAX_INSERTION:
        return _insertion_sorted_now(pods)
    out = list(pods)
    gosort.sort_slice(out, more_important_now)
    return out


def _insertion_sorted_now(pods: Sequence[api.Pod]) -> list[api.Pod]:
    """``pods`` as Go's insertion sort (``sort.Slice`` up to :data:`gosort.MAX_INSERTION`
    items) orders them with :func:`more_important_now`, by a key: each Pod moves left past
    every Pod it is more important than, so the answer is sorted by :func:`importance_key`,
    and within one key the Pods keep their order, except Pods without a start time, which
    each pass all the earlier ones of their key (each is more important than the other):
    their order is reversed."""

    def key(i: int) -> tuple[int, float, int]:
        p = pods[i]
        if p.start_time is None:
            return (-p.priority, math.inf, -i)
        return (-p.priority, p.start_time, i)

    return [pods[i] for i in sorted(range(len(pods)), key=key)]


def more_important_now(a: api.Pod, b: api.Pod) -> bool:
    """v1.34 to v1.36's ``MoreImportantPod(a, b)``: higher priority, then the earlier start;
    a Pod without a start time starts *now*, read for ``a`` before ``b``, so two such Pods
    are each more important than the other."""
    if a.priority != b.priority:
        return a.priority > b.priority
    if a.start_time is None:
        return b.start_time is None
    return b.start_time is None or a.start_time < b.start_time


def earliest_start_of_highest(victims: Sequence[api.Pod]) -> float:
    """Upstream ``GetEarliestPodStartTime``: earliest start among the highest-priority victims."""
    top = max(p.priority for p in victims)
    return min(start_time(p) for p in victims if p.priority == top)


def rank(candidate: Candidate) -> tuple[float, ...]:
    """The candidate's scores under upstream's criteria in order, each a score where higher
    is better: fewest PDB violations, lowest highest-priority victim (the first), smallest
    sum of priorities (each offset by :data:`PRIORITY_OFFSET`), fewest victims, latest
    start of the highest-priority victims (:func:`earliest_start_of_highest`).  Computed
    once, in one pass over the victims, and kept on the candidate."""
    r = candidate.rank
    if r is None:
        victims = candidate.victims
        prios = [p.priority for p in victims]
        top = max(prios)
        earliest = min(start_time(p) for p in victims if p.priority == top)
        n = len(prios)
        r = candidate.rank = (
            -candidate.num_pdb_violations,
            -prios[0],
            -(sum(prios) + PRIORITY_OFFSET * n),
            -n,
            earliest,
        )
    return r


def pick_one_node(candidates: Sequence[Candidate]) -> int:
    """Index of the candidate to preempt on: each criterion keeps the best-scoring ones, the
    next breaks their tie; the first remaining candidate wins (-1 when there is none).  That
    is the first candidate of the greatest :func:`rank` in lexicographic order."""
    if len(candidates) <= 1:
        return len(candidates) - 1
    ranks = list(map(_KEPT_RANK, candidates))  # kept ranks (None: not yet), no Python loop
    if None in ranks:
        ranks = [rank(c) for c in candidates]
    return ranks.index(max(ranks))  # max keeps the first of the greatest; index finds it


_KEPT_RANK = operator.attrgetter("rank")
"""A candidate's :attr:`Candidate.rank` (None when not computed yet)."""
