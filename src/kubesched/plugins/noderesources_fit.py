"""NodeResourcesFit: does the node have room for the Pod, and how full would it be.

Upstream ``pkg/scheduler/framework/plugins/noderesources/fit.go`` (v1.34), answered for all
candidate nodes at once:

- PreFilter computes the Pod's request vector once (cpu, memory, ephemeral-storage and the
  scalar resources it asks for; ``ignoredResources`` / ``ignoredResourceGroups`` drop
  extended resources only).
- Filter fails a node with ``Too many pods`` and ``Insufficient <resource>`` for every
  resource that does not fit, in upstream's order (pods, cpu, memory, ephemeral-storage,
  scalar resources).  The status is UnschedulableAndUnresolvable when some request exceeds
  the node's whole allocatable (preemption cannot help), else Unschedulable.  A resource the
  node table holds sparse (few nodes have it) is read through its index of rows.
- Score uses the configured ``scoringStrategy`` (LeastAllocated, MostAllocated,
  RequestedToCapacityRatio) over non-zero cpu/memory requests; no NormalizeScore.

Deviations: upstream walks scalar resources in Go map order (random); we list them sorted by
name.  The DRA-backed extended resources (alpha, off by default) are not modelled.  An empty
``scoringStrategy.resources`` scores 0 where upstream returns an Error status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.config import args as cfg
from kubesched.framework import interface as fw
from kubesched.framework import resources as res
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import IntArray

NAME = "NodeResourcesFit"
TOO_MANY_PODS = "Too many pods"
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME
_BASE = (api.CPU, api.MEMORY, api.EPHEMERAL_STORAGE)


def insufficient(resource: str) -> str:
    """The reason for one resource that does not fit: ``Insufficient <resource>``."""
    return f"Insufficient {resource}"


# --------------------------------------------------------------------------- cycle state
@dataclass(frozen=True, slots=True)
class _PreFilterState:
    """The Pod's requests to check: amounts (int64 ``(k,)``) and reasons, in upstream's
    order; ``cols`` (int64 ``(d,)``) the node-table columns of the dense ones and
    ``sparse`` the (position among the ``k``, name) of the others, positions ascending;
    ``dense``: the dense ones as (column, amount) in Python ints (the one-node check)."""

    cols: IntArray
    amounts: IntArray
    reasons: tuple[str, ...]
    sparse: tuple[tuple[int, str], ...] = ()
    dense: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    """The Pod's request per scored resource, int64 ``(k,)``."""

    pod_requests: IntArray


def _checked_columns(
    cluster: ClusterState, rows: IntArray, s: _PreFilterState
) -> tuple[IntArray, IntArray]:
    """(allocatable, requested) on ``rows`` of the resources ``s`` checks, each int64
    ``(n, k)`` in ``s.amounts``' order, dense and sparse resources alike."""
    nodes = cluster.nodes
    # np.take on axis 0 is several times faster than fancy row indexing of 2-D arrays.
    alloc = np.take(nodes.allocatable, rows, axis=0)[:, s.cols]
    used = np.take(nodes.requested, rows, axis=0)[:, s.cols]
    for pos, name in s.sparse:  # ascending positions: each lands where it belongs
        a, u = nodes.resource_values(name, rows)
        alloc = np.insert(alloc, pos, a, axis=1)
        used = np.insert(used, pos, u, axis=1)
    return alloc, used


# --------------------------------------------------------------------------- plugin
class NodeResourcesFit:
    """Filters nodes without room for the Pod and scores by the configured strategy."""

    name = NAME
    row_local = True
    """Answers for a node depend on the Pod, that node and the Pods on it only (result
    reuse keeps its entry when Pods change on other nodes: ``framework.batch``)."""

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
        self.score_cols = np.asarray(
            [0 if n == api.CPU else 1 for n in self.score_names], dtype=np.int64
        )
        self._score_pairs = list(zip(self.score_cols.tolist(), self.weights.tolist(), strict=True))
        """(column, weight) per scored resource in Python ints (the one-node score)."""
        self.shape_util = np.asarray([p.utilization for p in strategy.shape], dtype=np.int64)
        scale = res.MAX_NODE_SCORE // res.MAX_CUSTOM_PRIORITY_SCORE
        self.shape_score = np.asarray([p.score * scale for p in strategy.shape], dtype=np.int64)

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: the answer depends on the Pod's requests only."""
        return (tuple(sorted(pod.requests.items())), tuple(sorted(pod.nonzero_requests.items())))

    def _ignored(self, name: str) -> bool:
        if not res.is_extended_resource_name(name):
            return False
        return name in self.ignored or name.split("/")[0] in self.ignored_groups

    def pre_filter(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[fw.PreFilterResult | None, fw.Status]:
        """Store the Pod's checked requests (upstream ``computePodResourceRequest``)."""
        nodes = cluster.nodes
        counted = res.counted_requests(pod.requests)
        scalars = sorted(n for n in counted if n not in _BASE)
        cols: list[int] = []
        sparse: list[tuple[int, str]] = []
        amounts: list[int] = []
        reasons: list[str] = []
        for name in (*_BASE, *scalars):
            amount = counted.get(name, 0)
            if amount <= 0 or self._ignored(name):
                continue
            col = nodes.resource_col(name)  # a resource never seen gets its place now
            if col is None:
                sparse.append((len(amounts), name))
            else:
                cols.append(col)
            amounts.append(amount)
            reasons.append(insufficient(name))
        skip = {pos for pos, _ in sparse}
        state[_PRE_FILTER_KEY] = _PreFilterState(
            np.asarray(cols, dtype=np.int64),
            np.asarray(amounts, dtype=np.int64),
            tuple(reasons),
            tuple(sparse),
            tuple(zip(cols, [a for j, a in enumerate(amounts) if j not in skip], strict=True)),
        )
        return None, fw.SUCCESS

    def filter(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> fw.Verdict:
        """One verdict per row: pass, or every reason the Pod does not fit there."""
        s = state.get(_PRE_FILTER_KEY)
        if not isinstance(s, _PreFilterState):
            err = fw.error(f'error reading "{_PRE_FILTER_KEY}" from cycleState: not found')
            return fw.Verdict(np.ones(rows.shape[0], dtype=np.int8), {1: err})
        nodes = cluster.nodes
        if rows.shape[0] == 1 and _fits_one(nodes, int(rows[0]), s):
            return fw.Verdict.all_pass(1)  # result reuse re-checks one node: plain ints
        pod_count = nodes.pod_count[rows]
        allowed = nodes.allowed_pods[rows]
        alloc, used = _checked_columns(cluster, rows, s)
        if (pod_count < allowed).all() and (alloc - used >= s.amounts).all():
            return fw.Verdict.all_pass(rows.shape[0])  # the common case: no bitmasks needed
        return verdict_from_masks(fit_masks(pod_count, allowed, alloc, used, s.amounts), s.reasons)

    def filter_one(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, row: int
    ) -> bool | None:
        """Result reuse's one-node check (``framework.batch``): True when the Pod fits
        ``row``; None when it may not (``filter`` then gives the reasons)."""
        s = state.get(_PRE_FILTER_KEY)
        if isinstance(s, _PreFilterState) and _fits_one(cluster.nodes, row, s):
            return True
        return None

    def candidate_rows(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState
    ) -> IntArray | None:
        """The rows that have every resource the Pod requests that the node table holds
        sparse (int64, ascending; elsewhere it is Insufficient), or None when it requests
        none (``kubesched.framework.filterphase``)."""
        s = state.get(_PRE_FILTER_KEY)
        if not isinstance(s, _PreFilterState) or not s.sparse:
            return None
        out: IntArray | None = None
        for _, name in s.sparse:
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
        :mod:`kubesched.framework.verdicts`."""
        s = state.get(_PRE_FILTER_KEY)
        if not isinstance(s, _PreFilterState):
            return np.zeros(rows.shape[0], dtype=np.bool_)
        alloc, _ = _checked_columns(cluster, rows, s)
        return np.asarray((alloc < s.amounts).all(axis=1))

    def pre_score(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> fw.Status:
        """Store the Pod's request per scored resource (non-zero cpu and memory)."""
        reqs = res.pod_score_requests(pod, self.score_names, use_requested=False)
        state[_PRE_SCORE_KEY] = _PreScoreState(reqs)
        return fw.SUCCESS

    def score(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """Raw 0..100 scores, int64 ``(n,)``, by the configured scoring strategy."""
        s = state.get(_PRE_SCORE_KEY)
        if isinstance(s, _PreScoreState):
            pod_reqs = s.pod_requests
        else:
            pod_reqs = res.pod_score_requests(pod, self.score_names, use_requested=False)
        if not self.score_names:
            return np.zeros(rows.shape[0], dtype=np.int64)
        if self.cpu_memory_only and self.strategy != cfg.REQUESTED_TO_CAPACITY_RATIO:
            # Fast path: only cpu/memory scored and every row has both.
            nodes = cluster.nodes
            if rows.shape[0] == 1:
                one = self._score_one(nodes, int(rows[0]), pod_reqs)
                if one is not None:
                    return np.asarray([one], dtype=np.int64)
            alloc2 = np.take(nodes.allocatable, rows, axis=0)[:, self.score_cols]
            if alloc2.all():
                req2 = np.take(nodes.nonzero_requested, rows, axis=0)[:, self.score_cols] + pod_reqs
                if self.strategy == cfg.MOST_ALLOCATED:
                    return res.most_allocated_all_present(req2, alloc2, self.weights)
                return res.least_allocated_all_present(req2, alloc2, self.weights)
        alloc, req = res.allocatable_and_requested(
            cluster.nodes, rows, self.score_names, pod_reqs, use_requested=False
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
        """Result reuse's one-node score (``framework.batch``): ``score`` for ``row`` as an
        int, or None where only ``score`` knows it."""
        s = state.get(_PRE_SCORE_KEY)
        if not isinstance(s, _PreScoreState) or not self.score_names:
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

    # ----------------------------------------------------------------------- queueing hints
    def events_to_register(self) -> list[fw.ClusterEventWithHint]:
        """Pod deleted or scaled down; Node added or its allocatable changed (with
        ``retryGovernance``, the governed hints below)."""
        pod_actions = fw.ActionType.DELETE | fw.ActionType.UPDATE_POD_SCALE_DOWN
        node_actions = fw.ActionType.ADD | fw.ActionType.UPDATE_NODE_ALLOCATABLE
        on_pod: fw.HintFn = self.governed_pod_hint if self.args.retry_governance else pod_hint
        on_node: fw.HintFn = self.governed_node_hint if self.args.retry_governance else node_hint
        return [
            fw.ClusterEventWithHint(fw.ClusterEvent(fw.Resource.POD, pod_actions), on_pod),
            fw.ClusterEventWithHint(fw.ClusterEvent(fw.Resource.NODE, node_actions), on_node),
        ]

    def governed_pod_hint(self, pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
        """Retry governance (beyond upstream): :func:`pod_hint`, and only when the node the
        deleted or shrunk Pod was on now has room for ``pod``.  The cache already holds the
        change, so several deletions on one node add up; the 5-minute flush still applies."""
        hint = pod_hint(pod, old, new)
        changed = new if new is not None else old
        if hint == fw.QueueingHint.QUEUE_SKIP or changed is None or changed.uid == pod.uid:
            return hint
        return self._fits_now(pod, changed.node_name)

    def governed_node_hint(self, pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
        """Retry governance: :func:`node_hint` (the new allocatable is enough, and grew), and
        the node has room for ``pod`` now."""
        hint = node_hint(pod, old, new)
        if hint == fw.QueueingHint.QUEUE_SKIP:
            return hint
        return self._fits_now(pod, new.name)

    def _fits_now(self, pod: api.Pod, node_name: str) -> fw.QueueingHint:
        """QUEUE when ``pod``'s checked requests fit ``node_name`` now, or would fit once
        the node's lower-priority Pods were preempted (when ``pod`` may preempt), or
        the cache does not know the node (never strand a Pod on a doubt); else QUEUE_SKIP."""
        nodes = self.handle.cluster.nodes
        row = nodes.row_of.get(node_name)
        if row is None:
            return fw.QueueingHint.QUEUE
        amounts = {
            name: amount
            for name, amount in res.counted_requests(pod.requests).items()
            if amount > 0 and not self._ignored(name)
        }
        if res.fits_now(nodes, row, amounts) or self._fits_by_preempting(pod, row, amounts):
            return fw.QueueingHint.QUEUE
        return fw.QueueingHint.QUEUE_SKIP

    def _fits_by_preempting(self, pod: api.Pod, row: int, amounts: dict[str, int]) -> bool:
        """Whether ``pod`` may preempt and would fit node ``row`` with every lower-priority
        Pod there gone (what DefaultPreemption could free)."""
        if pod.preemption_policy == "Never":
            return False
        cluster = self.handle.cluster
        nodes = cluster.nodes
        freed: dict[str, int] = {}
        slots = 0
        for key in cluster.pods_on_node.get(nodes.names[row], ()):
            other = cluster.pods[key].pod
            if other.priority < pod.priority:
                slots += 1
                for name, amount in res.counted_requests(other.requests).items():
                    freed[name] = freed.get(name, 0) + amount
        if not slots or int(nodes.pod_count[row]) - slots >= int(nodes.allowed_pods[row]):
            return False
        for name, amount in amounts.items():
            allocatable, requested = nodes.resource_at(name, row)
            if allocatable - requested + freed.get(name, 0) < amount:
                return False
        return True


def pod_hint(pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
    """Upstream ``isSchedulableAfterPodEvent``: a bound Pod deleted, or one that shrank.

    (Upstream also queues on deleting an unbound Pod with a nominated node; our Pod has no
    ``nominatedNodeName``, so such a deletion is skipped.)
    """
    if new is None:
        if old is None or not old.node_name:
            return fw.QueueingHint.QUEUE_SKIP
        return fw.QueueingHint.QUEUE
    if old is None:
        return fw.QueueingHint.QUEUE
    if new.uid == pod.uid:
        return fw.QueueingHint.QUEUE
    if not new.node_name:
        return fw.QueueingHint.QUEUE_SKIP
    before = res.counted_requests(old.requests)
    after = res.counted_requests(new.requests)
    for name, amount in res.counted_requests(pod.requests).items():
        if amount != 0 and before.get(name, 0) > after.get(name, 0):
            return fw.QueueingHint.QUEUE
    return fw.QueueingHint.QUEUE_SKIP


def node_hint(pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
    """Upstream ``isSchedulableAfterNodeChange``: the Pod fits the new node, and it grew."""
    if new is None or not node_fits(pod.requests, new.allocatable):
        return fw.QueueingHint.QUEUE_SKIP
    if old is None:
        return fw.QueueingHint.QUEUE
    if new.allocatable.get(api.PODS, 0) > old.allocatable.get(api.PODS, 0):
        return fw.QueueingHint.QUEUE
    for name, amount in res.counted_requests(pod.requests).items():
        if amount > 0 and new.allocatable.get(name, 0) > old.allocatable.get(name, 0):
            return fw.QueueingHint.QUEUE
    return fw.QueueingHint.QUEUE_SKIP


# --------------------------------------------------------------------------- kernels
def _fits_one(nodes: Any, row: int, s: _PreFilterState) -> bool:
    """Whether the Pod fits ``row`` (one node, Python ints); False also when unsure."""
    if int(nodes.pod_count[row]) >= int(nodes.allowed_pods[row]):
        return False
    alloc, used = nodes.allocatable, nodes.requested
    for col, amount in s.dense:
        if int(alloc[row, col]) - int(used[row, col]) < amount:
            return False
    for pos, name in s.sparse:
        have, taken = nodes.resource_at(name, row)
        if have - taken < int(s.amounts[pos]):
            return False
    return True


def node_fits(requests: api.Resources, allocatable: api.Resources) -> bool:
    """Upstream ``isFit``: the Pod alone fits an empty node with ``allocatable``."""
    if allocatable.get(api.PODS, 0) < 1:
        return False
    counted = res.counted_requests(requests)
    return all(amount <= allocatable.get(name, 0) for name, amount in counted.items())


def fit_masks(
    pod_count: IntArray,
    allowed_pods: IntArray,
    allocatable: IntArray,
    requested: IntArray,
    amounts: IntArray,
) -> IntArray:
    """Failure bitmask per node, int64 ``(n,)``; 0 means the Pod fits.

    ``pod_count``, ``allowed_pods``: int64 ``(n,)``; ``allocatable``, ``requested``: int64
    ``(n, k)`` for the ``k`` checked resources, whose Pod amounts are ``amounts`` (int64
    ``(k,)``, all positive).  Bit 0: too many pods; bit ``1 + j``: resource ``j`` does not
    fit; bit ``k + 1``: some resource exceeds the whole allocatable (unresolvable).
    """
    k = amounts.shape[0]
    mask = (pod_count + 1 > allowed_pods).astype(np.int64)
    if k:
        fails = amounts > allocatable - requested
        bits = np.left_shift(np.int64(1), np.arange(1, k + 1, dtype=np.int64))
        mask = mask | (fails * bits).sum(axis=1)
        unresolvable = (fails & (amounts > allocatable)).any(axis=1)
        mask = mask | (unresolvable.astype(np.int64) << (k + 1))
    return mask


def verdict_from_masks(masks: IntArray, reasons: tuple[str, ...]) -> fw.Verdict:
    """Compact int8 codes and a status table from :func:`fit_masks` bitmasks."""
    uniq, inverse = np.unique(masks, return_inverse=True)
    if uniq.shape[0] > 127:
        raise ValueError("more than 127 distinct NodeResourcesFit outcomes in one cycle")
    offset = 0 if uniq[0] == 0 else 1
    codes = (inverse.reshape(-1) + offset).astype(np.int8)
    k = len(reasons)
    table: dict[int, fw.Status] = {}
    for i, m in enumerate(uniq.tolist()):
        if m == 0:
            continue
        out = [TOO_MANY_PODS] if m & 1 else []
        out.extend(r for j, r in enumerate(reasons) if m >> (j + 1) & 1)
        table[i + offset] = fw.unschedulable(*out, resolvable=not (m >> (k + 1) & 1))
    return fw.Verdict(codes, table)


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
