"""The plugin contract: Status codes, CycleState, verdict arrays and the extension points.

This mirrors upstream ``pkg/scheduler/framework/interface.go`` with one deliberate change:
Filter and Score answer for **all candidate nodes at once**.  ``rows`` is an int64 array of
shape ``(n,)`` of node-table rows; a filter returns a :class:`Verdict` whose ``codes`` has
shape ``(n,)`` (0 = node passes, ``k > 0`` = ``table[k]`` says why it does not) and a score
returns int64 scores of shape ``(n,)``.

A plugin joins an extension point by implementing its method (capability wiring); the
Protocols of :mod:`kubesched.framework.contract` say which, and what each kubesched capability
promises.  Plugins get a :class:`Handle` at construction.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.config.featuregates import FeatureGates
from kubesched.framework.clusterevents import ActionType as ActionType
from kubesched.framework.clusterevents import ClusterEvent as ClusterEvent
from kubesched.framework.clusterevents import ClusterEventWithHint as ClusterEventWithHint
from kubesched.framework.clusterevents import HintFn as HintFn
from kubesched.framework.clusterevents import QueueingHint as QueueingHint
from kubesched.framework.clusterevents import Resource as Resource

if TYPE_CHECKING:
    from kubesched.metrics import SchedulerMetrics
    from kubesched.state.cache import ClusterState

IntArray = npt.NDArray[np.int64]
CodeArray = npt.NDArray[np.int8]

PODS_TO_ACTIVATE_KEY = "kubernetes.io/pods-to-activate"
"""CycleState key (upstream ``PodsToActivateKey``): a dict ``pod key -> Pod`` a plugin fills
to have those Pods moved to activeQ at the end of the scheduling cycle."""

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1


class Code(enum.IntEnum):
    """Upstream ``framework.Code`` values, same order."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


@dataclass(frozen=True, slots=True)
class Status:
    """Outcome of one plugin call; ``plugin`` names who said so."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    def is_success(self) -> bool:
        """True for Success (a nil status upstream)."""
        return self.code == Code.SUCCESS

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending."""
        return self.code in (
            Code.UNSCHEDULABLE,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            Code.PENDING,
        )

    def message(self) -> str:
        """Reasons joined as upstream's ``Status.Message``."""
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        """This status attributed to ``plugin``."""
        return Status(self.code, self.reasons, plugin)


SUCCESS = Status()


def unschedulable(*reasons: str, resolvable: bool = True) -> Status:
    """An Unschedulable (or UnschedulableAndUnresolvable) status with ``reasons``."""
    code = Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    return Status(code, tuple(reasons))


def error(message: str) -> Status:
    """An Error status: a fault, not a verdict."""
    return Status(Code.ERROR, (message,))


SKIP = Status(Code.SKIP)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A filter plugin's answer for ``n`` nodes.

    ``codes`` : int8 array of shape ``(n,)``; 0 means the node passes, ``k > 0`` means
    ``table[k]`` is the (non-success) status for that node.
    """

    codes: CodeArray
    table: Mapping[int, Status] = field(default_factory=dict)

    @staticmethod
    def all_pass(n: int) -> Verdict:
        """Every node passes: one shared verdict per ``n``, its codes read-only (the one-row
        passes of preemption and of nominated nodes ask for it several times a cycle, and
        every cycle's Filter plugins for each chunk they pass whole)."""
        out = _PASS.get(n)
        if out is None:
            if len(_PASS) >= _MAX_PASS:
                _PASS.clear()
            out = _PASS[n] = Verdict(_read_only(np.zeros(n, dtype=np.int8)))
        return out

    @staticmethod
    def from_mask(fails: npt.NDArray[np.bool_], status: Status) -> Verdict:
        """Nodes where ``fails`` is True get ``status``; the rest pass."""
        return Verdict(fails.astype(np.int8), {1: status})


def _read_only(codes: CodeArray) -> CodeArray:
    codes.flags.writeable = False
    return codes


_PASS: dict[int, Verdict] = {}
""":meth:`Verdict.all_pass` by node count."""
_MAX_PASS = 256
"""Node counts whose all-pass verdicts are kept; all are dropped beyond."""


class CycleState(dict[str, Any]):
    """Per-attempt scratch space shared by a profile's plugins (upstream ``CycleState``).

    ``skip_filter`` and ``skip_score`` collect plugins whose PreFilter / PreScore returned Skip.
    """

    def __init__(self) -> None:
        super().__init__()
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()

    def clone(self) -> CycleState:
        """A copy whose entries can be replaced without touching this one (upstream
        ``CycleState.Clone``; plugins never mutate an entry in place, they store a new one,
        so the entries themselves are shared)."""
        other = CycleState()
        other.update(self)
        other.skip_filter = set(self.skip_filter)
        other.skip_score = set(self.skip_score)
        return other


# --------------------------------------------------------------------------- queue items
@dataclass(slots=True)
class QueuedPodInfo:
    """A Pod in the scheduling queue with its bookkeeping (upstream ``QueuedPodInfo``)."""

    pod: api.Pod
    timestamp: float
    """When it was added to (or last moved into) the queue; QueueSort's tie-breaker."""
    initial_attempt_timestamp: float | None = None
    initial_attempt_seq: int = 0
    """The queue's counter when ``initial_attempt_timestamp`` was set: which of several Pods
    first entering activeQ at one virtual instant came first (upstream's real clock tells
    them apart; v1.36's PodGroup cycle orders members by it)."""
    attempts: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    gating_plugin: str = ""
    message: str = ""
    seq: int = 0
    """Insertion counter, so equal sort keys stay FIFO and runs are deterministic."""


# --------------------------------------------------------------------------- handle
class ApiClient(Protocol):
    """What plugins may ask of the API server (a simulated one, a test fake or the real one)."""

    def bind(self, pod: api.Pod, node_name: str) -> None:
        """Bind ``pod`` to ``node_name``; raises on failure."""

    def delete_pod(self, pod: api.Pod, reason: str) -> None:
        """Delete ``pod`` (preemption victims)."""


@runtime_checkable
class Preempter(Protocol):
    """A client that evicts preemption victims as upstream's ``PreemptPod`` does (marks the
    victim ``DisruptionTarget``, deletes it, records the event); others just delete."""

    def preempt_pod(self, victim: api.Pod, preemptor: api.Pod, node: str, reason: str) -> None:
        """Evict ``victim`` for ``preemptor`` on ``node``."""


_PREEMPTERS: dict[type, bool] = {}
"""Whether each client type is a :class:`Preempter` (a Protocol check walks its members on
every call: ~30 µs, four times per preemption)."""


def _is_preempter(client: object) -> bool:
    kind = type(client)
    known = _PREEMPTERS.get(kind)
    if known is None:
        known = _PREEMPTERS[kind] = isinstance(client, Preempter)
    return known


@runtime_checkable
class ObjectWriter(Protocol):
    """A client that writes back an object (a ResourceClaim's status) as a raw manifest;
    without one, plugins keep such writes in their own assumed state."""

    def update_object(self, obj: dict[str, Any]) -> None:
        """Replace the stored object ``obj`` names; raises on failure."""


@runtime_checkable
class ObjectDeleter(Protocol):
    """A client that deletes an object (DynamicResources' stale extended-resource claim)."""

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        """Delete the object; no error when it is gone already."""


@runtime_checkable
class PodStatusWriter(Protocol):
    """A client that patches a Pod's status (DynamicResources'
    ``status.extendedResourceClaimStatus``)."""

    def patch_pod_status(self, pod: api.Pod, status: dict[str, Any]) -> None:
        """Merge ``status`` into the stored Pod's ``status``; raises on failure."""


@runtime_checkable
class PodGroupStatusWriter(Protocol):
    """A client that writes a Workload API PodGroup's scheduling condition (upstream's
    ``updatePodGroupCondition``: a strategic-merge patch of ``podgroups/status``)."""

    def pod_group_condition(self, pod_group: dict[str, Any], condition: dict[str, Any]) -> None:
        """Set ``condition`` (a ``metav1.Condition``: ``type``, ``status``, ``reason``,
        ``message``, ``observedGeneration``, ``lastTransitionTime``) on the PodGroup whose
        manifest as last seen is ``pod_group``; asynchronous, failures logged."""


@runtime_checkable
class FailureReporter(Protocol):
    """A client that records a failed attempt (the Pod's ``PodScheduled`` condition and
    ``FailedScheduling`` event)."""

    def pod_scheduling_failed(self, pod: api.Pod, reason: str, message: str) -> None:
        """``pod`` failed this attempt with ``reason`` and ``message``."""


def preempt_pod(
    client: ApiClient,
    victim: api.Pod,
    preemptor: api.Pod,
    node: str,
    reason: str,
    *,
    waiting: Handle | None = None,
    plugin: str = "",
) -> None:
    """Evict a preemption victim.  A victim held at Permit (in ``waiting``'s waiting Pods) is
    rejected by ``plugin`` with ``preempted`` instead, as upstream's ``prepareCandidate``
    does: it goes back to the queue, unbound and not deleted.  Otherwise a client with
    ``preempt_pod`` (the live and simulated ones) does what upstream's ``PreemptPod`` does --
    marks the victim ``DisruptionTarget`` and deletes it (the live one also records the
    ``Preempted`` Event); any other client just deletes it."""
    held = waiting.get_waiting_pod(victim.key) if waiting is not None else None
    if held is not None:
        held.reject(plugin, "preempted")
        return
    if _is_preempter(client):
        cast(Preempter, client).preempt_pod(victim, preemptor, node, reason)
    else:
        client.delete_pod(victim, reason)


MAX_PERMIT_WAIT_SECONDS = 15 * 60.0
"""Upstream ``maxTimeout``: a Permit plugin's wait is capped at 15 minutes."""


def passed(deadline: float, now: float) -> bool:
    """Whether ``deadline`` has come by ``now`` (both seconds on the scheduler's clock),
    compared in whole nanoseconds as Go's times are: the simulator's clock adds each
    cycle's seconds as floats, so a deadline a whole number of cycles after it was set
    may read 1e-13 s ahead of the clock that reaches it."""
    return round(deadline * 1e9) <= round(now * 1e9)


class WaitingPod:
    """A Pod reserved and held at Permit until every waiting plugin allows it, one rejects
    it, or the earliest plugin deadline passes (upstream ``waitingPod``).

    ``pending`` maps each plugin still to allow to its deadline on the scheduler's clock.
    Once decided, ``status`` is Success (allowed) or Unschedulable (rejected) and further
    allow/reject calls do nothing; ``on_decided`` tells the scheduler, which runs (or
    undoes) the binding cycle outside the plugin's call.
    """

    __slots__ = ("on_decided", "pending", "pod", "status")

    def __init__(
        self,
        pod: api.Pod,
        deadlines: Mapping[str, float],
        on_decided: Callable[[WaitingPod], None] | None = None,
    ) -> None:
        self.pod = pod
        self.pending = dict(deadlines)
        self.status: Status | None = None
        self.on_decided = on_decided

    def get_pod(self) -> api.Pod:
        """The waiting Pod (assumed on its node)."""
        return self.pod

    def get_pending_plugins(self) -> list[str]:
        """Plugins that have not allowed the Pod yet."""
        return sorted(self.pending)

    def deadline(self) -> float:
        """Earliest deadline among the pending plugins."""
        return min(self.pending.values(), default=0.0)

    def allow(self, plugin: str) -> None:
        """``plugin`` allows the Pod; the last allowance lets it bind."""
        if self.status is not None:
            return
        self.pending.pop(plugin, None)
        if not self.pending:
            self._decide(SUCCESS)

    def reject(self, plugin: str, message: str = "") -> None:
        """``plugin`` rejects the Pod: its reservation is undone and it is requeued."""
        if self.status is None:
            self._decide(Status(Code.UNSCHEDULABLE, (message,) if message else (), plugin))

    def _decide(self, status: Status) -> None:
        self.status = status
        if self.on_decided is not None:
            self.on_decided(self)


class WaitingPods:
    """Pods waiting at Permit, by ``namespace/name`` (upstream ``waitingPodsMap``)."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, wp: WaitingPod) -> None:
        """Start tracking ``wp``."""
        self._pods[wp.pod.key] = wp

    def remove(self, key: str) -> WaitingPod | None:
        """Stop tracking the Pod ``key``."""
        return self._pods.pop(key, None)

    def get(self, key: str) -> WaitingPod | None:
        """The waiting Pod ``key``, if any."""
        return self._pods.get(key)

    def all(self) -> list[WaitingPod]:
        """A snapshot list (safe to allow/reject while iterating)."""
        return list(self._pods.values())

    def __len__(self) -> int:
        return len(self._pods)


Clock = Callable[[], float]
"""The scheduler's clock: seconds, simulated or real."""


class ExtenderError(Exception):
    """A failed extender call (transport, status code, bad answer or ``Error`` field): what
    :meth:`PreemptionExtenders.process_preemption` raises when a non-ignorable extender fails."""

    def __init__(self, extender: str, verb: str, message: str, *, timeout: bool = False):
        super().__init__(message)
        self.extender = extender
        self.verb = verb
        self.timeout = timeout

    @property
    def reason(self) -> str:
        """``timeout`` or ``error`` (the metric label)."""
        return "timeout" if self.timeout else "error"


@dataclass(slots=True)
class Victims:
    """Upstream ``extenderv1.Victims``: the Pods to evict on one node, PDB violations."""

    pods: list[api.Pod]
    num_pdb_violations: int = 0


class PreemptionExtenders(Protocol):
    """The scheduler's HTTP extenders as preemption sees them
    (:class:`kubesched.scheduler.extenders.Extenders`)."""

    def has_preemption(self, pod: api.Pod) -> bool:
        """Whether an extender with a preempt verb is interested in ``pod``."""

    def process_preemption(
        self,
        pod: api.Pod,
        victims: dict[str, Victims],
        pods_on: Callable[[str], Sequence[api.Pod] | None],
    ) -> dict[str, Victims]:
        """The candidates (node name to victims) the preempting extenders keep."""


T = TypeVar("T")


class ServiceKey(Generic[T]):
    """The typed name of a service one plugin offers the others through
    :attr:`Handle.services` (e.g. DeviceFragmentation's device chooser for DynamicResources'
    Reserve)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ServiceKey({self.name!r})"


class Services:
    """Named services plugins offer each other, each under its :class:`ServiceKey`."""

    __slots__ = ("_by_key",)

    def __init__(self) -> None:
        self._by_key: dict[ServiceKey[Any], object] = {}

    def provide(self, key: ServiceKey[T], service: T) -> None:
        """Offer ``service`` under ``key`` (replacing any earlier one)."""
        self._by_key[key] = service

    def get(self, key: ServiceKey[T]) -> T | None:
        """The service offered under ``key``, or None."""
        return cast("T | None", self._by_key.get(key))


@runtime_checkable
class PodAddListener(Protocol):
    """Hears Pods added to the cluster (bound or not)."""

    def on_pod_add(self, pod: api.Pod) -> None:
        """``pod`` appeared."""


@runtime_checkable
class PodUpdateListener(Protocol):
    """Hears Pod updates (including binds)."""

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        """``old`` became ``new``."""


@runtime_checkable
class PodDeleteListener(Protocol):
    """Hears Pod deletions."""

    def on_pod_delete(self, pod: api.Pod) -> None:
        """``pod`` went away."""


@runtime_checkable
class ObjectListener(Protocol):
    """Hears other API objects (PodGroups, ElasticQuotas, ResourceClaims, ...)."""

    def on_object(self, obj: Any, deleted: bool) -> None:
        """``obj`` was added or updated, or ``deleted``."""


_LISTENERS: tuple[tuple[str, type], ...] = (
    ("on_pod_add", PodAddListener),
    ("on_pod_update", PodUpdateListener),
    ("on_pod_delete", PodDeleteListener),
    ("on_object", ObjectListener),
)


@dataclass(slots=True)
class Handle:
    """What the runtime gives every plugin at construction.

    ``clock``, ``metrics`` and ``rng`` are the scheduler's (None in a bare test harness;
    plugins fall back to a zero clock, no metrics, a fresh generator); ``extenders`` are the
    configured HTTP extenders when one has a preempt verb; ``services`` are what plugins
    offer each other by :class:`ServiceKey`.  ``waiting_pods`` are the Pods held at Permit;
    ``event_handlers`` are informer-style listeners plugins register with
    :meth:`add_event_handler` (objects implementing any of :class:`PodAddListener`,
    :class:`PodUpdateListener`, :class:`PodDeleteListener`, :class:`ObjectListener`), as
    upstream plugins add handlers to the shared informers; ``listeners`` holds their methods
    by event (``on_pod_add``, ...).  ``feature_gates`` is the Kubernetes version and gates
    the scheduler models: a plugin asks ``handle.feature_gates.enabled("X")`` where upstream
    asks its ``feature.Features``.  ``pool_seed`` draws the order in which DynamicResources
    searches a node's device pools (upstream: Go map order; None: by driver and pool name).
    """

    cluster: ClusterState
    api: ApiClient | None = None
    clock: Clock | None = None
    metrics: SchedulerMetrics | None = None
    rng: np.random.Generator | None = None
    extenders: PreemptionExtenders | None = None
    services: Services = field(default_factory=Services)
    waiting_pods: WaitingPods = field(default_factory=WaitingPods)
    event_handlers: list[object] = field(default_factory=list)
    listeners: dict[str, list[Callable[..., None]]] = field(
        default_factory=lambda: {event: [] for event, _ in _LISTENERS}
    )
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    pool_seed: int | None = None

    def get_waiting_pod(self, key: str) -> WaitingPod | None:
        """Upstream ``GetWaitingPod`` (by ``namespace/name`` instead of UID)."""
        return self.waiting_pods.get(key)

    def iterate_waiting_pods(self) -> list[WaitingPod]:
        """Upstream ``IterateOverWaitingPods``: every waiting Pod (a snapshot)."""
        return self.waiting_pods.all()

    def reject_waiting_pod(self, key: str) -> bool:
        """Upstream ``RejectWaitingPod``: reject ``key`` if it waits; whether it did."""
        wp = self.waiting_pods.get(key)
        if wp is None:
            return False
        wp.reject("", "removed")
        return True

    def add_event_handler(self, handler: object) -> None:
        """Hear Pod and object events (see the class docstring)."""
        self.event_handlers.append(handler)
        if isinstance(handler, PodAddListener):
            self.listeners["on_pod_add"].append(handler.on_pod_add)
        if isinstance(handler, PodUpdateListener):
            self.listeners["on_pod_update"].append(handler.on_pod_update)
        if isinstance(handler, PodDeleteListener):
            self.listeners["on_pod_delete"].append(handler.on_pod_delete)
        if isinstance(handler, ObjectListener):
            self.listeners["on_object"].append(handler.on_object)


# --------------------------------------------------------------------------- extension points
@runtime_checkable
class Plugin(Protocol):
    """Every plugin has its upstream name."""

    name: str


PluginFactory = Callable[[Any, Handle], Plugin]
"""``factory(args, handle)``; ``args`` is the plugin's typed args object or None."""


class PreFilterResult:
    """Nodes a PreFilter narrowed the search to (upstream ``PreFilterResult.NodeNames``)."""

    __slots__ = ("node_names",)

    def __init__(self, node_names: frozenset[str] | None) -> None:
        self.node_names = node_names

    def all_nodes(self) -> bool:
        """True when no narrowing happened."""
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        """Intersection of two results (None means all nodes)."""
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)
