"""The NodeAffinity plugin class, its queueing hints and the factory (upstream
``nodeaffinity/node_affinity.go``); see the package docstring for the semantics and
:mod:`.selectors` for the compiled requirements."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.config import names
from kubesched.config.args import NodeAffinityArgs
from kubesched.framework.contract import Locality
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
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
from kubesched.framework.outcomes import PluginError
from kubesched.plugins.nodeaffinity.selectors import (
    Problems,
    Term,
    compile_preferred,
    compile_terms,
    pod_preferred,
    preferred_scores,
    required_affinity,
    required_node_names,
    terms_mask,
    terms_match,
)
from kubesched.state.cache import ClusterState

NAME = names.NODE_AFFINITY
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME

_ENFORCED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_ENFORCED,))
_POD = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_POD,))
_CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,))


# --------------------------------------------------------------------------- the plugin
class NodeAffinity:
    """Filters by required node affinity/selector; scores preferred node affinity."""

    name = NAME
    locality = Locality.NODE_LOCAL
    node_only = True
    """Answers depend on the node object only, not on the Pods placed on it."""

    def __init__(self, args: NodeAffinityArgs | None, handle: Handle) -> None:
        self.handle = handle
        self.added_terms: tuple[Term, ...] | None = None
        self.added_preferred: tuple[tuple[int, Term], ...] | None = None
        added = args.added_affinity if args is not None else None
        if added is None:
            return
        path = "addedAffinity"
        problems: Problems = []
        if added.required is not None:
            req_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
            self.added_terms = compile_terms(added.required, f"{req_path}.", problems)
        if added.preferred:
            pref_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
            self.added_preferred = compile_preferred(added.preferred, pref_path, problems)
        if problems:
            raise InputError(problems)

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: the answer depends on the node selector and node affinity only."""
        return (tuple(sorted(pod.node_selector.items())), pod.node_affinity)

    def pre_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[PreFilterResult | None, Status]:
        """Compile the Pod's required affinity; narrow to ``metadata.name`` terms if any."""
        required = pod.node_affinity.required if pod.node_affinity else None
        if required is None and self.added_terms is None and not pod.node_selector:
            return None, SKIP
        state[_PRE_FILTER_KEY] = required_affinity(pod)
        if not required:
            return None, SUCCESS
        names = required_node_names(required)
        if names is None:
            return None, SUCCESS
        if not names:
            return None, _CONFLICT
        return PreFilterResult(frozenset(names)), SUCCESS

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """Code 1: fails addedAffinity; code 2: fails the Pod's own selector/affinity."""
        required = state.get(_PRE_FILTER_KEY)
        if required is None:  # PreFilter did not run: compute as it would have
            required = required_affinity(pod)
        table = cluster.nodes
        codes = np.zeros(rows.shape[0], dtype=np.int8)
        if self.added_terms is not None:
            codes[~terms_mask(self.added_terms, table, rows)] = 1
        if required.node_selector is not None or required.terms is not None:
            codes[(codes == 0) & ~required.mask(table, rows)] = 2
        return Verdict(
            codes, {k: st for k, st in ((1, _ENFORCED), (2, _POD)) if (codes == k).any()}
        )

    def pre_score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Status:
        """Compile the Pod's preferred terms; Skip when neither it nor the profile has any."""
        problems: Problems = []
        preferred = pod_preferred(pod, problems)
        if problems:
            return error(_parse_error(problems))
        if preferred is None and self.added_preferred is None:
            return SKIP
        state[_PRE_SCORE_KEY] = preferred
        return SUCCESS

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """int64 ``(n,)``: summed weights of matching preferred terms."""
        scores = np.zeros(rows.shape[0], dtype=np.int64)
        if self.added_preferred is not None:
            scores += preferred_scores(self.added_preferred, cluster.nodes, rows)
        if _PRE_SCORE_KEY in state:
            preferred = state[_PRE_SCORE_KEY]
        else:  # PreScore disabled: upstream's Score compiles the terms, erring as PreScore does
            problems: Problems = []
            preferred = pod_preferred(pod, problems)
            if problems and rows.size:
                raise PluginError(NAME, _parse_error(problems), point="score")
        if preferred is not None:
            scores += preferred_scores(preferred, cluster.nodes, rows)
        return scores

    def normalize_score(self, state: CycleState, pod: api.Pod, scores: IntArray) -> None:
        """``DefaultNormalizeScore(100, reverse=False)`` in place."""
        max_count = max(int(scores.max(initial=0)), 0)
        if max_count:
            prod = scores * MAX_NODE_SCORE
            scores[:] = np.abs(prod) // max_count * np.sign(prod)  # Go truncating division

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Node/Add|UpdateNodeLabel, hinted."""
        event = ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
        return [ClusterEventWithHint(event, self.is_schedulable_after_node_change)]

    # ----------------------------------------------------------------------- queueing hints
    def is_schedulable_after_node_change(self, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when the new node matches (added and Pod affinity) and the old did not."""
        if not isinstance(new, api.Node) or (old is not None and not isinstance(old, api.Node)):
            return QueueingHint.QUEUE
        if (
            self.added_terms is not None
            and not terms_match(self.added_terms, new.labels, new.name)[0]
        ):
            return QueueingHint.QUEUE_SKIP
        required = required_affinity(pod)
        matched, err = required.match_node(new)
        if err:
            return QueueingHint.QUEUE
        if not matched:
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        was, err = required.match_node(old)
        return QueueingHint.QUEUE if err or not was else QueueingHint.QUEUE_SKIP


def new(args: object | None, handle: Handle) -> NodeAffinity:
    """Factory; ``args`` must be :class:`NodeAffinityArgs` or None (InputError if invalid)."""
    if args is not None and not isinstance(args, NodeAffinityArgs):
        raise TypeError(f"args are not of type NodeAffinityArgs, got {type(args).__name__}")
    return NodeAffinity(args, handle)


def _parse_error(problems: Problems) -> str:
    """Upstream's aggregated parse errors of the preferred terms (one, or ``[a, b]``)."""
    msgs = [f"{p}: {m}" for p, m in problems]
    return msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
