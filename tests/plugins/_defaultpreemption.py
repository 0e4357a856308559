"""Shared setup for the DefaultPreemption tests: upstream's resource sizes, a scheduler over
a small cluster, and hand-made Filter outcomes (upstream's ``filteredNodesStatuses``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.config.load import load_config
from kubesched.framework.interface import Code, CycleState, Status
from kubesched.framework.runtime import FilterOutcome, Framework
from kubesched.plugins.defaultpreemption import DefaultPreemption
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import Scheduler, SchedulerOptions
from kubesched.testing import FakeApi, make_node, make_pod

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
NO_REQUESTS: dict[str, str] = {}


class Api(FakeApi):
    """The kit's fake; with ``scheduler`` set, a bind or a deletion reaches it at once (a
    watch without delay, grace 0)."""

    def __init__(self) -> None:
        super().__init__()
        self.scheduler: Scheduler | None = None

    def bind(self, pod: api.Pod, node_name: str) -> None:
        super().bind(pod, node_name)
        if self.scheduler is not None:
            self.scheduler.on_pod_update(pod, pod.bound_to(node_name))

    def delete_pod(self, pod: api.Pod, reason: str) -> None:
        super().delete_pod(pod, reason)
        if self.scheduler is not None:
            self.scheduler.on_pod_delete(pod)


def pod(
    name: str,
    priority: int = 0,
    res: dict[str, str] = NO_REQUESTS,
    node: str = "",
    start: float | None = None,
    labels: dict[str, str] | None = None,
) -> api.Pod:
    """Upstream ``st.MakePod().Name(name).Priority(p).Req(res).Node(node).StartTime(t)``."""
    b = make_pod(name).res(dict(res)).priority(priority).labels(**(labels or {}))
    if node:
        b = b.node(node)
    p = b.obj()
    p.start_time = start
    return p


def node(name: str, res: dict[str, str] | None = None, pods: int = 32) -> api.Node:
    """Upstream ``st.MakeNode().Name(name).Capacity(res)`` (``pods`` defaults to 32)."""
    return make_node(name).res({**(res or {}), "pods": pods}).obj()


def pdb_obj(
    name: str,
    labels: dict[str, str],
    allowed: int | None = None,
    disrupted: tuple[str, ...] = (),
    **spec: Any,
) -> dict[str, Any]:
    """A raw ``policy/v1`` PodDisruptionBudget."""
    obj: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": labels}, **spec},
    }
    if allowed is not None or disrupted:
        obj["status"] = {
            "disruptionsAllowed": allowed or 0,
            "disruptedPods": dict.fromkeys(disrupted, "2026-01-01T00:00:00Z"),
        }
    return obj


def scheduler(
    nodes: list[api.Node],
    pods: list[api.Pod],
    pdbs: list[dict[str, Any]] = (),  # type: ignore[assignment]
    config: dict[str, Any] | None = None,
) -> tuple[Scheduler, Api]:
    """A scheduler (default profile unless ``config``) over ``nodes`` and bound ``pods``."""
    client = Api()
    s = Scheduler(
        load_config(config, known_plugins=known_plugin_names()),
        clock=lambda: 0.0,
        api_client=client,
        options=SchedulerOptions(batching=False),
    )
    for n in nodes:
        s.on_node_add(n)
    for p in pods:
        s.on_pod_add(p)
    for obj in pdbs:
        s.on_object(obj)
    return s, client


def framework(s: Scheduler) -> Framework:
    return s.profiles[api.DEFAULT_SCHEDULER_NAME]


def plugin(s: Scheduler) -> DefaultPreemption:
    p = framework(s).instances["DefaultPreemption"]
    assert isinstance(p, DefaultPreemption)
    return p


def prefiltered(s: Scheduler, preemptor: api.Pod) -> CycleState:
    """A cycle state with PreFilter run, as upstream's tests prepare it."""
    state = CycleState()
    _, status, _ = framework(s).run_pre_filter(state, preemptor)
    assert status.is_success(), status
    return state


@dataclass
class Diagnosis:
    """What the scheduler hands PostFilter: Filter statuses by node, absent nodes' status."""

    outcome: FilterOutcome | None
    absent: Status | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def diagnosis(s: Scheduler, codes: dict[str, Code], absent: Code | None = None) -> Diagnosis:
    """Upstream ``framework.NewNodeToStatus(codes, absent)``."""
    rows = np.asarray([s.cluster.nodes.row_of[n] for n in codes], dtype=np.int64)
    statuses = [Status(c, (), "test") for c in dict.fromkeys(codes.values())]
    index = {st.code: i for i, st in enumerate(statuses)}
    ids = np.asarray([index[c] for c in codes.values()], dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    outcome = FilterOutcome(empty, rows, ids, statuses, int(rows.size))
    return Diagnosis(outcome, None if absent is None else Status(absent))
