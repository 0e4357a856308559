"""The scheduler's API client in live mode: binds, deletes victims, reports failures.

:class:`LiveApi` is what ``Handle.api`` holds, so ``DefaultBinder`` binds through it:

- ``bind`` POSTs a ``v1 Binding`` to the Pod's ``binding`` subresource, with the Pod's UID as
  a precondition so a re-created Pod of the same name is never bound by mistake.  The answer
  (a ``Status``) is read as raw JSON: the generated ``create_namespaced_binding`` fails to
  deserialise it.  Any error (409 already bound, 404 gone, 429, 500, a timeout) raises, so the
  binding cycle forgets the assumed Pod, unreserves and requeues it with backoff.
- ``delete_pod`` deletes a preemption victim with its grace period and a UID precondition;
  a 404 (already gone) is success.  ``preempt_pod`` (what preemption calls,
  :func:`kubesched.framework.interface.preempt_pod`) first marks the victim
  ``DisruptionTarget`` and afterwards records the ``Preempted`` Event, as upstream.
- ``pod_scheduling_failed`` (called by the scheduler on every failed attempt) hands the
  ``PodScheduled=False`` condition and the ``FailedScheduling`` Event to the background
  :class:`~kubesched.live.recorder.Recorder`; a successful bind queues ``Scheduled``.

``guard`` is checked before each bind: a replica that is no longer the leader refuses to
bind (the binding cycle then requeues the Pod, and the new leader's fresh cache decides).
The nomination a preemption made (``pod.nominated_node_name``) is written with the
failure's condition, as upstream writes it in the same status patch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kubesched.api import objects as api
from kubesched.live.client import ApiError, KubeClient
from kubesched.live.recorder import Recorder, disruption_condition

log = logging.getLogger(__name__)


class NotLeaderError(Exception):
    """A bind attempted after this replica stopped leading."""


class LiveApi:
    """Binding, victim deletion and failure reporting against the real API server."""

    def __init__(
        self,
        client: KubeClient,
        recorder: Recorder,
        *,
        bind_timeout: float = 5.0,
        guard: Callable[[], bool] = lambda: True,
        on_bound: Callable[[api.Pod], None] | None = None,
    ) -> None:
        self.client = client
        self.on_bound = on_bound
        """Called after each accepted bind (the startup split's ``bound`` time)."""
        self.recorder = recorder
        self.bind_timeout = bind_timeout
        self.guard = guard
        self.binds = 0
        self.bind_errors = 0
        self.last_bind_error: ApiError | None = None

    def bind(self, pod: api.Pod, node_name: str) -> None:
        """POST ``pods/<name>/binding``; raises :class:`ApiError` or :class:`NotLeaderError`."""
        if not self.guard():
            self.bind_errors += 1
            raise NotLeaderError("not the leader any more; not binding")
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        if pod.uid:
            body["metadata"]["uid"] = pod.uid
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding"
        try:
            self.client.request("POST", path, body=body, timeout=self.bind_timeout)
        except ApiError as e:
            self.bind_errors += 1
            self.last_bind_error = e
            raise
        self.binds += 1
        if self.on_bound is not None:
            self.on_bound(pod)
        self.recorder.pod_scheduled(pod, node_name)

    def delete_pod(self, pod: api.Pod, reason: str) -> None:
        """Delete a preemption victim (404 is fine)."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if pod.uid:
            body["preconditions"] = {"uid": pod.uid}
        if pod.termination_grace_period_seconds is not None:
            body["gracePeriodSeconds"] = pod.termination_grace_period_seconds
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
        try:
            self.client.request("DELETE", path, body=body)
        except ApiError as e:
            if e.code != 404:
                raise
        log.info("deleted %s (%s)", pod.key, reason)

    def preempt_pod(self, victim: api.Pod, preemptor: api.Pod, node: str, reason: str) -> None:
        """Upstream ``PreemptPod``: mark the victim ``DisruptionTarget`` (reason
        ``PreemptionByScheduler``), delete it, and record the ``Preempted`` Event.  A victim
        already gone is success; another failure of the status patch raises, as upstream
        then gives up the preemption."""
        message = f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod"
        patch = {"status": {"conditions": [disruption_condition(message)]}}
        path = f"/api/v1/namespaces/{victim.namespace}/pods/{victim.name}/status"
        try:
            self.client.request(
                "PATCH", path, body=patch, content_type="application/strategic-merge-patch+json"
            )
        except ApiError as e:
            if e.code == 404:
                return
            raise
        self.delete_pod(victim, reason)
        self.recorder.pod_preempted(victim, preemptor, node)

    def pod_scheduling_failed(self, pod: api.Pod, reason: str, message: str) -> None:
        """Report a failed attempt (condition + Event), asynchronously."""
        self.recorder.pod_failed(pod, reason, message)
