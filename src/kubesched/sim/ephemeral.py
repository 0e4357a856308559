"""The ephemeral volume controller, played in the simulated cluster (upstream's
``pkg/controller/volume/ephemeral``, as far as scheduling sees it): a Pod with an
``ephemeral`` volume gets the PersistentVolumeClaim ``<pod>-<volume>`` made from the
volume's ``volumeClaimTemplate``, owned by the Pod (controller reference).  Until it exists
VolumeBinding keeps the Pod waiting (``waiting for ephemeral volume controller to create the
persistentvolumeclaim``); the claim's Add event requeues it.  Claims are not deleted with
their Pod (upstream's garbage collector does that; a deleted claim's PV is reclaimed by
:mod:`kubesched.sim.pvcontroller`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kubesched.api import objects as api
from kubesched.api.podvolumes import claim_from_template, ephemeral_claim_name

TERMINAL = ("Succeeded", "Failed")


class ClaimApi(Protocol):
    """What the controller needs of an API server."""

    @property
    def objects(self) -> Mapping[tuple[str, str], dict[str, Any]]: ...
    def apply_object(self, obj: dict[str, Any]) -> None: ...


class EphemeralVolumeController:
    """Watches an API server; makes the claims of Pods' ephemeral volumes."""

    def __init__(self, apiserver: ClaimApi) -> None:
        self.api = apiserver

    def on_pod_add(self, pod: api.Pod) -> None:
        """Make the claims of a new Pod's ephemeral volumes."""
        self._sync(pod)

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        """Nothing: a Pod's volumes are spec, made when it was added."""
        del old, new

    def on_pod_delete(self, pod: api.Pod) -> None:
        """Nothing (the garbage collector's work is not modelled)."""
        del pod

    def _sync(self, pod: api.Pod) -> None:
        if not pod.volumes or pod.phase in TERMINAL:
            return
        for v in pod.volumes:
            if v.kind != api.VOLUME_EPHEMERAL:
                continue
            key = ("PersistentVolumeClaim", f"{pod.namespace}/{ephemeral_claim_name(pod, v)}")
            if key not in self.api.objects:
                self.api.apply_object(claim_from_template(pod, v))

    def on_node_add(self, node: api.Node) -> None:
        """Nodes do not matter here."""
        del node

    def on_node_update(self, old: api.Node, new: api.Node) -> None:
        """Nodes do not matter here."""
        del old, new

    def on_node_delete(self, node: api.Node) -> None:
        """Nodes do not matter here."""
        del node

    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        """Other objects do not matter here."""
        del obj, deleted
