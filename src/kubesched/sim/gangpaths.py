"""The two gang paths on one workload: Coscheduling and upstream's Workload API.

kubesched runs gangs two ways: scheduler-plugins' Coscheduling ``PodGroup``
(``scheduling.x-k8s.io``, a Pod label, Permit holding members until ``minMember``) and
upstream's own Workload API ``PodGroup`` (``scheduling.k8s.io``, v1.36+ under GenericWorkload:
GangScheduling and the PodGroup scheduling cycle).  This module expresses the same jobs the
second way and puts the runs side by side:

- :func:`as_workload_api`: a copy of a scenario whose Coscheduling gangs are Workload API
  gangs (same members, ``minCount`` = ``minMember``, the Pods join by
  ``spec.schedulingGroup.podGroupName`` instead of the label; optionally a topology
  constraint), on the same release with the gates that serve them turned on;
- :func:`figures`: what one run says about its gangs, whichever kind they are
  (:func:`kubesched.admission.gang.completion` over both, the longest incomplete hold, the
  invariant, and ``gangPlacement`` when the run has it, :mod:`kubesched.sim.gangplacement`);
- :func:`compare` and :func:`rows`: several runs' figures, and the report's rows
  (``kubesched simulate --compare-gangs``, ``benchmarks/gang_placement.py``).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from kubesched.admission import gang
from kubesched.admission import objects as o
from kubesched.api import workload
from kubesched.api.errors import InputError
from kubesched.config import featuregates
from kubesched.sim.scenario import WORKLOAD_POD_GROUP_VERSION, Scenario

WORKLOAD_GATES: Mapping[str, Mapping[str, bool]] = {
    "1.36": {"GenericWorkload": True, "GangScheduling": True},
    "1.37": {"GenericWorkload": True},
}
"""Per release, the gates that serve Workload API gangs and join GangScheduling."""
TOPOLOGY_GATE = "TopologyAwareWorkloadScheduling"


def as_workload_api(sc: Scenario, *, topology_key: str | None = None) -> Scenario:
    """``sc`` with every Coscheduling gang made a Workload API gang (see the module
    docstring); ``topology_key`` adds ``schedulingConstraints.topology`` and turns on
    TopologyAwareWorkloadScheduling.  Raises :class:`InputError` on a release before 1.36."""
    version = sc.gates.version
    if version not in WORKLOAD_POD_GROUP_VERSION:
        msg = f"the Workload API's gangs need Kubernetes 1.36 or later, not {version}"
        raise InputError([("--compare-gangs", msg)])
    settings = {**dict(sc.gates.settings), **WORKLOAD_GATES[version]}
    if topology_key is not None:
        settings[TOPOLOGY_GATE] = True
    out = dataclasses.replace(
        sc,
        arrivals=copy.deepcopy(sc.arrivals),
        others=[],
        gates=featuregates.with_settings(version, settings),
    )
    api_version = f"{workload.GROUP}/{WORKLOAD_POD_GROUP_VERSION[version]}"
    for obj in sc.others:
        if not _coscheduling_group(obj):
            out.others.append(obj)
            continue
        spec: dict[str, Any] = {
            "schedulingPolicy": {"gang": {"minCount": int(obj["spec"].get("minMember") or 1)}}
        }
        if topology_key is not None:
            spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
        meta = {k: obj["metadata"][k] for k in ("name", "namespace") if k in obj["metadata"]}
        out.others.append(
            {"apiVersion": api_version, "kind": "PodGroup", "metadata": meta, "spec": spec}
        )
    for a in out.arrivals:
        name = o.pod_group_of(a.pod)
        if name:
            a.pod.labels.pop(o.POD_GROUP_LABEL, None)
            a.pod.labels.pop(o.POD_GROUP_LABEL_KOORDINATOR, None)
            a.pod.scheduling_group = name
    return out


def _coscheduling_group(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is a scheduler-plugins PodGroup (either spelling of its group)."""
    return obj.get("kind") == "PodGroup" and obj.get("apiVersion") in o.POD_GROUP_VERSIONS


def figures(summary: Mapping[str, Any]) -> dict[str, Any]:
    """One run's gangs, both kinds together: :func:`~kubesched.admission.gang.completion`
    (gangs, every member bound / Ready, p50 / p99 over the gangs that got there), the same
    Ready time over every gang with an unfinished one counted at its age when the run ended
    (``allReadySecondsEveryGang``, a lower bound: the same denominator for every run), the
    longest incomplete hold, the gangs
    held past their timeout (the invariant), Pods scheduled and pending, scheduling
    attempts, and the run's ``gangPlacement`` when it has one."""
    rows = {**(summary.get("gangs") or {}), **(summary.get("podGroups") or {})}
    out = gang.completion(rows)
    end = float(summary["virtualSeconds"])
    ages = [  # an unfinished gang counted at its age when the run ended (a lower bound)
        float(r["allReadySeconds"])
        if r.get("allReadySeconds") is not None
        else end - float(r["createdAt"])
        for r in rows.values()
        if r.get("createdAt") is not None
    ]
    out["allReadySecondsEveryGang"] = {
        "p50": round(float(np.percentile(ages, 50)), 4) if ages else None,
        "p99": round(float(np.percentile(ages, 99)), 4) if ages else None,
    }
    holds = [float(r.get("longestIncompleteHoldSeconds") or 0.0) for r in rows.values()]
    out["longestIncompleteHoldSeconds"] = round(max(holds, default=0.0), 4)
    out["heldPastTimeout"] = len(summary["invariants"].get("gangsHeldIncompletePastTimeout", []))
    out["podsScheduled"] = summary["podsScheduled"]
    out["podsPending"] = summary["podsPending"]
    out["attempts"] = int(sum(summary["attempts"].values()))
    if summary.get("gangPlacement") is not None:
        out["placement"] = summary["gangPlacement"]
    return out


def compare(runs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Several runs of one workload (label -> summary, in column order): their
    :func:`figures`."""
    return {"runs": {label: figures(s) for label, s in runs.items()}}


def mean(comparisons: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The mean of several :func:`compare` results of the same runs (one per seed), field by
    field (a None stays None: some seed had no value), rounded to 2 places."""

    def avg(values: list[Any]) -> Any:
        if isinstance(values[0], Mapping):
            return {k: avg([v[k] for v in values]) for k in values[0]}
        if any(v is None for v in values):
            return None
        return round(sum(float(v) for v in values) / len(values), 2)

    labels = list(comparisons[0]["runs"])
    return {"runs": {lb: avg([c["runs"][lb] for c in comparisons]) for lb in labels}}


def rows(c: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """A header ``("", label, ...)`` then ``(measure, value per run, ...)`` rows of a
    :func:`compare` result, for the text, Markdown and HTML reports."""
    runs = list(c["runs"].values())
    out: list[tuple[str, ...]] = [("", *c["runs"])]

    def add(label: str, cell: Any) -> None:
        out.append((label, *(str(cell(r)) for r in runs)))

    def pair(r: Mapping[str, Any], key: str) -> str:
        p = r[key]
        return f"{p['p50']} / {p['p99']}"

    add("Gangs", lambda r: r["gangs"])
    add("Every member bound", lambda r: r["allBound"])
    add("Every member Ready (job started)", lambda r: r["allReady"])
    add("Created to every member bound, p50 / p99 s", lambda r: pair(r, "allBoundSeconds"))
    add("Created to every member Ready, p50 / p99 s", lambda r: pair(r, "allReadySeconds"))
    add(
        "The same over every gang, unfinished at their age, p50 / p99 s",
        lambda r: pair(r, "allReadySecondsEveryGang"),
    )
    add("Longest incomplete hold, s", lambda r: r["longestIncompleteHoldSeconds"])
    add("Gangs held incomplete past their timeout", lambda r: r["heldPastTimeout"])
    add("Pods scheduled / pending", lambda r: f"{r['podsScheduled']} / {r['podsPending']}")
    add("Scheduling attempts", lambda r: r["attempts"])
    if all("placement" in r for r in runs):
        add("GPUs fragmented, mean % while work waits", lambda r: r["placement"]["fragmented"])
        add("Jobs within one rack, %", lambda r: r["placement"]["oneRackPercent"])
        add("Racks per job, mean", lambda r: r["placement"]["racksPerJob"])
        add("Whole racks idle, mean while work waits", lambda r: r["placement"]["idleRacks"])
    return out


def markdown(c: Mapping[str, Any]) -> str:
    """:func:`rows` as a Markdown table."""
    table = rows(c)
    lines = ["| " + " | ".join(table[0]) + " |", "|" + "---|" * len(table[0])]
    lines += ["| " + " | ".join(r) + " |" for r in table[1:]]
    return "\n".join(lines) + "\n"
