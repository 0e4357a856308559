"""TaintToleration: node taints against Pod tolerations (Filter, PreScore, Score).

Upstream ``tainttoleration/taint_toleration.go`` (v1.34, QueueingHints enabled):

- Filter: the first NoSchedule/NoExecute taint (in node order) that no toleration tolerates
  rejects the node, UnschedulableAndUnresolvable ``node(s) had untolerated taint(s)`` (v1.34
  no longer names the taint in the reason; it logs it).
- Score: the number of PreferNoSchedule taints not tolerated by the Pod's tolerations whose
  effect is PreferNoSchedule or empty; NormalizeScore is ``DefaultNormalizeScore`` reversed
  (fewest intolerable taints scores 100).

Nodes share interned taint sets (``NodeTable.taint_set`` ids into ``taint_sets``), so each
distinct set among ``rows`` is evaluated once and the answer indexed back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

import numpy as np

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework.contract import Locality
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    IntArray,
    QueueingHint,
    Resource,
    Status,
    Verdict,
)
from kubesched.state.cache import ClusterState

NAME = names.TAINT_TOLERATION
ERR_REASON_NOT_MATCH = "node(s) had taints that the pod didn't tolerate"
_PRE_SCORE_KEY = "PreScore" + NAME

Taints = tuple[api.Taint, ...]
Tolerations = tuple[api.Toleration, ...]


class TaintToleration:
    """Filters nodes with untolerated hard taints; prefers nodes with fewer soft ones."""

    name = NAME
    locality = Locality.NODE_LOCAL
    node_only = True
    """Answers depend on the node object only, not on the Pods placed on it."""
    pre_score_missing: ClassVar[str] = (
        f'failed to read "{_PRE_SCORE_KEY}" from cycleState: not found'
    )
    """Upstream's Score error without this plugin's PreScore (``ScoreNeedsPreScore``)."""

    def __init__(self, args: object | None, handle: Handle) -> None:
        self.handle = handle
        self.comparison = handle.feature_gates.enabled("TaintTolerationComparisonOperators")
        """Gt/Lt tolerations compare numbers (TaintTolerationComparisonOperators, v1.35+)."""

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: the answer depends on the Pod's tolerations only."""
        return pod.tolerations

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """Reject rows whose taint set has an untolerated NoSchedule/NoExecute taint."""
        table = cluster.nodes
        if len(table.taint_sets) == 1:  # no node has had a taint: no row to read
            return Verdict.all_pass(rows.shape[0])
        ids = table.taint_set[rows]
        if not ids.any():
            return Verdict.all_pass(rows.shape[0])
        uniq, inverse = np.unique(ids, return_inverse=True)
        per_set = np.zeros(uniq.shape[0], dtype=np.int8)
        for i, tid in enumerate(uniq.tolist()):
            taints = table.taint_sets[tid]
            if find_untolerated_taint(taints, pod.tolerations, comparison=self.comparison):
                per_set[i] = 1
        return Verdict(per_set[inverse.reshape(-1)], {1: _UNTOLERATED_STATUS})

    def pre_score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Status:
        """Keep the tolerations that can tolerate PreferNoSchedule taints."""
        state[_PRE_SCORE_KEY] = prefer_no_schedule_tolerations(pod.tolerations)
        return SUCCESS

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """int64 ``(n,)``: intolerable PreferNoSchedule taints on each node."""
        tolerations = state.get(_PRE_SCORE_KEY)
        if tolerations is None:  # PreScore did not run: compute as it would have
            tolerations = prefer_no_schedule_tolerations(pod.tolerations)
        table = cluster.nodes
        if len(table.taint_sets) == 1:  # no node has had a taint: no row to read
            return np.zeros(rows.shape[0], dtype=np.int64)
        ids = table.taint_set[rows]
        if not ids.any():
            return np.zeros(rows.shape[0], dtype=np.int64)
        uniq, inverse = np.unique(ids, return_inverse=True)
        per_set = np.fromiter(
            (
                count_intolerable_prefer_no_schedule(
                    table.taint_sets[t], tolerations, self.comparison
                )
                for t in uniq.tolist()
            ),
            dtype=np.int64,
            count=uniq.shape[0],
        )
        return np.asarray(per_set[inverse.reshape(-1)], dtype=np.int64)

    def normalize_score(self, state: CycleState, pod: api.Pod, scores: IntArray) -> None:
        """``DefaultNormalizeScore(100, reverse=True)`` in place."""
        default_normalize_score(scores, MAX_NODE_SCORE, reverse=True)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Node/Add|UpdateNodeTaint and Pod/UpdatePodToleration, both hinted (v1.37+:
        TargetPod/UpdatePodToleration, always Queue: only the queued Pod's own update)."""
        if self.handle.feature_gates.at_least("1.37"):
            pod_event = ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE_POD_TOLERATION)
            return [
                ClusterEventWithHint(
                    ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                    self.is_schedulable_after_node_change,
                ),
                ClusterEventWithHint(pod_event),
            ]
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.UPDATE_POD_TOLERATION),
                is_schedulable_after_pod_toleration_change,
            ),
        ]

    def is_schedulable_after_node_change(self, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
        """:func:`is_schedulable_after_node_change` with this run's comparison gate."""
        return is_schedulable_after_node_change(pod, old, new, comparison=self.comparison)


# --------------------------------------------------------------------------- queueing hints
def is_schedulable_after_node_change(
    pod: api.Pod, old: Any, new: Any, comparison: bool = False
) -> QueueingHint:
    """Queue when the node's hard taints went from untolerated (or absent) to tolerated."""
    if not isinstance(new, api.Node) or (old is not None and not isinstance(old, api.Node)):
        return QueueingHint.QUEUE
    tolerations = pod.tolerations
    was_untolerated = (
        old is None
        or find_untolerated_taint(old.taints, tolerations, comparison=comparison) is not None
    )
    is_untolerated = (
        find_untolerated_taint(new.taints, tolerations, comparison=comparison) is not None
    )
    if was_untolerated and not is_untolerated:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_pod_toleration_change(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the updated Pod is ``pod`` itself (its tolerations grew)."""
    if not isinstance(new, api.Pod):
        return QueueingHint.QUEUE
    same = new.uid == pod.uid if (new.uid or pod.uid) else new.key == pod.key
    return QueueingHint.QUEUE if same else QueueingHint.QUEUE_SKIP


# --------------------------------------------------------------------------- kernel
def tolerations_tolerate_taint(
    tolerations: Iterable[api.Toleration], taint: api.Taint, comparison: bool = False
) -> bool:
    """Upstream ``TolerationsTolerateTaint``: some toleration tolerates ``taint``
    (``comparison``: Gt/Lt compare numbers, :meth:`api.Toleration.tolerates`)."""
    return any(t.tolerates(taint, comparison) for t in tolerations)


def do_not_schedule(taint: api.Taint) -> bool:
    """Upstream ``DoNotScheduleTaintsFilterFunc``: NoSchedule or NoExecute."""
    return taint.effect in (api.NO_SCHEDULE, api.NO_EXECUTE)


def find_untolerated_taint(
    taints: Iterable[api.Taint],
    tolerations: Tolerations,
    include: Callable[[api.Taint], bool] = do_not_schedule,
    *,
    comparison: bool = False,
) -> api.Taint | None:
    """Upstream ``FindMatchingUntoleratedTaint``: the first included, untolerated taint."""
    for taint in taints:
        if include(taint) and not tolerations_tolerate_taint(tolerations, taint, comparison):
            return taint
    return None


def tolerations_tolerate_taints(
    taints: Iterable[api.Taint], tolerations: Tolerations, comparison: bool = False
) -> bool:
    """Whether every NoSchedule/NoExecute taint of ``taints`` is tolerated (Filter passes)."""
    return find_untolerated_taint(taints, tolerations, comparison=comparison) is None


UNTOLERATED = "node(s) had untolerated taint(s)"
_UNTOLERATED_STATUS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (UNTOLERATED,))


def prefer_no_schedule_tolerations(tolerations: Tolerations) -> Tolerations:
    """Tolerations whose effect is PreferNoSchedule or empty (empty matches every effect)."""
    return tuple(t for t in tolerations if t.effect in ("", api.PREFER_NO_SCHEDULE))


def count_intolerable_prefer_no_schedule(
    taints: Taints, tolerations: Tolerations, comparison: bool = False
) -> int:
    """PreferNoSchedule taints of ``taints`` that no toleration tolerates."""
    return sum(
        1
        for t in taints
        if t.effect == api.PREFER_NO_SCHEDULE
        and not tolerations_tolerate_taint(tolerations, t, comparison)
    )


def default_normalize_score(scores: IntArray, max_priority: int, reverse: bool) -> None:
    """Upstream ``helper.DefaultNormalizeScore`` in place on int64 ``scores`` of shape (n,).

    ``max * score / maxCount`` with Go's truncating division; ``maxCount`` starts at 0, so
    all-zero (or all-negative) scores stay as they are, or all become ``max`` if reversed.
    """
    max_count = int(np.maximum.reduce(scores, initial=0))  # ``a.max()``, no Python wrapper
    if max_count == 0:
        if reverse:
            scores.fill(max_priority)
        return
    prod = scores * max_priority
    quotient = np.abs(prod) // max_count * np.sign(prod)
    if reverse:
        quotient = max_priority - quotient
    scores[:] = quotient


def new(args: object | None, handle: Handle) -> TaintToleration:
    """Factory; TaintToleration has no args (anything given is ignored, as upstream)."""
    return TaintToleration(args, handle)
