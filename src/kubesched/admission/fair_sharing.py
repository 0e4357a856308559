"""Kueue's fair sharing: the dominant resource share (DRS) of a ClusterQueue in its cohort.

Ported from Kueue v1beta1 (``pkg/cache/fair_sharing.go``, flat cohorts)::

    borrowing[r] = sum over flavors f of max(0, usage[f, r] + request[f, r] - nominal[f, r])
    lendable[r]  = sum over the cohort's ClusterQueues and flavors of
                   min(nominal, lendingLimit)          (nominal without a lending limit)
    DRS          = max over r with lendable[r] > 0 of  borrowing[r] * 1000 // lendable[r]
    share        = DRS * 1000 // weight_milli           (ClusterQueue spec.fairSharing.weight)

with Go's integer arithmetic, so a share is an integer from 0 (nothing borrowed) to
1,000,000 (for weight 1, at most 1000).  A ClusterQueue outside any cohort has share 0; one
of weight 0 has :data:`MAX_SHARE` (it gets nothing it has to borrow while anyone else
wants it).  Ties between resources go to the alphabetically first name.

Where shares are used (``fairSharing.enable`` in :class:`~kubesched.admission.kueue_config.
KueueConfig`): the admission loop takes, among the heads of all ClusterQueues, the one whose
queue would have the lowest share *after* admitting it (Kueue's ``entryOrdering``: share,
then priority, then FIFO), and preemption inside a cohort picks victims from the queues with
the highest share (:func:`kubesched.admission.kueue_preemption.fair_preemptions`).
"""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.admission.kueue_workload import KueueView as Admitter

FlavorResource = tuple[str, str]

MAX_SHARE = 2**63 - 1
"""Go's ``math.MaxInt``: the share of a borrowing ClusterQueue of weight 0."""


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def lendable(adm: Admitter, cohort: str) -> dict[str, int]:
    """What the cohort's ClusterQueues lend, per resource name over all flavors."""
    out: dict[str, int] = {}
    for spec in adm.objs.cluster_queues.values():
        if spec.cohort != cohort:
            continue
        for group in spec.resource_groups:
            for _flavor, quotas in group.flavors:
                for res, q in quotas.items():
                    lent = q.nominal if q.lending_limit is None else min(q.nominal, q.lending_limit)
                    out[res] = out.get(res, 0) + lent
    return out


def dominant_resource_share(
    adm: Admitter, cq: str, delta: Mapping[FlavorResource, int] | None = None
) -> tuple[int, str]:
    """``(share, resource)`` of ``cq`` with ``delta`` added to its usage (a workload's
    request to admit it, or minus its usage to evict it); see the module docstring."""
    spec = adm.objs.cluster_queues[cq]
    if not spec.cohort:
        return 0, ""
    if spec.weight_milli == 0:
        return MAX_SHARE, ""
    usage = adm.usage[cq]
    extra = delta or {}
    borrowing: dict[str, int] = {}
    for group in spec.resource_groups:
        for flavor, quotas in group.flavors:
            for res, q in quotas.items():
                fr = (flavor, res)
                amount = extra.get(fr, 0) + usage.get(fr, 0) - q.nominal
                if amount > 0:
                    borrowing[res] = borrowing.get(res, 0) + amount
    if not borrowing:
        return 0, ""
    lent = lendable(adm, spec.cohort)
    drs, name = -1, ""
    for res in sorted(borrowing):
        lr = lent.get(res, 0)
        if lr > 0:
            ratio = borrowing[res] * 1000 // lr
            if ratio > drs:
                drs, name = ratio, res
    return _go_div(drs * 1000, spec.weight_milli), name


def request_by_flavor(
    request: Mapping[str, int], assignment: Mapping[str, str]
) -> dict[FlavorResource, int]:
    """A workload's request per (flavor, resource) under a resource -> flavor assignment."""
    out: dict[FlavorResource, int] = {}
    for res, flavor in assignment.items():
        v = request.get(res, 0)
        if v:
            out[(flavor, res)] = out.get((flavor, res), 0) + v
    return out


def less_than_or_equal_to_final_share(preemptor_new: int, target_old: int, target_new: int) -> bool:
    """Rule S2-a (``LessThanOrEqualToFinalShare``): the preemptor's share after admission is
    at most the target queue's share after the eviction."""
    del target_old
    return preemptor_new <= target_new


def less_than_initial_share(preemptor_new: int, target_old: int, target_new: int) -> bool:
    """Rule S2-b (``LessThanInitialShare``): the preemptor's share after admission is below
    the target queue's share before the eviction."""
    del target_new
    return preemptor_new < target_old


STRATEGIES = {
    "LessThanOrEqualToFinalShare": less_than_or_equal_to_final_share,
    "LessThanInitialShare": less_than_initial_share,
}
"""``fairSharing.preemptionStrategies`` names -> rule."""
