"""NodeDeclaredFeatures: a Pod goes only to nodes that declare every feature it needs.

Upstream ``nodedeclaredfeatures/nodedeclaredfeatures.go`` (v1.35 alpha, v1.36 beta and in the
default profile, v1.37 GA and locked on), with the ``k8s.io/component-helpers``
``nodedeclaredfeatures`` library it asks:

- PreFilter infers the features the Pod needs (``InferForPodScheduling`` over the release's
  feature registry; the parse did the inference, :mod:`kubesched.api.nodefeatures`, and this
  plugin keeps the features its release registers) and Skips when there are none;
- Filter fails a node whose ``status.declaredFeatures`` lacks one of them,
  UnschedulableAndUnresolvable ``node(s) didn't match Pod's required features`` (v1.36+;
  v1.35 named the missing features: ``node declared features check failed - unsatisfied
  requirements: A, B``);
- requeued by a Node added or its declared features changed (hinted: Queue when the list
  changed), and by the Pod itself changing what it needs (hinted; upstream v1.37 registers
  ``TargetPod/Update``, v1.35 and v1.36 ``Pod/Update`` skipping other Pods).

A feature whose Pod field the API server drops under the run's gates (its PrepareForCreate
``dropDisabledFields``: ``restartPolicyRules`` without ContainerRestartRules, ``hostUsers``
without UserNamespacesSupport, ``bindMountOptions`` without VolumeBindMountOptions, Alpha
and off in v1.37) is never needed: the Pod the scheduler sees has no such field
(:data:`FIELD_GATES`, ``handle.feature_gates``).

Which release's registry and reasons apply is the factory's parameter
(:func:`factory`); :func:`new` is the newest release's.  Under v1.37's alpha
``InPlacePodVerticalScalingSchedulerPreemption`` (off by default) a Pod whose resize is
deferred is not checked: the framework Skips this plugin for it
(:data:`kubesched.config.names.RESIZE_DEFERRED_SKIPPED`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api import nodefeatures
from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework.contract import Locality
from kubesched.framework.interface import (
    SKIP,
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    IntArray,
    PluginFactory,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    Verdict,
    error,
)
from kubesched.state.cache import ClusterState

NAME = names.NODE_DECLARED_FEATURES
ERR_REASON_UNSATISFIED = "node(s) didn't match Pod's required features"
"""v1.36+'s reason."""
ERR_REASON_LISTED = "node declared features check failed - unsatisfied requirements: "
"""v1.35's reason, followed by the missing features joined with ``, ``."""
_PRE_FILTER_KEY = "PreFilter" + NAME


@dataclass(frozen=True, slots=True)
class Release:
    """What one Kubernetes release's plugin and library know."""

    version: str
    """``1.35``, ``1.36``, ``1.37``."""
    features: frozenset[str]
    """Every feature its library registers (``features.AllFeatures``): a Pod needs only
    these, a node's declared list is read for only these (``FeatureMapper.TryMap``)."""
    listed_reasons: bool
    """Whether the Filter reason names the missing features (v1.35)."""


RELEASES: dict[str, Release] = {
    "1.35": Release(
        "1.35",
        frozenset(
            {
                "GuaranteedQoSPodCPUResize",
                "InPlacePodLevelResourcesVerticalScaling",
                nodefeatures.RESTART_ALL_CONTAINERS,
            }
        ),
        listed_reasons=True,
    ),
    "1.36": Release(
        "1.36",
        frozenset(
            {
                "ExtendWebSocketsToKubelet",
                "InPlacePodLevelResourcesVerticalScaling",
                "InPlacePodVerticalScalingInitContainers",
                nodefeatures.RESTART_ALL_CONTAINERS,
                nodefeatures.USER_NAMESPACES_HOST_NETWORK,
            }
        ),
        listed_reasons=False,
    ),
    "1.37": Release(
        "1.37",
        frozenset(
            {
                "DRANodeAllocatableResources",
                "DRAOptionalNodeOperations",
                "ExtendWebSocketsToKubelet",
                "InPlacePodLevelResourcesVerticalScaling",
                "InPlacePodVerticalScalingInitContainers",
                "InPlacePodVerticalScalingMemoryBackedVolumes",
                nodefeatures.RESTART_ALL_CONTAINERS,
                nodefeatures.USER_NAMESPACES_HOST_NETWORK,
                nodefeatures.VOLUME_BIND_MOUNT_OPTIONS,
            }
        ),
        listed_reasons=False,
    ),
}
"""Each release's registry (upstream ``component-helpers`` v0.35.4, v0.36.3, v0.37.2)."""
NEWEST = "1.37"
FIELD_GATES = {
    nodefeatures.RESTART_ALL_CONTAINERS: "ContainerRestartRules",
    nodefeatures.USER_NAMESPACES_HOST_NETWORK: "UserNamespacesSupport",
    nodefeatures.VOLUME_BIND_MOUNT_OPTIONS: "VolumeBindMountOptions",
}
"""The gate without which the API server drops the Pod field a feature is inferred from."""


class NodeDeclaredFeatures:
    """Filters nodes that do not declare every feature the Pod needs."""

    name = NAME
    locality = Locality.NODE_LOCAL
    node_only = True
    """Answers depend on the Pod's spec and the Node's declared features only."""

    def __init__(
        self,
        args: object | None,
        handle: Handle,
        release: Release = RELEASES[NEWEST],
        enabled: bool = True,
    ) -> None:
        self.handle = handle
        self.release = release
        gates = handle.feature_gates
        self.known = frozenset(
            name
            for name in release.features
            if name not in FIELD_GATES or gates.enabled(FIELD_GATES[name])
        )
        """The release's features a Pod can need under the run's gates (module docstring)."""
        self.enabled = enabled
        """False: the NodeDeclaredFeatures gate is off; every Pod is Skipped and nothing is
        registered (upstream's disabled plugin)."""
        newer = tuple(map(int, release.version.split("."))) >= (1, 37)
        self._own_update = Resource.TARGET_POD if newer else Resource.POD
        """The resource the Pod's own update is registered on: v1.37+ ``TargetPod``."""

    def requirements(self, pod: api.Pod) -> tuple[str, ...]:
        """The features ``pod`` needs under this release, sorted (``InferForPodScheduling``)."""
        if not pod.required_features:
            return ()
        known = self.known
        return tuple(name for name in pod.required_features if name in known)

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: the answer depends on the features the Pod needs only."""
        return self.requirements(pod) if self.enabled else ()

    def pre_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[PreFilterResult | None, Status]:
        """Skip a Pod that needs no feature; otherwise remember what it needs."""
        reqs = self.requirements(pod) if self.enabled else ()
        if not reqs:
            return None, SKIP
        state[_PRE_FILTER_KEY] = reqs
        return None, SUCCESS

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """Fail rows whose declared features lack one the Pod needs: once per distinct
        declared list (interned, ``NodeTable.feature_set``), then indexed by ``rows``."""
        reqs: tuple[str, ...] | None = state.get(_PRE_FILTER_KEY)
        if reqs is None:  # upstream: reading the PreFilter state fails -> Error
            status = error(f'error reading "{_PRE_FILTER_KEY}" from cycle-state: not found')
            return Verdict(np.ones(rows.shape[0], dtype=np.int8), {1: status})
        table = cluster.nodes
        ids = table.feature_set[rows]
        code_of = np.zeros(len(table.feature_sets), dtype=np.int8)
        statuses: dict[int, Status] = {}
        by_reason: dict[str, int] = {}
        for fid in np.unique(ids).tolist():
            declared = table.feature_sets[fid]
            missing = [name for name in reqs if name not in declared]
            if not missing:
                continue
            reason = self._reason(missing)
            code = by_reason.get(reason)
            if code is None:
                code = by_reason[reason] = len(by_reason) + 1
                statuses[code] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,))
            code_of[fid] = code
        return Verdict(code_of[ids], statuses)

    def _reason(self, missing: list[str]) -> str:
        if self.release.listed_reasons:
            return ERR_REASON_LISTED + ", ".join(missing)
        return ERR_REASON_UNSATISFIED

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Node/Add|UpdateNodeDeclaredFeature and the Pod's own Update, both hinted; nothing
        when disabled."""
        if not self.enabled:
            return []
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE
                ),
                is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(self._own_update, ActionType.UPDATE),
                self.is_schedulable_after_target_pod_update,
            ),
        ]

    def is_schedulable_after_target_pod_update(
        self, pod: api.Pod, old: Any, new: Any
    ) -> QueueingHint:
        """Queue when ``pod`` itself now needs other features; skip other Pods' updates
        (v1.37+ registers ``TargetPod/Update``: only the Pod's own, no same-Pod check)."""
        if not isinstance(new, api.Pod) or not isinstance(old, api.Pod):
            return QueueingHint.QUEUE
        if self._own_update == Resource.POD and not _same_pod(pod, new):
            return QueueingHint.QUEUE_SKIP
        if self.requirements(old) == self.requirements(new):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE


def is_schedulable_after_node_change(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when a node is added or its declared features changed."""
    if not isinstance(new, api.Node) or (old is not None and not isinstance(old, api.Node)):
        return QueueingHint.QUEUE
    if old is not None and old.declared_features == new.declared_features:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def _same_pod(a: api.Pod, b: api.Pod) -> bool:
    # Upstream compares UIDs; Pods built without one fall back to namespace/name.
    if a.uid or b.uid:
        return a.uid == b.uid
    return a.key == b.key


def factory(version: str = NEWEST, enabled: bool = True) -> PluginFactory:
    """The plugin factory of Kubernetes ``version`` (a key of :data:`RELEASES`) with the
    NodeDeclaredFeatures gate ``enabled`` or not: what a per-version registry registers."""
    if version not in RELEASES:
        raise ValueError(f"{NAME}: no such release {version!r} (known: {', '.join(RELEASES)})")
    return release_factory(RELEASES[version], enabled)


def release_factory(release: Release, enabled: bool = True) -> PluginFactory:
    """The plugin factory of a feature registry ``release`` that need not be one of
    :data:`RELEASES` (scheduler_perf's mock features: :mod:`kubesched.bench.declaredfeatures`)."""

    def make(args: object | None, handle: Handle) -> NodeDeclaredFeatures:
        return NodeDeclaredFeatures(args, handle, release, enabled)

    return make


def new(args: object | None, handle: Handle) -> NodeDeclaredFeatures:
    """Factory of the run's release and its NodeDeclaredFeatures gate
    (``handle.feature_gates``; v1.34 has no such plugin, and its configuration is refused
    before this, so it gets v1.35's); NodeDeclaredFeatures has no args (anything given is
    ignored, as upstream)."""
    gates = handle.feature_gates
    version = gates.version if gates.version in RELEASES else min(RELEASES)
    return NodeDeclaredFeatures(args, handle, RELEASES[version], gates.enabled(NAME))
