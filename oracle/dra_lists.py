"""DRAListTypeAttributes in the DRA family's cases (v1.36+, alpha): list-typed device
attributes.

``list_attributes`` is called last by ``oracle/dra_cases.py``'s ``_case`` (a random stream
of its own, so a seed's other draws stay as they were).  A quarter of the cases at v1.36 and
v1.37 turn the gate on (it selects upstream's ``experimental`` allocator) and then, each
with its chance for the whole case, every GPU device's ``numa`` becomes an ``ints`` list
(always; its value, now and then with the other NUMA node too), its ``model`` a ``strings``
list (0.3), its ``driverVersion`` a ``versions`` list (0.2); a ``numa`` match across two requests
or a ``distinctAttribute`` on it then compares sets.  Seven in ten of those cases add a selector
that reads a list (``in``, ``exists``, ``all``, ``size``) to the incoming Pod's first
request.  The gate stays off otherwise: without it the API server refuses such a slice.
"""

from __future__ import annotations

import random
from typing import Any

GPU = "gpu.example.com"
LIST_SELECTORS = [
    f'1 in device.attributes["{GPU}"].numa',
    f'device.attributes["{GPU}"].numa.exists(n, n == 0)',
    f'device.attributes["{GPU}"].numa.all(n, n < 1)',
    f'size(device.attributes["{GPU}"].numa) > 1',
    f'"h100" in device.attributes["{GPU}"].model',
]


def list_attributes(seed: int, index: int, request: dict[str, Any], version: str | None) -> None:
    """Draw list attributes into an explain ``request`` (in place)."""
    if version not in ("1.36", "1.37"):
        return
    r = random.Random(f"dra-lists/{seed}/{index}")
    if r.random() >= 0.25:
        return
    request["featureGates"] = {**request.get("featureGates", {}), "DRAListTypeAttributes": True}
    lists = {"numa": True, "model": r.random() < 0.3, "version": r.random() < 0.2}
    for x in request["cluster"]["items"]:
        if x["kind"] != "ResourceSlice" or x["spec"].get("driver") != GPU:
            continue
        for d in x["spec"].get("devices", []):
            attrs = d.get("attributes") or {}
            numa = attrs.get(f"{GPU}/numa")
            if lists["numa"] and numa is not None and "int" in numa:
                values = [numa["int"]] if r.random() < 0.6 else [numa["int"], 1 - numa["int"]]
                attrs[f"{GPU}/numa"] = {"ints": values}
            model = attrs.get("model")
            if lists["model"] and model is not None and "string" in model:
                attrs["model"] = {"strings": [model["string"], "sxm"]}
            ver = attrs.get("driverVersion")
            if lists["version"] and ver is not None and "version" in ver:
                attrs["driverVersion"] = {"versions": [ver["version"], "3.0.0"]}
    if r.random() < 0.7:
        choices = [s for s in LIST_SELECTORS if lists["model" if "h100" in s else "numa"]]
        if not choices:
            return
        pod = request.get("pod") or {}
        templates = {
            c.get("resourceClaimTemplateName")
            for c in pod.get("spec", {}).get("resourceClaims", [])
        }
        sel = r.choice(choices)
        for x in request["cluster"]["items"]:
            if x["kind"] not in ("ResourceClaim", "ResourceClaimTemplate"):
                continue
            if x["kind"] == "ResourceClaimTemplate" and x["metadata"]["name"] not in templates:
                continue
            if x["kind"] == "ResourceClaim" and (x.get("status") or {}).get("allocation"):
                continue
            spec = x["spec"]["spec"] if x["kind"] == "ResourceClaimTemplate" else x["spec"]
            reqs = spec.get("devices", {}).get("requests", [])
            if reqs and "exactly" in reqs[0] and reqs[0]["exactly"].get("deviceClassName") == GPU:
                reqs[0]["exactly"].setdefault("selectors", []).append({"cel": {"expression": sel}})
