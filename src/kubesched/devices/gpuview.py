"""What the GPU plugins share: a Pod's GPU request, the candidate nodes' GPU columns, and the
target workload FGD-style policies measure fragmentation against.

Plugins never import each other, so the GpuDevices plugin and the GPU policy plugins meet
here (and in :mod:`kubesched.devices.policies`, the kernels).

The target workload of a profile is either given in a policy plugin's args::

    pluginConfig:
    - name: GpuFGD
      args:
        targetWorkload:
        - {cpu: "4", gpuMilli: 500, gpuCount: 1, weight: 3}
        - {cpu: "12", gpuMilli: 1000, gpuCount: 1, models: "V100M16|V100M32", weight: 1}

or learned from the Pods the plugin has seen (those in the cluster when it starts and every
Pod it scores), the most common shapes covering 95 % as in the FGD paper.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.api import gpu as g
from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.api.quantity import resource_amount
from kubesched.devices import policies as gp
from kubesched.devices.fragmentation import FragModel, Shape, TargetWorkload, target_workload
from kubesched.framework.interface import SKIP, SUCCESS, CycleState, Handle, Status
from kubesched.state.cache import ClusterState
from kubesched.state.gpus import GpuTable, table_for

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class GpuPod:
    """A Pod's GPU request with its CPU (millicores) and memory (bytes) requests."""

    req: g.GpuRequest
    cpu: int
    memory: int

    @property
    def shape(self) -> Shape:
        """The Pod's task shape."""
        return Shape(self.cpu, self.req.milli, self.req.count, self.req.models)


def gpu_pod(pod: api.Pod) -> GpuPod:
    """The Pod's GPU view; raises :class:`InputError` for a malformed GPU request."""
    return GpuPod(
        g.pod_gpu_request(pod),
        int(pod.requests.get(api.CPU, 0)),
        int(pod.requests.get(api.MEMORY, 0)),
    )


@dataclass(frozen=True, slots=True)
class NodeView:
    """GPU columns of candidate rows: ``free`` int64 ``(n, G)``, the rest ``(n,)``."""

    free: IntArray
    count: IntArray
    cpu_left: IntArray
    model: IntArray
    tags: IntArray

    @property
    def gpu_left(self) -> IntArray:
        """Free thousandths per node."""
        return np.asarray(self.free.sum(axis=1), dtype=np.int64)


def node_view(cluster: ClusterState, table: GpuTable, rows: IntArray) -> NodeView:
    """The GPU columns of ``rows``."""
    nodes = cluster.nodes
    cpu_left = nodes.allocatable[rows, 0] - nodes.requested[rows, 0]
    return NodeView(
        table.free[rows], table.count[rows], cpu_left, table.model[rows], table.tags[rows]
    )


def model_ok(table: GpuTable, rows: IntArray, models: tuple[str, ...]) -> BoolArray:
    """Rows whose GPU model the restriction ``models`` accepts (all when empty)."""
    if not models:
        return np.ones(rows.shape[0], dtype=np.bool_)
    codes = np.array([table.model_code.get(m, -1) for m in models], dtype=np.int64)
    return np.isin(table.model[rows], codes)


def gpu_fits(view: NodeView, req: g.GpuRequest) -> BoolArray:
    """Rows with GPU room for ``req`` (every row for a CPU-only request)."""
    return gp.fits(view.free, req.milli, req.count)


# --------------------------------------------------------------------------- workload
def parse_target_workload(args: Mapping[str, Any] | None, path: str) -> dict[Shape, float]:
    """``args.targetWorkload`` as shape weights; {} when absent.  Raises InputError."""
    items = (args or {}).get("targetWorkload")
    if items is None:
        return {}
    if not isinstance(items, Sequence) or isinstance(items, str):
        raise InputError([(f"{path}.targetWorkload", "must be a list")])
    out: dict[Shape, float] = {}
    problems = []
    for i, item in enumerate(items):
        p = f"{path}.targetWorkload[{i}]"
        if not isinstance(item, Mapping):
            problems.append((p, "must be an object"))
            continue
        try:
            cpu = resource_amount(api.CPU, item.get("cpu", 0))
            milli, count = int(item.get("gpuMilli", 0)), int(item.get("gpuCount", 0))
            weight = float(item.get("weight", 1))
        except (ValueError, TypeError) as e:
            problems.append((p, f"invalid value: {e}"))
            continue
        if count < 0 or not 0 <= milli <= g.MILLI or (count > 1 and milli != g.MILLI):
            problems.append((p, "gpuMilli must be 1..1000 (1000 when gpuCount > 1)"))
            continue
        if weight <= 0:
            problems.append((f"{p}.weight", "must be positive"))
            continue
        shape = Shape(cpu, milli if count else 0, count if milli else 0)
        shape = Shape(
            shape.cpu, shape.milli, shape.num, g.parse_models(str(item.get("models", "")))
        )
        out[shape] = out.get(shape, 0.0) + weight
    if problems:
        raise InputError(problems)
    return out


class WorkloadModel:
    """The target workload of one policy plugin and its fragmentation tables, rebuilt only
    when the workload or the set of GPU models changes."""

    def __init__(self, fixed: dict[Shape, float]) -> None:
        self.fixed = fixed
        self.seen: Counter[Shape] = Counter()
        self._seen_keys: set[str] = set()
        self._key: tuple[int, int, int] | None = None
        self._fm: FragModel | None = None
        self._hv: gp.HoleValue | None = None

    def see(self, key: str, shape: Shape) -> None:
        """Count a Pod's shape once (learned workloads only)."""
        if not self.fixed and key not in self._seen_keys:
            self._seen_keys.add(key)
            self.seen[shape] += 1

    def see_cluster(self, cluster: ClusterState) -> None:
        """Count the Pods already in the cluster (once)."""
        for key, rec in cluster.pods.items():
            try:
                self.see(key, gpu_pod(rec.pod).shape)
            except InputError:
                continue

    def workload(self) -> TargetWorkload:
        """The target workload now."""
        counts: Mapping[Shape, float] = self.fixed or self.seen
        return target_workload(counts)

    def models(self, table: GpuTable) -> tuple[FragModel, gp.HoleValue]:
        """Fragmentation model and hole values for ``table``'s GPU models."""
        key = (len(self._seen_keys), len(table.models), table.width)
        if self._fm is None or self._hv is None or key != self._key:
            tw = self.workload()
            self._fm = FragModel(tw, table.models, table.width)
            self._hv = gp.hole_values(tw)
            self._key = key
        return self._fm, self._hv


class GpuScorePlugin:
    """What every GPU policy Score plugin shares: PreScore parses the Pod's GPU request into
    CycleState (Skip for a malformed request, and for CPU-only Pods when ``skip_cpu_only``);
    Score reads it back and hands :meth:`score_view` the candidates' GPU columns (zeros when
    PreScore did not run).  A policy implements :meth:`score_view`, and :meth:`saw` when it
    learns the target workload from the Pods it scores."""

    name = ""
    skip_cpu_only = False
    """Whether CPU-only Pods are skipped (their score would be 0 on every node)."""

    def __init__(self, args: object | None, handle: Handle) -> None:
        del args
        self.handle = handle

    def pre_score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Status:
        """Parse the request into CycleState; Skip as the class docstring says."""
        try:
            gpod = gpu_pod(pod)
        except InputError:
            return SKIP
        if self.skip_cpu_only and gpod.req.count == 0:
            return SKIP
        self.saw(pod, gpod)
        state["PreScore" + self.name] = gpod
        return SUCCESS

    def saw(self, pod: api.Pod, gpod: GpuPod) -> None:
        """Hook: PreScore parsed ``gpod`` for ``pod`` (nothing by default)."""

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """The policy's scores for ``rows``, int64 ``(n,)``."""
        gpod = state.get("PreScore" + self.name)
        if not isinstance(gpod, GpuPod) or rows.shape[0] == 0:
            return np.zeros(rows.shape[0], dtype=np.int64)
        table = table_for(cluster)
        return self.score_view(state, gpod, table, node_view(cluster, table, rows), rows)

    def score_view(
        self, state: CycleState, gpod: GpuPod, table: GpuTable, view: NodeView, rows: IntArray
    ) -> IntArray:
        """The policy's kernel over the candidates' ``view``; int64 ``(n,)``."""
        raise NotImplementedError


class WorkloadScorePlugin(GpuScorePlugin):
    """A GPU policy that scores against the target workload: given by ``targetWorkload`` in
    its args, else learned from the Pods already in the cluster and those it scores."""

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.workload = WorkloadModel(parse_target_workload(args, self.name))
        self.workload.see_cluster(handle.cluster)

    def saw(self, pod: api.Pod, gpod: GpuPod) -> None:
        """Count the Pod's shape in the learned target workload."""
        self.workload.see(pod.key, gpod.shape)
