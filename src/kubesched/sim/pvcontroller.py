"""The PersistentVolume controller and a provisioner, played in the simulated cluster
(upstream's ``pkg/controller/volume/persistentvolume`` and an external provisioner, as far
as scheduling sees them).  ``kubesched simulate`` runs it; ``explain`` and ``schedule``
(what-if) do not: there VolumeBinding's PreBind binds at once, as before.

- A PV whose ``claimRef`` names a claim that is not bound yet (what VolumeBinding's PreBind
  writes for a static match) is bound: the PV ``Bound``, the claim ``Bound`` with
  ``volumeName`` (at once: the controller's sync is not a latency worth modelling).
- A ``WaitForFirstConsumer`` claim with the ``volume.kubernetes.io/selected-node``
  annotation and no volume (what PreBind writes for a claim to provision) gets, after its
  StorageClass's provisioning latency (the scenario's ``spec.provisioningSeconds``), the PV
  a provisioner would create (:func:`~kubesched.plugins.volumebinding.binder.provisioned_pv`)
  and is bound to it.
- A deleted claim releases its PV: ``Delete`` deletes it, ``Retain`` (and ``Recycle``)
  leaves it ``Released`` with its ``claimRef`` (no claim may bind it again).

:meth:`PVController.wait_for_volumes` is what PreBind waits with (upstream's
``BindPodVolumes`` polls every second up to ``bindTimeoutSeconds``).  The controller is
deterministic, so the poll that will see the claims bound is known when PreBind writes: the
Pod's bind is held in the API server until then (:attr:`SimApiServer.bind_after`), and the
binding segment of its startup holds the wait.  Past ``bindTimeoutSeconds`` the world runs on
to the timeout inside PreBind, which then fails with upstream's error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from kubesched.api import objects as api
from kubesched.api import storage as st
from kubesched.api.errors import InputError
from kubesched.api.podvolumes import claim_names
from kubesched.plugins.volumebinding import binder as b
from kubesched.sim.apiserver import SimApiServer, object_key
from kubesched.sim.engine import EventLoop

POLL_SECONDS = 1.0
"""Upstream's ``BindPodVolumes`` checks the bindings every second (the first after one)."""
PVC, PV, CLASS = "PersistentVolumeClaim", "PersistentVolume", "StorageClass"


class PVController:
    """Watches the simulated API server's objects; binds, provisions and reclaims."""

    def __init__(
        self,
        apiserver: SimApiServer,
        loop: EventLoop,
        provisioning: Mapping[str, float] | None = None,
        until: float | None = None,
    ) -> None:
        self.api = apiserver
        self.loop = loop
        self.provisioning = dict(provisioning or {})
        """StorageClass name -> seconds a provisioner takes (absent: 0)."""
        self.until = until
        """The run's end: a wait never runs the loop past it."""
        self.due: dict[str, float] = {}
        """Claims whose provisioning is under way, to when it ends."""
        self.provisioned: int = 0
        """PVs created by the provisioner."""
        self.reclaimed: dict[str, int] = {"Delete": 0, "Retain": 0}
        """Released PVs per what was done with them."""

    # ------------------------------------------------------------------ watch
    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        """React to a claim or PV change (module docstring)."""
        kind = obj.get("kind")
        if kind not in (PVC, PV):
            return
        try:
            parsed = st.parse(obj)
        except InputError:
            return
        if kind == PVC and isinstance(parsed, st.PersistentVolumeClaim):
            if deleted:
                self.loop.call_later(0.0, lambda: self._release(parsed))
            elif not parsed.volume_name and st.ANN_SELECTED_NODE in parsed.annotations:
                self._provision_later(parsed)
        elif (
            isinstance(parsed, st.PersistentVolume)
            and not deleted
            and parsed.claim_ref is not None
            and parsed.phase != "Bound"
        ):
            self.loop.call_later(0.0, lambda: self._bind_static(parsed.name))

    def _claim(self, key: str) -> st.PersistentVolumeClaim | None:
        ns, _, name = key.partition("/")
        raw = self.api.objects.get(object_key(PVC, ns, name))
        return st.parse_pvc(raw) if raw is not None else None

    def _bind_static(self, pv_name: str) -> None:
        raw = self.api.objects.get(object_key(PV, None, pv_name))
        if raw is None:
            return
        pv = st.parse_pv(raw)
        if pv.claim_ref is None or pv.phase in ("Bound", "Released"):
            return
        claim = self._claim(f"{pv.claim_ref[0]}/{pv.claim_ref[1]}")
        if claim is None or (claim.volume_name and claim.volume_name != pv.name):
            return
        self._write(*b.bound_pair(pv, claim))

    def _provision_later(self, claim: st.PersistentVolumeClaim) -> None:
        if claim.key in self.due:
            return
        delay = self.provisioning.get(claim.storage_class, 0.0)
        self.due[claim.key] = self.loop.now + delay
        self.loop.call_later(delay, lambda: self._provision(claim.key))

    def _provision(self, key: str) -> None:
        self.due.pop(key, None)
        claim = self._claim(key)
        if claim is None or claim.volume_name:
            return
        node_name = claim.annotations.get(st.ANN_SELECTED_NODE)
        node = self.api.nodes.get(node_name) if node_name else None
        raw = self.api.objects.get(object_key(CLASS, None, claim.storage_class))
        if node is None or raw is None:
            return  # the provisioner cannot: the claim stays Pending (PreBind times out)
        klass = st.parse_class(raw)
        if klass.provisioner in ("", st.NOT_SUPPORTED_PROVISIONER):
            return
        pv = b.provisioned_pv(claim, klass, node)
        self.provisioned += 1
        self._write(*b.bound_pair(pv, claim))

    def _write(self, pv_raw: dict[str, Any], claim_raw: dict[str, Any]) -> None:
        pv_raw.setdefault("kind", PV)
        pv_raw.setdefault("apiVersion", "v1")
        self.api.apply_object(pv_raw)
        self.api.apply_object(claim_raw)

    def _release(self, claim: st.PersistentVolumeClaim) -> None:
        for raw in list(self.api.objects.values()):
            if raw.get("kind") != PV:
                continue
            pv = st.parse_pv(raw)
            if pv.claim_ref is None or not b.is_bound_to(pv, claim):
                continue
            spec = raw.get("spec") or {}
            if spec.get("persistentVolumeReclaimPolicy", "Retain") == "Delete":
                self.api.delete_object(PV, "", pv.name)
                self.reclaimed["Delete"] += 1
            else:
                released = dict(raw)
                released["status"] = {"phase": "Released"}
                self.api.apply_object(released)
                self.reclaimed["Retain"] += 1

    # ------------------------------------------------------------------ PreBind's wait
    def wait_for_volumes(self, pod_key: str, claims: list[str], timeout: float) -> bool:
        """PreBind's wait for ``claims`` (``namespace/name``), as upstream's
        ``BindPodVolumes`` polls: every :data:`POLL_SECONDS`, the first one second after the
        writes, up to ``timeout``.  The controller is deterministic, so when its bindings
        will be done is known now: the Pod's bind is held in the API server until the first
        poll after that (True).  When that is past the timeout, the world runs on to the
        timeout (the binding cycle took that long) and the answer is False."""
        now = self.loop.now
        eta = max((self._eta(key) for key in claims), default=now)
        polls = max(1, math.ceil((eta - now) / POLL_SECONDS - 1e-9)) if eta < math.inf else 0
        at = now + polls * POLL_SECONDS
        if eta == math.inf or at > now + timeout:
            end = now + timeout
            self._run_to(end if self.until is None else min(end, max(now, self.until)))
            return False
        self.api.bind_after[pod_key] = at
        return True

    def _eta(self, key: str) -> float:
        """When ``key`` will be bound by this controller (inf: never, as things are)."""
        now = self.loop.now
        claim = self._claim(key)
        if claim is None:
            return math.inf
        if claim.fully_bound:
            return now
        due = self.due.get(key)
        if due is not None:
            return due
        heard = now + self.api.watch_delay
        node_name = claim.annotations.get(st.ANN_SELECTED_NODE)
        if node_name is not None:
            raw = self.api.objects.get(object_key(CLASS, None, claim.storage_class))
            if node_name not in self.api.nodes or raw is None:
                return math.inf
            if st.parse_class(raw).provisioner in ("", st.NOT_SUPPORTED_PROVISIONER):
                return math.inf
            return heard + self.provisioning.get(claim.storage_class, 0.0)
        for raw in self.api.objects.values():
            if raw.get("kind") == PV:
                pv = st.parse_pv(raw)
                if pv.claim_ref is not None and b.is_bound_to(pv, claim):
                    return heard
        return math.inf

    def _run_to(self, at: float) -> None:
        """Run the loop's events up to ``at`` and leave its clock there."""
        reached = [False]

        def mark() -> None:
            reached[0] = True

        self.loop.call_at(at, mark, priority=2)
        while not reached[0] and self.loop.step():
            pass

    # ------------------------------------------------------------------ why Pending
    def claims_waited_on(self, pod: api.Pod) -> list[dict[str, Any]]:
        """The claims of a Pending ``pod`` that are not bound yet, each ``{"claim":
        namespace/name, "phase": Pending | Lost | missing, "selectedNode": node or None,
        "provisioning": seconds left or None}`` (none: the Pod waits on no volume)."""
        out: list[dict[str, Any]] = []
        now = self.loop.now
        for name, _ephemeral in claim_names(pod):
            key = f"{pod.namespace}/{name}"
            claim = self._claim(key)
            if claim is not None and claim.fully_bound:
                continue
            due = self.due.get(key)
            out.append(
                {
                    "claim": key,
                    "phase": claim.phase if claim is not None else "missing",
                    "selectedNode": (
                        claim.annotations.get(st.ANN_SELECTED_NODE) if claim is not None else None
                    ),
                    "provisioning": None if due is None else round(max(0.0, due - now), 4),
                }
            )
        return out

    # ------------------------------------------------------------------ other watch events
    def on_node_add(self, node: api.Node) -> None:
        """Nodes do not matter here."""
        del node

    def on_node_update(self, old: api.Node, new: api.Node) -> None:
        """Nodes do not matter here."""
        del old, new

    def on_node_delete(self, node: api.Node) -> None:
        """Nodes do not matter here."""
        del node

    def on_pod_add(self, pod: api.Pod) -> None:
        """Pods do not matter here (PreBind writes what the controller acts on)."""
        del pod

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        """Pods do not matter here."""
        del old, new

    def on_pod_delete(self, pod: api.Pod) -> None:
        """Pods do not matter here."""
        del pod
