"""The in-process API server: the source of truth for Nodes, Pods and other objects offline.

One class for every in-process world: the simulator runs it on its event loop (virtual
time), the benchmark on a :class:`~kubesched.sim.engine.WallClock` (real time, calls that
take no time) with ``lifecycle=False``.  It accepts binds (the scheduler's binding cycle
calls :meth:`SimApiServer.bind`; a parallel binder's batch :meth:`SimApiServer.bind_many`),
deletes Pods, records ``PodScheduled=False`` conditions, and tells watchers (the scheduler's
informer handlers, the controllers) about every change, optionally after a watch delay.  It
keeps its own accounting of bound Pods, so invariants are checked against the API's truth,
not the scheduler's cache, and the counts scheduler_perf's ops wait on (bound and attempted
Pods per namespace: :meth:`SimApiServer.count`).

Deletion is graceful, as kube-apiserver's: deleting a bound Pod with a grace period (the
Pod's ``terminationGracePeriodSeconds``, 30 s when unset, or the caller's ``grace``) sets
``deletionTimestamp`` to now + grace (a Pod update event) and the Pod keeps its node's
resources until the kubelet is done; here termination takes exactly the grace period, then
the Pod is removed (the delete event).  A Pod that is not bound, has finished
(``Succeeded``/``Failed``), is deleted with grace 0, or is bound to a node that is gone is
removed at once.  :meth:`SimApiServer.preempt_pod` is upstream's ``PreemptPod``: the victim
gets the ``DisruptionTarget`` condition (reason ``PreemptionByScheduler``), then is deleted
gracefully.

With ``lifecycle=False`` the world is upstream's integration cluster (scheduler_perf), which
runs no kubelet and no controllers: a bound Pod deleted with a grace period stays
terminating for ever (still counted, still holding its node's resources), and a deleted Node
leaves its Pods bound to a name that no longer exists.

``volume_faults`` (``kubesched.schedule``'s what-if): what goes wrong with VolumeBinding's
PreBind write of one PV or claim, every time (:data:`VOLUME_FAULTS`), as kube-oracle's fake
API server and PV controller play them (``oracle/internal/oracle/pvcontroller.go``);
``claim_faults``: what goes wrong with DynamicResources' writes of a ResourceClaim
(:mod:`kubesched.plugins.dynamicresources.faults`, which models each; the server keeps the
declarations and which once-only fault has happened); ``bind_faults``: what goes wrong with
a Pod's binding (:data:`BIND_FAULTS`: the binding subresource refusing it, every time, as
kube-oracle's fake API server does, ``oracle/internal/oracle/schedule.go``).  Like
kube-apiserver's validation, :meth:`SimApiServer.update_object` refuses a ResourceClaim whose
``status.reservedFor`` holds more than 256 consumers.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from kubesched.api import objects as api
from kubesched.api.errors import check_fault_map
from kubesched.sim.engine import Clock

VOLUME_FAULTS = {
    "refuseUpdate": "the API server refuses the write (Forbidden)",
    "resetClaimRef": "the PV controller unbinds the PV (its claimRef removed)",
    "failProvisioning": "the provisioner gives up (the selected-node annotation removed)",
    "bindLater": "the controller binds after PreBind's first check (the same end)",
}
"""The faults of a PreBind write, keyed ``PersistentVolume/NAME`` or
``PersistentVolumeClaim/NAMESPACE/NAME``."""


def check_volume_faults(raw: Mapping[str, str] | None) -> dict[str, str]:
    """``volume_faults`` checked: known kinds on object keys of the two kinds."""
    return check_fault_map(
        raw, "volumeFaults", {"PersistentVolume": 2, "PersistentVolumeClaim": 3}, VOLUME_FAULTS
    )


BIND_FAULTS = {"refuseBinding": "the API server refuses the binding (Forbidden)"}
"""The faults of a Pod's binding (DefaultBinder's Bind), keyed ``Pod/NAMESPACE/NAME``."""


def check_bind_faults(raw: Mapping[str, str] | None) -> dict[str, str]:
    """``bind_faults`` checked: known kinds on ``Pod/NAMESPACE/NAME`` keys."""
    return check_fault_map(raw, "bindFaults", {"Pod": 3}, BIND_FAULTS)


RESERVED_FOR_MAX = 256
"""kube-apiserver's ``ResourceClaimReservedForMaxSize``: consumers of one claim."""


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


@runtime_checkable
class BulkBindWatcher(Protocol):
    """A watcher that takes many binds in one call (the shared-pool scheduler's stream): the
    same as ``on_pod_update(old, new)`` for each pair in order."""

    def on_pods_bound(self, pairs: list[tuple[api.Pod, api.Pod]]) -> None: ...


def labels_match(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    """Upstream ``labelsMatch``: every selector pair is present with the same value."""
    return all(labels.get(k) == v for k, v in selector.items())


def object_key(kind: str, namespace: str | None, name: str) -> tuple[str, str]:
    """The key of an object in :attr:`SimApiServer.objects`: ``(kind, "namespace/name")``,
    ``default`` for a missing namespace."""
    return kind, f"{namespace or 'default'}/{name}"


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
    creates: int = 0
    """Pods created (a Pod re-created under the same name counts again)."""
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
    """Nodes, Pods and other objects in memory; watchers hear about changes after
    ``watch_delay``.  ``lifecycle``: kubelets terminate Pods and the node lifecycle
    controller deletes a lost node's Pods (False: neither, see the module docstring).
    ``record``: keep each Pod's times and bind count in :attr:`stats` (``created_at``,
    ``ungated_at``, ``bound_at``, ``binds_per_pod``: the simulator's summaries and
    invariants); the benchmark, which reads none of them, saves their cost per Pod."""

    def __init__(
        self,
        loop: Clock,
        *,
        watch_delay: float = 0.0,
        seed: int = 0,
        lifecycle: bool = True,
        record: bool = True,
    ) -> None:
        self.loop = loop
        self.watch_delay = watch_delay
        self.lifecycle = lifecycle
        self.record = record
        self.nodes: dict[str, api.Node] = {}
        self.pods: dict[str, api.Pod] = {}
        self.conditions: dict[str, PodCondition] = {}
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.namespaces: set[str] = set()
        """Names of the Namespace objects present."""
        self.watchers: list[Watcher] = []
        self.stats = ApiStats()
        self.notifications = 0
        """Writes the watchers were told of (one per :meth:`_notify`), so a caller can tell
        whether an operation wrote anything anyone hears."""
        self.bind_failure_rate = 0.0
        self.rng = np.random.default_rng(seed)
        self.on_bound: list[Callable[[api.Pod], None]] = []
        self.terminating: dict[str, float] = {}
        """Pods this server is terminating (graceful deletion), to when their grace period
        ends (and they are gone, with ``lifecycle``)."""
        self.bound_in: Counter[str] = Counter()
        """Bound Pods present per namespace (terminating ones included, as informers list)."""
        self.attempted: set[str] = set()
        """Pods present that are bound, have ``PodScheduled=False`` or were created gated."""
        self.attempted_in: Counter[str] = Counter()
        """:attr:`attempted` per namespace."""
        self.volume_faults: dict[str, str] = {}
        """Object key -> what goes wrong with its PreBind write (:data:`VOLUME_FAULTS`)."""
        self.claim_faults: dict[str, str] = {}
        """Claim key -> what goes wrong with DynamicResources' writes of it
        (:data:`kubesched.plugins.dynamicresources.faults.CLAIM_FAULTS`)."""
        self.claim_faults_fired: set[str] = set()
        """Claim keys whose once-only fault has happened."""
        self.bind_faults: dict[str, str] = {}
        """``Pod/NAMESPACE/NAME`` -> what goes wrong with its binding (:data:`BIND_FAULTS`)."""
        self.volume_waiter: Callable[[str, list[str], float], bool] | None = None
        """The PV controller's wait (:mod:`kubesched.sim.pvcontroller`), when one runs."""
        self.on_held: list[Callable[[api.Pod], None]] = []
        """Called when a bind is held (:attr:`bind_after`), at the request."""
        self.bind_after: dict[str, float] = {}
        """Pod key -> the time its next bind takes effect (VolumeBinding's PreBind waited
        for its volumes until then: the bind is held, its checks made at once)."""

    # ------------------------------------------------------------------ notifications
    def _notify(self, fn: Callable[[Watcher], None]) -> None:
        self.notifications += 1
        if self.watch_delay > 0:

            def deliver() -> None:
                for w in self.watchers:
                    fn(w)

            self.loop.call_later(self.watch_delay, deliver)
        else:
            for w in self.watchers:
                fn(w)

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
        kind = str(obj.get("kind"))
        self.objects[object_key(kind, meta.get("namespace"), str(meta.get("name")))] = obj
        if kind == "Namespace":
            self.namespaces.add(str(meta.get("name")))
        self._notify(lambda w: w.on_object(obj))

    def create_object(self, obj: dict[str, Any]) -> None:
        """:meth:`apply_object` for an object that must be new (409 if it exists)."""
        meta = obj.get("metadata") or {}
        kind = str(obj.get("kind"))
        if object_key(kind, meta.get("namespace"), str(meta.get("name"))) in self.objects:
            raise ApiError(409, f'{kind} "{meta.get("name")}" already exists')
        self.apply_object(obj)

    def create_namespace(self, name: str, labels: Mapping[str, str] | None = None) -> None:
        """Create a Namespace (idempotent: an existing one is left alone)."""
        if name not in self.namespaces:
            meta = {"name": name, "labels": dict(labels or {})}
            self.apply_object({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})

    def update_object(self, obj: dict[str, Any]) -> None:
        """Replace an object (a plugin writing a ResourceClaim's status, say); a claim with
        more than :data:`RESERVED_FOR_MAX` consumers is refused (422), as kube-apiserver's
        validation refuses it."""
        if obj.get("kind") == "ResourceClaim":
            reserved = (obj.get("status") or {}).get("reservedFor") or ()
            if len(reserved) > RESERVED_FOR_MAX:
                name = (obj.get("metadata") or {}).get("name")
                raise ApiError(
                    422,
                    f'ResourceClaim.resource.k8s.io "{name}" is invalid: status.reservedFor: '
                    f"Too many: {len(reserved)}: must have at most {RESERVED_FOR_MAX} items",
                )
        self.apply_object(obj)

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        """Delete an object created with :meth:`apply_object` (no error if absent)."""
        obj = self.objects.pop(object_key(kind, namespace, name), None)
        if obj is not None:
            if kind == "Namespace":
                self.namespaces.discard(name)
            self._notify(lambda w: w.on_object(obj, deleted=True))

    def binds_claims(self) -> bool:
        """Whether a PV controller binds claims here (VolumeBinding's PreBind waits for it)."""
        return self.volume_waiter is not None

    def update_volume(self, obj: dict[str, Any]) -> None:
        """VolumeBinding's PreBind writes a PV or a claim (:meth:`update_object`)."""
        self.update_object(obj)

    def volume_fault(self, key: str) -> str:
        """The fault of ``key``'s PreBind write ("": none; :attr:`volume_faults`)."""
        return self.volume_faults.get(key, "")

    def claim_fault(self, key: str) -> str:
        """The fault of claim ``key``'s writes ("": none; :attr:`claim_faults`)."""
        return self.claim_faults.get(key, "")

    def claim_fault_once(self, key: str) -> bool:
        """Whether the once-only fault of ``key`` is yet to happen; it happens now."""
        if key in self.claim_faults_fired:
            return False
        self.claim_faults_fired.add(key)
        return True

    def wait_for_volumes(self, pod: api.Pod, claims: list[str], timeout: float) -> bool:
        """VolumeBinding's PreBind waits for ``claims`` to be bound (False: timed out)."""
        return self.volume_waiter is not None and self.volume_waiter(pod.key, claims, timeout)

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
        ``keep_pods`` (or without ``lifecycle``) the Pods stay bound and running (a Node
        object deleted and created again under its name, the ``nodeReregister`` drill).
        Returns those Pods."""
        node = self.nodes.pop(name, None)
        if node is None:
            raise ApiError(404, f'nodes "{name}" not found')
        victims = [p for p in self.pods.values() if p.node_name == name]
        for p in victims if self.lifecycle and not keep_pods else ():
            self.delete_pod(p, "NodeLost")
        self._notify(lambda w: w.on_node_delete(node))
        return victims

    # ------------------------------------------------------------------ pods
    def create_pod(self, pod: api.Pod) -> None:
        """Add a Pod (409 if it exists)."""
        if pod.key in self.pods:
            raise ApiError(409, f'pods "{pod.name}" already exists')
        self.pods[pod.key] = pod
        self.stats.creates += 1
        if self.record:
            self._record_created(pod)
        if pod.node_name:
            self._count_bound(pod)
        elif pod.scheduling_gates:  # kube-apiserver writes PodScheduled=False (SchedulingGated)
            self._count_attempted(pod)
        self._notify(lambda w: w.on_pod_add(pod))

    def _record_created(self, pod: api.Pod) -> None:
        stats, key, now = self.stats, pod.key, self.loop.now
        stats.created_at[key] = now
        stats.ungated_at.pop(key, None)  # a Pod re-created under the same name
        stats.ready_at.pop(key, None)
        if pod.node_name:
            stats.binds_per_pod[key] += 1
            stats.bound_at[key] = now
        elif not pod.scheduling_gates:
            stats.ungated_at[key] = now

    def update_pod(self, pod: api.Pod) -> None:
        """Replace a Pod (labels, gates, ...)."""
        old = self.pods.get(pod.key)
        if old is None:
            raise ApiError(404, f'pods "{pod.name}" not found')
        self.pods[pod.key] = pod
        if self.record and old.scheduling_gates and not pod.scheduling_gates and not pod.node_name:
            self.stats.ungated_at.setdefault(pod.key, self.loop.now)
        self._notify(lambda w: w.on_pod_update(old, pod))

    def patch_pod_status(self, pod: api.Pod, status: dict[str, Any]) -> None:
        """Merge ``status`` into the stored Pod's ``status`` (DynamicResources'
        ``extendedResourceClaimStatus``)."""
        current = self.pods.get(pod.key)
        if current is None:
            raise ApiError(404, f'pods "{pod.name}" not found')
        new = current.shallow_copy()
        new.raw = {**current.raw, "status": {**(current.raw.get("status") or {}), **status}}
        self.update_pod(new)

    def bind(self, pod: api.Pod, node_name: str) -> None:
        """The binding subresource: 404 for a missing Pod or node, 409 if already bound."""
        if self._held(pod, node_name):
            return
        current, bound = self._bind_one(pod, node_name)
        self._notify(lambda w: w.on_pod_update(current, bound))
        for hook in self.on_bound:
            hook(bound)

    def _held(self, pod: api.Pod, node_name: str) -> bool:
        """A bind :attr:`bind_after` holds: checked now (raises as :meth:`bind` would),
        made at its time (dropped if the Pod or node is gone by then)."""
        at = self.bind_after.pop(pod.key, None)
        if at is None or at <= self.loop.now:
            return False
        self._check_bind(pod, node_name)
        for hook in self.on_held:
            hook(pod)

        def later() -> None:
            try:
                current, bound = self._bind_one(pod, node_name, checked=True)
            except ApiError:
                return
            self._notify(lambda w: w.on_pod_update(current, bound))
            for hook in self.on_bound:
                hook(bound)

        self.loop.call_at(at, later)
        return True

    def bind_many(self, pairs: list[tuple[api.Pod, str]]) -> list[ApiError | None]:
        """:meth:`bind` for many Pods at once (a parallel binder's batch): the same checks
        and effects per Pod, in order; each watcher then hears them in one
        ``on_pods_bound([(old, new), ...])`` call when it is a :class:`BulkBindWatcher`
        (else one ``on_pod_update`` each).  Returns each bind's error, None where it
        succeeded."""
        errors: list[ApiError | None] = []
        done: list[tuple[api.Pod, api.Pod]] = []
        for pod, node_name in pairs:
            try:
                if self._held(pod, node_name):
                    errors.append(None)
                    continue
                done.append(self._bind_one(pod, node_name))
                errors.append(None)
            except ApiError as err:
                errors.append(err)
        self._notify(lambda w: _tell_bound(w, done))
        for _, new in done:
            for hook in self.on_bound:
                hook(new)
        return errors

    def _check_bind(self, pod: api.Pod, node_name: str, *, checked: bool = False) -> api.Pod:
        """The binding subresource's checks (and, unless ``checked``, the injected
        failures): the Pod as stored; raises :class:`ApiError`."""
        current = self.pods.get(pod.key)
        if current is None or (pod.uid and current.uid != pod.uid):
            raise ApiError(404, f'pods "{pod.name}" not found')
        if current.node_name:
            raise ApiError(409, f"pod {pod.key} is already assigned to node {current.node_name}")
        if node_name not in self.nodes:
            raise ApiError(404, f'nodes "{node_name}" not found')
        if not checked and self.refuses_binding(current):
            raise ApiError(
                403, f'pods/binding "{pod.name}" is forbidden: refused (the case\'s bindFaults)'
            )
        if not checked and self.bind_failure_rate and self.rng.random() < self.bind_failure_rate:
            self.stats.bind_errors += 1
            raise ApiError(500, "injected bind failure")
        return current

    def refuses_binding(self, pod: api.Pod) -> bool:
        """Whether the binding subresource refuses ``pod`` (its ``bindFaults``), every time."""
        return self.bind_faults.get(f"Pod/{pod.key}") == "refuseBinding"

    def _bind_one(
        self, pod: api.Pod, node_name: str, *, checked: bool = False
    ) -> tuple[api.Pod, api.Pod]:
        """Store ``pod`` bound to ``node_name``: ``(before, after)``; raises :class:`ApiError`."""
        current = self._check_bind(pod, node_name, checked=checked)
        bound = current.bound_to(node_name)
        bound.phase = "Running"
        self.pods[pod.key] = bound
        self.conditions.pop(pod.key, None)
        self.stats.binds += 1
        if self.record:
            self.stats.binds_per_pod[pod.key] += 1
            self.stats.bound_at[pod.key] = self.loop.now
        self._count_bound(bound)
        return current, bound

    def delete_pod(self, pod: api.Pod, reason: str = "", *, grace: int | None = None) -> None:
        """Delete a Pod: gracefully when bound (see the module docstring), at once otherwise;
        ``grace`` overrides the Pod's ``terminationGracePeriodSeconds`` (DeleteOptions).
        Idempotent for Pods already gone or terminating."""
        del reason
        current = self.pods.get(pod.key)
        if current is None:
            return
        if current.key in self.terminating:
            if self.lifecycle and current.node_name not in self.nodes:  # no kubelet to wait for
                self._remove(current)
            return
        if grace is None:
            grace = current.termination_grace_period_seconds
            grace = DEFAULT_GRACE_SECONDS if grace is None else grace
        self.stats.deletes += 1
        if (
            grace <= 0
            or not current.node_name
            or (self.lifecycle and current.node_name not in self.nodes)
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
        if self.lifecycle:  # else no kubelet to confirm: terminating for ever
            self.loop.call_at(gone_at, lambda: self._terminated(pod.key, current.uid, gone_at))

    def _terminated(self, key: str, uid: str, gone_at: float) -> None:
        """The kubelet finished terminating the Pod: the object goes (unless it went already)."""
        current = self.pods.get(key)
        if current is not None and current.uid == uid and self.terminating.get(key) == gone_at:
            self._remove(current)

    def _remove(self, current: api.Pod) -> None:
        key = current.key
        del self.pods[key]
        self.terminating.pop(key, None)
        if current.node_name:
            self.bound_in[current.namespace] -= 1
        if key in self.attempted:
            self.attempted.discard(key)
            self.attempted_in[current.namespace] -= 1
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
        current = self.pods.get(pod.key)
        if current is not None:
            self.stats.condition_updates += 1
            self.conditions[pod.key] = PodCondition(reason, message, self.loop.now)
            self._count_attempted(current)

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
        """Pods of ``namespace`` that reached ``stage`` (``Scheduled``: bound, or
        ``Attempted``: bound or ``PodScheduled=False``), as scheduler_perf's ops count."""
        if not selector:
            return (self.bound_in if stage == "Scheduled" else self.attempted_in)[namespace]
        pods = self.pods_in(namespace, selector)
        if stage == "Scheduled":
            return sum(1 for p in pods if p.node_name)
        return sum(1 for p in pods if p.key in self.attempted)

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


def _tell_bound(watcher: Watcher, pairs: list[tuple[api.Pod, api.Pod]]) -> None:
    """Tell ``watcher`` about many binds: at once if it takes them so, else one by one."""
    if isinstance(watcher, BulkBindWatcher):
        watcher.on_pods_bound(pairs)
    else:
        for old, new in pairs:
            watcher.on_pod_update(old, new)
