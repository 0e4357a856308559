"""The scheduler's informer side: cluster events into the cache, the queue and the plugins.

Upstream's ``eventhandlers.go``: a node or Pod added, changed or deleted updates the cache
(bound Pods) or the queue (ours, unbound), tells the plugins' event handlers, and moves
waiting Pods whose queueing hints say the event may help.  Each event's handling time is
observed as ``scheduler_event_handling_duration_seconds`` under upstream's labels."""

from __future__ import annotations

import logging
import time
from typing import Any

from kubesched.api import objects as api
from kubesched.framework import events
from kubesched.queue import events as qevents
from kubesched.scheduler.base import SchedulerBase

log = logging.getLogger("kubesched.scheduler")


class EventsMixin(SchedulerBase):
    """The ``on_*`` methods that live mode's informers, the simulator and the benchmark call."""

    def responsible_for(self, pod: api.Pod) -> bool:
        """Whether one of our profiles schedules this Pod."""
        return pod.scheduler_name in self.profiles

    def _handled(self, start: float, *labels: str) -> None:
        """An informer event took from ``start`` until now (upstream ``EventHandlingLatency``,
        observed under each of ``labels``)."""
        seconds = time.perf_counter() - start
        for label in labels:
            self._event_timer(seconds, label)

    def on_node_add(self, node: api.Node) -> None:
        """A node appeared."""
        start = time.perf_counter()
        self.cluster.add_node(node)
        self.queue.move_all_to_active_or_backoff(events.NODE_ADD, None, node)
        self._handled(start, "NodeAdd")

    def on_node_update(self, old: api.Node, new: api.Node) -> None:
        """A node changed; requeue by what changed (each change timed with the cache update,
        as upstream)."""
        start = time.perf_counter()
        self.cluster.update_node(new)
        updating = time.perf_counter() - start
        for event in events.node_update_events(old, new):
            moving = time.perf_counter()
            self.queue.move_all_to_active_or_backoff(event, old, new)
            self._handled(moving - updating, qevents.event_label(event))

    def on_node_delete(self, node: api.Node) -> None:
        """A node went away with its Pods."""
        start = time.perf_counter()
        self.cluster.remove_node(node.name)
        self.queue.move_all_to_active_or_backoff(events.NODE_DELETE, node, None)
        self._handled(start, "NodeDelete")

    def _tell(self, method: str, *args: Any) -> None:
        """Pass an informer event on to the plugins' event handlers."""
        for hear in self.handle.listeners[method]:
            hear(*args)

    def on_pod_add(self, pod: api.Pod) -> None:
        """A Pod appeared: bound ones go to the cache, ours to the queue."""
        start = time.perf_counter()
        self._tell("on_pod_add", pod)
        if pod.node_name:  # one whose node the cache lacks waits for it (ClusterState.ghosts)
            self.cluster.add_pod(pod)
            self.queue.assigned_pod_added(pod)
            self._handled(start, "AssignedPodAdd")
        elif self.responsible_for(pod):
            self.queue.add(pod)
            self._handled(start, "UnschedulablePodAdd")

    def on_pods_added(self, pods: list[api.Pod]) -> None:
        """:meth:`on_pod_add` for each of ``pods`` (a first LIST's, none in the cache yet):
        the same cache, queue and handler calls, with the bound Pods entering the cache in
        one bulk load (:meth:`ClusterState.add_bound_pods`) and each one's share of its
        time observed as its event.  A subclass that extends :meth:`on_pod_add` gets it
        called once per Pod instead."""
        bound = [p for p in pods if p.node_name]
        if type(self).on_pod_add is not EventsMixin.on_pod_add or any(
            p.key in self.cluster.pods for p in bound
        ):
            for pod in pods:
                self.on_pod_add(pod)
            return
        start = time.perf_counter()
        if self.handle.event_handlers:
            for pod in pods:
                self._tell("on_pod_add", pod)
        self.cluster.add_bound_pods(bound)  # those whose node is missing wait for it
        for pod in bound:
            self.queue.assigned_pod_added(pod)
        share = (time.perf_counter() - start) / max(1, len(bound))
        for _ in bound:
            self._event_timer(share, "AssignedPodAdd")
        for pod in pods:
            if not pod.node_name and self.responsible_for(pod):
                start = time.perf_counter()
                self.queue.add(pod)
                self._handled(start, "UnschedulablePodAdd")

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        """A Pod changed (a bind confirmed, labels changed, gates removed, ...)."""
        start = time.perf_counter()
        self._tell("on_pod_update", old, new)
        if new.node_name:
            if not old.node_name:  # upstream: the unscheduled informer's delete, then an add
                self.queue.delete(old)
                self._handled(start, "UnschedulablePodDelete")
                self.on_pod_add(new)
                return
            self.cluster.add_pod(new)
            self.queue.assigned_pod_updated(old, new)
            self._handled(start, "AssignedPodUpdate")
        elif self.responsible_for(new):
            self.queue.update(old, new)
            labels = {
                qevents.event_label(e) for e in qevents.pod_scheduling_properties_change(new, old)
            }
            self._handled(
                start, "UnschedulablePodUpdate", *sorted(labels - {"UnschedulablePodUpdate"})
            )

    def on_pod_delete(self, pod: api.Pod) -> None:
        """A Pod was deleted: free its resources or drop it from the queue."""
        start = time.perf_counter()
        self._tell("on_pod_delete", pod)
        if self.handle.reject_waiting_pod(pod.key):
            self._drain_waiting()
        if self.cluster.remove_pod(pod.key) is not None:
            self.queue.move_all_to_active_or_backoff(events.ASSIGNED_POD_DELETE, pod, None)
            label = "AssignedPodDelete"
        else:
            self.queue.delete(pod)
            label = "UnschedulablePodDelete"
        self.failures.pop(pod.key, None)
        self._handled(start, label)

    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        """A Namespace, Service, PodDisruptionBudget or other object changed."""
        start = time.perf_counter()
        kind = self.cluster.apply_object(obj, deleted=deleted)
        self._tell("on_object", obj, deleted)
        event = events.object_event(kind, deleted)
        if event is not None:
            self.queue.move_all_to_active_or_backoff(event, None, obj)
            self._handled(start, qevents.event_label(event))
