"""Resource arithmetic shared by the resource plugins (NodeResourcesFit, BalancedAllocation).

Pure, vectorised kernels mirroring upstream ``noderesources/resource_allocation.go`` and the
scorers in ``least_allocated.go``, ``most_allocated.go``, ``requested_to_capacity_ratio.go``
and ``balanced_allocation.go`` (kube-scheduler v1.34).  Plugins never import each other, so
what two of them share lives here.

Conventions: ``requested`` and ``allocatable`` are int64 arrays of shape ``(n, k)``: one row
per candidate node, one column per *scored* resource (in the order the plugin's args list
them).  An ``allocatable`` entry of 0 means "skip this resource on this node", exactly like
upstream's ``calculateResourceAllocatableRequest`` returning ``(0, 0)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.state.nodes import IntArray, NodeTable

FloatArray = npt.NDArray[np.float64]

MAX_NODE_SCORE = 100
MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10
"""RequestedToCapacityRatio shape scores are 0..10; upstream scales them by 100/10."""

_NATIVE_PREFIX = "kubernetes.io/"
_REQUESTS_PREFIX = "requests."
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


# --------------------------------------------------------------------------- names
def is_prefixed_native_resource(name: str) -> bool:
    """Upstream ``IsPrefixedNativeResource``: the name contains ``kubernetes.io/``."""
    return _NATIVE_PREFIX in name


def _is_qualified_name(value: str) -> bool:
    parts = value.split("/")
    if len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return False
    elif len(parts) == 1:
        name = parts[0]
    else:
        return False
    return 0 < len(name) <= 63 and _QUALIFIED_NAME.fullmatch(name) is not None


def is_extended_resource_name(name: str) -> bool:
    """Upstream ``IsExtendedResourceName``: ``domain/name``, not native, quota-name valid."""
    if "/" not in name or is_prefixed_native_resource(name):
        return False
    if name.startswith(_REQUESTS_PREFIX):
        return False
    return _is_qualified_name(_REQUESTS_PREFIX + name)


def is_scalar_resource_name(name: str) -> bool:
    """Upstream ``IsScalarResourceName``: extended, hugepages, prefixed native, attachable volumes.

    Only these (besides cpu, memory and ephemeral-storage) count in a Pod's request for
    fitting and scoring; any other name is ignored, as upstream's ``Resource`` ignores it.
    """
    return (
        is_extended_resource_name(name)
        or name.startswith("hugepages-")
        or is_prefixed_native_resource(name)
        or name.startswith("attachable-volumes-")
    )


def counted_requests(requests: Mapping[str, int]) -> dict[str, int]:
    """The part of a Pod's requests upstream's ``framework.Resource`` keeps (no ``pods``)."""
    return {
        name: amount
        for name, amount in requests.items()
        if name in (api.CPU, api.MEMORY, api.EPHEMERAL_STORAGE) or is_scalar_resource_name(name)
    }


def fits_now(nodes: NodeTable, row: int, amounts: Mapping[str, int]) -> bool:
    """Whether one more Pod requesting ``amounts`` (resource name -> positive amount) fits
    node ``row`` as the cache holds it now: a free Pod slot and, per resource,
    ``allocatable - requested`` at least the amount (a resource the table lacks is 0)."""
    if int(nodes.pod_count[row]) >= int(nodes.allowed_pods[row]):
        return False
    for name, amount in amounts.items():
        allocatable, requested = nodes.resource_at(name, row)  # dense or sparse
        if allocatable - requested < amount:
            return False
    return True


# --------------------------------------------------------------------------- score inputs
def pod_score_requests(pod: api.Pod, names: Sequence[str], use_requested: bool) -> IntArray:
    """A Pod's request per scored resource, int64 ``(k,)`` (``calculatePodResourceRequestList``).

    With ``use_requested`` False (NodeResourcesFit), cpu and memory use the non-zero defaults
    without pod-level requests (``pod.fit_score_requests``, else ``pod.nonzero_requests``:
    upstream's Fit scorer skips pod-level resources, BalancedAllocation's does not); every
    other resource uses the plain request.
    """
    fit = pod.fit_score_requests if pod.fit_score_requests is not None else pod.nonzero_requests
    requests = pod.requests
    amounts = [
        fit.get(name, 0)
        if not use_requested and name in (api.CPU, api.MEMORY)
        else requests.get(name, 0)
        for name in names
    ]
    return np.array(amounts, dtype=np.int64)  # one array made from Python ints, not k writes


def allocatable_and_requested(
    nodes: NodeTable,
    rows: IntArray,
    names: Sequence[str],
    pod_requests: IntArray,
    use_requested: bool,
) -> tuple[IntArray, IntArray]:
    """Per node and scored resource: ``(allocatable, requested + pod)``, each int64 ``(n, k)``.

    Mirrors upstream ``calculateResourceAllocatableRequest``: cpu and memory read the node's
    non-zero requested sums unless ``use_requested``; a scalar resource the Pod does not
    request, a resource the node lacks, and a name that is neither cpu, memory,
    ephemeral-storage nor scalar all give ``(0, 0)`` (skipped by the scorers).
    """
    n, k = rows.shape[0], len(names)
    alloc = np.zeros((n, k), dtype=np.int64)
    req = np.zeros((n, k), dtype=np.int64)
    for j, name in enumerate(names):
        pod_req = int(pod_requests[j])
        if name in (api.CPU, api.MEMORY) and not use_requested:
            col = 0 if name == api.CPU else 1
            a, used = nodes.allocatable[rows, col], nodes.nonzero_requested[rows, col]
        elif name in (api.CPU, api.MEMORY, api.EPHEMERAL_STORAGE) or (
            is_scalar_resource_name(name) and pod_req != 0
        ):
            a, used = nodes.resource_values(name, rows)  # a dense column, or a sparse one
        else:
            continue
        present = a != 0
        alloc[:, j] = a
        req[:, j] = np.where(present, used + pod_req, 0)
    return alloc, req


def with_device_totals(
    nodes: NodeTable,
    rows: IntArray,
    names: Sequence[str],
    pod_requests: IntArray,
    alloc: IntArray,
    req: IntArray,
    totals: Callable[[str, api.Node], tuple[int, int]],
) -> None:
    """DRAExtendedResource (v1.35+), in place on :func:`allocatable_and_requested`'s
    answer: a scalar resource the Pod requests and a node's allocatable has none of (absent
    or 0) is scored from the devices of the class behind it when the node has any
    (``totals``: devices and those allocated), ``(devices, allocated + pod)`` (upstream
    ``calculateResourceAllocatableRequest``)."""
    for j, name in enumerate(names):
        pod_req = int(pod_requests[j])
        if name in (api.CPU, api.MEMORY, api.EPHEMERAL_STORAGE):
            continue
        if pod_req == 0 and is_scalar_resource_name(name):
            continue
        for i in np.flatnonzero(alloc[:, j] == 0).tolist():
            node = nodes.nodes[int(rows[i])]
            if node is None:
                continue
            capacity, allocated = totals(name, node)
            if capacity > 0:
                alloc[i, j] = capacity
                req[i, j] = allocated + pod_req


# --------------------------------------------------------------------------- scorers
def go_div(a: IntArray, b: IntArray | int) -> IntArray:
    """Go's int64 division (truncates toward zero), elementwise; ``b`` must be non-zero."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (np.asarray(b) < 0), -q, q).astype(np.int64)


def _weighted_mean(scores: IntArray, counted: npt.NDArray[np.bool_], weights: IntArray) -> IntArray:
    node_score = (scores * weights * counted).sum(axis=1)
    weight_sum = (weights * counted).sum(axis=1)
    out = np.zeros(scores.shape[0], dtype=np.int64)
    ok = weight_sum > 0
    out[ok] = node_score[ok] // weight_sum[ok]
    return out


def least_allocated(requested: IntArray, allocatable: IntArray, weights: IntArray) -> IntArray:
    """LeastAllocated: weighted mean of ``(alloc - req) * 100 // alloc`` (0 when over), ``(n,)``."""
    valid = allocatable != 0
    safe = np.where(valid, allocatable, 1)
    per = np.where(requested > allocatable, 0, (safe - requested) * MAX_NODE_SCORE // safe)
    return _weighted_mean(np.where(valid, per, 0), valid, weights)


def most_allocated(requested: IntArray, allocatable: IntArray, weights: IntArray) -> IntArray:
    """MostAllocated: weighted mean of ``min(req, alloc) * 100 // alloc``, int64 ``(n,)``."""
    valid = allocatable != 0
    safe = np.where(valid, allocatable, 1)
    per = np.minimum(requested, safe) * MAX_NODE_SCORE // safe
    return _weighted_mean(np.where(valid, per, 0), valid, weights)


def broken_linear(p: IntArray, utilization: IntArray, score: IntArray) -> IntArray:
    """Upstream ``BuildBrokenLinearFunction`` evaluated at every element of ``p`` (int64).

    ``utilization`` and ``score`` (int64 ``(m,)``, ``m >= 1``) are the shape points, with
    utilization strictly increasing; interpolation truncates toward zero like Go.
    """
    m = utilization.shape[0]
    idx = np.searchsorted(utilization, p, side="left")
    lo = np.clip(idx - 1, 0, m - 1)
    hi = np.clip(idx, 0, m - 1)
    du = utilization[hi] - utilization[lo]
    num = (score[hi] - score[lo]) * (p - utilization[lo])
    interp = score[lo] + go_div(num, np.where(du == 0, 1, du))
    out = np.where(idx == 0, score[0], interp)
    return np.where(idx >= m, score[m - 1], out).astype(np.int64)


def requested_to_capacity_ratio(
    requested: IntArray,
    allocatable: IntArray,
    weights: IntArray,
    utilization: IntArray,
    score: IntArray,
) -> IntArray:
    """RequestedToCapacityRatio, int64 ``(n,)``; ``score`` already scaled to 0..100.

    Each resource scores ``f(req * 100 // alloc)`` (``f(100)`` when over capacity); only
    positive resource scores count toward the weighted mean, which is rounded half away
    from zero from float64 as upstream's ``math.Round``.
    """
    valid = allocatable != 0
    safe = np.where(valid, allocatable, 1)
    util = np.where(requested > allocatable, MAX_UTILIZATION, requested * MAX_UTILIZATION // safe)
    per = broken_linear(util, utilization, score)
    counted = valid & (per > 0)
    node_score = (per * weights * counted).sum(axis=1)
    weight_sum = (weights * counted).sum(axis=1)
    out = np.zeros(requested.shape[0], dtype=np.int64)
    ok = weight_sum > 0
    x = node_score[ok].astype(np.float64) / weight_sum[ok].astype(np.float64)
    fl = np.floor(x)
    out[ok] = np.where(x - fl >= 0.5, fl + 1, fl).astype(np.int64)
    return out


def balanced_allocation(requested: IntArray, allocatable: IntArray) -> IntArray:
    """BalancedAllocation: ``int64((1 - std) * 100)`` of the capped fractions, int64 ``(n,)``.

    Float64 operations run in upstream's order (fractions in resource order, the two-resource
    case as ``|f0 - f1| / 2``), so results match Go bit for bit on amd64.
    """
    n, k = requested.shape
    valid = allocatable != 0
    safe = np.where(valid, allocatable, 1).astype(np.float64)
    frac = np.minimum(requested.astype(np.float64) / safe, 1.0)
    frac = np.where(valid, frac, 0.0)
    count = valid.sum(axis=1)
    total = np.zeros(n, dtype=np.float64)
    first = np.zeros(n, dtype=np.float64)
    second = np.zeros(n, dtype=np.float64)
    seen = np.zeros(n, dtype=np.int64)
    for j in range(k):
        v = valid[:, j]
        total = total + frac[:, j]
        first = np.where(v & (seen == 0), frac[:, j], first)
        second = np.where(v & (seen == 1), frac[:, j], second)
        seen = seen + v
    std = np.zeros(n, dtype=np.float64)
    two = count == 2
    std[two] = np.abs((first[two] - second[two]) / 2)
    many = count > 2
    if many.any():
        mean = total[many] / count[many].astype(np.float64)
        acc = np.zeros(mean.shape[0], dtype=np.float64)
        for j in range(k):
            d = frac[many, j] - mean
            acc = acc + np.where(valid[many, j], d * d, 0.0)
        std[many] = np.sqrt(acc / count[many].astype(np.float64))
    return np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


def balanced_cpu_memory(requested: IntArray, allocatable: IntArray) -> IntArray:
    """:func:`balanced_allocation` for exactly two resources, all allocatable non-zero.

    ``requested``, ``allocatable``: int64 ``(n, 2)``.  Same float64 operations in the same
    order as the general kernel (``|f0 - f1| / 2``), so the results are identical.
    """
    frac = np.minimum(requested / allocatable, 1.0)
    std = np.abs((frac[:, 0] - frac[:, 1]) / 2)
    return np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


def balanced_change_cpu_memory(
    used0: IntArray, used1: IntArray, pod0: int, pod1: int, alloc0: IntArray, alloc1: IntArray
) -> IntArray:
    """v1.36's score of the change in balance for exactly cpu and memory, all allocatable
    non-zero: ``50 + (50 + s(used + pod) - s(used)) / 2`` (Go's integer division), ``s``
    :func:`balanced_cpu_memory`, int64 ``(n,)``.

    Column by column: ``used0``/``used1`` (cpu/memory requested) and ``alloc0``/``alloc1``
    (allocatable) are int64 ``(n,)`` each (strided views of a gathered ``(n, R)`` table
    are fine); ``pod0``/``pod1`` the Pod's requests.  An ``(n, 2)`` layout made numpy run
    its inner loop over the 2 resources, once per node; here every step runs over ``n``.
    The float steps are those of :func:`balanced_cpu_memory` on each element in the same
    order (the int64 sum cast to float64, divided by the allocatable cast to float64), in
    place over one ``(2, 2, n)`` buffer (with/without the Pod, cpu/memory); the cast to
    int64 truncates toward zero as ``np.trunc`` does (the values are finite).
    """
    frac = np.empty((2, 2, used0.shape[0]), dtype=np.float64)
    frac[0, 0] = used0 + pod0  # the int64 sum, cast as the int64 division casts it
    frac[0, 1] = used1 + pod1
    frac[1, 0] = used0
    frac[1, 1] = used1
    frac[:, 0] /= alloc0.astype(np.float64)
    frac[:, 1] /= alloc1.astype(np.float64)
    np.minimum(frac, 1.0, out=frac)
    std = frac[:, 0]  # (2, n): with, without the Pod
    std -= frac[:, 1]
    np.abs(std, out=std)
    std /= 2
    np.subtract(1.0, std, out=std)
    std *= float(MAX_NODE_SCORE)
    both = std.astype(np.int64)
    half = MAX_NODE_SCORE // 2
    diff: IntArray = both[0]
    diff -= both[1]
    diff += half
    diff -= diff >> 63  # Go's division by 2 truncates toward zero: a negative one rounds up
    diff >>= 1
    diff += half
    return diff


def fit_score_columns(
    requested: Sequence[IntArray],
    allocatable: Sequence[IntArray],
    weights: Sequence[int],
    most: bool,
) -> IntArray:
    """:func:`least_allocated` (or, with ``most``, :func:`most_allocated`) when every
    allocatable is non-zero, column by column: int64 ``(n,)``.

    ``requested[j]``, ``allocatable[j]``: int64 ``(n,)`` for scored resource ``j`` (Pod
    included; strided views are fine), every allocatable non-zero; ``weights``: one int
    per resource.  The same integer arithmetic, per resource over ``n`` rather than over
    an inner dimension of ``k``.
    """
    total: IntArray | None = None
    for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
        per = np.minimum(req, alloc) if most else alloc - req
        per *= MAX_NODE_SCORE
        per //= alloc
        if not most:
            per[req > alloc] = 0
        if weight != 1:
            per *= weight
        if total is None:
            total = per
        else:
            total += per
    if total is None:
        raise ValueError("no scored resource")
    total //= sum(weights)
    return total
