"""The job-layer objects, parsed from their raw manifests: PodGroup, ElasticQuota and Kueue's
ClusterQueue, LocalQueue and ResourceFlavor.

Each parser takes the object as it arrived (a dict from a snapshot, a scenario or the API
server) and returns a frozen spec, raising :class:`~kubesched.api.errors.InputError` whose
field path starts with ``Kind/name`` (``ElasticQuota/team-a.spec.min[nvidia.com/gpu]``), so an
error names the object and the field.  Quantities become the scheduler's exact integers
(CPU millicores, memory bytes, devices).

Accepted apiVersions are the ecosystem's own: ``scheduling.x-k8s.io/v1alpha1`` (scheduler-
plugins) and ``scheduling.sigs.k8s.io/v1alpha1`` (Koordinator) for PodGroup and ElasticQuota,
``kueue.x-k8s.io/v1beta1`` for the Kueue kinds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import fields as f
from kubesched.api import objects as api
from kubesched.api import quantity, workload
from kubesched.api.errors import InputError

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""The label that joins a Pod to its PodGroup (scheduler-plugins)."""
POD_GROUP_LABEL_KOORDINATOR = "pod-group.scheduling.sigs.k8s.io"
"""Koordinator's spelling of the same label."""
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
"""A Pod's LocalQueue (Kueue)."""
KUEUE_GATE = "kueue.x-k8s.io/admission"
"""The scheduling gate Kueue puts on a queued Pod and removes at admission."""
QUOTA_PARENT_LABEL = "quota.scheduling.koordinator.sh/parent"
"""An ElasticQuota's parent quota, by name (Koordinator's quota tree)."""
QUOTA_NAME_LABEL = "quota.scheduling.koordinator.sh/name"
"""A Pod's quota by name (without it, the quota of the Pod's namespace)."""
QUOTA_WEIGHT_ANNOTATION = "quota.scheduling.koordinator.sh/shared-weight"
"""An ElasticQuota's share of what its siblings leave idle (a positive integer, default 1)."""

POD_GROUP_VERSIONS = ("scheduling.x-k8s.io/v1alpha1", "scheduling.sigs.k8s.io/v1alpha1")
KUEUE_VERSIONS = ("kueue.x-k8s.io/v1beta1",)
QUEUEING_STRATEGIES = ("BestEffortFIFO", "StrictFIFO")
PREEMPTION_POLICIES = ("Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any")
BORROW_POLICIES = ("Never", "LowerPriority")


def pod_group_of(pod: api.Pod) -> str:
    """The Pod's PodGroup name ("" when it belongs to none)."""
    labels = pod.labels
    return labels.get(POD_GROUP_LABEL) or labels.get(POD_GROUP_LABEL_KOORDINATOR) or ""


@dataclass(frozen=True, slots=True)
class PodGroupSpec:
    """``PodGroup``: ``minMember`` Pods must be placeable together."""

    namespace: str
    name: str
    min_member: int
    min_resources: dict[str, int] | None = None
    schedule_timeout_seconds: int | None = None

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ElasticQuotaSpec:
    """``ElasticQuota``: guaranteed ``min`` and ceiling ``max`` per resource; ``parent`` names
    the parent quota ("" for a root); ``weight`` shares idle capacity among siblings."""

    name: str
    namespace: str
    min: dict[str, int]
    max: dict[str, int]
    parent: str = ""
    weight: int = 1


@dataclass(frozen=True, slots=True)
class FlavorQuota:
    """One resource of one flavor in a ClusterQueue; None limits mean unlimited."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    """``resourceGroups[]``: resources covered together, flavors tried in order."""

    covered: tuple[str, ...]
    flavors: tuple[tuple[str, dict[str, FlavorQuota]], ...]


@dataclass(frozen=True, slots=True)
class ClusterQueueSpec:
    """``ClusterQueue``: quota per flavor and resource, cohort, limits, ordering."""

    name: str
    resource_groups: tuple[ResourceGroup, ...]
    cohort: str = ""
    queueing_strategy: str = "BestEffortFIFO"
    weight_milli: int = 1000
    """``fairSharing.weight`` in thousandths (a quantity, default 1; 0 is allowed)."""
    reclaim_within_cohort: str = "Never"
    within_cluster_queue: str = "Never"
    borrow_within_cohort: str = "Never"
    """``preemption.borrowWithinCohort.policy``: ``Never`` or ``LowerPriority``."""
    borrow_max_priority_threshold: int | None = None
    """``preemption.borrowWithinCohort.maxPriorityThreshold``."""


@dataclass(frozen=True, slots=True)
class LocalQueueSpec:
    """``LocalQueue``: a namespace's door to a ClusterQueue."""

    namespace: str
    name: str
    cluster_queue: str


@dataclass(frozen=True, slots=True)
class ResourceFlavorSpec:
    """``ResourceFlavor``: node labels that Pods admitted to it are steered to."""

    name: str
    node_labels: dict[str, str] = field(default_factory=dict)


def _meta(obj: Mapping[str, Any], kind: str, versions: tuple[str, ...]) -> tuple[str, str, str]:
    meta = f.mapping(obj, "metadata", kind)
    name = f.required_string(meta, "name", f"{kind}.metadata")
    namespace = f.string(meta, "namespace", f"{kind}/{name}.metadata") or "default"
    version = str(obj.get("apiVersion", ""))
    if version not in versions:
        f.fail(f"{kind}/{name}.apiVersion", f"must be one of {', '.join(versions)}")
    return name, namespace, f"{kind}/{name}"


def _resources(obj: Mapping[str, Any], key: str, path: str) -> dict[str, int]:
    milli = f.resource_list(obj, key, path) or {}
    return {name: quantity.units_from_milli(name, m) for name, m in milli.items()}


def _amount(obj: Mapping[str, Any], key: str, path: str) -> int | None:
    if obj.get(key) is None:
        return None
    name = str(obj.get("name", ""))
    return _resources({key: {name: obj[key]}}, key, path)[name]


def parse_pod_group(obj: Mapping[str, Any]) -> PodGroupSpec:
    """A PodGroup; ``spec.minMember`` must be at least 1."""
    name, namespace, path = _meta(obj, "PodGroup", POD_GROUP_VERSIONS)
    spec = f.mapping(obj, "spec", path)
    sp = f"{path}.spec"
    min_member = f.integer(spec, "minMember", sp)
    if min_member is None or min_member < 1:
        f.fail(f"{sp}.minMember", "must be at least 1")
    timeout = f.integer(spec, "scheduleTimeoutSeconds", sp)
    if timeout is not None and timeout < 0:
        f.fail(f"{sp}.scheduleTimeoutSeconds", "must not be negative")
    min_res = _resources(spec, "minResources", sp) if spec.get("minResources") else None
    return PodGroupSpec(namespace, name, min_member, min_res, timeout)


def parse_elastic_quota(obj: Mapping[str, Any]) -> ElasticQuotaSpec:
    """An ElasticQuota; every ``min`` must be at most the ``max`` of the same resource."""
    name, namespace, path = _meta(obj, "ElasticQuota", POD_GROUP_VERSIONS)
    spec = f.mapping(obj, "spec", path)
    sp = f"{path}.spec"
    lo, hi = _resources(spec, "min", sp), _resources(spec, "max", sp)
    for res, amount in lo.items():
        if res in hi and amount > hi[res]:
            f.fail(f"{sp}.min[{res}]", f"must be less than or equal to spec.max[{res}]")
    meta = f.mapping(obj, "metadata", path)
    labels = f.string_map(meta, "labels", f"{path}.metadata")
    annotations = f.string_map(meta, "annotations", f"{path}.metadata")
    weight_text = annotations.get(QUOTA_WEIGHT_ANNOTATION, "1")
    if not weight_text.isdigit() or int(weight_text) < 1:
        f.fail(
            f"{path}.metadata.annotations[{QUOTA_WEIGHT_ANNOTATION}]", "must be a positive integer"
        )
    return ElasticQuotaSpec(
        name, namespace, lo, hi, labels.get(QUOTA_PARENT_LABEL, ""), int(weight_text)
    )


def parse_resource_flavor(obj: Mapping[str, Any]) -> ResourceFlavorSpec:
    """A ResourceFlavor (cluster-scoped)."""
    name, _ns, path = _meta(obj, "ResourceFlavor", KUEUE_VERSIONS)
    spec = f.mapping(obj, "spec", path)
    return ResourceFlavorSpec(name, f.string_map(spec, "nodeLabels", f"{path}.spec"))


def parse_local_queue(obj: Mapping[str, Any]) -> LocalQueueSpec:
    """A LocalQueue; ``spec.clusterQueue`` is required."""
    name, namespace, path = _meta(obj, "LocalQueue", KUEUE_VERSIONS)
    spec = f.mapping(obj, "spec", path)
    return LocalQueueSpec(namespace, name, f.required_string(spec, "clusterQueue", f"{path}.spec"))


def parse_cluster_queue(obj: Mapping[str, Any]) -> ClusterQueueSpec:
    """A ClusterQueue with its resource groups, cohort, limits and policies."""
    name, _ns, path = _meta(obj, "ClusterQueue", KUEUE_VERSIONS)
    spec = f.mapping(obj, "spec", path)
    sp = f"{path}.spec"
    groups = []
    for i, g in enumerate(f.seq(spec, "resourceGroups", sp)):
        gp = f"{sp}.resourceGroups[{i}]"
        g = f.as_mapping(g, gp)
        covered = f.string_list(g, "coveredResources", gp)
        flavors = []
        for j, fl in enumerate(f.seq(g, "flavors", gp)):
            fp = f"{gp}.flavors[{j}]"
            fl = f.as_mapping(fl, fp)
            quotas: dict[str, FlavorQuota] = {}
            for k, r in enumerate(f.seq(fl, "resources", fp)):
                rp = f"{fp}.resources[{k}]"
                r = f.as_mapping(r, rp)
                res = f.required_string(r, "name", rp)
                if res not in covered:
                    f.fail(f"{rp}.name", f"{res!r} is not in coveredResources")
                nominal = _amount(r, "nominalQuota", rp)
                if nominal is None:
                    f.fail(f"{rp}.nominalQuota", "required field is missing")
                lending = _amount(r, "lendingLimit", rp)
                if lending is not None and lending > nominal:
                    f.fail(f"{rp}.lendingLimit", "must be less than or equal to nominalQuota")
                quotas[res] = FlavorQuota(nominal, _amount(r, "borrowingLimit", rp), lending)
            flavors.append((f.required_string(fl, "name", fp), quotas))
        groups.append(ResourceGroup(covered, tuple(flavors)))
    preemption = f.mapping(spec, "preemption", sp)
    bwc = f.mapping(preemption, "borrowWithinCohort", f"{sp}.preemption")
    bwc_path = f"{sp}.preemption.borrowWithinCohort"
    fair = f.mapping(spec, "fairSharing", sp)
    weight = 1000
    if fair.get("weight") is not None:
        try:
            weight = quantity.milli_value(fair["weight"])
        except (ValueError, TypeError) as e:  # QuantityError is a ValueError
            f.fail(f"{sp}.fairSharing.weight", f"must be a quantity: {e}")
        if weight < 0:
            f.fail(f"{sp}.fairSharing.weight", "must be greater than or equal to 0")
    return ClusterQueueSpec(
        name,
        tuple(groups),
        cohort=f.string(spec, "cohort", sp),
        queueing_strategy=f.one_of(
            spec, "queueingStrategy", sp, QUEUEING_STRATEGIES, "BestEffortFIFO"
        ),
        weight_milli=weight,
        reclaim_within_cohort=f.one_of(
            preemption, "reclaimWithinCohort", f"{sp}.preemption", PREEMPTION_POLICIES, "Never"
        ),
        within_cluster_queue=f.one_of(
            preemption, "withinClusterQueue", f"{sp}.preemption", PREEMPTION_POLICIES, "Never"
        ),
        borrow_within_cohort=f.one_of(bwc, "policy", bwc_path, BORROW_POLICIES, "Never"),
        borrow_max_priority_threshold=f.integer(bwc, "maxPriorityThreshold", bwc_path),
    )


@dataclass(slots=True)
class JobObjects:
    """Every job-layer object of a snapshot or scenario, parsed."""

    pod_groups: dict[str, PodGroupSpec] = field(default_factory=dict)
    quotas: dict[str, ElasticQuotaSpec] = field(default_factory=dict)
    flavors: dict[str, ResourceFlavorSpec] = field(default_factory=dict)
    cluster_queues: dict[str, ClusterQueueSpec] = field(default_factory=dict)
    local_queues: dict[str, LocalQueueSpec] = field(default_factory=dict)

    def admission_enabled(self) -> bool:
        """Whether Kueue-style admission applies (some ClusterQueue is declared)."""
        return bool(self.cluster_queues)


_PARSERS: dict[str, Any] = {
    "PodGroup": (parse_pod_group, "pod_groups"),
    "ElasticQuota": (parse_elastic_quota, "quotas"),
    "ResourceFlavor": (parse_resource_flavor, "flavors"),
    "ClusterQueue": (parse_cluster_queue, "cluster_queues"),
    "LocalQueue": (parse_local_queue, "local_queues"),
}


def job_kind(obj: Mapping[str, Any]) -> str | None:
    """The object's kind when it is one of the job layer's, else None (a ``scheduling.k8s.io``
    PodGroup is kube-scheduler's own: :mod:`kubesched.api.workload`)."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in _PARSERS or workload.is_workload_api(obj):
        return None
    return kind


def parse_one(obj: Mapping[str, Any]) -> tuple[str, Any]:
    """``(kind, spec)`` of one job-layer object (see :func:`job_kind`)."""
    kind = job_kind(obj)
    if kind is None:
        raise InputError([("kind", f"not a job-layer kind: {obj.get('kind')!r}")])
    return kind, _PARSERS[kind][0](obj)


def spec_key(spec: Any) -> str:
    """Where a spec is filed in :class:`JobObjects`: ``ns/name`` for namespaced kinds."""
    if isinstance(spec, PodGroupSpec | LocalQueueSpec):
        return f"{spec.namespace}/{spec.name}"
    return str(spec.name)


def collect(objects: list[dict[str, Any]]) -> JobObjects:
    """Parse every job-layer object of ``objects`` (others are skipped); all problems are
    reported together."""
    out = JobObjects()
    problems: list[tuple[str, str]] = []
    for obj in objects:
        if job_kind(obj) is None:
            continue
        try:
            kind, spec = parse_one(obj)
        except InputError as e:
            problems.extend(e.problems)
            continue
        getattr(out, _PARSERS[kind][1])[spec_key(spec)] = spec
    if problems:
        raise InputError(problems)
    return out
