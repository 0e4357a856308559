"""PreScore, Score and NormalizeScore of InterPodAffinity (upstream ``scoring.go``).

Upstream's ``topologyScore[key][value]`` sums, over existing Pods on nodes labelled ``key``:

- ``+weight`` for each preferred affinity term of the incoming Pod the existing Pod matches,
  ``-weight`` for each preferred anti-affinity term;
- ``+hardPodAffinityWeight`` for each required affinity term of the existing Pod the incoming
  Pod matches (when the weight is > 0);
- ``+weight`` / ``-weight`` for each preferred affinity / anti-affinity term of the existing
  Pod the incoming Pod matches (namespace selectors against the incoming Pod's namespace
  labels).

A node's raw score is the sum of ``topologyScore[key][node's value of key]`` over the keys.
Here each contribution is ``weight * counts.domain(key)`` from the index, summed per key into
one int64 array per key, so Score is one gather per key.  PreScore returns Skip when
``ignorePreferredTermsOfExistingPods`` is set and the Pod has no preferred term, or when
nothing contributed at all.  NormalizeScore maps ``[min, max]`` of the scored nodes to
``[0, 100]`` with upstream's float64 arithmetic truncated toward zero (all 0 when max == min).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from kubesched.api import objects as api
from kubesched.framework.interface import MAX_NODE_SCORE, IntArray
from kubesched.plugins.interpodaffinity.index import (
    PREFERRED_AFFINITY,
    PREFERRED_ANTI,
    REQUIRED_AFFINITY,
    AffinityIndex,
    Counts,
)
from kubesched.plugins.interpodaffinity.terms import PodTerms
from kubesched.state.nodes import NodeTable

_min, _max = np.minimum.reduce, np.maximum.reduce
"""A score array's smallest and largest value (``a.min()`` without its Python wrapper)."""


@dataclass(slots=True)
class PreScoreState:
    """``by_key``: (topology key, int64 summed weight per label value code, trailing 0 slot)."""

    by_key: list[tuple[str, IntArray]] = field(default_factory=list)


class _Sum:
    """Accumulates weighted domain counts per topology key."""

    def __init__(self) -> None:
        self.acc: dict[str, IntArray] = {}
        self.hit = False

    def add(self, key: str, weight: int, counts: Counts, table: NodeTable) -> None:
        """Add ``weight`` times ``counts``' domain array of ``key``."""
        dom = counts.domain(key, table)
        if not counts.labelled[key]:
            return  # no matching Pod on a node labelled ``key``: upstream adds no entry
        self.hit = True
        cur = self.acc.get(key)
        if cur is None:
            self.acc[key] = weight * dom  # a copy: the domain array stays live
        elif weight == 1:
            cur += dom
        else:
            cur += weight * dom


def pre_score_state(
    index: AffinityIndex,
    pod: api.Pod,
    terms: PodTerms,
    namespaces: Mapping[str, Mapping[str, str]],
    hard_weight: int,
    ignore_existing_preferred: bool,
) -> PreScoreState | None:
    """The summed topology scores, or None when upstream's PreScore returns Skip."""
    has_preferred = bool(terms.preferred_affinity or terms.preferred_anti)
    if ignore_existing_preferred and not has_preferred:
        return None
    table = index.table
    total = _Sum()
    for sign, weighted in ((1, terms.preferred_affinity), (-1, terms.preferred_anti)):
        for weight, t in weighted:
            counts = index.counter((index.matcher(t, namespaces),))
            total.add(t.topology_key, sign * weight, counts, table)
    signs = {PREFERRED_AFFINITY: 1, PREFERRED_ANTI: -1}
    if hard_weight > 0:
        signs[REQUIRED_AFFINITY] = 1
    for kind, (weight, t) in index.matching_groups(pod):
        factor = signs.get(kind)
        if factor is not None:
            w = hard_weight if kind == REQUIRED_AFFINITY else weight
            counts = index.groups[kind][(weight, t)]
            total.add(t.topology_key, factor * w, counts, table)
    if not total.hit:
        return None
    return PreScoreState(list(total.acc.items()))


def raw_scores(state: PreScoreState, table: NodeTable, rows: IntArray) -> IntArray:
    """int64 ``(n,)``: each row's summed topology score."""
    scores = np.zeros(rows.shape[0], dtype=np.int64)
    for key, per_value in state.by_key:
        col = table.label_codes.get(key)
        if col is not None:
            scores += per_value[col[rows]]
    return scores


def normalize(scores: IntArray) -> None:
    """In place: ``int64(100 * (s - min) / (max - min))`` (float64, truncated), or 0."""
    if scores.shape[0] == 0:
        return
    lo = int(_min(scores))
    diff = int(_max(scores)) - lo
    if diff <= 0:
        scores.fill(0)
        return
    # the same float64 steps as ``int64(100 * ((s - lo) / diff))``, in one scratch array;
    # assigning float64 to int64 truncates toward zero as ``astype`` does
    frac = np.subtract(scores, lo).astype(np.float64)
    np.true_divide(frac, float(diff), out=frac)
    np.multiply(frac, float(MAX_NODE_SCORE), out=frac)
    scores[...] = frac
