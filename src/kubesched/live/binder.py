"""The scheduler's API client in live mode: binds, deletes victims, reports failures.

:class:`LiveApi` is what ``Handle.api`` holds, so ``DefaultBinder`` binds through it:

- ``bind`` POSTs a ``v1 Binding`` to the Pod's ``binding`` subresource, with the Pod's UID as
  a precondition so a re-created Pod of the same name is never bound by mistake.  The answer
  (a ``Status``) is read as raw JSON: the generated ``create_namespaced_binding`` fails to
  deserialise it.  A definite error (409 already bound, 404 gone, 403, 429, 500) raises, so the
  binding cycle forgets the assumed Pod, unreserves and requeues it with backoff.
- A bind whose outcome is *unknown* (no answer before the client's timeout, a dropped
  connection, a 504 from the server's own timeout) may still be written: the API server
  finishes a write its client gave up on.  Forgetting the Pod then would free capacity that
  is taken, and a second Pod would overcommit the node (issue 17).  So the bind is settled
  before it returns, the Pod's capacity still assumed: re-GET the Pod; bound to this node is
  success; bound elsewhere is a 409; gone (or re-created, another UID) a 404; still unbound,
  the binding is POSTed again (same node, same UID: whichever write lands first wins, the
  other gets 409, read back by the next GET).  Only after ``settle_seconds`` without an
  answer does it fail like any other error.  Upstream forgets at once on any bind error; this
  is a deliberate deviation (docs/fidelity.md).
- The HTTP work of a bind runs inside ``io()``, a context the runner sets so that a binding
  worker lets the scheduling thread go on while it waits (:mod:`kubesched.live.turns`).
  ``bind_later`` is the same bind without a waiting thread: the POST goes out on the client's
  writes thread, a bind of unknown outcome is settled on a thread of its own, and the caller
  ends the binding cycle with ``finish_bind`` when the answer comes (the runner, for binding
  cycles that are only the bind).
- ``delete_pod`` deletes a preemption victim with its grace period and a UID precondition;
  a 404 (already gone) is success.  ``preempt_pod`` (what preemption calls,
  :func:`kubesched.framework.interface.preempt_pod`) first marks the victim
  ``DisruptionTarget`` and afterwards records the ``Preempted`` Event, as upstream.
- ``pod_scheduling_failed`` (called by the scheduler on every failed attempt) hands the
  ``PodScheduled=False`` condition and the ``FailedScheduling`` Event to the background
  :class:`~kubesched.live.recorder.Recorder`; a successful bind queues ``Scheduled``.

VolumeBinding's PreBind writes PVs and claims and waits for the PV controller through
``update_volume`` / ``wait_for_volumes`` (:mod:`kubesched.live.volumes`: upstream's
``BindPodVolumes``); a real cluster always runs a PV controller (``binds_claims``).

``guard`` is checked before each bind: a replica that is no longer the leader refuses to
bind (the binding cycle then requeues the Pod, and the new leader's fresh cache decides).
The nomination a preemption made (``pod.nominated_node_name``) is written with the
failure's condition, as upstream writes it in the same status patch.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kubesched.api import objects as api
from kubesched.live.client import ApiError, KubeClient
from kubesched.live.recorder import Recorder, disruption_condition
from kubesched.live.volumes import LiveVolumes

log = logging.getLogger(__name__)


OUTCOME_UNKNOWN = frozenset({0, 504})
"""No answer, or the server's own timeout: the write may still land."""
SETTLE_SECONDS = 60.0
"""How long an unknown bind is settled before it fails (kube-apiserver's request timeout)."""
SETTLE_PAUSE_MAX = 2.0


class NotLeaderError(Exception):
    """A bind attempted after this replica stopped leading."""


def _binding(pod: api.Pod, node_name: str) -> dict[str, Any]:
    """The ``v1 Binding`` of ``pod`` to ``node_name``, the Pod's UID as a precondition."""
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod.name, "namespace": pod.namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }
    if pod.uid:
        body["metadata"]["uid"] = pod.uid
    return body


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
        settle_seconds: float = SETTLE_SECONDS,
    ) -> None:
        self.client = client
        self.on_bound = on_bound
        """Called after each accepted bind (the startup split's ``bound`` time)."""
        self.recorder = recorder
        self.bind_timeout = bind_timeout
        self.guard = guard
        self.settle_seconds = settle_seconds
        self.io: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext
        """Wraps each bind's HTTP work (the runner lets the scheduling thread run meanwhile)."""
        self.binds = 0
        self.bind_errors = 0
        self.unknown_binds = 0
        """Binds whose first answer never came (then settled by re-GET / re-POST)."""
        self.last_bind_error: ApiError | None = None
        self._here = threading.local()
        """The calling thread's last bind error (:meth:`take_bind_error`)."""
        self.volumes = LiveVolumes(client, io=lambda: self.io(), guard=guard)
        """VolumeBinding's PreBind writes and wait (:mod:`kubesched.live.volumes`)."""

    def bind(self, pod: api.Pod, node_name: str) -> None:
        """POST ``pods/<name>/binding``; raises :class:`ApiError` or :class:`NotLeaderError`."""
        if not self.guard():
            self.bind_errors += 1
            raise NotLeaderError("not the leader any more; not binding")
        body = _binding(pod, node_name)
        try:
            with self.io():
                self._post_settled(pod, node_name, body)
        except ApiError as e:
            self.bind_errors += 1
            self.last_bind_error = self._here.error = e
            raise
        except NotLeaderError as e:
            self.bind_errors += 1
            self._here.error = e
            raise
        self.binds += 1
        if self.on_bound is not None:
            self.on_bound(pod)
        self.recorder.pod_scheduled(pod, node_name)

    def can_bind_later(self) -> bool:
        """Whether :meth:`bind_later` can be used (the client sends writes asynchronously)."""
        return self.client.writes is not None

    def bind_later(
        self, pod: api.Pod, node_name: str, answered: Callable[[Exception | None], None]
    ) -> None:
        """:meth:`bind` without waiting: the POST goes out on the client's writes thread
        (:class:`~kubesched.live.client.WritesInFlight`), the leadership checked just before
        it is sent.  ``answered(error)`` is called once, on that thread or -- for a bind
        whose outcome is unknown, settled as :meth:`bind` settles it -- on a thread of its
        own; the caller then calls :meth:`finish_bind` where the scheduler is owned."""
        writes = self.client.writes
        assert writes is not None, "bind_later without asynchronous writes"
        body = _binding(pod, node_name)
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding"

        def first(err: Exception | None) -> None:
            if isinstance(err, ApiError) and err.code in OUTCOME_UNKNOWN:
                threading.Thread(
                    target=self._settle_later,
                    args=(pod, node_name, body, err, answered),
                    name="kubesched-bind-settle",
                    daemon=True,
                ).start()
                return
            answered(err)

        def ready() -> Exception | None:
            return None if self.guard() else NotLeaderError("not the leader any more; not binding")

        writes.submit("POST", path, body, answered=first, ready=ready, timeout=self.bind_timeout)

    def _settle_later(
        self,
        pod: api.Pod,
        node_name: str,
        body: dict[str, Any],
        first: ApiError,
        answered: Callable[[Exception | None], None],
    ) -> None:
        try:
            self._settle(pod, node_name, body, first)
        except (ApiError, NotLeaderError) as e:
            answered(e)
            return
        answered(None)

    def finish_bind(self, pod: api.Pod, node_name: str, err: Exception | None) -> None:
        """The bookkeeping of :meth:`bind` after a :meth:`bind_later` answered: counters,
        ``on_bound`` and the ``Scheduled`` Event."""
        if err is not None:
            self.bind_errors += 1
            if isinstance(err, ApiError):
                self.last_bind_error = err
            return
        self.binds += 1
        if self.on_bound is not None:
            self.on_bound(pod)
        self.recorder.pod_scheduled(pod, node_name)

    def _post_settled(self, pod: api.Pod, node_name: str, body: dict[str, Any]) -> None:
        """POST the binding; when its outcome is unknown, settle it (see the module doc)."""
        pod_path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
        try:
            self.client.request("POST", pod_path + "/binding", body=body, timeout=self.bind_timeout)
            return
        except ApiError as e:
            if e.code not in OUTCOME_UNKNOWN:
                raise
            self._settle(pod, node_name, body, e)

    def _settle(self, pod: api.Pod, node_name: str, body: dict[str, Any], first: ApiError) -> None:
        """A bind whose first answer left its outcome unknown (``first``): settle it."""
        pod_path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
        self.unknown_binds += 1
        log.warning(
            "bind of %s to %s: outcome unknown (%s); settling it, its capacity stays assumed",
            pod.key,
            node_name,
            first,
        )
        deadline = time.monotonic() + self.settle_seconds
        pause = 0.05
        while True:
            if not self.guard():
                raise NotLeaderError("not the leader any more; bind of unknown outcome abandoned")
            if self._settled(pod, node_name, pod_path):
                return
            try:  # still unbound: the first write may be in flight; both name the same node
                self.client.request(
                    "POST", pod_path + "/binding", body=body, timeout=self.bind_timeout
                )
                return
            except ApiError as e:
                if e.code != 409 and e.code not in OUTCOME_UNKNOWN and not e.retryable:
                    raise
            if time.monotonic() > deadline:
                raise ApiError(0, f"bind outcome still unknown after {self.settle_seconds:g} s")
            time.sleep(pause)
            pause = min(pause * 2, SETTLE_PAUSE_MAX)

    def _settled(self, pod: api.Pod, node_name: str, pod_path: str) -> bool:
        """Re-GET the Pod: True when bound to ``node_name``; raises when it is decided
        otherwise (bound elsewhere 409, gone or re-created 404); False while unbound or
        when the GET itself gets no answer."""
        try:
            obj = self.client.request("GET", pod_path, timeout=self.bind_timeout)
        except ApiError as e:
            if e.code == 404:
                raise
            if e.retryable:
                return False
            raise
        meta = obj.get("metadata") or {}
        if pod.uid and meta.get("uid") != pod.uid:
            raise ApiError(404, f"pod {pod.key} was re-created meanwhile", "NotFound")
        bound = (obj.get("spec") or {}).get("nodeName") or ""
        if bound == node_name:
            log.info("bind of %s to %s: settled, it was written", pod.key, node_name)
            return True
        if bound:
            raise ApiError(409, f"pod {pod.key} is already assigned to node {bound}", "Conflict")
        return False

    def binds_claims(self) -> bool:
        """A real cluster's PV controller binds the claims PreBind writes (VolumeBinding)."""
        return True

    def update_volume(self, obj: dict[str, Any]) -> None:
        """PreBind's write of a PV or a claim (:meth:`LiveVolumes.update_volume`)."""
        self.volumes.update_volume(obj)

    def wait_for_volumes(self, pod: api.Pod, claims: list[str], timeout: float) -> bool:
        """PreBind's wait for the PV controller (:meth:`LiveVolumes.wait_for_volumes`)."""
        return self.volumes.wait_for_volumes(pod, claims, timeout)

    def take_bind_error(self) -> Exception | None:
        """The error of the last bind this thread made since the previous call (a binding
        cycle runs on one thread from start to end, so this is that cycle's bind)."""
        err: Exception | None = getattr(self._here, "error", None)
        self._here.error = None
        return err

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

    def pod_group_condition(self, pod_group: dict[str, Any], condition: dict[str, Any]) -> None:
        """Write a Workload API PodGroup's scheduling condition, asynchronously."""
        self.recorder.pod_group_condition(pod_group, condition)

    def pod_scheduling_failed(self, pod: api.Pod, reason: str, message: str) -> None:
        """Report a failed attempt (condition + Event), asynchronously."""
        self.recorder.pod_failed(pod, reason, message)
