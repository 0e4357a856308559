"""The messages between the coordinator (dispatcher + binder) and the scheduler shards.

Messages are small tuples of strings, ints and bytes, pickled once per send: Pods travel as
their pickled bytes (made once, when the dispatcher hands a Pod out, and reused when its
commit is streamed to the other shards), never as live objects shared between processes.

Coordinator to shard, one :class:`ToShard` per step:

- ``entries``: the commit stream since the shard's cursor, a list of *entries* (below): what
  the authoritative cache and the API server's watch saw, in order;
- ``private``: ``(key, reason)`` of this shard's proposals the binder refused (the shard
  forgets its assumed copy);
- ``pods``: pickled Pods handed to this shard to schedule;
- ``now``: the coordinator's clock (the shard's clock, so Permit timeouts agree).

Entries (first item is the kind; ``gen`` is the node's authoritative
``NodeTable.generation`` after the change, which proposals quote back as their version):

=====================================================  =========================================
``(NODE_ADD, node, gen)`` / ``(NODE_UPDATE, old, new, gen)``  node events
``(NODE_DELETE, node)``                                 node gone
``(POD_ADD, pod_bytes, gen)``                           a Pod created already bound
``(BOUND, key, node, gen, proposer, pod_bytes|None)``   a pending Pod is bound (``None`` for the
                                                        proposing shard, which has the Pod)
``(ASSUMED, key, node, gen, proposer, pod_bytes|None)`` the binder holds resources for a Pod
                                                        whose bind is not confirmed yet
``(FORGOT, key, node, gen)``                            the binder released such a Pod
``(POD_UPDATE, old_bytes, new_bytes)``                  a bound Pod changed
``(POD_DELETE, pod_bytes, node, gen)``                  a Pod was deleted (node ``""``: pending)
``(OBJECT, obj, deleted)``                              Namespace, Service, PodGroup, ...
``(GENERATIONS, {node: gen})``                          snapshot of every node's version
=====================================================  =========================================

Shard to coordinator, one :class:`FromShard` per :class:`ToShard`: ``results`` (below),
``waiting`` (Pods held at the shard's Permit) and ``deadline`` (the earliest Permit deadline,
or None), ``busy`` (seconds the shard spent on the message).

Results: ``(PROPOSE, key, node, version, alternatives, local, group)`` where ``alternatives``
is a tuple of ``(node, version)`` in score order and ``local`` says the cross-node Filter
plugins (PodTopologySpread, InterPodAffinity) had nothing to check for this Pod; or
``(FAILED, key, reason, message, unschedulable_plugins, pending_plugins, nominated, victims)``
with ``victims`` the keys the shard's PostFilter chose to preempt on ``nominated``.
"""

from __future__ import annotations

import pickle
import zlib
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import objects as api

NODE_ADD = "N+"
NODE_UPDATE = "N~"
NODE_DELETE = "N-"
POD_ADD = "P+"
BOUND = "B"
ASSUMED = "A"
FORGOT = "F"
POD_UPDATE = "P~"
POD_DELETE = "P-"
OBJECT = "O"
GENERATIONS = "G"

PROPOSE = "ok"
FAILED = "fail"

GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""Pods carrying this label are dispatched, proposed and committed as one unit per group."""

Entry = tuple[Any, ...]
Result = tuple[Any, ...]


@dataclass(slots=True)
class ToShard:
    """One step's message to a shard (see the module docstring)."""

    now: float
    entries: list[Entry] = field(default_factory=list)
    private: list[tuple[str, str]] = field(default_factory=list)
    pods: list[bytes] = field(default_factory=list)
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


def pack(pod: api.Pod) -> bytes:
    """A Pod as bytes; of its manifest only ``status`` is kept (plugins read the parsed
    fields, preemption reads the status conditions)."""
    if pod.raw:
        status = pod.raw.get("status")
        pod = pod.bound_to(pod.node_name)
        pod.raw = {"status": status} if status else {}
    return pickle.dumps(pod, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(data: bytes) -> api.Pod:
    """The Pod packed by :func:`pack`."""
    pod: api.Pod = pickle.loads(data)
    return pod


def group_of(pod: api.Pod) -> str:
    """``namespace/group`` for a gang member, ``""`` for other Pods."""
    name = pod.labels.get(GROUP_LABEL, "")
    return f"{pod.namespace}/{name}" if name else ""


def partition_of(node_name: str, shards: int) -> int:
    """The shard whose partition holds ``node_name`` (a stable hash, so adding or removing
    a node moves no other node between partitions)."""
    return zlib.crc32(node_name.encode()) % shards if shards > 1 else 0
