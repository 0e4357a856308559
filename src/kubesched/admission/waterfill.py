"""Weighted water-filling: how a parent's capacity is shared among its children.

Each child first gets what it demands up to its guaranteed ``minimum``; what is left is
poured into the children that still want more, in proportion to their ``weight``, each
capped at ``min(demand, maximum)``.  This is the runtime quota of Koordinator's
ElasticQuota tree (``runtime_quota_calculator.go``), in exact integer arithmetic: whole units
are shared by ``floor(rest / total_weight) * weight`` per round, and the last few units up to
``weight`` each to the heaviest children (ties: lower index), so results are deterministic.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

UNLIMITED = 2**62
"""An amount larger than any real capacity (no limit)."""


def fill(amount: int, caps: IntArray, weights: IntArray) -> IntArray:
    """Share ``amount`` among children with ``caps`` in proportion to ``weights``.

    ``caps``, ``weights`` : int64 arrays of shape ``(n,)`` (weights > 0).  Returns int64
    ``(n,)`` allocations, each ``<= caps``, summing to ``min(amount, caps.sum())``.
    """
    n = caps.shape[0]
    alloc = np.zeros(n, dtype=np.int64)
    rest = int(amount)
    active = caps > 0
    while rest > 0 and bool(active.any()):
        total_weight = int(weights[active].sum())
        room = caps - alloc
        per = min(rest // total_weight, int(room.max()))  # bounded: no int64 overflow
        if per == 0:  # fewer units left than the total weight: hand them out by weight
            for i in np.lexsort((np.arange(n), -weights)).tolist():
                if rest == 0:
                    break
                if active[i]:
                    give = min(int(weights[i]), int(room[i]), rest)
                    alloc[i] += give
                    rest -= give
            active &= alloc < caps
            continue
        inc = np.where(active, np.minimum(room, per * weights), 0)
        alloc += inc
        rest -= int(inc.sum())
        active &= alloc < caps
    return alloc


def waterfill(
    total: int,
    demand: IntArray,
    minimum: IntArray,
    maximum: IntArray,
    weights: IntArray,
) -> IntArray:
    """Runtime share of each child of a parent that has ``total`` to give.

    All arrays int64 of shape ``(n,)``.  A child gets at most ``min(demand, maximum)``;
    guarantees (``minimum``) are served first (shared by weight if ``total`` cannot cover
    them all), the rest by weight.  The result sums to at most ``total``.
    """
    cap = np.minimum(np.maximum(demand, 0), maximum)
    base = np.minimum(cap, minimum)
    if int(base.sum()) > total:
        return fill(total, base, weights)
    return base + fill(total - int(base.sum()), cap - base, weights)
