"""Kueue's admission-level preemption: which admitted workloads to evict for a pending one.

Ported from Kueue v1beta1 (``pkg/scheduler/preemption/preemption.go``, flat cohorts):

- *flavors*: per resource group the first flavor where the request fits; else the first
  where it could fit after preemption (each resource at most ``nominalQuota``, or, with
  ``borrowWithinCohort``, at most ``nominal + borrowingLimit``).  The flavor/resources that
  do not fit now are the ones *requiring preemption*;
- *candidates*: admitted workloads using one of those, from the own ClusterQueue per
  ``withinClusterQueue`` (``LowerPriority``: strictly lower priority;
  ``LowerOrNewerEqualPriority``: also equal priority created later), and from the other
  ClusterQueues of the cohort that are *borrowing* one of those resources per
  ``reclaimWithinCohort`` (``LowerPriority``: strictly lower; ``Any``: any priority);
- *order*: other queues' workloads first, then lower priority, then most recently admitted
  (then later admission sequence, our stand-in for Kueue's UID tie-break);
- *minimal set*: remove candidates in that order (skipping other queues' ones once they
  stop borrowing) until the preemptor fits, then add back, newest removal first, every one
  whose return still lets it fit.  Own-queue victims may leave the preemptor borrowing;
  victims from other queues only when it stays within its nominal quota, unless
  ``borrowWithinCohort`` allows it for victims below its priority threshold.

With fair sharing (:func:`fair_preemptions`), victims from other queues are chosen by
share instead: the candidate queues are visited highest share first; a workload of another
queue is taken when the first ``preemptionStrategies`` rule holds (or it is below the
``borrowWithinCohort`` threshold), one of the preemptor's own queue in candidate order;
when that is not enough, the second rule is tried once per remaining queue; the minimal set
is then found as above, and borrowing while preempting is allowed.

Reasons are Kueue's: ``InClusterQueue``, ``InCohortReclamation``, ``InCohortFairSharing``,
``InCohortReclaimWhileBorrowing``.  Usage is simulated on the admitter in place and
restored before returning.
"""

from __future__ import annotations

from typing import Any

from kubesched.admission import fair_sharing as fs
from kubesched.admission.kueue_workload import KueueView as Admitter
from kubesched.admission.kueue_workload import Target, Workload

FlavorResource = tuple[str, str]

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"


def can_preempt(adm: Admitter, cq: str) -> bool:
    """Whether the ClusterQueue's policies allow any preemption at all."""
    spec = adm.objs.cluster_queues[cq]
    within = spec.within_cluster_queue != "Never"
    reclaim = bool(spec.cohort) and spec.reclaim_within_cohort != "Never"
    return within or reclaim


def preempt_assignment(
    adm: Admitter, cq: str, request: dict[str, int]
) -> tuple[dict[str, str], set[FlavorResource]] | None:
    """Resource -> flavor and the flavor/resources requiring preemption, or None when the
    request cannot fit even after preemption (Kueue's flavor assigner, Fit over Preempt)."""
    spec = adm.objs.cluster_queues[cq]
    borrow = bool(spec.cohort) and (spec.borrow_within_cohort != "Never" or adm.fair_sharing)
    assignment: dict[str, str] = {}
    needing: set[FlavorResource] = set()
    for group in spec.resource_groups:
        wanted = {r: v for r, v in request.items() if r in group.covered and v > 0}
        if not wanted:
            continue
        chosen: tuple[str, set[FlavorResource]] | None = None
        for flavor, quotas in group.flavors:
            short: set[FlavorResource] = set()
            possible = True
            for res, v in wanted.items():
                q = quotas.get(res)
                if q is None:
                    possible = False
                    break
                if v <= adm.available(cq, (flavor, res)):
                    continue
                limit = q.nominal
                if borrow:
                    limit = q.nominal + q.borrowing_limit if q.borrowing_limit is not None else v
                if v > limit:
                    possible = False
                    break
                short.add((flavor, res))
            if not possible:
                continue
            if not short:
                chosen = (flavor, short)
                break
            if chosen is None:
                chosen = (flavor, short)
        if chosen is None:
            return None
        assignment.update(dict.fromkeys(wanted, chosen[0]))
        needing |= chosen[1]
    return assignment, needing


def _borrowing(adm: Admitter, cq: str, frs: set[FlavorResource]) -> bool:
    if not adm.objs.cluster_queues[cq].cohort:
        return False
    for fr in frs:
        q = adm.quota(cq, fr)
        if q is not None and adm.usage[cq].get(fr, 0) > q.nominal:
            return True
    return False


def _fits(adm: Admitter, cq: str, need: dict[FlavorResource, int], allow_borrowing: bool) -> bool:
    for fr, v in need.items():
        q = adm.quota(cq, fr)
        if q is None:
            return False
        if not allow_borrowing and adm.usage[cq].get(fr, 0) + v > q.nominal:
            return False
        if v > adm.available(cq, fr):
            return False
    return True


def _apply(adm: Admitter, wl: Workload, sign: int) -> None:
    usage = adm.usage[wl.cluster_queue]
    for fr, v in adm.workload_usage(wl).items():
        usage[fr] = usage.get(fr, 0) + sign * v


def find_candidates(adm: Admitter, wl: Workload, frs: set[FlavorResource]) -> list[Workload]:
    """Admitted workloads the policies allow evicting for ``wl``, in Kueue's order."""
    cq = wl.cluster_queue
    spec = adm.objs.cluster_queues[cq]
    prio = wl.priority
    out: list[Workload] = []

    def uses(c: Workload) -> bool:
        return any(fr in frs for fr in adm.workload_usage(c))

    if spec.within_cluster_queue != "Never":
        same_ok = spec.within_cluster_queue == "LowerOrNewerEqualPriority"
        for c in adm.admitted_workloads(cq):
            p = c.priority
            if p > prio or (p == prio and not (same_ok and wl.created < c.created)):
                continue
            if uses(c):
                out.append(c)
    if spec.cohort and spec.reclaim_within_cohort != "Never":
        only_lower = spec.reclaim_within_cohort != "Any"
        for other in adm.cohort_members(cq):
            if other == cq or not _borrowing(adm, other, frs):
                continue
            for c in adm.admitted_workloads(other):
                if only_lower and c.priority >= prio:
                    continue
                if uses(c):
                    out.append(c)
    out.sort(
        key=lambda c: (
            c.cluster_queue == cq,
            c.priority,
            -(c.admitted_at or 0.0),
            -c.admit_seq,
        )
    )
    return out


def _minimal(
    adm: Admitter,
    wl: Workload,
    need: dict[FlavorResource, int],
    frs: set[FlavorResource],
    candidates: list[Workload],
    allow_borrowing: bool,
    threshold: int | None,
) -> list[Target]:
    cq = wl.cluster_queue
    targets: list[Target] = []
    fits = False
    for c in candidates:
        reason = IN_CLUSTER_QUEUE
        if c.cluster_queue != cq:
            if not _borrowing(adm, c.cluster_queue, frs):
                continue
            reason = IN_COHORT_RECLAMATION
            if threshold is not None:
                if c.priority >= threshold:
                    allow_borrowing = False
                else:
                    reason = IN_COHORT_RECLAIM_WHILE_BORROWING
        _apply(adm, c, -1)
        targets.append(Target(c, reason))
        if _fits(adm, cq, need, allow_borrowing):
            fits = True
            break
    return _fill_back(adm, cq, need, targets, fits, allow_borrowing)


def _fill_back(
    adm: Admitter,
    cq: str,
    need: dict[FlavorResource, int],
    targets: list[Target],
    fits: bool,
    allow_borrowing: bool,
) -> list[Target]:
    """Kueue's ``fillBackWorkloads``: with the targets' usage taken off (``fits`` says the
    workload then fits), give back every target but the last whose return still lets it fit;
    restore all usage and return the targets left (``[]`` when it never fit)."""
    if fits:
        for i in range(len(targets) - 2, -1, -1):
            _apply(adm, targets[i].workload, +1)
            if _fits(adm, cq, need, allow_borrowing):
                targets[i] = targets[-1]
                targets.pop()
            else:
                _apply(adm, targets[i].workload, -1)
    for t in targets:
        _apply(adm, t.workload, +1)
    return targets if fits else []


def get_targets(adm: Admitter, wl: Workload) -> tuple[list[Target], dict[str, str]]:
    """Workloads to evict so that ``wl`` fits (``[]`` when none would do), and the flavor
    assignment they make room in (Kueue's ``GetTargets`` without fair sharing)."""
    cq = wl.cluster_queue
    if not can_preempt(adm, cq):
        return [], {}
    request = wl.request()
    found = preempt_assignment(adm, cq, request)
    if found is None or not found[1]:
        return [], {}
    assignment, frs = found
    need: dict[FlavorResource, int] = {}
    for res, flavor in assignment.items():
        need[(flavor, res)] = need.get((flavor, res), 0) + request[res]
    candidates = find_candidates(adm, wl, frs)
    if not candidates:
        return [], assignment
    same = [c for c in candidates if c.cluster_queue == cq]
    if len(same) == len(candidates):
        return _minimal(adm, wl, need, frs, candidates, True, None), assignment
    spec = adm.objs.cluster_queues[cq]
    threshold: int | None = None
    if spec.borrow_within_cohort != "Never":
        threshold = wl.priority
        cap = spec.borrow_max_priority_threshold
        if cap is not None and cap < threshold:
            threshold = cap + 1
    if adm.fair_sharing:
        return fair_preemptions(adm, wl, need, frs, candidates, threshold), assignment
    under_nominal = all(
        adm.usage[cq].get(fr, 0) < q.nominal for fr in frs if (q := adm.quota(cq, fr)) is not None
    )
    if threshold is not None:
        if not under_nominal:
            candidates = [c for c in candidates if c.cluster_queue == cq or c.priority < threshold]
        return _minimal(adm, wl, need, frs, candidates, True, threshold), assignment
    if under_nominal:
        targets = _minimal(adm, wl, need, frs, candidates, False, None)
        if targets:
            return targets, assignment
    return _minimal(adm, wl, need, frs, same, True, None), assignment


def _by_queue(adm: Admitter, candidates: list[Workload], first_only: bool) -> dict[str, list[Any]]:
    """Candidates grouped by ClusterQueue, in candidate order: ``cq -> [share, workloads]``
    (Kueue's ``cqHeapFromCandidates``)."""
    out: dict[str, list[Any]] = {}
    for c in candidates:
        entry = out.get(c.cluster_queue)
        if entry is None:
            out[c.cluster_queue] = [fs.dominant_resource_share(adm, c.cluster_queue)[0], [c]]
        elif not first_only:
            entry[1].append(c)
    return out


def _pop_highest(queues: dict[str, list[Any]]) -> tuple[str, list[Any]]:
    name = min(queues, key=lambda q: (-queues[q][0], q))
    return name, queues.pop(name)


def fair_preemptions(
    adm: Admitter,
    wl: Workload,
    need: dict[FlavorResource, int],
    frs: set[FlavorResource],
    candidates: list[Workload],
    threshold: int | None,
) -> list[Target]:
    """Victims for ``wl`` under fair sharing (see the module docstring), ``[]`` when none
    would do; ``need`` is its request per flavor/resource, ``threshold`` the
    ``borrowWithinCohort`` priority below which other queues' workloads may always go."""
    cq = wl.cluster_queue
    rules = [fs.STRATEGIES[s] for s in adm.config.preemption_strategies]
    queues = _by_queue(adm, candidates, False)
    new_share = fs.dominant_resource_share(adm, cq, need)[0]
    targets: list[Target] = []
    fits = False
    retry: list[Workload] = []
    while queues and not fits:
        name, (share, wls) = _pop_highest(queues)
        if name == cq:
            _apply(adm, wls[0], -1)
            targets.append(Target(wls[0], IN_CLUSTER_QUEUE))
            if _fits(adm, cq, need, True):
                fits = True
                break
            new_share = fs.dominant_resource_share(adm, cq, need)[0]
            if wls[1:]:
                queues[name] = [fs.dominant_resource_share(adm, name)[0], wls[1:]]
            continue
        for i, c in enumerate(wls):
            below = threshold is not None and c.priority < threshold
            usage = {fr: -v for fr, v in adm.workload_usage(c).items()}
            cand_new = fs.dominant_resource_share(adm, name, usage)[0]
            ok = rules[0](new_share, share, cand_new)
            if not (below or ok):
                retry.append(c)
                continue
            _apply(adm, c, -1)
            targets.append(
                Target(c, IN_COHORT_FAIR_SHARING if ok else IN_COHORT_RECLAIM_WHILE_BORROWING)
            )
            if _fits(adm, cq, need, True):
                fits = True
            elif wls[i + 1 :] and _borrowing(adm, name, frs):
                queues[name] = [cand_new, wls[i + 1 :]]
            break
    if not fits and len(rules) > 1:
        queues = _by_queue(adm, retry, True)
        while queues and not fits:
            name, (share, wls) = _pop_highest(queues)
            if rules[1](new_share, share, 0):
                _apply(adm, wls[0], -1)
                targets.append(Target(wls[0], IN_COHORT_FAIR_SHARING))
                fits = _fits(adm, cq, need, True)
    return _fill_back(adm, cq, need, targets, fits, True)
