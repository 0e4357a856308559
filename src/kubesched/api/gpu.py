"""GPU devices of a node and GPU requests of a Pod, as kubesched reads them from objects.

**Nodes.**  A node's GPUs are declared the way NVIDIA's device plugin and GPU feature discovery
do, plus one kubesched annotation for topology:

- ``status.allocatable["nvidia.com/gpu"]``: the number of GPUs (devices ``0 .. N-1``);
- label ``nvidia.com/gpu.product``: the GPU model (``Tesla-V100-SXM2-16GB``, or a trace's
  short name such as ``V100M16``); a node without it has model ``""``;
- ``status.allocatable["kubesched.io/gpu-milli"]``: ``1000 * N``, so that NodeResourcesFit
  admits fractional requests (the per-GPU check is the GpuDevices plugin's);
- annotation ``kubesched.io/gpu-topology`` (optional), JSON with one list per level, each
  of length N, giving the domain id of every GPU index::

      {"numa": [0, 0, 0, 0, 1, 1, 1, 1],
       "pcie": [0, 0, 1, 1, 2, 2, 3, 3],
       "nvlink": [0, 0, 0, 0, 1, 1, 1, 1]}

  GPUs with the same id share that NUMA node, PCIe switch or NVLink domain.  A missing level
  means "all GPUs in one domain" for ``numa`` and ``nvlink`` and "one switch per GPU" for
  ``pcie``; ``-1`` in ``nvlink`` means the GPU has no NVLink peer.

**Pods.**  A Pod asks for whole GPUs with ``nvidia.com/gpu: N`` or for a fraction of one GPU
with ``kubesched.io/gpu-milli: M`` (``0 < M <= 1000``, thousandths of one GPU: 220 = 0.22
GPU), never both.  Annotation ``kubesched.io/gpu-model`` (``"V100M16|V100M32"``) restricts the
models it accepts.  The GPU indices a Pod got are written at bind to annotation
``kubesched.io/gpu-index`` (``"0,1"``), the way GPU-sharing device plugins read them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from kubesched.api import objects as api
from kubesched.api.errors import InputError

GPU_RESOURCE = "nvidia.com/gpu"
GPU_MILLI_RESOURCE = "kubesched.io/gpu-milli"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_TOPOLOGY_ANNOTATION = "kubesched.io/gpu-topology"
GPU_MODEL_ANNOTATION = "kubesched.io/gpu-model"
GPU_INDEX_ANNOTATION = "kubesched.io/gpu-index"
MILLI = 1000
"""Thousandths in one GPU."""

_LEVELS = ("numa", "pcie", "nvlink")


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """What a Pod asks of GPUs: ``count`` GPUs of ``milli`` thousandths each.

    Whole GPUs have ``milli == 1000``; a shared GPU has ``count == 1`` and ``milli < 1000``;
    ``models`` empty means any model.  A CPU-only Pod has ``count == 0`` and ``milli == 0``.
    """

    count: int = 0
    milli: int = 0
    models: tuple[str, ...] = ()

    @property
    def total_milli(self) -> int:
        """Thousandths of a GPU asked in all."""
        return self.count * self.milli

    @property
    def shared(self) -> bool:
        """A fraction of one GPU."""
        return self.count == 1 and self.milli < MILLI

    def accepts(self, model: str) -> bool:
        """Whether a GPU of ``model`` satisfies the model restriction."""
        return not self.models or model in self.models


@dataclass(frozen=True, slots=True)
class NodeGpus:
    """A node's GPU devices: model and per-index topology domain ids (each of length count)."""

    count: int = 0
    model: str = ""
    numa: tuple[int, ...] = ()
    pcie: tuple[int, ...] = ()
    nvlink: tuple[int, ...] = ()


NO_GPU = GpuRequest()


def parse_models(spec: str) -> tuple[str, ...]:
    """``"A|B"`` to ``("A", "B")``; empty parts are dropped (an empty spec means any)."""
    return tuple(sorted({m.strip() for m in spec.split("|") if m.strip()}))


def pod_gpu_request(pod: api.Pod) -> GpuRequest:
    """The Pod's GPU request; raises :class:`InputError` for a malformed one."""
    whole = int(pod.requests.get(GPU_RESOURCE, 0))
    milli = int(pod.requests.get(GPU_MILLI_RESOURCE, 0))
    models = parse_models(pod.annotations.get(GPU_MODEL_ANNOTATION, ""))
    if whole and milli:
        raise InputError(
            [(f"{pod.key}: requests", f"ask for {GPU_RESOURCE} or {GPU_MILLI_RESOURCE}, not both")]
        )
    if milli:
        if not 0 < milli <= MILLI:
            raise InputError(
                [(f"{pod.key}: requests[{GPU_MILLI_RESOURCE}]", f"must be in 1..{MILLI}")]
            )
        return GpuRequest(1, milli, models)
    if whole < 0:
        raise InputError([(f"{pod.key}: requests[{GPU_RESOURCE}]", "must not be negative")])
    if whole:
        return GpuRequest(whole, MILLI, models)
    return GpuRequest(0, 0, models)


def node_gpus(node: api.Node) -> NodeGpus:
    """The node's GPUs; raises :class:`InputError` for a malformed topology annotation."""
    count = int(node.allocatable.get(GPU_RESOURCE, 0))
    model = node.labels.get(GPU_PRODUCT_LABEL, "")
    raw = node.annotations.get(GPU_TOPOLOGY_ANNOTATION, "")
    levels: dict[str, tuple[int, ...]] = {
        "numa": (0,) * count,
        "pcie": tuple(range(count)),
        "nvlink": (0,) * count,
    }
    if raw:
        path = f"node {node.name}: metadata.annotations[{GPU_TOPOLOGY_ANNOTATION}]"
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError as e:
            raise InputError([(path, f"not JSON: {e.msg}")]) from None
        if not isinstance(doc, dict):
            raise InputError([(path, "must be a JSON object")])
        problems = []
        for key, ids in doc.items():
            if key not in _LEVELS:
                problems.append((f"{path}.{key}", f"unknown level; want one of {list(_LEVELS)}"))
            elif not isinstance(ids, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in ids
            ):
                problems.append((f"{path}.{key}", "must be a list of integers"))
            elif len(ids) != count:
                problems.append((f"{path}.{key}", f"has {len(ids)} entries for {count} GPUs"))
            else:
                levels[key] = tuple(ids)
        if problems:
            raise InputError(problems)
    return NodeGpus(count, model, levels["numa"], levels["pcie"], levels["nvlink"])


def format_indices(indices: tuple[int, ...] | list[int]) -> str:
    """GPU indices as the ``kubesched.io/gpu-index`` annotation value (``"0,1"``)."""
    return ",".join(str(int(i)) for i in indices)


def parse_indices(value: str) -> tuple[int, ...] | None:
    """The ``kubesched.io/gpu-index`` annotation value, or None when absent or malformed."""
    if not value:
        return None
    try:
        return tuple(int(p) for p in value.split(","))
    except ValueError:
        return None
