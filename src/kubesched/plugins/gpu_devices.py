"""GpuDevices: device-level GPU allocation (PreFilter, Filter, PreScore, Score, Reserve,
PreBind), kubesched's own plugin (no upstream counterpart; upstream leaves devices to the
kubelet's device plugins, which cannot say no to a bad node choice).

- Filter: the node has a GPU model the Pod accepts (``kubesched.io/gpu-model``) and room on
  its GPUs: one GPU with the requested thousandths free for a shared request, ``N`` fully idle
  GPUs for ``nvidia.com/gpu: N``.
- Score: topology quality of the placement the node offers a multi-GPU Pod: 50 if one NVLink
  domain has all its GPUs idle, +30 if one NVLink domain and NUMA node does, +20 if one PCIe
  switch of those does; Pods of one GPU skip Score.
- Reserve: picks the concrete GPUs in the cluster's :class:`~kubesched.state.gpus.GpuTable`:
  for a shared request the GPU a GPU policy chose for this node (CycleState
  :data:`~kubesched.devices.policies.CHOICE_KEY`), else the tightest; for whole GPUs,
  idle GPUs under one PCIe switch of one NVLink domain and NUMA node, else in one NVLink
  domain and NUMA node, else in one NVLink domain, else in one NUMA node, else the lowest
  indices (at each level the smallest group that fits, lowest indices first).  Never
  oversubscribes: a choice that does not fit fails Reserve.  Unreserve restores the previous
  choice.
- PreBind: writes the indices to the Pod's ``kubesched.io/gpu-index`` annotation.
- ``on_object``: Koordinator ``Device`` objects set the GPU topology of their node instead
  of the node annotation (:mod:`kubesched.devices.koordinator`).
- ``sync_metrics`` (called by the scheduler about once a second): takes the GPU measures of
  :mod:`kubesched.devices.measures` and sets their gauges.  The target workload of the
  fragmentation measure is learned from the GPU Pods this plugin has seen (CPU-only Pods are
  left out, unlike the trace replay, so a mostly-CPU cluster does not read as fragmented);
  "waiting for a whole node" counts the multi-GPU Pods this plugin has tried that are neither
  placed nor deleted (with several profiles, each plugin counts its own profile's Pods and
  the last one to sync sets the gauge).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api import gpu as g
from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.config import names
from kubesched.devices import gpuview as gv
from kubesched.devices import koordinator, measures
from kubesched.devices import policies as gp
from kubesched.framework.contract import PreBindTiming
from kubesched.framework.interface import (
    SKIP,
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    IntArray,
    PreFilterResult,
    Resource,
    Status,
    Verdict,
    error,
    unschedulable,
)
from kubesched.state import gpus
from kubesched.state.cache import ClusterState

NAME = names.GPU_DEVICES
ERR_MODEL = "node(s) didn't have a GPU of a model the pod accepts"
ERR_CAPACITY = "node(s) didn't have enough free GPU capacity"
_KEY = NAME
_RESERVED = NAME + "/reserved"


# --------------------------------------------------------------------------- cycle state
@dataclass(frozen=True, slots=True)
class _PodState:
    """The Pod's GPU request, parsed once per cycle."""

    req: g.GpuRequest


@dataclass(frozen=True, slots=True)
class _Reserved:
    """What Reserve replaced, for Unreserve: row and previous indices (None: none held)."""

    row: int
    previous: tuple[int, ...] | None


# --------------------------------------------------------------------------- plugin
class GpuDevices:
    """Filters nodes by per-GPU capacity and model, rates GPU topology, picks the GPUs."""

    name = NAME

    def __init__(self, args: object | None, handle: Handle) -> None:
        del args
        self.handle = handle
        self.metrics = handle.metrics
        self.workload = gv.WorkloadModel({})
        self._tried_multi: dict[str, api.Pod] = {}
        self._seen_cluster = False
        self.gpu_gauges: measures.GpuGauges | None = None
        """The measures the last :meth:`sync_metrics` took."""
        handle.add_event_handler(self)

    def pre_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[PreFilterResult | None, Status]:
        """Parse the GPU request; Skip Filter for a Pod that asks no GPU."""
        try:
            req = g.pod_gpu_request(pod)
        except InputError as e:
            return None, unschedulable(str(e), resolvable=False).with_plugin(NAME)
        if req.count == 0:
            return None, SKIP
        state[_KEY] = _PodState(req)
        gpus.table_for(cluster)
        self.workload.see(pod.key, gv.GpuPod(req, _cpu(pod), 0).shape)
        if req.count >= 2:
            self._tried_multi[pod.key] = pod
        return None, SUCCESS

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """Model and per-GPU capacity, for all ``rows`` at once."""
        req = _request(state, pod)
        if req is None or req.count == 0:
            return Verdict.all_pass(rows.shape[0])
        table = gpus.table_for(cluster)
        view = gv.node_view(cluster, table, rows)
        wrong_model = ~gv.model_ok(table, rows, req.models)
        no_room = ~gv.gpu_fits(view, req)
        codes = np.where(wrong_model, 1, np.where(no_room, 2, 0)).astype(np.int8)
        return Verdict(
            codes,
            {
                1: unschedulable(ERR_MODEL, resolvable=False).with_plugin(NAME),
                2: unschedulable(ERR_CAPACITY).with_plugin(NAME),
            },
        )

    def pre_score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Status:
        """Skip Score for Pods of fewer than two GPUs (every node would score 100)."""
        req = _request(state, pod)
        return SKIP if req is None or req.count < 2 else SUCCESS

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """Topology quality 0..100 of the best placement on each row, int64 ``(n,)``."""
        req = _request(state, pod)
        if req is None or req.count < 2:
            return np.full(rows.shape[0], 100, dtype=np.int64)
        t = gpus.table_for(cluster)
        idle = t.free[rows] == g.MILLI
        return topology_scores(idle, t.nvlink[rows], t.numa[rows], t.pcie[rows], req.count)

    def reserve(self, state: CycleState, pod: api.Pod, node_name: str) -> Status:
        """Pick the GPUs on ``node_name`` and hold them in the GPU table."""
        req = _request(state, pod)
        if req is None or req.count == 0:
            return SUCCESS
        cluster = self.handle.cluster
        row = cluster.nodes.row_of.get(node_name)
        if row is None:
            return error(f"node {node_name} is not in the cache").with_plugin(NAME)
        t = gpus.table_for(cluster)
        previous = t.indices_of(pod.key)
        if previous is not None:
            t.reassign(pod.key, row, None, req)  # free the provisional choice first
        chosen = choose_gpus(t, row, req, state.get(gp.CHOICE_KEY))
        if chosen is None or not t.reassign(pod.key, row, chosen, req):
            if previous is not None:
                t.reassign(pod.key, row, previous, req)
            return unschedulable(ERR_CAPACITY).with_plugin(NAME)
        state[_RESERVED] = _Reserved(row, previous)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: api.Pod, node_name: str) -> None:
        """Put back what Reserve replaced."""
        r = state.pop(_RESERVED, None)
        req = _request(state, pod)
        if isinstance(r, _Reserved) and req is not None:
            t = gpus.table_for(self.handle.cluster)
            t.reassign(pod.key, r.row, None, req)
            if r.previous is not None:
                t.reassign(pod.key, r.row, r.previous, req)

    def pre_bind(self, state: CycleState, pod: api.Pod, node_name: str) -> Status:
        """Record the GPU indices on the Pod (``kubesched.io/gpu-index``)."""
        indices = gpus.table_for(self.handle.cluster).indices_of(pod.key)
        if indices is not None:
            pod.annotations = {**pod.annotations, g.GPU_INDEX_ANNOTATION: g.format_indices(indices)}
        return SUCCESS

    def pre_bind_timing(self, state: CycleState, pod: api.Pod, node_name: str) -> PreBindTiming:
        """How :meth:`pre_bind` will go (``PreBindPreview``): it writes nothing to the API
        server, so it passes at once."""
        return PreBindTiming.PASSES

    def on_object(self, obj: dict[str, Any], deleted: bool = False) -> None:
        """Event handler: a Koordinator Device sets (or, deleted, unsets) its node's GPU
        topology."""
        if koordinator.is_device(obj):
            koordinator.topologies_for(self.handle.cluster).device_changed(obj, deleted)

    def on_pod_delete(self, pod: api.Pod) -> None:
        """Event handler: a deleted Pod no longer waits."""
        self._tried_multi.pop(pod.key, None)

    def sync_metrics(self) -> None:
        """Take the GPU measures (:attr:`gpu_gauges`) and set their gauges."""
        cluster = self.handle.cluster
        if not self._seen_cluster:
            self._seen_cluster = True
            for key, rec in cluster.pods.items():
                try:
                    req = g.pod_gpu_request(rec.pod)
                except InputError:
                    continue
                if req.count:
                    self.workload.see(key, gv.GpuPod(req, _cpu(rec.pod), 0).shape)
        for key in [k for k in self._tried_multi if k in cluster.pods]:
            del self._tried_multi[key]
        table = gpus.table_for(cluster)
        fm, _ = self.workload.models(table)
        self.gpu_gauges = measures.measure(cluster, self._tried_multi.values(), fm)
        if self.metrics is not None:
            self.gpu_gauges.export(self.metrics)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """GPUs free up when an assigned Pod goes; nodes gain GPUs or change model."""
        return [
            ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE)),
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD
                    | ActionType.UPDATE_NODE_ALLOCATABLE
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_ANNOTATION,
                )
            ),
        ]


def _cpu(pod: api.Pod) -> int:
    return int(pod.requests.get(api.CPU, 0))


def _request(state: CycleState, pod: api.Pod) -> g.GpuRequest | None:
    s = state.get(_KEY)
    if isinstance(s, _PodState):
        return s.req
    try:
        return g.pod_gpu_request(pod)
    except InputError:
        return None


# --------------------------------------------------------------------------- kernels
def domain_keys(nvlink: IntArray, numa: IntArray, pcie: IntArray) -> list[IntArray]:
    """Group ids per GPU, tightest first: (NVLink, NUMA, PCIe switch), (NVLink, NUMA),
    NVLink, NUMA; -1 where a GPU has no NVLink domain at the NVLink-only level.  Each array
    has the shape of the inputs."""
    nv = nvlink.astype(np.int64)
    both = (nv + 1) * 4096 + numa
    return [both * 4096 + pcie, both, np.where(nv >= 0, nv, -1), numa.astype(np.int64)]


def topology_scores(
    idle: gv.BoolArray, nvlink: IntArray, numa: IntArray, pcie: IntArray, k: int
) -> IntArray:
    """50 points when one NVLink domain of a row has ``k`` idle GPUs, +30 when one NVLink
    domain and NUMA node does, +20 when one PCIe switch of those does (GPUs without NVLink
    count as one domain for the last two).  ``idle`` bool and the ids int64, ``(n, G)``;
    returns int64 ``(n,)``."""
    keys = domain_keys(nvlink, numa, pcie)
    score = np.zeros(idle.shape[0], dtype=np.int64)
    for key, points in ((keys[2], 50), (keys[1], 30), (keys[0], 20)):
        best = np.zeros(idle.shape[0], dtype=np.int64)
        for d in np.unique(key[idle]):
            if d >= 0 or key is not keys[2]:
                best = np.maximum(best, (idle & (key == d)).sum(axis=1))
        score += np.where(best >= k, points, 0)
    return score


def choose_gpus(
    t: gpus.GpuTable, row: int, req: g.GpuRequest, choice: object = None
) -> tuple[int, ...] | None:
    """Concrete GPUs for ``req`` on ``row`` (see the module docstring), or None."""
    n = int(t.count[row])
    free = t.free[row, :n]
    if req.shared:
        if isinstance(choice, dict):
            gpu = choice.get(row)
            if gpu is not None and 0 <= int(gpu) < n and free[int(gpu)] >= req.milli:
                return (int(gpu),)
        return t.default_choice(row, req)
    idle = np.flatnonzero(free == g.MILLI)
    if idle.size < req.count:
        return None
    keys = domain_keys(t.nvlink[row, :n], t.numa[row, :n], t.pcie[row, :n])
    for level, key in enumerate(keys):
        groups = [idle[key[idle] == d] for d in np.unique(key[idle]) if level != 2 or d >= 0]
        fitting = [grp for grp in groups if grp.size >= req.count]
        if fitting:
            best = min(fitting, key=lambda grp: (grp.size, int(grp[0])))
            return tuple(int(i) for i in best[: req.count])
    return tuple(int(i) for i in idle[: req.count])


def new(args: object | None, handle: Handle) -> GpuDevices:
    """Factory; GpuDevices takes no args."""
    return GpuDevices(args, handle)
