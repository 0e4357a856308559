"""Binding conditions of an allocated claim (DRADeviceBindingConditions with
DRAResourceClaimDeviceStatus; upstream ``isClaimReadyForBinding`` and ``isClaimTimeout``).

A device may carry ``bindingConditions`` (and ``bindingFailureConditions``): its allocation
result copies them, and the driver reports them in the claim's ``status.devices``.  Filter
counts an allocated claim the Pod uses as unavailable on every node (PostFilter may then
deallocate it) when a failure condition of a result is ``True``, or when the claim is not
ready (a binding condition not ``True``, or no report for the device) and its
``allocationTimestamp`` is more than the binding timeout ago.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kubesched.api.pods import parse_timestamp

BINDING_TIMEOUT_DEFAULT = 600.0
"""Upstream ``BindingTimeoutDefaultSeconds`` (v1.34; v1.35+ the args' ``bindingTimeout``
default)."""


def _report(status: Mapping[str, Any], result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Upstream ``getAllocatedDeviceStatus``: the driver's report on ``result``'s device."""
    want = (result.get("driver"), result.get("pool"), result.get("device"))
    for d in status.get("devices") or []:
        if isinstance(d, Mapping) and (d.get("driver"), d.get("pool"), d.get("device")) == want:
            return d
    return None


def _true(report: Mapping[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in report.get("conditions") or []
    )


def ready(claim: Mapping[str, Any]) -> bool | str:
    """Upstream ``isClaimReadyForBinding``: True when every result's binding conditions are
    met, False when one is not (yet), or the failure message when a failure condition is."""
    status = claim.get("status") or {}
    alloc = status.get("allocation")
    if alloc is None:
        return False
    name = (claim.get("metadata") or {}).get("name", "")
    for result in (alloc.get("devices") or {}).get("results") or []:
        if not result.get("bindingConditions"):
            continue
        report = _report(status, result)
        if report is None:
            return False
        for kind in result.get("bindingFailureConditions") or []:
            for c in report.get("conditions") or []:
                if c.get("type") == kind and c.get("status") == "True":
                    return (
                        f"claim {name} binding failed: reason={c.get('reason', '')}, "
                        f'message="{c.get("message", "")}"'
                    )
        if not all(_true(report, kind) for kind in result["bindingConditions"]):
            return False
    return True


def timed_out(claim: Mapping[str, Any], timeout: float, now: float | None = None) -> bool:
    """Upstream ``isClaimTimeout``: a result has binding conditions and the allocation is
    older than ``timeout`` seconds."""
    alloc = (claim.get("status") or {}).get("allocation")
    if not isinstance(alloc, Mapping):
        return False
    stamp = alloc.get("allocationTimestamp")
    if not stamp:
        return False
    if not any(
        res.get("bindingConditions") is not None
        for res in (alloc.get("devices") or {}).get("results") or []
    ):
        return False
    at = parse_timestamp(stamp, "status.allocation.allocationTimestamp")
    return at is not None and at + timeout < (time.time() if now is None else now)


def blocked(claim: Mapping[str, Any], timeout: float) -> bool:
    """Whether Filter counts the allocated ``claim`` as unavailable: its binding failed, or
    it is not ready and timed out."""
    ok = ready(claim)
    return isinstance(ok, str) or (not ok and timed_out(claim, timeout))
