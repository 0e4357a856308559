"""A Pod's effective resource request, as upstream's ``resourcehelper.PodRequests`` computes it.

Inputs are resource lists in thousandths (:func:`kubesched.api.quantity.milli_value`), already
defaulted the way the API server does (a container's missing request copied from its limit;
see :func:`default_container_requests`).  All sums and maxima are exact integers; only the
final conversion rounds (millicores for ``cpu``, whole units rounded up otherwise).

The rule (``k8s.io/component-helpers/resource`` ``AggregateContainerRequests``, KEP-753):

- regular containers are summed;
- a restartable init container (``restartPolicy: Always``, a sidecar) is added to that sum and
  keeps running, so every init container after it sees it too;
- a regular init container needs its own request plus the sidecars started before it; the
  pod needs the maximum of that over init containers and the running sum;
- pod-level ``spec.resources.requests`` (cpu, memory, hugepages-*) replace the aggregate for
  those resources (PodLevelResources, on by default in v1.34);
- ``spec.overhead`` is added last.

``nonzero`` (scoring) repeats the computation with 100m CPU / 200Mi memory substituted for each
container (regular, init and sidecar alike) that does not mention the resource
(``NonMissingContainerRequests``); with pod-level requests only for resources the result lacks.
During an in-place resize a running container's request is the largest of its spec's, its
status's and its allocated one (``UseStatusResources``; read by
:func:`kubesched.api.pods.parse_pod` before the aggregation here).  NodeResourcesFit's score of
the incoming Pod skips pod-level requests (:func:`fit_score_requests`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubesched.api import objects as api
from kubesched.api.quantity import units_from_milli

Millis = dict[str, int]
"""Resource name to amount in thousandths (millicores for ``cpu``)."""

DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
_NON_MISSING: Millis = {
    api.CPU: DEFAULT_MILLI_CPU_REQUEST,
    api.MEMORY: DEFAULT_MEMORY_REQUEST * 1000,
}
_OVERCOMMITTABLE_POD_LEVEL = (api.CPU, api.MEMORY)


def is_pod_level_resource(name: str) -> bool:
    """Resources pod-level ``spec.resources`` may set (upstream ``IsSupportedPodLevelResource``)."""
    return name in _OVERCOMMITTABLE_POD_LEVEL or name.startswith("hugepages-")


def default_container_requests(requests: Millis | None, limits: Millis | None) -> Millis:
    """API-server defaulting (``SetDefaults_Pod``): a limit without a request is the request."""
    out = dict(requests) if requests else {}
    if limits:
        for name, amount in limits.items():
            out.setdefault(name, amount)
    return out


def _add(into: Millis, other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, 0) + amount


def _max(into: Millis, other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        if name not in into or amount > into[name]:
            into[name] = amount


def _with_non_missing(requests: Millis, non_missing: Mapping[str, int] | None) -> Millis:
    if not non_missing:
        return requests
    out = dict(requests)
    for name, amount in non_missing.items():
        if name not in requests:
            out[name] = amount
    return out


def aggregate_container_requests(
    containers: Sequence[Millis],
    init_containers: Sequence[tuple[Millis, bool]],
    non_missing: Mapping[str, int] | None = None,
) -> Millis:
    """Upstream ``AggregateContainerRequests``; ``init_containers``: ``(requests, restartable)``."""
    total: Millis = {}
    for req in containers:
        _add(total, _with_non_missing(req, non_missing))
    sidecars: Millis = {}
    init_peak: Millis = {}
    for req, restartable in init_containers:
        req = _with_non_missing(req, non_missing)
        if restartable:
            _add(total, req)
            _add(sidecars, req)
            _max(init_peak, sidecars)
        else:
            during = dict(req)
            _add(during, sidecars)
            _max(init_peak, during)
    _max(total, init_peak)
    return total


def pod_requests(
    containers: Sequence[Millis],
    init_containers: Sequence[tuple[Millis, bool]] = (),
    overhead: Mapping[str, int] | None = None,
    pod_level: Mapping[str, int] | None = None,
    non_missing: Mapping[str, int] | None = None,
) -> Millis:
    """Upstream ``PodRequests`` (thousandths in, thousandths out), overhead included."""
    reqs = aggregate_container_requests(containers, init_containers, non_missing)
    return _pod_level_and_overhead(reqs, pod_level, overhead)


def _pod_level_and_overhead(
    reqs: Millis, pod_level: Mapping[str, int] | None, overhead: Mapping[str, int] | None
) -> Millis:
    """``reqs`` with the pod-level amounts in place of the containers' (for the resources
    pod-level requests may name), then the overhead added; ``reqs`` is changed and returned."""
    for name, amount in (pod_level or {}).items():
        if is_pod_level_resource(name):
            reqs[name] = amount
    if overhead:
        _add(reqs, overhead)
    return reqs


def default_pod_level_requests(
    requests: Millis | None,
    limits: Millis | None,
    containers: Sequence[Millis],
    init_containers: Sequence[tuple[Millis, bool]],
    *,
    fix_defaulting: bool = False,
) -> Millis | None:
    """API-server defaulting of pod-level requests (``defaultPodRequests``), only when pod-level
    limits are set: CPU/memory from the containers' aggregate, else from the pod-level limit.

    ``fix_defaulting``: v1.37's (PodLevelResourcesFixDefaulting, beta on: the registry's
    ``DefaultPodLevelResources`` at create) whenever pod-level requests or limits are set,
    hugepages too from the containers' aggregate (their limit, which validation makes their
    request) when the pod level names them in neither.  It changes what a Pod counts only
    while a resize status is counted (the defaulted amounts are the spec's aggregate), so
    the parse applies it to v1.37's resize counts alone."""
    if not limits and not (fix_defaulting and requests):
        return requests
    out = dict(requests) if requests else {}
    aggregate = aggregate_container_requests(containers, init_containers)
    for name, amount in aggregate.items():
        hugepages = fix_defaulting and name.startswith("hugepages-") and name not in (limits or {})
        if name not in out and (name in _OVERCOMMITTABLE_POD_LEVEL or hugepages):
            out[name] = amount
    for name, amount in (limits or {}).items():
        if is_pod_level_resource(name) and name not in out:
            out[name] = amount
    return out or requests


def fit_score_requests(
    containers: Sequence[Millis],
    init_containers: Sequence[tuple[Millis, bool]] = (),
    overhead: Mapping[str, int] | None = None,
    pod_level: Mapping[str, int] | None = None,
) -> api.Resources | None:
    """NodeResourcesFit's scoring request of an incoming Pod (``cpu`` millicores, ``memory``
    bytes): the containers' with the non-zero defaults, overhead added, pod-level requests
    skipped -- upstream v1.34's Fit scorer builds its ``resourceAllocationScorer`` without
    the pod-level flag.  None when no pod-level request is set (then it is the non-zero
    request :func:`effective_requests` gives)."""
    if not (pod_level and any(is_pod_level_resource(n) for n in pod_level)):
        return None
    non0 = pod_requests(containers, init_containers, overhead, None, _NON_MISSING)
    return {
        api.CPU: non0.get(api.CPU, 0),
        api.MEMORY: units_from_milli(api.MEMORY, non0.get(api.MEMORY, 0)),
    }


def effective_requests(
    containers: Sequence[Millis],
    init_containers: Sequence[tuple[Millis, bool]] = (),
    overhead: Mapping[str, int] | None = None,
    pod_level: Mapping[str, int] | None = None,
) -> tuple[api.Resources, api.Resources]:
    """``(requests, nonzero_requests)`` in scheduler units (upstream ``PodInfo.CalculateResource``).

    ``nonzero_requests`` has exactly ``cpu`` (millicores) and ``memory`` (bytes).
    """
    millis = pod_requests(containers, init_containers, overhead, pod_level)
    pod_level_set = bool(pod_level) and any(is_pod_level_resource(n) for n in pod_level or ())
    if not pod_level_set:
        non_missing: Millis = _NON_MISSING
    else:
        non_missing = {n: a for n, a in _NON_MISSING.items() if n not in millis}
    non0 = millis
    if non_missing:
        non0 = pod_requests(containers, init_containers, overhead, pod_level, non_missing)
    requests = {name: units_from_milli(name, m) for name, m in millis.items()}
    nonzero = {
        api.CPU: non0.get(api.CPU, 0),
        api.MEMORY: units_from_milli(api.MEMORY, non0.get(api.MEMORY, 0)),
    }
    return requests, nonzero


def largest_requests(
    ways: Sequence[tuple[Sequence[Millis], Sequence[tuple[Millis, bool]]]],
    pod_totals: Sequence[Mapping[str, int]] = (),
    overhead: Mapping[str, int] | None = None,
    pod_level: Mapping[str, int] | None = None,
    pod_level_set: bool = False,
) -> tuple[api.Resources, api.Resources]:
    """``(requests, nonzero_requests)`` of a Pod counted as the largest, per resource, of
    several totals (upstream v1.37's ``AggregateContainerRequests`` with
    ``UseStatusResources``): each of ``ways`` (containers and ``(init container,
    restartable)`` requests) aggregated with the init/sidecar rule, and each of
    ``pod_totals`` as it is (pod-level ``status.resources.requests`` and
    ``status.allocatedResources``, already totals: no non-zero defaults apply to them).
    Then ``pod_level`` takes the place of the aggregate for every pod-level resource it
    names (``applyPodLevelResources``) when ``pod_level_set`` (upstream
    ``IsPodLevelRequestsSet`` of the spec, which also decides the non-zero defaults) and
    ``overhead`` is added."""

    def total(non_missing: Mapping[str, int] | None) -> Millis:
        out: Millis = {}
        for plain, inits in ways:
            _max(out, aggregate_container_requests(plain, inits, non_missing))
        for other in pod_totals:
            _max(out, other)
        return _pod_level_and_overhead(out, pod_level if pod_level_set else None, overhead)

    millis = total(None)
    if not pod_level_set:
        non_missing: Millis = _NON_MISSING
    else:
        non_missing = {n: a for n, a in _NON_MISSING.items() if n not in millis}
    non0 = total(non_missing) if non_missing else millis
    requests = {name: units_from_milli(name, m) for name, m in millis.items()}
    nonzero = {
        api.CPU: non0.get(api.CPU, 0),
        api.MEMORY: units_from_milli(api.MEMORY, non0.get(api.MEMORY, 0)),
    }
    return requests, nonzero
