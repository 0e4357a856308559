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


def _resource_version(obj: api.Pod) -> str:
    return str((obj.raw.get("metadata") or {}).get("resourceVersion", ""))


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
