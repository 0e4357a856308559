"""A simulated API server: the source of truth for Nodes and Pods in the offline world.

It accepts binds (the scheduler's binding cycle calls :meth:`SimApiServer.bind`), deletes
Pods, records ``PodScheduled=False`` conditions, and tells watchers (the scheduler's informer
handlers) about every change, optionally after a watch delay in virtual time.  It keeps its
own accounting of bound Pods, so invariants are checked against the API's truth, not the
scheduler's cache.

Deletion is graceful, as kube-apiserver's: deleting a bound Pod with a grace period (the
Pod's ``terminationGracePeriodSeconds``, 30 s when unset, or the caller's ``grace``) sets
``deletionTimestamp`` to now + grace (a Pod update event) and the Pod keeps its node's
resources until the kubelet is done; here termination takes exactly the grace period, then
the Pod is removed (the delete event).  A Pod that is not bound, has finished
(``Succeeded``/``Failed``), is deleted with grace 0, or is bound to a node that is gone is
removed at once.  :meth:`SimApiServer.preempt_pod` is upstream's ``PreemptPod``: the victim
gets the ``DisruptionTarget`` condition (reason ``PreemptionByScheduler``), then is deleted
gracefully.
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
    preempted_at: dict[str, float] = field(default_factory=dict)
    """Preemptor key to the time of its first preemption (victims marked and deleted)."""
    ungated_at: dict[str, float] = field(default_factory=dict)
    """When a Pod created unbound had no scheduling gate left (its creation, or the
    update that removed the last one)."""
    ready_at: dict[str, float] = field(default_factory=dict)
    """When a bound Pod became Ready (:meth:`SimApiServer.pod_ready`, the kubelet)."""
    preempted: dict[str, api.Pod] = field(default_factory=dict)
    """Pod key -> the victim, for every Pod a scheduler evicted by preemption (bound or not:
    a victim whose binding cycle was still in flight is deleted unbound, as upstream)."""

    def preemption_latency(self) -> dict[str, Any]:
        """Preemption latency: seconds from a preemptor's first preemption (when it is
        nominated and its victims deleted) to its bind -- with graceful deletion at least
        its victims' grace period.  ``preemptors`` that preempted, ``bound`` of them, and
        p50 / p99 over the bound ones (None without any)."""
        waits = [
            self.bound_at[k] - t
            for k, t in self.preempted_at.items()
            if self.bound_at.get(k, -1.0) >= t
        ]
        arr = np.asarray(waits, dtype=np.float64)
        p50, p99 = (round(float(np.percentile(arr, q)), 4) if waits else None for q in (50, 99))
        return {"preemptors": len(self.preempted_at), "bound": len(waits), "p50": p50, "p99": p99}


DEFAULT_GRACE_SECONDS = 30
"""kube-apiserver's default ``terminationGracePeriodSeconds``."""
FINISHED_PHASES = ("Succeeded", "Failed")


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
        self.terminating: dict[str, float] = {}
        """Pods this server is terminating (graceful deletion), to when they will be gone."""

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

    def delete_node(self, name: str, *, keep_pods: bool = False) -> list[api.Pod]:
        """Delete a node and the Pods bound to it (the node lifecycle controller's job); with
        ``keep_pods`` the Pods stay bound and running (a Node object deleted and created again
        under its name, the ``nodeReregister`` drill).  Returns those Pods."""
        node = self.nodes.pop(name, None)
        if node is None:
            raise ApiError(404, f'nodes "{name}" not found')
        victims = [p for p in self.pods.values() if p.node_name == name]
        for p in victims if not keep_pods else ():
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
        self.stats.ungated_at.pop(pod.key, None)  # a Pod re-created under the same name
        self.stats.ready_at.pop(pod.key, None)
        if pod.node_name:
            self.stats.binds_per_pod[pod.key] += 1
            self.stats.bound_at[pod.key] = self.loop.now
        elif not pod.scheduling_gates:
            self.stats.ungated_at[pod.key] = self.loop.now
        self._notify(lambda w: w.on_pod_add(pod))

    def update_pod(self, pod: api.Pod) -> None:
        """Replace a Pod (labels, gates, ...)."""
        old = self.pods.get(pod.key)
        if old is None:
            raise ApiError(404, f'pods "{pod.name}" not found')
        self.pods[pod.key] = pod
        if old.scheduling_gates and not pod.scheduling_gates and not pod.node_name:
            self.stats.ungated_at.setdefault(pod.key, self.loop.now)
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

    def delete_pod(self, pod: api.Pod, reason: str = "", *, grace: int | None = None) -> None:
        """Delete a Pod: gracefully when bound (see the module docstring), at once otherwise;
        ``grace`` overrides the Pod's ``terminationGracePeriodSeconds`` (DeleteOptions).
        Idempotent for Pods already gone or terminating."""
        del reason
        current = self.pods.get(pod.key)
        if current is None:
            return
        if current.key in self.terminating:
            if current.node_name not in self.nodes:  # its node is gone: no kubelet to wait for
                self._remove(current)
            return
        if grace is None:
            grace = current.termination_grace_period_seconds
            grace = DEFAULT_GRACE_SECONDS if grace is None else grace
        self.stats.deletes += 1
        if (
            grace <= 0
            or not current.node_name
            or current.node_name not in self.nodes
            or current.phase in FINISHED_PHASES
        ):
            self._remove(current)
            return
        gone_at = self.loop.now + grace
        meta = {**(current.raw.get("metadata") or {}), "deletionGracePeriodSeconds": grace}
        terminating = dataclasses.replace(
            current, deletion_timestamp=gone_at, raw={**current.raw, "metadata": meta}
        )
        self.pods[pod.key] = terminating
        self.terminating[pod.key] = gone_at
        self._notify(lambda w: w.on_pod_update(current, terminating))
        self.loop.call_at(gone_at, lambda: self._terminated(pod.key, current.uid, gone_at))

    def _terminated(self, key: str, uid: str, gone_at: float) -> None:
        """The kubelet finished terminating the Pod: the object goes (unless it went already)."""
        current = self.pods.get(key)
        if current is not None and current.uid == uid and self.terminating.get(key) == gone_at:
            self._remove(current)

    def _remove(self, current: api.Pod) -> None:
        del self.pods[current.key]
        self.terminating.pop(current.key, None)
        self._notify(lambda w: w.on_pod_delete(current))

    def preempt_pod(self, victim: api.Pod, preemptor: api.Pod, node: str, reason: str) -> None:
        """Upstream ``PreemptPod``: patch the ``DisruptionTarget`` condition onto the victim
        (a Pod update), then delete it gracefully.  A victim already gone is success."""
        del node
        current = self.pods.get(victim.key)
        if current is None:
            return
        self.stats.preempted_at.setdefault(preemptor.key, self.loop.now)
        self.stats.preempted[victim.key] = current
        status = dict(current.raw.get("status") or {})
        others = [c for c in status.get("conditions") or () if c.get("type") != "DisruptionTarget"]
        message = f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod"
        cond = {"type": "DisruptionTarget", "status": "True", "reason": reason}
        status["conditions"] = [*others, {**cond, "message": message}]
        marked = dataclasses.replace(current, raw={**current.raw, "status": status})
        self.pods[victim.key] = marked
        self._notify(lambda w: w.on_pod_update(current, marked))
        self.delete_pod(marked, reason)

    def pod_ready(self, pod: api.Pod) -> None:
        """The kubelet reports the bound ``pod`` Ready (its containers started), unless it
        is gone, re-created, unbound or terminating by now.  Watchers are not told: nothing
        in the simulated world acts on readiness, and a Pod update per Pod would cost the
        scheduler's informer for nothing."""
        current = self.pods.get(pod.key)
        if (
            current is not None
            and current.uid == pod.uid
            and current.node_name
            and pod.key not in self.terminating
        ):
            self.stats.ready_at.setdefault(pod.key, self.loop.now)

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
