"""``kubesched replay DIR``: a recording replayed in virtual time, beside what really happened.

The recording (:mod:`kubesched.record.reader`) runs twice through the simulator
(:func:`kubesched.sim.simulate.run_scenario`), on the same event loop timings:

- **as recorded**: every Pod is created, bound to the node the cluster's scheduler chose at
  the time it did, and deleted when it was; Nodes and other objects come and go as recorded.
  This run measures the real placement the way the replay is measured (fragmentation and
  utilisation over time).
- **kubesched**: the same, except that each Pod of a profile of the given configuration
  (``--config``; upstream's defaults, profile ``default-scheduler``, without one) that was
  created unbound is scheduled by kubesched instead: created at its recorded time (a Pod
  Pending at time 0 is created at 0), and never bound by the recording.  Pods of other
  schedulers, and Pods created already bound, are placed as recorded.

The comparison (:func:`compare`) covers the Pods kubesched scheduled, within the recorded
window (binds after it are not known for the real scheduler): placements that differ, time to
bind (from creation, or from time 0 for a Pod Pending at the start, to the bind) for both,
queueing time (creation to the scheduling decision: the real scheduler's is not observable
through the API, so only the replay's), attempts and success ratio (the real scheduler's
attempts are those the recording saw: one per bind and one per change of the
``PodScheduled=False`` condition, a lower bound), and fragmentation and utilisation (means
over the samples within the window, and the last of them) of both runs.  Pods the
recording deleted before kubesched bound them are not lost Pods (the ``lostPods``
invariant leaves them out).

``--kubernetes-version`` names the Kubernetes release whose scheduler behaviour the replay
uses (:data:`SUPPORTED_KUBERNETES_VERSIONS`); without it, the recording's API server's
version when supported, else the newest (``docs/versions.md``).
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.config.featuregates import FeatureGates
from kubesched.config.load import load_config
from kubesched.config.versions import (
    DEFAULT_VERSION,
    SUPPORTED_VERSIONS,
    parse_version,
    version_of_server,
)
from kubesched.plugins.registry import known_plugin_names
from kubesched.record import format as fmt
from kubesched.record.reader import Event, Recording
from kubesched.sim.apiserver import ApiError
from kubesched.sim.driver import SimCluster, SimTiming
from kubesched.sim.scenario import Arrival, Scenario
from kubesched.sim.simulate import ProgressFn, run_scenario

log = logging.getLogger(__name__)

Obj = dict[str, Any]

SUPPORTED_KUBERNETES_VERSIONS = SUPPORTED_VERSIONS
"""Kubernetes minor releases whose scheduler kubesched implements."""
RECORDED_PROFILE = "kubesched-replay-as-recorded"
"""The one profile of the as-recorded run: no Pod names it, so the recording places all."""
FINISHED = ("Succeeded", "Failed")
MAX_SAMPLES = 5000
"""Times to bind kept per side for the report's plot (evenly spaced ranks beyond that)."""
MAX_DIFFERENCES = 200
"""Placements that differ listed by name (all are counted)."""
DEFAULT_DRAIN = 10.0


def check_kubernetes_version(value: str | None) -> str:
    """``--kubernetes-version``: ``1.37``, ``v1.37`` or ``v1.37.N``; the minor release (None:
    the default, the newest), or :class:`InputError` naming the supported ones."""
    if value is None:
        return DEFAULT_VERSION
    return parse_version(value)


def recorded_version(rec: Recording) -> str | None:
    """The supported minor version of the recording's API server (its header's
    ``kubernetesVersion``, the server's ``gitVersion``), or None."""
    return version_of_server({"gitVersion": rec.header.get("kubernetesVersion", "")})


@dataclass(slots=True)
class Outcome:
    """One Pod kubesched schedules in the replay: when it was created (seconds) and, per
    side, when and where it was bound within the window."""

    key: str
    created: float
    real_bound: float | None = None
    real_node: str = ""
    real_failures: int = 0
    replay_bound: float | None = None
    replay_node: str = ""
    replay_decided: float | None = None
    deleted: float | None = None


@dataclass(slots=True)
class _Plan:
    """What one run creates and when."""

    arrivals: list[Arrival] = field(default_factory=list)
    calls: list[tuple[float, Callable[[SimCluster], None]]] = field(default_factory=list)
    at_start: list[api.Pod] = field(default_factory=list)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    """By UID: the Pods kubesched schedules."""


def _placeable(pod: api.Pod) -> bool:
    return pod.phase not in FINISHED


def _plan(rec: Recording, profiles: frozenset[str]) -> _Plan:
    """The run's arrivals and timed calls: Pods of ``profiles`` created unbound are
    kubesched's, everything else follows the recording."""
    plan = _Plan()
    ours: set[str] = set()

    def mine(pod: api.Pod) -> bool:
        return pod.scheduler_name in profiles and not pod.node_name and _placeable(pod)

    for pod in rec.snapshot.pods:
        if not _placeable(pod):
            continue
        if mine(pod):
            ours.add(pod.uid)
            plan.arrivals.append(Arrival(0.0, pod, None))
            plan.outcomes[pod.uid] = Outcome(pod.key, 0.0)
        else:
            plan.at_start.append(pod)
    for ev in rec.events:
        _plan_event(plan, ev, ours, mine)
    return plan


def _plan_event(plan: _Plan, ev: Event, ours: set[str], mine: Callable[[api.Pod], bool]) -> None:
    t, f = ev.t, ev.fields
    if ev.type == fmt.POD_CREATED and ev.pod is not None:
        pod = ev.pod
        if not _placeable(pod):
            return
        if mine(pod):
            ours.add(pod.uid)
            plan.arrivals.append(Arrival(t, pod, None))
            plan.outcomes[pod.uid] = Outcome(pod.key, t)
        else:
            plan.calls.append((t, _create(pod)))
    elif ev.type == fmt.POD_BOUND:
        out = plan.outcomes.get(f["uid"])
        if out is not None:
            if out.real_bound is None:
                out.real_bound, out.real_node = t, f["node"]
        elif f["uid"] not in ours:
            plan.calls.append((t, _bind(f["pod"], f["uid"], f["node"])))
    elif ev.type == fmt.POD_UNSCHEDULABLE:
        out = plan.outcomes.get(f["uid"])
        if out is not None:
            out.real_failures += 1
    elif ev.type in (fmt.POD_DELETED, fmt.POD_FINISHED):
        out = plan.outcomes.get(f["uid"])
        if out is not None and out.deleted is None:
            out.deleted = t
        plan.calls.append((t, _delete(f["pod"], f["uid"])))
    elif ev.type == fmt.POD_UPDATED and ev.pod is not None:
        plan.calls.append((t, _update_pod(ev.pod)))
    elif ev.type in (fmt.NODE_ADDED, fmt.NODE_UPDATED) and ev.node is not None:
        plan.calls.append((t, _put_node(ev.node)))
    elif ev.type == fmt.NODE_DELETED:
        plan.calls.append((t, _delete_node(f["node"])))
    elif ev.type == fmt.OBJECT_APPLIED:
        obj = f["object"]
        plan.calls.append((t, lambda sim: sim.api.apply_object(obj)))
    elif ev.type == fmt.OBJECT_DELETED:
        kind, ns, name = f["kind"], f["namespace"] or "default", f["name"]
        plan.calls.append((t, lambda sim: sim.api.delete_object(kind, ns, name)))


def _create(pod: api.Pod) -> Callable[[SimCluster], None]:
    def call(sim: SimCluster) -> None:
        if pod.node_name and pod.node_name not in sim.api.nodes:
            log.debug("%s: created on %s, a node the replay does not have", pod.key, pod.node_name)
        try:
            sim.api.create_pod(pod)
        except ApiError as e:
            log.debug("replay: cannot create %s: %s", pod.key, e)

    return call


def _bind(key: str, uid: str, node: str) -> Callable[[SimCluster], None]:
    def call(sim: SimCluster) -> None:
        current = sim.api.pods.get(key)
        if current is None or current.uid != uid or current.node_name:
            return
        try:
            sim.api.bind(current, node)
        except ApiError as e:
            log.debug("replay: cannot bind %s to %s: %s", key, node, e)

    return call


def _delete(key: str, uid: str) -> Callable[[SimCluster], None]:
    def call(sim: SimCluster) -> None:
        current = sim.api.pods.get(key)
        if current is not None and current.uid == uid:
            sim.api.delete_pod(current, "Recorded", grace=0)

    return call


def _update_pod(pod: api.Pod) -> Callable[[SimCluster], None]:
    def call(sim: SimCluster) -> None:
        current = sim.api.pods.get(pod.key)
        if current is not None and current.uid == pod.uid and not current.node_name:
            sim.api.update_pod(pod)

    return call


def _put_node(node: api.Node) -> Callable[[SimCluster], None]:
    def call(sim: SimCluster) -> None:
        if node.name in sim.api.nodes:
            sim.api.update_node(node)
        else:
            sim.api.create_node(node)

    return call


def _delete_node(name: str) -> Callable[[SimCluster], None]:
    def call(sim: SimCluster) -> None:
        if name in sim.api.nodes:
            sim.api.delete_node(name)

    return call


def profiles_of(config: Obj | None, gates: FeatureGates | None = None) -> frozenset[str]:
    """The scheduler names of the configuration's profiles."""
    cfg = load_config(config, known_plugins=known_plugin_names(), gates=gates)
    return frozenset(p.scheduler_name for p in cfg.profiles)


def _one_run(
    rec: Recording,
    config: Obj | None,
    profiles: frozenset[str],
    *,
    drain: float,
    seed: int,
    timing: SimTiming | None,
    progress: ProgressFn | None,
    retry_governance: bool | None = None,
    gates: FeatureGates | None = None,
) -> tuple[Obj, _Plan]:
    plan = _plan(rec, profiles)
    duration = rec.duration
    sc = Scenario(
        name=f"replay of {rec.directory.name}",
        seed=seed,
        duration=duration,
        drain=drain,
        timing=timing or SimTiming(),
        config=config,
        nodes=list(rec.snapshot.nodes),
        arrivals=plan.arrivals,
        others=list(rec.snapshot.others),
        gates=gates or FeatureGates(),
    )
    by_uid = plan.outcomes

    def setup(sim: SimCluster) -> None:
        for pod in plan.at_start:
            try:
                sim.api.create_pod(pod)
            except ApiError as e:
                log.debug("replay: cannot create %s: %s", pod.key, e)
        for t, call in plan.calls:
            sim.loop.call_at(t, functools.partial(call, sim))

        def bound(pod: api.Pod) -> None:
            out = by_uid.get(pod.uid)
            if out is not None and out.replay_bound is None and sim.loop.now <= duration:
                out.replay_bound, out.replay_node = sim.loop.now, pod.node_name
                out.replay_decided = sim.scheduled_at.get(pod.key)

        sim.api.on_bound.append(bound)

    interval = max(1.0, round(duration / 2000.0, 3))
    summary = run_scenario(
        sc,
        progress=progress,
        sample_interval=interval,
        setup=setup,
        retry_governance=retry_governance,
    )
    deleted = {o.key for o in by_uid.values() if o.deleted is not None}
    inv = summary["invariants"]
    inv["lostPods"] = [k for k in inv.get("lostPods", []) if k not in deleted]
    inv["pendingWithoutReason"] = [
        k for k in inv.get("pendingWithoutReason", []) if k not in deleted
    ]
    return summary, plan


def run_replay(
    rec: Recording,
    config: Obj | None,
    *,
    config_name: str = "",
    kubernetes_version: str | None = None,
    drain: float = DEFAULT_DRAIN,
    seed: int = 0,
    timing: SimTiming | None = None,
    progress: Callable[[str], ProgressFn | None] | None = None,
    retry_governance: bool | None = None,
    gates: FeatureGates | None = None,
) -> Obj:
    """Both runs and their comparison (see the module docstring): a JSON-ready document
    with ``comparison``, and the two runs' ``simulate`` summaries, ``replay`` (kubesched)
    and ``recorded`` (as recorded).  ``gates`` (the version and feature gates; the command
    line's) wins over ``kubernetes_version``; with neither, the recording's server's version
    when supported, else the newest."""
    if gates is None:
        told = recorded_version(rec) if kubernetes_version is None else None
        gates = FeatureGates(told or check_kubernetes_version(kubernetes_version))
    version = gates.version
    profiles = profiles_of(config, gates)
    recorded_config = copy.deepcopy(config) if config is not None else {}
    recorded_config.update(
        apiVersion="kubescheduler.config.k8s.io/v1",
        kind="KubeSchedulerConfiguration",
        profiles=[{"schedulerName": RECORDED_PROFILE}],
    )
    recorded, _ = _one_run(
        rec,
        recorded_config,
        frozenset(),
        drain=drain,
        seed=seed,
        timing=timing,
        progress=progress("as recorded") if progress else None,
        gates=gates,
    )
    replay, plan = _one_run(
        rec,
        config,
        profiles,
        drain=drain,
        seed=seed,
        timing=timing,
        progress=progress("kubesched") if progress else None,
        retry_governance=retry_governance,
        gates=gates,
    )
    h = rec.header
    recording = {
        "directory": str(rec.directory),
        "server": h.get("server", ""),
        "kubernetesVersion": h.get("kubernetesVersion", ""),
        "startedAt": h.get("startedAt"),
        "durationSeconds": round(rec.duration, 3),
        "complete": h.get("complete"),
        "events": len(rec.events),
        "nodesAtStart": len(rec.snapshot.nodes),
        "podsAtStart": len(rec.snapshot.pods),
    }
    replayed = {
        "kubernetesVersion": version,
        "config": config_name or "upstream defaults",
        "profiles": sorted(profiles),
        "drainSeconds": drain,
        "seed": seed,
    }
    return {
        "kind": "ReplayComparison",
        "recording": recording,
        "replayedAs": replayed,
        "comparison": compare(list(plan.outcomes.values()), recorded, replay, rec.duration),
        "replay": replay,
        "recorded": recorded,
    }


# --------------------------------------------------------------------------- comparison
def distribution(values: list[float]) -> Obj:
    """``pods``, ``p50``, ``p90``, ``p99``, ``max`` and ``mean`` of ``values`` (seconds)."""
    if not values:
        return {"pods": 0, "p50": None, "p90": None, "p99": None, "max": None, "mean": None}
    a = np.asarray(values, dtype=float)
    q = np.percentile(a, [50, 90, 99])
    return {
        "pods": len(values),
        "p50": round(float(q[0]), 6),
        "p90": round(float(q[1]), 6),
        "p99": round(float(q[2]), 6),
        "max": round(float(a.max()), 6),
        "mean": round(float(a.mean()), 6),
    }


def _samples(values: list[float]) -> list[float]:
    xs = sorted(values)
    if len(xs) > MAX_SAMPLES:
        idx = np.linspace(0, len(xs) - 1, MAX_SAMPLES).round().astype(np.int64)
        xs = [xs[int(i)] for i in idx]
    return [round(x, 6) for x in xs]


def _space(summary: Obj, window: float) -> Obj:
    """Per resource: fragmentation and utilisation, the mean over the samples within the
    recorded window and the last of them."""
    tl = summary.get("timeline") or {}
    times = tl.get("t") or []
    inside = sum(1 for t in times if t <= window + 1e-9)
    out: Obj = {}
    for what, key in (
        ("fragmentationPercent", "fragmentation"),
        ("utilizationPercent", "utilization"),
    ):
        per: Obj = {}
        for res, series in (tl.get(key) or {}).items():
            vals = [float(v) for v in series[:inside] if v is not None]
            if vals:
                per[res] = {"mean": round(float(np.mean(vals)), 3), "end": round(vals[-1], 3)}
        out[what] = per
    return out


def compare(outcomes: list[Outcome], recorded: Obj, replay: Obj, window: float) -> Obj:
    """The side-by-side numbers (see the module docstring)."""
    same = different = real_only = replay_only = neither = 0
    differences: list[Obj] = []
    real_ttb: list[float] = []
    replay_ttb: list[float] = []
    replay_queue: list[float] = []
    real_failures = real_binds = 0
    for o in outcomes:
        if o.real_bound is not None:
            real_ttb.append(max(0.0, o.real_bound - o.created))
            real_binds += 1
        real_failures += o.real_failures
        if o.replay_bound is not None:
            replay_ttb.append(max(0.0, o.replay_bound - o.created))
            if o.replay_decided is not None:
                replay_queue.append(max(0.0, o.replay_decided - o.created))
        if o.real_bound is not None and o.replay_bound is not None:
            if o.real_node == o.replay_node:
                same += 1
            else:
                different += 1
                if len(differences) < MAX_DIFFERENCES:
                    differences.append({"pod": o.key, "real": o.real_node, "replay": o.replay_node})
        elif o.real_bound is not None:
            real_only += 1
        elif o.replay_bound is not None:
            replay_only += 1
        else:
            neither += 1
    real_attempts = real_binds + real_failures
    attempts = replay.get("attempts") or {}
    replay_attempts = sum(int(v) for v in attempts.values())
    real_space, replay_space = _space(recorded, window), _space(replay, window)
    return {
        "windowSeconds": round(window, 3),
        "pods": len(outcomes),
        "placements": {
            "boundBoth": same + different,
            "same": same,
            "different": different,
            "boundOnlyByRealScheduler": real_only,
            "boundOnlyByKubesched": replay_only,
            "boundByNeither": neither,
            "differences": differences,
        },
        "timeToBindSeconds": {"real": distribution(real_ttb), "replay": distribution(replay_ttb)},
        "timeToBindSamples": {"real": _samples(real_ttb), "replay": _samples(replay_ttb)},
        "queueingSeconds": {"real": None, "replay": distribution(replay_queue)},
        "attempts": {
            "real": {
                "scheduled": real_binds,
                "unschedulable": real_failures,
                "observed": real_attempts,
            },
            "replay": {r: int(attempts.get(r, 0)) for r in ("scheduled", "unschedulable", "error")},
        },
        "successRatio": {
            "real": round(real_binds / real_attempts, 4) if real_attempts else None,
            "replay": round(int(attempts.get("scheduled", 0)) / replay_attempts, 4)
            if replay_attempts
            else None,
        },
        "fragmentationPercent": {
            "real": real_space["fragmentationPercent"],
            "replay": replay_space["fragmentationPercent"],
        },
        "utilizationPercent": {
            "real": real_space["utilizationPercent"],
            "replay": replay_space["utilizationPercent"],
        },
        "invariants": replay.get("invariants"),
    }
