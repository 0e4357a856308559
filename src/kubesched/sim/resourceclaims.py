"""The resourceclaim controller and a DRA driver, played in the simulated cluster.

Upstream's ``pkg/controller/resourceclaim`` (v1.34), as far as scheduling sees it:

- a Pod naming a ``resourceClaimTemplateName`` gets a ResourceClaim made from the template,
  owned by the Pod (controller reference), annotated
  ``resource.kubernetes.io/pod-claim-name``, named by ``generateName`` ``<pod>-<claim>-`` (both
  parts cut in proportion past 57 characters, as the controller does) plus the API server's
  5-character suffix -- drawn from upstream's alphabet by a hash of the Pod's UID and the
  claim, not at random, so runs repeat -- and the Pod's ``status.resourceClaimStatuses``
  names it.  Until then the Pod waits at PreEnqueue (``ResourceClaim not created yet``);
  the status update requeues it (``UpdatePodGeneratedResourceClaim``).
- when a Pod is deleted or finishes, it leaves its claims' ``reservedFor``; a claim reserved
  for no one is deallocated (its devices free: a claim update, which the scheduler's hint
  hears), and a claim generated for that Pod is then deleted.

The driver: once a Pod is bound, its allocated claims are prepared (the kubelet's
``NodePrepareResources``); the driver reports each device in ``status.devices``.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from collections.abc import Mapping
from typing import Any, Protocol

from kubesched.api import objects as api

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
"""``k8s.io/apimachinery/pkg/util/rand``'s alphabet for generated names."""
MAX_BASE_LEN = 57
MAX_GENERATED_NAME_LENGTH = 58
TERMINAL = ("Succeeded", "Failed")
_FINALIZERS = "resource.kubernetes.io/"


def generated_claim_name(pod: api.Pod, claim: str) -> str:
    """The name the controller's ``generateName`` and the API server give the claim."""
    base = f"{pod.name}-{claim}-"
    if len(base) > MAX_BASE_LEN:
        n = len(base)
        base = (
            pod.name[: len(pod.name) * MAX_BASE_LEN // n]
            + "-"
            + claim[: len(claim) * MAX_BASE_LEN // n]
        )
    base = base[:MAX_GENERATED_NAME_LENGTH]
    digest = hashlib.sha256(f"{pod.uid}/{claim}".encode()).digest()
    return base + "".join(ALPHANUMS[b % len(ALPHANUMS)] for b in digest[:5])


class ClaimApi(Protocol):
    """What the controller needs of an API server (the simulator's or the benchmark's)."""

    @property
    def objects(self) -> Mapping[tuple[str, str], dict[str, Any]]: ...
    @property
    def pods(self) -> Mapping[str, api.Pod]: ...
    def apply_object(self, obj: dict[str, Any]) -> None: ...
    def update_pod(self, pod: api.Pod) -> None: ...
    def delete_object(self, kind: str, namespace: str, name: str) -> None: ...


class ResourceClaimController:
    """Watches an API server; makes and releases claims, prepares devices."""

    def __init__(self, apiserver: ClaimApi, *, driver: bool = True) -> None:
        self.api = apiserver
        self.driver = driver
        """Play the driver too (prepare the devices of bound Pods)."""

    # --------------------------------------------------------------- Pods
    def on_pod_add(self, pod: api.Pod) -> None:
        """Make the claims of a new Pod's templates."""
        self._sync(pod)

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        """A bound Pod's claims are prepared; a finished one's released."""
        if not new.resource_claims:  # claims are spec: a Pod without any never has one
            return
        if new.phase in TERMINAL:
            self._release(new)
            return
        if new.node_name and not old.node_name and self.driver:
            self._prepare(new)
        self._sync(new)

    def on_pod_delete(self, pod: api.Pod) -> None:
        """Release the claims of a deleted Pod."""
        self._release(pod)

    def _sync(self, pod: api.Pod) -> None:
        if not pod.resource_claims or pod.node_name or pod.phase in TERMINAL:
            return
        have = dict(pod.resource_claim_statuses)
        statuses = list(pod.resource_claim_statuses)
        for name, _, template in pod.resource_claims:
            if not template or name in have:
                continue
            tmpl = self.api.objects.get(("ResourceClaimTemplate", f"{pod.namespace}/{template}"))
            if tmpl is None:
                continue  # upstream logs the error and retries when the template appears
            claim_name = generated_claim_name(pod, name)
            self.api.apply_object(_claim_from_template(tmpl, pod, name, claim_name))
            statuses.append((name, claim_name))
        if len(statuses) == len(pod.resource_claim_statuses):
            return
        current = self.api.pods.get(pod.key)
        if current is None:
            return
        raw = copy.copy(current.raw)
        raw["status"] = {
            **(raw.get("status") or {}),
            "resourceClaimStatuses": [{"name": n, "resourceClaimName": c} for n, c in statuses],
        }
        self.api.update_pod(
            dataclasses.replace(current, resource_claim_statuses=tuple(statuses), raw=raw)
        )

    def _claims_of(self, pod: api.Pod) -> list[tuple[str, dict[str, Any]]]:
        names = dict(pod.resource_claim_statuses)
        out = []
        for name, direct, _ in pod.resource_claims:
            claim_name = direct or names.get(name, "")
            obj = self.api.objects.get(("ResourceClaim", f"{pod.namespace}/{claim_name}"))
            if obj is not None:
                out.append((claim_name, obj))
        return out

    def _release(self, pod: api.Pod) -> None:
        for claim_name, obj in self._claims_of(pod):
            status = obj.get("status") or {}
            reserved = [x for x in status.get("reservedFor") or [] if x.get("uid") != pod.uid]
            owned = any(
                o.get("uid") == pod.uid and o.get("controller")
                for o in (obj.get("metadata") or {}).get("ownerReferences") or []
            )
            if reserved == list(status.get("reservedFor") or []) and not owned:
                continue
            updated = {**obj, "status": {**status, "reservedFor": reserved}}  # spec shared
            if not reserved:
                for key in ("allocation", "devices"):
                    updated["status"].pop(key, None)
                meta = updated["metadata"] = dict(obj.get("metadata") or {})
                meta["finalizers"] = [
                    f
                    for f in meta.get("finalizers") or []
                    if not f.startswith("resource.kubernetes.io/")
                ]
            self.api.apply_object(updated)
            if owned and not reserved:
                self.api.delete_object("ResourceClaim", pod.namespace, claim_name)

    # --------------------------------------------------------------- driver
    def _prepare(self, pod: api.Pod) -> None:
        for _, obj in self._claims_of(pod):
            status = obj.get("status") or {}
            results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
            if not results or status.get("devices"):
                continue
            updated = {**obj, "status": dict(status)}  # spec and allocation shared
            updated["status"]["devices"] = [
                {
                    "driver": d["driver"],
                    "pool": d["pool"],
                    "device": d["device"],
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "Prepared",
                            "message": "",
                            "lastTransitionTime": "1970-01-01T00:00:00Z",
                        }
                    ],
                }
                for d in results
            ]
            self.api.apply_object(updated)

    # --------------------------------------------------------------- the rest of Watcher
    def on_node_add(self, node: api.Node) -> None:
        """Not watched."""

    def on_node_update(self, old: api.Node, new: api.Node) -> None:
        """Not watched."""

    def on_node_delete(self, node: api.Node) -> None:
        """Not watched."""

    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        """A template that appears makes the claims Pods wait for."""
        if obj.get("kind") == "ResourceClaimTemplate" and not deleted:
            for pod in list(self.api.pods.values()):
                self._sync(pod)


def _claim_from_template(
    template: dict[str, Any], pod: api.Pod, pod_claim: str, name: str
) -> dict[str, Any]:
    spec = template.get("spec") or {}
    meta = spec.get("metadata") or {}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": pod.namespace,
            "uid": f"uid-ResourceClaim-{pod.namespace}-{name}",
            "labels": dict(meta.get("labels") or {}),
            "annotations": {**(meta.get("annotations") or {}), POD_CLAIM_ANNOTATION: pod_claim},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod.name,
                    "uid": pod.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": copy.deepcopy(spec.get("spec") or {}),
    }
