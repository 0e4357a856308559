"""The typed path of Pod parsing, for the items of a large snapshot still undecoded.

:mod:`kubesched.api.podquick` reads a decoded Pod, a dict, field by field in Python.  Here
msgspec decodes an item's text straight into the few typed fields the scheduler reads
(:class:`_PodDoc`): strings checked as strings by its C decoder, every other key skipped
without building a value, and the sections a snapshot's Pods repeat (containers, affinity,
tolerations, owner references) kept as their text, read once per distinct text by
podquick's own readers.  The Pod's ``raw`` is a :class:`~kubesched.api.objects.DeferredRaw`:
the item decoded on first use.  So for a 200,000-Pod ``kubectl`` List no dict of the Pods
is built at all.

:func:`typed_pod` gives the Pod that :func:`kubesched.api.podquick.quick_pod` gives for the
item's decoded value, or None wherever that one gives up -- and also where this one cannot
tell (a value of another type than it declares): the caller then decodes the item and
parses it the usual way (tests check both on generated Pods, valid and not).  Strictness
(a repeated key, ``NaN``, the nesting limit) is not checked here: the reader checks the
whole text (:func:`kubesched.api.source.list_items`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from kubesched.api import fields as f
from kubesched.api import objects as api
from kubesched.api import podquick as quick
from kubesched.api.errors import InputError

__all__ = ["mapping", "typed_pod"]

_ABSENT = msgspec.Raw(b"")
"""A section's default: absent (present, even ``null``, it is its text)."""

# The structs below are short-lived and hold no cycles: not tracked by the collector
# (``gc=False``), which makes each decode ~10 % cheaper.


class _Meta(msgspec.Struct, gc=False):
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    ownerReferences: msgspec.Raw = _ABSENT
    creationTimestamp: str | None = None
    deletionTimestamp: str | None = None


class _Spec(msgspec.Struct, gc=False):
    containers: msgspec.Raw = _ABSENT
    affinity: msgspec.Raw = _ABSENT
    tolerations: msgspec.Raw = _ABSENT
    nodeName: str | None = None
    schedulerName: str | None = None
    priorityClassName: str | None = None
    priority: Any = None
    preemptionPolicy: Any = None
    hostNetwork: Any = None
    nodeSelector: dict[str, str] | None = None
    terminationGracePeriodSeconds: Any = None
    initContainers: msgspec.Raw = _ABSENT  # the sections podquick leaves to the full parse
    overhead: msgspec.Raw = _ABSENT
    resources: msgspec.Raw = _ABSENT
    topologySpreadConstraints: msgspec.Raw = _ABSENT
    schedulingGates: msgspec.Raw = _ABSENT
    resourceClaims: msgspec.Raw = _ABSENT


class _Status(msgspec.Struct, gc=False):
    phase: str | None = None
    nominatedNodeName: str | None = None
    startTime: str | None = None
    resourceClaimStatuses: msgspec.Raw = _ABSENT
    containerStatuses: msgspec.Raw = _ABSENT
    initContainerStatuses: msgspec.Raw = _ABSENT


class _PodDoc(msgspec.Struct, gc=False):
    kind: Any = None
    metadata: _Meta | None = None
    spec: _Spec | None = None
    status: _Status | None = None


_NO_STATUS = _Status()
_pod_doc = msgspec.json.Decoder(_PodDoc).decode
_decode: Callable[[msgspec.Raw], Any] = msgspec.json.Decoder().decode


def mapping(item: msgspec.Raw) -> dict[str, Any] | None:
    """The decoded JSON text ``item`` (dicts, lists and scalars, as the reader decodes them)
    when it is an object; None otherwise, or if it does not decode."""
    try:
        value = _decode(item)
    except msgspec.DecodeError:
        return None
    return value if type(value) is dict else None


T = TypeVar("T")
_by_containers: dict[bytes, quick.Containers] = {}
_by_affinity: dict[bytes, quick.Affinities] = {}
_by_tolerations: dict[bytes, tuple[api.Toleration, ...]] = {}
_owners: dict[bytes, tuple[api.OwnerReference, ...]] = {}


def typed_pod(item: msgspec.Raw) -> tuple[api.Pod, tuple[bool, bool]] | None:
    """The Pod of the JSON text ``item`` (a List's item) and whether its ``spec.priority``
    and ``spec.preemptionPolicy`` are set (PriorityClass resolution asks, and this way
    need not decode ``raw``), or None: not a Pod, or one to decode and parse the usual
    way (see the module docstring)."""
    try:
        doc = _pod_doc(item)
    except msgspec.DecodeError:  # ValidationError included: a value of another type
        return None
    meta, spec, status = doc.metadata, doc.spec, doc.status or _NO_STATUS
    if doc.kind != "Pod" or meta is None or spec is None or not meta.name:
        return None
    if (
        spec.initContainers
        or spec.overhead
        or spec.resources
        or spec.topologySpreadConstraints
        or spec.schedulingGates
        or spec.resourceClaims
        or status.resourceClaimStatuses
        or b'"resources"' in bytes(status.containerStatuses)
        or b'"resources"' in bytes(status.initContainerStatuses)
        or (spec.hostNetwork is not None and spec.hostNetwork is not False)
    ):
        return None
    try:
        pod = quick.assemble(
            meta.name,
            meta.namespace or "",
            meta.uid or "",
            meta.labels if meta.labels is not None else {},
            meta.annotations if meta.annotations is not None else {},
            _remembered(_owners, meta.ownerReferences, _read_owners, ()),
            quick.timestamp(meta.creationTimestamp),
            spec.schedulerName or "",
            _given(spec.priority, f.int32, "priority"),
            spec.priorityClassName or "",
            quick.preemption_policy(spec.preemptionPolicy),
            spec.nodeName or "",
            spec.nodeSelector if spec.nodeSelector is not None else {},
            _remembered(_by_affinity, spec.affinity, _read_affinity, quick.NO_AFFINITY),
            _remembered(_by_tolerations, spec.tolerations, _read_tolerations, ()),
            _remembered(_by_containers, spec.containers, _read_containers, None),
            _given(spec.terminationGracePeriodSeconds, f.integer, "terminationGracePeriodSeconds"),
            status.phase or "",
            status.nominatedNodeName or "",
            quick.timestamp(status.startTime),
            quick.timestamp(meta.deletionTimestamp),
            api.DeferredRaw(_decode, item),
        )
    except (quick.GiveUp, InputError):
        return None
    return pod, (spec.priority is not None, spec.preemptionPolicy is not None)


def _given(value: Any, read: Callable[[dict[str, Any], str, str], T], key: str) -> T | None:
    """``read`` (a :mod:`~kubesched.api.fields` reader) of a field's value, None if absent."""
    return None if value is None else read({key: value}, key, "")


def _decoded(read: Callable[[Any], T]) -> Callable[[msgspec.Raw], T]:
    """``read`` (one of podquick's section readers) of a section's decoded text."""
    return lambda text: read(_decode(text))


_read_owners = _decoded(quick.read_owner_references)
_read_affinity = _decoded(quick.read_affinity)
_read_tolerations = _decoded(quick.read_tolerations)
_read_containers = _decoded(quick.read_containers)


def _remembered(
    memo: dict[bytes, T], text: msgspec.Raw, read: Callable[[msgspec.Raw], T], absent: T | None
) -> T:
    """``read(text)``, remembered in ``memo`` by the text (equal texts decode to equal
    values: :func:`~kubesched.api.podquick.remembered`); ``absent`` when the section is
    (None: it is required, :class:`~kubesched.api.podquick.GiveUp`)."""
    if not text:
        if absent is None:
            raise quick.GiveUp
        return absent
    return quick.remembered(memo, bytes(text), read, text)
