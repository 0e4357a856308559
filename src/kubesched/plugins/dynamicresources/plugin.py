"""DynamicResources: devices for a Pod's ResourceClaims (upstream v1.34
``pkg/scheduler/framework/plugins/dynamicresources``, structured parameters).

- PreEnqueue: every claim the Pod names exists (a template's claim is named in
  ``status.resourceClaimStatuses``), is not being deleted, and a generated one is owned by
  the Pod; else the Pod waits with upstream's message.
- PreFilter: Skip for a Pod without claims; a class a request names must exist; a claim whose
  allocation is in flight for another Pod makes this one wait.
- Filter: an allocated claim's ``nodeSelector`` must match the node; the claims to allocate
  must all get devices there (:mod:`.allocator`), else ``cannot allocate all claims``.
- Reserve / Unreserve: the node's allocation goes in flight (its devices are in use for every
  later Filter) / is dropped.
- PreBind: writes ``status.allocation`` and adds the Pod to ``status.reservedFor`` (with
  the delete-protection finalizer), through the API client when it has ``update_object``.
- PostFilter: ``no new claims to deallocate`` / ``still not schedulable``, or deallocates a
  claim allocated to a node that failed and reserved by no other Pod.

Not modelled: the extended-resource mapping (DRAExtendedResource, alpha), the features off
by default in v1.34 (device taints, partitionable devices, binding conditions, consumable
capacity) and ``filterTimeout``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.api import podclaims
from kubesched.api import resource as r
from kubesched.framework.interface import (
    SKIP,
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    IntArray,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    Verdict,
    error,
    unschedulable,
)
from kubesched.plugins.dynamicresources import allocator
from kubesched.plugins.dynamicresources.claims import DraObjects, claim_with_reservation
from kubesched.state.cache import ClusterState

NAME = "DynamicResources"
ERR_CANNOT_ALLOCATE = "cannot allocate all claims"
ERR_NOT_AVAILABLE = "resourceclaim not available on the node"
_KEY = NAME


@dataclass(slots=True)
class _State:
    """The Pod's claims for one cycle and the allocation Filter found per node."""

    claims: list[r.ResourceClaim]
    to_allocate: list[r.ResourceClaim]
    in_use: set[allocator.DeviceId]
    classes: dict[str, r.DeviceClass]
    slices: list[r.ResourceSlice]
    per_node: dict[str, list[tuple[r.AllocatedDevice, ...]]] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)
    """Claims whose allocation is on nodes that failed (PostFilter may deallocate them)."""
    reserved: bool = False


class DynamicResources:
    """Allocates devices from ResourceSlices to a Pod's ResourceClaims."""

    name = NAME

    def __init__(self, args: object | None, handle: Handle) -> None:
        del args
        self.handle = handle
        self.objects = DraObjects(handle.cluster)
        self._before: dict[str, r.ResourceClaim | None] = {}
        handle.add_event_handler(self)

    # ------------------------------------------------------------------ claims of a Pod
    def pod_claims(self, pod: api.Pod) -> tuple[list[r.ResourceClaim], str]:
        """Upstream ``foreachPodResourceClaim``: the claims, or the reason they are not
        all usable yet ("" when they are)."""
        out: list[r.ResourceClaim] = []
        for entry in pod.resource_claims:
            name, check_owner, problem = podclaims.claim_name(pod, entry)
            if problem:
                return out, problem
            if name is None:
                continue
            claim = self.objects.claim(pod.namespace, name)
            if claim is None:
                return out, f'could not find ResourceClaim "{pod.namespace}/{name}"'
            if claim.deleting:
                return out, f'resourceclaim "{claim.name}" is being deleted'
            if check_owner and pod.uid not in claim.owner_uids:
                return out, (
                    f"ResourceClaim {claim.key} was not created for pod {pod.key} "
                    "(pod is not owner)"
                )
            out.append(claim)
        return out, ""

    # ------------------------------------------------------------------ extension points
    def sign(self, pod: api.Pod) -> tuple[()] | None:
        """Result reuse: Pods without claims are all alike here (every node passes); a Pod
        with claims never shares results (each allocation changes what the next finds)."""
        return None if pod.resource_claims else ()

    def pre_enqueue(self, pod: api.Pod) -> Status:
        """Every claim must exist (upstream's message otherwise)."""
        _, problem = self.pod_claims(pod)
        return unschedulable(problem, resolvable=False) if problem else SUCCESS

    def pre_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[PreFilterResult | None, Status]:
        """Resolve the claims, check their classes, snapshot the devices in use."""
        del cluster
        if not pod.resource_claims:
            return None, SKIP
        claims, problem = self.pod_claims(pod)
        if problem:
            return None, unschedulable(problem, resolvable=False)
        if not claims:
            return None, SKIP
        classes = self.objects.classes()
        to_allocate = []
        for claim in claims:
            if claim.allocation is not None:
                continue
            to_allocate.append(claim)
            if claim.uid in self.objects.in_flight:
                msg = f"resource claim {claim.key} is in the process of being allocated"
                return None, unschedulable(msg, resolvable=False)
            for req in claim.requests:
                alts = [req.exactly] if req.exactly is not None else list(req.first_available)
                for alt in alts:
                    name = req.name if req.exactly is not None else f"{req.name}/{alt.name}"
                    if alt.class_name not in classes:
                        msg = f"request {name}: device class {alt.class_name} does not exist"
                        return None, unschedulable(msg, resolvable=False)
        in_use = self.objects.allocated_devices() if to_allocate else set()
        slices = self.objects.slices() if to_allocate else []
        state[_KEY] = _State(claims, to_allocate, in_use, classes, slices)
        return None, SUCCESS

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """Per node: allocated claims reachable, the others allocatable (all at once)."""
        s = state.get(_KEY)
        n = rows.shape[0]
        if not isinstance(s, _State):
            return Verdict.all_pass(n)
        codes = np.zeros(n, dtype=np.int8)
        table: dict[int, Status] = {
            1: unschedulable(ERR_NOT_AVAILABLE, resolvable=False),
            2: unschedulable(ERR_CANNOT_ALLOCATE, resolvable=False),
        }
        nodes = cluster.nodes
        for i, row in enumerate(rows.tolist()):
            node = nodes.nodes[row]
            if node is None:
                continue
            away = [
                k
                for k, c in enumerate(s.claims)
                if c.allocation_node_selector is not None
                and not r.node_selector_matches(c.allocation_node_selector, node.name, node.labels)
            ]
            found = None
            if s.to_allocate:  # upstream runs the allocator before it reports ``away``
                try:
                    found = allocator.allocate(
                        node.name, node.labels, s.to_allocate, s.classes, s.slices, s.in_use
                    )
                except allocator.AllocationError as e:
                    codes[i] = 3
                    table[3] = error(str(e))
                    continue
                if found is None:
                    codes[i] = 2
                    continue
            if away:
                s.unavailable.update(away)
                codes[i] = 1
            elif found is not None:
                s.per_node[node.name] = found
        return Verdict(codes, table)

    def post_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, diagnosis: Any
    ) -> tuple[None, Status]:
        """Upstream's PostFilter: deallocate a claim that keeps the Pod off every node when
        no other Pod uses it (written through the API client, when there is one)."""
        del cluster, diagnosis
        s = state.get(_KEY)
        if not isinstance(s, _State) or not s.claims:
            return None, unschedulable("no new claims to deallocate")
        for k in sorted(s.unavailable):
            claim = s.claims[k]
            if set(claim.reserved_for) <= {pod.uid}:
                write = getattr(self.handle.api, "update_object", None)
                if write is not None:
                    raw = copy.deepcopy(dict(claim.raw))
                    status = raw.get("status") or {}
                    for key in ("reservedFor", "allocation", "devices"):
                        status.pop(key, None)
                    raw["status"] = status
                    try:
                        write(raw)
                    except Exception as e:
                        return None, error(f"deallocate claim {claim.key}: {e}")
                return None, unschedulable("deallocation of ResourceClaim completed")
        return None, unschedulable("still not schedulable")

    def reserve(self, state: CycleState, pod: api.Pod, node_name: str) -> Status:
        """Put the node's allocation in flight, so no other Pod gets those devices."""
        s = state.get(_KEY)
        if not isinstance(s, _State) or not s.to_allocate:
            return SUCCESS
        found = s.per_node.get(node_name)
        if found is None or len(found) != len(s.to_allocate):
            return error("claim allocation not found for node")
        for claim, results in zip(s.to_allocate, found, strict=True):
            self.objects.in_flight[claim.uid] = results
        s.reserved = True
        return SUCCESS

    def unreserve(self, state: CycleState, pod: api.Pod, node_name: str) -> None:
        """Drop the in-flight allocations of this Pod's claims."""
        s = state.get(_KEY)
        if isinstance(s, _State) and s.reserved:
            for claim in s.to_allocate:
                self.objects.in_flight.pop(claim.uid, None)
            s.reserved = False

    def pre_bind(self, state: CycleState, pod: api.Pod, node_name: str) -> Status:
        """Write the allocation and the reservation for the Pod into each claim."""
        s = state.get(_KEY)
        if not isinstance(s, _State):
            return SUCCESS
        found = dict(
            zip((c.uid for c in s.to_allocate), s.per_node.get(node_name, []), strict=False)
        )
        node = self.handle.cluster.node(node_name)
        for claim in s.claims:
            current = self.objects.claim(claim.namespace, claim.name) or claim
            raw = claim_with_reservation(
                current.raw, pod, found.get(claim.uid), node_name, node, s.slices
            )
            updated = r.parse_claim(raw)
            self.objects.assumed[updated.key] = updated
            self.objects.in_flight.pop(claim.uid, None)
            write = getattr(self.handle.api, "update_object", None)
            if write is not None:
                try:
                    write(raw)
                except Exception as e:
                    self.objects.assumed.pop(updated.key, None)
                    return Status(Code.ERROR, (f"add reservation to claim {claim.key}: {e}",))
        s.reserved = False
        return SUCCESS

    # ------------------------------------------------------------------ informer events
    def on_object(self, obj: dict[str, Any], deleted: bool = False) -> None:
        """A claim changed: the API server's version replaces the assumed one."""
        if obj.get("kind") == "ResourceClaim":
            meta = obj.get("metadata") or {}
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
            self._before[key] = self.objects.heard(obj, deleted)

    # ------------------------------------------------------------------ queueing hints
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Upstream's events (queueing hints on): nodes, claims, the Pod's generated claims,
        classes and slices."""
        update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_ALLOCATABLE,
                )
            ),
            ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_CLAIM, update), self._claim_hint),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self._pod_hint,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.DEVICE_CLASS, update)),
            ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_SLICE, update)),
        ]

    def _claim_hint(self, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterClaimChange``."""
        del old
        if not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        modified = r.parse_claim(new)
        claims, problem = self.pod_claims(pod)
        if problem:
            return QueueingHint.QUEUE_SKIP
        before = self._before.get(modified.key)
        if before is not None and before.allocation is not None and modified.allocation is None:
            return QueueingHint.QUEUE  # deallocated: devices freed
        if not any(c.uid == modified.uid for c in claims):
            return QueueingHint.QUEUE_SKIP
        if before is None:
            return QueueingHint.QUEUE
        same = (before.allocation, before.reserved_for) == (
            modified.allocation,
            modified.reserved_for,
        )
        return QueueingHint.QUEUE_SKIP if same else QueueingHint.QUEUE

    def _pod_hint(self, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterPodChange``."""
        del old
        if not isinstance(new, api.Pod) or new.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE_SKIP if self.pod_claims(new)[1] else QueueingHint.QUEUE


def new(args: object | None, handle: Handle) -> DynamicResources:
    """Factory (no args are honoured: ``filterTimeout`` bounds a Go goroutine's search)."""
    return DynamicResources(args, handle)
