"""NodeResourcesBalancedAllocation: prefer nodes whose resource use stays balanced.

Upstream ``pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go`` (v1.34):
score = ``int64((1 - std) * 100)`` where ``std`` is the standard deviation of the fractions
``min(requested / allocatable, 1)`` over the configured resources (default cpu and memory),
with the Pod's plain requests added to the node's plain requested sums (no non-zero
defaults).  A scalar resource the Pod does not request, and any resource the node has none
of, is left out.  PreScore returns Skip for a Pod that requests none of the resources
(upstream #129138).  No NormalizeScore.

v1.36 scores the change in balance instead: ``50 + (50 + s(with Pod) - s(without Pod)) / 2``
(integer division), ``s`` the score above with and without the Pod's requests, over the same
resources; args ``score_balance_change`` chooses it (False, v1.34's, by default).

DRAExtendedResource (v1.35+): a resource a DeviceClass backs is scored from the node's
devices of the class where its allocatable has none (:func:`res.with_device_totals`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.config import args as cfg
from kubesched.config import names
from kubesched.devices import extended
from kubesched.framework import interface as fw
from kubesched.kernels import resources as res
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import IntArray, NodeTable
from kubesched.state.rowmemo import FEW_ROWS, RowMemo

NAME = names.NODE_RESOURCES_BALANCED_ALLOCATION
_PRE_SCORE_KEY = "PreScore" + NAME


# --------------------------------------------------------------------------- cycle state
@dataclass(frozen=True, slots=True)
class _PreScoreState:
    """The Pod's plain request per configured resource, int64 ``(k,)``."""

    pod_requests: IntArray


# --------------------------------------------------------------------------- plugin
class NodeResourcesBalancedAllocation:
    """Scores nodes by how evenly the Pod would leave their resources used."""

    name = NAME
    row_local = True
    """Answers for a node depend on the Pod, that node and the Pods on it only (result
    reuse keeps its entry when Pods change on other nodes: ``scheduler.batch``)."""

    def __init__(
        self, args: cfg.NodeResourcesBalancedAllocationArgs | None, handle: fw.Handle
    ) -> None:
        self.args = args or cfg.NodeResourcesBalancedAllocationArgs()
        self.handle = handle
        self.names = tuple(r.name for r in self.args.resources)
        self.change = self.args.score_balance_change
        self._device_scored = any(extended.is_dra_extended_name(n) for n in self.names)
        """A resource a DeviceClass may back (DRAExtendedResource, v1.35+: scored from the
        node's devices where its allocatable has none, :func:`balanced_scores`)."""
        self._memo = RowMemo()
        """The cpu/memory scores of each row for the Pods' requests asked last (an
        elementwise kernel of the row's allocatable and requested: :mod:`~kubesched.state.
        rowmemo`)."""

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: the answer depends on the Pod's requests only."""
        return tuple(sorted(pod.requests.items()))

    def pre_score(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> fw.Status:
        """Store the Pod's requests; Skip a best-effort Pod (requests none of the resources)."""
        reqs = res.pod_score_requests(pod, self.names, use_requested=True)
        if not reqs.any():
            return fw.SKIP
        state[_PRE_SCORE_KEY] = _PreScoreState(reqs)
        return fw.SUCCESS

    def score(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """Raw 0..100 scores, int64 ``(n,)``; all 0 for a best-effort Pod without PreScore."""
        s = state.get(_PRE_SCORE_KEY)
        if isinstance(s, _PreScoreState):
            reqs = s.pod_requests
        else:
            reqs = res.pod_score_requests(pod, self.names, use_requested=True)
            if not reqs.any():
                return np.zeros(rows.shape[0], dtype=np.int64)
        if self.names == _CPU_MEMORY and rows.shape[0] > 1:
            key = (*reqs.tolist(), self.change)
            return self._memo.values(
                cluster.nodes,
                key,
                rows,
                lambda stale: _balanced_rows(cluster, stale, reqs, self.change),
            )
        totals = None
        if self._device_scored:
            totals_of = self.handle.services.get(extended.TOTALS)
            totals = totals_of(self.names) if totals_of is not None else None
        return balanced_scores(cluster, rows, self.names, reqs, self.change, totals)

    def score_one(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, row: int
    ) -> int | None:
        """Result reuse's one-node score (``scheduler.batch``): ``score`` for ``row`` as an
        int, or None where only ``score`` knows it."""
        s = state.get(_PRE_SCORE_KEY)
        if not isinstance(s, _PreScoreState) or self.names != _CPU_MEMORY:
            return None
        return _balanced_one(cluster.nodes, row, s.pod_requests, self.change)


# --------------------------------------------------------------------------- kernel
def balanced_scores(
    cluster: ClusterState,
    rows: IntArray,
    names: tuple[str, ...],
    pod_requests: IntArray,
    change: bool = False,
    totals: extended.NodeTotals | None = None,
) -> IntArray:
    """BalancedAllocation scores for ``rows`` (int64 ``(n,)``) given the Pod's requests;
    with ``change``, v1.36's score of the change in balance; ``totals``: the devices behind
    the extended resources a class backs (v1.35+, :func:`res.with_device_totals`).

    ``pod_requests``: int64 ``(k,)``, the Pod's plain request for each of ``names``.
    """
    nodes = cluster.nodes
    if names == _CPU_MEMORY and rows.shape[0] == 1:
        one = _balanced_one(nodes, int(rows[0]), pod_requests, change)
        if one is not None:
            return np.asarray([one], dtype=np.int64)
    if names == _CPU_MEMORY:
        # Fast path for the default resources: both columns present on every row.
        alloc = nodes.allocatable.take(rows, axis=0)  # (n, R); cpu, memory: columns 0, 1
        if alloc[:, 0].all() and alloc[:, 1].all():
            used = nodes.requested.take(rows, axis=0)
            if change:
                p0, p1 = pod_requests.tolist()
                return res.balanced_change_cpu_memory(
                    used[:, 0], used[:, 1], p0, p1, alloc[:, 0], alloc[:, 1]
                )
            return res.balanced_cpu_memory(used[:, :2] + pod_requests, alloc[:, :2])
    alloc, req = res.allocatable_and_requested(nodes, rows, names, pod_requests, use_requested=True)
    if totals is not None:
        res.with_device_totals(nodes, rows, names, pod_requests, alloc, req, totals)
    with_pod = res.balanced_allocation(req, alloc)
    if not change:
        return with_pod
    used = np.where(alloc != 0, req - pod_requests, 0)
    return balance_change(with_pod, res.balanced_allocation(used, alloc))


def _balanced_rows(
    cluster: ClusterState, rows: IntArray, pod_requests: IntArray, change: bool
) -> IntArray:
    """:func:`balanced_scores` of the cpu/memory scores (int64 ``(n,)``), a few rows one
    by one (:func:`_balanced_one`, the same float64 operations)."""
    if rows.shape[0] <= FEW_ROWS:
        nodes = cluster.nodes
        few = [_balanced_one(nodes, r, pod_requests, change) for r in rows.tolist()]
        if None not in few:
            return np.asarray(few, dtype=np.int64)
    return balanced_scores(cluster, rows, _CPU_MEMORY, pod_requests, change)


def balance_change(with_pod: IntArray, without_pod: IntArray) -> IntArray:
    """Upstream v1.36's ``balancedResourceScorer``: ``50 + (50 + with - without) / 2`` with
    Go's integer division, int64 ``(n,)`` from two int64 ``(n,)`` scores."""
    half = fw.MAX_NODE_SCORE // 2
    return half + res.go_div(half + with_pod - without_pod, 2)


_CPU_MEMORY = (api.CPU, api.MEMORY)


def _balanced_one(
    nodes: NodeTable, r: int, pod_requests: IntArray, change: bool = False
) -> int | None:
    """The cpu/memory score of one row (result reuse): the same float64 operations on
    Python floats; None when the row lacks cpu or memory."""
    a0, a1 = int(nodes.allocatable[r, 0]), int(nodes.allocatable[r, 1])
    if not (a0 and a1):
        return None
    u0, u1 = int(nodes.requested[r, 0]), int(nodes.requested[r, 1])
    with_pod = _balance_of(u0 + int(pod_requests[0]), u1 + int(pod_requests[1]), a0, a1)
    if not change:
        return with_pod
    half = fw.MAX_NODE_SCORE // 2
    diff = half + with_pod - _balance_of(u0, u1, a0, a1)
    return half + (abs(diff) // 2 if diff >= 0 else -(abs(diff) // 2))  # Go's division


def _balance_of(r0: int, r1: int, a0: int, a1: int) -> int:
    f0 = min(r0 / a0, 1.0)
    f1 = min(r1 / a1, 1.0)
    std = abs((f0 - f1) / 2)
    return math.trunc((1 - std) * float(fw.MAX_NODE_SCORE))


def new(args: object | None, handle: fw.Handle) -> NodeResourcesBalancedAllocation:
    """Factory: validates ``args`` as upstream (unique resource names, each weight 1)."""
    if args is not None and not isinstance(args, cfg.NodeResourcesBalancedAllocationArgs):
        raise InputError(
            f"want args to be of type NodeResourcesBalancedAllocationArgs, got {type(args)}"
        )
    ba_args = args or cfg.NodeResourcesBalancedAllocationArgs()
    problems: list[tuple[str, str]] = []
    seen: set[str] = set()
    for i, spec in enumerate(ba_args.resources):
        if spec.name in seen:
            problems.append((f"resources[{i}].name", f"Duplicate value: {spec.name!r}"))
        seen.add(spec.name)
        if spec.weight != 1:
            problems.append((f"resources[{i}].weight", "must be 1"))
    if problems:
        raise InputError(problems)
    if handle.feature_gates.at_least("1.36") and not ba_args.score_balance_change:
        ba_args = replace(ba_args, score_balance_change=True)  # v1.36's formula
    return NodeResourcesBalancedAllocation(ba_args, handle)
