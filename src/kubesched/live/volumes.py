"""VolumeBinding's PreBind against the real API server: upstream's ``BindPodVolumes``.

Upstream's binder (v1.34 ``volumebinding/binder.go``) does two things once a node is chosen
for a Pod with claims to bind, and :class:`LiveVolumes` does them for
:class:`~kubesched.live.binder.LiveApi`, which the plugin sees as its
:class:`~kubesched.plugins.volumebinding.plugin.VolumeBindWaiter`:

- ``bindAPIUpdate`` (:meth:`LiveVolumes.update_volume`): PUT each statically matched PV with
  its ``claimRef`` (optimistic concurrency: the informer's ``resourceVersion``, so a PV
  changed meanwhile is a 409), then each claim to provision with the
  ``volume.kubernetes.io/selected-node`` annotation.  The first failure ends PreBind with the
  API server's message (upstream returns the client's error unwrapped); what was written
  stays written (upstream: "There is no API rollback"), and Unreserve drops the assumed
  versions.  The answers are kept for the wait, per thread (a binding cycle runs on one
  thread from start to end).
- ``checkBindings`` polled every second, the first poll one second after the writes, up to
  ``bindTimeoutSeconds`` (:meth:`LiveVolumes.wait_for_volumes`; False after it, which the
  plugin reports as ``binding volumes: context deadline exceeded``).  Each poll GETs the
  Pod (gone: ``pod does not exist any more``), each written PV (a dropped ``claimRef``:
  ``ClaimRef got reset``) and each claim, which must be fully bound (``volumeName`` and the
  ``pv.kubernetes.io/bind-completed`` annotation); a claim to provision whose
  selected-node annotation is gone or names another node failed to provision (the
  provisioner's signal).  Upstream reads these from its informers' caches; here a GET
  reads the API server's current version, which is never older than the write.  The PV's
  node affinity is not checked again against the node's labels (upstream re-checks it;
  VolumeBinding's Filter checked it in the scheduling cycle; ``docs/fidelity.md``).

The HTTP work runs inside ``io()`` (the binding worker gives its turn back meanwhile, as for
the bind itself), and a replica that stops leading stops waiting.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from kubesched.api import objects as api
from kubesched.api import storage as st
from kubesched.live.client import ApiError, KubeClient

Obj = dict[str, Any]

POLL_SECONDS = 1.0
"""Upstream's ``BindPodVolumes`` checks the bindings every second (the first after one)."""


class VolumeBindingError(Exception):
    """PreBind's API update or one of its checks failed; ``str()`` is upstream's message."""


def object_path(obj: Obj) -> str:
    """The API path of a PersistentVolume or PersistentVolumeClaim manifest."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    kind = obj.get("kind")
    if kind == "PersistentVolume":
        return f"/api/v1/persistentvolumes/{name}"
    if kind == "PersistentVolumeClaim":
        namespace = str(meta.get("namespace") or "default")
        return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}"
    raise VolumeBindingError(f"VolumeBinding does not write a {kind}")


def fully_bound(claim: Obj) -> bool:
    """Upstream ``isPVCFullyBound``: a volume named and the bind-completed annotation."""
    meta = claim.get("metadata") or {}
    return bool((claim.get("spec") or {}).get("volumeName")) and (
        st.ANN_BIND_COMPLETED in (meta.get("annotations") or {})
    )


class LiveVolumes:
    """PreBind's writes and wait, over one :class:`~kubesched.live.client.KubeClient`."""

    def __init__(
        self,
        client: KubeClient,
        *,
        io: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
        guard: Callable[[], bool] = lambda: True,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.io = io
        """Wraps the HTTP work and the wait (the runner lets the scheduling thread run)."""
        self.guard = guard
        """False once the replica stops leading: the wait gives up."""
        self.sleep = sleep
        self.clock = clock
        self.updates = 0
        """PVs and claims written."""
        self.update_errors = 0
        self._here = threading.local()
        """The calling thread's writes since its last wait (``list[Obj]``)."""

    def _written(self) -> list[Obj]:
        found: list[Obj] | None = getattr(self._here, "written", None)
        if found is None:
            found = self._here.written = []
        return found

    def update_volume(self, obj: Obj) -> None:
        """PUT a PV or a claim (``bindAPIUpdate``); raises :class:`VolumeBindingError` with
        the API server's message."""
        path = object_path(obj)
        try:
            with self.io():
                stored = self.client.request("PUT", path, body=obj)
        except ApiError as e:
            self.update_errors += 1
            self._here.written = []
            raise VolumeBindingError(e.message) from e
        self.updates += 1
        self._written().append(stored or obj)

    def wait_for_volumes(self, pod: api.Pod, claims: list[str], timeout: float) -> bool:
        """Poll ``checkBindings`` every :data:`POLL_SECONDS` up to ``timeout``: True when
        every written PV's claim and every written claim is fully bound (with nothing
        written, every claim of ``claims``); False at the timeout; raises
        :class:`VolumeBindingError` when a check fails."""
        written = self._written()
        self._here.written = []
        start = self.clock()
        polls = 0
        with self.io():
            while True:
                polls += 1
                at = start + polls * POLL_SECONDS
                if at > start + timeout:
                    return False
                pause = at - self.clock()
                if pause > 0:
                    self.sleep(pause)
                if not self.guard():
                    raise VolumeBindingError("not the leader any more; not waiting for volumes")
                if self._check(pod, written, claims):
                    return True

    def _get(self, path: str, what: str) -> Obj:
        try:
            return self.client.request("GET", path)
        except ApiError as e:
            raise VolumeBindingError(f"{what}: {e.message}") from e

    def _check(self, pod: api.Pod, written: list[Obj], claims: list[str]) -> bool:
        """Upstream ``checkBindings`` on the API server's objects (module docstring)."""
        try:
            self.client.request("GET", f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}")
        except ApiError as e:
            if e.code == 404:
                raise VolumeBindingError(f"pod does not exist any more: {e.message}") from e
        pvs = [o for o in written if o.get("kind") == "PersistentVolume"]
        provisioned = [o for o in written if o.get("kind") == "PersistentVolumeClaim"]
        for obj in pvs:
            name = str((obj.get("metadata") or {}).get("name"))
            pv = self._get(object_path(obj), "failed to check binding")
            ref = (pv.get("spec") or {}).get("claimRef") or {}
            if not ref.get("uid"):
                raise VolumeBindingError(f'ClaimRef got reset for pv "{name}"')
            wanted = (obj.get("spec") or {}).get("claimRef") or {}
            path = (
                f"/api/v1/namespaces/{wanted.get('namespace')}"
                f"/persistentvolumeclaims/{wanted.get('name')}"
            )
            if not fully_bound(self._get(path, "failed to check binding")):
                return False
        for obj in provisioned:
            meta = obj.get("metadata") or {}
            claim = self._get(object_path(obj), "failed to check provisioning pvc")
            annotations = (claim.get("metadata") or {}).get("annotations")
            if not annotations:
                raise VolumeBindingError(f'selectedNode annotation reset for PVC "{meta["name"]}"')
            node = (meta.get("annotations") or {}).get(st.ANN_SELECTED_NODE)
            if annotations.get(st.ANN_SELECTED_NODE) != node:
                raise VolumeBindingError(f'provisioning failed for PVC "{meta["name"]}"')
            if not fully_bound(claim):
                return False
        if not written:
            for key in claims:
                namespace, _, name = key.partition("/")
                path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}"
                if not fully_bound(self._get(path, "failed to check binding")):
                    return False
        return True
