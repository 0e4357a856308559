"""VolumeBinding (upstream v1.34 ``volumebinding/volume_binding.go``, queueing hints on,
``StorageCapacityScoring`` off as by default).

- PreFilter: a Pod without claims (``persistentVolumeClaim`` or ephemeral) is Skipped; a
  missing, lost, deleting or foreign ephemeral claim is UnschedulableAndUnresolvable with
  upstream's message; an unbound claim that is not ``WaitForFirstConsumer`` (or has a
  missing class) makes the Pod UnschedulableAndUnresolvable: ``pod has unbound immediate
  PersistentVolumeClaims``.
- Filter: per node, :func:`~.binder.find_pod_volumes`: the bound claims' PVs must exist and
  admit the node, the unbound ones must find a static PV or be provisionable there; the
  reasons (UnschedulableAndUnresolvable) are upstream's four.
- PreScore: Skip (no scorer while StorageCapacityScoring is off; a ``shape`` in the args is
  refused at configuration time, as upstream refuses it).
- Reserve / Unreserve: the chosen node's bindings are assumed (the PV with its ``claimRef``,
  a claim to provision with the selected-node annotation) / restored.
- PreBind: with an API client that runs a PV controller (:class:`VolumeBindWaiter`: the
  simulator's, and live mode's in :mod:`kubesched.live.volumes`), upstream's
  ``BindPodVolumes``: the PV's ``claimRef`` (a static match) and the claim's selected-node
  annotation (a claim to provision) are written (a failed write ends PreBind with its
  message, as upstream's), then PreBind waits for the controller to bind them, polling
  every second up to ``bindTimeoutSeconds`` (``binding volumes: context deadline
  exceeded`` after it; ``binding volumes: <reason>`` when the waiter's checks fail).
  Without one (explain, schedule, bench), the bindings are made as the PV controller and a
  provisioner would make them at once (the PV ``Bound`` to the claim, the claim ``Bound``
  with ``volumeName``; a provisioned PV created for a claim to provision), written through
  the API client when it writes objects, and kept assumed until the API server's versions
  arrive (``docs/storage.md``).  Then (in that path only: the controller path does not
  re-check node affinity yet), as upstream's ``checkBindings``, each statically bound PV
  must admit the node as VolumeBinding's Filter reads a bound PV (an in-tree one migrated
  on the node: its CSI translation): else an error, and the next attempt finds the claim
  bound to a PV in conflict.  An API client with declared faults (:class:`VolumeFaultSource`:
  ``kubesched.schedule``'s ``volume_faults``) makes PreBind fail as upstream's does when its
  write is refused, the PV controller resets a PV's ``claimRef`` or a provisioner gives up;
  ``pre_bind_timing`` tells beforehand whether a refused write fails it at once.
- Queueing hints: a claim the Pod names added or updated (here), a StorageClass, CSINode,
  CSIDriver or CSIStorageCapacity change as upstream tells them apart
  (:mod:`~.hints`); a PersistentVolume and a Node's addition or label change unhinted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from kubesched.api import objects as api
from kubesched.api import storage as st
from kubesched.api.csimigration import TranslationError, binder_node_affinity
from kubesched.api.podvolumes import ephemeral_claim_name
from kubesched.config import names
from kubesched.config.featuregates import RESIZE_PREEMPTION
from kubesched.framework.contract import Locality, PreBindTiming
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    IntArray,
    ObjectWriter,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    Verdict,
    error,
)
from kubesched.kernels.resources import MAX_CUSTOM_PRIORITY_SCORE, broken_linear
from kubesched.plugins.volumebinding import binder as b
from kubesched.plugins.volumebinding import hints as h
from kubesched.state.cache import ClusterState
from kubesched.state.storage import Storage, storage_of

NAME = names.VOLUME_BINDING
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ERR_BIND_TIMEOUT = "binding volumes: context deadline exceeded"
DEFAULT_BIND_TIMEOUT_SECONDS = 600
DEFAULT_SHAPE = ((0, 10), (100, 0))
"""Upstream's default ``shape`` under StorageCapacityScoring: (utilization, score 0..10);
an empty node scores best."""
_KEY = NAME


@runtime_checkable
class VolumeBindWaiter(Protocol):
    """An API client with a PV controller behind it (the simulator's): PreBind writes the
    bindings and waits for the controller, as upstream's does."""

    def binds_claims(self) -> bool:
        """Whether a PV controller binds claims here (False: PreBind binds them itself)."""

    def update_volume(self, obj: dict[str, Any]) -> None:
        """Write a PV (its ``claimRef``) or a claim (its selected-node annotation), as
        upstream's ``bindAPIUpdate``; raises on failure (``str()``: the message)."""

    def wait_for_volumes(self, pod: api.Pod, claims: list[str], timeout: float) -> bool:
        """Wait until every claim (``namespace/name``) of ``pod`` is bound: True, or False
        after ``timeout`` seconds; raises when a check says the binding failed (``str()``:
        upstream's reason, which PreBind reports after ``binding volumes:``)."""


@runtime_checkable
class VolumeFaultSource(Protocol):
    """An API client that says what goes wrong with a PreBind write (``kubesched.schedule``'s
    ``volume_faults``: :data:`kubesched.sim.apiserver.VOLUME_FAULTS`)."""

    def volume_fault(self, key: str) -> str:
        """The fault of the write of ``key`` (``PersistentVolume/NAME`` or
        ``PersistentVolumeClaim/NAMESPACE/NAME``); "" when none."""


PV_FAULT, PVC_FAULT = "PersistentVolume", "PersistentVolumeClaim"
PV_FAULTS = ("refuseUpdate", "resetClaimRef")
"""The faults of a static binding's PV write (``bindLater`` ends as none does)."""
PVC_FAULTS = ("refuseUpdate", "failProvisioning")
"""The faults of a claim to provision's write."""
REFUSED = "refused:"


def _fault_of(
    fault: str, kinds: tuple[str, ...], name: str, claim: st.PersistentVolumeClaim
) -> str:
    """What ``fault`` makes of the write (upstream's message): ``REFUSED`` + the API server's
    error, the reason ``checkBindings`` fails with, or "" (none, or one that ends as none)."""
    if fault not in kinds:
        return ""
    if fault == "refuseUpdate":
        resource = "persistentvolumes" if kinds is PV_FAULTS else "persistentvolumeclaims"
        return f'{REFUSED}{resource} "{name}" is forbidden: refused (the case\'s volumeFaults)'
    if fault == "resetClaimRef":
        return f'ClaimRef got reset for pv "{name}"'
    # failProvisioning: the selected-node annotation removed (all of them when no other is
    # left: the API server stores no empty map, and checkBindings says so first).
    if set(claim.annotations) <= {st.ANN_SELECTED_NODE}:
        return f'selectedNode annotation reset for PVC "{name}"'
    return f'provisioning failed for PVC "{name}"'


@dataclass(slots=True)
class _State:
    """Upstream ``stateData`` (shared by clones, as upstream's is)."""

    claims: b.PodVolumeClaims | None = None
    by_node: dict[str, b.PodVolumes] = field(default_factory=dict)
    all_bound: bool = False
    assumed_pvs: list[str] = field(default_factory=list)
    assumed_pvcs: list[str] = field(default_factory=list)
    bound_fits: list[IntArray] = field(default_factory=list)
    """Node rows where :meth:`VolumeBinding._filter_bound` passed (each call's): their
    volumes, nothing to bind, are not kept in ``by_node`` one by one."""

    def volumes_on(self, node: str, row: int | None) -> b.PodVolumes | None:
        """The volumes found for ``node`` (at ``row``), or None where it did not pass."""
        found = self.by_node.get(node)
        if found is None and row is not None and any(row in r for r in self.bound_fits):
            return b.PodVolumes()
        return found


class VolumeBinding:
    """Binds a Pod's claims to PVs (or provisions them) on the node chosen for it."""

    name = NAME
    locality = Locality.CLAIMS

    def __init__(self, args: object | None, handle: Handle) -> None:
        self.handle = handle
        timeout = args.get("bindTimeoutSeconds") if isinstance(args, Mapping) else None
        self.bind_timeout = float(timeout if timeout is not None else DEFAULT_BIND_TIMEOUT_SECONDS)
        self.shape: tuple[IntArray, IntArray] | None = None
        """The storage-capacity scorer's shape (utilization, score x 10), with the
        StorageCapacityScoring gate on (Beta, on from v1.37); None: no scorer."""
        if handle.feature_gates.enabled("StorageCapacityScoring"):
            given = args.get("shape") if isinstance(args, Mapping) else None
            points = [(int(p["utilization"]), int(p["score"])) for p in given or ()]
            points = points or list(DEFAULT_SHAPE)  # upstream's SetDefaults_VolumeBindingArgs
            self.shape = (
                np.array([u for u, _ in points], dtype=np.int64),
                np.array(
                    [sc * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE) for _, sc in points],
                    dtype=np.int64,
                ),
            )
        self._resize_deferral = handle.feature_gates.enabled(RESIZE_PREEMPTION)
        """v1.37: the framework Skips this PreFilter for a resize-deferred Pod, and PreScore
        then finds no state (:meth:`pre_score`)."""

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: Pods without volumes are all alike here; others are not reused."""
        return None if pod.volumes else ()

    # ------------------------------------------------------------------ PreFilter
    def pre_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[PreFilterResult | None, Status]:
        """Upstream ``PreFilter`` (module docstring)."""
        if not pod.volumes:
            state[_KEY] = _State()
            return None, SKIP
        storage = storage_of(cluster)
        has, problem = b.check_pod_claims(storage, pod)
        if problem:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (problem,))
        if not has:
            state[_KEY] = _State()
            return None, SKIP
        try:
            claims = b.pod_volume_claims(storage, pod)
        except b.BinderError as err:
            return None, error(str(err))
        if claims.immediate:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_UNBOUND_IMMEDIATE,))
        state[_KEY] = _State(claims)
        return None, SUCCESS

    # ------------------------------------------------------------------ Filter
    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """:func:`~.binder.find_pod_volumes` on each node of ``rows``."""
        codes = np.zeros(rows.shape[0], dtype=np.int8)
        s = state.get(_KEY)
        if not isinstance(s, _State) or s.claims is None:
            codes[:] = 1
            return Verdict(codes, {1: error(f'reading "{_KEY}" from cycleState: not found')})
        storage = storage_of(cluster)
        if not s.claims.delay:
            return self._filter_bound(s, storage, cluster, rows)
        table: dict[int, Status] = {}
        codes_of: dict[Status, int] = {}
        nodes = cluster.nodes.nodes
        for i, row in enumerate(rows.tolist()):
            node = nodes[row]
            if node is None:
                continue
            try:
                volumes, reasons = b.find_pod_volumes(storage, s.claims, node)
            except b.BinderError as err:
                status = error(str(err))
            else:
                if not reasons:
                    s.by_node[node.name] = volumes
                    continue
                status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(reasons))
            code = codes_of.get(status)
            if code is None:
                code = codes_of[status] = len(table) + 1
                table[code] = status
            codes[i] = code
        return Verdict(codes, table)

    @staticmethod
    def _filter_bound(
        s: _State, storage: Storage, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """:meth:`filter` for a Pod whose claims are all bound, every node of ``rows`` at
        once (:func:`~.binder.bound_claims_on`); the same verdict and bindings (none) as
        :func:`~.binder.find_pod_volumes` on each node."""
        assert s.claims is not None
        codes = np.zeros(rows.shape[0], dtype=np.int8)
        table_ = cluster.nodes
        live = np.flatnonzero(table_.alive[rows])
        outcome, errors = b.bound_claims_on(storage, s.claims, table_, rows[live])
        s.bound_fits.append(rows[live[outcome == b.BOUND_FITS]])
        failed = outcome != b.BOUND_FITS
        if not failed.any():
            return Verdict(codes, {})
        reasons = {
            b.BOUND_NODE_CONFLICT: Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (b.ERR_REASON_NODE_CONFLICT,)
            ),
            b.BOUND_PV_MISSING: Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (b.ERR_REASON_PV_NOT_EXIST,)
            ),
        }
        kinds, first = np.unique(outcome[failed], return_index=True)
        table: dict[int, Status] = {}
        for kind in kinds[np.argsort(first)].tolist():  # codes in the order rows meet them
            code = len(table) + 1
            table[code] = reasons[kind] if kind in reasons else error(errors[kind - 2])
            codes[live[outcome == kind]] = code
        return Verdict(codes, table)

    # ------------------------------------------------------------------ Score
    def pre_score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Status:
        """Skip without a scorer (StorageCapacityScoring off, v1.34-v1.36's default), and for
        a Pod without claims to bind (its Score would be 0 on every node).  With a scorer,
        a resize-deferred Pod under InPlacePodVerticalScalingSchedulerPreemption fails with
        upstream's error: its PreFilter was Skipped, there is no state to read."""
        if self.shape is not None and pod.resize_deferred and self._resize_deferral:
            return error("not found")
        s = state.get(_KEY)
        if self.shape is None or not isinstance(s, _State) or s.claims is None:
            return SKIP
        return SUCCESS

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """Upstream's storage-capacity Score per node of ``rows`` (int64 ``(len(rows),)``):
        per storage class, the utilization of the static PVs the claims would bind
        (requested / the PVs' capacity), else of the CSIStorageCapacity the claims would
        be provisioned from, through the shape; the mean over classes, rounded."""
        out = np.zeros(rows.shape[0], dtype=np.int64)
        s = state.get(_KEY)
        if self.shape is None or not isinstance(s, _State):
            return out
        nodes = cluster.nodes.nodes
        for i, row in enumerate(rows.tolist()):
            node = nodes[row]
            volumes = None if node is None else s.volumes_on(node.name, row)
            if volumes is not None:
                out[i] = self._capacity_score(volumes)
        return out

    def _capacity_score(self, volumes: b.PodVolumes) -> int:
        """Upstream ``Score`` and ``buildScorerFunction`` for one node's volumes."""
        assert self.shape is not None
        classes: dict[str, list[int]] = {}  # class -> [requested, capacity]
        if volumes.static:
            for pv, claim in volumes.static:
                acc = classes.setdefault(pv.storage_class, [0, 0])
                acc[0] += claim.request or 0
                acc[1] += pv.capacity
        else:
            for claim, cap in volumes.dynamic:
                if cap is None:
                    continue
                acc = classes.setdefault(claim.storage_class or "", [0, 0])
                acc[1] = cap.capacity or 0  # not +=: one capacity object per class (upstream)
                acc[0] += claim.request or 0
        if not classes:
            return 0
        utilization, score = self.shape
        util = np.array(
            [100 if cap == 0 or req > cap else req * 100 // cap for req, cap in classes.values()],
            dtype=np.int64,
        )
        total = int(broken_linear(util, utilization, score).sum())
        return math.floor(total / len(classes) + 0.5)  # Go math.Round of a non-negative

    # ------------------------------------------------------------------ Reserve
    def reserve(self, state: CycleState, pod: api.Pod, node: str) -> Status:
        """Upstream ``Reserve`` / ``AssumePodVolumes`` (nothing for a Pod without volumes,
        whose cycle state a parallel commit need not carry: ``Locality.CLAIMS``)."""
        if not pod.volumes:
            return SUCCESS
        s = state.get(_KEY)
        if not isinstance(s, _State):
            return error(f'reading "{_KEY}" from cycleState: not found')
        cluster = self.handle.cluster
        volumes = s.volumes_on(node, cluster.nodes.row_of.get(node))
        if volumes is None:
            s.all_bound = True
            return SUCCESS
        storage = storage_of(cluster)
        if b.all_bound(storage, pod):
            s.all_bound = True
            return SUCCESS
        static = []
        for pv, claim in volumes.static:
            assumed = b.with_claim_ref(pv, claim)
            storage.assumed_pvs[pv.name] = assumed
            s.assumed_pvs.append(pv.name)
            static.append((assumed, claim))
        dynamic = []
        for claim, _cap in volumes.dynamic:
            assumed_claim = b.with_selected_node(claim, node)
            storage.assumed_pvcs[claim.key] = assumed_claim
            s.assumed_pvcs.append(claim.key)
            dynamic.append((assumed_claim, _cap))
        s.by_node[node] = b.PodVolumes(static, dynamic)
        s.all_bound = False
        return SUCCESS

    def unreserve(self, state: CycleState, pod: api.Pod, node: str) -> None:
        """Upstream ``RevertAssumedPodVolumes``: the assumed versions are dropped."""
        if not pod.volumes:
            return
        s = state.get(_KEY)
        if not isinstance(s, _State):
            return
        storage = storage_of(self.handle.cluster)
        for name in s.assumed_pvs:
            storage.assumed_pvs.pop(name, None)
        for key in s.assumed_pvcs:
            storage.assumed_pvcs.pop(key, None)
        s.assumed_pvs.clear()
        s.assumed_pvcs.clear()

    # ------------------------------------------------------------------ PreBind
    def pre_bind(self, state: CycleState, pod: api.Pod, node: str) -> Status:
        """Bind the chosen node's claims (module docstring)."""
        if not pod.volumes:
            return SUCCESS
        s = state.get(_KEY)
        if not isinstance(s, _State):
            return error(f'reading "{_KEY}" from cycleState: not found')
        if s.all_bound:
            return SUCCESS
        volumes = s.volumes_on(node, self.handle.cluster.nodes.row_of.get(node))
        if volumes is None:
            return error(f'no pod volume found for node "{node}"')
        waiter = self.handle.api if isinstance(self.handle.api, VolumeBindWaiter) else None
        if waiter is not None and waiter.binds_claims():
            writes = [pv.raw for pv, _claim in volumes.static]
            writes += [claim.raw for claim, _cap in volumes.dynamic]
            keys = [claim.key for _pv, claim in volumes.static]
            keys += [claim.key for claim, _cap in volumes.dynamic]
            try:
                for raw in writes:
                    waiter.update_volume(dict(raw))
            except Exception as err:  # upstream returns the client's error as it is
                return error(str(err))
            try:
                bound = waiter.wait_for_volumes(pod, keys, self.bind_timeout)
            except Exception as err:
                return error(f"binding volumes: {err}")
            return SUCCESS if bound else error(ERR_BIND_TIMEOUT)
        cluster = self.handle.cluster
        storage = storage_of(cluster)
        target = cluster.node(node)
        source = self.handle.api if isinstance(self.handle.api, VolumeFaultSource) else None
        # (the write's fault, the bound PV and claim), in upstream's order: the static
        # bindings' PV writes, then the claims to provision.
        pairs: list[tuple[str, tuple[dict[str, Any], dict[str, Any]]]] = []
        for pv, claim in volumes.static:
            fault = source.volume_fault(f"{PV_FAULT}/{pv.name}") if source else ""
            pairs.append((_fault_of(fault, PV_FAULTS, pv.name, claim), b.bound_pair(pv, claim)))
        for claim, _cap in volumes.dynamic:
            klass = storage.storage_class(claim.storage_class)
            if klass is None or target is None:
                return error(f'failed to find storage class "{claim.storage_class}"')
            fault = source.volume_fault(f"{PVC_FAULT}/{claim.key}") if source else ""
            pairs.append(
                (
                    _fault_of(fault, PVC_FAULTS, claim.name, claim),
                    b.bound_pair(b.provisioned_pv(claim, klass, target), claim),
                )
            )
        writer = self.handle.api if isinstance(self.handle.api, ObjectWriter) else None
        failed = ""  # the first check that fails once every write is made (upstream's order)
        for fault, (pv_raw, claim_raw) in pairs:
            if fault.startswith(REFUSED):
                return error(fault[len(REFUSED) :])  # the write's error, as it is
            if fault:  # the write made, the binding undone: nothing changes here
                failed = failed or fault
                continue
            pv, claim = st.parse_pv(pv_raw), st.parse_pvc(claim_raw)
            storage.assumed_pvs[pv.name] = pv
            storage.assumed_pvcs[claim.key] = claim
            if writer is not None:
                try:
                    writer.update_object(pv_raw)
                    writer.update_object(claim_raw)
                except Exception as err:
                    return error(f"binding volumes: {err}")
        if failed:
            return error(f"binding volumes: {failed}")
        return self._check_bindings(storage, volumes, target)

    def pre_bind_timing(self, state: CycleState, pod: api.Pod, node: str) -> PreBindTiming:
        """How :meth:`pre_bind` will go (``PreBindPreview``): upstream's ``bindAPIUpdate``
        writes every binding at once and fails at the first refused write (``FAILS``); then
        it polls the PV controller every second (``wait.PollUntilContextTimeout``, not at
        once), and a binding a declared fault undoes (``failProvisioning``,
        ``resetClaimRef``) fails that first poll (``FAILS_AT_POLL``)."""
        if not pod.volumes:
            return PreBindTiming.PASSES
        s = state.get(_KEY)
        if not isinstance(s, _State):
            return PreBindTiming.FAILS
        if s.all_bound:
            return PreBindTiming.PASSES
        volumes = s.volumes_on(node, self.handle.cluster.nodes.row_of.get(node))
        if volumes is None:
            return PreBindTiming.FAILS
        source = self.handle.api if isinstance(self.handle.api, VolumeFaultSource) else None
        waiter = self.handle.api if isinstance(self.handle.api, VolumeBindWaiter) else None
        if source is None or (waiter is not None and waiter.binds_claims()):
            return PreBindTiming.WAITS  # the PV controller's writes are refused by nobody
        storage = storage_of(self.handle.cluster)
        target = self.handle.cluster.node(node)
        undone = False  # a write made and its binding undone: the first poll fails
        for pv, claim in volumes.static:
            fault = _fault_of(
                source.volume_fault(f"{PV_FAULT}/{pv.name}"), PV_FAULTS, pv.name, claim
            )
            if fault.startswith(REFUSED):
                return PreBindTiming.FAILS
            undone = undone or bool(fault)
        for claim, _cap in volumes.dynamic:
            if storage.storage_class(claim.storage_class) is None or target is None:
                return PreBindTiming.FAILS
            fault = _fault_of(
                source.volume_fault(f"{PVC_FAULT}/{claim.key}"), PVC_FAULTS, claim.name, claim
            )
            if fault.startswith(REFUSED):
                return PreBindTiming.FAILS
            undone = undone or bool(fault)
        return PreBindTiming.FAILS_AT_POLL if undone else PreBindTiming.WAITS

    @staticmethod
    def _check_bindings(storage: Storage, volumes: b.PodVolumes, target: api.Node | None) -> Status:
        """Upstream ``checkBindings`` once the PV controller has bound the static PVs: each
        PV (in-tree ones migrated on the node as their CSI translation) must admit the node,
        else PreBind fails (the claims stay bound; the next attempt finds the conflict)."""
        if target is None or not volumes.static:
            return SUCCESS
        csinode = storage.csinode(target.name)
        for pv, _claim in volumes.static:
            try:
                affinity = binder_node_affinity(pv, csinode)
            except TranslationError as err:
                return error(
                    f"binding volumes: failed to translate pv to csi: could not translate pv: {err}"
                )
            if affinity is not None and not api.node_selector_matches(affinity, "", target.labels):
                return error(
                    f'binding volumes: pv "{pv.name}" node affinity doesn\'t match node '
                    f'"{target.name}": no matching NodeSelectorTerms'
                )
        return SUCCESS

    # ------------------------------------------------------------------ events
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Upstream's events (queueing hints on)."""
        change = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.STORAGE_CLASS, change), h.is_schedulable_after_class_change
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, change), is_schedulable_after_claim
            ),
            ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME, change)),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_NODE, change), h.is_schedulable_after_csinode_change
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_DRIVER, ActionType.UPDATE),
                h.is_schedulable_after_driver_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_STORAGE_CAPACITY, change),
                h.is_schedulable_after_capacity_change,
            ),
        ]


def is_schedulable_after_claim(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the claim is one the Pod names (directly or as its ephemeral)."""
    del old
    if not isinstance(new, dict):
        return QueueingHint.QUEUE
    meta = new.get("metadata") or {}
    if (meta.get("namespace") or "default") != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    name = meta.get("name")
    for v in pod.volumes:
        if v.kind == api.VOLUME_PVC and v.claim == name:
            return QueueingHint.QUEUE
        if v.kind == api.VOLUME_EPHEMERAL and ephemeral_claim_name(pod, v) == name:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def new(args: object | None, handle: Handle) -> VolumeBinding:
    """Factory; ``args`` is the (validated) VolumeBindingArgs mapping."""
    return VolumeBinding(args, handle)
