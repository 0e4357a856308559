"""The plugin contract in types: one Protocol per extension point and per kubesched capability.

A plugin is any object with a ``name`` (:class:`~kubesched.framework.interface.Plugin`); it
joins an extension point by implementing that point's method, and it offers a kubesched
capability by implementing the capability's method or declaring its class attribute.  Each
is a ``runtime_checkable`` Protocol below, so the runtime asks ``isinstance(plugin,
FilterPlugin)`` rather than probing attribute names, and ``mypy`` checks a plugin class
assigned to one.  Methods take their arguments positionally (``/``), so a plugin may name
its parameters as it likes (``node`` or ``node_name``).

Arrays: ``rows`` is int64 of shape ``(n,)`` (node-table rows), a filter answers a
:class:`~kubesched.framework.interface.Verdict` of shape ``(n,)``, scores are int64 of shape
``(n,)``.

The *capabilities* go beyond upstream; each docstring states the invariant a plugin promises
by offering it (result reuse, kept static failures, the parallel fast path and the sparse
candidate search rely on them), and :mod:`kubesched.framework.conformance` checks what it can
of each.  Flag capabilities (:class:`NodeOnly`, :class:`RowLocal`, :class:`Located`) are class
attributes; ask them through :func:`is_node_only`, :func:`is_row_local` and
:func:`locality_of`, which also read the value.

A plugin wrapped for timing (:class:`kubesched.framework.sampling.TimedPlugin`) forwards its
plugin's attributes, so :func:`unwrap` gives the plugin whose class declares them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.framework.interface import (
    ClusterEventWithHint,
    CycleState,
    IntArray,
    Plugin,
    PreFilterResult,
    QueuedPodInfo,
    Status,
    Verdict,
)
from kubesched.framework.outcomes import FilterOutcome
from kubesched.framework.podgroups import Placement

if TYPE_CHECKING:
    from kubesched.state.cache import ClusterState


# --------------------------------------------------------------------------- extension points
@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    """PreEnqueue: may the Pod enter activeQ?  Non-success gates it (upstream)."""

    def pre_enqueue(self, pod: api.Pod, /) -> Status: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    """QueueSort: the activeQ order as a sort key (smaller first); exactly one per profile."""

    def sort_key(self, qp: QueuedPodInfo, /) -> tuple[Any, ...]: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    """PreFilter: per-Pod precomputation into ``state``; may narrow the nodes (a
    :class:`PreFilterResult`) or Skip its Filter."""

    def pre_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, /
    ) -> tuple[PreFilterResult | None, Status]: ...


@runtime_checkable
class PreFilterExtensions(Protocol):
    """PreFilterExtensions: update the PreFilter state as if ``other`` were added to / removed
    from node ``row`` (nominated Pods, preemption dry runs); the state after add then remove
    equals the state before."""

    def pre_filter_add_pod(
        self, state: CycleState, pod: api.Pod, other: api.Pod, row: int, cluster: ClusterState, /
    ) -> Status: ...

    def pre_filter_remove_pod(
        self, state: CycleState, pod: api.Pod, other: api.Pod, row: int, cluster: ClusterState, /
    ) -> Status: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    """Filter: a verdict for every node of ``rows`` at once; a node's verdict does not depend
    on which other rows were asked."""

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray, /
    ) -> Verdict: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    """PostFilter: runs when no node fits (preemption); answers a result (or None) and a
    Status."""

    def post_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, diagnosis: Any, /
    ) -> tuple[Any, Status]: ...


@runtime_checkable
class FilterDiagnosis(Protocol):
    """What a PostFilter plugin may read of why the Pod fits nowhere (the scheduler's
    ``Diagnosis``): the Filter ``outcome`` and the status of the nodes it does not cover
    (``absent``; None: UnschedulableAndUnresolvable).  A direct call may pass anything else
    (no diagnosis: :func:`diagnosed` gives ``(None, None)``)."""

    outcome: FilterOutcome | None
    absent: Status | None


_DIAGNOSES: dict[type, bool] = {}
"""Whether each type is a :class:`FilterDiagnosis` (its instances all carry both fields: a
Protocol check walks the members on every call, ~30 µs, twice per preemption)."""


def diagnosed(diagnosis: object) -> tuple[FilterOutcome | None, Status | None]:
    """``(outcome, absent)`` of a PostFilter ``diagnosis`` (:class:`FilterDiagnosis`), or
    ``(None, None)`` without one."""
    kind = type(diagnosis)
    known = _DIAGNOSES.get(kind)
    if known is None:
        known = _DIAGNOSES[kind] = isinstance(diagnosis, FilterDiagnosis)
    if known:
        d = cast(FilterDiagnosis, diagnosis)
        return d.outcome, d.absent
    return None, None


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    """PreScore: per-Pod precomputation for Score over the feasible ``rows``; Skip skips its
    Score."""

    def pre_score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray, /
    ) -> Status: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    """Score: raw int64 scores of shape ``(n,)`` for ``rows`` (within 0..100 unless the plugin
    normalizes them)."""

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray, /
    ) -> IntArray: ...


@runtime_checkable
class ScoreNeedsPreScore(Protocol):
    """``pre_score_missing``: the error upstream's Score returns when the plugin's own PreScore
    did not run (the profile enables its Score but disables its PreScore): its Score reads
    the state PreScore writes and has no fallback, so every scheduling cycle that scores
    fails with ``running Score plugins: plugin "X" failed with: <pre_score_missing>``
    (TaintToleration, InterPodAffinity, PodTopologySpread; NodeAffinity and the resource
    scorers compute the state in Score instead)."""

    pre_score_missing: ClassVar[str]


@runtime_checkable
class ScoreExtensions(Protocol):
    """ScoreExtensions: ``normalize_score`` rewrites the raw scores in place into 0..100; the
    result depends on the whole array (so result reuse cannot re-score one node alone)."""

    def normalize_score(self, state: CycleState, pod: api.Pod, scores: IntArray, /) -> None: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    """Reserve: claim plugin-side resources for the Pod on the chosen node."""

    def reserve(self, state: CycleState, pod: api.Pod, node: str, /) -> Status: ...


@runtime_checkable
class UnreservePlugin(Protocol):
    """Unreserve (upstream's other half of ReservePlugin, optional here): undo exactly what
    ``reserve`` did, leaving the plugin's state as before; must not fail."""

    def unreserve(self, state: CycleState, pod: api.Pod, node: str, /) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    """Permit: allow, reject, or Wait with a timeout in seconds (capped at 15 minutes)."""

    def permit(
        self, state: CycleState, pod: api.Pod, node: str, /
    ) -> tuple[Status, float | None]: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    """PreBind: work before the bind (claims, volumes); non-success ends the binding cycle."""

    def pre_bind(self, state: CycleState, pod: api.Pod, node: str, /) -> Status: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    """Bind: bind the Pod, or Skip to let the next Bind plugin do it."""

    def bind(self, state: CycleState, pod: api.Pod, node: str, /) -> Status: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    """PostBind: informational, after a successful bind."""

    def post_bind(self, state: CycleState, pod: api.Pod, node: str, /) -> None: ...


@runtime_checkable
class PlacementFeasiblePlugin(Plugin, Protocol):
    """PlacementFeasible (v1.37's PodGroup scheduling cycle): may a group still meet its
    constraints with ``scheduled`` members placed and ``remaining`` left to try?  Success:
    met; Wait: not yet; Unschedulable: never in this cycle (it ends early).  Found among a
    profile's plugins by the cycle (:mod:`kubesched.scheduler.podgroup`), not configured as
    an extension point of its own."""

    def placement_feasible(self, min_count: int, scheduled: int, remaining: int, /) -> Status: ...


@runtime_checkable
class PlacementGeneratePlugin(Plugin, Protocol):
    """PlacementGenerate (v1.37, TopologyAwareWorkloadScheduling): the placements a group
    ``key`` is tried on, from the nodes ``rows`` (int64, shape ``(n,)``); an empty list is
    refused by the cycle (``no feasible placements found``)."""

    def generate_placements(
        self, key: str, rows: IntArray, /
    ) -> tuple[list[Placement], Status]: ...


@runtime_checkable
class PlacementScorePlugin(Plugin, Protocol):
    """PlacementScore (v1.36+): a feasible placement's score for group ``key`` from its
    nodes ``rows`` (int64, shape ``(n,)``) and the members it placed (``assigned``), then
    all placements' scores normalized in place to 0-100 (a plugin without upstream's
    ``PlacementScoreExtensions`` leaves them as they are)."""

    def score_placement(self, key: str, rows: IntArray, assigned: list[api.Pod], /) -> int: ...

    def normalize_placement_scores(self, scores: list[int], /) -> Status: ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    """EnqueueExtensions: the cluster events (with queueing hints) that may make a Pod this
    plugin rejected schedulable; hints are None or callable."""

    def events_to_register(self) -> list[ClusterEventWithHint]: ...


@dataclass(frozen=True, slots=True)
class ProposedAssignment:
    """A member the PodGroup algorithm placed (upstream ``fwk.ProposedAssignment``): the
    Pod, its node and the cycle state its search filled (PreFilter ran with the members
    before it assumed)."""

    pod: api.Pod
    node: str
    state: CycleState


@dataclass(frozen=True, slots=True)
class PodGroupAssignments:
    """What one run of a group's scheduling algorithm proposes (upstream
    ``fwk.PodGroupAssignments``): the placed members in the algorithm's order, and the
    group's status."""

    assignments: tuple[ProposedAssignment, ...]
    status: Status


PodGroupSchedulingFunc = Callable[[], PodGroupAssignments]
"""Runs the group's whole scheduling algorithm on the cluster as it is now (upstream
``fwk.PodGroupSchedulingFunc``); nothing stays assumed afterwards."""


@dataclass(frozen=True, slots=True)
class PodGroupPostFilterResult:
    """Upstream ``fwk.PodGroupPostFilterResult``: the node each member is nominated to, by
    Pod key (mode Override); ``victims`` the Pods evicted for the group (kubesched's
    report)."""

    nominations: Mapping[str, str]
    victims: tuple[api.Pod, ...] = ()


@runtime_checkable
class PodGroupPostFilterPlugin(Plugin, Protocol):
    """PodGroupPostFilter (v1.37): after a PodGroup's algorithm is Unschedulable, make room
    for the whole group (DefaultPreemption's workload-aware preemption).  ``key`` is the
    group, ``members`` its unscheduled Pods of this cycle, ``schedule`` reruns the group's
    algorithm.  Found among the profile's PostFilter plugins by the cycle
    (:mod:`kubesched.scheduler.podgroup`)."""

    def pod_group_post_filter(
        self, key: str, members: Sequence[api.Pod], schedule: PodGroupSchedulingFunc, /
    ) -> tuple[PodGroupPostFilterResult | None, Status]: ...


@runtime_checkable
class PodGroupClaimsPostFilterPlugin(Plugin, Protocol):
    """DynamicResources' PodGroupPostFilter (v1.37): after a PodGroup's algorithm is
    Unschedulable, free the claims that kept its members off every node.  ``members`` are
    the group's unscheduled Pods of this cycle in its order, ``states`` the cycle state of
    each member the algorithm tried, by Pod key (upstream's PodGroup cycle state gathers
    what each member's PreFilter wrote).  Found among the profile's PostFilter plugins by
    the cycle (:mod:`kubesched.scheduler.podgroup`)."""

    def pod_group_post_filter_claims(
        self, members: Sequence[api.Pod], states: Mapping[str, CycleState], /
    ) -> Status: ...


POINT_PROTOCOLS: Mapping[str, type] = {
    "pre_enqueue": PreEnqueuePlugin,
    "queue_sort": QueueSortPlugin,
    "pre_filter": PreFilterPlugin,
    "filter": FilterPlugin,
    "post_filter": PostFilterPlugin,
    "pre_score": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "pre_bind": PreBindPlugin,
    "bind": BindPlugin,
    "post_bind": PostBindPlugin,
}
"""Each extension point (:data:`kubesched.config.pluginsets.EXTENSION_POINTS`) to the
Protocol a plugin implements to join it."""


def implements(plugin: object, point: str) -> bool:
    """Whether ``plugin`` joins extension ``point`` (a key of :data:`POINT_PROTOCOLS`)."""
    return isinstance(plugin, POINT_PROTOCOLS[point])


# --------------------------------------------------------------------------- capabilities
@runtime_checkable
class Signer(Protocol):
    """Result reuse: ``sign(pod)`` is a hashable summary of everything in the Pod this plugin's
    PreFilter / Filter / PreScore / Score read, or None when it cannot say.  Pods with equal
    signatures (in one profile) get equal answers from the plugin on an unchanged cluster;
    equal Pods get equal signatures.  A profile reuses results only when every such plugin
    signs."""

    def sign(self, pod: api.Pod, /) -> Hashable | None: ...


@runtime_checkable
class NodeOnly(Protocol):
    """``node_only = True``: the plugin's Filter and Score answers for a node depend on the Pod
    and the Node object only, never on the Pods placed anywhere, so a bind cannot move them
    (result reuse keeps them; kept static failures trust its rejections)."""

    node_only: ClassVar[bool]


@runtime_checkable
class RowLocal(Protocol):
    """``row_local = True``: the answers for a node depend on the Pod, that node and the Pods
    on that node only, so a Pod placed on another node cannot move them (result reuse then
    re-checks only the node the last Pod went to; conformance probes it)."""

    row_local: ClassVar[bool]


@runtime_checkable
class RefreshingFilter(Protocol):
    """A Filter spanning nodes that result reuse can bring up to date: ``refresh_filter``
    recomputes its PreFilter state in ``state`` for the cluster now and answers True when
    every node's verdict is as before for the kept feasible rows (False: reuse is dropped)."""

    def refresh_filter(self, state: CycleState, pod: api.Pod, cluster: ClusterState, /) -> bool: ...


@runtime_checkable
class StaticRejections(Protocol):
    """Kept static failures: bool of shape ``(n,)``, True where the plugin's rejection of
    ``rows`` depends on the Node object and the Pod only (the same reasons whatever Pods run
    there), so the failure can be kept until the node table changes."""

    def static_rejections(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray, /
    ) -> npt.NDArray[np.bool_]: ...


@runtime_checkable
class FilterOne(Protocol):
    """A one-node Filter for result reuse: True when node ``row`` passes for sure, None when
    the full ``filter`` must decide; never True for a node ``filter`` rejects."""

    def filter_one(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, row: int, /
    ) -> bool | None: ...


@runtime_checkable
class ScoreOne(Protocol):
    """A one-node Score for result reuse: the raw score ``score`` gives node ``row``, or None
    when it cannot say."""

    def score_one(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, row: int, /
    ) -> int | None: ...


@runtime_checkable
class CandidateRows(Protocol):
    """Sparse search: int64 rows (ascending) outside which this Filter rejects the Pod for
    sure, or None when any node may pass; the runtime filters only their intersection."""

    def candidate_rows(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, /
    ) -> IntArray | None: ...


@runtime_checkable
class FrameworkAware(Protocol):
    """A plugin that runs the profile's other plugins (PostFilter preemption's dry runs): the
    runtime hands it its Framework once, after every plugin of the profile is built."""

    def set_framework(self, fwk: Any, /) -> None: ...


@runtime_checkable
class MetricsSyncer(Protocol):
    """Plugin-owned gauges: ``sync_metrics`` sets them from the plugin's state; called when
    the scheduler syncs its metrics, it changes no decision."""

    def sync_metrics(self) -> None: ...


@runtime_checkable
class Reporter(Protocol):
    """A plugin with a summary for the simulator's report (JSON-ready); reading it changes
    nothing."""

    def report(self) -> dict[str, Any]: ...


class PreBindTiming(enum.Enum):
    """How a PreBind will go, told before it runs (:class:`PreBindPreview`)."""

    PASSES = "passes"
    """It passes at once: nothing to write, or writes the API server accepts at once."""
    WAITS = "waits"
    """It waits for someone (a PV controller, a device's binding conditions) before it ends,
    or it cannot be told beforehand."""
    FAILS = "fails"
    """It fails at once: a write the API server refuses (a declared fault), or an error
    before any wait."""
    FAILS_AT_POLL = "fails at poll"
    """It makes its writes, then fails at its first check of the outcome, a second later:
    VolumeBinding's ``BindPodVolumes`` polls the PV controller every second, the first time
    after one (``wait.PollUntilContextTimeout(ctx, time.Second, ..., false, ...)``), and a
    declared fault undoes the binding (``failProvisioning``, ``resetClaimRef``)."""


@runtime_checkable
class PreBindPreview(Protocol):
    """How the plugin's PreBind will go for the Pod on ``node``, told at the end of the
    scheduling cycle without running it (no write, no state changed).  Upstream's binding
    cycle starts microseconds after Permit, so a PreBind that fails at once frees the Pod's
    node before the next Pod's cycle; the simulator answers such a binding cycle then, not
    ``bind_latency`` later (:mod:`kubesched.sim.driver`).  A PreBind plugin without it is
    taken to wait."""

    def pre_bind_timing(self, state: CycleState, pod: api.Pod, node: str, /) -> PreBindTiming: ...


class Locality(enum.Enum):
    """Where a Filter plugin's verdict on a node comes from (the parallel binder's fast check
    reads it, :mod:`kubesched.parallel.fastpath`)."""

    NODE_LOCAL = "node-local"
    """The verdict cannot change while the node's generation stands (Pod, Node object and
    the node's own Pods)."""
    CROSS_NODE = "cross-node"
    """The verdict may depend on Pods on other nodes; node-local when the Pod has nothing
    for it to check (the shard says so)."""
    CLAIMS = "claims"
    """The plugin does nothing for a Pod without claims (``Pod.has_claims``: no
    ``spec.resourceClaims``, no volume the volume plugins read): every node passes, no Reserve
    or PreBind work, and its ``sign`` (if any) is ``()``; so the runtime calls none of them
    for such a Pod (signature, Reserve, PreBind), and a Pod with claims never takes the fast
    path."""


@runtime_checkable
class Located(Protocol):
    """``locality``: a :class:`Locality` the plugin declares for its PreFilter / Filter (and,
    for :attr:`Locality.CLAIMS`, its Reserve / PreBind).  A plugin that declares none is
    treated as spanning the cluster: it bars the fast path."""

    locality: ClassVar[Locality]


def unwrap(plugin: object) -> object:
    """The plugin itself, when ``plugin`` is a wrapper that forwards to it (``wrapped``)."""
    inner = plugin.wrapped if isinstance(plugin, _Wrapper) else plugin
    return inner


@runtime_checkable
class _Wrapper(Protocol):
    """A timing wrapper (``TimedPlugin``) with the plugin it forwards to."""

    @property
    def wrapped(self) -> Any: ...


def is_node_only(plugin: object) -> bool:
    """Whether ``plugin`` declares :class:`NodeOnly` (``node_only = True``)."""
    p = unwrap(plugin)
    return isinstance(p, NodeOnly) and p.node_only


def is_row_local(plugin: object) -> bool:
    """Whether ``plugin`` declares :class:`RowLocal` (``row_local = True``)."""
    p = unwrap(plugin)
    return isinstance(p, RowLocal) and p.row_local


def pre_score_missing(plugin: object) -> str | None:
    """The error :class:`ScoreNeedsPreScore` ``plugin`` declares, or None."""
    p = unwrap(plugin)
    return p.pre_score_missing if isinstance(p, ScoreNeedsPreScore) else None


def locality_of(plugin: object) -> Locality | None:
    """The :class:`Locality` ``plugin`` declares, or None."""
    p = unwrap(plugin)
    return p.locality if isinstance(p, Located) else None


@dataclass(frozen=True, slots=True)
class ProfileCapabilities:
    """The names of one profile's plugins offering each capability, asked once when the
    profile is built (an ``isinstance`` against a Protocol is too slow for every cycle)."""

    node_only: frozenset[str]
    """:class:`NodeOnly` plugins."""
    row_local: frozenset[str]
    """:class:`RowLocal` plugins."""
    refreshing: frozenset[str]
    """:class:`RefreshingFilter` plugins."""
    static_rejections: frozenset[str]
    """:class:`StaticRejections` plugins."""
    filter_one: frozenset[str]
    """:class:`FilterOne` plugins."""
    score_one: frozenset[str]
    """:class:`ScoreOne` plugins."""
    normalizing: frozenset[str]
    """:class:`ScoreExtensions` plugins."""
    node_local: frozenset[str]
    """Plugins declaring :attr:`Locality.NODE_LOCAL`."""
    cross_node: frozenset[str]
    """Plugins declaring :attr:`Locality.CROSS_NODE`."""
    claims: frozenset[str]
    """Plugins declaring :attr:`Locality.CLAIMS`."""

    @staticmethod
    def of(plugins: Mapping[str, object]) -> ProfileCapabilities:
        """The capabilities of ``plugins`` (name to plugin instance)."""

        def having(proto: type) -> frozenset[str]:
            return frozenset(n for n, p in plugins.items() if isinstance(unwrap(p), proto))

        def located(where: Locality) -> frozenset[str]:
            return frozenset(n for n, p in plugins.items() if locality_of(p) is where)

        return ProfileCapabilities(
            node_only=frozenset(n for n, p in plugins.items() if is_node_only(p)),
            row_local=frozenset(n for n, p in plugins.items() if is_row_local(p)),
            refreshing=having(RefreshingFilter),
            static_rejections=having(StaticRejections),
            filter_one=having(FilterOne),
            score_one=having(ScoreOne),
            normalizing=having(ScoreExtensions),
            node_local=located(Locality.NODE_LOCAL),
            cross_node=located(Locality.CROSS_NODE),
            claims=located(Locality.CLAIMS),
        )
