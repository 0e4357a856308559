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

Under DRAWorkloadResourceClaims (v1.36+, :mod:`kubesched.api.groupclaims`), a PodGroup's
template claims are made once for the group: owned by the PodGroup, named
``<podgroup>-<claim>-`` plus the suffix, recorded in the PodGroup's
``status.resourceClaimStatuses``; a member Pod's claim entry equal to one of the group's
(upstream ``BindTo``) gets the group's claim in its own status once it exists, never one of
its own.  A claim reserved for a PodGroup stays when one of its Pods goes (upstream releases
it with the PodGroup, not modelled: the runs never delete PodGroups).

The driver: once a Pod is bound, its allocated claims are prepared (the kubelet's
``NodePrepareResources``); the driver reports each device in ``status.devices``.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from collections.abc import Mapping
from typing import Any, Protocol

from kubesched.api import groupclaims, podvolumes
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
    return _generated_name(pod.name, pod.uid, claim)


def _generated_name(owner: str, uid: str, claim: str) -> str:
    """``<owner>-<claim>-`` (both cut in proportion past 57 characters) and a suffix drawn
    by a hash of the owner's uid and the claim."""
    base = f"{owner}-{claim}-"
    if len(base) > MAX_BASE_LEN:
        n = len(base)
        base = (
            owner[: len(owner) * MAX_BASE_LEN // n] + "-" + claim[: len(claim) * MAX_BASE_LEN // n]
        )
    base = base[:MAX_GENERATED_NAME_LENGTH]
    digest = hashlib.sha256(f"{uid}/{claim}".encode()).digest()
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

    def __init__(
        self, apiserver: ClaimApi, *, driver: bool = True, group_claims: bool = False
    ) -> None:
        self.api = apiserver
        self.driver = driver
        """Play the driver too (prepare the devices of bound Pods)."""
        self.group_claims = group_claims
        """DRAWorkloadResourceClaims: PodGroups' template claims are the group's."""

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
        group = self._pod_group(pod)
        for entry in pod.resource_claims:
            name, _, template = entry
            if not template or name in have:
                continue
            if group is not None and groupclaims.is_group_ref(
                groupclaims.bind_to(pod, group, entry)
            ):
                made = groupclaims.group_statuses(group).get(name)
                if made:  # else the PodGroup's claim is not made yet: the Pod waits
                    statuses.append((name, made))
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

    def _pod_group(self, pod: api.Pod) -> dict[str, Any] | None:
        """The Pod's PodGroup manifest under DRAWorkloadResourceClaims, else None."""
        if not self.group_claims or not pod.scheduling_group:
            return None
        return self.api.objects.get(("PodGroup", f"{pod.namespace}/{pod.scheduling_group}"))

    # --------------------------------------------------------------- PodGroups
    def _sync_group(self, group: dict[str, Any]) -> None:
        """Upstream ``syncPodGroup``: make the PodGroup's missing template claims, record
        them in its status, then give its pending members their names."""
        meta = group.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        pg_name = str(meta.get("name", ""))
        have = groupclaims.group_statuses(group)
        new: dict[str, str] = {}
        for name, direct, template in groupclaims.group_entries(group):
            if direct or not template:
                continue
            made = have.get(name)
            if made and ("ResourceClaim", f"{namespace}/{made}") in self.api.objects:
                continue
            tmpl = self.api.objects.get(("ResourceClaimTemplate", f"{namespace}/{template}"))
            if tmpl is None:
                continue  # upstream retries when the template appears
            claim_name = _generated_name(pg_name, groupclaims.object_uid(group), name)
            owner = {
                "apiVersion": str(group.get("apiVersion", "")),
                "kind": "PodGroup",
                "name": pg_name,
                "uid": groupclaims.object_uid(group),
                "controller": True,
            }
            self.api.apply_object(_from_template(tmpl, namespace, name, claim_name, owner))
            new[name] = claim_name
        if not new:
            return
        statuses = {**have, **new}
        status = {**(group.get("status") or {})}
        status["resourceClaimStatuses"] = [
            {"name": n, "resourceClaimName": c} for n, c in statuses.items()
        ]
        self.api.apply_object({**group, "status": status})

    def _sync_members(self, group: dict[str, Any]) -> None:
        meta = group.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        for pod in list(self.api.pods.values()):
            if pod.namespace == namespace and pod.scheduling_group == meta.get("name"):
                self._sync(pod)

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
        if not pod.resource_claims:  # nothing to release (every preemption victim so far)
            return
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
        """A template that appears makes the claims Pods (and PodGroups) wait for; a
        PodGroup that appears or changes makes its claims (DRAWorkloadResourceClaims)."""
        if deleted:
            return
        kind = obj.get("kind")
        if kind == "PodGroup" and self.group_claims and groupclaims.group_entries(obj):
            self._sync_group(obj)
            current = self.api.objects.get(
                (
                    "PodGroup",
                    f"{(obj.get('metadata') or {}).get('namespace') or 'default'}/"
                    f"{(obj.get('metadata') or {}).get('name', '')}",
                )
            )
            if current is obj:  # the last version: its members take its claims
                self._sync_members(obj)
        elif kind == "ResourceClaimTemplate":
            if self.group_claims:
                for (k, _), group in list(self.api.objects.items()):
                    if k == "PodGroup" and groupclaims.group_entries(group):
                        self._sync_group(group)
            for pod in list(self.api.pods.values()):
                self._sync(pod)


def _claim_from_template(
    template: dict[str, Any], pod: api.Pod, pod_claim: str, name: str
) -> dict[str, Any]:
    owner = podvolumes.controller_reference(pod)
    return _from_template(template, pod.namespace, pod_claim, name, owner)


def _from_template(
    template: dict[str, Any], namespace: str, entry: str, name: str, owner: dict[str, Any]
) -> dict[str, Any]:
    """The claim ``name`` made from ``template`` for claim entry ``entry`` of ``owner``
    (its controller reference: a Pod, or a PodGroup).  Its ``spec`` is the template's
    ``spec.spec`` mapping itself, not a copy (upstream deep-copies a Go struct): manifests
    here are never changed in place -- a new version of a template or a claim is a new
    dict, the claim's other versions share their ``spec`` the same way (:meth:`_release`,
    :meth:`_prepare`, PreBind's write) -- so every claim of a template reads the same, and
    the scheduler's informer parses that spec once per template, not once per claim
    (:meth:`~kubesched.plugins.dynamicresources.claims.DraObjects.parse`)."""
    spec = template.get("spec") or {}
    meta = spec.get("metadata") or {}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-ResourceClaim-{namespace}-{name}",
            "labels": dict(meta.get("labels") or {}),
            "annotations": {**(meta.get("annotations") or {}), POD_CLAIM_ANNOTATION: entry},
            "ownerReferences": [owner],
        },
        "spec": spec.get("spec") or {},
    }
