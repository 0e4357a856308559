"""The simulated world's time series: what the HTML report plots and a saved run keeps.

:class:`Timeline` samples once per ``interval`` virtual seconds (default 1): queue sizes,
cumulative attempts by result, Pods created and bound, Pods running, and per resource (CPU,
memory, GPUs) utilisation and fragmentation plus the number of fully idle 8-GPU nodes.  Each
sample also brings the scheduler's gauges up to date (``Scheduler.sync_metrics``), so metrics
advance in virtual time, and with ``pace`` set it sleeps until the wall clock catches up
(``pace`` simulated seconds per wall second), so a Prometheus scraping ``/metrics`` sees a
run unfold at a known speed: ``rate()`` over a scrape window then equals ``pace`` times the
per-simulated-second rate (exactly the simulated rate at ``pace`` 1).

Definitions (docs/design.md's "is the place worth having"):

- utilisation of a resource: requested / allocatable over live nodes, percent;
- fragmentation of a resource: the share of its free capacity that sits on nodes where it is
  partly used, percent (free capacity on fully idle nodes is not fragmented; a request as
  large as a whole node can only use those);
- idle 8-GPU nodes: nodes with at least 8 allocatable GPUs and none requested;
- ``gpu``: the GPU placement measures the GpuDevices plugin took at the same sync
  (:mod:`kubesched.devices.measures`: FGD fragmentation %, idle 8-GPU nodes, Pods waiting
  for a whole node, cross-NUMA Pods), None where no profile enables GpuDevices.

:func:`waiting_pods` describes Pods still Pending at the end from the API server's creation
time and ``PodScheduled=False`` condition: a distribution of ages and the oldest, by reason;
with the simulator's PV controller, ``volumes`` names the claims a Pending Pod waits on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api import objects as api
from kubesched.devices import measures
from kubesched.explainer import capacity
from kubesched.framework.interface import Handle
from kubesched.framework.runtime import Framework
from kubesched.plugins.registry import full_registry

if TYPE_CHECKING:
    from kubesched.sim.driver import SimCluster

GPU = "nvidia.com/gpu"
RESOURCES = (api.CPU, api.MEMORY, GPU)
QUEUES = ("active", "backoff", "unschedulable", "gated")
RESULTS = ("scheduled", "unschedulable", "error")
WHOLE_GPU_NODE = 8
GPU_SERIES = (
    "fragmentationPercent",
    "idleWholeGpuNodes",
    "podsWaitingForWholeNode",
    "crossNumaPods",
)
"""The GPU measures sampled (:meth:`kubesched.devices.measures.GpuGauges.as_json`)."""
MAX_AGES = 5000
"""At most this many ages are kept (evenly spaced ranks of the sorted list beyond that)."""
MAX_CAPACITY_PODS = 20
"""The oldest Unschedulable Pods whose ``capacity`` (short or fragmented) is reported."""


class Timeline:
    """Samples ``sim`` every ``interval`` virtual seconds from ``start`` until ``until``."""

    def __init__(self, sim: SimCluster, *, interval: float = 1.0, pace: float | None = None):
        self.sim = sim
        self.interval = interval
        self.pace = pace
        self.series: dict[str, Any] = {
            "t": [],
            "pending": {q: [] for q in QUEUES},
            "attempts": {r: [] for r in RESULTS},
            "created": [],
            "bound": [],
            "running": [],
            "utilization": {r: [] for r in RESOURCES},
            "fragmentation": {r: [] for r in RESOURCES},
            "idleGpuNodes": [],
            "gpu": {k: [] for k in GPU_SERIES},
        }
        self._wall0 = time.perf_counter()
        self._until = 0.0
        self.on_sample: Callable[[], None] | None = None
        """Called after every sample (the simulate command's progress bar)."""

    def start(self, until: float, at: float = 0.0) -> None:
        """Sample at ``at``, ``at + interval``, ... up to ``until`` (inclusive)."""
        self._until = until
        self._wall0 = time.perf_counter() - (at / self.pace if self.pace else 0.0)
        self.sim.loop.call_at(at, self._tick, priority=2)

    def _tick(self) -> None:
        self.sample()
        nxt = self.sim.loop.now + self.interval
        if nxt <= self._until + 1e-9:
            self.sim.loop.call_at(nxt, self._tick, priority=2)

    def sample(self) -> None:
        """Record one point at the current virtual time and sync the scheduler's metrics."""
        sim = self.sim
        s = sim.scheduler
        now = sim.loop.now
        if self.pace:
            lag = self._wall0 + now / self.pace - time.perf_counter()
            if lag > 0:
                time.sleep(lag)
        s.sync_metrics()
        ser = self.series
        ser["t"].append(round(now, 6))
        pending = s.queue.pending_pods()
        for q in QUEUES:
            ser["pending"][q].append(int(pending.get(q, 0)))
        for r in RESULTS:
            ser["attempts"][r].append(int(s.attempts.get(r, 0)))
        stats = sim.api.stats
        ser["created"].append(len(stats.created_at))
        ser["bound"].append(len(stats.bound_at))
        ser["running"].append(len(s.cluster.pods))
        usage = resource_usage(sim)
        for r in RESOURCES:
            util, frag = usage.get(r, (None, None))
            ser["utilization"][r].append(util)
            ser["fragmentation"][r].append(frag)
        ser["idleGpuNodes"].append(idle_gpu_nodes(sim))
        gauges = measures.latest(p for fwk in s.profiles.values() for p in fwk.instances.values())
        point = gauges.as_json() if gauges is not None else {}
        for k in GPU_SERIES:
            ser["gpu"][k].append(point.get(k))
        if self.on_sample is not None:
            self.on_sample()

    def to_dict(self) -> dict[str, Any]:
        """The series, JSON-ready (``interval`` and ``pace`` included)."""
        return {"interval": self.interval, "pace": self.pace, **self.series}


def resource_usage(sim: SimCluster) -> dict[str, tuple[float | None, float | None]]:
    """Per resource present in the cluster: (utilisation %, fragmentation %); see module doc."""
    t = sim.scheduler.cluster.nodes
    rows = np.flatnonzero(t.alive)
    out: dict[str, tuple[float | None, float | None]] = {}
    for name in RESOURCES:
        alloc, used = t.resource_values(name, rows)
        total = int(alloc.sum())
        if total <= 0:
            continue
        free = np.maximum(alloc - used, 0)
        total_free = int(free.sum())
        stranded = int(free[(used > 0)].sum())
        util = round(100.0 * int(used.sum()) / total, 3)
        frag = round(100.0 * stranded / total_free, 3) if total_free else 0.0
        out[name] = (util, frag)
    return out


def idle_gpu_nodes(sim: SimCluster) -> int:
    """Live nodes with at least 8 allocatable GPUs and none requested."""
    t = sim.scheduler.cluster.nodes
    alloc, used = t.resource_values(GPU, np.flatnonzero(t.alive))
    return int(((alloc >= WHOLE_GPU_NODE) & (used == 0)).sum())


def waiting_pods(sim: SimCluster, keys: list[str], now: float) -> dict[str, Any]:
    """Pods among ``keys`` still Pending at ``now``: ages (seconds since creation), counts by
    the reason of their ``PodScheduled=False`` condition (``SchedulingGated`` for gated Pods,
    ``NotYetAttempted`` when the scheduler has not written one), and the oldest Pod."""
    api_server = sim.api
    queue = sim.scheduler.queue
    rows: list[tuple[float, str, str, str]] = []
    for key in keys:
        pod = api_server.pods.get(key)
        if pod is None or pod.node_name:
            continue
        created = api_server.stats.created_at.get(key, now)
        cond = api_server.conditions.get(key)
        if cond is not None:
            reason, message = cond.reason, cond.message
        elif queue.queue_of(key) == "gated":
            qp = queue.get(key)
            reason, message = "SchedulingGated", qp.message if qp is not None else ""
        elif held := queue.held_gate(key):  # held until its PodGroup: PreEnqueue's answer
            reason, message = "SchedulingGated", held
        else:
            reason, message = "NotYetAttempted", ""
        rows.append((max(0.0, now - created), key, reason, message))
    rows.sort(reverse=True)
    by_reason: dict[str, int] = {}
    for _, _, reason, _ in rows:
        by_reason[reason] = by_reason.get(reason, 0) + 1
    ages = sorted(a for a, _, _, _ in rows)
    if len(ages) > MAX_AGES:
        idx = np.linspace(0, len(ages) - 1, MAX_AGES).round().astype(np.int64)
        ages = [ages[int(i)] for i in idx]
    oldest = None
    if rows:
        age, key, reason, message = rows[0]
        oldest = {"pod": key, "ageSeconds": round(age, 3), "reason": reason, "message": message}
    unschedulable = [
        (key, message) for _, key, reason, message in rows if reason == "Unschedulable"
    ]
    out = {
        "count": len(rows),
        "byReason": dict(sorted(by_reason.items())),
        "agesSeconds": [round(a, 3) for a in ages],
        "oldest": oldest,
        "capacity": pending_capacity(sim, unschedulable[:MAX_CAPACITY_PODS]),
    }
    volumes = _waiting_on_volumes(sim, [(key, msg) for _, key, _, msg in rows])
    if volumes:  # a run without claims keeps its summary
        out["volumes"] = volumes
    return out


def _waiting_on_volumes(sim: SimCluster, rows: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Why Pending, for Pods with claims not bound yet (the oldest first, at most
    :data:`MAX_CAPACITY_PODS`): ``{"pod", "message", "claims"}``, each claim as
    :meth:`~kubesched.sim.pvcontroller.PVController.claims_waited_on` names it."""
    controller = sim.volumes
    if controller is None:
        return []
    out = []
    for key, message in rows:
        pod = sim.api.pods.get(key)
        if pod is None or not pod.volumes:
            continue
        claims = controller.claims_waited_on(pod)
        if claims:
            out.append({"pod": key, "message": message, "claims": claims})
        if len(out) >= MAX_CAPACITY_PODS:
            break
    return out


def pending_capacity(sim: SimCluster, pods: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """``{"pod", "message", "capacity"}`` for ``(key, message)`` of Pods Pending as
    Unschedulable: the ``capacity`` object explain gives (:mod:`kubesched.explainer.capacity`),
    against the cluster at the end, from a fresh framework of the Pod's profile (so the run's
    plugins and metrics are untouched; the cache observers it adds are removed again)."""
    s = sim.scheduler
    cluster = s.cluster
    profiles: dict[str, Framework] = s.profiles
    if not pods:
        return []
    fresh: dict[str, Framework] = {}
    kept = len(cluster.observers)
    out = []
    try:
        for key, message in pods:
            pod = sim.api.pods.get(key)
            fwk = profiles.get(pod.scheduler_name) if pod is not None else None
            if pod is None or fwk is None:
                continue
            if pod.scheduler_name not in fresh:
                handle = Handle(cluster, clock=s.handle.clock)
                fresh[pod.scheduler_name] = Framework(
                    fwk.profile, full_registry(), handle, percentage_of_nodes_to_score=100
                )
            cap = capacity.diagnose(fresh[pod.scheduler_name], pod)
            if cap is not None:
                out.append({"pod": key, "message": message, "capacity": cap})
    finally:
        del cluster.observers[kept:]
    return out
