"""The quick path of Pod parsing, for snapshots and LISTs of many Pods.

:func:`kubesched.api.pods.parse_pod` builds a field path for every section it reads, so that
any error names its place; over the 200,000 Pods of a large ``kubectl`` snapshot that string
work is a third of the parse.  :func:`quick_pod` reads the common shape of a Pod (metadata,
containers with requests, limits and ports, node name, priority, tolerations, affinity,
status) with the same readers but no paths, and gives up -- returns None -- on anything
else: a section it does not handle (init containers, overhead, pod-level resources, spread
constraints, scheduling gates, resource claims, ``hostNetwork: true``, container statuses
reporting ``resources``) or any invalid value.
:func:`parse_pod` then parses the Pod the full way, which reports the error with its path.
So the two give the same :class:`~kubesched.api.objects.Pod` (tests check this on generated
Pods, valid and not) and only the speed differs.

Owner references, timestamps, containers, tolerations and affinity repeat across a
snapshot's Pods (a template's Pods have equal ones): each distinct value of those sections
is read once, remembered by its encoding (:data:`_key`), and its results shared -- frozen
values and tuples of them (owner references, tolerations, affinity, images, host ports) and
the requests dicts (read, never changed in place); timestamps are remembered by their text.
A remembered result is taken only for a value that is equal to the one read, by its
encoding and in Python both (:func:`_recalled`): either alone conflates values the full
parse tells apart, so a Pod's acceptance never depends on the Pods read before it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from kubesched.api import fields as f
from kubesched.api import objects as api
from kubesched.api import podresources
from kubesched.api import pods as full
from kubesched.api.errors import InputError

__all__ = ["parse_pod", "quick_pod"]

_GIVE_UP_SPEC = frozenset(
    (
        "initContainers",
        "overhead",
        "resources",
        "topologySpreadConstraints",
        "schedulingGates",
        "resourceClaims",
    )
)
"""Spec sections the quick path leaves to the full parser (when present, even null)."""

_SLOTS = (
    *("name", "namespace", "uid", "labels", "annotations", "owner_references"),
    *("creation_timestamp", "scheduler_name", "priority", "priority_class_name"),
    *("preemption_policy", "node_name", "node_selector", "node_affinity", "pod_affinity"),
    *("pod_anti_affinity", "tolerations", "topology_spread_constraints", "requests"),
    *("nonzero_requests", "fit_score_requests", "host_ports", "images", "scheduling_gates"),
    *("termination_grace_period_seconds", "phase", "nominated_node_name", "start_time"),
    *("deletion_timestamp", "resource_claims", "resource_claim_statuses", "raw", "key"),
)
"""The slots :func:`_quick` fills, in the order it gives them to
:func:`~kubesched.api.objects.pod_from_slots` (checked against ``Pod.__slots__`` on import:
a field added to ``Pod`` must be added here too)."""
if api.Pod.__slots__ != _SLOTS:  # pragma: no cover - a programming error, caught by any test
    raise ImportError(f"podquick's slots are not Pod's: {api.Pod.__slots__}")

MEMO_LIMIT = 65_536
"""Entries each memo (containers, owner references, tolerations, affinity, timestamps) keeps
before it starts afresh."""

T = TypeVar("T")

Containers = tuple[api.Resources, api.Resources, tuple[str, ...], tuple[api.HostPort, ...]]
"""What ``spec.containers`` gives a Pod: requests, non-zero requests, images, host ports."""
Affinities = tuple[api.NodeAffinity | None, api.PodAffinity | None, api.PodAffinity | None]
NO_AFFINITY: Affinities = (None, None, None)
_owners: dict[bytes, tuple[Any, tuple[api.OwnerReference, ...]]] = {}
_by_containers: dict[bytes, tuple[Any, Containers]] = {}
_by_affinity: dict[bytes, tuple[Any, Affinities]] = {}
_by_tolerations: dict[bytes, tuple[Any, tuple[api.Toleration, ...]]] = {}
_times: dict[str, float | None] = {}

_key = msgspec.msgpack.encode
"""The memo key of a decoded value: its MessagePack encoding, equal only for values of
equal scalar types (``1``, ``1.0`` and ``true`` differ, as do text and bytes), in a fraction
of a microsecond.  It does not tell a list from a tuple or a set (YAML's ``!!omap``,
``!!set``), nor text from a date (``!!timestamp``), and it cannot encode an integer beyond
64 bits (:func:`_recalled` handles both)."""


def parse_pod(obj: dict[str, Any], path: str = "") -> api.Pod:
    """:func:`quick_pod`, or the full :func:`kubesched.api.pods.parse_pod` when it gives up:
    the same Pod either way, errors with their field path."""
    pod = quick_pod(obj)
    return pod if pod is not None else full.parse_pod(obj, path)


def quick_pod(obj: object) -> api.Pod | None:
    """The Pod of manifest ``obj`` when it has the common shape and is valid, else None
    (see the module docstring)."""
    if type(obj) is not dict:
        return None
    try:
        return _quick(obj)
    except InputError:
        return None


class GiveUp(Exception):
    """The quick path does not handle this Pod (or it is invalid): parse it the full way."""


def _str(obj: dict[str, Any], key: str) -> str:
    """:func:`kubesched.api.fields.string` without a path."""
    value = obj.get(key)
    if value is None:
        return ""
    if type(value) is not str:
        raise GiveUp
    return value


def _quick(obj: dict[str, Any]) -> api.Pod | None:
    meta, spec, status = obj.get("metadata"), obj.get("spec"), obj.get("status")
    if type(meta) is not dict or type(spec) is not dict:
        return None
    if status is None:
        status = {}
    elif type(status) is not dict:
        return None
    if not _GIVE_UP_SPEC.isdisjoint(spec) or "resourceClaimStatuses" in status:
        return None
    if _resizing(status):
        return None
    host_network = spec.get("hostNetwork")
    if host_network is not None and host_network is not False:  # ports default differently
        return None
    try:
        name = _str(meta, "name")
        if not name:
            return None
        namespace = _str(meta, "namespace")
        containers = _containers(spec.get("containers"))
        affinities = _affinity(spec)
        priority = f.int32(spec, "priority", "")
        policy = preemption_policy(spec.get("preemptionPolicy"))
        return assemble(
            name,
            namespace,
            _str(meta, "uid"),
            f.string_map(meta, "labels", ""),
            f.string_map(meta, "annotations", ""),
            _owner_references(meta.get("ownerReferences")),
            timestamp(meta.get("creationTimestamp")),
            _str(spec, "schedulerName"),
            priority,
            _str(spec, "priorityClassName"),
            policy,
            _str(spec, "nodeName"),
            f.string_map(spec, "nodeSelector", ""),
            affinities,
            _tolerations(spec) if "tolerations" in spec else (),
            containers,
            f.integer(spec, "terminationGracePeriodSeconds", ""),
            _str(status, "phase"),
            _str(status, "nominatedNodeName"),
            timestamp(status.get("startTime")),
            timestamp(meta.get("deletionTimestamp")),
            obj,
        )
    except GiveUp:
        return None


def _resizing(status: dict[str, Any]) -> bool:
    """Whether a container status reports ``resources`` (an in-place resize: the full parse
    counts the larger of spec, status and allocated requests)."""
    for key in ("containerStatuses", "initContainerStatuses"):
        statuses = status.get(key)
        if statuses is None:
            continue
        if type(statuses) is not list:
            return True
        for cs in statuses:
            if type(cs) is not dict or cs.get("resources") is not None:
                return True
    return False


def assemble(
    name: str,
    namespace: str,
    uid: str,
    labels: dict[str, str],
    annotations: dict[str, str],
    owners: tuple[api.OwnerReference, ...],
    created: float | None,
    scheduler_name: str,
    priority: int | None,
    priority_class_name: str,
    policy: str,
    node_name: str,
    node_selector: dict[str, str],
    affinities: Affinities,
    tolerations: tuple[api.Toleration, ...],
    containers: Containers,
    grace: int | None,
    phase: str,
    nominated: str,
    started: float | None,
    deleted: float | None,
    raw: Any,
) -> api.Pod:
    """The Pod of the quick paths (this one and :mod:`kubesched.api.podtyped`) from the values
    read, with the defaults the full parse gives; built from its slots (:data:`_SLOTS`)."""
    namespace = namespace or "default"
    return api.pod_from_slots(
        (
            name,
            namespace,
            uid or full.deterministic_uid("Pod", namespace, name),
            labels,
            annotations,
            owners,
            created,
            scheduler_name or api.DEFAULT_SCHEDULER_NAME,
            priority if priority is not None else 0,
            priority_class_name,
            policy,
            node_name,
            node_selector,
            *affinities,
            tolerations,
            (),
            *containers[:2],
            None,
            containers[3],
            containers[2],
            (),
            grace,
            phase or "Pending",
            nominated,
            started,
            deleted,
            (),
            (),
            raw,
            f"{namespace}/{name}",
        )
    )


def preemption_policy(policy: object) -> str:
    """``spec.preemptionPolicy`` as the full parse reads it (:class:`GiveUp` if invalid)."""
    if policy is None or policy == "":
        return "PreemptLowerPriority"
    if type(policy) is not str or policy not in full._PREEMPTION_POLICIES:
        raise GiveUp
    return policy


def _containers(raw: object) -> Containers:
    """``spec.containers`` (no init containers): the Pod's effective requests, non-zero
    requests, images and host ports; worked out once per distinct list (see :func:`_key`)."""
    return _recalled(_by_containers, raw, read_containers)


def read_containers(raw: object) -> Containers:
    """:func:`_containers` of a decoded value, not remembered (:class:`GiveUp` if odd)."""
    if type(raw) is not list or not raw:
        raise GiveUp
    millis: list[podresources.Millis] = []
    images: list[str] = []
    ports: list[api.HostPort] = []
    for c in raw:
        if type(c) is not dict:
            raise GiveUp
        res = c.get("resources")
        if not res and res is not None and res != {}:  # [], "", 0: not a mapping
            raise GiveUp
        if res:
            if type(res) is not dict or res.get("claims") is not None:
                raise GiveUp
            millis.append(
                podresources.default_container_requests(
                    f.resource_list(res, "requests", ""), f.resource_list(res, "limits", "")
                )
            )
        else:
            millis.append({})
        images.append(_str(c, "image"))
        raw_ports = c.get("ports")
        if raw_ports is not None:
            if type(raw_ports) is not list:
                raise GiveUp
            for p in raw_ports:
                if type(p) is not dict:
                    raise GiveUp
                if p.get("hostPort") is not None:
                    ports.extend(full._host_ports(c, "", False))
                    break
    requests, nonzero = podresources.effective_requests(millis, (), None, None)
    return requests, nonzero, tuple(images), tuple(ports)


def _affinity(spec: dict[str, Any]) -> Affinities:
    """``spec.affinity`` as the full parse reads it, once per distinct value."""
    raw = spec.get("affinity")
    if raw is None:
        return NO_AFFINITY
    return _recalled(_by_affinity, raw, read_affinity)


def read_affinity(raw: object) -> Affinities:
    affinity = f.mapping({"affinity": raw}, "affinity", "")
    if not affinity:
        return NO_AFFINITY
    return (
        full._node_affinity(affinity, ""),
        full._pod_affinity(affinity, "podAffinity", ""),
        full._pod_affinity(affinity, "podAntiAffinity", ""),
    )


def _tolerations(spec: dict[str, Any]) -> tuple[api.Toleration, ...]:
    """``spec.tolerations`` as the full parse reads them, once per distinct list."""
    raw = spec["tolerations"]
    return _recalled(_by_tolerations, raw, read_tolerations)


def read_tolerations(raw: object) -> tuple[api.Toleration, ...]:
    return full._tolerations({"tolerations": raw}, "")


def _owner_references(refs: object) -> tuple[api.OwnerReference, ...]:
    """``metadata.ownerReferences`` as :func:`kubesched.api.pods._owner_references` reads
    them; worked out once per distinct list (see :func:`_key`)."""
    if refs is None:
        return ()
    return _recalled(_owners, refs, read_owner_references)


def read_owner_references(refs: object) -> tuple[api.OwnerReference, ...]:
    """:func:`_owner_references` of a decoded value, not remembered."""
    if refs is None:
        return ()
    if type(refs) is not list:
        raise GiveUp
    return tuple(_owner_reference(ref) for ref in refs)


def _owner_reference(ref: object) -> api.OwnerReference:
    if type(ref) is not dict:
        raise GiveUp
    fields = (ref.get("kind"), ref.get("name"), ref.get("apiVersion"), ref.get("uid"))
    controller = ref.get("controller")
    if any(v is not None and type(v) is not str for v in fields) or (
        controller is not None and type(controller) is not bool
    ):
        raise GiveUp
    kind, name, version, uid = (v or "" for v in fields)
    return api.OwnerReference(kind, name, version, bool(controller), uid)


def remembered(memo: dict[bytes, T], key: bytes, read: Callable[[Any], T], value: Any) -> T:
    """``read(value)``, remembered in ``memo`` under ``key``, a text equal only for equal
    values (the typed path's section text: equal texts decode to equal values), started
    afresh after :data:`MEMO_LIMIT` entries; an exception from ``read`` is not remembered."""
    hit = memo.get(key)
    if hit is None:
        hit = read(value)
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        memo[key] = hit
    return hit


def _recalled(memo: dict[bytes, tuple[Any, T]], raw: Any, read: Callable[[Any], T]) -> T:
    """``read(raw)``, remembered in ``memo`` under the encoding of the decoded value ``raw``
    (:data:`_key`) together with ``raw`` itself: a remembered result is taken only for a
    value equal to the one it was read from by the encoding (which tells ``1`` from ``1.0``
    and ``true``) and by ``==`` (which tells a list from a tuple or a set, and text from a
    date).  A value the encoding cannot hold (an integer beyond 64 bits) is read, not
    remembered; ``memo`` starts afresh after :data:`MEMO_LIMIT` entries; an exception from
    ``read`` is not remembered."""
    try:
        key = _key(raw)
    except (OverflowError, TypeError, msgspec.EncodeError):
        return read(raw)
    hit = memo.get(key)
    if hit is not None and hit[0] == raw:
        return hit[1]
    value = read(raw)
    if len(memo) >= MEMO_LIMIT:
        memo.clear()
    memo[key] = (raw, value)
    return value


def timestamp(value: object) -> float | None:
    """An RFC3339 timestamp as :func:`kubesched.api.pods.parse_timestamp` reads it."""
    if value is None:
        return None
    if type(value) is not str:
        raise GiveUp
    seconds = _times.get(value, _times)
    if seconds is _times:
        seconds = full.parse_timestamp(value, "")
        if len(_times) >= MEMO_LIMIT:
            _times.clear()
        _times[value] = seconds
    return seconds  # type: ignore[return-value]
