"""The volume binder's decisions (upstream v1.34 ``volumebinding/binder.go`` with
``component-helpers/storage/volume``): a Pod's claims sorted into bound, unbound
``Immediate`` and unbound ``WaitForFirstConsumer`` ones; per node, whether the bound ones'
PVs admit the node and how the others would be bound (a matching static PV, or dynamic
provisioning where the class's topology and CSIStorageCapacity allow); and the PV and PVC
versions Reserve assumes and PreBind writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.api import storage as st
from kubesched.api.csimigration import (
    TranslationError,
    binder_affinity_per_node,
    binder_node_affinity,
)
from kubesched.api.podvolumes import ephemeral_claim_name
from kubesched.kernels import gosort
from kubesched.state.nodes import IntArray, NodeTable
from kubesched.state.storage import Storage

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)


class BinderError(Exception):
    """An error upstream's binder returns (the plugin answers it as a Status)."""


@dataclass(slots=True)
class PodVolumeClaims:
    """Upstream ``PodVolumeClaims``: the Pod's claims by state, and the PVs of each class of
    the unbound ``WaitForFirstConsumer`` ones."""

    bound: list[st.PersistentVolumeClaim] = field(default_factory=list)
    delay: list[st.PersistentVolumeClaim] = field(default_factory=list)
    immediate: list[st.PersistentVolumeClaim] = field(default_factory=list)
    pvs_by_class: dict[str, list[st.PersistentVolume]] = field(default_factory=dict)


@dataclass(slots=True)
class PodVolumes:
    """Upstream ``PodVolumes`` for one node: static bindings ``(pv, claim)`` and claims to
    provision ``(claim, capacity or None)``."""

    static: list[tuple[st.PersistentVolume, st.PersistentVolumeClaim]] = field(default_factory=list)
    dynamic: list[tuple[st.PersistentVolumeClaim, st.CSIStorageCapacity | None]] = field(
        default_factory=list
    )


def check_pod_claims(storage: Storage, pod: api.Pod) -> tuple[bool, str]:
    """Upstream ``podHasPVCs``: ``(has claims, error message or "")``."""
    has = False
    for v in pod.volumes:
        if v.kind not in (api.VOLUME_PVC, api.VOLUME_EPHEMERAL):
            continue
        ephemeral = v.kind == api.VOLUME_EPHEMERAL
        name = ephemeral_claim_name(pod, v) if ephemeral else v.claim
        has = True
        claim = storage.pvc(pod.namespace, name)
        if claim is None:
            if ephemeral:
                return True, (
                    "waiting for ephemeral volume controller to create the "
                    f'persistentvolumeclaim "{name}"'
                )
            return True, f'persistentvolumeclaim "{name}" not found'
        if claim.phase == "Lost":
            return True, (
                f'persistentvolumeclaim "{claim.name}" bound to non-existent '
                f'persistentvolume "{claim.volume_name}"'
            )
        if claim.deleting:
            return True, f'persistentvolumeclaim "{claim.name}" is being deleted'
        if ephemeral and claim.controller_uid != pod.uid:
            return True, not_owner(pod, claim)
    return has, ""


def not_owner(pod: api.Pod, claim: st.PersistentVolumeClaim) -> str:
    """Upstream ``ephemeral.VolumeIsForPod``'s error."""
    return (
        f"PVC {claim.namespace}/{claim.name} was not created for pod "
        f"{pod.namespace}/{pod.name} (pod is not owner)"
    )


def pod_volume_claims(storage: Storage, pod: api.Pod) -> PodVolumeClaims:
    """Upstream ``GetPodVolumeClaims`` (after :func:`check_pod_claims` passed)."""
    out = PodVolumeClaims()
    for v in pod.volumes:
        if v.kind not in (api.VOLUME_PVC, api.VOLUME_EPHEMERAL):
            continue
        name = v.claim if v.kind == api.VOLUME_PVC else ephemeral_claim_name(pod, v)
        claim = storage.pvc(pod.namespace, name)
        if claim is None:
            raise BinderError(f'error getting PVC "{pod.namespace}/{name}": not found')
        if claim.fully_bound:
            out.bound.append(claim)
            continue
        klass = storage.storage_class(claim.storage_class) if claim.storage_class else None
        delay = klass is not None and klass.binding_mode == st.WAIT_FOR_FIRST_CONSUMER
        if delay and not claim.volume_name:
            out.delay.append(claim)
        else:
            out.immediate.append(claim)
    for claim in out.delay:
        out.pvs_by_class[claim.storage_class] = storage.pvs_of_class(claim.storage_class)
    return out


def all_bound(storage: Storage, pod: api.Pod) -> bool:
    """Upstream ``arePodVolumesBound``: every claim of the Pod is fully bound."""
    for v in pod.volumes:
        if v.kind not in (api.VOLUME_PVC, api.VOLUME_EPHEMERAL):
            continue
        name = v.claim if v.kind == api.VOLUME_PVC else ephemeral_claim_name(pod, v)
        claim = storage.pvc(pod.namespace, name)
        if claim is None or not claim.fully_bound:
            return False
    return True


def node_affinity_ok(pv: st.PersistentVolume, labels: Mapping[str, str]) -> bool:
    """Upstream ``CheckNodeAffinity``: the node (its labels alone: a ``matchFields`` term
    sees an empty name) satisfies the PV's required node affinity."""
    if pv.node_affinity is None:
        return True
    return api.node_selector_matches(pv.node_affinity, "", labels)


def find_pod_volumes(
    storage: Storage, claims: PodVolumeClaims, node: api.Node
) -> tuple[PodVolumes, list[str]]:
    """Upstream ``FindPodVolumes``: the bindings for ``node`` and the reasons it fails
    (none: it fits); raises :class:`BinderError` for upstream's errors."""
    volumes = PodVolumes()
    bound_ok, pvs_found, unbound_ok, space_ok = True, True, True, True
    csinode = storage.csinode(node.name) if claims.bound else None
    for claim in claims.bound:
        pv = storage.pv(claim.volume_name)
        if pv is None:
            pvs_found = False
            break
        try:  # upstream checkBoundClaims: an in-tree PV migrated on the node as its CSI form
            affinity = binder_node_affinity(pv, csinode)
        except TranslationError as err:
            message = f"could not translate pv: {err}"  # checkBoundClaims's
            raise BinderError(message) from err
        if affinity is not None and not api.node_selector_matches(affinity, "", node.labels):
            bound_ok = False
            break
    if claims.delay:  # upstream looks at them whatever the bound claims said
        unbound_ok, space_ok = _unbound(storage, claims, node, volumes)
    reasons = []
    if not bound_ok:
        reasons.append(ERR_REASON_NODE_CONFLICT)
    if not unbound_ok:
        reasons.append(ERR_REASON_BIND_CONFLICT)
    if not space_ok:
        reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
    if not pvs_found:
        reasons.append(ERR_REASON_PV_NOT_EXIST)
    return volumes, reasons


BOUND_FITS = -1
""":func:`bound_claims_on` outcome of a node every bound claim admits."""
BOUND_NODE_CONFLICT = 0
"""... of a node a bound claim's PV node affinity rejects (:data:`ERR_REASON_NODE_CONFLICT`)."""
BOUND_PV_MISSING = 1
"""... of a node where a bound claim's PV is missing (:data:`ERR_REASON_PV_NOT_EXIST`)."""


def bound_claims_on(
    storage: Storage, claims: PodVolumeClaims, table: NodeTable, rows: IntArray
) -> tuple[npt.NDArray[np.int64], list[str]]:
    """:func:`find_pod_volumes`' check of the bound claims (upstream ``checkBoundClaims``)
    on every node of ``rows`` (int64 ``(k,)``) at once, for a Pod with no claim to bind.
    Returns the outcome per row (int64 ``(k,)``: :data:`BOUND_FITS`,
    :data:`BOUND_NODE_CONFLICT`, :data:`BOUND_PV_MISSING`, or ``2 + i`` for the
    :class:`BinderError` message ``errors[i]``) and ``errors``.  As upstream, a node's
    check stops at its first failing claim.  A PV's node affinity is the same for every
    node unless an in-tree PV may be migrated on a node's CSINode: then it is translated
    once per migrated-plugins annotation of the nodes' CSINodes
    (:meth:`~kubesched.state.storage.Storage.migrated_groups`).  An affinity is evaluated
    once per combination of the node label values it names (:func:`affinity_mask`)."""
    outcome = np.full(rows.shape[0], BOUND_FITS, dtype=np.int64)
    errors: list[str] = []
    nodes = table.nodes
    for claim in claims.bound:
        open_ = outcome == BOUND_FITS
        if not open_.any():
            break
        pv = storage.pv(claim.volume_name)
        if pv is None:
            outcome[open_] = BOUND_PV_MISSING
            break
        alone = open_.copy()  # the rows whose affinity is the PV's own
        if binder_affinity_per_node(pv):
            groups = storage.migrated_groups(rows)
            for code in np.unique(groups[open_ & (groups >= 0)]).tolist():
                picked = np.flatnonzero(open_ & (groups == code))
                alone[picked] = False
                node = nodes[int(rows[picked[0]])]
                csinode = None if node is None else storage.csinode(node.name)
                try:  # the same for every node whose CSINode has this annotation
                    affinity = binder_node_affinity(pv, csinode)
                except TranslationError as err:
                    message = f"could not translate pv: {err}"  # checkBoundClaims's
                    if message not in errors:
                        errors.append(message)
                    outcome[picked] = 2 + errors.index(message)
                    continue
                if affinity is not None:
                    ok = affinity_mask(table, affinity, rows[picked])
                    outcome[picked[~ok]] = BOUND_NODE_CONFLICT
        affinity = binder_node_affinity(pv, None)
        if affinity is not None and alone.any():
            picked = np.flatnonzero(alone)
            ok = affinity_mask(table, affinity, rows[picked])
            outcome[picked[~ok]] = BOUND_NODE_CONFLICT
    return outcome, errors


def affinity_mask(
    table: NodeTable, affinity: tuple[api.NodeSelectorTerm, ...], rows: IntArray
) -> npt.NDArray[np.bool_]:
    """Whether each node of ``rows`` (int64 ``(k,)``, live rows) satisfies ``affinity``
    (as :func:`node_affinity_ok`: labels alone), bool ``(k,)``: evaluated once per
    combination of the values of the label keys it names, read from the node table's
    interned label columns."""
    keys = sorted({r.key for t in affinity for r in t.match_expressions})
    if not keys:
        ok = api.node_selector_matches(affinity, "", {})
        return np.full(rows.shape[0], ok, dtype=np.bool_)
    codes = np.stack([table.label_column(k)[rows] for k in keys])
    combos, first, inverse = np.unique(codes, axis=1, return_index=True, return_inverse=True)
    nodes = table.nodes
    verdicts = np.zeros(combos.shape[1], dtype=np.bool_)
    for j, i in enumerate(first.tolist()):
        node = nodes[int(rows[i])]
        verdicts[j] = node is not None and api.node_selector_matches(affinity, "", node.labels)
    return verdicts[inverse.reshape(-1)]


def _unbound(
    storage: Storage, claims: PodVolumeClaims, node: api.Node, volumes: PodVolumes
) -> tuple[bool, bool]:
    """The unbound ``WaitForFirstConsumer`` claims on ``node``: ``(satisfied, enough
    space)``; the bindings go to ``volumes``."""
    to_match: list[st.PersistentVolumeClaim] = []
    to_provision: list[st.PersistentVolumeClaim] = []
    for claim in claims.delay:
        selected = claim.annotations.get(st.ANN_SELECTED_NODE)
        if selected is not None:
            if selected != node.name:
                return False, True
            to_provision.append(claim)
        else:
            to_match.append(claim)
    satisfied = True
    if to_match:
        chosen: set[str] = set()
        # upstream's sort.Sort(byPVCSize): unstable above 12 claims (kernels.gosort)
        for claim in gosort.sorted_by_key(to_match, lambda c: c.request or 0):
            pvs = claims.pvs_by_class.get(claim.storage_class, [])
            pv = find_matching_volume(claim, pvs, node, chosen)
            if pv is None:
                to_provision.append(claim)
                satisfied = False
                continue
            chosen.add(pv.name)
            volumes.static.append((pv, claim))
    if to_provision:
        return _provisions(storage, to_provision, node, volumes)
    return satisfied, True


def find_matching_volume(
    claim: st.PersistentVolumeClaim,
    pvs: list[st.PersistentVolume],
    node: api.Node,
    excluded: set[str],
) -> st.PersistentVolume | None:
    """Upstream ``FindMatchingVolume`` with a node and delayed binding
    (VolumeAttributesClass on): the PV pre-bound to the claim, or the smallest available one
    of the claim's class that is large enough, of its volume mode and attributes class,
    matching its selector and access modes and admitting the node."""
    smallest: st.PersistentVolume | None = None
    request = claim.request or 0
    for pv in pvs:
        if pv.name in excluded:
            continue
        bound_to_claim = is_bound_to(pv, claim)
        if pv.claim_ref is not None and not bound_to_claim:
            continue
        if pv.capacity < request:
            continue
        if pv.volume_mode != claim.volume_mode:
            continue
        if pv.attributes_class != claim.attributes_class:
            continue
        if pv.deleting:
            continue
        affinity_ok = node_affinity_ok(pv, node.labels)
        if bound_to_claim:
            return pv if affinity_ok else None
        if pv.phase != "Available":
            continue
        if claim.selector is not None and not claim.selector.matches(pv.labels):
            continue
        if pv.storage_class != claim.storage_class:
            continue
        if not affinity_ok:
            continue
        if not set(claim.access_modes) <= set(pv.access_modes):
            continue
        if smallest is None or smallest.capacity > pv.capacity:
            smallest = pv
    return smallest


def is_bound_to(pv: st.PersistentVolume, claim: st.PersistentVolumeClaim) -> bool:
    """Upstream ``IsVolumeBoundToClaim``."""
    ref = pv.claim_ref
    if ref is None or ref[0] != claim.namespace or ref[1] != claim.name:
        return False
    return not ref[2] or ref[2] == claim.uid


def _provisions(
    storage: Storage,
    claims: list[st.PersistentVolumeClaim],
    node: api.Node,
    volumes: PodVolumes,
) -> tuple[bool, bool]:
    """Upstream ``checkVolumeProvisions``: ``(satisfied, enough space)``."""
    dynamic = []
    for claim in claims:
        if not claim.storage_class:
            raise BinderError(f'no class for claim "{claim.key}"')
        klass = storage.storage_class(claim.storage_class)
        if klass is None:
            raise BinderError(f'failed to find storage class "{claim.storage_class}"')
        if klass.provisioner in ("", st.NOT_SUPPORTED_PROVISIONER):
            return False, True
        if not klass.allows(node.labels):
            return False, True
        enough, capacity = _capacity(storage, klass, claim, node)
        if not enough:
            return True, False
        dynamic.append((claim, capacity))
    volumes.dynamic = dynamic
    return True, True


def _capacity(
    storage: Storage, klass: st.StorageClass, claim: st.PersistentVolumeClaim, node: api.Node
) -> tuple[bool, st.CSIStorageCapacity | None]:
    """Upstream ``hasEnoughCapacity``."""
    if claim.request is None:
        return True, None
    driver = storage.csidriver(klass.provisioner)
    if driver is None or not driver.storage_capacity:
        return True, None
    for cap in storage.capacities():
        limit = cap.limit()
        if (
            cap.storage_class == klass.name
            and limit is not None
            and limit >= claim.request
            and cap.node_topology is not None
            and cap.node_topology.matches(dict(node.labels))
        ):
            return True, cap
    return False, None


# --------------------------------------------------------------------------- what is written
def with_claim_ref(pv: st.PersistentVolume, claim: st.PersistentVolumeClaim) -> st.PersistentVolume:
    """Upstream ``GetBindVolumeToClaim``: the PV with the claim in ``claimRef`` (and the
    bound-by-controller annotation when it was not bound to the claim)."""
    annotations = dict(pv.annotations)
    if not is_bound_to(pv, claim):
        annotations.setdefault(st.ANN_BOUND_BY_CONTROLLER, "yes")
    raw = _edit(pv.raw, annotations)
    raw["spec"]["claimRef"] = {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": claim.namespace,
        "name": claim.name,
        "uid": claim.uid,
    }
    return st.parse_pv(raw)


def with_selected_node(claim: st.PersistentVolumeClaim, node: str) -> st.PersistentVolumeClaim:
    """The claim with the selected-node annotation (what Reserve assumes for provisioning)."""
    annotations = {**claim.annotations, st.ANN_SELECTED_NODE: node}
    return st.parse_pvc(_edit(claim.raw, annotations))


def bound_pair(
    pv: st.PersistentVolume, claim: st.PersistentVolumeClaim
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The PV and the claim as the PV controller leaves them once bound (phase Bound,
    ``volumeName``, the bind-completed annotation): the simulator's PV controller."""
    pv_raw = _edit(pv.raw, dict(pv.annotations))
    pv_raw["spec"]["claimRef"] = {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": claim.namespace,
        "name": claim.name,
        "uid": claim.uid,
    }
    pv_raw["status"] = {"phase": "Bound"}
    annotations = {**claim.annotations, st.ANN_BIND_COMPLETED: "yes"}
    if st.ANN_BOUND_BY_CONTROLLER in pv.annotations:
        annotations[st.ANN_BOUND_BY_CONTROLLER] = "yes"
    claim_raw = _edit(claim.raw, annotations)
    claim_raw["spec"]["volumeName"] = pv.name
    claim_raw["status"] = {
        "phase": "Bound",
        "accessModes": list(claim.access_modes),
        "capacity": {"storage": str(pv.capacity)},
    }
    return pv_raw, claim_raw


def provisioned_pv(
    claim: st.PersistentVolumeClaim, klass: st.StorageClass, node: api.Node
) -> st.PersistentVolume:
    """The PV a provisioner creates for ``claim`` on ``node``: ``pvc-<uid>``, the claim's
    size, modes and class, a CSI source of the class's provisioner, and a node affinity
    requiring the node's values of the class's allowed-topology keys (none without them)."""
    keys = sorted({k for term in klass.allowed_topologies for k, _ in term})
    spec: dict[str, Any] = {
        "capacity": {"storage": str(claim.request or 0)},
        "accessModes": list(claim.access_modes),
        "storageClassName": klass.name,
        "persistentVolumeReclaimPolicy": klass.reclaim_policy,
        "volumeMode": claim.volume_mode,
        "csi": {"driver": klass.provisioner, "volumeHandle": f"pvc-{claim.uid or claim.key}"},
    }
    exprs = [
        {"key": k, "operator": "In", "values": [node.labels[k]]} for k in keys if k in node.labels
    ]
    if exprs:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}
    name = f"pvc-{claim.uid}" if claim.uid else f"pvc-{claim.namespace}-{claim.name}"
    raw = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "annotations": {"pv.kubernetes.io/provisioned-by": klass.provisioner},
        },
        "spec": spec,
    }
    return st.parse_pv(raw)


def _edit(raw: Mapping[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    """A copy of ``raw`` deep enough to change its annotations, spec and status."""
    out = dict(raw)
    meta = dict(out.get("metadata") or {})
    meta["annotations"] = annotations
    out["metadata"] = meta
    out["spec"] = dict(out.get("spec") or {})
    return out
