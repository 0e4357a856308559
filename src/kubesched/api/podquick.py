"""The quick path of Pod parsing, for snapshots and LISTs of many Pods: one function,
:func:`quick_pod`.

:func:`kubesched.api.pods.parse_pod` builds a field path for every section it reads, so that
any error names its place; over the 200,000 Pods of a large ``kubectl`` snapshot that string
work is a third of the parse.  :func:`quick_pod` decodes a Pod -- a decoded manifest (a dict)
or a List item's undecoded JSON text -- into typed structs shaped like the manifest
(:class:`_PodDoc`: msgspec checks the strings, maps and nesting in C, skips every other key),
reads the common shape from them (metadata, containers with requests, limits and ports, node
name, priority, tolerations, affinity, volumes, status) and gives up -- returns None -- on anything
else: a section it does not handle (init containers, overhead, pod-level resources, spread
constraints, scheduling gates, a Workload or PodGroup reference, resource claims, ephemeral
containers, image volumes, ``hostNetwork: true``, container statuses or the Pod's status
reporting ``resources``, a ``PodResizePending`` condition, a container's
``restartPolicyRules`` or ``bindMountOptions``, which may need node-declared features) or any
invalid value.
:func:`parse_pod` then parses the Pod the full way, which reports the error with its path.
Both build the Pod with :func:`kubesched.api.pods.new_pod`, and read the sections with the
full parse's own readers: the two give the same :class:`~kubesched.api.objects.Pod`
(property tests check this on generated Pods, valid and not) and only the speed differs.

The sections a snapshot's Pods repeat (containers, affinity, tolerations, owner references)
are kept as their JSON text when decoding a List's item, and each distinct text is read once
per :class:`Sections` (one per List read; equal texts decode to equal values); the Pod's
``raw`` is then a :class:`~kubesched.api.objects.DeferredRaw`, the item decoded on first
use.  So for a 200,000-Pod ``kubectl`` List no dict of the Pods is built at all.  A dict is
read section by section, nothing remembered.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, TypeVar

import msgspec
from msgspec import UNSET, Raw, UnsetType

from kubesched.api import fields as f
from kubesched.api import objects as api
from kubesched.api import podresources, podvolumes
from kubesched.api import pods as full
from kubesched.api.errors import InputError

__all__ = ["Quick", "Sections", "parse_pod", "quick_pod"]

MEMO_LIMIT = 65_536
"""Entries each memo of a :class:`Sections` keeps before it starts afresh."""

T = TypeVar("T")
S = TypeVar("S")
"""A section's value: its JSON text (:class:`msgspec.Raw`) or the decoded value (``Any``)."""

Containers = tuple[api.Resources, api.Resources, tuple[str, ...], tuple[api.HostPort, ...]]
"""What ``spec.containers`` gives a Pod: requests, non-zero requests, images, host ports."""
Affinities = tuple[api.NodeAffinity | None, api.PodAffinity | None, api.PodAffinity | None]
NO_AFFINITY: Affinities = (None, None, None)

# The structs are short-lived and hold no cycles: not tracked by the collector (``gc=False``),
# which makes each decode ~10 % cheaper.  A section is UNSET when absent (present, even
# ``null``, it is its text or its value).


class _Meta(msgspec.Struct, Generic[S], gc=False):
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    ownerReferences: S | UnsetType = UNSET
    creationTimestamp: str | None = None
    deletionTimestamp: str | None = None


class _Spec(msgspec.Struct, Generic[S], gc=False):
    containers: S | UnsetType = UNSET
    affinity: S | UnsetType = UNSET
    tolerations: S | UnsetType = UNSET
    nodeName: str | None = None
    schedulerName: str | None = None
    priorityClassName: str | None = None
    priority: Any = None
    preemptionPolicy: Any = None
    hostNetwork: Any = None
    nodeSelector: dict[str, str] | None = None
    terminationGracePeriodSeconds: Any = None
    initContainers: S | UnsetType = UNSET  # the sections left to the full parse
    overhead: S | UnsetType = UNSET
    resources: S | UnsetType = UNSET
    topologySpreadConstraints: S | UnsetType = UNSET
    schedulingGates: S | UnsetType = UNSET
    workloadRef: S | UnsetType = UNSET
    schedulingGroup: S | UnsetType = UNSET
    resourceClaims: S | UnsetType = UNSET
    ephemeralContainers: S | UnsetType = UNSET
    volumes: S | UnsetType = UNSET


class _Status(msgspec.Struct, Generic[S], gc=False):
    phase: str | None = None
    nominatedNodeName: str | None = None
    startTime: str | None = None
    resourceClaimStatuses: S | UnsetType = UNSET
    containerStatuses: S | UnsetType = UNSET
    initContainerStatuses: S | UnsetType = UNSET
    resources: S | UnsetType = UNSET
    conditions: S | UnsetType = UNSET


class _PodDoc(msgspec.Struct, Generic[S], gc=False):
    kind: Any = None
    metadata: _Meta[S] | None = None
    spec: _Spec[S] | None = None
    status: _Status[S] | None = None


_NO_STATUS: _Status[Any] = _Status()
_from_text: Callable[[Raw], _PodDoc[Raw]] = msgspec.json.Decoder(_PodDoc[Raw]).decode
_DECODED = _PodDoc[Any]
"""The struct a decoded manifest converts to (the alias made once: ~1 µs each time)."""
_decode: Callable[[Raw], Any] = msgspec.json.Decoder().decode


class Quick(NamedTuple):
    """A Pod read on the quick path, and whether its manifest sets ``spec.priority`` and
    ``spec.preemptionPolicy`` (PriorityClass resolution asks, and this way need not decode
    a deferred ``raw``)."""

    pod: api.Pod
    given: tuple[bool, bool]


_quick = functools.partial(tuple.__new__, Quick)
"""``Quick(pod, given)`` without the Python-level ``__new__`` of a NamedTuple."""


class Sections:
    """The sections of a List's Pods read so far, by their JSON text: one per List read (a
    text is a key that cannot fail and equal texts decode to equal values)."""

    __slots__ = ("affinity", "containers", "owners", "tolerations", "volumes")

    def __init__(self) -> None:
        self.containers: dict[bytes, Containers] = {}
        self.affinity: dict[bytes, Affinities] = {}
        self.tolerations: dict[bytes, tuple[api.Toleration, ...]] = {}
        self.owners: dict[bytes, tuple[api.OwnerReference, ...]] = {}
        self.volumes: dict[bytes, tuple[api.Volume, ...]] = {}


_VALUES = Sections()
"""The memo of a decoded manifest's sections: never written (values are read, not
remembered; :func:`_section`)."""


def parse_pod(obj: dict[str, Any], path: str = "") -> api.Pod:
    """:func:`quick_pod`, or the full :func:`kubesched.api.pods.parse_pod` when it gives up:
    the same Pod either way, errors with their field path."""
    quick = quick_pod(obj)
    return quick.pod if quick is not None else full.parse_pod(obj, path)


def quick_pod(source: object, sections: Sections | None = None) -> Quick | None:
    """The Pod of ``source`` -- a decoded manifest (a dict), or a List item's JSON text
    (:class:`msgspec.Raw`, whose ``kind`` must be ``Pod``; its sections remembered in
    ``sections``) -- when it has the common shape and is valid, else None (see the module
    docstring).  Strictness of a text (a repeated key, ``NaN``, the nesting limit) is not
    checked here: the reader checks the whole text (:func:`kubesched.api.source.list_items`)."""
    try:
        if type(source) is Raw:
            doc: _PodDoc[Any] = _from_text(source)
            if doc.kind != "Pod":
                return None
            raw: Any = api.DeferredRaw(_decode, source)
            memo = sections if sections is not None else Sections()
        elif type(source) is dict:
            doc = msgspec.convert(source, _DECODED)
            raw, memo = source, _VALUES
        else:
            return None
        return _read(doc, raw, memo)
    except (msgspec.ValidationError, msgspec.DecodeError, GiveUp, InputError):
        return None


class GiveUp(Exception):
    """The quick path does not handle this Pod (or it is invalid): parse it the full way."""


def _read(doc: _PodDoc[Any], raw: Any, memo: Sections) -> Quick | None:
    """The Pod of a decoded ``doc`` (sections as text, remembered in ``memo``, or as values,
    see :class:`_PodDoc`)."""
    meta, spec, status = doc.metadata, doc.spec, doc.status or _NO_STATUS
    if meta is None or spec is None or not meta.name:
        return None
    if (
        spec.initContainers is not UNSET
        or spec.overhead is not UNSET
        or spec.resources is not UNSET
        or spec.topologySpreadConstraints is not UNSET
        or spec.schedulingGates is not UNSET
        or spec.workloadRef is not UNSET
        or spec.schedulingGroup is not UNSET
        or spec.resourceClaims is not UNSET
        or spec.ephemeralContainers is not UNSET
        or (spec.volumes is not UNSET and _image_volumes(spec.volumes))
        or status.resourceClaimStatuses is not UNSET
        or status.resources is not UNSET  # the Pod's own resize status
        or (status.containerStatuses is not UNSET and _resizing(status.containerStatuses))
        or (status.initContainerStatuses is not UNSET and _resizing(status.initContainerStatuses))
        or (status.conditions is not UNSET and _resize_pending(status.conditions))
        or (spec.hostNetwork is not None and spec.hostNetwork is not False)  # other ports
    ):
        return None
    if spec.containers is UNSET:
        return None
    # Absent sections and fields are told here, without a call (this runs per Pod).
    node_affinity, pod_affinity, anti_affinity = (
        NO_AFFINITY
        if spec.affinity is UNSET
        else _section(spec.affinity, memo.affinity, _read_affinity)
    )
    requests, nonzero, images, ports = _section(spec.containers, memo.containers, _read_containers)
    times = meta.creationTimestamp, status.startTime, meta.deletionTimestamp
    pod = full.new_pod(
        name=meta.name,
        namespace=meta.namespace or "",
        uid=meta.uid or "",
        labels=meta.labels if meta.labels is not None else {},
        annotations=meta.annotations if meta.annotations is not None else {},
        owner_references=(
            ()
            if meta.ownerReferences is UNSET
            else _section(meta.ownerReferences, memo.owners, _read_owners)
        ),
        creation_timestamp=None if times[0] is None else _seconds(times[0]),
        scheduler_name=spec.schedulerName or "",
        priority=None if spec.priority is None else _given(spec.priority, f.int32, "priority"),
        priority_class_name=spec.priorityClassName or "",
        preemption_policy=(
            "PreemptLowerPriority"
            if spec.preemptionPolicy is None
            else _preemption_policy(spec.preemptionPolicy)
        ),
        node_name=spec.nodeName or "",
        node_selector=spec.nodeSelector if spec.nodeSelector is not None else {},
        node_affinity=node_affinity,
        pod_affinity=pod_affinity,
        pod_anti_affinity=anti_affinity,
        tolerations=(
            ()
            if spec.tolerations is UNSET
            else _section(spec.tolerations, memo.tolerations, _read_tolerations)
        ),
        requests=requests,
        nonzero_requests=nonzero,
        host_ports=ports,
        images=images,
        termination_grace_period_seconds=_given(
            spec.terminationGracePeriodSeconds, f.integer, "terminationGracePeriodSeconds"
        ),
        phase=status.phase or "",
        nominated_node_name=status.nominatedNodeName or "",
        start_time=None if times[1] is None else _seconds(times[1]),
        deletion_timestamp=None if times[2] is None else _seconds(times[2]),
        raw=raw,
        volumes=(
            () if spec.volumes is UNSET else _section(spec.volumes, memo.volumes, _read_volumes)
        ),
    )
    return _quick((pod, (spec.priority is not None, spec.preemptionPolicy is not None)))


def _image_volumes(volumes: object) -> bool:
    """Whether ``spec.volumes`` holds an image volume (an item with an ``image`` key; an rbd
    volume's own ``image`` field is not one), or is not a list of objects: the full parse
    reads those.  A text is decoded for this only when it mentions ``"image"``."""
    if volumes is None:
        return False
    if type(volumes) is Raw:
        text = bytes(volumes)
        if b'"image"' not in text:
            return False
        try:
            volumes = _decode(volumes)
        except msgspec.DecodeError:
            return True
    if not isinstance(volumes, list):
        return True
    return any(not isinstance(v, dict) or "image" in v for v in volumes)


def _resize_pending(conditions: object) -> bool:
    """Whether ``status.conditions`` may hold a ``PodResizePending`` condition (its reason
    is read by the full parse: a deferred resize); a text is only searched."""
    if type(conditions) is Raw:
        return b"PodResizePending" in bytes(conditions)
    if type(conditions) is not list:
        return conditions is not None
    return any(type(c) is not dict or c.get("type") == "PodResizePending" for c in conditions)


def _resizing(statuses: object) -> bool:
    """Whether a container status reports ``resources`` (an in-place resize: the full parse
    counts the larger of spec, status and allocated requests); a text is not decoded for
    this, only searched (which may give up on a Pod the full parse finds no resize in)."""
    if statuses is None:
        return False
    if type(statuses) is Raw:
        return b'"resources"' in bytes(statuses)
    if type(statuses) is not list:
        return True
    return any(type(cs) is not dict or cs.get("resources") is not None for cs in statuses)


def _section(value: object, memo: dict[bytes, T], read: Callable[[Any], T]) -> T:
    """``read`` of a present section's value; a text is decoded first and remembered in
    ``memo`` (started afresh after :data:`MEMO_LIMIT` entries; an exception is not
    remembered)."""
    if type(value) is not Raw:
        return read(value)
    key = bytes(value)
    hit = memo.get(key)
    if hit is None:
        hit = read(_decode(value))
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        memo[key] = hit
    return hit


def _given(value: Any, read: Callable[[dict[str, Any], str, str], T], key: str) -> T | None:
    """``read`` (a :mod:`~kubesched.api.fields` reader) of a present field's value."""
    return read({key: value}, key, "")


def _preemption_policy(policy: object) -> str:
    """A present ``spec.preemptionPolicy`` as the full parse reads it (:class:`GiveUp` if
    invalid)."""
    if policy == "":
        return "PreemptLowerPriority"
    if type(policy) is not str or policy not in full.PREEMPTION_POLICIES:
        raise GiveUp
    return policy


def _str(obj: dict[str, Any], key: str) -> str:
    """:func:`kubesched.api.fields.string` without a path."""
    value = obj.get(key)
    if value is None:
        return ""
    if type(value) is not str:
        raise GiveUp
    return value


def _read_containers(raw: object) -> Containers:
    """``spec.containers`` (no init containers): the Pod's effective requests, non-zero
    requests, images and host ports (:class:`GiveUp` if odd)."""
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
        if c.get("restartPolicyRules") is not None or _mounts_with_options(c.get("volumeMounts")):
            raise GiveUp  # node-declared features a Pod may need: the full parse reads them
        raw_ports = c.get("ports")
        if raw_ports is not None:
            if type(raw_ports) is not list:
                raise GiveUp
            for p in raw_ports:
                if type(p) is not dict:
                    raise GiveUp
                if p.get("hostPort") is not None:
                    ports.extend(full.read_host_ports(c, "", False))
                    break
    requests, nonzero = podresources.effective_requests(millis, (), None, None)
    return requests, nonzero, tuple(images), tuple(ports)


def _mounts_with_options(mounts: object) -> bool:
    """Whether a container's ``volumeMounts`` sets ``bindMountOptions`` anywhere, or is odd
    (then the full parse reads it, and names the error)."""
    if mounts is None:
        return False
    if type(mounts) is not list:
        return True
    return any(type(m) is not dict or m.get("bindMountOptions") is not None for m in mounts)


def _read_affinity(raw: object) -> Affinities:
    """``spec.affinity`` as the full parse reads it."""
    affinity = f.mapping({"affinity": raw}, "affinity", "")
    if not affinity:
        return NO_AFFINITY
    return (
        full.read_node_affinity(affinity, ""),
        full.read_pod_affinity(affinity, "podAffinity", ""),
        full.read_pod_affinity(affinity, "podAntiAffinity", ""),
    )


def _read_tolerations(raw: object) -> tuple[api.Toleration, ...]:
    """``spec.tolerations`` as the full parse reads them."""
    return full.read_tolerations({"tolerations": raw}, "")


def _read_volumes(raw: object) -> tuple[api.Volume, ...]:
    """``spec.volumes`` as the full parse reads them."""
    return podvolumes.read_volumes({"volumes": raw}, "")


def _read_owners(refs: object) -> tuple[api.OwnerReference, ...]:
    """``metadata.ownerReferences`` as the full parse reads them."""
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


@functools.lru_cache(maxsize=MEMO_LIMIT)
def _seconds(text: str) -> float | None:
    """:func:`kubesched.api.pods.parse_timestamp` of a text (a snapshot's Pods repeat a few
    times; an error is not remembered)."""
    return full.parse_timestamp(text, "")
