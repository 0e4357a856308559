"""Writes that must not hold up the scheduling loop: Events and ``PodScheduled`` conditions.

One background thread drains two queues:

- ``PodScheduled=False`` conditions, coalesced per Pod (only the latest failure of a Pod is
  written), as a strategic-merge patch of ``pods/status`` (upstream ``updatePod``) that also
  carries ``nominatedNodeName`` when preemption nominated (or un-nominated) the Pod; a write
  is skipped when the Pod already carries the same condition and nomination;
- a Workload API PodGroup's scheduling condition (``PodGroupInitiallyScheduled``, v1.36
  ``PodGroupScheduled``), coalesced per PodGroup, as a strategic-merge patch of
  ``podgroups/status`` (upstream ``updatePodGroupCondition``; the scheduler decides whether
  it changed, :class:`~kubesched.framework.interface.PodGroupStatusWriter`);
- ``events.k8s.io/v1`` Events (``FailedScheduling`` / Warning / action ``Scheduling``,
  ``Scheduled`` / Normal / action ``Binding``, ``Preempted`` / Normal / action
  ``Preempting`` on a preemption victim with the preemptor as ``related``), named
  ``<pod>.<unix-nanos hex>``, reported by the profile's scheduler name and
  ``<scheduler>-<hostname>`` as upstream's event recorder.

The scheduling thread only queues what happened (:class:`PendingEvent`: the Pod, reason,
note and the time); the Event is built and written on the recorder's thread, which wakes
at most every :data:`BATCH_SECONDS` while Events come and writes the batch on pipelined
HTTP/1.1 connections of its own (:class:`~kubesched.live.client.PipelinedPosts`), beside
the binds' writes thread -- upstream's broadcaster likewise records on its own goroutine,
through an Event client of its own.  A second attempt answered 409 AlreadyExists is
written: an Event's name is unique to its occurrence, so the first attempt landed and
only its answer was lost.

Rate limits as upstream's recorder: the note is capped at 1024 bytes; a spam filter allows
each (Pod, reason) a burst of 25 Events refilled at one per 5 minutes (client-go's
``EventSourceObjectSpamFilter``); at most 1000 Events wait, newer ones are dropped when full
(the broadcaster's ``maxQueuedEvents``).  All requests go through the client's QPS limiter.
Failures are logged and dropped: these writes are informative, never needed for correctness.
"""

from __future__ import annotations

import collections
import logging
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

from kubesched.api import objects as api
from kubesched.live.client import ApiError, KubeClient, PipelinedPosts
from kubesched.live.leader import micro_time

log = logging.getLogger(__name__)

NOTE_LIMIT = 1024
MAX_QUEUED_EVENTS = 1000
SPAM_BURST = 25
SPAM_REFILL_SECONDS = 300.0
BATCH_SECONDS = 0.05
"""How long the recorder lets Events gather after the first one before writing them (one
wake-up of its thread per batch, not per Event)."""
WRITE_ATTEMPTS = 2


def cap_note(note: str) -> str:
    """At most :data:`NOTE_LIMIT` bytes of UTF-8, cut on a character boundary."""
    data = note.encode()
    if len(data) <= NOTE_LIMIT:
        return note
    return data[: NOTE_LIMIT - 4].decode("utf-8", "ignore") + " ..."


@dataclass(slots=True, frozen=True)
class PendingEvent:
    """An Event as the scheduling thread queues it; :meth:`Recorder.event_body` builds it."""

    pod: api.Pod
    etype: str
    reason: str
    action: str
    note: str
    related: api.Pod | None
    at_ns: int
    """When it happened (``time.time_ns()``): the Event's time and name."""


@dataclass(slots=True)
class _Bucket:
    tokens: float
    last: float


class SpamFilter:
    """Per-key token buckets (burst :data:`SPAM_BURST`, one token per 5 minutes)."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self.clock = clock
        self.buckets: dict[tuple[str, str], _Bucket] = {}

    def allow(self, key: tuple[str, str]) -> bool:
        now = self.clock()
        b = self.buckets.get(key)
        if b is None:
            b = self.buckets[key] = _Bucket(float(SPAM_BURST), now)
        b.tokens = min(SPAM_BURST, b.tokens + (now - b.last) / SPAM_REFILL_SECONDS)
        b.last = now
        if b.tokens < 1:
            return False
        b.tokens -= 1
        return True


def pod_condition_patch(pod: api.Pod, reason: str, message: str) -> dict[str, Any]:
    """The strategic-merge patch of ``pods/status`` that sets ``PodScheduled=False`` and, when
    the scheduler's nomination differs from the Pod's, ``nominatedNodeName`` (null clears
    it, as upstream's override with an empty node)."""
    cond = {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
        "lastProbeTime": None,
        "lastTransitionTime": _seconds_now(),
    }
    status: dict[str, Any] = {"conditions": [cond]}
    if _nominated(pod) != pod.nominated_node_name:
        status["nominatedNodeName"] = pod.nominated_node_name or None
    return {"status": status}


def disruption_condition(message: str) -> dict[str, Any]:
    """The ``DisruptionTarget`` condition preemption puts on a victim (upstream's reason
    ``PreemptionByScheduler``)."""
    return {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": message,
        "lastTransitionTime": _seconds_now(),
    }


def _events_path(ev: PendingEvent) -> str:
    return f"/apis/events.k8s.io/v1/namespaces/{ev.pod.namespace}/events"


def _seconds_now() -> str:
    """Now as RFC 3339 to the second (a condition's ``lastTransitionTime``)."""
    return micro_time().split(".")[0] + "Z"


def _reference(pod: api.Pod) -> dict[str, str]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": pod.namespace,
        "name": pod.name,
        "uid": pod.uid,
    }


def _nominated(pod: api.Pod) -> str:
    return str((pod.raw.get("status") or {}).get("nominatedNodeName") or "")


def has_condition(pod: api.Pod, reason: str, message: str) -> bool:
    """The Pod (as last seen) already has this ``PodScheduled=False`` condition and
    nomination, so a patch would change nothing (upstream skips it too)."""
    if _nominated(pod) != pod.nominated_node_name:
        return False
    for c in (pod.raw.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return bool(
                c.get("status") == "False"
                and c.get("reason") == reason
                and c.get("message") == message
            )
    return False


class Recorder:
    """The background writer; :meth:`run` is its thread body."""

    def __init__(self, client: KubeClient, *, host: str | None = None) -> None:
        self.client = client
        self.host = host or socket.gethostname()
        self.spam = SpamFilter()
        self.cond = threading.Condition()
        self.conditions: dict[str, tuple[api.Pod, str, str]] = {}
        self.group_conditions: dict[str, tuple[str, dict[str, Any]]] = {}
        """Workload API PodGroups' scheduling conditions to write, the latest per PodGroup:
        its ``podgroups/status`` path and the condition."""
        self.events: collections.deque[PendingEvent] = collections.deque()
        self.retries: list[tuple[float, PendingEvent, int]] = []
        """Events whose pipelined write failed and may be tried again (when, what, the
        attempt it will be)."""
        self.dropped = 0
        self.written = 0
        self.pipe: PipelinedPosts | None = client.pipelined() if client is not None else None
        """Where Events are written, on this thread (None: one by one through urllib3, when
        libcurl cannot speak for the client's configuration)."""

    # ------------------------------------------------------------------ producers
    def pod_failed(self, pod: api.Pod, reason: str, message: str) -> None:
        """Queue the condition and a ``FailedScheduling`` Event."""
        with self.cond:
            if not has_condition(pod, reason, message):
                self.conditions[pod.key] = (pod, reason, message)
            self._event(pod, "Warning", "FailedScheduling", "Scheduling", message)
            self.cond.notify()

    def pod_group_condition(self, pod_group: dict[str, Any], condition: dict[str, Any]) -> None:
        """Queue a Workload API PodGroup's scheduling condition (a strategic-merge patch of
        its ``status``, merged by ``type``; upstream ``PatchPodGroupStatus``), in the API
        version it was listed in."""
        meta = pod_group.get("metadata") or {}
        path = (
            f"/apis/{pod_group.get('apiVersion')}/namespaces/{meta.get('namespace')}"
            f"/podgroups/{meta.get('name')}/status"
        )
        with self.cond:
            self.group_conditions[path] = (path, condition)
            self.cond.notify()

    def pod_scheduled(self, pod: api.Pod, node: str) -> None:
        """Queue a ``Scheduled`` Event."""
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node}"
        with self.cond:
            self._event(pod, "Normal", "Scheduled", "Binding", note)
            self.cond.notify()

    def pod_preempted(self, victim: api.Pod, preemptor: api.Pod, node: str) -> None:
        """Queue upstream's ``Preempted`` Event on the victim (related: the preemptor)."""
        note = f"Preempted by pod {preemptor.uid} on node {node}"
        with self.cond:
            self._event(victim, "Normal", "Preempted", "Preempting", note, related=preemptor)
            self.cond.notify()

    def _event(
        self,
        pod: api.Pod,
        etype: str,
        reason: str,
        action: str,
        note: str,
        related: api.Pod | None = None,
    ) -> None:
        if not self.spam.allow((pod.uid or pod.key, reason)):
            self.dropped += 1
            return
        if len(self.events) >= MAX_QUEUED_EVENTS:
            self.dropped += 1
            return
        self.events.append(PendingEvent(pod, etype, reason, action, note, related, time.time_ns()))

    def event_body(self, ev: PendingEvent) -> dict[str, Any]:
        """The ``events.k8s.io/v1`` Event of ``ev``, named ``<pod>.<unix-nanos hex>``."""
        pod, related = ev.pod, ev.related
        controller = (related or pod).scheduler_name
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{pod.name}.{ev.at_ns:x}", "namespace": pod.namespace},
            "eventTime": micro_time(ev.at_ns / 1e9),
            "reportingController": controller,
            "reportingInstance": f"{controller}-{self.host}",
            "action": ev.action,
            "reason": ev.reason,
            "type": ev.etype,
            "note": cap_note(ev.note),
            "regarding": _reference(pod),
            **({"related": _reference(related)} if related is not None else {}),
        }

    # ------------------------------------------------------------------ the thread
    def run(self, stop: threading.Event) -> None:
        """Write until ``stop`` is set, then flush what is queued (bounded by the limiter)."""
        try:
            self._run(stop)
        finally:
            if self.pipe is not None:
                self.pipe.close()

    def _run(self, stop: threading.Event) -> None:
        while True:
            with self.cond:
                while (
                    not self.conditions
                    and not self.group_conditions
                    and not self.events
                    and not self._retry_due()
                    and not stop.is_set()
                ):
                    self.cond.wait(timeout=0.5 if not self.retries else 0.2)
                if (
                    stop.is_set()
                    and not self.conditions
                    and not self.group_conditions
                    and not self.events
                ):
                    return
            if not stop.is_set():
                # let a batch gather: the producers' notify() finds no waiter meanwhile
                time.sleep(BATCH_SECONDS)
            with self.cond:
                conditions = list(self.conditions.values())
                self.conditions.clear()
                group_conditions = list(self.group_conditions.values())
                self.group_conditions.clear()
                events = [(ev, 1) for ev in self.events]  # at most MAX_QUEUED_EVENTS
                self.events.clear()
                events.extend(self._take_retries())
            for pod, reason, message in conditions:
                self._write(
                    "PATCH",
                    f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status",
                    pod_condition_patch(pod, reason, message),
                    "application/strategic-merge-patch+json",
                )
            for path, condition in group_conditions:
                self._write(
                    "PATCH",
                    path,
                    {"status": {"conditions": [condition]}},
                    "application/strategic-merge-patch+json",
                )
            if self.pipe is None:
                for ev, _ in events:
                    self._write("POST", _events_path(ev), self.event_body(ev))
            elif events:
                self._post(self.pipe, events)

    def _post(self, pipe: PipelinedPosts, events: list[tuple[PendingEvent, int]]) -> None:
        """Write a batch of Events through ``pipe`` on this thread, each paced by the
        client's limiter (the batch leaves when its last token is due)."""
        delay = max(self.client.limiter.reserve() for _ in events)
        if delay > 0:
            time.sleep(delay)
        paths = [_events_path(ev) for ev, _ in events]
        bodies = [self.event_body(ev) for ev, _ in events]
        answers = pipe.post(list(zip(paths, bodies, strict=True)), "application/json", 5.0)
        for (ev, attempt), path, err in zip(events, paths, answers, strict=True):
            self._answered(ev, attempt, path, err)

    def _answered(self, ev: PendingEvent, attempt: int, path: str, err: Exception | None) -> None:
        """Count an Event's answer, or queue its next attempt after a retryable failure.  A
        second attempt answered 409 AlreadyExists found the first one written (an Event's
        name is unique to its occurrence)."""
        if err is None or (isinstance(err, ApiError) and err.code == 409 and attempt > 1):
            self.written += 1
            return
        if isinstance(err, ApiError):
            if err.code == 404:
                return  # the namespace is gone
            if err.retryable and attempt < WRITE_ATTEMPTS:
                due = time.monotonic() + min(err.retry_after or 0.2, 2.0)
                with self.cond:
                    self.retries.append((due, ev, attempt + 1))
                return
        log.info("dropping POST %s: %s", path, err)

    def _retry_due(self) -> bool:
        now = time.monotonic()
        return any(due <= now for due, _, _ in self.retries)

    def _take_retries(self) -> list[tuple[PendingEvent, int]]:
        """The failed Events due for another attempt, and its number (under ``cond``)."""
        now = time.monotonic()
        due = [(ev, n) for at, ev, n in self.retries if at <= now]
        self.retries = [r for r in self.retries if r[0] > now]
        return due

    def wake(self) -> None:
        """Wake the thread (shutdown)."""
        with self.cond:
            self.cond.notify_all()

    def _write(
        self, method: str, path: str, body: dict[str, Any], ctype: str = "application/json"
    ) -> None:
        for attempt in (1, 2):
            try:
                self.client.request(method, path, body=body, content_type=ctype, timeout=5.0)
                self.written += 1
                return
            except ApiError as e:
                if e.code == 404:
                    return  # the Pod is gone
                if not e.retryable or attempt == 2:
                    log.info("dropping %s %s: %s", method, path, e)
                    return
                time.sleep(min(e.retry_after or 0.2, 2.0))
