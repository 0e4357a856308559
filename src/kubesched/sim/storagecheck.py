"""The storage invariants a simulation run checks at its end, against the simulated API
server's objects and bound Pods (its truth, not the scheduler's cache):

- ``pvClaimedTwice``: no PersistentVolume is the ``volumeName`` of two claims;
- ``rwopClaimsShared``: no ReadWriteOncePod claim is used by two running Pods;
- ``outsideVolumeTopology``: no Pod runs on a node outside the required node affinity of
  the PVs its claims are bound to;
- ``overAttachLimit``: no node has more volumes of a CSI driver attached (by its Pods'
  claims and migrated inline disks) than its CSINode's ``allocatable.count``.

Each is a list of offenders (PV names, claim keys, Pod keys, node names).  A run whose input
has no storage object and no Pod with volumes reports none of them (the summary of such a
run is unchanged).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.api import csimigration as csi_m
from kubesched.api import objects as api
from kubesched.api import storage as st
from kubesched.api.errors import InputError
from kubesched.api.podvolumes import claim_names

TERMINAL = ("Succeeded", "Failed")


def _parsed(objects: Mapping[tuple[str, str], Any], kind: str) -> list[Any]:
    out = []
    for (k, _key), obj in objects.items():
        if k == kind:
            try:
                out.append(st.parse(obj))
            except InputError:
                continue
    return out


def storage_invariants(
    objects: Mapping[tuple[str, str], Any],
    pods: Iterable[api.Pod],
    nodes: Mapping[str, api.Node],
) -> dict[str, list[str]] | None:
    """The invariants of the module docstring, or None when the run has no storage."""
    running = [p for p in pods if p.node_name and p.phase not in TERMINAL]
    if not any(k in st.KINDS for k, _ in objects) and not any(p.volumes for p in running):
        return None
    claims: dict[str, st.PersistentVolumeClaim] = {
        c.key: c for c in _parsed(objects, "PersistentVolumeClaim")
    }
    pvs: dict[str, st.PersistentVolume] = {v.name: v for v in _parsed(objects, "PersistentVolume")}
    csinodes: dict[str, st.CSINode] = {c.name: c for c in _parsed(objects, "CSINode")}
    by_pv: dict[str, list[str]] = {}
    for c in claims.values():
        if c.volume_name:
            by_pv.setdefault(c.volume_name, []).append(c.key)
    users: dict[str, list[str]] = {}
    outside: list[str] = []
    attached: dict[str, dict[str, set[str]]] = {}
    for pod in running:
        node = nodes.get(pod.node_name)
        for name, _eph in claim_names(pod):
            claim = claims.get(f"{pod.namespace}/{name}")
            if claim is None:
                continue
            if st.RWOP in claim.access_modes:
                users.setdefault(claim.key, []).append(pod.key)
            pv = pvs.get(claim.volume_name) if claim.volume_name else None
            if pv is None or node is None:
                continue
            if pv.node_affinity is not None and not api.node_selector_matches(
                pv.node_affinity, "", node.labels
            ):
                outside.append(pod.key)
            csi = csi_m.pv_csi(pv)
            csinode = csinodes.get(node.name)
            if csi is not None and (not csi[0] or csi_m.migration_on(csinode, csi[0])):
                attached.setdefault(node.name, {}).setdefault(csi[1], set()).add(csi[2])
        for v in pod.volumes:
            inline = csi_m.inline_csi(v)
            if inline is not None and csi_m.migration_on(csinodes.get(pod.node_name), inline[0]):
                attached.setdefault(pod.node_name, {}).setdefault(inline[1], set()).add(inline[2])
    over = []
    for node_name, drivers in attached.items():
        csinode = csinodes.get(node_name)
        if csinode is None:
            continue
        for driver, handles in drivers.items():
            limit = csinode.drivers.get(driver)
            if limit is not None and len(handles) > limit:
                over.append(node_name)
                break
    return {
        "pvClaimedTwice": sorted(pv for pv, keys in by_pv.items() if len(keys) > 1),
        "rwopClaimsShared": sorted(k for k, who in users.items() if len(who) > 1),
        "outsideVolumeTopology": sorted(set(outside)),
        "overAttachLimit": sorted(over),
    }
