"""The GPU trace through Dynamic Resource Allocation: the real scheduler, DRA objects.

Every GPU of the node list is a device of a ResourceSlice (driver :data:`DRIVER`, one pool
per node, attribute ``model``) with a synthetic topology, since the trace has none:
``resource.kubernetes.io/pcieRoot`` pairs GPUs (0-1, 2-3, ...) and ``nvlinkDomain`` groups
them by four (0-3, 4-7).  A GPU task claims devices through a ResourceClaimTemplate of
DeviceClass ``gpu`` (a model-restricted task adds a CEL selector on ``model``): ``num``
devices for whole GPUs, one device for a fraction of a GPU (DRA without consumable capacity
cannot share a device, so such a task takes a whole one).  CPU-only tasks claim nothing.

Tasks arrive in the FGD protocol's order (:func:`kubesched.sim.gpureplay.protocol.workload`
over the tasks' device requests) into a :class:`~kubesched.sim.driver.SimCluster`, one at a
time, each settled before the next, and never leave.  After each task the allocated devices
are counted, and the protocol's curve gives the unallocated GPU % at each arrived % (of the
device capacity).  ``score=False`` is the default profile (upstream's first fit within a
node); ``score=True`` adds DeviceFragmentation with the pod list's device counts as its
target workload.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np

from kubesched.api.parse import parse_node, parse_pod
from kubesched.config import names
from kubesched.config.load import load_config
from kubesched.devices.fragmentation import MILLI
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim.driver import SimCluster
from kubesched.sim.gpureplay import protocol
from kubesched.sim.gpureplay.traces import NodeList, PodList

DRIVER = "gpu.kubesched.io"
API = "resource.k8s.io/v1"
SCORE_WEIGHT = 10


def devices_claimed(pods: PodList) -> PodList:
    """The pod list as DRA sees it: every GPU task asks whole devices."""
    milli = np.where(pods.milli > 0, MILLI, 0).astype(np.int64)
    num = np.where(pods.milli > 0, np.maximum(pods.num, 1), 0).astype(np.int64)
    return dataclasses.replace(pods, milli=milli, num=num)


def objects(nodes: NodeList, pods: PodList) -> list[dict[str, Any]]:
    """Nodes, their slices, the DeviceClass and one template per (count, models)."""
    out: list[dict[str, Any]] = [
        {
            "apiVersion": API,
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        }
    ]
    for i, name in enumerate(nodes.names):
        res = {
            "cpu": f"{int(nodes.cpu[i])}m",
            "memory": f"{int(nodes.memory[i])}Mi",
            "pods": "1000",
        }
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": res, "capacity": res},
            }
        )
        model = nodes.models[int(nodes.model[i])]
        devices = [
            {
                "name": f"gpu-{j}",
                "attributes": {
                    "model": {"string": model},
                    "resource.kubernetes.io/pcieRoot": {"string": f"pci-{j // 2}"},
                    "nvlinkDomain": {"int": j // 4},
                },
            }
            for j in range(int(nodes.gpus[i]))
        ]
        if devices:
            out.append(
                {
                    "apiVersion": API,
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{name}-gpus"},
                    "spec": {
                        "driver": DRIVER,
                        "nodeName": name,
                        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                        "devices": devices,
                    },
                }
            )
    for count, spec in sorted(
        {(int(n), int(s)) for n, s in zip(pods.num, pods.spec, strict=True) if n}
    ):
        out.append(_template(count, spec, pods.specs[spec]))
    return out


def _template(count: int, spec: int, models: tuple[str, ...]) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "count": count}
    if models:
        names = ", ".join(f'"{m}"' for m in models)
        expr = f'device.attributes["{DRIVER}"].model in [{names}]'
        exactly["selectors"] = [{"cel": {"expression": expr}}]
    return {
        "apiVersion": API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": f"gpus-{count}-{spec}", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}}},
    }


def _pod(pods: PodList, i: int, n: int) -> dict[str, Any]:
    res = {"cpu": f"{int(pods.cpu[i])}m", "memory": f"{int(pods.memory[i])}Mi"}
    container: dict[str, Any] = {"name": "task", "image": "task", "resources": {"requests": res}}
    spec: dict[str, Any] = {"containers": [container]}
    if pods.num[i]:
        container["resources"]["claims"] = [{"name": "gpus"}]
        template = f"gpus-{int(pods.num[i])}-{int(pods.spec[i])}"
        spec["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": template}]
    meta = {"name": f"task-{n:06d}", "namespace": "default", "uid": f"uid-task-{n:06d}"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def config(pods: PodList, score: bool) -> dict[str, Any]:
    """The scheduler configuration of a run."""
    cfg: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
    }
    if score:
        counts = Counter(int(n) for n in pods.num if n)
        args = {"targetWorkload": [{"count": k, "weight": w} for k, w in sorted(counts.items())]}
        plugins = {
            "score": {"enabled": [{"name": names.DEVICE_FRAGMENTATION, "weight": SCORE_WEIGHT}]}
        }
        cfg["profiles"] = [{"schedulerName": "default-scheduler", "plugins": plugins}]
        cfg["profiles"][0]["pluginConfig"] = [{"name": names.DEVICE_FRAGMENTATION, "args": args}]
    return cfg


def replay(
    nodes: NodeList,
    pods: PodList,
    seed: int,
    *,
    score: bool,
    until: float = 1.3,
    limit: int | None = None,
) -> list[protocol.CurvePoint]:
    """The curve of one run, up to ``until`` of the capacity arrived (the protocol's 130 %
    by default) or ``limit`` tasks."""
    claimed = devices_claimed(pods)
    capacity = nodes.gpu_capacity_milli
    order = protocol.workload(claimed, capacity, seed)
    asks = np.cumsum(claimed.num[order] * MILLI)
    order = order[: int(np.searchsorted(asks, until * capacity, side="right")) + 1]
    if limit is not None:
        order = order[:limit]
    sim = SimCluster(load_config(config(claimed, score), known_plugins=known_plugin_names()))
    for obj in objects(nodes, claimed):
        if obj["kind"] == "Node":
            sim.api.create_node(parse_node(obj))
        else:
            sim.api.apply_object(obj)
    allocated = 0
    arrived = np.zeros(order.size, dtype=np.int64)
    done = np.zeros(order.size, dtype=np.int64)
    asked = 0
    for n, i in enumerate(order.tolist()):
        pod = parse_pod(_pod(claimed, i, n))
        sim.api.create_pod(pod)
        while not sim.quiet() and sim.loop.step():
            pass
        asked += int(claimed.num[i]) * MILLI
        if claimed.num[i] and sim.api.pods[pod.key].node_name:
            allocated += int(claimed.num[i]) * MILLI
        arrived[n], done[n] = asked, allocated
    zeros = np.zeros(order.size)
    return protocol.curve(arrived, done, zeros, zeros.astype(np.int64), capacity)
