"""The benchmark's API server: the truth for Nodes, Pods and other objects, in one process.

:class:`BenchApi` plays kube-apiserver plus the informers of upstream scheduler_perf: every
write is applied at once and told to the watcher (the scheduler's ``on_*`` handlers), so the
scheduler's cache is never behind.  It keeps the counts the ops wait on (bound and attempted
Pods per namespace) and the upstream rules that matter without a kubelet:

- a deleted Pod that is not bound, or has ``terminationGracePeriodSeconds: 0``, vanishes at
  once; a bound Pod with a grace period stays *terminating* for ever (still counted, still
  holding its node's resources), as in upstream's integration cluster;
- a Pod created with ``schedulingGates`` gets ``PodScheduled=False`` (reason
  ``SchedulingGated``) at once, so it counts as *Attempted*;
- a deleted Node leaves its Pods bound to a name that no longer exists (no garbage collector).

``bind_many`` binds a batch with the same per-Pod checks and tells the watcher once
(``on_pods_bound``, when it has it): the parallel binder's bulk commit (in-memory mode only:
:class:`SchedulerClient` is a :class:`kubesched.parallel.host.BulkBinds`, and its
``bulk_binds`` is true then).

:class:`SchedulerClient` is the scheduler's client in one of two binding modes.  *In-memory*:
binds and status updates apply at once (pure scheduler throughput).  *Modelled*: every call
(bind, ``PodScheduled`` status update, preemption delete) takes a token from a client-side
token bucket (client-go's ``--kube-api-qps`` / ``--kube-api-burst``, 50 / 100 by default) and
then ``latency`` seconds; calls overlap like client-go's goroutines, the scheduling loop does
not wait for them, and the runner applies each when it is due.  When the rate limit is the
ceiling, ``throttled_calls`` grows and the measured throughput sits at the QPS.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from kubesched.api import objects as api
from kubesched.sim.apiserver import ApiError

SCHEDULING_GATED = "SchedulingGated"


class Watcher(Protocol):
    """What the API server notifies (the scheduler's informer handlers)."""

    def on_node_add(self, node: api.Node) -> None: ...
    def on_node_delete(self, node: api.Node) -> None: ...
    def on_pod_add(self, pod: api.Pod) -> None: ...
    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None: ...
    def on_pod_delete(self, pod: api.Pod) -> None: ...
    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None: ...


@runtime_checkable
class BulkBindWatcher(Protocol):
    """A watcher that takes many binds in one call (the shared-pool scheduler's stream): the
    same as ``on_pod_update(old, new)`` for each pair in order."""

    def on_pods_bound(self, pairs: list[tuple[api.Pod, api.Pod]]) -> None: ...


def labels_match(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    """Upstream ``labelsMatch``: every selector pair is present with the same value."""
    return all(labels.get(k) == v for k, v in selector.items())


class BenchApi:
    """Nodes, Pods, namespaces and other objects; the watcher hears every change at once."""

    def __init__(self, watcher: Watcher | None = None) -> None:
        self.watcher = watcher
        self.nodes: dict[str, api.Node] = {}
        self.pods: dict[str, api.Pod] = {}
        self.namespaces: set[str] = set()
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.terminating: set[str] = set()
        self.conditions: dict[str, str] = {}
        """Pod key to the reason of its ``PodScheduled=False`` condition."""
        self.bound_in: Counter[str] = Counter()
        """Bound Pods present per namespace (terminating ones included, as informers list)."""
        self.attempted: set[str] = set()
        self.attempted_in: Counter[str] = Counter()
        """Pods present per namespace that are bound or have ``PodScheduled=False``."""
        self.on_bound: list[Callable[[api.Pod], None]] = []
        self.binds = 0
        self.deletes = 0
        self.pods_created = 0

    # ------------------------------------------------------------------ objects
    def create_namespace(self, name: str, labels: Mapping[str, str] | None = None) -> None:
        """Create a Namespace (idempotent: an existing one is left alone)."""
        if name in self.namespaces:
            return
        meta = {"name": name, "labels": dict(labels or {})}
        self.create_object({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})

    def create_object(self, obj: dict[str, Any]) -> None:
        """Create any other object (Namespace, Service, PodDisruptionBudget, ...); 409 twice."""
        kind = str(obj.get("kind", ""))
        meta = obj.get("metadata") or {}
        key = (kind, f"{meta.get('namespace', '')}/{meta.get('name', '')}")
        if key in self.objects:
            raise ApiError(409, f'{kind} "{meta.get("name")}" already exists')
        self.objects[key] = obj
        if kind == "Namespace":
            self.namespaces.add(str(meta.get("name")))
        if self.watcher is not None:
            self.watcher.on_object(obj)

    def apply_object(self, obj: dict[str, Any]) -> None:
        """Create or replace an object (a ResourceClaim's status written, say)."""
        meta = obj.get("metadata") or {}
        key = (str(obj.get("kind", "")), f"{meta.get('namespace', '')}/{meta.get('name', '')}")
        self.objects[key] = obj
        if self.watcher is not None:
            self.watcher.on_object(obj)

    update_object = apply_object

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        """Delete an object made by :meth:`create_object` (no error if absent)."""
        obj = self.objects.pop((kind, f"{namespace}/{name}"), None)
        if obj is not None and self.watcher is not None:
            self.watcher.on_object(obj, deleted=True)

    # ------------------------------------------------------------------ nodes
    def create_node(self, node: api.Node) -> None:
        """Add a Node (409 if its name exists)."""
        if node.name in self.nodes:
            raise ApiError(409, f'nodes "{node.name}" already exists')
        self.nodes[node.name] = node
        if self.watcher is not None:
            self.watcher.on_node_add(node)

    def delete_node(self, name: str) -> None:
        """Delete a Node; its Pods stay as they are (no node lifecycle controller)."""
        node = self.nodes.pop(name, None)
        if node is not None and self.watcher is not None:
            self.watcher.on_node_delete(node)

    # ------------------------------------------------------------------ pods
    def create_pod(self, pod: api.Pod) -> None:
        """Add a Pod (409 if ``namespace/name`` exists); gated Pods get their condition."""
        if pod.key in self.pods:
            raise ApiError(409, f'pods "{pod.name}" already exists')
        self.pods[pod.key] = pod
        self.pods_created += 1
        if pod.node_name:
            self._count_bound(pod)
        elif pod.scheduling_gates:
            self._set_condition(pod, SCHEDULING_GATED)
        if self.watcher is not None:
            self.watcher.on_pod_add(pod)

    def update_pod(self, pod: api.Pod) -> None:
        """Replace a Pod's object (a controller writing its status); 404 if absent."""
        current = self.pods.get(pod.key)
        if current is None:
            raise ApiError(404, f'pods "{pod.name}" not found')
        self.pods[pod.key] = pod
        if self.watcher is not None:
            self.watcher.on_pod_update(current, pod)

    def bind(self, pod: api.Pod, node_name: str) -> None:
        """The binding subresource: 404 for a missing Pod or Node, 409 if already bound."""
        current, bound = self._bind_one(pod, node_name)
        if self.watcher is not None:
            self.watcher.on_pod_update(current, bound)
        for hook in self.on_bound:
            hook(bound)

    def bind_many(self, pairs: list[tuple[api.Pod, str]]) -> list[ApiError | None]:
        """:meth:`bind` for many Pods at once (a parallel binder's batch): the same checks
        and effects per Pod, in order; the watcher then hears them in one
        ``on_pods_bound([(old, new), ...])`` call when it has that method (else one
        ``on_pod_update`` each).  Returns each bind's error, None where it succeeded."""
        errors: list[ApiError | None] = []
        done: list[tuple[api.Pod, api.Pod]] = []
        for pod, node_name in pairs:
            try:
                done.append(self._bind_one(pod, node_name))
                errors.append(None)
            except ApiError as err:
                errors.append(err)
        watcher = self.watcher
        if watcher is not None:
            if isinstance(watcher, BulkBindWatcher):
                watcher.on_pods_bound(done)
            else:
                for old, new in done:
                    watcher.on_pod_update(old, new)
        for _, new in done:
            for hook in self.on_bound:
                hook(new)
        return errors

    def _bind_one(self, pod: api.Pod, node_name: str) -> tuple[api.Pod, api.Pod]:
        """Store ``pod`` bound to ``node_name``: ``(before, after)``; raises :class:`ApiError`."""
        current = self.pods.get(pod.key)
        if current is None or (pod.uid and current.uid != pod.uid):
            raise ApiError(404, f'pods "{pod.name}" not found')
        if current.node_name:
            raise ApiError(409, f"pod {pod.key} is already assigned to node {current.node_name}")
        if node_name not in self.nodes:
            raise ApiError(404, f'nodes "{node_name}" not found')
        bound = current.bound_to(node_name)
        bound.phase = "Running"
        self.pods[pod.key] = bound
        self.conditions.pop(pod.key, None)
        self.binds += 1
        self._count_bound(bound)
        return current, bound

    def delete_pod(self, pod: api.Pod, reason: str = "", *, grace: int | None = None) -> None:
        """Delete a Pod: gone at once unless bound with a grace period (then terminating);
        ``grace`` overrides the Pod's ``terminationGracePeriodSeconds`` (DeleteOptions)."""
        del reason
        current = self.pods.get(pod.key)
        if current is None or pod.key in self.terminating:
            return
        self.deletes += 1
        if grace is None:
            grace = current.termination_grace_period_seconds
        if current.node_name and (grace is None or grace > 0):
            self.terminating.add(pod.key)  # no kubelet to confirm: terminating for ever
            return
        del self.pods[pod.key]
        self.conditions.pop(pod.key, None)
        if current.node_name:
            self.bound_in[current.namespace] -= 1
        if pod.key in self.attempted:
            self.attempted.discard(pod.key)
            self.attempted_in[current.namespace] -= 1
        if self.watcher is not None:
            self.watcher.on_pod_delete(current)

    def pod_scheduling_failed(self, pod: api.Pod, reason: str, message: str) -> None:
        """Record the ``PodScheduled=False`` condition the scheduler writes."""
        del message
        current = self.pods.get(pod.key)
        if current is not None and not current.node_name:
            self._set_condition(current, reason)

    def _set_condition(self, pod: api.Pod, reason: str) -> None:
        self.conditions[pod.key] = reason
        self._count_attempted(pod)

    def _count_bound(self, pod: api.Pod) -> None:
        self.bound_in[pod.namespace] += 1
        self._count_attempted(pod)

    def _count_attempted(self, pod: api.Pod) -> None:
        if pod.key not in self.attempted:
            self.attempted.add(pod.key)
            self.attempted_in[pod.namespace] += 1

    # ------------------------------------------------------------------ queries
    def pods_in(self, namespace: str, selector: Mapping[str, str] | None = None) -> list[api.Pod]:
        """Pods of ``namespace`` (all namespaces for ``""``) matching ``selector``, by name."""
        found = [
            p
            for p in self.pods.values()
            if (not namespace or p.namespace == namespace)
            and (not selector or labels_match(p.labels, selector))
        ]
        return sorted(found, key=lambda p: p.name)

    def count(self, namespace: str, stage: str, selector: Mapping[str, str] | None = None) -> int:
        """Pods of ``namespace`` that reached ``stage`` (``Scheduled`` or ``Attempted``)."""
        if not selector:
            return (self.bound_in if stage == "Scheduled" else self.attempted_in)[namespace]
        pods = self.pods_in(namespace, selector)
        if stage == "Scheduled":
            return sum(1 for p in pods if p.node_name)
        return sum(1 for p in pods if p.key in self.attempted)


class TokenBucket:
    """client-go's token bucket (``flowcontrol.NewTokenBucketRateLimiter``): ``qps`` tokens a
    second, at most ``burst`` saved; :meth:`reserve` books the next token, maybe in the future."""

    def __init__(self, qps: float, burst: int, now: float) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self.tokens = float(self.burst)
        self.last = now

    def reserve(self, now: float) -> float:
        """The time at which a call made at ``now`` may start."""
        if now > self.last:
            self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.qps)
            self.last = now
        self.tokens -= 1.0
        if self.tokens >= 0:
            return now
        return now + (-self.tokens) / self.qps


class SchedulerClient:
    """The scheduler's API client: in-memory (``modelled=False``) or latency + rate limit."""

    def __init__(
        self,
        api_server: BenchApi,
        clock: Callable[[], float],
        *,
        modelled: bool = False,
        latency: float = 0.0,
        qps: float = 50.0,
        burst: int = 100,
    ) -> None:
        self.api = api_server
        self.clock = clock
        self.modelled = modelled
        self.latency = latency
        self.qps = qps
        self.burst = burst
        self.limiter = TokenBucket(qps, burst, clock()) if modelled and qps > 0 else None
        self._due: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self.calls = 0
        self.throttled_calls = 0
        """Calls that had to wait for a token: the rate limit was the ceiling for them."""
        self.max_wait = 0.0

    # ------------------------------------------------------------------ the client's calls
    def submit_binding(self, fn: Callable[[], None]) -> None:
        """Run a binding cycle: now (in-memory) or when its bind call completes (modelled)."""
        if not self.modelled:
            fn()
            return
        self._later(fn)

    def bind(self, pod: api.Pod, node_name: str) -> None:
        """The bind call (its cost was charged when the binding cycle was submitted)."""
        if not self.modelled:
            self.calls += 1
        self.api.bind(pod, node_name)

    @property
    def bulk_binds(self) -> bool:
        """Whether :meth:`bind_many` may be used: binds complete at once (in-memory)."""
        return not self.modelled

    def bind_many(self, pairs: list[tuple[api.Pod, str]]) -> list[ApiError | None]:
        """Many bind calls at once (in-memory mode only, see :attr:`bulk_binds`)."""
        if self.modelled:
            raise RuntimeError("bind_many needs in-memory binds")
        self.calls += len(pairs)
        return self.api.bind_many(pairs)

    def update_object(self, obj: dict[str, Any]) -> None:
        """Write an object (DynamicResources' claim status at PreBind and PostFilter)."""
        self._call(lambda: self.api.update_object(obj))

    def delete_pod(self, pod: api.Pod, reason: str) -> None:
        """Delete a Pod (preemption victims)."""
        self._call(lambda: self.api.delete_pod(pod, reason))

    def pod_scheduling_failed(self, pod: api.Pod, reason: str, message: str) -> None:
        """Write the ``PodScheduled=False`` condition."""
        self._call(lambda: self.api.pod_scheduling_failed(pod, reason, message))

    def _call(self, fn: Callable[[], None]) -> None:
        if self.modelled:
            self._later(fn)
        else:
            self.calls += 1
            fn()

    def _later(self, fn: Callable[[], None]) -> None:
        now = self.clock()
        start = self.limiter.reserve(now) if self.limiter is not None else now
        if start > now:
            self.throttled_calls += 1
            self.max_wait = max(self.max_wait, start - now)
        self.calls += 1
        heapq.heappush(self._due, (start + self.latency, next(self._seq), fn))

    # ------------------------------------------------------------------ the runner's side
    @property
    def pending(self) -> int:
        """Calls made and not yet completed."""
        return len(self._due)

    def next_due(self) -> float | None:
        """When the next pending call completes."""
        return self._due[0][0] if self._due else None

    def run_due(self, now: float) -> int:
        """Complete every call due by ``now``; how many ran."""
        ran = 0
        while self._due and self._due[0][0] <= now:
            _, _, fn = heapq.heappop(self._due)
            fn()
            ran += 1
        return ran
