"""One sweep task, run wherever a worker is: the base with the variant's settings and a seed.

:func:`run_task` is the only function a worker calls (a process of the local pool or a Ray
task); it loads the base itself, so what travels is a small :class:`~kubesched.sweep.spec.Task`
and what comes back is one row of measurements (a dict of numbers, JSON-ready).

Every row has the same keys whatever the base (``None`` where a base cannot measure it):

- ``podsSubmitted`` (the denominator, equal for every variant of a seed), ``podsScheduled``,
  ``podsPending``; ``attempts`` by result and ``successRatio`` (scheduled / all attempts);
- ``podsPerSecond``: successful Pods per second of scheduler wall-clock time (machine- and
  load-dependent: the only measures not reproducible bit for bit, with ``wallSeconds``);
- ``podsPerSimSecond``: successful Pods per simulated second (deterministic);
- ``predictedUpstreamPodsPerSecond``: the same, when the scenario times attempts with
  upstream's calibrated cost model (``timing.costModel: upstream``), else None: what the
  real kube-scheduler would do with this variant on the calibrated machine;
- ``queueP50`` / ``queueP99``: seconds from creation to bind over *every* submitted Pod, those
  still Pending counted at their age at the end;
- ``fragmentationPercent`` of ``fragmentationResource`` (GPUs when the cluster has any,
  else CPU) and ``idleWholeGpuNodes``: means over the run's samples (a replay: at 100 % of
  the GPU capacity arrived);
- ``gangs``, ``gangsComplete``, ``gangTtcP50`` / ``gangTtcMax`` (seconds from a gang's first
  Pod to ``minMember`` bound), ``preemptionAttempts`` and ``preemptionVictims``;
- ``invariantsHold`` and the invariant lists that failed.

A task that cannot run (a variable the base does not support yet, such as ``shards`` before
the parallel scheduler is wired in) returns a row with ``skipped`` set and no measures.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import os
import tempfile
import time
from typing import Any

import numpy as np
import yaml

from kubesched.config import featuregates
from kubesched.config.featuregates import FeatureGates
from kubesched.config.load import read_file
from kubesched.config.versions import parse_version
from kubesched.sweep import paths
from kubesched.sweep.spec import BENCH, RECORDING, REPLAY, SIMULATE, Task

MEASURES = (
    "podsSubmitted", "podsScheduled", "podsPending", "attempts", "successRatio",
    "podsPerSecond", "podsPerSimSecond", "predictedUpstreamPodsPerSecond", "queueP50",
    "queueP99", "fragmentationPercent", "fragmentationResource", "idleWholeGpuNodes", "gangs",
    "gangsComplete", "gangTtcP50", "gangTtcMax", "preemptionAttempts", "preemptionVictims",
    "invariantsHold", "wallSeconds",
)  # fmt: skip
NONDETERMINISTIC = ("podsPerSecond", "wallSeconds")
"""Measures that depend on the machine; every other one is a function of inputs and seed."""
GPU = "nvidia.com/gpu"


class Skipped(Exception):
    """The task cannot run on this base (yet); the message says why."""


def run_task(task: Task) -> dict[str, Any]:
    """Run ``task`` and return its row (see the module docstring)."""
    row: dict[str, Any] = {"index": task.index, "variant": task.variant, "seed": task.seed}
    try:
        kind = task.base["kind"]
        if kind == SIMULATE:
            row.update(_simulate(task))
        elif kind == BENCH:
            row.update(_bench(task))
        elif kind == REPLAY:
            row.update(_replay(task))
        elif kind == RECORDING:
            row.update(_recording(task))
    except Skipped as e:
        row["skipped"] = str(e)
    return row


def _config(task: Task, config: dict[str, Any] | None) -> dict[str, Any] | None:
    """The base configuration with the variant's configuration paths set (a copy)."""
    sets = {k: v for k, v in task.settings.items() if paths.is_config(k)}
    client = {k: v for k, v in task.settings.items() if paths.canonical(k).startswith("client.")}
    if not sets and not client:
        return config
    doc = copy.deepcopy(paths.base_config(config))
    for key, value in sets.items():
        paths.set_path(doc, key, value)
    for key, value in client.items():  # the configuration's clientConnection too (bench reads it)
        paths.set_path(doc, "clientConnection." + paths.canonical(key).split(".")[1], value)
    return doc


def _run_setting(task: Task, name: str, default: Any) -> Any:
    for key, value in task.settings.items():
        if paths.canonical(key) == name:
            return value
    return default


def _gates(task: Task, base: FeatureGates) -> FeatureGates:
    """``base`` (the scenario's, or the default) at the variant's ``kubernetesVersion``, else
    the sweep command's (``task.base["kubernetesVersion"]``), with the command's
    ``--feature-gates`` (``task.base["featureGates"]``) on top, checked at that version."""
    given: dict[str, bool] = task.base.get("featureGates") or {}
    version = _run_setting(task, "kubernetesVersion", task.base.get("kubernetesVersion"))
    if version is None and not given:
        return base
    minor = base.version if version is None else parse_version(version, "kubernetesVersion")
    settings = {**dict(base.settings), **given}
    return featuregates.with_settings(minor, settings, path="featureGates")


def _shards(task: Task, fn: Any) -> dict[str, Any]:
    shards = int(_run_setting(task, "shards", 1))
    if shards == 1:
        return {}
    if "shards" not in inspect.signature(fn).parameters:
        raise Skipped("shards: the parallel scheduler is not wired into this base yet")
    return {"shards": shards}


def _simulate(task: Task) -> dict[str, Any]:
    from kubesched.metrics import SchedulerMetrics
    from kubesched.sim.scenario import load_scenario
    from kubesched.sim.simulate import run_scenario

    sc = load_scenario(task.base["scenario"], seed=task.seed)
    sc.config = _config(task, sc.config)
    sc.gates = _gates(task, sc.gates)
    t = sc.timing
    sc.timing = dataclasses.replace(
        t,
        bind_latency=float(_run_setting(task, "api.latencySeconds", t.bind_latency)),
        watch_delay=float(_run_setting(task, "api.watchDelaySeconds", t.watch_delay)),
        client_qps=float(_run_setting(task, "client.qps", t.client_qps)),
        client_burst=int(_run_setting(task, "client.burst", t.client_burst)),
    )
    metrics = SchedulerMetrics()
    summary = run_scenario(sc, metrics=metrics, **_shards(task, run_scenario))
    return measure_summary(summary, metrics.samples())


def _mean(values: list[Any]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return round(float(np.mean(vals)), 4) if vals else None


def measure_summary(s: dict[str, Any], samples: dict[Any, float]) -> dict[str, Any]:
    """A ``simulate`` summary and its metric samples as a sweep row."""
    tl = s.get("timeline") or {}
    frag = tl.get("fragmentation") or {}
    res = GPU if any(v for v in frag.get(GPU, []) if v is not None) else "cpu"
    gangs = s.get("gangs") or {}
    ttc = sorted(g["completeSeconds"] for g in gangs.values() if g["completeSeconds"] is not None)
    allq = s.get("queueingSecondsAllSubmitted") or {}
    sched_wall = s.get("schedulerWallSeconds") or 0.0
    bad = {k: len(v) for k, v in s["invariants"].items() if v}
    return {
        "nodes": s["nodes"],
        "podsSubmitted": s["podsSubmitted"],
        "podsScheduled": s["podsScheduled"],
        "podsPending": s["podsPending"],
        "attempts": dict(s["attempts"]),
        "successRatio": s["successRatio"],
        "podsPerSecond": round(s["podsScheduled"] / sched_wall, 2) if sched_wall else None,
        "podsPerSimSecond": s.get("scheduledPodsPerVirtualSecond"),
        "predictedUpstreamPodsPerSecond": s.get("scheduledPodsPerVirtualSecond")
        if (s.get("config") or {}).get("costModel") == "upstream"
        else None,
        "queueP50": allq.get("p50"),
        "queueP99": allq.get("p99"),
        "fragmentationPercent": _mean(frag.get(res, [])),
        "fragmentationResource": res,
        "idleWholeGpuNodes": _mean(tl.get("idleGpuNodes", [])),
        "gangs": len(gangs),
        "gangsComplete": len(ttc),
        "gangTtcP50": round(float(np.median(ttc)), 4) if ttc else None,
        "gangTtcMax": round(max(ttc), 4) if ttc else None,
        "preemptionAttempts": int(samples.get(("scheduler_preemption_attempts_total", ()), 0)),
        "preemptionVictims": int(samples.get(("scheduler_preemption_victims_sum", ()), 0)),
        "invariantsHold": not bad,
        "invariantsViolated": bad,
        "wallSeconds": s.get("wallSeconds"),
    }


def _bench(task: Task) -> dict[str, Any]:
    from kubesched.bench import params
    from kubesched.bench.config import load_test_cases
    from kubesched.bench.runner import RunOptions, run_workload

    cases = load_test_cases(task.base["config"])
    chosen = params.select(cases, workload=task.base["workload"])
    if not chosen:
        raise Skipped(f"no workload {task.base['workload']!r} in {task.base['config']}")
    tc, wl = chosen[0]
    options: dict[str, Any] = {
        "binding": task.base.get("binding", "api"),
        "api_latency": float(_run_setting(task, "api.latencySeconds", 0.0)),
        "client_qps": _run_setting(task, "client.qps", None),
        "client_burst": _run_setting(task, "client.burst", None),
        "seed": task.seed,
        "gates": _gates(task, FeatureGates()),
    }
    shards = int(_run_setting(task, "shards", 1))
    if shards != 1:
        if "shards" not in RunOptions.__slots__:
            raise Skipped("shards: the parallel scheduler is not wired into bench yet")
        options["shards"] = shards
    with tempfile.TemporaryDirectory() as tmp:
        raw = None
        if tc.scheduler_config_path:
            raw = read_file(tc.scheduler_config_path)
        cfg = _config(task, raw)
        if cfg is not raw and cfg is not None:
            path = os.path.join(tmp, "config.yaml")
            with open(path, "w") as fh:
                yaml.safe_dump(cfg, fh)
            tc = dataclasses.replace(tc, scheduler_config_path=path)
        result = run_workload(tc, wl, params.resolve(tc, wl), RunOptions(**options))
    tp = result.metric("SchedulingThroughput") or {}
    attempts = {r: int(result.attempts.get(r, 0)) for r in ("scheduled", "unschedulable", "error")}
    return {
        **dict.fromkeys(MEASURES),
        "podsScheduled": result.pods_bound,
        "attempts": attempts,
        "successRatio": round(attempts["scheduled"] / max(1, sum(attempts.values())), 4),
        "podsPerSecond": tp.get("Average"),
        "invariantsHold": result.error is None,
        "invariantsViolated": {"error": 1} if result.error else {},
        "wallSeconds": round(result.wall_seconds, 3),
    }


def _recording(task: Task) -> dict[str, Any]:
    """A recording replayed with the variant's configuration (:mod:`kubesched.record.replay`):
    the kubesched run's row, plus how its placements compare with the recorded scheduler's
    (``placementsDifferent`` of ``placementsCompared``) and both sides' time to bind."""
    from kubesched.record.reader import load_recording
    from kubesched.record.replay import run_replay

    rec = load_recording(task.base["directory"])
    raw = read_file(task.base["config"]) if task.base.get("config") else None
    chosen = _run_setting(task, "kubernetesVersion", task.base.get("kubernetesVersion"))
    given = chosen is not None or task.base.get("featureGates")
    gates = _gates(task, FeatureGates()) if given else None
    doc = run_replay(rec, _config(task, raw), seed=task.seed, gates=gates)
    c = doc["comparison"]
    ttb = c["timeToBindSeconds"]
    return {
        **measure_summary(doc["replay"], {}),
        "placementsCompared": c["placements"]["boundBoth"],
        "placementsDifferent": c["placements"]["different"],
        "timeToBindP50": ttb["replay"]["p50"],
        "recordedTimeToBindP50": ttb["real"]["p50"],
    }


def _replay(task: Task) -> dict[str, Any]:
    try:
        from kubesched.sim.gpureplay import traces
        from kubesched.sim.gpureplay.replay import replay
    except ImportError as e:  # pragma: no cover - the replay room is optional
        raise Skipped(f"replay is not available: {e}") from None
    nodes = traces.load_nodes(task.base["nodes"])
    pods = traces.load_pods(task.base["pods"])
    policy = str(_run_setting(task, "policy", task.base.get("policy", "kubesched")))
    t0 = time.perf_counter()
    try:
        r = replay(nodes, pods, policy, task.seed)
    except ValueError as e:
        raise Skipped(str(e)) from None
    wall = time.perf_counter() - t0
    curve = {p.arrived_percent: p for p in r.curve()}
    at = curve.get(100) or (curve[max(curve)] if curve else None)
    placed = int(r.node.size) - r.failed
    return {
        **dict.fromkeys(MEASURES),
        "nodes": len(nodes),
        "podsSubmitted": int(r.node.size),
        "podsScheduled": placed,
        "podsPending": r.failed,
        "attempts": {"scheduled": placed, "unschedulable": r.failed, "error": 0},
        "successRatio": round(placed / max(1, int(r.node.size)), 4),
        "podsPerSecond": round(placed / wall, 2) if wall > 0 else None,
        "fragmentationPercent": None if at is None else round(at.fragmentation_percent, 4),
        "fragmentationResource": GPU,
        "idleWholeGpuNodes": None if at is None else round(at.idle_whole_gpu_nodes, 4),
        "invariantsHold": True,
        "invariantsViolated": {},
        "wallSeconds": round(wall, 3),
    }
