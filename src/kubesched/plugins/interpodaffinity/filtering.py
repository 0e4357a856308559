"""PreFilter and Filter of InterPodAffinity (upstream ``interpodaffinity/filtering.go``).

PreFilter reads the counts the :class:`~.index.AffinityIndex` keeps current and turns them,
per topology key, into a small verdict table: the code of the first check a node in each
domain fails (0 when it passes them all).  Filter is then one gather per key with the
candidate rows' label codes (the smallest non-zero code over the keys wins, as upstream
stops at the first failing check).  Upstream's three checks, in its order, with their codes:

1. the incoming Pod's required affinity: every term's topology key must be on the node, and
   the node's domain must hold a Pod matching *all* the terms, unless no Pod anywhere matches
   them all and the Pod matches its own terms (the first Pod of a group):
   UnschedulableAndUnresolvable ``node(s) didn't match pod affinity rules``;
2. the incoming Pod's required anti-affinity: no term may have a matching Pod in the node's
   domain: Unschedulable ``node(s) didn't match pod anti-affinity rules``;
3. existing Pods' required anti-affinity: no existing Pod whose term matches the incoming Pod
   may sit in the node's domain for that term's key: Unschedulable
   ``node(s) didn't satisfy existing pods anti-affinity rules``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.framework.interface import CodeArray, IntArray
from kubesched.plugins.interpodaffinity.index import REQUIRED_ANTI, AffinityIndex
from kubesched.plugins.interpodaffinity.terms import Matcher, PodTerms, pod_terms
from kubesched.state.nodes import NodeTable

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

AFFINITY_CODE = 1
ANTI_AFFINITY_CODE = 2
EXISTING_ANTI_AFFINITY_CODE = 3


@dataclass(slots=True)
class PreFilterState:
    """What PreFilter counted and what Filter reads.

    Counts are int64 arrays indexed by the value code of a node label (the last slot for
    nodes without it): ``affinity[key]`` Pods matching *all* the incoming Pod's required
    affinity terms (once per term on ``key``), ``anti[key]`` Pods matching one of its
    required anti-affinity terms on ``key``, ``existing[key]`` existing Pods whose required
    anti-affinity term on ``key`` matches the incoming Pod.  ``verdicts[key]`` (derived by
    :func:`finish`) holds the first failing check's code for nodes in each domain, 0 when
    they pass every check on that key.
    """

    affinity: dict[str, IntArray] = field(default_factory=dict)
    anti: dict[str, IntArray] = field(default_factory=dict)
    existing: dict[str, IntArray] = field(default_factory=dict)
    affinity_terms: tuple[tuple[str, Matcher], ...] = ()
    """(topology key, matcher) of each required affinity term of the incoming Pod."""
    anti_terms: tuple[tuple[str, Matcher], ...] = ()
    self_match: bool = False
    """The incoming Pod matches all its own affinity terms (the first-Pod exception)."""
    verdicts: dict[str, CodeArray] = field(default_factory=dict)


def _mark(state: PreFilterState, key: str, fails: npt.NDArray[np.bool_], code: int) -> None:
    """Domains where ``fails`` get ``code`` unless an earlier check failed there (checks are
    marked in upstream's order, so an earlier failure has the smaller code)."""
    t = state.verdicts.get(key)
    if t is None:
        state.verdicts[key] = np.multiply(fails, code, dtype=np.int8)
    else:
        np.copyto(t, np.int8(code), where=fails & (t == 0))


def _accumulate(acc: dict[str, IntArray], key: str, dom: IntArray) -> None:
    cur = acc.get(key)
    acc[key] = dom.copy() if cur is None else cur + dom


def existing_anti_domains(index: AffinityIndex, pod: api.Pod) -> dict[str, IntArray]:
    """Per topology key, how many existing Pods whose required anti-affinity terms match
    ``pod`` sit in each domain (upstream ``getExistingAntiAffinityCounts``), from the groups
    the index has matched to ``pod``'s namespace and labels."""
    acc: dict[str, IntArray] = {}
    groups = index.groups[REQUIRED_ANTI]
    if not groups:  # no accounted Pod has required anti-affinity: no group to match
        return acc
    table = index.table
    for kind, gkey in index.matching_groups(pod):
        if kind == REQUIRED_ANTI:
            key = gkey[1].topology_key
            _accumulate(acc, key, groups[gkey].domain(key, table))
    return acc


def pre_filter_state(
    index: AffinityIndex,
    pod: api.Pod,
    terms: PodTerms,
    namespaces: Mapping[str, Mapping[str, str]],
) -> PreFilterState | None:
    """The state for Filter, or None when upstream's PreFilter returns Skip (no required
    term and no existing Pod's anti-affinity matching the Pod on a labelled node)."""
    existing = existing_anti_domains(index, pod)
    existing = {k: d for k, d in existing.items() if np.count_nonzero(d)}
    if not existing and not terms.required_affinity and not terms.required_anti:
        return None
    state = PreFilterState(existing=existing)
    table = index.table
    if terms.required_affinity:
        matchers = tuple(index.matcher(t, namespaces) for t in terms.required_affinity)
        counts = index.counter(matchers)
        for t in terms.required_affinity:
            _accumulate(state.affinity, t.topology_key, counts.domain(t.topology_key, table))
        state.affinity_terms = tuple(
            (t.topology_key, m) for t, m in zip(terms.required_affinity, matchers, strict=True)
        )
        state.self_match = all(m.matches(pod.namespace, pod.labels) for m in matchers)
    if terms.required_anti:
        anti = tuple((t.topology_key, index.matcher(t, namespaces)) for t in terms.required_anti)
        for key, m in anti:
            _accumulate(state.anti, key, index.counter((m,)).domain(key, table))
        state.anti_terms = anti
    return finish(state)


def finish(state: PreFilterState) -> PreFilterState:
    """Derive ``state.verdicts`` from its counts (upstream's three checks, in order)."""
    state.verdicts = {}
    if state.affinity_terms:
        # The first Pod of a group: nothing anywhere matches and the Pod matches its terms.
        first_pod = state.self_match and not any(
            np.count_nonzero(d) for d in state.affinity.values()
        )
        for key, dom in state.affinity.items():
            # The domain must hold a matching Pod (the missing-label slot never does), or for
            # the first Pod of a group only the label must be there.
            if first_pod:
                fails = np.zeros(dom.shape[0], dtype=np.bool_)
                fails[-1] = True
            else:
                fails = dom <= 0
            _mark(state, key, fails, AFFINITY_CODE)
    for key, dom in state.anti.items():
        if np.count_nonzero(dom):
            _mark(state, key, dom > 0, ANTI_AFFINITY_CODE)
    for key, dom in state.existing.items():
        if np.count_nonzero(dom):
            _mark(state, key, dom > 0, EXISTING_ANTI_AFFINITY_CODE)
    return state


def with_pod(
    state: PreFilterState,
    table: NodeTable,
    pod: api.Pod,
    other: api.Pod,
    row: int,
    delta: int,
    ns_labels: Mapping[str, str],
) -> PreFilterState:
    """Upstream ``updateWithPod``: a copy of ``state`` with ``other`` counted ``delta`` (1
    added, -1 removed) more times on node ``row``, for incoming Pod ``pod``; ``ns_labels``
    are the labels of ``pod``'s namespace.  A node without a term's topology key counts for
    nothing on that key, as upstream."""
    new = replace(
        state,
        affinity=dict(state.affinity),
        anti=dict(state.anti),
        existing=dict(state.existing),
    )
    for t in pod_terms(other).required_anti:
        if t.matches(pod.namespace, pod.labels, ns_labels):
            _bump(new.existing, table, t.topology_key, row, delta)
    if state.affinity_terms and all(
        m.matches(other.namespace, other.labels) for _, m in state.affinity_terms
    ):
        for key, _ in state.affinity_terms:
            _bump(new.affinity, table, key, row, delta)
    for key, m in state.anti_terms:
        if m.matches(other.namespace, other.labels):
            _bump(new.anti, table, key, row, delta)
    return finish(new)


def _bump(counts: dict[str, IntArray], table: NodeTable, key: str, row: int, delta: int) -> None:
    """Add ``delta`` to the domain of node ``row`` in ``counts[key]`` (a new array; the
    caller's dict is a copy), unless the node lacks label ``key``."""
    col = table.label_codes.get(key)
    code = -1 if col is None else int(col[row])
    if code < 0:
        return
    size = len(table.label_values.get(key, ())) + 1
    old = counts.get(key)
    dom = np.zeros(max(size, 0 if old is None else old.shape[0]), dtype=np.int64)
    if old is not None:
        dom[: old.shape[0] - 1] = old[:-1]
    dom[code] += delta
    counts[key] = dom


def candidate_rows(state: PreFilterState, table: NodeTable) -> IntArray | None:
    """int64 rows (ascending, over the table's capacity) where no anti-affinity check
    fails, or None when none fails anywhere.  A node outside them fails the incoming
    Pod's or an existing Pod's required anti-affinity; nominated Pods counted there
    (added, never removed, in a search) only raise those counts, so it fails with them
    too (``kubesched.framework.filterphase`` then filters the other rows alone)."""
    bad: npt.NDArray[np.bool_] | None = None
    for key, verdict in state.verdicts.items():
        sure = verdict >= ANTI_AFFINITY_CODE
        if not sure.any():
            continue
        col = table.label_codes.get(key)
        if col is None:  # no node has the label: every node is in the missing-label slot
            if sure[-1]:
                return np.zeros(0, dtype=np.int64)
            continue
        hit = sure[col]
        bad = hit if bad is None else bad | hit
    if bad is None:
        return None
    return np.flatnonzero(~bad).astype(np.int64, copy=False)


def _codes(table: NodeTable, key: str, rows: IntArray) -> npt.NDArray[np.int32]:
    col = table.label_codes.get(key)
    if col is None:
        return np.full(rows.shape[0], -1, dtype=np.int32)
    return col[rows]


def filter_codes(
    state: PreFilterState, table: NodeTable, rows: IntArray
) -> tuple[CodeArray, list[int]]:
    """int8 ``(n,)``: 0 where ``rows[i]`` passes, else the first failing check's code; and
    the codes that occur."""
    out: CodeArray | None = None
    for key, verdict in state.verdicts.items():
        codes = verdict[_codes(table, key, rows)]
        if out is None:
            out = codes
        else:  # the smallest non-zero code: 0 becomes 127 for np.minimum, then back
            out = np.minimum(np.where(out == 0, 127, out), np.where(codes == 0, 127, codes))
            out[out == 127] = 0
    if out is None:
        return np.zeros(rows.shape[0], dtype=np.int8), []
    counts = np.bincount(out, minlength=EXISTING_ANTI_AFFINITY_CODE + 1)
    return out, [k for k in range(1, counts.shape[0]) if counts[k]]
