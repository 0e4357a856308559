"""Retry governance in the simulator: the setting forced on or off, and what it changes.

NodeResourcesFit's ``retryGovernance`` (kubesched only, off by default) wakes a Pod rejected
for resources only when the event's node has room for it now
(:mod:`kubesched.plugins.noderesources_fit`).  ``kubesched simulate --compare-governance``
runs a scenario twice with the same seed, the setting off and on, and puts side by side
(:func:`compare`) what an operator weighs: attempts and the attempts saved, the success
ratio, and how long Pods that had to wait took to be scheduled -- from creation, and from
the last release of capacity (an assigned Pod deleted, a Node added or its allocatable
raised) before their bind, which would grow if the hints woke Pods late.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.config import args as cfg_args
from kubesched.config import names
from kubesched.config.args import NodeResourcesFitArgs
from kubesched.config.types import KubeSchedulerConfiguration, frozen_mapping

FIT = names.NODE_RESOURCES_FIT


def with_retry_governance(
    config: KubeSchedulerConfiguration, on: bool
) -> KubeSchedulerConfiguration:
    """``config`` with every profile's NodeResourcesFit ``retryGovernance`` set to ``on``."""
    profiles = []
    for p in config.profiles:
        args = p.plugin_config.get(FIT)
        if isinstance(args, cfg_args.NodeResourcesFitArgs):
            plugin_config = dict(p.plugin_config)
            plugin_config[FIT] = dataclasses.replace(args, retry_governance=on)
            p = dataclasses.replace(p, plugin_config=frozen_mapping(plugin_config))
        profiles.append(p)
    return dataclasses.replace(config, profiles=tuple(profiles))


def governed(config: KubeSchedulerConfiguration) -> bool:
    """Whether some profile has ``retryGovernance`` on."""
    return any(
        isinstance(args, NodeResourcesFitArgs) and args.retry_governance
        for args in (p.plugin_config.get(FIT) for p in config.profiles)
    )


class ReleaseLog:
    """A watcher of the simulated API server noting when capacity was released: an
    assigned Pod deleted, a Node added or its allocatable changed (virtual seconds)."""

    def __init__(self, clock: Any) -> None:
        self.clock = clock
        self.times: list[float] = []

    def _note(self) -> None:
        self.times.append(float(self.clock()))

    def on_node_add(self, node: api.Node) -> None:
        self._note()

    def on_node_update(self, old: api.Node, new: api.Node) -> None:
        if new.allocatable != old.allocatable:
            self._note()

    def on_node_delete(self, node: api.Node) -> None:
        pass

    def on_pod_add(self, pod: api.Pod) -> None:
        pass

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        pass

    def on_pod_delete(self, pod: api.Pod) -> None:
        if pod.node_name:
            self._note()

    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        pass


def _quantiles(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"pods": 0, "p50": None, "p99": None}
    a = np.asarray(values)
    return {
        "pods": len(values),
        "p50": round(float(np.percentile(a, 50)), 4),
        "p99": round(float(np.percentile(a, 99)), 4),
    }


def waited(
    pod_attempts: Mapping[str, int],
    created_at: Mapping[str, float],
    bound_at: Mapping[str, float],
    releases: list[float],
) -> dict[str, Any]:
    """For the Pods bound after at least one failed attempt: seconds from creation to bind
    (``timeToScheduleSeconds``) and from the last capacity release at or before the bind
    (``afterReleaseSeconds``), each with its Pods, p50 and p99."""
    releases = sorted(releases)
    since_created, since_release = [], []
    for key, n in pod_attempts.items():
        bound = bound_at.get(key)
        if n < 2 or bound is None:
            continue
        if key in created_at:
            since_created.append(bound - created_at[key])
        i = bisect.bisect_right(releases, bound)
        if i:
            since_release.append(bound - releases[i - 1])
    return {
        "timeToScheduleSeconds": _quantiles(since_created),
        "afterReleaseSeconds": _quantiles(since_release),
    }


COMPARED = (
    "podsScheduled",
    "podsPending",
    "attempts",
    "successRatio",
    "queueingSeconds",
    "retryWaited",
    "schedulerWallSeconds",
)


def compare(off: Mapping[str, Any], on: Mapping[str, Any]) -> dict[str, Any]:
    """The two runs side by side (same scenario and seed): their numbers and the attempts
    the setting saved."""

    def total(s: Mapping[str, Any]) -> int:
        return int(sum(s["attempts"].values()))

    return {
        "off": {k: off.get(k) for k in COMPARED},
        "on": {k: on.get(k) for k in COMPARED},
        "attemptsSaved": total(off) - total(on),
        "samePodsScheduled": off["podsScheduled"] == on["podsScheduled"],
    }


def rows(c: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(measure, off, on)`` rows of a comparison, for the text and HTML reports."""
    out: list[tuple[str, Any, Any]] = []
    off, on = c["off"], c["on"]
    out.append(("Pods scheduled", off["podsScheduled"], on["podsScheduled"]))
    out.append(("Pods still pending", off["podsPending"], on["podsPending"]))
    for result in ("scheduled", "unschedulable", "error"):
        out.append((f"Attempts: {result}", off["attempts"][result], on["attempts"][result]))
    out.append(("Success ratio", off["successRatio"], on["successRatio"]))
    out.append(
        ("All bound Pods: created to bound, p50 / p99 s", *_pairs(off, on, "queueingSeconds"))
    )
    for key, label in (
        ("timeToScheduleSeconds", "Waited Pods: created to bound"),
        ("afterReleaseSeconds", "Waited Pods: last capacity release to bound"),
    ):
        a, b = (off.get("retryWaited") or {}).get(key), (on.get("retryWaited") or {}).get(key)
        if a is None or b is None:
            continue
        out.append((f"{label}, Pods", a["pods"], b["pods"]))
        out.append((f"{label}, p50 / p99 s", _pair(a), _pair(b)))
    out.append(
        ("Scheduler wall-clock seconds", off["schedulerWallSeconds"], on["schedulerWallSeconds"])
    )
    return out


def _pairs(off: Mapping[str, Any], on: Mapping[str, Any], key: str) -> tuple[str, str]:
    return _pair(off.get(key) or {}), _pair(on.get(key) or {})


def _pair(q: Mapping[str, Any]) -> str:
    if q.get("p50") is None:
        return "-"
    return f"{q.get('p50')} / {q.get('p99')}"
