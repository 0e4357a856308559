"""What goes wrong with DynamicResources' writes of a ResourceClaim (``kubesched.schedule``'s
``claim_faults``; kube-oracle's fake API server plays the same, ``oracle/internal/oracle/
claimfaults.go``): each declared fault's effect on the write and upstream's error for it.

Upstream's PreBind (``bindClaim``) writes a claim it allocates in two calls, the
delete-protection finalizer first (an update of the claim, when it lacks it), then the
allocation and the Pod's reservation (an update of its status), retrying after a Conflict
from a fresh read; a claim already allocated gets the reservation only.  PostFilter
deallocates a claim with one status update, without retrying.  Per claim
(``ResourceClaim/NAMESPACE/NAME``; the claim DRAExtendedResource creates by its
``generateName``):

- ``refuseStatus``: every status update refused (Forbidden);
- ``refuseUpdate``: every update of the claim itself refused (the finalizer's);
- ``conflict``: the first update answers Conflict (PreBind's retry ends as without it;
  PostFilter fails);
- ``allocatedElsewhere``: the first status update writing an allocation finds the claim
  allocated alike by another scheduler (its allocation stored, the Pod not in
  ``reservedFor``): PreBind fails, the Pod's next attempt reserves it.
- ``deleted``: the claim is deleted (nothing holds it) just before PreBind first writes it,
  between Reserve and PreBind: the write finds it gone (NotFound), PreBind fails, and the
  Pod's next attempt is held at PreEnqueue (its claim missing).

The API server's validation (no fault): ``status.reservedFor`` holds at most 256 consumers
(:meth:`kubesched.sim.apiserver.SimApiServer.update_object`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

from kubesched.api.errors import check_fault_map
from kubesched.framework.contract import PreBindTiming

CLAIM_FAULTS = {
    "refuseStatus": "every update of the claim's status is refused (Forbidden)",
    "refuseUpdate": "every update of the claim itself is refused (Forbidden)",
    "conflict": "the first update answers Conflict (the claim written again by another)",
    "allocatedElsewhere": "the first status update writing an allocation finds it allocated",
    "deleted": "the claim is deleted just before PreBind's first write of it (NotFound)",
}
"""The faults of a claim's writes, keyed ``ResourceClaim/NAMESPACE/NAME``."""
FINALIZER = "resource.kubernetes.io/delete-protection"


def check_claim_faults(raw: Mapping[str, str] | None) -> dict[str, str]:
    """``claim_faults`` checked: known kinds on ``ResourceClaim/NAMESPACE/NAME`` keys."""
    return check_fault_map(raw, "claimFaults", {"ResourceClaim": 3}, CLAIM_FAULTS)


@runtime_checkable
class ClaimFaultSource(Protocol):
    """An API client that says what goes wrong with a claim's write (the what-if's)."""

    def claim_fault(self, key: str) -> str:
        """The fault declared for writes of the claim ``key`` (``ResourceClaim/NS/NAME``);
        "" when none."""

    def claim_fault_once(self, key: str) -> bool:
        """Whether the once-only fault of ``key`` is yet to happen (it happens now)."""


def forbidden(name: str) -> str:
    """The API server's refusal of a write a ``refuse*`` fault refuses."""
    refusal = "refused (the case's claimFaults)"
    return f'resourceclaims.resource.k8s.io "{name}" is forbidden: {refusal}'


def not_found(name: str) -> str:
    """The API server's answer to a write of a claim that is gone."""
    return f'resourceclaims.resource.k8s.io "{name}" not found'


def conflict(name: str) -> str:
    """The API server's Conflict."""
    return (
        f'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "{name}": the object '
        "has been modified; please apply your changes to the latest version and try again"
    )


_SOURCE_CLASSES: dict[type, bool] = {}
"""Whether a client class is a :class:`ClaimFaultSource`, checked once per class."""


def fault_source(api: object) -> ClaimFaultSource | None:
    """``api`` as a :class:`ClaimFaultSource`, or None.  The runtime Protocol check (which
    looks for the two methods: tens of microseconds when they are missing, as on the
    benchmark's client) is made once per client class, not once per claim written."""
    known = _SOURCE_CLASSES.get(type(api))
    if known is None:
        known = _SOURCE_CLASSES[type(api)] = isinstance(api, ClaimFaultSource)
    return cast(ClaimFaultSource, api) if known else None


def fault_key(raw: Mapping[str, Any]) -> str:
    """A claim manifest's fault key: its ``generateName`` when it has one, else its name."""
    meta = raw.get("metadata") or {}
    name = meta.get("generateName") or meta.get("name")
    return f"ResourceClaim/{meta.get('namespace') or 'default'}/{name}"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a fault makes of one of PreBind's claim writes: the manifest the API server
    stores (None: nothing; else ``written`` or what the fault leaves) and upstream's error
    ("" when the write succeeds)."""

    stored: dict[str, Any] | None
    error: str = ""
    deleted: bool = False
    """The claim is gone from the API server (the ``deleted`` fault)."""


def pre_bind(
    api: object, current: Mapping[str, Any], written: dict[str, Any], allocating: bool
) -> Outcome:
    """The fault's outcome for PreBind's write of ``written`` (the allocation when
    ``allocating``, and the reservation) over the claim as stored, ``current``."""
    key = fault_key(current)
    source = fault_source(api)
    fault = source.claim_fault(key) if source is not None else ""
    meta = current.get("metadata") or {}
    name, where = meta.get("name", ""), f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
    finalizer_missing = allocating and FINALIZER not in (meta.get("finalizers") or ())
    if fault == "deleted":  # the first write, the finalizer's when it lacks one
        what = "add finalizer to" if finalizer_missing else "add reservation to"
        if allocating and not finalizer_missing:
            what = "add allocation and reservation to"
        return Outcome(None, f"{what} claim {where}: {not_found(name)}", deleted=True)
    if fault == "conflict" and source is not None:
        source.claim_fault_once(key)  # the retry reads the claim again and ends the same
    elif fault == "refuseUpdate" and finalizer_missing:
        return Outcome(None, f"add finalizer to claim {where}: {forbidden(name)}")
    elif fault == "refuseStatus":
        what = "add allocation and reservation" if allocating else "add reservation"
        stored = None
        if finalizer_missing:  # the finalizer's update went through
            finalizers = written["metadata"]["finalizers"]
            stored = {**current, "metadata": {**meta, "finalizers": finalizers}}
        return Outcome(stored, f"{what} to claim {where}: {forbidden(name)}")
    elif (
        fault == "allocatedElsewhere"
        and allocating
        and not (current.get("status") or {}).get("allocation")
        and source is not None
        and source.claim_fault_once(key)
    ):
        status = dict(written.get("status") or {})
        reserved = (current.get("status") or {}).get("reservedFor")
        status.pop("reservedFor", None)
        if reserved:
            status["reservedFor"] = reserved
        stored = {**written, "status": status}
        return Outcome(stored, f"claim {where} got allocated elsewhere in the meantime")
    return Outcome(written)


def pre_bind_timing(api: object, current: Mapping[str, Any], allocating: bool) -> PreBindTiming:
    """How PreBind's write of ``current`` (its allocation when ``allocating``, and the
    reservation) will go, without making it (:func:`pre_bind` makes it): ``FAILS`` when a
    ``refuse*`` fault refuses it, ``WAITS`` for ``allocatedElsewhere`` (whether that
    once-only fault is still to happen is asked only by making the write), else
    ``PASSES`` (a ``conflict`` is retried at once)."""
    source = fault_source(api)
    fault = source.claim_fault(fault_key(current)) if source is not None else ""
    meta = current.get("metadata") or {}
    finalizer_missing = allocating and FINALIZER not in (meta.get("finalizers") or ())
    if fault in ("refuseStatus", "deleted") or (fault == "refuseUpdate" and finalizer_missing):
        return PreBindTiming.FAILS
    if fault == "allocatedElsewhere" and allocating:
        return PreBindTiming.WAITS
    return PreBindTiming.PASSES


def post_filter(api: object, current: Mapping[str, Any]) -> str:
    """Upstream's error for PostFilter's deallocation of ``current`` ("" when it succeeds)."""
    source = fault_source(api)
    if source is None:
        return ""
    key = fault_key(current)
    fault = source.claim_fault(key)
    name = (current.get("metadata") or {}).get("name", "")
    if fault == "refuseStatus":
        return forbidden(name)
    if fault == "conflict" and source.claim_fault_once(key):
        return conflict(name)
    return ""
