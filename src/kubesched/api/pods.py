"""Parse a Pod manifest (a dict from YAML/JSON) into :class:`kubesched.api.objects.Pod`.

Every problem raises :class:`~kubesched.api.errors.InputError` with the full field path
(``items[3].spec.containers[0].resources.requests.cpu: quantities must match ...``).

What the API server would have done to a Pod before the scheduler sees it is done here too:
a container's missing request defaults to its limit, pod-level requests are defaulted from
pod-level limits, ``hostNetwork`` Pods get ``hostPort = containerPort``, ``schedulerName``
defaults to ``default-scheduler``, a missing ``uid`` becomes a deterministic UUID of
``namespace/name``.  ``priority`` is ``spec.priority`` or 0 here; PriorityClass resolution is
:func:`kubesched.api.parse.resolve_priorities`.

``images`` lists init-container images, then container images (ImageLocality scores both).
``host_ports`` lists sidecar (restartable init container) ports, then container ports
(upstream ``GetHostPorts``).  ``matchLabelKeys`` / ``mismatchLabelKeys`` are kept as written;
merging them into selectors is the plugins' job.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from kubesched.api import fields as f
from kubesched.api import nodefeatures, podclaims, podresources, podvolumes
from kubesched.api import objects as api
from kubesched.api.fields import Obj, fail, join

_UID_NAMESPACE = uuid.UUID("5c4e1f0a-7d1b-4c0e-9a57-6b7375626573")
_PROTOCOLS = ("TCP", "UDP", "SCTP")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_POLICIES = ("Honor", "Ignore")
_TOLERATION_OPS = ("Equal", "Exists", "Gt", "Lt")
_TOLERATION_EFFECTS = ("", *f.TAINT_EFFECTS)


def deterministic_uid(kind: str, namespace: str, name: str) -> str:
    """A stable UUID for an object that came without ``metadata.uid``."""
    return str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{namespace}/{name}"))


def parse_timestamp(value: object, path: str) -> float | None:
    """RFC3339 (``2026-11-20T08:00:00Z``) to epoch seconds."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    if not isinstance(value, str):
        fail(path, f"must be an RFC3339 time string, got {value!r}")
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        fail(path, f"must be an RFC3339 time, got {value!r}")


def parse_pod(obj: dict[str, Any], path: str = "") -> api.Pod:
    """A Pod from its manifest; ``path`` prefixes every error's field path."""
    pod = f.as_mapping(obj, path)
    meta_path = join(path, "metadata")
    meta = f.mapping(pod, "metadata", path)
    name = f.required_string(meta, "name", meta_path)
    namespace = f.string(meta, "namespace", meta_path) or "default"
    spec_path = join(path, "spec")
    spec = f.mapping(pod, "spec", path)
    host_network = f.boolean(spec, "hostNetwork", spec_path)

    containers_raw = f.seq(spec, "containers", spec_path)
    if not containers_raw:
        fail(join(spec_path, "containers"), "Required value")
    status = f.mapping(pod, "status", path)
    resized = _resize_status(status, join(path, "status"))
    containers: list[podresources.Millis] = []
    inits: list[tuple[podresources.Millis, bool]] = []
    spec_containers: list[podresources.Millis] = []  # their spec's requests, no resize status
    spec_inits: list[tuple[podresources.Millis, bool]] = []
    images: list[str] = []
    sidecar_ports: list[api.HostPort] = []
    ports: list[api.HostPort] = []
    for i, c in enumerate(f.seq(spec, "initContainers", spec_path)):
        cpath = join(join(spec_path, "initContainers"), i)
        c = f.as_mapping(c, cpath)
        restartable = f.string(c, "restartPolicy", cpath) == "Always"
        requests = _container_requests(c, cpath)
        spec_inits.append((requests, restartable))
        if restartable:
            requests = _with_status(requests, c, resized)
        inits.append((requests, restartable))
        images.append(f.string(c, "image", cpath))
        if restartable:
            sidecar_ports.extend(read_host_ports(c, cpath, host_network))
    for i, c in enumerate(containers_raw):
        cpath = join(join(spec_path, "containers"), i)
        c = f.as_mapping(c, cpath)
        own = _container_requests(c, cpath)
        spec_containers.append(own)
        containers.append(_with_status(own, c, resized))
        images.append(f.string(c, "image", cpath))
        ports.extend(read_host_ports(c, cpath, host_network))

    requests, nonzero, fit_score, resize_totals, pod_level_resize = _pod_resources(
        spec, spec_path, resized, containers, inits, (spec_containers, spec_inits)
    )

    affinity_path = join(spec_path, "affinity")
    affinity = f.mapping(spec, "affinity", spec_path)
    priority = f.int32(spec, "priority", spec_path)
    grace = f.integer(spec, "terminationGracePeriodSeconds", spec_path)
    return new_pod(
        name=name,
        namespace=namespace,
        uid=f.string(meta, "uid", meta_path),
        labels=f.string_map(meta, "labels", meta_path),
        annotations=f.string_map(meta, "annotations", meta_path),
        owner_references=_owner_references(meta, meta_path),
        creation_timestamp=parse_timestamp(
            meta.get("creationTimestamp"), join(meta_path, "creationTimestamp")
        ),
        scheduler_name=f.string(spec, "schedulerName", spec_path),
        priority=priority,
        priority_class_name=f.string(spec, "priorityClassName", spec_path),
        preemption_policy=f.one_of(
            spec, "preemptionPolicy", spec_path, PREEMPTION_POLICIES, "PreemptLowerPriority"
        ),
        node_name=f.string(spec, "nodeName", spec_path),
        node_selector=f.string_map(spec, "nodeSelector", spec_path),
        node_affinity=read_node_affinity(affinity, affinity_path),
        pod_affinity=read_pod_affinity(affinity, "podAffinity", affinity_path),
        pod_anti_affinity=read_pod_affinity(affinity, "podAntiAffinity", affinity_path),
        tolerations=read_tolerations(spec, spec_path),
        topology_spread_constraints=_spread_constraints(spec, spec_path),
        requests=requests,
        nonzero_requests=nonzero,
        fit_score_requests=fit_score,
        resize_totals=resize_totals,
        pod_level_resize=pod_level_resize,
        resize_deferred=resize_pending(status, join(path, "status")) == "Deferred",
        host_ports=(*sidecar_ports, *ports),
        images=tuple(images),
        image_volumes=_image_volumes(spec, spec_path),
        scheduling_gates=_scheduling_gates(spec, spec_path),
        workload_ref=_workload_ref(spec, spec_path),
        scheduling_group=_scheduling_group(spec, spec_path),
        resource_claims=podclaims.pod_resource_claims(spec, spec_path),
        resource_claim_statuses=podclaims.pod_claim_statuses(status, join(path, "status")),
        required_features=nodefeatures.required_features(spec, spec_path, host_network),
        volumes=podvolumes.read_volumes(spec, spec_path),
        termination_grace_period_seconds=grace,
        phase=f.string(status, "phase", join(path, "status")),
        nominated_node_name=f.string(status, "nominatedNodeName", join(path, "status")),
        start_time=parse_timestamp(
            status.get("startTime"), join(join(path, "status"), "startTime")
        ),
        deletion_timestamp=parse_timestamp(
            meta.get("deletionTimestamp"), join(meta_path, "deletionTimestamp")
        ),
        raw=obj,
    )


def new_pod(
    *,
    name: str,
    namespace: str,
    uid: str,
    labels: dict[str, str],
    annotations: dict[str, str],
    owner_references: tuple[api.OwnerReference, ...],
    creation_timestamp: float | None,
    scheduler_name: str,
    priority: int | None,
    priority_class_name: str,
    preemption_policy: str,
    node_name: str,
    node_selector: dict[str, str],
    node_affinity: api.NodeAffinity | None,
    pod_affinity: api.PodAffinity | None,
    pod_anti_affinity: api.PodAffinity | None,
    tolerations: tuple[api.Toleration, ...],
    requests: api.Resources,
    nonzero_requests: api.Resources,
    host_ports: tuple[api.HostPort, ...],
    images: tuple[str, ...],
    termination_grace_period_seconds: int | None,
    phase: str,
    nominated_node_name: str,
    start_time: float | None,
    deletion_timestamp: float | None,
    raw: Any,
    topology_spread_constraints: tuple[api.TopologySpreadConstraint, ...] = (),
    fit_score_requests: api.Resources | None = None,
    scheduling_gates: tuple[str, ...] = (),
    workload_ref: api.WorkloadRef | None = None,
    scheduling_group: str | None = None,
    resource_claims: tuple[tuple[str, str, str], ...] = (),
    resource_claim_statuses: tuple[tuple[str, str], ...] = (),
    required_features: tuple[str, ...] = (),
    image_volumes: tuple[str, ...] = (),
    volumes: tuple[api.Volume, ...] = (),
    resize_totals: tuple[api.Resources, api.Resources] | None = None,
    pod_level_resize: api.PodLevelResize | None = None,
    resize_deferred: bool = False,
) -> api.Pod:
    """The one place a parsed :class:`~kubesched.api.objects.Pod` is built (by the full parse
    here and the quick one, :mod:`kubesched.api.podquick`), from the values read, with the
    API server's defaults for the empty ones: namespace ``default``, a deterministic uid,
    ``default-scheduler``, priority 0 (until PriorityClass resolution), phase ``Pending``.
    ``raw`` is the manifest, or a :class:`~kubesched.api.objects.DeferredRaw` of it.

    Every slot is assigned here in straight-line code rather than through ``Pod(...)``,
    whose matching of 32 keywords cost as much again per Pod of a large snapshot; a field
    added to :class:`~kubesched.api.objects.Pod` is added here too (``test_podquick``
    checks that a parsed Pod has every slot set)."""
    namespace = namespace or "default"
    pod: api.Pod = _new(api.Pod)
    pod.name = name
    pod.namespace = namespace
    pod.uid = uid or deterministic_uid("Pod", namespace, name)
    pod.labels = labels
    pod.annotations = annotations
    pod.owner_references = owner_references
    pod.creation_timestamp = creation_timestamp
    pod.scheduler_name = scheduler_name or api.DEFAULT_SCHEDULER_NAME
    pod.priority = priority if priority is not None else 0
    pod.priority_class_name = priority_class_name
    pod.preemption_policy = preemption_policy
    pod.node_name = node_name
    pod.node_selector = node_selector
    pod.node_affinity = node_affinity
    pod.pod_affinity = pod_affinity
    pod.pod_anti_affinity = pod_anti_affinity
    pod.tolerations = tolerations
    pod.topology_spread_constraints = topology_spread_constraints
    pod.requests = requests
    pod.nonzero_requests = nonzero_requests
    pod.fit_score_requests = fit_score_requests
    pod.resize_totals = resize_totals
    pod.pod_level_resize = pod_level_resize
    pod.resize_deferred = resize_deferred
    pod.host_ports = host_ports
    pod.images = images
    pod.image_volumes = image_volumes
    pod.scheduling_gates = scheduling_gates
    pod.workload_ref = workload_ref
    pod.scheduling_group = scheduling_group
    pod.termination_grace_period_seconds = termination_grace_period_seconds
    pod.phase = phase or "Pending"
    pod.nominated_node_name = nominated_node_name
    pod.start_time = start_time
    pod.deletion_timestamp = deletion_timestamp
    pod.resource_claims = resource_claims
    pod.resource_claim_statuses = resource_claim_statuses
    pod.required_features = required_features
    pod.volumes = volumes
    pod.raw = raw
    pod.key = f"{namespace}/{name}"
    return pod


_new = object.__new__


_PodResources = tuple[
    api.Resources,
    api.Resources,
    api.Resources | None,
    tuple[api.Resources, api.Resources] | None,
    api.PodLevelResize | None,
]
"""``(requests, nonzero_requests, fit_score_requests, resize_totals, pod_level_resize)`` of a
Pod."""


def _pod_resources(
    spec: Obj,
    spec_path: str,
    resized: _Resized,
    containers: list[podresources.Millis],
    inits: list[tuple[podresources.Millis, bool]],
    spec_only: tuple[list[podresources.Millis], list[tuple[podresources.Millis, bool]]] | None,
) -> _PodResources:
    """What a Pod requests (``containers`` and ``inits``: the containers' own requests, a
    resize's status counted), its pod-level ``spec.resources`` counted only with
    ``spec_only`` (the containers' and init containers' spec requests, which the API
    server's defaulting of pod-level requests from pod-level limits sums, a resize status
    not counted: ``defaultPodRequests``); None for the PodLevelResources gate off (upstream's
    every sum skips them, ``SkipPodLevelResources``)."""
    overhead = f.resource_list(spec, "overhead", spec_path)
    pod_level = v137_pod_level = None
    if spec_only is not None:
        pod_res_path = join(spec_path, "resources")
        pod_res = f.mapping(spec, "resources", spec_path)
        spec_requests = f.resource_list(pod_res, "requests", pod_res_path)
        spec_limits = f.resource_list(pod_res, "limits", pod_res_path)
        pod_level = podresources.default_pod_level_requests(spec_requests, spec_limits, *spec_only)
        v137_pod_level = pod_level
        if resized[0] or resized[2] is not None:
            v137_pod_level = podresources.default_pod_level_requests(
                spec_requests, spec_limits, *spec_only, fix_defaulting=True
            )
    requests, nonzero = podresources.effective_requests(containers, inits, overhead, pod_level)
    resize_totals = None
    if resized[0]:
        resize_totals = _resize_totals(spec, spec_path, resized, overhead, v137_pod_level, False)
    pod_level_resize = None
    if resized[2] is not None:
        pod_level_resize = api.PodLevelResize(
            _pod_level_status(containers, inits, resized, overhead, pod_level),
            _resize_totals(spec, spec_path, resized, overhead, v137_pod_level, True),
        )
    fit_score = podresources.fit_score_requests(containers, inits, overhead, pod_level)
    return requests, nonzero, fit_score, resize_totals, pod_level_resize


def has_pod_level_resources(pod: api.Pod) -> bool:
    """Whether ``pod``'s manifest sets pod-level ``spec.resources``."""
    spec = pod.raw.get("spec") if isinstance(pod.raw, dict) else None
    return isinstance(spec, dict) and bool(spec.get("resources"))


def skip_pod_level_resources(pod: api.Pod) -> None:
    """Count ``pod`` (changed in place) as upstream does with PodLevelResources off: its
    containers' requests only, its pod-level ``spec.resources`` skipped (the manifest is
    read again; a Pod without them is left as it is)."""
    if not has_pod_level_resources(pod):
        return
    raw = pod.raw
    spec = f.mapping(raw, "spec", "")
    resized = _resize_status(f.mapping(raw, "status", ""), "status")
    containers: list[podresources.Millis] = []
    inits: list[tuple[podresources.Millis, bool]] = []
    for i, c in enumerate(f.seq(spec, "initContainers", "spec")):
        cpath = join("spec.initContainers", i)
        c = f.as_mapping(c, cpath)
        restartable = f.string(c, "restartPolicy", cpath) == "Always"
        requests = _container_requests(c, cpath)
        inits.append((_with_status(requests, c, resized) if restartable else requests, restartable))
    for i, c in enumerate(f.seq(spec, "containers", "spec")):
        cpath = join("spec.containers", i)
        c = f.as_mapping(c, cpath)
        containers.append(_with_status(_container_requests(c, cpath), c, resized))
    (
        pod.requests,
        pod.nonzero_requests,
        pod.fit_score_requests,
        pod.resize_totals,
        pod.pod_level_resize,
    ) = _pod_resources(spec, "spec", resized, containers, inits, None)


_Reported = tuple[podresources.Millis | None, podresources.Millis | None]
"""``(resources.requests, allocatedResources)`` a status reports (None: absent)."""

_Resized = tuple[dict[str, _Reported], bool, _Reported | None]
"""Per container name with ``status...resources`` set: what it reports; whether the resize
is infeasible (condition ``PodResizePending``, reason ``Infeasible``); and what the Pod's
own status reports (``status.resources.requests``, ``status.allocatedResources``; None
without ``status.resources``, as upstream reads them only with it)."""


def _resize_status(status: Obj, path: str) -> _Resized:
    """What an in-place resize reports (``status.containerStatuses[]`` and
    ``initContainerStatuses[]``: ``resources.requests`` and ``allocatedResources``; the
    Pod's ``status.resources.requests`` and ``status.allocatedResources``)."""
    by_name: dict[str, tuple[podresources.Millis | None, podresources.Millis | None]] = {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for i, cs in enumerate(f.seq(status, key, path)):
            cpath = join(join(path, key), i)
            cs = f.as_mapping(cs, cpath)
            if cs.get("resources") is None:
                continue
            res = f.mapping(cs, "resources", cpath)
            by_name[f.string(cs, "name", cpath)] = (
                f.resource_list(res, "requests", join(cpath, "resources")),
                f.resource_list(cs, "allocatedResources", cpath),
            )
    infeasible = resize_pending(status, path) == "Infeasible"
    pod_status = None
    if status.get("resources") is not None:
        res = f.mapping(status, "resources", path)
        pod_status = (
            f.resource_list(res, "requests", join(path, "resources")),
            f.resource_list(status, "allocatedResources", path),
        )
    return by_name, infeasible, pod_status


def resize_pending(status: Obj, path: str) -> str:
    """The reason of the first ``PodResizePending`` condition of ``status`` (``Deferred``,
    ``Infeasible``; "" without one): upstream reads the first such condition only."""
    for i, cond in enumerate(f.seq(status, "conditions", path)):
        cpath = join(join(path, "conditions"), i)
        cond = f.as_mapping(cond, cpath)
        if f.string(cond, "type", cpath) == "PodResizePending":
            return f.string(cond, "reason", cpath)
    return ""


def _with_status(requests: podresources.Millis, c: Obj, resized: _Resized) -> podresources.Millis:
    """A running container's request during an in-place resize (upstream
    ``determineContainerReqs``, InPlacePodVerticalScaling on in v1.34): the largest of the
    spec's, the status's and the allocated request, per resource; the spec's left out when
    the resize is infeasible."""
    by_name, infeasible, _ = resized
    found = by_name.get(str(c.get("name") or "")) if by_name else None
    if found is None:
        return requests
    out: podresources.Millis = {} if infeasible else dict(requests)
    for source in found:
        for name, amount in (source or {}).items():
            if name not in out or amount > out[name]:
                out[name] = amount
    return out


def _pod_level_status(
    containers: list[podresources.Millis],
    inits: list[tuple[podresources.Millis, bool]],
    resized: _Resized,
    overhead: podresources.Millis | None,
    pod_level: podresources.Millis | None,
) -> tuple[api.Resources, api.Resources]:
    """``(requests, nonzero_requests)`` as v1.35-v1.36 count a Pod whose own status reports
    resources with InPlacePodLevelResourcesVerticalScaling on (``PodRequests``): the
    containers as ``requests`` counts them (``containers``, ``inits``: each its largest of
    spec, status and allocated), and each resource the pod-level ``spec.resources.requests``
    names as the largest of that request, ``status.resources.requests`` and
    ``status.allocatedResources`` (the request left out when the resize is ``Infeasible``;
    0 when none of them names it: upstream reads a missing entry as a zero quantity)."""
    _, infeasible, pod_status = resized
    status, allocated = pod_status or (None, None)
    is_set = bool(pod_level) and any(podresources.is_pod_level_resource(n) for n in pod_level or ())
    if not is_set or pod_level is None:
        return podresources.effective_requests(containers, inits, overhead, pod_level)
    largest = _largest({} if infeasible else pod_level, status, allocated)
    effective = {name: largest.get(name, 0) for name in pod_level}
    return podresources.largest_requests([(containers, inits)], (), overhead, effective, True)


def _largest(*lists: podresources.Millis | None) -> podresources.Millis:
    """The largest amount of each resource any of ``lists`` names (upstream ``max``)."""
    out: podresources.Millis = {}
    for amounts in lists:
        for name, amount in (amounts or {}).items():
            if name not in out or amount > out[name]:
                out[name] = amount
    return out


def _resize_totals(
    spec: Obj,
    spec_path: str,
    resized: _Resized,
    overhead: podresources.Millis | None,
    pod_level: podresources.Millis | None,
    pod_level_status: bool,
) -> tuple[api.Resources, api.Resources]:
    """``(requests, nonzero_requests)`` of a resizing Pod as v1.37's component-helpers count
    it (``AggregateContainerRequests`` with ``UseStatusResources``): the largest, per
    resource, of three totals each summed with the init/sidecar rule: the spec's, the
    actuated (a container's ``status...resources.requests``, else its allocated, else its
    spec request) and the allocated (``allocatedResources``, else the spec request); with
    the resize ``Infeasible`` the spec's total and the spec fallbacks are left out.  Every
    container, init containers included, counts its status.

    With ``pod_level_status`` (InPlacePodLevelResourcesVerticalScaling on) the Pod's own
    ``status.resources.requests`` and ``status.allocatedResources``, when both are set,
    take the place of the actuated and allocated totals; and the pod-level requests are
    the largest of ``spec.resources.requests`` (left out when ``Infeasible``) and those
    two, for every resource any of them names (``effectivePodLevelResources``)."""
    by_name, infeasible, pod_status = resized
    status_total, allocated_total = pod_status or (None, None)
    from_pod = pod_level_status and status_total is not None and allocated_total is not None
    fallback: podresources.Millis | None
    ways: list[tuple[list[podresources.Millis], list[tuple[podresources.Millis, bool]]]]
    ways = [([], []), ([], []), ([], [])]  # spec, actuated, allocated
    for key in ("initContainers", "containers"):
        for i, c in enumerate(f.seq(spec, key, spec_path)):
            cpath = join(join(spec_path, key), i)
            c = f.as_mapping(c, cpath)
            own = _container_requests(c, cpath)
            status, allocated = by_name.get(str(c.get("name") or ""), (None, None))
            fallback = None if infeasible else own
            actuated = status if status is not None else allocated
            if actuated is None:
                actuated = fallback
            if allocated is None:
                allocated = fallback
            per = (own, actuated or {}, allocated or {})
            for (plain, inits), amounts in zip(ways, per, strict=True):
                if key == "containers":
                    plain.append(amounts)
                else:
                    inits.append((amounts, f.string(c, "restartPolicy", cpath) == "Always"))
    pod_totals: list[podresources.Millis] = []
    if from_pod:
        pod_totals = [status_total or {}, allocated_total or {}]
        ways = ways[:1]
    if infeasible:
        ways = ways[1:]
    is_set = bool(pod_level) and any(podresources.is_pod_level_resource(n) for n in pod_level or ())
    effective = pod_level
    if is_set and pod_level_status and pod_status is not None:
        effective = _largest(None if infeasible else pod_level, status_total, allocated_total)
    return podresources.largest_requests(ways, pod_totals, overhead, effective, is_set)


def _container_requests(c: Obj, path: str) -> podresources.Millis:
    res_path = join(path, "resources")
    res = f.mapping(c, "resources", path)
    if not res:
        return {}
    return podresources.default_container_requests(
        f.resource_list(res, "requests", res_path), f.resource_list(res, "limits", res_path)
    )


def read_host_ports(c: Obj, path: str, host_network: bool) -> list[api.HostPort]:
    out = []
    for i, p in enumerate(f.seq(c, "ports", path)):
        ppath = join(join(path, "ports"), i)
        p = f.as_mapping(p, ppath)
        host_port = f.integer(p, "hostPort", ppath) or 0
        if host_network and host_port == 0:
            host_port = f.integer(p, "containerPort", ppath) or 0
        if host_port < 0 or host_port > 65535:
            fail(join(ppath, "hostPort"), "must be between 1 and 65535, inclusive")
        if host_port > 0:
            protocol = f.one_of(p, "protocol", ppath, _PROTOCOLS, "TCP")
            host_ip = f.string(p, "hostIP", ppath) or "0.0.0.0"
            out.append(api.HostPort(host_port, protocol, host_ip))
    return out


def _owner_references(meta: Obj, path: str) -> tuple[api.OwnerReference, ...]:
    out = []
    for i, ref in enumerate(f.seq(meta, "ownerReferences", path)):
        rpath = join(join(path, "ownerReferences"), i)
        ref = f.as_mapping(ref, rpath)
        out.append(
            api.OwnerReference(
                kind=f.string(ref, "kind", rpath),
                name=f.string(ref, "name", rpath),
                api_version=f.string(ref, "apiVersion", rpath),
                controller=f.boolean(ref, "controller", rpath),
                uid=f.string(ref, "uid", rpath),
            )
        )
    return tuple(out)


def read_node_affinity(affinity: Obj, path: str) -> api.NodeAffinity | None:
    na_path = join(path, "nodeAffinity")
    na = f.mapping(affinity, "nodeAffinity", path)
    if not na:
        return None
    required: tuple[api.NodeSelectorTerm, ...] | None = None
    req_path = join(na_path, "requiredDuringSchedulingIgnoredDuringExecution")
    req = f.mapping(na, "requiredDuringSchedulingIgnoredDuringExecution", na_path)
    if na.get("requiredDuringSchedulingIgnoredDuringExecution") is not None:
        terms = f.seq(req, "nodeSelectorTerms", req_path)
        if not terms:
            fail(join(req_path, "nodeSelectorTerms"), "must have at least one node selector term")
        required = tuple(
            f.node_selector_term(f.as_mapping(t, p), p)
            for i, t in enumerate(terms)
            for p in (join(join(req_path, "nodeSelectorTerms"), i),)
        )
    preferred = []
    pref_key = "preferredDuringSchedulingIgnoredDuringExecution"
    for i, item in enumerate(f.seq(na, pref_key, na_path)):
        ipath = join(join(na_path, pref_key), i)
        item = f.as_mapping(item, ipath)
        weight = _weight(item, ipath)
        term_path = join(ipath, "preference")
        term = f.node_selector_term(f.mapping(item, "preference", ipath), term_path)
        preferred.append(api.PreferredSchedulingTerm(weight, term))
    if required is None and not preferred:
        return None
    return api.NodeAffinity(required, tuple(preferred))


def _weight(item: Obj, path: str) -> int:
    weight = f.integer(item, "weight", path)
    if weight is None or not 1 <= weight <= 100:
        fail(join(path, "weight"), "must be in the range 1-100")
    return weight


def _pod_affinity_term(term: Obj, path: str) -> api.PodAffinityTerm:
    return api.PodAffinityTerm(
        topology_key=f.required_string(term, "topologyKey", path),
        label_selector=f.label_selector(term, "labelSelector", path),
        namespaces=f.string_list(term, "namespaces", path),
        namespace_selector=f.label_selector(term, "namespaceSelector", path),
        match_label_keys=f.string_list(term, "matchLabelKeys", path),
        mismatch_label_keys=f.string_list(term, "mismatchLabelKeys", path),
    )


def read_pod_affinity(affinity: Obj, key: str, path: str) -> api.PodAffinity | None:
    pa_path = join(path, key)
    pa = f.mapping(affinity, key, path)
    if not pa:
        return None
    req_key = "requiredDuringSchedulingIgnoredDuringExecution"
    required = []
    for i, t in enumerate(f.seq(pa, req_key, pa_path)):
        tpath = join(join(pa_path, req_key), i)
        required.append(_pod_affinity_term(f.as_mapping(t, tpath), tpath))
    pref_key = "preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for i, item in enumerate(f.seq(pa, pref_key, pa_path)):
        ipath = join(join(pa_path, pref_key), i)
        item = f.as_mapping(item, ipath)
        weight = _weight(item, ipath)
        tpath = join(ipath, "podAffinityTerm")
        term = _pod_affinity_term(f.mapping(item, "podAffinityTerm", ipath), tpath)
        preferred.append(api.WeightedPodAffinityTerm(weight, term))
    if not required and not preferred:
        return None
    return api.PodAffinity(tuple(required), tuple(preferred))


def read_tolerations(spec: Obj, path: str) -> tuple[api.Toleration, ...]:
    out = []
    for i, t in enumerate(f.seq(spec, "tolerations", path)):
        tpath = join(join(path, "tolerations"), i)
        t = f.as_mapping(t, tpath)
        key = f.string(t, "key", tpath)
        op = f.one_of(t, "operator", tpath, _TOLERATION_OPS, "Equal")
        value = f.string(t, "value", tpath)
        effect = f.one_of(t, "effect", tpath, _TOLERATION_EFFECTS, "")
        f.integer(t, "tolerationSeconds", tpath)  # int64: checked, not used in scheduling
        if op == "Exists" and value:
            fail(join(tpath, "operator"), "value must be empty when `operator` is 'Exists'")
        if op in ("Gt", "Lt") and api.decimal_int64(value) is None:
            # As the API server validates them (TaintTolerationComparisonOperators on, v1.35+;
            # with the gate off it refuses the operator, yet a Pod stored meanwhile keeps it,
            # and the scheduler then lets it tolerate nothing: Toleration.tolerates).
            fail(join(tpath, "value"), "must be a valid decimal integer in canonical form")
        if not key and op != "Exists":
            fail(
                join(tpath, "operator"),
                'operator must be Exists when `key` is empty, which means "match all values '
                'and all keys"',
            )
        out.append(api.Toleration(key, op, value, effect))
    return tuple(out)


def _spread_constraints(spec: Obj, path: str) -> tuple[api.TopologySpreadConstraint, ...]:
    out = []
    key = "topologySpreadConstraints"
    for i, c in enumerate(f.seq(spec, key, path)):
        cpath = join(join(path, key), i)
        c = f.as_mapping(c, cpath)
        max_skew = f.int32(c, "maxSkew", cpath)
        if max_skew is None or max_skew <= 0:
            fail(join(cpath, "maxSkew"), "must be greater than zero")
        when = string_required_one_of(c, "whenUnsatisfiable", cpath, _WHEN_UNSATISFIABLE)
        min_domains = f.int32(c, "minDomains", cpath)
        if min_domains is not None:
            if min_domains <= 0:
                fail(join(cpath, "minDomains"), "must be greater than zero")
            if when != "DoNotSchedule":
                fail(
                    join(cpath, "minDomains"),
                    "can only use minDomains if whenUnsatisfiable=DoNotSchedule",
                )
        out.append(
            api.TopologySpreadConstraint(
                max_skew=max_skew,
                topology_key=f.required_string(c, "topologyKey", cpath),
                when_unsatisfiable=when,
                label_selector=f.label_selector(c, "labelSelector", cpath),
                min_domains=min_domains,
                node_affinity_policy=_optional_one_of(c, "nodeAffinityPolicy", cpath),
                node_taints_policy=_optional_one_of(c, "nodeTaintsPolicy", cpath),
                match_label_keys=f.string_list(c, "matchLabelKeys", cpath),
            )
        )
    return tuple(out)


def string_required_one_of(obj: Obj, key: str, path: str, allowed: tuple[str, ...]) -> str:
    """A required string restricted to ``allowed``."""
    if not f.string(obj, key, path):
        fail(join(path, key), "Required value")
    return f.one_of(obj, key, path, allowed, "")


def _optional_one_of(obj: Obj, key: str, path: str) -> str | None:
    if obj.get(key) is None:
        return None
    return f.one_of(obj, key, path, _POLICIES, "")


def _image_volumes(spec: Obj, path: str) -> tuple[str, ...]:
    """``spec.volumes[].image.reference`` of the image volumes, in order.  Only image volumes
    are checked (the rest of ``spec.volumes`` is not read, as before image volumes counted)."""
    volumes = spec.get("volumes")
    if not isinstance(volumes, list):
        return ()
    out: list[str] = []
    for i, volume in enumerate(volumes):
        if isinstance(volume, dict) and volume.get("image") is not None:
            vpath = join(join(path, "volumes"), i)
            image = f.mapping(volume, "image", vpath)
            out.append(f.string(image, "reference", join(vpath, "image")))
    return tuple(out)


def _scheduling_gates(spec: Obj, path: str) -> tuple[str, ...]:
    out = []
    for i, g in enumerate(f.seq(spec, "schedulingGates", path)):
        gpath = join(join(path, "schedulingGates"), i)
        out.append(f.required_string(f.as_mapping(g, gpath), "name", gpath))
    return tuple(out)


def _workload_ref(spec: Obj, path: str) -> api.WorkloadRef | None:
    """v1.35's ``spec.workloadRef`` (the names are checked against the release's rules by
    :func:`kubesched.api.workload.check_pod_refs`)."""
    if spec.get("workloadRef") is None:
        return None
    rpath = join(path, "workloadRef")
    ref = f.mapping(spec, "workloadRef", path)
    return api.WorkloadRef(
        f.string(ref, "name", rpath),
        f.string(ref, "podGroup", rpath),
        f.string(ref, "podGroupReplicaKey", rpath),
    )


def _scheduling_group(spec: Obj, path: str) -> str | None:
    """v1.36+ ``spec.schedulingGroup.podGroupName`` (None: no ``schedulingGroup``; empty: no
    name, which the release's validation refuses: :func:`kubesched.api.workload.check_pod_refs`)."""
    if spec.get("schedulingGroup") is None:
        return None
    group = f.mapping(spec, "schedulingGroup", path)
    return f.string(group, "podGroupName", join(path, "schedulingGroup"))
