"""Informer deltas to the scheduler's informer-style calls (on the scheduling thread).

Pods and Nodes are parsed with :mod:`kubesched.api` (a manifest kubesched cannot read is
logged and skipped, never fatal); the last parsed object of each is kept so updates and
deletes hand the scheduler the ``old`` object it expects.  Everything else (Namespaces,
Services, PodDisruptionBudgets, PodGroups, quotas) goes to ``on_object`` as raw JSON.

As upstream's event handlers: a Pod update with an unchanged resourceVersion (an informer
resync) is dropped; a Pod that reached ``Succeeded`` or ``Failed`` leaves the cache (upstream
filters terminal Pods out of the scheduler's Pod informer); a Pod re-created under the same
name (new UID) is a delete followed by an add.  Which Pods are scheduled is decided by the
scheduler (``spec.schedulerName`` must name one of its profiles); bound Pods of every
scheduler occupy the cache.

A Pod is parsed when it is added, and parsed again on an update -- except the update a bind
causes, whose manifest differs from the last one read only where a bind writes
(:func:`after_bind`: ``spec.nodeName``, the ``PodScheduled`` condition, the resourceVersion
and bookkeeping no parser reads): the Pod already read, with the new node name and manifest,
is what the parse would give, at a fraction of its cost (every Pod kubesched binds comes back
once so).  A watched Pod's JSON text (``Delta.text``) is read on the quick path from the text,
its sections remembered (:class:`~kubesched.api.podquick.Sections`): the Pods of one template
read their containers, affinity and tolerations once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kubesched.api import objects as api
from kubesched.api import podquick
from kubesched.api.errors import InputError
from kubesched.api.parse import parse_node
from kubesched.api.source import bulk_allocation
from kubesched.live.informer import DELETED, Delta, object_key
from kubesched.scheduler import Scheduler

log = logging.getLogger(__name__)

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
SECTIONS_RENEWED = 4096
"""Pod texts read before the remembered sections start afresh (their memory stays small)."""


def _resource_version(obj: api.Pod) -> str:
    return str((obj.raw.get("metadata") or {}).get("resourceVersion", ""))


BIND_METADATA = frozenset({"resourceVersion", "managedFields", "generation"})
"""What of ``metadata`` a write may change without changing the parsed Pod (no parser reads
them)."""
BIND_SPEC = frozenset({"nodeName"})
BIND_STATUS = frozenset({"conditions", "observedGeneration"})
"""``status.conditions`` may differ only in the ``PodScheduled`` ones (:func:`_same_conditions`:
the full parse reads ``PodResizePending``); ``observedGeneration`` no parser reads."""


def after_bind(old: api.Pod, new: dict[str, Any]) -> api.Pod | None:
    """The Pod ``new`` parses to, when ``new`` is the manifest ``old`` was read from
    (``old.raw``) with at most a bind's changes -- ``spec.nodeName`` (a string), the
    ``PodScheduled`` condition, :data:`BIND_METADATA`, :data:`BIND_STATUS` -- and every other
    key equal: a copy of ``old`` with that node name and ``raw`` = ``new``.  None when
    anything else differs (then ``new`` is parsed)."""
    was = old.raw
    if type(was) is not dict or was.keys() != new.keys():
        return None
    for key, value in new.items():
        before = was[key]
        if key == "spec":
            if not _same_except(before, value, BIND_SPEC):
                return None
        elif key == "metadata":
            if not _same_except(before, value, BIND_METADATA):
                return None
        elif key == "status":
            if not _same_except(before, value, BIND_STATUS) or not _same_conditions(
                before.get("conditions"), value.get("conditions")
            ):
                return None
        elif value != before:
            return None
    spec = new.get("spec")
    node = spec.get("nodeName") if type(spec) is dict else None
    if node is not None and type(node) is not str:
        return None
    pod = old.bound_to(node or "")
    pod.raw = new
    return pod


def _same_except(a: object, b: object, keys: frozenset[str]) -> bool:
    """Two mappings equal but for ``keys``."""
    if type(a) is not dict or type(b) is not dict:
        return False
    a, b = a.copy(), b.copy()  # shallow copies in C, then a few pops: no comprehension
    for k in keys:
        a.pop(k, None)
        b.pop(k, None)
    return a == b


def _same_conditions(a: object, b: object) -> bool:
    """Two ``status.conditions`` equal but for their ``PodScheduled`` entries (mappings);
    absent or null is none."""
    if a == b:
        return True
    a = [] if a is None else a
    b = [] if b is None else b
    if type(a) is not list or type(b) is not list:
        return False
    return _unscheduled(a) == _unscheduled(b)


def _unscheduled(conditions: list[Any]) -> list[Any]:
    return [c for c in conditions if type(c) is not dict or c.get("type") != "PodScheduled"]


class Dispatcher:
    """Applies deltas to one :class:`~kubesched.scheduler.Scheduler`."""

    def __init__(
        self, scheduler: Scheduler, report: Callable[[api.Pod, str], None] | None = None
    ) -> None:
        self.scheduler = scheduler
        self.pods: dict[str, api.Pod] = {}
        self.nodes: dict[str, api.Node] = {}
        self.skipped = 0
        """Objects that could not be parsed."""
        self.sections = podquick.Sections()
        """The sections (containers, affinity, ...) of the watched Pods' texts read so far:
        the Pods of one template read them once (:func:`~kubesched.api.podquick.quick_pod`),
        started afresh every :data:`SECTIONS_RENEWED` texts."""
        self._texts_read = 0
        self.report = report
        """Told of a pending Pod of ours that cannot be read (live mode: an Event and a
        ``PodScheduled=False`` condition, as upstream reports a Pod it cannot schedule)."""

    def _unreadable(self, key: str, obj: dict[str, Any], err: InputError) -> None:
        """A Pod the API server accepted and kubesched cannot read stays visible: if it is a
        pending Pod for one of our profiles it is kept in :attr:`Scheduler.unreadable` (the
        pending metrics count it), reported, and read again when it changes."""
        self.skipped += 1
        log.warning("cannot read Pod %s: %s", key, err)
        spec = obj.get("spec")
        meta = obj.get("metadata")
        spec = spec if isinstance(spec, dict) else {}
        meta = meta if isinstance(meta, dict) else {}
        name = spec.get("schedulerName") or api.DEFAULT_SCHEDULER_NAME
        if spec.get("nodeName") or name not in self.scheduler.profiles:
            return
        message = f"kubesched cannot read this Pod: {err}"
        self.scheduler.unreadable[key] = message
        if self.report is not None:
            stub = api.Pod(
                name=str(meta.get("name") or key.rsplit("/", 1)[-1]),
                namespace=str(meta.get("namespace") or "default"),
                uid=str(meta.get("uid") or ""),
                scheduler_name=str(name),
            )
            stub.raw = {}  # its own status may be what cannot be read: nothing of it is used
            self.report(stub, message)

    def apply(self, delta: Delta) -> None:
        """One delta, whatever its kind."""
        if delta.kind == "Pod":
            self._pod(delta)
        elif delta.kind == "Node":
            self._node(delta)
        else:
            self.scheduler.on_object(delta.new, deleted=delta.type == DELETED)

    def apply_listed(self, delta: Delta) -> None:
        """A first list's objects (``delta.listed``): as their ``ADDED`` deltas one by one,
        except the Pods of a list that names none known yet, which are parsed on the quick
        path and handed to the scheduler at once (:meth:`Scheduler.on_pods_added`: the bound
        ones enter the cache in bulk) -- unless a subclass reads Pod deltas its own way."""
        items = delta.listed
        keys = [object_key(obj) for obj in items] if delta.kind == "Pod" else []
        bulk = (
            delta.kind == "Pod"
            and type(self)._pod is Dispatcher._pod
            and self.pods.keys().isdisjoint(keys)
        )
        with bulk_allocation():
            if not bulk:
                for one in delta.split():
                    try:
                        self.apply(one)
                    except Exception:  # one bad object must not stop the others (the runner's rule)
                        log.exception("failed to apply %s %s", one.type, one.kind)
                return
            pods = []
            for key, obj in zip(keys, items, strict=True):
                try:
                    pod = podquick.parse_pod(obj)
                except InputError as e:
                    self._unreadable(key, obj, e)
                    continue
                if pod.phase not in TERMINAL_PHASES:
                    self.pods[key] = pod
                    pods.append(pod)
            self.scheduler.on_pods_added(pods)

    def _pod(self, delta: Delta) -> None:
        s = self.scheduler
        key = object_key(delta.new)
        old = self.pods.get(key)
        if delta.type == DELETED:
            s.unreadable.pop(key, None)
            if old is not None:
                del self.pods[key]
                s.on_pod_delete(old)
            return
        pod = after_bind(old, delta.new) if old is not None else None
        if pod is None and delta.text is not None:
            self._texts_read += 1
            if self._texts_read % SECTIONS_RENEWED == 0:  # bounded: a long run sees many
                self.sections = podquick.Sections()
            quick = podquick.quick_pod(delta.text, self.sections)
            if quick is not None:
                pod = quick.pod
                pod.raw = delta.new  # the same manifest, decoded already
        if pod is None:
            try:
                pod = podquick.parse_pod(delta.new)
            except InputError as e:
                self._unreadable(key, delta.new, e)
                return
        s.unreadable.pop(key, None)
        if old is not None and old.uid != pod.uid:
            del self.pods[key]
            s.on_pod_delete(old)
            old = None
        if pod.phase in TERMINAL_PHASES:
            if old is not None:
                del self.pods[key]
                s.on_pod_delete(old)
            return
        if old is not None and _resource_version(old) == _resource_version(pod):
            return
        self.pods[key] = pod
        if old is None:
            s.on_pod_add(pod)
        else:
            s.on_pod_update(old, pod)

    def _node(self, delta: Delta) -> None:
        s = self.scheduler
        name = object_key(delta.new)
        old = self.nodes.get(name)
        if delta.type == DELETED:
            if old is not None:
                del self.nodes[name]
                s.on_node_delete(old)
            return
        try:
            node = parse_node(delta.new)
        except InputError as e:
            self.skipped += 1
            log.warning("skipping Node %s: %s", name, e)
            return
        self.nodes[name] = node
        if old is None:
            s.on_node_add(node)
        else:
            s.on_node_update(old, node)
