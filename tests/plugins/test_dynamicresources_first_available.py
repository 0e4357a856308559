"""``firstAvailable`` lists with ``All`` alternatives, as upstream's allocator answers them
(each case checked against kube-oracle and saved with upstream's answer in
``tests/oracle/regressions``): v1.34 and v1.35 validate alternative ``i`` under alternative
``i - 1``'s selector cache key, so an ``All`` alternative after an ``All`` one gets the earlier
one's devices and never evaluates its own selectors (``dra_case(868235622, 2)``,
docs/fidelity.md); v1.36 and v1.37 give each alternative its own key (the answers of
kube-oracle v1.36.3 and v1.37.2 in ``LATER``)"""

from __future__ import annotations

from typing import Any

import kubesched
from tests.plugins._dra import (
    CONFIG,
    DRIVER,
    claim,
    cluster,
    device_class,
    gpu,
    node,
    pod,
    slice_,
)

FAILS = f'device.attributes["{DRIVER}"].nosuch == "x"'  # a run-time error: no such key
A100 = f'device.attributes["{DRIVER}"].model == "a100"'
H100 = f'device.attributes["{DRIVER}"].model == "h100"'


def alternative(mode: str | None = None, count: int = 1, *selectors: str) -> dict[str, Any]:
    out: dict[str, Any] = {"deviceClassName": DRIVER}
    if mode:
        out["allocationMode"] = mode
    else:
        out["count"] = count
    if selectors:
        out["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return out


def first_available(*alternatives: dict[str, Any]) -> dict[str, Any]:
    alts = [{"name": f"alt{i}", **a} for i, a in enumerate(alternatives)]
    return {"name": "gpu", "firstAvailable": alts}


def case(*alternatives: dict[str, Any]) -> dict[str, Any]:
    """Node n1 with a100 gpu-0 (held by another claim), a100 gpu-1 and h100 gpu-2; the Pod's
    claim has one ``firstAvailable`` request."""
    held = claim("other", {"name": "gpu", "exactly": alternative()})
    results = [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]
    held["status"] = {
        "allocation": {"devices": {"results": results}},
        "reservedFor": [{"resource": "pods", "name": "x", "uid": "u"}],
    }
    devices = slice_("n1", [gpu(0), gpu(1), gpu(2, model="h100")])
    items = [node("n1"), devices, device_class(), held, claim("c", first_available(*alternatives))]
    return {
        "cluster": cluster(*items),
        "pod": pod("p", ("gpu", "resourceClaimName", "c")),
        "config": CONFIG,
    }


CASES = {
    # alt1's selector would fail at run time, but alt1 reuses alt0's cached results
    "second All never evaluates its failing selector": (
        case(alternative("All"), alternative("All", 1, FAILS)),
        "Unschedulable",
    ),
    # alt1 alone would take the free h100; after alt0 it gets alt0's a100s (one held)
    "second All gets the first's devices": (
        case(alternative("All", 1, A100), alternative("All", 1, H100)),
        "Unschedulable",
    ),
    "an All alternative alone takes its own devices": (
        case(alternative("All", 1, H100)),
        "Scheduled",
    ),
    # the search starts with an empty cache: alt0 keeps its own selector
    "an ExactCount alternative is not given a later All's devices": (
        case(alternative(None, 1, H100, A100), alternative("All", 1, A100)),
        "Unschedulable",
    ),
    # an ExactCount alternative's selectors are evaluated in the search: the error stands
    "a failing selector of an ExactCount alternative is an error": (
        case(alternative("All"), alternative(None, 1, FAILS)),
        "Error",
    ),
}


LATER = {
    "second All never evaluates its failing selector": "Error",
    "second All gets the first's devices": "Scheduled",
}
"""The cases v1.36+ answers otherwise: each alternative is validated under its own key."""


def test_first_available_with_all_alternatives_answers_as_upstream() -> None:
    for version in ("1.34", "1.35", "1.36", "1.37"):
        for name, (request, want) in CASES.items():
            if version >= "1.36":
                want = LATER.get(name, want)
            out = kubesched.explain(
                request["cluster"], request["pod"], request["config"], kubernetes_version=version
            )
            assert out["result"] == want, (version, name, out["message"])
