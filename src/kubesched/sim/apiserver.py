"""A simulated API server: the source of truth for Nodes and Pods in the offline world.

It accepts binds (the scheduler's binding cycle calls :meth:`SimApiServer.bind`), deletes
Pods, records ``PodScheduled=False`` conditions, and tells watchers (the scheduler's informer
handlers) about every change, optionally after a watch delay in virtual time.  It keeps its
own accounting of bound Pods, so invariants are checked against the API's truth, not the
scheduler's cache.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from kubesched.api import objects as api
from kubesched.sim.engine import EventLoop


class ApiError(Exception):
    """A rejected API call (409 Conflict, 404 Not Found, injected faults)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class Watcher(Protocol):
    """What the API server notifies (the scheduler's informer handlers)."""

    def on_node_add(self, node: api.Node) -> None: ...
    def on_node_update(self, old: api.Node, new: api.Node) -> None: ...
    def on_node_delete(self, node: api.Node) -> None: ...
    def on_pod_add(self, pod: api.Pod) -> None: ...
    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None: ...
    def on_pod_delete(self, pod: api.Pod) -> None: ...
    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None: ...


@dataclass(slots=True)
class PodCondition:
    """The last ``PodScheduled=False`` condition written for a Pod."""

    reason: str
    message: str
    time: float


@dataclass(slots=True)
class ApiStats:
    """What the API server saw."""

    binds: int = 0
    bind_errors: int = 0
    deletes: int = 0
    condition_updates: int = 0
    binds_per_pod: Counter[str] = field(default_factory=Counter)
    bound_at: dict[str, float] = field(default_factory=dict)
    created_at: dict[str, float] = field(default_factory=dict)


class SimApiServer:
    """Nodes and Pods in memory; watchers hear about changes after ``watch_delay``."""

    def __init__(self, loop: EventLoop, *, watch_delay: float = 0.0, seed: int = 0) -> None:
        self.loop = loop
        self.watch_delay = watch_delay
        self.nodes: dict[str, api.Node] = {}
        self.pods: dict[str, api.Pod] = {}
        self.conditions: dict[str, PodCondition] = {}
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.watchers: list[Watcher] = []
        self.stats = ApiStats()
        self.bind_failure_rate = 0.0
        self.rng = np.random.default_rng(seed)
        self.on_bound: list[Callable[[api.Pod], None]] = []

    # ------------------------------------------------------------------ notifications
    def _notify(self, fn: Callable[[Watcher], None]) -> None:
        def deliver() -> None:
            for w in self.watchers:
                fn(w)

        if self.watch_delay > 0:
            self.loop.call_later(self.watch_delay, deliver)
        else:
            deliver()

    def watch(self, watcher: Watcher) -> None:
        """Register a watcher and replay the current state to it (list, then watch)."""
        self.watchers.append(watcher)
        for obj in self.objects.values():
            watcher.on_object(obj)
        for node in self.nodes.values():
            watcher.on_node_add(node)
        for pod in self.pods.values():
            if pod.node_name:
                watcher.on_pod_add(pod)
        for pod in self.pods.values():
            if not pod.node_name:
                watcher.on_pod_add(pod)

    # ------------------------------------------------------------------ other objects
    def apply_object(self, obj: dict[str, Any]) -> None:
        """Create or replace a Namespace, Service, PodDisruptionBudget or other object."""
        meta = obj.get("metadata") or {}
        key = (str(obj.get("kind")), f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
        self.objects[key] = obj
        self._notify(lambda w: w.on_object(obj))

    def update_object(self, obj: dict[str, Any]) -> None:
        """Replace an object (a plugin writing a ResourceClaim's status, say)."""
        self.apply_object(obj)

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        """Delete an object created with :meth:`apply_object` (no error if absent)."""
        obj = self.objects.pop((kind, f"{namespace}/{name}"), None)
        if obj is not None:
            self._notify(lambda w: w.on_object(obj, deleted=True))

    # ------------------------------------------------------------------ nodes
    def create_node(self, node: api.Node) -> None:
        """Add a node (409 if it exists)."""
        if node.name in self.nodes:
            raise ApiError(409, f'nodes "{node.name}" already exists')
        self.nodes[node.name] = node
        self._notify(lambda w: w.on_node_add(node))

    def update_node(self, node: api.Node) -> None:
        """Replace a node."""
        old = self.nodes.get(node.name)
        if old is None:
            raise ApiError(404, f'nodes "{node.name}" not found')
        self.nodes[node.name] = node
        self._notify(lambda w: w.on_node_update(old, node))

    def delete_node(self, name: str) -> list[api.Pod]:
        """Delete a node and the Pods bound to it (the node lifecycle controller's job)."""
        node = self.nodes.pop(name, None)
        if node is None:
            raise ApiError(404, f'nodes "{name}" not found')
        victims = [p for p in self.pods.values() if p.node_name == name]
        for p in victims:
            self.delete_pod(p, "NodeLost")
        self._notify(lambda w: w.on_node_delete(node))
        return victims

    # ------------------------------------------------------------------ pods
    def create_pod(self, pod: api.Pod) -> None:
        """Add a Pod (409 if it exists)."""
        if pod.key in self.pods:
            raise ApiError(409, f'pods "{pod.name}" already exists')
        self.pods[pod.key] = pod
        self.stats.created_at[pod.key] = self.loop.now
        if pod.node_name:
            self.stats.binds_per_pod[pod.key] += 1
            self.stats.bound_at[pod.key] = self.loop.now
        self._notify(lambda w: w.on_pod_add(pod))

    def update_pod(self, pod: api.Pod) -> None:
        """Replace a Pod (labels, gates, ...)."""
        old = self.pods.get(pod.key)
        if old is None:
            raise ApiError(404, f'pods "{pod.name}" not found')
        self.pods[pod.key] = pod
        self._notify(lambda w: w.on_pod_update(old, pod))

    def bind(self, pod: api.Pod, node_name: str) -> None:
        """The binding subresource: 404 for a missing Pod or node, 409 if already bound."""
        current = self.pods.get(pod.key)
        if current is None or (pod.uid and current.uid != pod.uid):
            raise ApiError(404, f'pods "{pod.name}" not found')
        if current.node_name:
            raise ApiError(409, f"pod {pod.key} is already assigned to node {current.node_name}")
        if node_name not in self.nodes:
            raise ApiError(404, f'nodes "{node_name}" not found')
        if self.bind_failure_rate and self.rng.random() < self.bind_failure_rate:
            self.stats.bind_errors += 1
            raise ApiError(500, "injected bind failure")
        bound = dataclasses.replace(current, node_name=node_name, phase="Running")
        self.pods[pod.key] = bound
        self.conditions.pop(pod.key, None)
        self.stats.binds += 1
        self.stats.binds_per_pod[pod.key] += 1
        self.stats.bound_at[pod.key] = self.loop.now
        self._notify(lambda w: w.on_pod_update(current, bound))
        for hook in self.on_bound:
            hook(bound)

    def delete_pod(self, pod: api.Pod, reason: str = "") -> None:
        """Delete a Pod (idempotent for already-deleted Pods)."""
        current = self.pods.pop(pod.key, None)
        if current is None:
            return
        self.stats.deletes += 1
        self._notify(lambda w: w.on_pod_delete(current))

    def pod_scheduling_failed(self, pod: api.Pod, reason: str, message: str) -> None:
        """Record the ``PodScheduled=False`` condition the scheduler writes."""
        if pod.key in self.pods:
            self.stats.condition_updates += 1
            self.conditions[pod.key] = PodCondition(reason, message, self.loop.now)

    # ------------------------------------------------------------------ invariants
    def overcommitted(self) -> list[str]:
        """Nodes whose bound Pods request more than allocatable (the API's own accounting)."""
        used: dict[str, Counter[str]] = {}
        for p in self.pods.values():
            if p.node_name:
                c = used.setdefault(p.node_name, Counter())
                c.update(p.requests)
                c[api.PODS] += 1
        bad = []
        for name, c in used.items():
            node = self.nodes.get(name)
            if node is None:
                bad.append(name)
                continue
            for res, amount in c.items():
                if res == api.PODS and api.PODS not in node.allocatable:
                    continue
                if amount > node.allocatable.get(res, 0):
                    bad.append(name)
                    break
        return sorted(bad)

    def bound_twice(self) -> list[str]:
        """Pods that were bound more than once."""
        return sorted(k for k, n in self.stats.binds_per_pod.items() if n > 1)
