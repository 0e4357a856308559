"""Independent node pools: several schedulers, each with its own pool, and the check that
their boundaries hold.

The pattern (``docs/parallel.md``): every scheduler runs with its own ``schedulerName``
(its profiles), its own leader-election lock (``leaderElection.resourceName`` /
``resourceNamespace``) and a *hard boundary both sides honour*: the pool's nodes are
labelled and tainted (``pool=b:NoSchedule``), the pool's scheduler only looks at them (its
Pods select the label, or its profile adds the selection through NodeAffinity's
``addedAffinity``) and tolerates the taint, and nobody else tolerates it.  A boundary kept
by one side only (an affinity without a taint) lets the other scheduler wander in.

:func:`check_pools` evaluates, on a cluster snapshot, which nodes each scheduler can reach
with the real NodeUnschedulable, NodeAffinity and TaintToleration plugins of its profile:

- its **pool**: the nodes a Pod of that ``schedulerName`` passes with no selector of its own
  and every toleration the scheduler's Pods in the snapshot carry between them (the
  configuration-side boundary, e.g. ``addedAffinity``, plus the taints its Pods tolerate);
- what gives access to each node (``via``): any Pod (no toleration needed), a named Pod
  (its own selectors and tolerations), or only the tolerations its Pods carry together.

It reports ``overlaps`` (nodes in two schedulers' pools, with what gives each access),
``crossings`` (bound Pods on a node their own scheduler's filters reject for them: bound
there by someone else, or by hand), ``unowned`` Pods (no profile has their
``schedulerName``), schedulers declared twice, and election locks shared by two
configurations (only one of them would ever run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.config.load import load_config
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.explainer import build_cluster
from kubesched.framework.interface import Code, CycleState, Handle, IntArray
from kubesched.framework.runtime import Framework
from kubesched.plugins.registry import in_tree_registry, known_plugin_names
from kubesched.state.cache import ClusterState

SELECTION = (names.NODE_UNSCHEDULABLE, names.NODE_AFFINITY, names.TAINT_TOLERATION)
"""The plugins that decide which nodes a Pod may use at all."""
PROBE = "any Pod"
"""What gives a scheduler access to a node any of its Pods may use."""
TOLERATIONS = "its Pods' tolerations"
"""Access through the tolerations its Pods carry between them."""


@dataclass(slots=True)
class _Scheduler:
    name: str
    config: str
    fwk: Framework
    pool: set[int]
    reach: dict[int, str]
    """Row to what gives access (see :data:`PROBE`, :data:`TOLERATIONS`, or a Pod)."""


def _as_config(cfg: KubeSchedulerConfiguration | Mapping[str, Any] | None) -> Any:
    if isinstance(cfg, KubeSchedulerConfiguration):
        return cfg
    return load_config(cfg, known_plugins=known_plugin_names())


def passing(fwk: Framework, cluster: ClusterState, pod: api.Pod) -> tuple[IntArray, dict[int, str]]:
    """Rows ``pod`` may use by the selection plugins of ``fwk``'s profile, and for every
    other row the first reason it may not (int64 array, row -> reason)."""
    table = cluster.nodes
    rows = table.order()
    state = CycleState()
    skipped: set[str] = set()
    why: dict[int, str] = {}
    for pl in fwk.plugins["pre_filter"]:
        if pl.name not in SELECTION:
            continue
        result, status = pl.pre_filter(state, pod, cluster)
        if status.code == Code.SKIP:
            skipped.add(pl.name)
        elif not status.is_success():
            return rows[:0], {int(r): status.message() for r in rows.tolist()}
        elif result is not None and result.node_names is not None:
            names = np.asarray([table.names[r] for r in rows.tolist()], dtype=object)
            keep = np.isin(names, np.asarray(sorted(result.node_names), dtype=object))
            for r in rows[~keep].tolist():
                why[int(r)] = f"node(s) didn't satisfy plugin(s) [{pl.name}]"
            rows = rows[keep]
    for pl in fwk.filter_plugins:
        if pl.name not in SELECTION or pl.name in skipped or rows.size == 0:
            continue
        verdict = pl.filter(state, pod, cluster, rows)
        bad = verdict.codes != 0
        for r, code in zip(rows[bad].tolist(), verdict.codes[bad].tolist(), strict=True):
            why[int(r)] = "; ".join(verdict.table[int(code)].reasons)
        rows = rows[~bad]
    return rows, why


def _selection_key(pod: api.Pod) -> object:
    return (
        pod.scheduler_name,
        tuple(sorted(pod.node_selector.items())),
        pod.node_affinity,
        pod.tolerations,
    )


def check_pools(
    snapshot: Mapping[str, Any] | list[Any],
    configs: Sequence[KubeSchedulerConfiguration | Mapping[str, Any] | None],
    names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Check the pools of the schedulers ``configs`` declare on ``snapshot`` (see module
    doc); ``names`` label the configurations in the report (default ``config-<i>``)."""
    cfgs = [_as_config(c) for c in configs]
    labels = list(names) if names is not None else [f"config-{i}" for i in range(len(cfgs))]
    cluster, pending = build_cluster(snapshot)
    table = cluster.nodes
    bound = [rec.pod for rec in cluster.pods.values()]
    everyone = sorted([*bound, *pending], key=lambda p: p.key)
    scheds: dict[str, _Scheduler] = {}
    duplicates: list[str] = []
    locks: dict[tuple[str, str], list[str]] = {}
    for label, cfg in zip(labels, cfgs, strict=True):
        le = cfg.leader_election
        if le.leader_elect:
            locks.setdefault((le.resource_namespace, le.resource_name), []).append(label)
        for profile in cfg.profiles:
            name = profile.scheduler_name
            if name in scheds:
                duplicates.append(name)
                continue
            fwk = Framework(profile, in_tree_registry(), Handle(cluster))
            tolerations = tuple(
                dict.fromkeys(
                    t for p in everyone if p.scheduler_name == name for t in p.tolerations
                )
            )
            plain, _ = passing(fwk, cluster, api.Pod(name="probe", scheduler_name=name))
            rows, _ = passing(
                fwk, cluster, api.Pod(name="probe", scheduler_name=name, tolerations=tolerations)
            )
            pool = set(rows.tolist())
            scheds[name] = _Scheduler(name, label, fwk, pool, dict.fromkeys(plain.tolist(), PROBE))
    unowned: list[str] = []
    crossings: list[dict[str, Any]] = []
    seen: dict[object, tuple[set[int], dict[int, str]]] = {}
    for pod in everyone:
        sch = scheds.get(pod.scheduler_name)
        if sch is None:
            unowned.append(pod.key)
            continue
        key = _selection_key(pod)
        if key not in seen:
            rows, why = passing(sch.fwk, cluster, pod.bound_to(""))
            seen[key] = (set(rows.tolist()), why)
        ok, why = seen[key]
        for r in sorted(ok):
            sch.reach.setdefault(r, f"pod {pod.key}")
        row = table.row_of.get(pod.node_name) if pod.node_name else None
        if row is not None and row not in ok:
            crossings.append(
                {
                    "pod": pod.key,
                    "scheduler": sch.name,
                    "node": pod.node_name,
                    "reason": why.get(row, "rejected"),
                }
            )
    for sch in scheds.values():
        for r in sch.pool:
            sch.reach.setdefault(r, TOLERATIONS)
    overlaps = _overlaps(scheds, table.names)
    shared = [
        {"lock": f"{ns}/{name}", "configs": who}
        for (ns, name), who in sorted(locks.items())
        if len(who) > 1
    ]
    return {
        "schedulers": {
            s.name: {
                "config": s.config,
                "poolNodes": sorted(table.names[r] for r in s.pool),
            }
            for s in scheds.values()
        },
        "overlaps": overlaps,
        "crossings": crossings,
        "unowned": unowned,
        "duplicateSchedulers": sorted(set(duplicates)),
        "sharedLocks": shared,
        "ok": not (overlaps or crossings or unowned or duplicates or shared),
    }


def _overlaps(scheds: Mapping[str, _Scheduler], names: list[str]) -> list[dict[str, Any]]:
    by_row: dict[int, list[_Scheduler]] = {}
    for s in scheds.values():
        for r in s.pool:
            by_row.setdefault(r, []).append(s)
    out = []
    for r in sorted(by_row, key=lambda r: names[r]):
        who = by_row[r]
        if len(who) > 1:
            out.append(
                {
                    "node": names[r],
                    "schedulers": sorted(s.name for s in who),
                    "via": {s.name: s.reach[r] for s in sorted(who, key=lambda s: s.name)},
                }
            )
    return out


def render(result: Mapping[str, Any]) -> str:
    """The report as text."""
    lines = []
    for name, s in result["schedulers"].items():
        lines.append(f"scheduler {name} ({s['config']}): pool of {len(s['poolNodes'])} node(s)")
    for o in result["overlaps"]:
        via = ", ".join(f"{k} via {v}" for k, v in o["via"].items())
        lines.append(
            f"OVERLAP node {o['node']} reachable by {' and '.join(o['schedulers'])}: {via}"
        )
    for c in result["crossings"]:
        lines.append(f"CROSSED pod {c['pod']} ({c['scheduler']}) on {c['node']}: {c['reason']}")
    for key in result["unowned"]:
        lines.append(f"UNOWNED pod {key}: no profile has its schedulerName")
    for name in result["duplicateSchedulers"]:
        lines.append(f"DUPLICATE schedulerName {name} in more than one profile")
    for lock in result["sharedLocks"]:
        lines.append(f"SHARED LOCK {lock['lock']} used by {', '.join(lock['configs'])}")
    lines.append("pools are independent" if result["ok"] else "pool boundaries are broken")
    return "\n".join(lines)
