"""The messages between the coordinator (dispatcher + binder) and the scheduler shards.

Messages are small tuples of strings, ints and Pods, and each message is pickled **once, as
a whole**: a Pod travels as its :func:`strip`-ped copy (made once, when the dispatcher hands
it out, and reused when its commit is streamed to the other shards), and Pods made from one
template share their sub-objects (requests, tolerations, the stripped manifest), which
pickle's memo then writes once per message instead of once per Pod.  Nothing is shared
between processes: the receiver gets its own copies.

Coordinator to shard, one :class:`ToShard` per step:

- ``stream``: the commit stream since the shard's cursor, a list of *entries* (below): what
  the authoritative cache and the API server's watch saw, in order; pickled by
  :func:`encode_stream` once per step for every shard that reads the same stretch (the
  stretch is the same for all shards messaged every step), so each entry is pickled once,
  not once per shard;
- ``entries``: entries applied before ``stream`` (a fresh shard's snapshot);
- ``reset``: the shard first starts over with an empty replica (``stream`` is then a
  snapshot: auto routing's dormant shards are woken this way);
- ``private``: ``(key, reason)`` of this shard's proposals the binder refused (the shard
  forgets its assumed copy);
- ``pods``: the Pods handed to this shard to schedule;
- ``now``: the coordinator's clock (the shard's clock, so Permit timeouts agree).

Entries (one :class:`msgspec.Struct` type per kind; ``gen`` is the node's authoritative
``NodeTable.generation`` after the change, which proposals quote back as their version):

================================================  ==============================================
:class:`NodeAdd` ``(node, gen)`` /                 node events
:class:`NodeUpdate` ``(old, new, gen)``
:class:`NodeDelete` ``(node)``                     node gone
:class:`PodAdd` ``(pod, gen)``                     a Pod created already bound
:class:`Bound` ``(key, node, gen, proposer, pod)``  a pending Pod is bound (``pod`` None for the
                                                   proposing shard, which has the Pod)
:class:`Assumed` ``(key, node, gen, proposer,      the binder holds resources for a Pod whose
pod)``                                             bind is not confirmed yet
:class:`Forgot` ``(key, node, gen)``               the binder released such a Pod
:class:`PodUpdate` ``(old, new)``                  a bound Pod changed
:class:`PodDelete` ``(pod, node, gen)``            a Pod was deleted (node ``""``: pending)
:class:`ObjectEvent` ``(obj, deleted)``            Namespace, Service, PodGroup, ...
:class:`Generations` ``(gens)``                    snapshot of every node's version
================================================  ==============================================

Shard to coordinator, one :class:`FromShard` per :class:`ToShard`: ``results`` (below),
``waiting`` (Pods held at the shard's Permit) and ``deadline`` (the earliest Permit deadline,
or None), ``busy`` (seconds the shard spent on the message), ``cpu`` and ``apply_cpu`` (CPU
seconds in all and applying the stream), ``applied`` (stream entries) and ``search`` (each
Pod's search time, for auto routing).

Results: :class:`Propose` ``(key, node, version, alternatives, local, group)`` where
``alternatives`` is a tuple of ``(node, version)`` in score order and ``local`` says what the
cross-node Filter plugins (PodTopologySpread, InterPodAffinity) checked for this Pod: nothing
(:data:`LOCAL`), only anti-affinity whose topology is the node itself (:data:`NODE_DOMAIN`,
see :func:`node_domain_only`), or more (:data:`NOT_LOCAL`); or :class:`Failed` ``(key,
reason, message, unschedulable_plugins, pending_plugins, nominated, victims)`` with
``victims`` the keys the shard's PostFilter chose to preempt on ``nominated``.

Every message type is a frozen :class:`msgspec.Struct` without GC tracking (a stream entry
references Pods, nothing references an entry back), so ``mypy --strict`` checks every field a
reader takes; pickled, a Struct costs ~0.2 µs more than a plain tuple per entry, small beside
the Pod it carries.
"""

from __future__ import annotations

import pickle
import zlib
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesched.api import objects as api

GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""Pods carrying this label are dispatched, proposed and committed as one unit per group."""
HOSTNAME_LABEL = "kubernetes.io/hostname"

NOT_LOCAL = 0
"""A proposal's Filter verdict may depend on Pods on other nodes."""
LOCAL = 1
"""The cross-node Filters had nothing to check (``True`` reads as this)."""
NODE_DOMAIN = 2
"""Only InterPodAffinity checked, and only anti-affinity by :data:`HOSTNAME_LABEL` (the
Pod's own terms, and no namespace selectors): on a node alone in its hostname domain the
verdict depends on that node's Pods only."""

PodItem = api.Pod | bytes
"""A Pod in a stream entry: the object, or the bytes of :func:`pack`."""


class NodeAdd(msgspec.Struct, frozen=True, gc=False):
    """A node appeared."""

    node: api.Node
    gen: int


class NodeUpdate(msgspec.Struct, frozen=True, gc=False):
    """A node changed."""

    old: api.Node
    new: api.Node
    gen: int


class NodeDelete(msgspec.Struct, frozen=True, gc=False):
    """A node is gone."""

    node: api.Node


class PodAdd(msgspec.Struct, frozen=True, gc=False):
    """A Pod created already bound (or a bound Pod of a snapshot)."""

    pod: PodItem
    gen: int


class Bound(msgspec.Struct, frozen=True, gc=False):
    """A pending Pod is bound: ``pod`` None for the proposing shard, which has the Pod."""

    key: str
    node: str
    gen: int
    proposer: int
    pod: PodItem | None


class Assumed(msgspec.Struct, frozen=True, gc=False):
    """The binder holds resources for a Pod whose bind is not confirmed yet."""

    key: str
    node: str
    gen: int
    proposer: int
    pod: PodItem | None


class Forgot(msgspec.Struct, frozen=True, gc=False):
    """The binder released a Pod it held (:class:`Assumed`)."""

    key: str
    node: str
    gen: int


class PodUpdate(msgspec.Struct, frozen=True, gc=False):
    """A bound Pod changed."""

    old: PodItem
    new: PodItem


class PodDelete(msgspec.Struct, frozen=True, gc=False):
    """A Pod was deleted (``node`` ``""``: it was pending; ``gen`` then -1)."""

    pod: PodItem
    node: str
    gen: int


class ObjectEvent(msgspec.Struct, frozen=True, gc=False):
    """A Namespace, Service, PodGroup, ... changed (``deleted``: it is gone)."""

    obj: dict[str, Any]
    deleted: bool


class Generations(msgspec.Struct, frozen=True, gc=False):
    """Node name to its authoritative generation (a snapshot's, or a gang check's)."""

    gens: dict[str, int]


Entry = (
    NodeAdd
    | NodeUpdate
    | NodeDelete
    | PodAdd
    | Bound
    | Assumed
    | Forgot
    | PodUpdate
    | PodDelete
    | ObjectEvent
    | Generations
)
"""One commit-stream entry."""


class Propose(msgspec.Struct, frozen=True, gc=False):
    """A shard's placement: ``node`` at ``version``, runner-ups ``alternatives``."""

    key: str
    node: str
    version: int
    alternatives: tuple[tuple[str, int], ...]
    """``(node, version)`` of the next best nodes, in score order."""
    local: int
    """:data:`NOT_LOCAL`, :data:`LOCAL` or :data:`NODE_DOMAIN` (module docstring)."""
    group: str
    """``namespace/group`` of a gang member (:func:`group_of`), else ``""``."""


class Failed(msgspec.Struct, frozen=True, gc=False):
    """A Pod that fits nowhere on the shard's replica (after its PostFilter)."""

    key: str
    reason: str
    message: str
    unschedulable_plugins: tuple[str, ...]
    pending_plugins: tuple[str, ...]
    nominated: str
    """The node a preemption nominated (``""``: none)."""
    victims: tuple[str, ...]
    """The Pods that preemption chose to delete on ``nominated``."""


Result = Propose | Failed
"""One answer of a shard about one Pod."""


@dataclass(slots=True)
class ToShard:
    """One step's message to a shard (see the module docstring)."""

    now: float
    entries: list[Entry] = field(default_factory=list)
    stream: bytes = b""
    private: list[tuple[str, str]] = field(default_factory=list)
    pods: list[api.Pod] = field(default_factory=list)
    reset: bool = False
    """The shard starts over with an empty replica before applying ``stream`` (then a
    snapshot: the coordinator's shards woke from dormancy)."""
    stop: bool = False
    crash: bool = False
    """Test hook: the shard process exits at once without answering (a crash)."""


@dataclass(slots=True)
class FromShard:
    """A shard's answer to one :class:`ToShard`."""

    results: list[Result] = field(default_factory=list)
    waiting: int = 0
    deadline: float | None = None
    busy: float = 0.0
    cpu: float = 0.0
    """CPU seconds the shard spent on the message (``busy`` is wall-clock)."""
    apply_cpu: float = 0.0
    """Of ``cpu``, the seconds spent applying the commit stream to the replica."""
    applied: int = 0
    """Commit-stream entries the message carried."""
    search: dict[str, float] = field(default_factory=dict)
    """Pod key to the wall-clock seconds its search (``schedule_pod``) took, for the
    coordinator's auto routing (:mod:`~kubesched.parallel.router`)."""
    activate: list[str] = field(default_factory=list)
    """Keys of Pods a plugin asked to activate (upstream ``PodsToActivate``: a gang member
    waiting at Permit activates its siblings) that the shard's queue does not hold: the
    coordinator's queue activates them."""


_STRIPPED: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
"""``id(raw)`` -> ``(raw, stripped)``: Pods sharing one manifest share one stripped copy."""
_STRIPPED_MAX = 4096


def strip(pod: api.Pod) -> api.Pod:
    """The Pod as it travels: of its manifest only ``status`` is kept (plugins read the
    parsed fields, preemption reads the status conditions), by a copy -- except for a
    manifest shared with a Pod seen before (Pods made from one template share theirs):
    such a Pod travels as it is, since a message pickles a shared manifest only once."""
    raw = pod.raw
    if not raw or (len(raw) == 1 and "status" in raw):
        return pod
    memo = _STRIPPED.get(id(raw))
    if memo is not None and memo[0] is raw:
        return pod  # a shared manifest: pickled once per message anyway, no copy needed
    if len(_STRIPPED) >= _STRIPPED_MAX:
        _STRIPPED.clear()
    status = raw.get("status")
    stripped = {"status": status} if status else {}
    _STRIPPED[id(raw)] = (raw, stripped)
    other = pod.shallow_copy()
    other.raw = stripped
    return other


def pack(pod: api.Pod) -> bytes:
    """A Pod as bytes (:func:`strip` and pickle), for senders that need bytes."""
    return pickle.dumps(strip(pod), protocol=pickle.HIGHEST_PROTOCOL)


def unpack(data: bytes) -> api.Pod:
    """The Pod packed by :func:`pack`."""
    pod: api.Pod = pickle.loads(data)
    return pod


def encode_stream(entries: list[Entry]) -> bytes:
    """A stretch of the commit stream as one pickle (``b""`` when empty)."""
    return pickle.dumps(entries, protocol=pickle.HIGHEST_PROTOCOL) if entries else b""


def decode_stream(data: bytes) -> list[Entry]:
    """The entries :func:`encode_stream` pickled."""
    if not data:
        return []
    entries: list[Entry] = pickle.loads(data)
    return entries


def as_pod(item: api.Pod | bytes) -> api.Pod:
    """A stream item's Pod: the object itself, or the bytes of :func:`pack` unpacked."""
    return unpack(item) if isinstance(item, bytes) else item


def group_of(pod: api.Pod) -> str:
    """``namespace/group`` for a gang member, ``""`` for other Pods."""
    name = pod.labels.get(GROUP_LABEL, "")
    return f"{pod.namespace}/{name}" if name else ""


def node_domain_only(pod: api.Pod) -> bool:
    """Whether the Pod's required inter-pod terms are all anti-affinity by
    :data:`HOSTNAME_LABEL` with fixed namespaces (no required affinity: "no Pod matches
    anywhere" is a cluster-wide question; a namespace selector changes with Namespace
    labels, which no node generation records)."""
    aff, anti = pod.pod_affinity, pod.pod_anti_affinity
    if aff is not None and aff.required:
        return False
    return anti is None or node_domain_terms(anti.required)


def node_domain_terms(terms: tuple[api.PodAffinityTerm, ...]) -> bool:
    """Whether every term is by :data:`HOSTNAME_LABEL` with fixed namespaces."""
    return all(t.topology_key == HOSTNAME_LABEL and t.namespace_selector is None for t in terms)


def partition_of(node_name: str, shards: int) -> int:
    """The shard whose partition holds ``node_name`` (a stable hash, so adding or removing
    a node moves no other node between partitions)."""
    return zlib.crc32(node_name.encode()) % shards if shards > 1 else 0
