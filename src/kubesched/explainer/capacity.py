"""Short of capacity, or enough free in total but fragmented: the ``capacity`` object of an
Unschedulable Pod's explain answer (documented in docs/dra.md and docs/gpu.md).

The *eligible* nodes are those that pass PreFilter's narrowing and every Filter plugin except
the resource and device ones (:data:`RESOURCE_FILTERS`), and the node selectors of the Pod's
already-allocated claims; nominated Pods are not counted.  Each thing the Pod asks for is an
entry: every resource NodeResourcesFit checks (``pods``, ``cpu``, ``memory``,
``ephemeral-storage``, extended resources such as ``nvidia.com/gpu``; ``ignoredResources``
left out) and every DRA device request of its claims still to allocate (each
``firstAvailable`` alternative on its own), with

- ``needed``: on one node (millicores, bytes, units, devices; 1 for an ``All`` request, which
  also needs every matching device of the node free);
- ``freeTotal``: free in the whole cluster (devices reachable from several nodes count once);
- ``freeOnEligibleNodes`` and ``maxFreeOnEligibleNode``;
- ``maxCapacityOnEligibleNode``: the most any eligible node has at all (allocatable; for a
  device request its matching devices, in use or not);
- ``verdict``: ``tooLarge`` (no eligible node has that much even when empty), ``short``
  (``freeTotal < needed``), ``filtered`` (no node is eligible), ``fragmented`` (enough in total,
  not on one eligible node) or ``fits`` (some eligible node has enough free);
- ``message``: e.g. ``16 nvidia.com/gpu free in the cluster, at most 3 on any of the 4 nodes
  that pass the other filters; the Pod needs 8 on one node``.

The object's own ``verdict`` is the first that applies of ``tooLarge``, ``short``,
``filtered``, ``fragmented`` (an entry is, the alternatives of one request taken at their
best), ``notTogether`` (every entry fits somewhere but no eligible node passes the resource
and device filters at once: requests on different nodes, a device constraint, a GPU model)
and ``fits`` (a node passed every filter and was turned away later: an extender, Reserve or
Permit).  Arrays are int64, indexed by node-table row ``(cap,)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.explainer.devicefit import DeviceFits
from kubesched.framework.interface import CycleState
from kubesched.framework.runtime import Framework, PluginError
from kubesched.kernels import resources as res
from kubesched.plugins.noderesources_fit import NodeResourcesFit
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import IntArray

RESOURCE_FILTERS = frozenset({names.NODE_RESOURCES_FIT, names.DYNAMIC_RESOURCES, names.GPU_DEVICES})
"""The Filter plugins that judge amounts: left out when finding the eligible nodes."""
FIT = names.NODE_RESOURCES_FIT
_RANK = {"fits": 0, "fragmented": 1, "filtered": 2, "short": 3, "tooLarge": 4}
_GIB = 1 << 30


@dataclass(slots=True)
class _Entry:
    """One thing the Pod asks for: its keys, need, and free / capacity per row."""

    keys: dict[str, Any]
    noun: str
    needed: int
    free: IntArray
    capacity: IntArray
    free_total: int
    group: tuple[Any, ...]
    unit: str = ""
    prefix: str = ""
    all_mode: bool = False


def eligible_rows(fwk: Framework, state: CycleState, pod: api.Pod, rows: IntArray) -> IntArray:
    """``rows`` (after PreFilter) that pass every Filter plugin but the resource ones."""
    cluster = fwk.handle.cluster
    for p in fwk.filter_plugins:
        if p.name in RESOURCE_FILTERS or p.name in state.skip_filter or rows.size == 0:
            continue
        verdict = p.filter(state, pod, cluster, rows)
        if verdict.table:
            rows = rows[verdict.codes == 0]
    return rows


def assess(
    fwk: Framework,
    state: CycleState,
    pod: api.Pod,
    rows: IntArray | None,
    passed: bool,
    devices: DeviceFits | None,
) -> dict[str, Any]:
    """The ``capacity`` object.  ``rows``: the nodes left after PreFilter (None when PreFilter
    rejected the Pod); ``passed``: whether some node passed every Filter plugin."""
    cluster = fwk.handle.cluster
    table = cluster.nodes
    alive = table.order()
    elig = np.zeros(0, dtype=np.int64) if rows is None else eligible_rows(fwk, state, pod, rows)
    if devices is not None:
        elig = devices.reachable(cluster, elig)
    entries = _resource_entries(fwk, cluster, pod, alive) + _device_entries(devices)
    n = int(elig.size)
    out = [_judge(e, elig, n) for e in entries]
    best: dict[tuple[Any, ...], str] = {}
    for e, j in zip(entries, out, strict=True):
        v = j["verdict"]
        if e.group not in best or _RANK[v] < _RANK[best[e.group]]:
            best[e.group] = v
    verdicts = set(best.values())

    def said(verdict: str) -> str:
        judged = zip(entries, out, strict=True)
        return "; ".join(
            j["message"] for e, j in judged if j["verdict"] == verdict == best[e.group]
        )

    if "tooLarge" in verdicts:
        verdict = "tooLarge"
        message = "too large for one node: " + said(verdict)
    elif "short" in verdicts:
        verdict, message = "short", "short of capacity: " + said("short")
    elif n == 0:
        verdict = "filtered"
        message = (
            "PreFilter turned the Pod away before any node was evaluated"
            if rows is None
            else "no node passes the filters other than the resource and device ones"
        ) + "; capacity is not what keeps the Pod Pending"
    elif "fragmented" in verdicts:
        verdict = "fragmented"
        message = "enough free in total but fragmented: " + said(verdict)
    elif not passed:
        verdict = "notTogether"
        message = (
            f"each request fits on some of the {n} nodes that pass the other filters, but none "
            "of them passes the resource and device filters at once (see the nodes' reasons)"
        )
    else:
        verdict = "fits"
        message = "a node passes every filter; an extender, Reserve or Permit turned the Pod away"
    return {"verdict": verdict, "eligibleNodes": n, "message": message, "resources": out}


def diagnose(fwk: Framework, pod: api.Pod) -> dict[str, Any] | None:
    """PreFilter and Filter for ``pod`` on every node, then :func:`assess` (for Pods still
    Pending at the end of a simulation); None when a plugin errs."""
    cluster = fwk.handle.cluster
    state = CycleState()
    try:
        pre, status, _ = fwk.run_pre_filter(state, pod)
        devices = DeviceFits.of(fwk.instances, cluster, pod)
        if not status.is_success():
            return assess(fwk, state, pod, None, False, devices)
        rows = cluster.nodes.order()
        if pre is not None and pre.node_names is not None:
            names = pre.node_names
            rows = np.asarray(
                [r for r in rows.tolist() if cluster.nodes.names[r] in names], dtype=np.int64
            )
        outcome = fwk.run_filter(state, pod, rows)
        return assess(fwk, state, pod, rows, bool(outcome.feasible.size), devices)
    except PluginError:
        return None


def _resource_entries(
    fwk: Framework, cluster: ClusterState, pod: api.Pod, alive: IntArray
) -> list[_Entry]:
    """``pods`` and the resources NodeResourcesFit checks, in its order."""
    fit = fwk.instances.get(FIT)
    if fit is None or FIT not in {p.name for p in fwk.filter_plugins}:
        return []
    table = cluster.nodes
    ignored: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    if isinstance(fit, NodeResourcesFit):
        ignored, groups = fit.ignored, fit.ignored_groups
    counted = res.counted_requests(pod.requests)
    base = (api.CPU, api.MEMORY, api.EPHEMERAL_STORAGE)
    names = [*base, *sorted(n for n in counted if n not in base)]
    zero = np.zeros(table.capacity, dtype=np.int64)
    pods_free = zero.copy()
    pods_free[alive] = np.maximum(table.allowed_pods[alive] - table.pod_count[alive], 0)
    entries = [
        _Entry(
            {"resource": "pods"},
            "Pod slots",
            1,
            pods_free,
            table.allowed_pods,
            int(pods_free.sum()),
            ("pods",),
        )
    ]
    for name in names:
        amount = counted.get(name, 0)
        if amount <= 0:
            continue
        if res.is_extended_resource_name(name) and (
            name in ignored or name.split("/")[0] in groups
        ):
            continue
        free, cap = zero.copy(), zero.copy()
        allocatable, requested = table.resource_values(name, alive)  # dense or sparse
        cap[alive] = allocatable
        free[alive] = np.maximum(allocatable - requested, 0)
        entries.append(
            _Entry({"resource": name}, name, amount, free, cap, int(free.sum()), (name,), unit=name)
        )
    return entries


def _device_entries(devices: DeviceFits | None) -> list[_Entry]:
    if devices is None:
        return []
    out = []
    for fit in devices.requests:
        claim = devices.claims[fit.claim].key
        keys = {
            "resource": "devices",
            "claim": claim,
            "request": fit.name,
            "deviceClass": fit.spec.class_name,
        }
        out.append(
            _Entry(
                keys,
                "matching devices",
                fit.needed,
                fit.usable(),
                fit.matching,
                len(fit.free_ids),
                ("devices", fit.claim, fit.base),
                all_mode=fit.all_mode,
                prefix=f"claim {claim} request {fit.name} (class {fit.spec.class_name}): ",
            )
        )
    return out


def _judge(e: _Entry, elig: IntArray, n: int) -> dict[str, Any]:
    free = e.free[elig]
    on_elig = int(free.sum())
    max_free = int(free.max()) if n else 0
    max_cap = int(e.capacity[elig].max()) if n else 0
    amt = _amount
    needs = (
        "the Pod needs every matching device of one node free"
        if e.all_mode
        else f"the Pod needs {amt(e.unit, e.needed)} on one node"
    )
    total = f"{amt(e.unit, e.free_total)} {e.noun} free in the cluster"
    where = f"the {n} nodes that pass the other filters"
    if n and max_cap < e.needed:
        verdict = "tooLarge"
        msg = (
            f"no node that passes the other filters has {amt(e.unit, e.needed)} {e.noun} "
            f"(at most {amt(e.unit, max_cap)}); {needs}"
        )
    elif e.free_total < e.needed:
        verdict, msg = "short", f"{total}; {needs}"
    elif n == 0:
        verdict, msg = "filtered", f"{total}; no node passes the other filters"
    elif max_free < e.needed:
        verdict = "fragmented"
        msg = f"{total}, at most {amt(e.unit, max_free)} on any of {where}; {needs}"
    else:
        verdict = "fits"
        msg = f"{total}, {amt(e.unit, max_free)} on the best of {where}; {needs}"
    return {
        **e.keys,
        "needed": e.needed,
        "freeTotal": e.free_total,
        "freeOnEligibleNodes": on_elig,
        "maxFreeOnEligibleNode": max_free,
        "maxCapacityOnEligibleNode": max_cap,
        "verdict": verdict,
        "message": e.prefix + msg,
    }


def _amount(unit: str, v: int) -> str:
    """``v`` in the units people read: cores for cpu, Gi for memory and storage."""
    if unit == api.CPU:
        return f"{v / 1000:g}"
    if unit in (api.MEMORY, api.EPHEMERAL_STORAGE):
        return f"{round(v / _GIB, 2):g}Gi"
    return str(v)
