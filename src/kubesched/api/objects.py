"""The Kubernetes objects kubesched honours, as typed, immutable values.

Parsing from manifests lives in :mod:`kubesched.api.parse`; this module only declares the
shapes.  Every quantity is already an exact integer here: CPU in millicores, memory and
storage in bytes, ``pods`` and extended resources (``nvidia.com/gpu``) in units.

A ``Pod`` keeps its original manifest in ``raw`` so that outputs (``schedule``, the simulated
API server) can hand back exactly what came in.  A Pod read from a large snapshot's undecoded
text (:mod:`kubesched.api.podquick`) holds a :class:`DeferredRaw` there instead, decoded on
the first read of ``raw`` (most of a snapshot's Pods never need it).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

DEFAULT_SCHEDULER_NAME = "default-scheduler"

# Taint effects.
NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"

Resources = dict[str, int]
"""Resource name to exact integer amount (millicores for ``cpu``)."""


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint (``spec.taints[]``)."""

    key: str
    value: str = ""
    effect: str = NO_SCHEDULE


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration; ``operator`` is ``Equal``, ``Exists``, or ``Gt``/``Lt`` (numeric, gate
    TaintTolerationComparisonOperators, v1.35+); empty ``effect`` matches all."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint, comparison: bool = False) -> bool:
        """Upstream ``Toleration.ToleratesTaint``; ``comparison``: the gate
        TaintTolerationComparisonOperators is on (without it ``Gt``/``Lt`` tolerate nothing).
        ``Gt`` tolerates a taint whose value is a greater decimal integer, ``Lt`` a smaller
        one; a value that is no decimal int64 on either side tolerates nothing."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Gt", "Lt"):
            if not comparison:
                return False
            mine, theirs = decimal_int64(self.value), decimal_int64(taint.value)
            if mine is None or theirs is None:
                return False
            return theirs > mine if self.operator == "Gt" else theirs < mine
        return self.operator in ("Equal", "") and self.value == taint.value


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def decimal_int64(value: str) -> int | None:
    """``value`` as apimachinery's ``IsDecimalInteger`` and ``strconv.ParseInt(v, 10, 64)``
    read it: an optional ``-``, no leading zero (``0`` alone, never ``-0``), digits only,
    within int64; None otherwise."""
    digits = value[1:] if value.startswith("-") else value
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    if digits[0] == "0" and (len(digits) > 1 or value.startswith("-")):
        return None
    n = int(value)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """A selector requirement: ``key``, ``operator`` (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """One term of a node selector; its requirements are ANDed (an empty term matches nothing)."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()


def node_selector_matches(
    terms: tuple[NodeSelectorTerm, ...], name: str, labels: Mapping[str, str]
) -> bool:
    """A ``v1.NodeSelector`` (terms ORed, requirements ANDed) against a node."""
    return any(
        (t.match_expressions or t.match_fields)
        and all(_req(r, labels.get(r.key)) for r in t.match_expressions)
        and all(_req(r, name) for r in t.match_fields)
        for t in terms
    )


def _req(r: Requirement, value: str | None) -> bool:
    op = r.operator
    if op == "In":
        return value is not None and value in r.values
    if op == "NotIn":
        return value is None or value not in r.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    have, want = parse_int64(value or ""), parse_int64(r.values[0])
    if have is None or want is None:
        return False
    return have > want if op == "Gt" else have < want


_DECIMAL = re.compile(r"[+-]?[0-9]{1,19}", re.ASCII)


def parse_int64(text: str) -> int | None:
    """``text`` as Go's ``strconv.ParseInt(text, 10, 64)`` reads it (ASCII digits, an
    optional sign, int64), or None where that fails: Python's ``int`` would also take
    ``1_000``, `` 5``, ``5\n``, other scripts' digits, and numbers of any size (or raise
    for more than 4,300 digits).  The one reading of ``Gt``/``Lt`` selector values and of
    the label values they compare with."""
    if _DECIMAL.fullmatch(text) is None:
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    """A weighted preferred node-affinity term (weight 1..100)."""

    weight: int
    preference: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class NodeAffinity:
    """``spec.affinity.nodeAffinity``; ``required`` is None when absent (terms are ORed)."""

    required: tuple[NodeSelectorTerm, ...] | None = None
    preferred: tuple[PreferredSchedulingTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A ``metav1.LabelSelector``: ``matchLabels`` plus ``matchExpressions``."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy every requirement (an empty selector matches all)."""
        for k, v in self.match_labels:
            if labels.get(k) != v:
                return False
        for r in self.match_expressions:
            has = r.key in labels
            if r.operator == "In":
                if not has or labels[r.key] not in r.values:
                    return False
            elif r.operator == "NotIn":
                if has and labels[r.key] in r.values:
                    return False
            elif r.operator == "Exists":
                if not has:
                    return False
            elif r.operator == "DoesNotExist":
                if has:
                    return False
            else:
                return False
        return True


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """One pod (anti-)affinity term."""

    topology_key: str
    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    """A preferred pod (anti-)affinity term with its weight."""

    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinity:
    """Required and preferred terms of ``podAffinity`` or ``podAntiAffinity``."""

    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """``spec.topologySpreadConstraints[]``."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HostPort:
    """A container port that claims a port on the host (``hostPort`` > 0)."""

    port: int
    protocol: str = "TCP"
    host_ip: str = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class OwnerReference:
    """``metadata.ownerReferences[]``."""

    kind: str
    name: str
    api_version: str = ""
    controller: bool = False
    uid: str = ""


VOLUME_PVC = "persistentVolumeClaim"
VOLUME_EPHEMERAL = "ephemeral"
IN_TREE_DISKS = (
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "rbd",
    "iscsi",
    "azureDisk",
    "cinder",
    "portworxVolume",
)
"""The in-tree volume kinds a Pod may name that the volume plugins look at (disk conflicts,
attach limits through CSI migration)."""


@dataclass(frozen=True, slots=True)
class Volume:
    """One ``spec.volumes[]`` entry the volume plugins look at; ``kind`` is its source's key
    (:data:`VOLUME_PVC`, :data:`VOLUME_EPHEMERAL` or one of :data:`IN_TREE_DISKS`).  Other
    sources (configMap, secret, emptyDir, projected, ...) are not kept: no plugin reads them.

    ``claim`` is a PVC's ``claimName``; ``ident`` the in-tree disk's identity (GCE
    ``pdName``, AWS/Cinder/Portworx ``volumeID``, iSCSI ``iqn``, RBD ``image``, Azure
    ``diskURI``); ``monitors`` and ``pool`` an RBD volume's; ``disk_kind`` an Azure Disk's
    ``kind`` (the API server defaults it to ``Shared``); ``template`` an ephemeral
    volume's ``volumeClaimTemplate`` as written (the simulator creates the claim from it)."""

    name: str
    kind: str
    claim: str = ""
    ident: str = ""
    read_only: bool = False
    monitors: tuple[str, ...] = ()
    pool: str = ""
    disk_kind: str = ""
    template: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True, slots=True)
class ImageState:
    """One entry of a node's ``status.images``: its names and size in bytes."""

    names: tuple[str, ...]
    size_bytes: int


SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
"""PriorityClasses every API server has, whether or not the snapshot lists them (Pods and,
v1.36+, PodGroups name them: :mod:`kubesched.api.parse`, :mod:`kubesched.api.workload`)."""


@dataclass(frozen=True, slots=True)
class WorkloadRef:
    """v1.35's ``spec.workloadRef`` of a Pod: the Workload, the pod group of its
    ``spec.podGroups`` and the replica of that group (``podGroupReplicaKey``, empty: the one
    replica).  Together they name one runtime group of Pods scheduled as a unit."""

    name: str
    pod_group: str
    replica_key: str = ""


@dataclass(frozen=True, slots=True)
class PodLevelResize:
    """``(requests, nonzero_requests)`` of a Pod whose own status reports resources
    (``status.resources``, ``status.allocatedResources``) as upstream counts it with
    InPlacePodLevelResourcesVerticalScaling on: ``per_container`` by v1.35-v1.36's rule
    (the containers each at their largest, the pod-level requests at the largest of spec,
    status and allocated), ``totals`` by v1.37's (the largest of the totals, the Pod's own
    status taking the place of its containers')."""

    per_container: tuple[Resources, Resources]
    totals: tuple[Resources, Resources]


@dataclass(slots=True)
class Pod:
    """A Pod as the scheduler sees it.

    ``requests`` is the effective request (containers, sidecars, init containers, overhead);
    ``nonzero_requests`` holds only ``cpu`` and ``memory`` with upstream's scoring defaults
    (100m, 200Mi) for containers that request nothing.
    """

    name: str
    namespace: str = "default"
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    owner_references: tuple[OwnerReference, ...] = ()
    creation_timestamp: float | None = None
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    priority: int = 0
    priority_class_name: str = ""
    preemption_policy: str = "PreemptLowerPriority"
    node_name: str = ""
    node_selector: dict[str, str] = field(default_factory=dict)
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    requests: Resources = field(default_factory=dict)
    nonzero_requests: Resources = field(default_factory=dict)
    fit_score_requests: Resources | None = None
    """NodeResourcesFit's score of this Pod as the incoming one: ``cpu`` and ``memory`` with
    the scoring defaults and without pod-level ``spec.resources`` (upstream v1.34's Fit scorer
    never sets its pod-level flag); None when that is ``nonzero_requests`` (no pod-level
    requests)."""
    resize_totals: tuple[Resources, Resources] | None = None
    """``(requests, nonzero_requests)`` as v1.37 counts a Pod whose in-place resize its
    container statuses report: the largest of the spec's, the actuated and the allocated
    totals (``requests`` takes the largest per container before summing, as v1.34-v1.36);
    None without such a status.  :func:`counted_requests` picks one by release."""
    pod_level_resize: PodLevelResize | None = None
    """How the Pod counts with InPlacePodLevelResourcesVerticalScaling on, per release;
    None without ``status.resources`` (then the gate changes nothing)."""
    resize_deferred: bool = False
    """The Pod's first ``PodResizePending`` condition has reason ``Deferred`` (upstream
    ``IsPodResizeDeferred``): the kubelet put its in-place resize off for want of room.
    Under v1.37's InPlacePodVerticalScalingSchedulerPreemption the scheduler then checks
    only the resize (:mod:`kubesched.plugins.deferredpodscheduling`)."""
    host_ports: tuple[HostPort, ...] = ()
    images: tuple[str, ...] = ()
    image_volumes: tuple[str, ...] = ()
    """``spec.volumes[].image.reference``, one entry per image volume, in order (ImageLocality
    scores them from v1.36)."""
    scheduling_gates: tuple[str, ...] = ()
    workload_ref: WorkloadRef | None = None
    """v1.35's ``spec.workloadRef``: the Workload and its pod group the Pod belongs to
    (:mod:`kubesched.api.workload`; v1.36 replaced the field by ``spec.schedulingGroup``)."""
    scheduling_group: str | None = None
    """v1.36+ ``spec.schedulingGroup.podGroupName``: the PodGroup the Pod belongs to."""
    termination_grace_period_seconds: int | None = None
    phase: str = "Pending"
    nominated_node_name: str = ""
    """``status.nominatedNodeName``: the node preemption made room on (upstream semantics)."""
    start_time: float | None = None
    """``status.startTime`` in epoch seconds (preemption prefers victims that started later)."""
    deletion_timestamp: float | None = None
    """``metadata.deletionTimestamp``: set while the Pod is terminating."""
    resource_claims: tuple[tuple[str, str, str], ...] = ()
    """``spec.resourceClaims`` as ``(name, resourceClaimName, resourceClaimTemplateName)``
    (one of the two names is empty)."""
    resource_claim_statuses: tuple[tuple[str, str], ...] = ()
    """``status.resourceClaimStatuses`` as ``(name, resourceClaimName)`` (the claims the
    resourceclaim controller made from templates)."""
    required_features: tuple[str, ...] = ()
    """The node-declared features the Pod needs to be scheduled, sorted
    (:func:`kubesched.api.nodefeatures.required_features`)."""
    volumes: tuple[Volume, ...] = ()
    """The ``spec.volumes`` the volume plugins look at (:class:`Volume`), in order."""
    raw: dict[str, Any] = field(default_factory=dict)
    key: str = field(init=False, repr=False, compare=False)
    """``namespace/name``, the identity used everywhere: set at construction, read some
    thirty times per scheduled Pod, so kept rather than formatted each time.  A copy that
    takes another name goes through :meth:`rename`, which keeps it in step."""

    def __post_init__(self) -> None:
        self.key = f"{self.namespace}/{self.name}"

    @property
    def has_claims(self) -> bool:
        """Whether the Pod names DRA claims (``spec.resourceClaims``) or volumes the volume
        plugins read, or requests a resource with a domain (``example.com/gpu``, which a
        DeviceClass may back under DRAExtendedResource): the plugins declaring
        ``Locality.CLAIMS`` have work for it."""
        return bool(self.resource_claims or self.volumes) or "/" in "".join(self.requests)

    def rename(self, name: str) -> None:
        """Set ``name`` (and ``key``), e.g. on a :meth:`shallow_copy` of a template."""
        self.name = name
        self.key = f"{self.namespace}/{name}"

    def bound_to(self, node_name: str) -> Pod:
        """A shallow copy with ``node_name`` set (what the scheduler assumes)."""
        other = self.shallow_copy()
        other.node_name = node_name
        return other

    def nominated_to(self, node_name: str) -> Pod:
        """A shallow copy with ``nominated_node_name`` set (``dataclasses.replace`` without
        re-running every field through ``__init__``)."""
        other = self.shallow_copy()
        other.nominated_node_name = node_name
        return other

    def shallow_copy(self) -> Pod:
        """A shallow copy, several times cheaper than ``copy.copy`` on a slotted dataclass
        (:func:`_copy_pod`: ~0.3 µs)."""
        return _copy_pod(self)

    def __reduce__(self) -> tuple[type[Pod], tuple[Any, ...]]:
        """Pickle as ``Pod(*values)``, the values of the fields in their declared order
        (half the bytes and about half the time of the default slotted-dataclass state,
        either way; Pods cross process boundaries by the thousand in parallel scheduling).
        A :class:`DeferredRaw` is decoded first: a pickle holds the manifest."""
        return Pod, _init_values(self)


class DeferredRaw:
    """A Pod manifest not decoded yet: ``decode(source)`` gives it (a new dict each call)."""

    __slots__ = ("decode", "source")

    def __init__(self, decode: Callable[[Any], dict[str, Any]], source: Any) -> None:
        self.decode = decode
        self.source = source


_raw_slot: Any = Pod.__dict__["raw"]


class _RawField:
    """``Pod.raw``: the slot, with a :class:`DeferredRaw` decoded (and kept) on first read."""

    def __get__(self, obj: Pod | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = _raw_slot.__get__(obj, owner)
        if type(value) is DeferredRaw:
            value = value.decode(value.source)
            _raw_slot.__set__(obj, value)
        return value

    def __set__(self, obj: Pod, value: Any) -> None:
        _raw_slot.__set__(obj, value)


setattr(Pod, "raw", _RawField())  # noqa: B010 - mypy keeps the field's declared type

_init_values = operator.attrgetter(*(f.name for f in fields(Pod) if f.init))
"""The values :meth:`Pod.__init__` takes, in order."""
_new = object.__new__


def _copy_pod(s: Pod) -> Pod:
    """A shallow copy of ``s``, one straight-line assignment per slot (as :mod:`dataclasses`
    writes ``__init__``): about 8x faster than a loop over the slots, and than ``Pod(...)``'s
    keyword matching.  ``raw`` goes through the slot's own descriptor, so a
    :class:`DeferredRaw` is copied as it is.  A field added to :class:`Pod` is added here
    too: ``tests/api/test_pod_copy.py`` fails on a copy that lacks one."""
    o: Pod = _new(Pod)
    o.name = s.name
    o.namespace = s.namespace
    o.uid = s.uid
    o.labels = s.labels
    o.annotations = s.annotations
    o.owner_references = s.owner_references
    o.creation_timestamp = s.creation_timestamp
    o.scheduler_name = s.scheduler_name
    o.priority = s.priority
    o.priority_class_name = s.priority_class_name
    o.preemption_policy = s.preemption_policy
    o.node_name = s.node_name
    o.node_selector = s.node_selector
    o.node_affinity = s.node_affinity
    o.pod_affinity = s.pod_affinity
    o.pod_anti_affinity = s.pod_anti_affinity
    o.tolerations = s.tolerations
    o.topology_spread_constraints = s.topology_spread_constraints
    o.requests = s.requests
    o.nonzero_requests = s.nonzero_requests
    o.fit_score_requests = s.fit_score_requests
    o.resize_totals = s.resize_totals
    o.pod_level_resize = s.pod_level_resize
    o.resize_deferred = s.resize_deferred
    o.host_ports = s.host_ports
    o.images = s.images
    o.image_volumes = s.image_volumes
    o.scheduling_gates = s.scheduling_gates
    o.workload_ref = s.workload_ref
    o.scheduling_group = s.scheduling_group
    o.termination_grace_period_seconds = s.termination_grace_period_seconds
    o.phase = s.phase
    o.nominated_node_name = s.nominated_node_name
    o.start_time = s.start_time
    o.deletion_timestamp = s.deletion_timestamp
    o.resource_claims = s.resource_claims
    o.resource_claim_statuses = s.resource_claim_statuses
    o.required_features = s.required_features
    o.volumes = s.volumes
    _raw_slot.__set__(o, _raw_slot.__get__(s))
    o.key = s.key
    return o


def counted_requests(
    pod: Pod, resize_totals: bool, pod_level: bool = False
) -> tuple[Resources, Resources]:
    """``(requests, nonzero_requests)`` a placed ``pod`` counts on its node: with
    ``resize_totals`` (v1.37 and later) the largest of its totals during an in-place resize
    (:attr:`Pod.resize_totals`), otherwise, and for every Pod without a resize status, its
    parsed ``requests``; with ``pod_level`` (InPlacePodLevelResourcesVerticalScaling on)
    and a status of the Pod's own, :attr:`Pod.pod_level_resize` by the same rule."""
    if pod_level and pod.pod_level_resize is not None:
        counts = pod.pod_level_resize
        return counts.totals if resize_totals else counts.per_container
    totals = pod.resize_totals
    if totals is not None and resize_totals:
        return totals
    return pod.requests, pod.nonzero_requests


@dataclass(slots=True)
class Node:
    """A Node as the scheduler sees it; ``allocatable`` falls back to ``status.capacity``."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()
    allocatable: Resources = field(default_factory=dict)
    images: tuple[ImageState, ...] = ()
    declared_features: tuple[str, ...] = ()
    """``status.declaredFeatures``: the features the node declares, sorted (v1.35+)."""
    resize_preemption_disabled: bool = False
    """``spec.podPreemptionPolicy.disableResizePreemption`` names someone (v1.37 alpha):
    no preemption for a deferred in-place resize on this node."""
    raw: dict[str, Any] = field(default_factory=dict)
