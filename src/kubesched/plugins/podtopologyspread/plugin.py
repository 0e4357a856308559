"""The PodTopologySpread plugin class and its queueing hints (upstream ``plugin.go``).

See the package docstring for the semantics; :mod:`.filtering` and :mod:`.scoring` hold the
vectorised kernels and :mod:`.counts` the incrementally maintained matching-Pod counts.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

import numpy as np

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework.contract import Locality
from kubesched.framework.interface import (
    SKIP,
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    IntArray,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    Verdict,
    error,
)
from kubesched.plugins.podtopologyspread import args as a
from kubesched.plugins.podtopologyspread import constraints as cs
from kubesched.plugins.podtopologyspread import filtering, scoring
from kubesched.plugins.podtopologyspread.counts import MatchCounts, match_counts
from kubesched.state.cache import ClusterState

NAME = names.POD_TOPOLOGY_SPREAD
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME
_IGNORED_KEY = "Score" + NAME + "/ignored"
_MAX_PARSED = 256


class PodTopologySpread:
    """Filters nodes that would break hard spread constraints; scores soft ones."""

    name = NAME
    locality = Locality.CROSS_NODE
    pre_score_missing: ClassVar[str] = (
        f'error reading "{_PRE_SCORE_KEY}" from cycleState: not found'
    )
    """Upstream's Score error without this plugin's PreScore (``ScoreNeedsPreScore``)."""

    def __init__(self, args: a.SpreadArgs, handle: Handle) -> None:
        self.handle = handle
        self.args = args
        self._has_defaults = {
            action: any(c.when_unsatisfiable == action for c in args.default_constraints)
            for action in (a.DO_NOT_SCHEDULE, a.SCHEDULE_ANYWAY)
        }
        self._parsed: dict[Hashable, tuple[cs.Constraint, ...]] = {}
        self._last: dict[str, tuple[object, Hashable, tuple[cs.Constraint, ...]]] = {}
        self._store: tuple[ClusterState, MatchCounts] | None = None
        self.comparison = handle.feature_gates.enabled("TaintTolerationComparisonOperators")
        """``nodeTaintsPolicy: Honor`` compares Gt/Lt tolerations as numbers (v1.35+ gate)."""

    def sign(self, pod: api.Pod) -> object:
        """Result reuse (beyond upstream, whose ``SignPod`` refuses any constraint).

        A Pod with only hard (``DoNotSchedule``) constraints of its own is signable by
        everything its answers depend on: namespace, constraints, what its labels decide
        (each constraint's self-match and the ``matchLabelKeys`` values merged into its
        selector, not other labels), and the node affinity and tolerations the inclusion
        policies read.  The reuse path refreshes the domain counts on every Pod
        (:meth:`refresh_filter`).  Soft constraints score every node from every domain's
        counts, so a Pod with any (or with default constraints: a Service selects it) is
        unsignable.
        """
        own = pod.topology_spread_constraints
        if own:
            if any(c.when_unsatisfiable != a.DO_NOT_SCHEDULE for c in own):
                return None
            parsed = self._parsed_constraints(own, pod.labels, a.DO_NOT_SCHEDULE)
            return (
                pod.namespace,
                own,
                tuple(c.selector.matches(pod.labels) for c in parsed),
                tuple(pod.labels.get(k) for c in own for k in c.match_label_keys),
                tuple(sorted(pod.node_selector.items())),
                pod.node_affinity,
                pod.tolerations,
            )
        if self._has_defaults[a.DO_NOT_SCHEDULE] or self._has_defaults[a.SCHEDULE_ANYWAY]:
            cluster = self.handle.cluster
            services: cs.ServiceIndex = cluster.services
            if (services or pod.owner_references) and cs.default_selector(
                pod, services, cluster.objects
            ).reqs:
                return None
        return ()

    def refresh_filter(self, state: CycleState, pod: api.Pod, cluster: ClusterState) -> bool:
        """Result reuse: recount this Pod's domains (a Pod was assumed since; nodes are
        unchanged, or the cache would have been flushed); False if a domain rejected before
        may now accept (see :mod:`kubesched.scheduler.batch`)."""
        old = state.get(_PRE_FILTER_KEY)
        if old is None:
            return False
        new = filtering.refresh_pre_filter_state(cluster, self._counts(cluster), pod, old)
        state[_PRE_FILTER_KEY] = new
        return filtering.only_narrowed(old, new)

    # ------------------------------------------------------------------ constraints
    def constraints(
        self, pod: api.Pod, action: str, cluster: ClusterState
    ) -> Sequence[cs.Constraint]:
        """Upstream ``getConstraints`` for ``action``: the Pod's own, else the defaults with
        a selector deduced from Services; raises :class:`~.constraints.SelectorError`."""
        own = pod.topology_spread_constraints
        if own:
            return self._parsed_constraints(own, pod.labels, action)
        if not self._has_defaults[action]:
            return ()
        defaults = self._parsed_constraints(self.args.default_constraints, pod.labels, action)
        return cs.build_default_constraints(defaults, pod, cluster.services, cluster.objects)

    def _parsed_constraints(
        self,
        own: tuple[api.TopologySpreadConstraint, ...],
        labels: dict[str, str],
        action: str,
    ) -> tuple[cs.Constraint, ...]:
        """The Pod's parsed constraints (or the default ones), cached by spec (and
        matchLabelKeys values): upstream ``filterTopologySpreadConstraints``."""
        keyed = tuple(labels.get(k) for c in own for k in c.match_label_keys)
        last = self._last.get(action)
        if last is not None and last[0] is own and last[1] == keyed:
            return last[2]
        key = (own, action, keyed)
        parsed = self._parsed.get(key)
        if parsed is None:
            parsed = tuple(cs.filter_constraints(own, labels, action))
            if len(self._parsed) >= _MAX_PARSED:
                self._parsed.clear()
            self._parsed[key] = parsed
        self._last[action] = (own, keyed, parsed)
        return parsed

    def _counts(self, cluster: ClusterState) -> MatchCounts:
        if self._store is None or self._store[0] is not cluster:
            self._store = (cluster, match_counts(cluster))
        return self._store[1]

    # ------------------------------------------------------------------ PreFilter / Filter
    def pre_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[PreFilterResult | None, Status]:
        """Count matching Pods per domain for the hard constraints; Skip without any."""
        try:
            hard = self.constraints(pod, a.DO_NOT_SCHEDULE, cluster)
        except cs.SelectorError as e:
            return None, error(
                f"get constraints from pod: obtaining pod's hard topology spread constraints: {e}"
            )
        if not hard:
            return None, SKIP
        store = self._counts(cluster)
        state[_PRE_FILTER_KEY] = filtering.compute_pre_filter_state(
            cluster, store, pod, hard, self.comparison
        )
        return None, SUCCESS

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """Code 1: skew too large (Unschedulable); code 2: topology label missing."""
        pre = state.get(_PRE_FILTER_KEY)
        if pre is None:  # PreFilter did not run: compute as it would have
            _, status = self.pre_filter(state, pod, cluster)
            if not status.is_success():
                return Verdict.all_pass(rows.shape[0])
            pre = state[_PRE_FILTER_KEY]
        codes = filtering.filter_codes(pre, rows)
        if not np.count_nonzero(codes):  # (ndarray.any goes through a Python wrapper)
            return Verdict(codes)
        seen = np.bincount(codes, minlength=3)
        return Verdict(codes, {k: st for k, st in filtering.STATUSES.items() if seen[k]})

    def pre_filter_add_pod(
        self, state: CycleState, pod: api.Pod, other: api.Pod, row: int, cluster: ClusterState
    ) -> Status:
        """PreFilterExtensions ``AddPod``: count ``other`` on node ``row`` in this cycle."""
        return self._update(state, pod, other, row, 1)

    def pre_filter_remove_pod(
        self, state: CycleState, pod: api.Pod, other: api.Pod, row: int, cluster: ClusterState
    ) -> Status:
        """PreFilterExtensions ``RemovePod``: stop counting ``other`` on node ``row``."""
        return self._update(state, pod, other, row, -1)

    def _update(
        self, state: CycleState, pod: api.Pod, other: api.Pod, row: int, delta: int
    ) -> Status:
        pre = state.get(_PRE_FILTER_KEY)
        if pre is None:
            return error(f'reading "{_PRE_FILTER_KEY}" from cycleState: not found')
        state[_PRE_FILTER_KEY] = filtering.with_pod(pre, other, pod.namespace, row, delta)
        return SUCCESS

    # ------------------------------------------------------------------ PreScore / Score
    def pre_score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Status:
        """Weights and domain counts for the soft constraints; Skip without any."""
        if len(cluster.nodes) == 0:
            return SKIP
        # Only non-system-default constraints require every topology key on a node, so that
        # nodes without a zone label still get hostname spreading.
        require_all = bool(pod.topology_spread_constraints) or not self.args.system_defaulted
        try:
            soft = self.constraints(pod, a.SCHEDULE_ANYWAY, cluster)
        except cs.SelectorError as e:
            return error(
                f"calculating preScoreState: obtaining pod's soft topology spread constraints: {e}"
            )
        if not soft:
            return SKIP
        store = self._counts(cluster)
        state[_PRE_SCORE_KEY] = scoring.compute_pre_score_state(
            cluster, store, pod, soft, rows, require_all, self.comparison
        )
        return SUCCESS

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """int64 ``(n,)``: rounded weighted matching counts (0 for ignored nodes)."""
        pre = state.get(_PRE_SCORE_KEY)
        if pre is None:  # PreScore did not run: compute as it would have
            if not self.pre_score(state, pod, cluster, rows).is_success():
                return np.zeros(rows.shape[0], dtype=np.int64)
            pre = state[_PRE_SCORE_KEY]
        ignored = pre.ignored(cluster, rows)
        scores = scoring.go_round(scoring.raw_scores(pre, rows))
        scores[ignored] = 0
        state[_IGNORED_KEY] = ignored
        return scores

    def normalize_score(self, state: CycleState, pod: api.Pod, scores: IntArray) -> None:
        """Fewer matching Pods scores higher; ignored nodes get 0."""
        ignored = state.get(_IGNORED_KEY)
        if ignored is None or ignored.shape != scores.shape:
            return
        scoring.normalize(scores, ignored)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pod Add/UpdatePodLabel/UpdatePodToleration/Delete and Node Add/Delete/
        UpdateNodeLabel/UpdateNodeTaint, both hinted (v1.34 with QueueingHints).  v1.37+:
        AssignedPod Add/UpdatePodLabel/Delete and TargetPod UpdatePodToleration/UpdatePodLabel
        (:meth:`is_schedulable_after_target_pod_change`) instead of Pod."""
        pod_actions = (
            ActionType.ADD
            | ActionType.UPDATE_POD_LABEL
            | ActionType.UPDATE_POD_TOLERATION
            | ActionType.DELETE
        )
        node_actions = (
            ActionType.ADD
            | ActionType.DELETE
            | ActionType.UPDATE_NODE_LABEL
            | ActionType.UPDATE_NODE_TAINT
        )
        on_node = ClusterEventWithHint(
            ClusterEvent(Resource.NODE, node_actions), self.is_schedulable_after_node_change
        )
        if self.handle.feature_gates.at_least("1.37"):
            assigned = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
            target = ActionType.UPDATE_POD_TOLERATION | ActionType.UPDATE_POD_LABEL
            return [
                ClusterEventWithHint(
                    ClusterEvent(Resource.ASSIGNED_POD, assigned),
                    self.is_schedulable_after_pod_change,
                ),
                ClusterEventWithHint(
                    ClusterEvent(Resource.TARGET_POD, target),
                    self.is_schedulable_after_target_pod_change,
                ),
                on_node,
            ]
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, pod_actions), self.is_schedulable_after_pod_change
            ),
            on_node,
        ]

    # ------------------------------------------------------------------ queueing hints
    def _hard(self, pod: api.Pod) -> Sequence[cs.Constraint] | None:
        try:
            return self.constraints(pod, a.DO_NOT_SCHEDULE, self.handle.cluster)
        except cs.SelectorError:
            return None

    def is_schedulable_after_pod_change(self, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when a scheduled Pod in the namespace that matches (or stops matching) a
        hard constraint's selector appears, changes labels or goes; or when ``pod`` itself got
        tolerations and some constraint honours taints."""
        if (new is not None and not isinstance(new, api.Pod)) or (
            old is not None and not isinstance(old, api.Pod)
        ):
            return QueueingHint.QUEUE
        if (new is not None and not _involved(new, pod)) or (
            old is not None and not _involved(old, pod)
        ):
            return QueueingHint.QUEUE_SKIP
        hard = self._hard(pod)
        if hard is None:
            return QueueingHint.QUEUE
        if new is not None and old is not None:
            if (
                _same_pod(new, pod)
                and new.tolerations != old.tolerations
                and any(c.honor_taints for c in hard)
            ):
                return QueueingHint.QUEUE
            if new.labels == old.labels:
                return QueueingHint.QUEUE_SKIP
            changed = any(
                c.selector.matches(old.labels) != c.selector.matches(new.labels) for c in hard
            )
            return QueueingHint.QUEUE if changed else QueueingHint.QUEUE_SKIP
        changed_pod = new if new is not None else old
        if changed_pod is not None and cs.pod_matches_any(hard, changed_pod.labels):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_target_pod_change(
        self, pod: api.Pod, old: Any, new: Any
    ) -> QueueingHint:
        """v1.37+, the queued Pod's own update: Queue when it got tolerations and some
        constraint honours taints, or its new labels change a hard constraint's match."""
        if not isinstance(new, api.Pod) or not isinstance(old, api.Pod):
            return QueueingHint.QUEUE
        hard = self._hard(pod)
        if hard is None:
            return QueueingHint.QUEUE
        if new.tolerations != old.tolerations and any(c.honor_taints for c in hard):
            return QueueingHint.QUEUE
        if new.labels == old.labels:
            return QueueingHint.QUEUE_SKIP
        changed = any(
            c.selector.matches(old.labels) != c.selector.matches(new.labels) for c in hard
        )
        return QueueingHint.QUEUE if changed else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when a node gains or loses every topology key, or (still having them) changes
        a topology value or its taints; an added / deleted node must have every key."""
        if (new is not None and not isinstance(new, api.Node)) or (
            old is not None and not isinstance(old, api.Node)
        ):
            return QueueingHint.QUEUE
        hard = self._hard(pod)
        if hard is None:
            return QueueingHint.QUEUE
        old_ok = old is not None and cs.node_has_topology_keys(old.labels, hard)
        new_ok = new is not None and cs.node_has_topology_keys(new.labels, hard)
        if old is not None and new is not None:
            if old_ok != new_ok:
                return QueueingHint.QUEUE
            if new_ok and (
                cs.topology_keys_changed(old.labels, new.labels, hard) or old.taints != new.taints
            ):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if new is not None:
            return QueueingHint.QUEUE if new_ok else QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if old_ok else QueueingHint.QUEUE_SKIP


def _same_pod(a_pod: api.Pod, b_pod: api.Pod) -> bool:
    if a_pod.uid or b_pod.uid:
        return a_pod.uid == b_pod.uid
    return a_pod.key == b_pod.key


def _involved(incoming: api.Pod, pod: api.Pod) -> bool:
    """Upstream ``involvedInTopologySpreading``: the Pod itself, or a scheduled Pod in its
    namespace."""
    return _same_pod(incoming, pod) or (
        bool(incoming.node_name) and incoming.namespace == pod.namespace
    )


def new(args: object | None, handle: Handle) -> PodTopologySpread:
    """Factory; ``args`` is the raw PodTopologySpreadArgs mapping (or None: System)."""
    return PodTopologySpread(a.parse_args(args), handle)
