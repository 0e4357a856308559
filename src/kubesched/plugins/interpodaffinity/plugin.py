"""The InterPodAffinity plugin: PreFilter, Filter, PreScore, Score, NormalizeScore, hints.

Upstream ``interpodaffinity/plugin.go`` (v1.34, QueueingHints enabled).  The per-Pod work that
upstream does by walking every Pod in the cluster is read from the plugin's
:class:`~.index.AffinityIndex`, a cache observer registered at construction; see
:mod:`.filtering` and :mod:`.scoring` for the checks and formulas.

Args (``profile.plugin_config["InterPodAffinity"]``, a raw mapping already validated by the
config layer): ``hardPodAffinityWeight`` (default 1), ``ignorePreferredTermsOfExistingPods``
(default false).

Queueing hints (upstream's, incl. the finer node hint of v1.32+):

- Pod Add | UpdatePodLabel | Delete: an unscheduled Pod never helps; the target Pod's own
  update queues (from v1.36; before, it is an unscheduled Pod's); an added Pod queues when it
  matches all of the target's affinity terms; an updated one when it starts matching them
  all, or stops matching all anti-affinity terms; a deleted one when it matched all
  anti-affinity terms, or (from v1.36) its own required anti-affinity matched the target Pod
  (all its terms; v1.36 also counts a nominated Pod as placed).  v1.37 registers
  ``AssignedPod`` for these and ``TargetPod/UpdatePodLabel`` (always Queue) for the target's
  own update, and an anti-affinity term set matches when ANY term does (before: all).
- Node Add | UpdateNodeLabel: for an affinity term, a new node with the key or an update that
  adds the key or changes its value queues; for an anti-affinity term, any new node, or an
  update that removes the key or changes its value.  A Pod without terms is not queued.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework.contract import Locality
from kubesched.framework.interface import (
    SKIP,
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
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
from kubesched.plugins.interpodaffinity import filtering, scoring
from kubesched.plugins.interpodaffinity.index import AffinityIndex
from kubesched.plugins.interpodaffinity.terms import PodTerms, Term, pod_terms
from kubesched.state.cache import ClusterState

NAME = names.INTER_POD_AFFINITY
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME

_TABLE = {
    filtering.AFFINITY_CODE: Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (filtering.ERR_REASON_AFFINITY_RULES_NOT_MATCH,)
    ),
    filtering.ANTI_AFFINITY_CODE: Status(
        Code.UNSCHEDULABLE, (filtering.ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,)
    ),
    filtering.EXISTING_ANTI_AFFINITY_CODE: Status(
        Code.UNSCHEDULABLE, (filtering.ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,)
    ),
}


@dataclass(frozen=True, slots=True)
class InterPodAffinityArgs:
    """Upstream ``InterPodAffinityArgs``."""

    hard_pod_affinity_weight: int = 1
    """``hardPodAffinityWeight``: the score weight of existing Pods' required affinity."""
    ignore_preferred_terms_of_existing_pods: bool = False
    """``ignorePreferredTermsOfExistingPods``."""

    @staticmethod
    def from_raw(raw: Mapping[str, Any] | None) -> InterPodAffinityArgs:
        """From the configuration's raw (validated, defaulted) mapping, or None."""
        raw = raw or {}
        return InterPodAffinityArgs(
            int(raw.get("hardPodAffinityWeight", 1)),
            bool(raw.get("ignorePreferredTermsOfExistingPods", False)),
        )


class InterPodAffinity:
    """Required inter-pod (anti-)affinity as a filter, preferred as a score."""

    name = NAME
    locality = Locality.CROSS_NODE
    pre_score_missing: ClassVar[str] = (
        f'failed to read "{_PRE_SCORE_KEY}" from cycleState: not found'
    )
    """Upstream's Score error without this plugin's PreScore (``ScoreNeedsPreScore``)."""

    def __init__(self, args: InterPodAffinityArgs | None, handle: Handle) -> None:
        args = args or InterPodAffinityArgs()
        self.hard_pod_affinity_weight = args.hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = args.ignore_preferred_terms_of_existing_pods
        self.cluster = handle.cluster
        self.index = AffinityIndex(handle.cluster)
        self._v136_pod_hint = handle.feature_gates.at_least("1.36")
        """Upstream v1.36's Pod hint: the target Pod's own label update and a deleted Pod
        whose anti-affinity matched the target queue (v1.34 and v1.35: QueueSkip)."""
        self._v137_pod_hint = handle.feature_gates.at_least("1.37")
        """Upstream v1.37: AssignedPod and TargetPod events instead of Pod; anti-affinity
        terms match when ANY term does (before: ALL)."""

    def sign(self, pod: api.Pod) -> object:
        """Batching signature of a Pod without terms: the existing Pods' term groups that
        select it (its answers depend on nothing else; a Pod without terms placed in between
        changes no group).  A Pod with terms is not reusable (None)."""
        if pod.pod_affinity is not None or pod.pod_anti_affinity is not None:
            return None
        return self.index.matching_groups(pod) if self.index.has_groups() else ()

    # ------------------------------------------------------------------ filtering
    def pre_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[PreFilterResult | None, Status]:
        """Count what Filter needs; Skip when neither the Pod nor existing Pods constrain."""
        terms = pod_terms(pod)
        if terms.error:
            return None, Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"parsing pod: {terms.error}",)
            )
        s = filtering.pre_filter_state(self.index, pod, terms, cluster.namespaces.labels)
        if s is None:
            return None, SKIP
        state[_PRE_FILTER_KEY] = s
        return None, SUCCESS

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """Codes 1..3 for upstream's three checks, in upstream's order."""
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            s = filtering.pre_filter_state(
                self.index, pod, pod_terms(pod), cluster.namespaces.labels
            )
            if s is None:
                return Verdict.all_pass(rows.shape[0])
        codes, present = filtering.filter_codes(s, cluster.nodes, rows)
        return Verdict(codes, {k: _TABLE[k] for k in present})

    def candidate_rows(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState
    ) -> IntArray | None:
        """The rows where no required anti-affinity (the Pod's or an existing Pod's)
        rejects the Pod, or None (:func:`filtering.candidate_rows`): a search for the
        last free nodes of a mutually anti-affine group filters those alone."""
        s = state.get(_PRE_FILTER_KEY)
        if not isinstance(s, filtering.PreFilterState):
            return None
        return filtering.candidate_rows(s, cluster.nodes)

    def pre_filter_add_pod(
        self, state: CycleState, pod: api.Pod, other: api.Pod, row: int, cluster: ClusterState
    ) -> Status:
        """PreFilterExtensions ``AddPod``: count ``other`` on node ``row`` in this cycle."""
        return self._update(state, pod, other, row, 1, cluster)

    def pre_filter_remove_pod(
        self, state: CycleState, pod: api.Pod, other: api.Pod, row: int, cluster: ClusterState
    ) -> Status:
        """PreFilterExtensions ``RemovePod``: stop counting ``other`` on node ``row``."""
        return self._update(state, pod, other, row, -1, cluster)

    def _update(
        self,
        state: CycleState,
        pod: api.Pod,
        other: api.Pod,
        row: int,
        delta: int,
        cluster: ClusterState,
    ) -> Status:
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            return error(f'reading "{_PRE_FILTER_KEY}" from cycleState: not found')
        ns_labels = cluster.namespaces.labels.get(pod.namespace, {})
        state[_PRE_FILTER_KEY] = filtering.with_pod(
            s, cluster.nodes, pod, other, row, delta, ns_labels
        )
        return SUCCESS

    # ------------------------------------------------------------------ scoring
    def pre_score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Status:
        """Sum the topology scores; Skip when nothing contributes (upstream)."""
        terms = pod_terms(pod)
        if terms.error:
            return error(f"failed to parse pod: {terms.error}")
        s = self._pre_score_state(pod, terms, cluster)
        if s is None:
            return SKIP
        state[_PRE_SCORE_KEY] = s
        return SUCCESS

    def _pre_score_state(
        self, pod: api.Pod, terms: PodTerms, cluster: ClusterState
    ) -> scoring.PreScoreState | None:
        return scoring.pre_score_state(
            self.index,
            pod,
            terms,
            cluster.namespaces.labels,
            self.hard_pod_affinity_weight,
            self.ignore_preferred_terms_of_existing_pods,
        )

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """int64 ``(n,)``: the summed topology score of each row (may be negative)."""
        s = state.get(_PRE_SCORE_KEY)
        if s is None:
            s = self._pre_score_state(pod, pod_terms(pod), cluster)
            if s is None:
                s = scoring.PreScoreState()
            state[_PRE_SCORE_KEY] = s
        return scoring.raw_scores(s, cluster.nodes, rows)

    def normalize_score(self, state: CycleState, pod: api.Pod, scores: IntArray) -> None:
        """Min-max to ``[0, 100]`` in place; a no-op when no topology score exists."""
        s = state.get(_PRE_SCORE_KEY)
        if s is not None and s.by_key:
            scoring.normalize(scores)

    # ------------------------------------------------------------------ queueing hints
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pod Add|UpdatePodLabel|Delete and Node Add|UpdateNodeLabel, both hinted (v1.37+:
        AssignedPod instead of Pod, and TargetPod/UpdatePodLabel, always Queue)."""
        pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        node_event = ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
        if self._v137_pod_hint:
            target = ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE_POD_LABEL)
            return [
                ClusterEventWithHint(
                    ClusterEvent(Resource.ASSIGNED_POD, pod_actions),
                    self.is_schedulable_after_pod_change,
                ),
                ClusterEventWithHint(target),
                ClusterEventWithHint(node_event, self.is_schedulable_after_node_change),
            ]
        pod_event = ClusterEvent(Resource.POD, pod_actions)
        return [
            ClusterEventWithHint(pod_event, self.is_schedulable_after_pod_change),
            ClusterEventWithHint(node_event, self.is_schedulable_after_node_change),
        ]

    def is_schedulable_after_pod_change(self, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
        """See the module docstring."""
        if not isinstance(old, api.Pod | None) or not isinstance(new, api.Pod | None):
            return QueueingHint.QUEUE
        v136_only = self._v136_pod_hint and not self._v137_pod_hint
        if v136_only and new is not None and old is not None and _same_pod(new, pod):
            return QueueingHint.QUEUE
        if self._v136_pod_hint:  # a nominated Pod counts as placed
            if (new is not None and not new.node_name and not new.nominated_node_name) or (
                old is not None and not old.node_name and not old.nominated_node_name
            ):
                return QueueingHint.QUEUE_SKIP
        elif (new is not None and not new.node_name) or (old is not None and not old.node_name):
            return QueueingHint.QUEUE_SKIP
        # v1.37: an anti-affinity term set matches when any term does; before, all.
        match_anti = _match_any if self._v137_pod_hint else _match_all
        terms = pod_terms(pod)
        aff, anti = terms.required_affinity, terms.required_anti
        if old is not None and new is not None:
            if not _match_all(aff, old) and _match_all(aff, new):
                return QueueingHint.QUEUE
            if match_anti(anti, old) and not match_anti(anti, new):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if new is not None:
            return QueueingHint.QUEUE if _match_all(aff, new) else QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        if match_anti(anti, old):
            return QueueingHint.QUEUE
        if not self._v136_pod_hint:
            return QueueingHint.QUEUE_SKIP
        # v1.36+: the deleted Pod's own anti-affinity matched the target (namespace labels nil).
        if match_anti(pod_terms(old).required_anti, pod):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
        """See the module docstring."""
        if not isinstance(new, api.Node) or not isinstance(old, api.Node | None):
            return QueueingHint.QUEUE
        terms = pod_terms(pod)
        for t in terms.required_affinity:
            key = t.topology_key
            if key in new.labels and (old is None or old.labels.get(key) != new.labels[key]):
                return QueueingHint.QUEUE
        for t in terms.required_anti:
            key = t.topology_key
            if old is None:
                return QueueingHint.QUEUE
            if key in old.labels and old.labels[key] != new.labels.get(key):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def _same_pod(a: api.Pod, b: api.Pod) -> bool:
    if a.uid and b.uid:
        return a.uid == b.uid
    return a.key == b.key


def _match_all(terms: tuple[Term, ...], pod: api.Pod) -> bool:
    """Upstream ``podMatchesAllAffinityTerms`` (False for no terms; namespace labels nil)."""
    return bool(terms) and all(t.matches(pod.namespace, pod.labels, {}) for t in terms)


def _match_any(terms: tuple[Term, ...], pod: api.Pod) -> bool:
    """Upstream ``podMatchesAnyAffinityTerms`` (v1.37; namespace labels nil)."""
    return any(t.matches(pod.namespace, pod.labels, {}) for t in terms)


def new(args: object | None, handle: Handle) -> InterPodAffinity:
    """Factory; ``args`` is the raw (validated, defaulted) mapping, typed
    :class:`InterPodAffinityArgs`, or None."""
    if isinstance(args, InterPodAffinityArgs):
        return InterPodAffinity(args, handle)
    if args is not None and not isinstance(args, Mapping):
        raise TypeError(f"args are not a mapping for InterPodAffinity, got {type(args).__name__}")
    return InterPodAffinity(InterPodAffinityArgs.from_raw(args), handle)
