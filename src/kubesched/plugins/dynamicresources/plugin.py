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
  later Filter) / is dropped, the Pod taken out of the ``reservedFor`` of the claims a failed
  PreBind reserved, and the claim it created for extended resources deleted.
- PreBind: writes ``status.allocation`` and adds the Pod to ``status.reservedFor`` (with
  the delete-protection finalizer), through the API client when it has ``update_object``;
  a write the what-if's ``claim_faults`` disturb fails as upstream's ``bindClaim`` does
  (:mod:`.faults`); ``pre_bind_timing`` tells beforehand whether one fails it at once.
- PostFilter: ``no new claims to deallocate`` / ``still not schedulable`` (from v1.37 no
  message), or deallocates a claim allocated to a node that failed and reserved by no other
  Pod.
- Score (from v1.35, under DRAPrioritizedList): per node, ``8 - i`` for every
  ``firstAvailable`` request whose alternative ``i`` the node's allocation took (claims
  allocated earlier by their ``status.allocation``), normalized to 0..100.  Skipped (0 on
  every node, as upstream's) for a Pod with no claim to allocate.
- The allocator as the release's and its gates' (:class:`~kubesched.devices.draoptions.Options`:
  device taints under DRADeviceTaints, devices with binding conditions under
  DRADeviceBindingConditions), over the slices with DeviceTaintRules' taints under
  DRADeviceTaintRules (:class:`~.claims.TaintRules`).

- DRAExtendedResource (alpha at v1.34, whose mapping and requests differ): a Pod's
  extended-resource requests a DeviceClass backs get a special claim (:mod:`.extended`),
  allocated with the Pod's own claims on nodes whose allocatable lacks the resource,
  created at PreBind.
- ``filterTimeout`` (DRASchedulerFilterTimeout): a node's device search gives up after it,
  wall clock (``timed out trying to allocate devices``: unresolvable before v1.36, an Error
  naming the node from v1.36).  Nodes the device column index decides are never searched,
  so never time out.

- Binding conditions (DRADeviceBindingConditions with DRAResourceClaimDeviceStatus): an
  allocated claim whose binding failed or timed out (:mod:`.binding`) is unavailable on
  every node.

Not modelled: partitionable devices, PreBind's wait for binding conditions (kubesched binds
at once: a claim whose conditions are met), consumable capacity.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api import groupclaims, podclaims
from kubesched.api import objects as api
from kubesched.api import resource as r
from kubesched.config import names
from kubesched.config.decode import parse_go_duration
from kubesched.config.featuregates import RESIZE_PREEMPTION
from kubesched.devices import allocator, drafrag, draoptions
from kubesched.devices import draindex as index
from kubesched.devices import extended as ext
from kubesched.devices.pools import Pool
from kubesched.framework.contract import Locality, PreBindTiming
from kubesched.framework.interface import (
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    Handle,
    IntArray,
    ObjectDeleter,
    ObjectWriter,
    PodStatusWriter,
    PreFilterResult,
    Status,
    Verdict,
    error,
    unschedulable,
)
from kubesched.framework.outcomes import PluginError
from kubesched.framework.podgroups import manager_of
from kubesched.plugins.dynamicresources import binding, faults
from kubesched.plugins.dynamicresources import extended as special
from kubesched.plugins.dynamicresources.claims import (
    DraObjects,
    TaintRules,
    claim_with_reservation,
    reachable,
)
from kubesched.plugins.dynamicresources.hints import Hints
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import NodeTable

NAME = names.DYNAMIC_RESOURCES
ERR_CANNOT_ALLOCATE = "cannot allocate all claims"
ERR_NOT_AVAILABLE = "resourceclaim not available on the node"
ERR_TIMED_OUT = "timed out trying to allocate devices"
_KEY = NAME
# Written first thing in PreFilter, as upstream writes its (empty) state: PostFilter without
# it (an earlier PreFilter rejected the Pod as unresolvable, or PreFilter is disabled)
# fails as upstream's does, reading the state: "not found", which ends PostFilter.
_RAN = NAME + "/preFilter"
FIRST_AVAILABLE_MAX = 8
"""Upstream ``resourceapi.FirstAvailableDeviceRequestMaxSize``: alternative ``i`` scores
``8 - i``."""
MAX_NODE_SCORE = 100
ANSWERS_MAX = 1_000
"""Sets of DRA-extended resource names whose per-node answers are kept before starting
again."""
SPECS_MAX = 100_000
"""Claim specs kept serialised for :meth:`DynamicResources.sign` before starting again."""


@dataclass(slots=True)
class _State:
    """The Pod's claims for one cycle and the allocation Filter found per node."""

    claims: list[r.ResourceClaim]
    to_allocate: list[r.ResourceClaim]
    in_use: Mapping[allocator.DeviceId, int]
    """Devices in use, live (nothing changes them between PreFilter and Reserve)."""
    classes: dict[str, r.DeviceClass]
    slices: list[r.ResourceSlice]
    plan: index.Plan | None = None
    token: tuple[int, ...] = ()
    """The device index's version and devices freed so far, when PreFilter ran."""
    per_node: dict[str, list[tuple[r.AllocatedDevice, ...]]] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)
    """Claims whose allocation is on nodes that failed (PostFilter may deallocate them)."""
    reserved: bool = False
    special: special.NodeClaims | None = None
    """DRAExtendedResource: the Pod's special claim (last of ``claims``) and its variants."""
    per_node_special: dict[int, tuple[r.ResourceClaim, list[ext.RequestMapping]]] = field(
        default_factory=dict
    )
    """The special claim's variant Filter allocated per node row (absent: nothing from
    DRA)."""
    special_plans: dict[frozenset[str], index.Plan | None] = field(default_factory=dict)
    """The column plan of the claims to allocate with each variant of the special claim
    (by the resources the node gets from DRA; None: the allocator searches)."""
    decided: set[int] = field(default_factory=set)
    """Node rows where a column passed the claims with the node's special variant (Reserve
    runs the allocator there)."""
    user_claims: int = 0
    """How many of ``claims`` are the Pod's own (the special claim follows them)."""
    blocked: frozenset[int] = frozenset()
    """Allocated claims whose binding failed or timed out (:mod:`.binding`): unavailable
    on every node."""

    shared: allocator.SharedUse = allocator.NO_SHARES
    """Devices allocated with a ``shareID`` (DRAConsumableCapacity), when PreFilter ran."""
    reserved_now: list[str] = field(default_factory=list)
    """Claims (``namespace/name``) PreBind reserved for the Pod in this binding cycle
    (Unreserve takes the Pod out of their ``reservedFor`` when a later one fails)."""
    created: tuple[str, str] | None = None
    """The special claim PreBind created before its write failed (namespace, name):
    Unreserve deletes it."""
    bind_to: list[dict[str, Any]] = field(default_factory=list)
    """DRAWorkloadResourceClaims: what the ``i``-th claim is reserved for, by position as
    upstream's ``claimStore`` pairs them (past the end: the Pod)."""


class DynamicResources(Hints):
    """Allocates devices from ResourceSlices to a Pod's ResourceClaims."""

    name = NAME
    locality = Locality.CLAIMS

    def __init__(self, args: object | None, handle: Handle) -> None:
        self.handle = handle
        self.filter_timeout = filter_timeout(args, handle)
        """Seconds one node's device search may take in Filter (None: no limit)."""
        self._timeout_is_error = handle.feature_gates.at_least("1.36")
        # v1.37's PostFilter answers Unschedulable without a message when it has nothing
        # to deallocate (v1.34-v1.36: ``no new claims to deallocate`` / ``still not
        # schedulable``)
        self._post_filter_quiet = handle.feature_gates.at_least("1.37")
        # v1.37, InPlacePodVerticalScalingSchedulerPreemption: a resize-deferred Pod is
        # Skipped at PreFilter (by the framework), answered Unschedulable by PostFilter, and
        # fails Score (no PreFilter state)
        self._resize_deferral = handle.feature_gates.enabled(RESIZE_PREEMPTION)
        gates = handle.feature_gates
        # the release's allocator (draoptions.Options); v1.35+: Score ranks nodes by the
        # firstAvailable alternatives their allocation takes (v1.34 has no Score)
        self.allocator_options = draoptions.Options.of_release(
            gates.at_least, gates.enabled
        )._replace(pool_seed=handle.pool_seed)
        """What the release's allocator does (also read by ``explainer.devicefit``)."""
        self._score = gates.at_least("1.35") and (
            gates.enabled("DRAPrioritizedList") or not gates.at_least("1.36")
        )
        # v1.35's computeScore pairs claim i with the i-th new allocation: a Pod with an
        # allocated claim and a claim to allocate fails Score with an error
        self._score_misaligned = self._score and not gates.at_least("1.36")
        self.objects = DraObjects(
            handle.cluster,
            TaintRules.of_release(gates.at_least, gates.enabled),
            consumable=self.allocator_options.consumable,
        )
        self._binding = gates.enabled("DRADeviceBindingConditions") and gates.enabled(
            "DRAResourceClaimDeviceStatus"
        )
        self._binding_timeout = binding_timeout(args)
        self._extended = gates.enabled("DRAExtendedResource")
        self._prioritized_list = gates.enabled("DRAPrioritizedList")
        self._extended_v134 = not gates.at_least("1.35")
        self._v136 = gates.at_least("1.36")
        self._v137 = gates.at_least("1.37")
        # DRAWorkloadResourceClaims (v1.36+): a PodGroup's claims are reserved for the
        # group, and a claim its PodGroup owns is its members'
        self._group_claims = gates.enabled("DRAWorkloadResourceClaims")
        self.objects.extended_v134 = self._extended_v134
        if self._extended:  # NodeResourcesFit leaves resources backed by a class to DRA
            handle.services.provide(ext.RESOLVER, self.resolve)
            if gates.at_least("1.35"):  # and scores them from the devices (v1.35+)
                handle.services.provide(ext.TOTALS, self.extended_totals)
        self.index = index.DeviceIndex()
        self.objects.use.listeners.append(self.index.on_use)
        self._specs: dict[str, tuple[Mapping[str, Any], str]] = {}
        # DRAExtendedResource: the per-node answers by (requested names, own claims), for
        # one node table at one version of it and of the classes and slices
        self._variant_specs: dict[str, dict[str, Any]] = {}
        """DRAExtendedResource: the special claim's variant specs (NodeClaims.specs)."""
        self._made: dict[str, tuple[list[dict[str, Any]], list[ext.RequestMapping]]] = {}
        """DRAExtendedResource: the variants' requests and mappings (NodeClaims.made)."""
        self._answers_by: dict[tuple[frozenset[str], bool], special.RowAnswers] = {}
        self._answers_of: NodeTable | None = None
        self._answers_token: tuple[int, int] | None = None
        self._writers_of: tuple[object, ObjectWriter | None, PodStatusWriter | None] | None = None
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
            if check_owner:
                problem = groupclaims.not_for_pod(
                    pod, claim.raw, claim.owner_uids, self._group_claims, self._v136
                )
                if problem:
                    return out, problem
            out.append(claim)
        return out, ""

    def pod_group_of(self, pod: api.Pod) -> tuple[Mapping[str, Any] | None, str]:
        """Upstream ``getPodGroupSnapshot``: the Pod's PodGroup manifest under
        DRAWorkloadResourceClaims (None for a Pod in no group, or with the gate off), or
        the reason it is missing."""
        if not self._group_claims or not pod.scheduling_group:
            return None, ""
        key = f"{pod.namespace}/{pod.scheduling_group}"
        manifest = manager_of(self.handle).manifest(key)
        if manifest is None:
            return None, f"pod group object not found for pod group podgroup/{key}"
        return manifest, ""

    def bindings(self, pod: api.Pod, group: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """Upstream ``podResourceClaimBindings``: per claim entry of the Pod, what its claim
        is reserved for (the PodGroup for the group's claims, else the Pod)."""
        return [groupclaims.bind_to(pod, group, entry) for entry in pod.resource_claims]

    def resolve(self, name: str) -> r.DeviceClass | None:
        """The DeviceClass behind extended resource ``name`` (DRAExtendedResource), or None."""
        return self.objects.extended_classes().get(name)

    def extended_totals(self, names: Sequence[str]) -> ext.NodeTotals | None:
        """v1.35+ (DRAExtendedResource): NodeResourcesFit's and BalancedAllocation's counts
        of the devices behind the scored extended resources ``names``, per node
        (:func:`kubesched.devices.extended.device_totals` over the slices and allocations as
        they are now), or None when no class backs any of them (upstream
        ``getDRAPreScoredParams``)."""
        backed = {
            n: c
            for n in names
            if ext.is_dra_extended_name(n) and (c := self.resolve(n)) is not None
        }
        if not backed:
            return None
        slices = self.objects.slices()
        allocated = self.objects.allocated_ids()

        def totals(name: str, node: api.Node) -> tuple[int, int]:
            klass = backed.get(name)
            if klass is None:
                return 0, 0
            return ext.device_totals(klass, slices, allocated, node.name, node.labels)

        return totals

    def _wanted(self, pod: api.Pod) -> dict[str, int]:
        """The Pod's DRA-extended requests when a class backs one of them (else {})."""
        if not self._extended:
            return {}
        return special.requested(pod, self.resolve, self._extended_v134)

    # ------------------------------------------------------------------ extension points
    def sign(self, pod: api.Pod) -> tuple[str, ...] | None:
        """Result reuse: Pods without claims are all alike here (every node passes); Pods
        whose claims are all unallocated and not in flight are alike when the claims' specs
        are (claims from one template): :meth:`refresh_filter` then drops the nodes whose
        devices the previous Pods took.  Pods with an allocated claim, and Pods with
        extended resources backed by devices, do not sign."""
        if self._wanted(pod):
            return None
        if not pod.resource_claims:
            return ()
        claims, problem = self.pod_claims(pod)
        if problem:
            return None
        out = []
        for claim in claims:
            if claim.allocation is not None or claim.uid in self.objects.in_flight:
                return None
            out.append(self._spec_of(claim))
        return tuple(out)

    def _spec_of(self, claim: r.ResourceClaim) -> str:
        """The claim's ``spec`` serialised (kept per claim while its manifest is)."""
        spec = claim.raw.get("spec") or {}
        hit = self._specs.get(claim.key)
        if hit is None or hit[0] is not spec:
            if len(self._specs) > SPECS_MAX:
                self._specs.clear()
            hit = self._specs[claim.key] = (spec, json.dumps(spec, sort_keys=True))
        return hit[1]

    def refresh_filter(self, state: CycleState, pod: api.Pod, cluster: ClusterState) -> bool:
        """Result reuse for a Pod that signed like the previous one: its own PreFilter state;
        False (full cycle) unless one column decides both and no device was freed since."""
        old = state.get(_KEY)
        _, status = self.pre_filter(state, pod, cluster)
        new = state.get(_KEY)
        return (
            status.is_success()
            and isinstance(old, _State)
            and isinstance(new, _State)
            and new.plan is not None
            and new.plan == old.plan
            and new.token == old.token
        )

    def pre_enqueue(self, pod: api.Pod) -> Status:
        """Every claim must exist (upstream's message otherwise)."""
        _, problem = self.pod_claims(pod)
        return unschedulable(problem, resolvable=False) if problem else SUCCESS

    def pre_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[PreFilterResult | None, Status]:
        """Resolve the claims, check their classes, snapshot the devices in use."""
        del cluster
        state[_RAN] = True
        wanted = self._wanted(pod)
        if not pod.resource_claims and not wanted:
            return None, SKIP
        claims, problem = self.pod_claims(pod)
        if problem:
            return None, unschedulable(problem, resolvable=False)
        user_claims = len(claims)
        nodeclaims = None
        if wanted:
            owned = self.objects.controlled_by(pod.uid)
            candidates = list(self.objects.claims()) if owned is None else owned
            claim = special.special_claim(pod, candidates, self.objects.parse)
            if len(self._variant_specs) > SPECS_MAX or len(self._made) > SPECS_MAX:
                self._variant_specs.clear()
                self._made.clear()
            nodeclaims = special.NodeClaims(
                pod,
                claim,
                wanted,
                self.resolve,
                self._extended_v134,
                specs=self._variant_specs,
                parse=self.objects.parse,
                made=self._made,
            )
            claims = [*claims, claim]
        bind_to: list[dict[str, Any]] = []
        if self._group_claims:
            group, problem = self.pod_group_of(pod)
            if problem:
                return None, unschedulable(problem, resolvable=False)
            bind_to = self.bindings(pod, group)
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
            if nodeclaims is not None and claim is nodeclaims.base:
                continue  # validated per node in Filter
            for req in claim.requests:
                if req.exactly is None and not self._prioritized_list:
                    msg = (
                        f"resource claim {claim.key}, request {req.name}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled"
                    )
                    return None, unschedulable(msg, resolvable=False)
                alts = [req.exactly] if req.exactly is not None else list(req.first_available)
                for alt in alts:
                    name = req.name if req.exactly is not None else f"{req.name}/{alt.name}"
                    if alt.class_name not in classes:
                        msg = f"request {name}: device class {alt.class_name} does not exist"
                        return None, unschedulable(msg, resolvable=False)
        s = _State(claims, to_allocate, self.objects.in_use(), classes, self.objects.slices())
        s.shared = self.objects.shared_use()
        s.special, s.user_claims = nodeclaims, user_claims
        s.bind_to = bind_to
        if self._binding:
            s.blocked = frozenset(
                k
                for k, c in enumerate(claims)
                if c.allocation is not None and binding.blocked(c.raw, self._binding_timeout)
            )
        state.pop(drafrag.PLAN_KEY, None)
        if to_allocate:
            nodes = self.handle.cluster.nodes
            token = (self.objects.version, nodes.version)
            if token != self.index.token:
                rows = [(row, nodes.nodes[row]) for row in nodes.row_of.values()]
                self.index.refresh(
                    token,
                    s.slices,
                    [(i, n) for i, n in rows if n],
                    nodes.capacity,
                    self.allocator_options,
                )
            s.plan = None if nodeclaims is not None else index.plan(to_allocate)
            s.token = (*token, self.objects.use.freed)
            if s.plan is not None:  # for the device score (DeviceFragmentation)
                col = self.index.column(s.plan, classes[s.plan.sig[0]], s.in_use)
                state[drafrag.PLAN_KEY] = drafrag.DevicePlan(s.plan, col, self.index, s.in_use)
        state[_KEY] = s
        return None, SUCCESS

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """Per node: allocated claims reachable, the others allocatable (all at once: a
        column decides where it can, the allocator searches the other nodes)."""
        s = state.get(_KEY)
        n = rows.shape[0]
        if not isinstance(s, _State):
            return Verdict.all_pass(n)
        codes = np.zeros(n, dtype=np.int8)
        table: dict[int, Status] = {
            1: unschedulable(ERR_NOT_AVAILABLE, resolvable=False),
            2: unschedulable(ERR_CANNOT_ALLOCATE, resolvable=False),
        }
        search = np.arange(n) if s.to_allocate else np.zeros(0, dtype=np.int64)
        if s.plan is not None:
            col = self.index.column(s.plan, s.classes[s.plan.sig[0]], s.in_use)
            exact = col.exact[rows]
            codes[exact & (col.free[rows] < s.plan.need)] = 2
            search = np.flatnonzero(~exact)
        nodes = cluster.nodes
        if s.special is not None:
            search = self._filter_special(s, rows, codes, table, cluster)
        kept = self._kept_answers(s)
        if kept is not None and search.shape[0]:
            # the answers kept for claims of this shape, on rows whose devices in use did
            # not change since: what the allocator would answer now
            at = rows[search]
            known = self.index.known(kept, at)
            if known.any():
                hit = at[known]
                passed = kept.passed[hit]
                codes[search[known][~passed]] = 2
                names, found_on = nodes.names, kept.found
                s.per_node.update((names[x], found_on[x]) for x in hit[passed].tolist())
                search = search[~known]
        for i in search.tolist():
            row = int(rows[i])
            node = nodes.nodes[row]
            assert node is not None
            to_allocate = s.to_allocate
            variant = s.per_node_special.get(row)
            if variant is not None:
                base = s.special.base if s.special is not None else None
                to_allocate = [variant[0] if c is base else c for c in to_allocate]
            try:
                found = allocator.allocate_in(
                    self.index.pools_of.get(row, []),
                    to_allocate,
                    s.classes,
                    s.in_use,
                    self.allocator_options,
                    self.filter_timeout,
                    node=(node.name, node.labels),
                    shared=s.shared,
                )
            except allocator.AllocationTimeout:
                # v1.36+: an Error (the Pod backs off and retries); before, unresolvable
                codes[i] = 6
                table[6] = (
                    error(f"node {node.name}: {ERR_TIMED_OUT}")
                    if self._timeout_is_error
                    else unschedulable(ERR_TIMED_OUT, resolvable=False)
                )
                continue
            except allocator.AllocationError as e:
                codes[i] = 3
                table[3] = error(str(e))
                continue
            if kept is not None and not any(
                d.share_id is not None for res in found or () for d in res
            ):
                self.index.keep(kept, row, found)
            if found is None:
                codes[i] = 2
            else:
                s.per_node[node.name] = found
        # upstream runs the allocator before it checks where allocated claims are; on a
        # node the allocator passed, every allocated claim the node cannot reach counts as
        # unavailable (PostFilter picks among them), not just the first
        ok = np.flatnonzero(codes == 0)
        for k, c in enumerate(s.claims):
            if k in s.blocked:  # its binding failed or timed out: no node will do
                if ok.shape[0]:
                    s.unavailable.add(k)
                    codes[ok] = 1
                continue
            if c.allocation_node_selector is None:
                continue
            away = ~reachable(c.allocation_node_selector, cluster, rows[ok])
            if away.any():
                s.unavailable.add(k)
                codes[ok[away]] = 1
        return Verdict(codes, table)

    def _kept_answers(self, s: _State) -> index.Kept | None:
        """The allocator's answers the device index keeps per row for the shape of the
        Pod's claims to allocate (:meth:`~kubesched.devices.draindex.DeviceIndex.answer`);
        None when they cannot be kept: nothing to allocate, a special claim (its variant
        differs per node), or devices shared by capacity (not counted per row)."""
        if not s.to_allocate or s.special is not None or s.shared is not allocator.NO_SHARES:
            return None
        return self.index.answers_for(tuple(self._spec_of(c) for c in s.to_allocate))

    def _filter_special(
        self,
        s: _State,
        rows: IntArray,
        codes: np.ndarray[Any, np.dtype[np.int8]],
        table: dict[int, Status],
        cluster: ClusterState,
    ) -> IntArray:
        """Upstream ``filterExtendedResources`` per node of ``rows``: a stale special claim
        or a resource the node can neither give nor get from DRA rejects it (``codes``
        4 and 5); a node that gets every extended resource from its allocatable and a Pod
        without claims of its own pass; the others get the special claim's variant for the
        resources they get from DRA.  The answers come per row from :meth:`_answers`; where
        one column plan decides a variant (:meth:`_special_plan`) the column rejects or
        passes the nodes it is exact on (Reserve allocates on the chosen one).  Returns the
        positions the allocator must search."""
        assert s.special is not None
        table[special.STALE] = unschedulable(special.ERR_STALE, resolvable=False)
        table[special.CANNOT_FIT] = unschedulable(special.ERR_CANNOT_FIT, resolvable=False)
        if s.special.base.requests:  # a claim from an earlier cycle: every node rejects
            codes[:] = special.STALE
            return np.zeros(0, dtype=np.int64)
        answers = self._answers(s, cluster)
        code = answers.code[rows]
        stop = (code == special.STALE) | (code == special.CANNOT_FIT)
        codes[stop] = code[stop]
        searched = np.flatnonzero(code == special.SEARCH)
        groups = answers.group[rows[searched]]
        search: list[IntArray] = []
        for k, to_dra in enumerate(answers.keys):
            at = searched[groups == k]
            if not at.shape[0]:
                continue
            on = rows[at]
            s.per_node_special.update(dict.fromkeys(on.tolist(), s.special.variant(to_dra)))
            p = self._special_plan(s, to_dra)
            if p is None:
                search.append(at)
                continue
            # one column decides the nodes it is exact on, as for ordinary claims
            col = self.index.column(p, s.classes[p.sig[0]], s.in_use)
            exact = col.exact[on]
            fits = col.free[on] >= p.need
            codes[at[exact & ~fits]] = 2
            s.decided.update(on[exact & fits].tolist())
            search.append(at[~exact])
        if not search:
            return np.zeros(0, dtype=np.int64)
        return np.sort(np.concatenate(search))

    def _answers(self, s: _State, cluster: ClusterState) -> special.RowAnswers:
        """:func:`special.node_answers` for the Pod's requested names, kept while the
        nodes, classes and slices are unchanged."""
        assert s.special is not None
        nodes = cluster.nodes
        token = (nodes.version, self.objects.version)
        if self._answers_of is not nodes or self._answers_token != token:
            self._answers_of, self._answers_token = nodes, token
            self._answers_by.clear()
        key = (frozenset(s.special.wanted), s.user_claims > 0)
        hit = self._answers_by.get(key)
        if hit is None:
            if len(self._answers_by) > ANSWERS_MAX:
                self._answers_by.clear()
            hit = special.node_answers(s.special, nodes, s.user_claims > 0)
            self._answers_by[key] = hit
        return hit

    def _special_plan(self, s: _State, to_dra: frozenset[str]) -> index.Plan | None:
        """The column plan of the claims to allocate on a node that gets ``to_dra`` from
        DRA (the special claim replaced by that variant), or None: the allocator searches
        (a variant without requests, a class missing, or :func:`index.plan` refuses)."""
        if to_dra in s.special_plans:
            return s.special_plans[to_dra]
        assert s.special is not None
        base = s.special.base
        claim = s.special.variant(to_dra)[0]
        p = None
        if claim.requests:
            p = index.plan([claim if c is base else c for c in s.to_allocate])
            if p is not None and p.sig[0] not in s.classes:
                p = None
        s.special_plans[to_dra] = p
        return p

    def post_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, diagnosis: Any
    ) -> tuple[None, Status]:
        """Upstream's PostFilter: deallocate a claim that keeps the Pod off every node when
        no other Pod uses it (written through the API client, when there is one)."""
        del cluster, diagnosis
        if pod.resize_deferred and self._resize_deferral:
            return None, unschedulable()  # upstream v1.37: nothing to deallocate for a resize
        if _RAN not in state:
            return None, error("not found")
        s = state.get(_KEY)
        if not isinstance(s, _State) or not s.claims:
            if self._post_filter_quiet:
                return None, unschedulable()
            return None, unschedulable("no new claims to deallocate")
        freed = self._free_one(pod, s)
        if freed is not None:
            return None, freed
        if self._post_filter_quiet:
            return None, unschedulable()
        return None, unschedulable("still not schedulable")

    def _free_one(self, pod: api.Pod, s: _State) -> Status | None:
        """Upstream ``deallocateOrDeletePodClaims``: deallocate one claim that kept the Pod
        off a node where the rest fit and that no other Pod uses (upstream picks one at
        random; kubesched the first by position), else delete the DRAExtendedResource claim
        an earlier cycle made; Unschedulable saying which, or the write's Error.  None:
        nothing to free."""
        stale = s.special.base if s.special and not special.is_special(s.special.base) else None
        for k in sorted(s.unavailable):
            claim = s.claims[k]
            if s.special is not None and claim is s.special.base:
                if stale is not None:
                    break
                continue
            if set(claim.reserved_for) <= {pod.uid}:
                status = self._deallocate(claim)
                return status or unschedulable("deallocation of ResourceClaim completed")
        if stale is not None:  # the special claim an earlier cycle created: delete it
            write = self.handle.api
            if isinstance(write, ObjectDeleter):
                try:
                    write.delete_object("ResourceClaim", stale.namespace, stale.name)
                except Exception as e:
                    return error(str(e))
            return unschedulable("deletion of ResourceClaim completed")
        return None

    def _deallocate(self, claim: r.ResourceClaim) -> Status | None:
        """Write ``claim`` without its reservations, allocation and device statuses (through
        the API client, when it writes): the write's Error, None when it succeeds."""
        write = self.handle.api
        refused = faults.post_filter(write, claim.raw)
        if refused:
            return error(refused)
        if isinstance(write, ObjectWriter):
            raw = copy.deepcopy(dict(claim.raw))
            status = raw.get("status") or {}
            for key in ("reservedFor", "allocation", "devices"):
                status.pop(key, None)
            raw["status"] = status
            try:
                write.update_object(raw)
            except Exception as e:
                return error(f"deallocate claim {claim.key}: {e}")
        return None

    def pod_group_post_filter_claims(
        self, members: Sequence[api.Pod], states: Mapping[str, CycleState]
    ) -> Status:
        """Upstream v1.37 ``PodGroupPostFilter`` for a PodGroup (the cycle does not ask for a
        composite tree, nor under TopologyAwareWorkloadScheduling for a group with
        scheduling constraints): each member the algorithm tried (``states``, by Pod key)
        frees what its own PostFilter would (:meth:`_free_one`); then, under
        DRAWorkloadResourceClaims, when one of them had nothing to free, the group's own
        claims (:meth:`_free_group_claims`, whose message then answers).  Unschedulable
        ``deallocation and deletion of ResourceClaims completed``; an Error as soon as a
        write fails, or ``not found`` when no member reached this plugin's PreFilter
        (upstream reads the group's state, which the first one writes)."""
        tried = [
            (pod, state)
            for pod in members
            if (state := states.get(pod.key)) is not None and _RAN in state
        ]
        if not tried:
            return error("not found")
        unreserve = False
        for pod, state in tried:
            s = state.get(_KEY)
            freed = self._free_one(pod, s) if isinstance(s, _State) and s.claims else None
            if freed is None:
                unreserve = True  # not every member could be helped
            elif freed.code == Code.ERROR:
                return freed
        if unreserve and self._group_claims and members:
            said = self._free_group_claims(members[0], [state for _, state in tried])
            if said is not None:
                return said
        return unschedulable("deallocation and deletion of ResourceClaims completed")

    def _free_group_claims(self, pod: api.Pod, states: list[CycleState]) -> Status | None:
        """Upstream ``deallocatePodGroupClaims`` (``pod``: the group's first member): unless
        a member is scheduled already, deallocate the first claim that kept a member off a
        node and is reserved for nobody or for the PodGroup alone, else take the PodGroup
        out of ``reservedFor`` of the first of its own allocated claims reserved for it
        (upstream's patch, which the API's faults do not disturb).  Its message, an Error,
        or None (nothing done)."""
        manager = manager_of(self.handle)
        key = manager.group_key(pod)
        if key is None or manager.state(key).scheduled_count() > 0:
            return None
        group, problem = self.pod_group_of(pod)
        if problem:
            return error(problem)
        assert group is not None  # DRAWorkloadResourceClaims is on and the Pod in a group
        group_uid = groupclaims.object_uid(group)
        for state in states:
            s = state.get(_KEY)
            if not isinstance(s, _State):
                continue
            for k in sorted(s.unavailable):
                claim = s.claims[k]
                if claim.reserved_for in ((), (group_uid,)):
                    status = self._deallocate(claim)
                    return status or unschedulable(
                        "deallocation of PodGroup ResourceClaim completed"
                    )
        statuses = groupclaims.group_statuses(group)
        for entry, claim_name, template in groupclaims.group_entries(group):
            name = claim_name
            if not claim_name:
                if not template:
                    return error(
                        f"PodGroup {key}, spec.resourceClaim {entry}: "
                        "none of the supported fields are set"
                    )
                if entry not in statuses:
                    return error(f"PodGroup {key}: ResourceClaim not created yet")
                name = statuses[entry]
                if not name:
                    continue
            own = self.objects.claim(pod.namespace, name)
            if own is None:
                return error(f'could not find ResourceClaim "{pod.namespace}/{name}"')
            if not claim_name and group_uid not in own.owner_uids:
                continue  # made from the template, but not for this PodGroup
            if own.allocation is None or not groupclaims.reserved_for_pod(pod, own.raw, True):
                continue
            write = self._writers()[0]
            if write is not None:
                patched = dict(own.raw.get("status") or {})
                kept = [x for x in patched.get("reservedFor") or () if x.get("uid") != group_uid]
                if kept:
                    patched["reservedFor"] = kept
                else:
                    patched.pop("reservedFor", None)
                write.update_object({**own.raw, "status": patched})
            return unschedulable("ResourceClaim unreserved for PodGroup")
        return None

    def pre_score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Status:
        """Skip before v1.35 (upstream has no Score), with DRAPrioritizedList off (v1.36+;
        v1.35 scores whatever the gate), and for a Pod with no claim to allocate (upstream's
        Score is 0 on every node then).  A resize-deferred Pod under
        InPlacePodVerticalScalingSchedulerPreemption is scored: its PreFilter was Skipped, and
        upstream's Score fails for want of its state (:meth:`score`)."""
        del cluster, rows
        if self._score and pod.resize_deferred and self._resize_deferral:
            return SUCCESS
        s = state.get(_KEY)
        if not self._score or not isinstance(s, _State) or not s.to_allocate:
            return SKIP
        return SUCCESS

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """Upstream ``computeScore`` per node of ``rows`` (int64 ``(len(rows),)``): ``8 - i``
        per ``firstAvailable`` request allocated from its alternative ``i``, over the claims
        allocated earlier (their ``status.allocation``) and the node's allocation of the
        others (a node a column decided allocates ``exactly`` requests only: 0)."""
        out = np.zeros(rows.shape[0], dtype=np.int64)
        s = state.get(_KEY)
        if not isinstance(s, _State):
            if rows.size and pod.resize_deferred and self._resize_deferral:
                raise PluginError(NAME, "not found", point="score")  # no PreFilter state
            return out
        if self._score_misaligned and len(s.claims) > len(s.to_allocate) and rows.size:
            n = len(s.to_allocate)
            msg = f"number of allocations {n} is smaller than number of claims"
            raise PluginError(NAME, msg, point="score")
        base = sum(_ranked(c, c.allocation) for c in s.claims if c.allocation is not None)
        if not any(req.exactly is None for c in s.to_allocate for req in c.requests):
            out[:] = base  # no firstAvailable request to allocate: every node ranks 0 more
            return out
        nodes = cluster.nodes.nodes
        for i, row in enumerate(rows.tolist()):
            node = nodes[row]
            found = None if node is None else s.per_node.get(node.name)
            out[i] = base
            if found is not None:
                out[i] += sum(_ranked(c, res) for c, res in zip(s.to_allocate, found, strict=False))
        return out

    def normalize_score(self, state: CycleState, pod: api.Pod, scores: IntArray) -> None:
        """Upstream ``helper.DefaultNormalizeScore(100, false)``: ``100 * score / max``
        (the scores are never negative; all zero stays zero)."""
        del state, pod
        top = int(scores.max(initial=0))
        if top > 0:
            scores[:] = scores * MAX_NODE_SCORE // top

    def reserve(self, state: CycleState, pod: api.Pod, node_name: str) -> Status:
        """Put the node's allocation in flight, so no other Pod gets those devices."""
        s = state.get(_KEY)
        if not isinstance(s, _State) or not s.to_allocate:
            return SUCCESS
        found = s.per_node.get(node_name)
        row = self.handle.cluster.nodes.row_of.get(node_name)
        chosen = (state.get(drafrag.ORDER_KEY) or {}).get(row, ())
        chooser = self.handle.services.get(drafrag.CHOOSER)
        dp = state.get(drafrag.PLAN_KEY)
        if not chosen and chooser is not None and row is not None and dp is not None:
            chosen = chooser(dp, row)  # the device score enabled, Score skipped (one node)
        if found is None and row is not None and row in s.decided:
            # a column passed the node with its special variant: the devices now
            found = self._allocate_special(s, node_name, row)
            if found is None:
                return error("claim allocation not found for node")
        if (found is None or chosen) and s.plan is not None and row is not None:
            # the device score's choice first (upstream: first fit)
            pools = drafrag.preferred_pools(self.index.pools_of.get(row, []), chosen)
            found = self._allocate_on(s, node_name, pools, s.to_allocate)
        if found is None and s.special is not None and len(s.to_allocate) == 1:
            return SUCCESS  # only the special claim, and the node's allocatable has it all
        if found is None or len(found) != len(s.to_allocate):
            return error("claim allocation not found for node")
        if row is not None:
            s.slices = self.index.slices_of.get(row, [])  # PreBind's node selector
        for claim, results in zip(s.to_allocate, found, strict=True):
            self.objects.set_in_flight(claim.uid, results)
        s.reserved = True
        return SUCCESS

    def _allocate_special(
        self, s: _State, node_name: str, row: int
    ) -> list[tuple[r.AllocatedDevice, ...]] | None:
        """The allocator on one node with the node's variant of the special claim (the
        search Filter left to a column), kept in ``s.per_node``."""
        assert s.special is not None
        base, variant = s.special.base, s.per_node_special[row][0]
        claims = [variant if c is base else c for c in s.to_allocate]
        return self._allocate_on(s, node_name, self.index.pools_of.get(row, []), claims)

    def _allocate_on(
        self, s: _State, node_name: str, pools: list[Pool], claims: list[r.ResourceClaim]
    ) -> list[tuple[r.AllocatedDevice, ...]] | None:
        """The allocator over ``pools`` of one node for ``claims``; what it finds is kept in
        ``s.per_node`` for PreBind."""
        node = self.handle.cluster.node(node_name)
        found = allocator.allocate_in(
            pools,
            claims,
            s.classes,
            s.in_use,
            self.allocator_options,
            node=(node_name, node.labels if node is not None else {}),
            shared=s.shared,
        )
        if found is not None:
            s.per_node[node_name] = found
        return found

    def unreserve(self, state: CycleState, pod: api.Pod, node_name: str) -> None:
        """Drop the in-flight allocations of this Pod's claims."""
        s = state.get(_KEY)
        if isinstance(s, _State) and s.reserved:
            for claim in s.to_allocate:
                self.objects.set_in_flight(claim.uid, None)
            s.reserved = False
        if isinstance(s, _State) and s.reserved_now:
            self._unreserve_claims(pod, s.reserved_now)
            s.reserved_now.clear()
        if isinstance(s, _State) and s.created is not None:
            deleter = self.handle.api
            if isinstance(deleter, ObjectDeleter):
                deleter.delete_object("ResourceClaim", *s.created)
            s.created = None

    def _unreserve_claims(self, pod: api.Pod, keys: list[str]) -> None:
        """Upstream ``Unreserve``: the Pod taken out of ``status.reservedFor`` of each claim
        its failed PreBind reserved (a patch; the allocation stays)."""
        write = self._writers()[0]
        if write is None:
            return
        for key in keys:
            namespace, _, name = key.partition("/")
            current = self.objects.claim(namespace, name)
            if current is None:
                continue
            status = dict(current.raw.get("status") or {})
            reserved = [x for x in status.get("reservedFor") or () if x.get("uid") != pod.uid]
            if len(reserved) == len(status.get("reservedFor") or ()):
                continue
            if reserved:
                status["reservedFor"] = reserved
            else:
                status.pop("reservedFor", None)
            write.update_object({**current.raw, "status": status})

    def pre_bind(self, state: CycleState, pod: api.Pod, node_name: str) -> Status:
        """Write the allocation and the reservation for the Pod into each claim."""
        s = state.get(_KEY)
        if not isinstance(s, _State):
            return SUCCESS
        found = dict(
            zip((c.uid for c in s.to_allocate), s.per_node.get(node_name, []), strict=False)
        )
        node = self.handle.cluster.node(node_name)
        for k, claim in enumerate(s.claims):
            if s.special is not None and claim is s.special.base:
                status = self._bind_special(s, pod, node_name, node, found.get(claim.uid))
                if not status.is_success():
                    return status
                continue
            if groupclaims.reserved_for_pod(pod, claim.raw, self._group_claims):
                continue  # upstream binds only the claims not reserved for it yet
            current = self.objects.claim(claim.namespace, claim.name) or claim
            results = found.get(claim.uid)
            raw = claim_with_reservation(
                current.raw,
                s.bind_to[k] if k < len(s.bind_to) else groupclaims.pod_ref(pod),
                results,
                node_name,
                node,
                s.slices,
                self.allocator_options.binds_to_node,
            )
            outcome = faults.pre_bind(self.handle.api, current.raw, raw, results is not None)
            if outcome.error:
                self._fail_write(claim.uid, outcome.stored)
                deleter = self.handle.api
                if outcome.deleted and isinstance(deleter, ObjectDeleter):
                    deleter.delete_object("ResourceClaim", claim.namespace, claim.name)
                return error(outcome.error)
            _, failed = self._write_claim(claim.uid, raw, results)
            if failed is not None:
                what = "add reservation" if results is None else "add allocation and reservation"
                return error(f"{what} to claim {claim.key}: {failed}")
            s.reserved_now.append(claim.key)
        s.reserved = False
        s.reserved_now.clear()
        return SUCCESS

    def pre_bind_timing(self, state: CycleState, pod: api.Pod, node_name: str) -> PreBindTiming:
        """How :meth:`pre_bind` will go (``PreBindPreview``), its claims in its order:
        upstream's ``bindClaim`` writes each at once and fails at the first write refused
        (:func:`.faults.pre_bind_timing`).  A claim whose devices have binding conditions
        passes too: PreBind's wait for them is not modelled (module docstring)."""
        s = state.get(_KEY)
        if not isinstance(s, _State):
            return PreBindTiming.PASSES
        found = zip((c.uid for c in s.to_allocate), s.per_node.get(node_name, []), strict=False)
        allocating = {uid for uid, results in found if results is not None}
        row = self.handle.cluster.nodes.row_of.get(node_name)
        for claim in s.claims:
            if s.special is not None and claim is s.special.base:
                variant = None if row is None else s.per_node_special.get(row)
                if claim.uid not in allocating or variant is None:
                    continue
                created = special.created_claim(pod, variant[0])
                timing = faults.pre_bind_timing(self.handle.api, created, True)
            elif groupclaims.reserved_for_pod(pod, claim.raw, self._group_claims):
                continue
            else:
                current = self.objects.claim(claim.namespace, claim.name) or claim
                timing = faults.pre_bind_timing(
                    self.handle.api, current.raw, claim.uid in allocating
                )
            if timing is not PreBindTiming.PASSES:
                return timing
        return PreBindTiming.PASSES

    def _fail_write(self, in_flight: str, stored: dict[str, Any] | None) -> None:
        """A claim write a declared fault failed (:mod:`.faults`): the in-flight allocation
        under the uid ``in_flight`` ends (upstream ``bindClaim``'s deferred
        ``RemoveClaimPendingAllocation``) and what the fault left is stored."""
        self.objects.set_in_flight(in_flight, None)
        write = self._writers()[0]
        if stored is not None and write is not None:
            write.update_object(stored)

    def _write_claim(
        self,
        in_flight: str,
        raw: dict[str, Any],
        results: tuple[r.AllocatedDevice, ...] | None,
    ) -> tuple[r.ResourceClaim, Exception | None]:
        """PreBind's write of one claim ``raw`` (its allocation written from ``results``):
        assumed at once (the in-flight allocation under the uid ``in_flight`` ends), then
        written to the API server; a failed write forgets the assumed claim again.  The
        claim, and the write's error if it failed."""
        updated = self.objects.parse_written(raw, results)
        self.objects.assume(updated)
        self.objects.set_in_flight(in_flight, None)
        write = self._writers()[0]
        if write is not None:
            try:
                write.update_object(raw)
            except Exception as e:
                self.objects.forget(updated.key)
                return updated, e
        return updated, None

    def _writers(self) -> tuple[ObjectWriter | None, PodStatusWriter | None]:
        """The API client as an object writer and as a Pod status writer (None: it is not
        one), checked once per client (a runtime Protocol check costs microseconds)."""
        api_ = self.handle.api
        if self._writers_of is None or self._writers_of[0] is not api_:
            self._writers_of = (
                api_,
                api_ if isinstance(api_, ObjectWriter) else None,
                api_ if isinstance(api_, PodStatusWriter) else None,
            )
        return self._writers_of[1], self._writers_of[2]

    def _bind_special(
        self,
        s: _State,
        pod: api.Pod,
        node_name: str,
        node: api.Node | None,
        results: tuple[r.AllocatedDevice, ...] | None,
    ) -> Status:
        """PreBind of the special claim: nothing when the node's allocatable gave every
        extended resource; else create the node's variant with its allocation and the Pod
        in ``reservedFor``, and write the Pod's ``status.extendedResourceClaimStatus``."""
        assert s.special is not None
        row = self.handle.cluster.nodes.row_of.get(node_name)
        variant = None if row is None else s.per_node_special.get(row)
        if results is None or variant is None:
            return SUCCESS
        claim, mappings = variant
        created = special.created_claim(pod, claim)
        raw = claim_with_reservation(
            created,
            groupclaims.pod_ref(pod),
            results,
            node_name,
            node,
            s.slices,
            self.allocator_options.binds_to_node,
        )
        outcome = faults.pre_bind(self.handle.api, created, raw, True)
        if outcome.error:  # created, then its status refused: Unreserve deletes it
            meta = created.get("metadata") or {}
            self._fail_write(s.special.base.uid, outcome.stored or created)
            s.created = (str(meta.get("namespace") or "default"), str(meta.get("name")))
            return error(outcome.error)
        updated, failed = self._write_claim(s.special.base.uid, raw, results)
        if failed is not None:
            return error(f"create claim for extended resources {updated.key}: {failed}")
        write = self._writers()[1]
        if not mappings:
            return error(
                f"nil or empty request mappings, no update of pod {pod.key} "
                "ExtendedResourceClaimStatus"
            )
        if write is not None:
            try:
                write.patch_pod_status(
                    pod,
                    {"extendedResourceClaimStatus": special.claim_status(updated.name, mappings)},
                )
            except Exception as e:
                return error(f"update pod {pod.key} ExtendedResourceClaimStatus: {e}")
        return SUCCESS

    # ------------------------------------------------------------------ informer events
    def on_object(self, obj: dict[str, Any], deleted: bool = False) -> None:
        """A claim changed: the API server's version replaces the assumed one; a class or
        a slice changed: the device index is rebuilt when next asked."""
        self.objects.changed(obj, deleted)
        if obj.get("kind") == "ResourceClaim":
            self.objects.heard(obj, deleted)


def _ranked(claim: r.ResourceClaim, results: tuple[r.AllocatedDevice, ...]) -> int:
    """``8 - i`` per ``firstAvailable`` request of ``claim`` whose alternative ``i`` is among
    the allocation ``results`` (upstream names it ``request/alternative``)."""
    taken = {d.request for d in results}
    total = 0
    for req in claim.requests:
        if req.exactly is not None:
            continue
        for i, alt in enumerate(req.first_available):
            if f"{req.name}/{alt.name}" in taken:
                total += FIRST_AVAILABLE_MAX - i
    return total


FILTER_TIMEOUT_DEFAULT = 10.0
"""Upstream's ``filterTimeout`` default (seconds) under DRASchedulerFilterTimeout."""


def filter_timeout(args: object | None, handle: Handle) -> float | None:
    """``filterTimeout`` of the (validated) args in seconds under DRASchedulerFilterTimeout
    (10 s when absent), None without a limit (the gate off, or 0)."""
    if not handle.feature_gates.enabled("DRASchedulerFilterTimeout"):
        return None
    raw = args.get("filterTimeout") if isinstance(args, Mapping) else None
    seconds = parse_go_duration(raw) if isinstance(raw, str) else None
    if seconds is None:
        seconds = FILTER_TIMEOUT_DEFAULT
    return seconds if seconds > 0 else None


def binding_timeout(args: object | None) -> float:
    """``bindingTimeout`` of the (validated) args in seconds (v1.35+), else upstream's
    default (v1.34's constant)."""
    raw = args.get("bindingTimeout") if isinstance(args, Mapping) else None
    seconds = parse_go_duration(raw) if isinstance(raw, str) else None
    return binding.BINDING_TIMEOUT_DEFAULT if seconds is None else seconds


def new(args: object | None, handle: Handle) -> DynamicResources:
    """Factory (``filterTimeout`` is the one arg read)."""
    return DynamicResources(args, handle)
