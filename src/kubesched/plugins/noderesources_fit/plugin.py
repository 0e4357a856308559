"""The NodeResourcesFit plugin (see the package docstring): PreFilter stores the Pod's
checked requests, Filter answers every candidate row at once (one row with plain ints),
Score by the configured strategy; ``new`` validates its args as upstream does."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.config import args as cfg
from kubesched.config import names
from kubesched.config.featuregates import RESIZE_PREEMPTION
from kubesched.devices import extended
from kubesched.framework import interface as fw
from kubesched.framework.contract import Locality
from kubesched.kernels import resources as res
from kubesched.plugins.noderesources_fit.hints import (
    GovernedHints,
    device_class_hint,
    node_hint,
    on_deferred_node,
    pod_hint,
)
from kubesched.plugins.noderesources_fit.kernels import (
    PreFilterState,
    PreScoreState,
    checked_columns,
    dense_fit_masks,
    fit_masks,
    fits_one,
    insufficient,
    mask_one,
    verdict_from_failing,
    verdict_from_masks,
    verdict_one,
)
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import IntArray, NodeTable
from kubesched.state.rowmemo import FEW_ROWS, RowMemo

NAME = names.NODE_RESOURCES_FIT
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME
_BASE = (api.CPU, api.MEMORY, api.EPHEMERAL_STORAGE)


class NodeResourcesFit(GovernedHints):
    """Filters nodes without room for the Pod and scores by the configured strategy."""

    name = NAME
    locality = Locality.NODE_LOCAL
    row_local = True
    """Answers for a node depend on the Pod, that node and the Pods on it only (result
    reuse keeps its entry when Pods change on other nodes: ``scheduler.batch``)."""

    def __init__(self, args: cfg.NodeResourcesFitArgs | None, handle: fw.Handle) -> None:
        self.args = args or cfg.NodeResourcesFitArgs()
        self.handle = handle
        self.ignored = frozenset(self.args.ignored_resources)
        self.ignored_groups = frozenset(self.args.ignored_resource_groups)
        strategy = self.args.scoring_strategy
        self.strategy = strategy.type
        self.score_names = tuple(r.name for r in strategy.resources)
        self.weights = np.asarray([r.weight for r in strategy.resources], dtype=np.int64)
        self.cpu_memory_only = bool(self.score_names) and set(self.score_names) <= {
            api.CPU,
            api.MEMORY,
        }
        self._device_scored = any(extended.is_dra_extended_name(n) for n in self.score_names)
        """A scored resource a DeviceClass may back (DRAExtendedResource, v1.35+: scored
        from the node's devices where its allocatable has none, :meth:`_score_rows`)."""
        self.score_cols = np.asarray(
            [0 if n == api.CPU else 1 for n in self.score_names], dtype=np.int64
        )
        self._base_states: dict[tuple[tuple[str, int], ...], tuple[object, PreFilterState]] = {}
        """PreFilter's state by the Pod's requests (with the node table it was made for),
        for Pods requesting no resource but cpu, memory and ephemeral storage: made once,
        not per attempt."""
        self._score_pairs = list(zip(self.score_cols.tolist(), self.weights.tolist(), strict=True))
        """(column, weight) per scored resource in Python ints (the one-node score)."""
        self.shape_util = np.asarray([p.utilization for p in strategy.shape], dtype=np.int64)
        scale = res.MAX_NODE_SCORE // res.MAX_CUSTOM_PRIORITY_SCORE
        self.shape_score = np.asarray([p.score * scale for p in strategy.shape], dtype=np.int64)
        self._masks = RowMemo()
        """Filter's bitmask of each row (0: the Pod fits) for the dense requests asked last
        (``PreFilterState.dense``; :func:`_dense_masks`, :mod:`~kubesched.state.rowmemo`)."""
        self._memo = RowMemo()
        """The cpu/memory scores of each row for the Pods' requests asked last (an
        elementwise kernel of the row's allocatable and non-zero requested:
        :mod:`~kubesched.state.rowmemo`)."""

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: the answer depends on the Pod's requests only."""
        fit = pod.fit_score_requests
        return (
            tuple(sorted(pod.requests.items())),
            tuple(sorted(pod.nonzero_requests.items())),
            None if fit is None else tuple(sorted(fit.items())),
        )

    def _ignored(self, name: str) -> bool:
        if not res.is_extended_resource_name(name):
            return False
        return name in self.ignored or name.split("/")[0] in self.ignored_groups

    def pre_filter(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[fw.PreFilterResult | None, fw.Status]:
        """Store the Pod's checked requests (upstream ``computePodResourceRequest``)."""
        nodes = cluster.nodes
        key = tuple(pod.requests.items())
        hit = self._base_states.get(key)
        if hit is not None and hit[0] is nodes:
            state[_PRE_FILTER_KEY] = hit[1]
            return None, fw.SUCCESS
        counted = res.counted_requests(pod.requests)
        scalars = sorted(n for n in counted if n not in _BASE)
        cols: list[int] = []
        sparse: list[tuple[int, str]] = []
        amounts: list[int] = []
        reasons: list[str] = []
        delegated: list[int] = []
        resolve = self.handle.services.get(extended.RESOLVER)  # DRAExtendedResource on
        # v1.34: a Pod without an extended resource has no mapping, and then every scalar
        # resource a node lacks is left to DynamicResources; a node whose allocatable names
        # the resource (0 too) keeps it here
        v134 = resolve is not None and not self.handle.feature_gates.at_least("1.35")
        unmapped = v134 and not any(
            counted.get(n, 0) > 0 and res.is_extended_resource_name(n) for n in scalars
        )
        delegated_names: list[str] = []
        for name in (*_BASE, *scalars):
            amount = counted.get(name, 0)
            if amount <= 0 or self._ignored(name):
                continue
            if (
                resolve is not None
                and name not in _BASE
                and (unmapped or resolve(name) is not None)
            ):
                delegated.append(len(amounts))
                delegated_names.append(name)
            col = nodes.resource_col(name)  # a resource never seen gets its place now
            if col is None:
                sparse.append((len(amounts), name))
            else:
                cols.append(col)
            amounts.append(amount)
            reasons.append(insufficient(name))
        skip = {pos for pos, _ in sparse}
        state[_PRE_FILTER_KEY] = checked = PreFilterState(
            np.asarray(cols, dtype=np.int64),
            np.asarray(amounts, dtype=np.int64),
            tuple(reasons),
            tuple(sparse),
            tuple(zip(cols, [a for j, a in enumerate(amounts) if j not in skip], strict=True)),
            tuple(delegated),
            tuple(delegated_names) if v134 else (),
        )
        if not scalars:  # cpu, memory, ephemeral storage: their amounts alone decide
            if len(self._base_states) >= 1024:
                self._base_states.clear()
            self._base_states[key] = (nodes, checked)
        return None, fw.SUCCESS

    def filter(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> fw.Verdict:
        """One verdict per row: pass, or every reason the Pod does not fit there."""
        s = state.get(_PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState):
            err = fw.error(f'error reading "{_PRE_FILTER_KEY}" from cycleState: not found')
            return fw.Verdict(np.ones(rows.shape[0], dtype=np.int8), {1: err})
        nodes = cluster.nodes
        if rows.shape[0] == 1:  # result reuse and preemption re-check one node: plain ints
            row = int(rows[0])
            mask = mask_one(nodes, row, s)
            if mask is not None:
                return fw.Verdict.all_pass(1) if mask == 0 else verdict_one(mask, s.reasons)
            if fits_one(nodes, row, s):
                return fw.Verdict.all_pass(1)
        if not (s.sparse or s.delegated):  # the dense columns only: bitmasks kept per row
            masks = self._masks.values(
                nodes, s.dense, rows, lambda stale: _dense_masks(nodes, stale, s)
            )
            bad = masks.nonzero()[0]
            if not bad.shape[0]:
                return fw.Verdict.all_pass(rows.shape[0])  # the common case
            return verdict_from_failing(rows.shape[0], bad, masks.take(bad), s.reasons)
        pod_count = nodes.pod_count.take(rows)
        allowed = nodes.allowed_pods.take(rows)
        fits = pod_count < allowed
        alloc, used = checked_columns(cluster, rows, s)
        if s.amounts.shape[0]:
            fits &= (alloc - used >= s.amounts).all(axis=1)
        if fits.all():
            return fw.Verdict.all_pass(rows.shape[0])
        bad = np.flatnonzero(~fits)
        if bad.shape[0] * 4 > rows.shape[0]:  # many fail: bitmasks of every row
            return verdict_from_masks(
                fit_masks(pod_count, allowed, alloc, used, s.amounts), s.reasons
            )
        masks = fit_masks(pod_count[bad], allowed[bad], alloc[bad], used[bad], s.amounts)
        return verdict_from_failing(rows.shape[0], bad, masks, s.reasons)

    def filter_one(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, row: int
    ) -> bool | None:
        """Result reuse's one-node check (``scheduler.batch``): True when the Pod fits
        ``row``; None when it may not (``filter`` then gives the reasons)."""
        s = state.get(_PRE_FILTER_KEY)
        if isinstance(s, PreFilterState) and fits_one(cluster.nodes, row, s):
            return True
        return None

    def candidate_rows(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState
    ) -> IntArray | None:
        """The rows that have every resource the Pod requests that the node table holds
        sparse (int64, ascending; elsewhere it is Insufficient), or None when it requests
        none (``kubesched.framework.filterphase``)."""
        s = state.get(_PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState) or not s.sparse:
            return None
        out: IntArray | None = None
        for pos, name in s.sparse:
            if pos in s.delegated:
                continue  # a node without it may get it from DRA
            sp = cluster.nodes.sparse.get(name)
            if sp is not None:  # else promoted to a dense column since PreFilter
                rows = sp.rows_with()
                out = rows if out is None else np.intersect1d(out, rows)
        return out

    def static_rejections(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> npt.NDArray[np.bool_]:
        """Bool ``(n,)``: True where every checked request exceeds the node's whole
        allocatable, so the node rejects the Pod with the same reasons whatever Pods run
        there, as long as it stays as full as it is ("Too many pods"); see
        :mod:`kubesched.scheduler.verdicts`."""
        s = state.get(_PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState):
            return np.zeros(rows.shape[0], dtype=np.bool_)
        alloc, _ = checked_columns(cluster, rows, s)
        return np.asarray((alloc < s.amounts).all(axis=1))

    def pre_score(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> fw.Status:
        """Store the Pod's request per scored resource (non-zero cpu and memory)."""
        reqs = res.pod_score_requests(pod, self.score_names, use_requested=False)
        state[_PRE_SCORE_KEY] = PreScoreState(reqs)
        return fw.SUCCESS

    def score(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """Raw 0..100 scores, int64 ``(n,)``, by the configured scoring strategy."""
        s = state.get(_PRE_SCORE_KEY)
        if isinstance(s, PreScoreState):
            pod_reqs = s.pod_requests
        else:
            pod_reqs = res.pod_score_requests(pod, self.score_names, use_requested=False)
        if not self.score_names:
            return np.zeros(rows.shape[0], dtype=np.int64)
        if self.cpu_memory_only and self.strategy != cfg.REQUESTED_TO_CAPACITY_RATIO:
            nodes = cluster.nodes
            if rows.shape[0] == 1:
                one = self._score_one(nodes, int(rows[0]), pod_reqs)
                if one is not None:
                    return np.asarray([one], dtype=np.int64)
            return self._memo.values(
                nodes,
                tuple(pod_reqs.tolist()),
                rows,
                lambda stale: self._score_rows(cluster, stale, pod_reqs),
            )
        return self._score_rows(cluster, rows, pod_reqs)

    def _score_rows(self, cluster: ClusterState, rows: IntArray, pod_reqs: IntArray) -> IntArray:
        """:meth:`score` of ``rows`` computed (int64 ``(n,)``): elementwise over the rows;
        a few rows one by one (:meth:`_score_one`, the same integer arithmetic)."""
        if self.cpu_memory_only and self.strategy != cfg.REQUESTED_TO_CAPACITY_RATIO:
            if rows.shape[0] <= FEW_ROWS:
                nodes = cluster.nodes
                few = [self._score_one(nodes, r, pod_reqs) for r in rows.tolist()]
                if None not in few:
                    return np.asarray(few, dtype=np.int64)
            # Fast path: only cpu/memory scored and every row has both.
            nodes = cluster.nodes
            table = nodes.allocatable.take(rows, axis=0)  # (n, R), read by column
            alloc_cols = [table[:, col] for col, _ in self._score_pairs]
            if all(a.all() for a in alloc_cols):
                used = nodes.nonzero_requested.take(rows, axis=0)  # (n, 2)
                req_cols = [
                    used[:, col] + p
                    for (col, _), p in zip(self._score_pairs, pod_reqs.tolist(), strict=True)
                ]
                return res.fit_score_columns(
                    req_cols,
                    alloc_cols,
                    [w for _, w in self._score_pairs],
                    most=self.strategy == cfg.MOST_ALLOCATED,
                )
        alloc, req = res.allocatable_and_requested(
            cluster.nodes, rows, self.score_names, pod_reqs, use_requested=False
        )
        totals_of = self.handle.services.get(extended.TOTALS) if self._device_scored else None
        totals = totals_of(self.score_names) if totals_of is not None else None
        if totals is not None:
            res.with_device_totals(
                cluster.nodes, rows, self.score_names, pod_reqs, alloc, req, totals
            )
        if self.strategy == cfg.MOST_ALLOCATED:
            return res.most_allocated(req, alloc, self.weights)
        if self.strategy == cfg.REQUESTED_TO_CAPACITY_RATIO:
            return res.requested_to_capacity_ratio(
                req, alloc, self.weights, self.shape_util, self.shape_score
            )
        return res.least_allocated(req, alloc, self.weights)

    def score_one(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, row: int
    ) -> int | None:
        """Result reuse's one-node score (``scheduler.batch``): ``score`` for ``row`` as an
        int, or None where only ``score`` knows it."""
        s = state.get(_PRE_SCORE_KEY)
        if not isinstance(s, PreScoreState) or not self.score_names:
            return None
        if not self.cpu_memory_only or self.strategy == cfg.REQUESTED_TO_CAPACITY_RATIO:
            return None
        return self._score_one(cluster.nodes, row, s.pod_requests)

    def _score_one(self, nodes: Any, row: int, pod_reqs: IntArray) -> int | None:
        """The cpu/memory fast path for one row with Python ints (same integer arithmetic)."""
        total = weight_sum = 0
        most = self.strategy == cfg.MOST_ALLOCATED
        for (col, weight), pod_req in zip(self._score_pairs, pod_reqs.tolist(), strict=True):
            alloc = int(nodes.allocatable[row, col])
            if alloc == 0:
                return None
            req = int(nodes.nonzero_requested[row, col]) + pod_req
            if most:
                per = min(req, alloc) * res.MAX_NODE_SCORE // alloc
            else:
                per = 0 if req > alloc else (alloc - req) * res.MAX_NODE_SCORE // alloc
            total += per * weight
            weight_sum += weight
        return total // weight_sum

    # ----------------------------------------------------------------------- placements
    def score_placement(self, key: str, rows: IntArray, assigned: list[api.Pod]) -> int:
        """v1.36+ ``ScorePlacement`` (TopologyAwareWorkloadScheduling): MostAllocated over
        the placement's nodes as one, whatever the configured strategy (upstream's
        ``placementScorer``): the members it placed plus what the nodes hold already, over
        their summed allocatable, per scored resource, weighted (0-100)."""
        del key
        names = self.score_names
        if not names:
            return 0
        pods = np.zeros(len(names), dtype=np.int64)
        for pod in assigned:
            pods += res.pod_score_requests(pod, names, use_requested=False)
        alloc, req = res.allocatable_and_requested(
            self.handle.cluster.nodes, rows, names, pods, use_requested=False
        )
        present = alloc > 0
        capacity = alloc.sum(axis=0)  # int64 (k,)
        requested = pods + np.where(present, req - pods, 0).sum(axis=0)
        total = weight_sum = 0
        for i, weight in enumerate(self.weights.tolist()):
            cap = int(capacity[i])
            if cap == 0:
                continue
            total += min(int(requested[i]), cap) * res.MAX_NODE_SCORE // cap * weight
            weight_sum += weight
        return total // weight_sum if weight_sum else 0

    def normalize_placement_scores(self, scores: list[int]) -> fw.Status:
        """Upstream's Fit has no ``PlacementScoreExtensions``: the scores stay as they are."""
        del scores
        return fw.SUCCESS

    # ----------------------------------------------------------------------- queueing hints
    def events_to_register(self) -> list[fw.ClusterEventWithHint]:
        """Pod deleted or scaled down; Node added or its allocatable changed (with
        ``retryGovernance``, the governed hints below); v1.37+ on AssignedPod and TargetPod;
        under DRAExtendedResource (v1.35+) a DeviceClass added or updated
        (:func:`~.hints.device_class_hint`)."""
        pod_actions = fw.ActionType.DELETE | fw.ActionType.UPDATE_POD_SCALE_DOWN
        node_actions = fw.ActionType.ADD | fw.ActionType.UPDATE_NODE_ALLOCATABLE
        on_pod: fw.HintFn = self.governed_pod_hint if self.args.retry_governance else pod_hint
        on_node: fw.HintFn = self.governed_node_hint if self.args.retry_governance else node_hint
        gates = self.handle.feature_gates
        out: list[fw.ClusterEventWithHint]
        if gates.at_least("1.37"):
            # v1.37: AssignedPod Delete|UpdatePodScaleDown, and the queued Pod's own scale-down
            # (TargetPod/UpdatePodScaleDown: always Queue).
            if gates.enabled(RESIZE_PREEMPTION):
                on_pod, on_node = on_deferred_node(on_pod), on_deferred_node(on_node)
            target = fw.ClusterEvent(fw.Resource.TARGET_POD, fw.ActionType.UPDATE_POD_SCALE_DOWN)
            out = [
                fw.ClusterEventWithHint(
                    fw.ClusterEvent(fw.Resource.ASSIGNED_POD, pod_actions), on_pod
                ),
                fw.ClusterEventWithHint(target),
                fw.ClusterEventWithHint(fw.ClusterEvent(fw.Resource.NODE, node_actions), on_node),
            ]
        else:
            out = [
                fw.ClusterEventWithHint(fw.ClusterEvent(fw.Resource.POD, pod_actions), on_pod),
                fw.ClusterEventWithHint(fw.ClusterEvent(fw.Resource.NODE, node_actions), on_node),
            ]
        if gates.at_least("1.35") and gates.enabled("DRAExtendedResource"):
            # a class may now back an extended resource the Pod requests
            actions = fw.ActionType.ADD | fw.ActionType.UPDATE
            out.append(
                fw.ClusterEventWithHint(
                    fw.ClusterEvent(fw.Resource.DEVICE_CLASS, actions), device_class_hint
                )
            )
        return out


def _dense_masks(nodes: NodeTable, rows: IntArray, s: PreFilterState) -> IntArray:
    """Filter's bitmasks of ``rows`` (int64 ``(n,)``, 0 where the Pod fits) for ``s``'s
    dense requests (:func:`~.kernels.dense_fit_masks`; a few rows one by one,
    :func:`~.kernels.mask_one`, the same bits): elementwise over the rows."""
    if rows.shape[0] <= FEW_ROWS:
        return np.asarray([mask_one(nodes, r, s) for r in rows.tolist()], dtype=np.int64)
    return dense_fit_masks(
        nodes.pod_count.take(rows),
        nodes.allowed_pods.take(rows),
        nodes.allocatable.take(rows, axis=0),
        nodes.requested.take(rows, axis=0),
        np.arange(rows.shape[0], dtype=np.int64),
        s.dense,
    )


def new(args: object | None, handle: fw.Handle) -> NodeResourcesFit:
    """Factory: validates ``args`` (upstream ``ValidateNodeResourcesFitArgs``, in part)."""
    if args is not None and not isinstance(args, cfg.NodeResourcesFitArgs):
        raise InputError(f"want args to be of type NodeResourcesFitArgs, got {type(args)}")
    fit_args = args or cfg.NodeResourcesFitArgs()
    problems: list[tuple[str, str]] = []
    strategy = fit_args.scoring_strategy
    if strategy.type not in cfg.SCORING_STRATEGIES:
        problems.append(("scoringStrategy.type", f"unsupported value {strategy.type!r}"))
    for i, spec in enumerate(strategy.resources):
        if not 1 <= spec.weight <= res.MAX_NODE_SCORE:
            problems.append(
                (f"scoringStrategy.resources[{i}].weight", "must be in the range [1, 100]")
            )
    if strategy.type == cfg.REQUESTED_TO_CAPACITY_RATIO:
        problems.extend(_shape_problems(strategy.shape))
    if problems:
        raise InputError(problems)
    return NodeResourcesFit(fit_args, handle)


def _shape_problems(shape: tuple[cfg.UtilizationShapePoint, ...]) -> list[tuple[str, str]]:
    path = "scoringStrategy.requestedToCapacityRatio.shape"
    if not shape:
        return [(path, "at least one point must be specified")]
    out: list[tuple[str, str]] = []
    for i, p in enumerate(shape):
        if not 0 <= p.utilization <= res.MAX_UTILIZATION:
            out.append((f"{path}[{i}].utilization", "not in valid range [0, 100]"))
        elif i > 0 and p.utilization <= shape[i - 1].utilization:
            out.append((f"{path}[{i}].utilization", "utilization values must be sorted"))
        if not 0 <= p.score <= res.MAX_CUSTOM_PRIORITY_SCORE:
            out.append((f"{path}[{i}].score", "not in valid range [0, 10]"))
    return out
