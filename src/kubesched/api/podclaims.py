"""A Pod's DRA claims: ``spec.resourceClaims``, ``containers[].resources.claims`` and
``status.resourceClaimStatuses`` (core/v1, Kubernetes v1.34), validated as the API server
does, and the name a claim of the Pod has (upstream ``resourceclaim.Name``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api import fields as f
from kubesched.api import objects as api
from kubesched.api.fields import fail, join

Obj = Mapping[str, Any]

CLAIM_NOT_CREATED = "ResourceClaim not created yet"
"""Upstream ``resourceclaim.ErrClaimNotFound``."""


def pod_resource_claims(spec: Obj, path: str) -> tuple[tuple[str, str, str], ...]:
    """``spec.resourceClaims`` as ``(name, resourceClaimName, resourceClaimTemplateName)``;
    every ``containers[].resources.claims[].name`` must name one of them."""
    out: list[tuple[str, str, str]] = []
    rp = join(path, "resourceClaims")
    for i, c in enumerate(f.seq(spec, "resourceClaims", path)):
        cp = join(rp, i)
        c = f.as_mapping(c, cp)
        name = f.required_string(c, "name", cp)
        if any(name == o[0] for o in out):
            fail(join(cp, "name"), f'Duplicate value: "{name}"')
        claim = f.string(c, "resourceClaimName", cp)
        template = f.string(c, "resourceClaimTemplateName", cp)
        if bool(claim) == bool(template):
            fail(cp, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")
        out.append((name, claim, template))
    names = [o[0] for o in out]
    for kind in ("initContainers", "containers"):
        for i, c in enumerate(f.seq(spec, kind, path)):
            cp = join(join(join(path, kind), i), "resources")
            res = f.mapping(f.as_mapping(c, join(join(path, kind), i)), "resources", cp)
            for j, claim in enumerate(f.seq(res, "claims", cp)):
                clp = join(join(cp, "claims"), j)
                name = f.required_string(f.as_mapping(claim, clp), "name", clp)
                if name not in names:
                    supported = ", ".join(f'"{n}"' for n in names)
                    fail(
                        join(clp, "name"),
                        f'Unsupported value: "{name}": supported values: {supported}',
                    )
    return tuple(out)


def pod_claim_statuses(status: Obj, path: str) -> tuple[tuple[str, str], ...]:
    """``status.resourceClaimStatuses`` as ``(name, resourceClaimName)`` (name may be "")."""
    out = []
    sp = join(path, "resourceClaimStatuses")
    for i, s in enumerate(f.seq(status, "resourceClaimStatuses", path)):
        s = f.as_mapping(s, join(sp, i))
        out.append(
            (
                f.required_string(s, "name", join(sp, i)),
                f.string(s, "resourceClaimName", join(sp, i)),
            )
        )
    return tuple(out)


def claim_name(pod: api.Pod, entry: tuple[str, str, str]) -> tuple[str | None, bool, str]:
    """Upstream ``resourceclaim.Name``: ``(name, must_check_owner, error)``; a name of None
    with no error means no claim is needed (the controller decided so)."""
    name, claim, template = entry
    if claim:
        return claim, False, ""
    for status_name, claim_of in pod.resource_claim_statuses:
        if status_name == name:
            return claim_of or None, True, ""
    del template
    return None, False, f'pod "{pod.namespace}/{pod.name}": {CLAIM_NOT_CREATED}'
