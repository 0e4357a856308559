"""PreFilter and Filter of PodTopologySpread (upstream ``filtering.go``).

PreFilter counts, for each hard (``DoNotSchedule``) constraint, the matching Pods per domain
over *all* nodes that have every topology key and pass the constraint's inclusion policies;
the global minimum is the least-populated such domain, or 0 while fewer than ``minDomains``
domains exist.  Filter then rejects, constraint by constraint in order, a node

- without the topology key: UnschedulableAndUnresolvable
  ``node(s) didn't match pod topology spread constraints (missing required label)``;
- where ``matching + selfMatch - globalMinimum > maxSkew``: Unschedulable
  ``node(s) didn't match pod topology spread constraints``.

Counts come from the incrementally maintained per-row arrays; per cycle the work is one
``bincount`` per constraint and a few gathers over the candidate rows.

PreFilterExtensions (upstream ``AddPod`` / ``RemovePod``, used by preemption's dry runs and
the nominated-Pod pass): :func:`with_pod` returns the state with one Pod added to or removed
from one node's domains, the global minimum recomputed exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.framework.interface import Code, CodeArray, Status
from kubesched.plugins.podtopologyspread import domains
from kubesched.plugins.podtopologyspread.constraints import Constraint
from kubesched.plugins.podtopologyspread.counts import MatchCounts
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import BoolArray, IntArray

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

CODE_SKEW = 1
CODE_MISSING_LABEL = 2
_BIG = 2**62
_MIN = np.minimum.reduce
STATUSES = {
    CODE_SKEW: Status(Code.UNSCHEDULABLE, (ERR_REASON_CONSTRAINTS_NOT_MATCH,)),
    CODE_MISSING_LABEL: Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_NODE_LABEL_NOT_MATCH,)
    ),
}


@dataclass(frozen=True, slots=True)
class HardConstraint:
    """One hard constraint with its PreFilter counts.

    ``column`` : int32 ``(capacity,)`` label codes of the topology key; ``domain_counts`` :
    int64 ``(size,)`` matching Pods per domain code; ``present`` : bool ``(size,)`` domains
    with an eligible node; ``min_match`` : the global minimum (minDomains applied);
    ``self_match`` : 1 if the incoming Pod matches its own selector; ``verdicts`` : int8
    ``(size,)`` the Filter code of a node per label code, the last slot (index -1) being
    :data:`CODE_MISSING_LABEL` for nodes without the label; ``group`` : the nodes that
    count for the constraint (topology keys present, inclusion policies passed).
    """

    constraint: Constraint
    column: npt.NDArray[np.int32]
    domain_counts: IntArray
    present: BoolArray
    min_match: int
    self_match: int
    verdicts: CodeArray
    group: domains.NodeGroup

    @property
    def domains_num(self) -> int:
        """Number of eligible domains (upstream ``len(TpValueToMatchNum[i])``)."""
        return int(self.present.sum())


@dataclass(frozen=True, slots=True)
class PreFilterState:
    """What PreFilter computed for the Pod; Filter reads only this."""

    constraints: tuple[HardConstraint, ...]

    def match_nums(self, cluster: ClusterState) -> list[dict[str, int]]:
        """Per constraint, ``{domain value: matching Pods}`` for eligible domains (tests)."""
        out = []
        for hc in self.constraints:
            values = cluster.nodes.label_values.get(hc.constraint.topology_key, {})
            out.append(
                {v: int(hc.domain_counts[code]) for v, code in values.items() if hc.present[code]}
            )
        return out


def compute_pre_filter_state(
    cluster: ClusterState,
    store: MatchCounts,
    pod: api.Pod,
    constraints: Sequence[Constraint],
    comparison: bool = False,
) -> PreFilterState:
    """Upstream ``calPreFilterState`` over every node of ``cluster`` (``comparison``: the
    gate TaintTolerationComparisonOperators, for ``nodeTaintsPolicy: Honor``)."""
    groups = domains.node_groups(cluster, store, pod, constraints, comparison=comparison)
    hard = []
    for c, group in zip(constraints, groups, strict=True):
        counts = group.domain_counts(store, cluster, pod.namespace, c.selector).copy()
        column = cluster.nodes.label_codes[c.topology_key]
        self_match = 1 if c.selector.matches(pod.labels) else 0
        hard.append(_hard(c, column, counts, self_match, group))
    return PreFilterState(tuple(hard))


def refresh_pre_filter_state(
    cluster: ClusterState, store: MatchCounts, pod: api.Pod, old: PreFilterState
) -> PreFilterState:
    """:func:`compute_pre_filter_state` again for the same Pod, nodes unchanged since ``old``
    (only Pods came or went): the node groups are reused, the counts read afresh."""
    hard = []
    for hc in old.constraints:
        c, group = hc.constraint, hc.group
        counts = group.domain_counts(store, cluster, pod.namespace, c.selector).copy()
        hard.append(_hard(c, hc.column, counts, hc.self_match, group))
    return PreFilterState(tuple(hard))


def _hard(
    c: Constraint,
    column: npt.NDArray[np.int32],
    counts: IntArray,
    self_match: int,
    group: domains.NodeGroup,
) -> HardConstraint:
    present = group.present
    num = group.domains_num
    # (the ufuncs themselves: ndarray.min and astype cost a Python wrapper call each)
    min_match = 0 if num < c.min_domains else int(_MIN(counts, where=present, initial=_BIG))
    # skew = matching + selfMatch - globalMinimum > maxSkew, decided once per label code
    limit = c.max_skew + min_match - self_match
    verdicts: CodeArray = np.greater(counts, limit).view(np.int8)  # True -> 1 == CODE_SKEW
    verdicts[-1] = CODE_MISSING_LABEL  # the spare slot: label code -1 indexes it
    return HardConstraint(c, column, counts, present, min_match, self_match, verdicts, group)


def with_pod(
    state: PreFilterState, other: api.Pod, namespace: str, row: int, delta: int
) -> PreFilterState:
    """Upstream ``updateWithPod``: ``state`` with ``other`` counted ``delta`` (1 added, -1
    removed) more times on node ``row``, for the incoming Pod of ``namespace``.

    Only a Pod of the same namespace on a node with every topology key counts, for each
    constraint whose selector it matches and whose inclusion policies the node passes.  The
    global minimum is recomputed over the domains (upstream updates its two critical paths;
    for changes confined to one node's domains, as preemption and nominated Pods make, both
    give the same minimum).
    """
    if other.namespace != namespace:
        return state
    hard = state.constraints
    if any(hc.column[row] < 0 for hc in hard):
        return state
    out = []
    for hc in hard:
        code = int(hc.column[row])
        if (
            not hc.constraint.selector.matches(other.labels)
            or code >= hc.domain_counts.shape[0]
            or not hc.group.has(row)
        ):
            out.append(hc)
            continue
        counts = hc.domain_counts.copy()
        counts[code] += delta
        out.append(_hard(hc.constraint, hc.column, counts, hc.self_match, hc.group))
    return PreFilterState(tuple(out))


def only_narrowed(old: PreFilterState, new: PreFilterState) -> bool:
    """Whether every node ``new`` accepts was accepted by ``old`` (same constraints)."""
    for o, n in zip(old.constraints, new.constraints, strict=True):
        if o.verdicts.shape != n.verdicts.shape or bool(
            ((o.verdicts != 0) & (n.verdicts == 0)).any()
        ):
            return False
    return True


def filter_codes(state: PreFilterState, rows: IntArray) -> CodeArray:
    """int8 ``(n,)``: 0 fits, :data:`CODE_SKEW` or :data:`CODE_MISSING_LABEL` per row.

    The first constraint (in order) a row fails decides its code, as upstream's loop does.
    """
    first, *others = state.constraints
    codes: CodeArray = first.verdicts[first.column[rows]]
    for hc in others:
        more = hc.verdicts[hc.column[rows]]
        undecided = codes == 0
        codes[undecided] = more[undecided]
    return codes
