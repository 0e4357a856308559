"""``kubesched simulate``: run a scenario through the real scheduler in virtual time.

Pods arrive at their virtual times, the scheduler schedules them at ``cycleSeconds`` per
attempt, bound Pods run for their lifetime and then free their node (at once: a finished
Pod has no grace period), preemption victims terminate for their grace period
(:mod:`kubesched.sim.apiserver`).  At the end the invariants of docs/design.md section 7 are
checked against the API server's own accounting (and, for a run with storage, the volume
invariants of :mod:`kubesched.sim.storagecheck`) and a summary is returned (a dict,
JSON-ready), with ``preemptionLatencySeconds`` (nominated to bound, p50 / p99) and
``podStartupSeconds``: each Pod's startup split into the ``admission``, ``scheduling``,
``binding`` and ``node`` segments and the ``total`` (created to Ready), each with the Pods
that completed it and p50 / p99 (:mod:`kubesched.sim.startup`; a bound Pod becomes Ready
its ``nodeStartupSeconds`` after the bind).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.config.load import load_config
from kubesched.metrics import SchedulerMetrics
from kubesched.parallel import factory
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim import faults, governance, scenario, startup, storagecheck, timeline
from kubesched.sim.driver import SimCluster
from kubesched.sim.jobs import JobLayer
from kubesched.sim.scenario import Scenario, check_workload_objects


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a run is: virtual seconds ``now`` of the run's ``end`` (arrivals plus drain),
    Pods ``bound`` and ``created`` so far of the ``arrivals`` the scenario has, and the
    scheduling ``attempts`` made in the ``wall`` seconds the run has taken so far."""

    now: float
    end: float
    bound: int
    created: int
    arrivals: int
    attempts: int = 0
    wall: float = 0.0

    @property
    def attempts_per_second(self) -> float:
        """Scheduling attempts per wall-clock second so far."""
        return self.attempts / self.wall if self.wall > 0 else 0.0


ProgressFn = Callable[[Progress], None]
"""Called at every timeline sample (each ``sample_interval`` virtual seconds) and once at
the end: virtual time is what the run spends, so the bar moves through the drain too
(submitted or attempted Pods reach their total a third of the way into a default run)."""


def run_scenario(
    sc: Scenario,
    *,
    progress: ProgressFn | None = None,
    metrics: SchedulerMetrics | None = None,
    pace: float | None = None,
    sample_interval: float = 1.0,
    shards: int = 1,
    retry_governance: bool | None = None,
    setup: Callable[[SimCluster], None] | None = None,
) -> dict[str, Any]:
    """Run ``sc`` to the end and return the summary (see :func:`summarize`).

    ``setup`` is called with the simulated cluster once the scenario's nodes and objects
    exist and before the first arrival: it may create objects and schedule calls of its own
    on ``sim.loop`` (a recording's replay, :mod:`kubesched.record.replay`, does both).

    ``retry_governance`` forces NodeResourcesFit's ``retryGovernance`` on or off in every
    profile (None: as the scenario's configuration says; :mod:`kubesched.sim.governance`).

    ``shards`` > 1 runs the parallel scheduler (:mod:`kubesched.parallel`): the summary then
    has a ``parallel`` section (binder conflicts, per-shard results).

    ``metrics`` receives the scheduler's metrics (serve them while the run goes); a
    :class:`~kubesched.sim.timeline.Timeline` samples every ``sample_interval`` simulated
    seconds, syncing the metrics' gauges, and with ``pace`` the run is slowed to ``pace``
    simulated seconds per wall second.
    """
    check_workload_objects(sc)
    config = load_config(sc.config, known_plugins=known_plugin_names(), gates=sc.gates)
    if retry_governance is not None:
        config = governance.with_retry_governance(config, retry_governance)
    sim = SimCluster(config, seed=sc.seed, timing=sc.timing, metrics=metrics, shards=shards)
    try:
        return _run(sc, sim, progress, pace, sample_interval, setup)
    finally:
        factory.close(sim.scheduler)


def _run(
    sc: Scenario,
    sim: SimCluster,
    progress: ProgressFn | None,
    pace: float | None,
    sample_interval: float,
    setup: Callable[[SimCluster], None] | None = None,
) -> dict[str, Any]:
    releases = governance.ReleaseLog(sim.loop.clock)
    sim.api.watch(releases)
    for node in sc.nodes:
        sim.api.create_node(node)
    for obj in sc.others:
        sim.api.apply_object(obj)
    jobs = JobLayer(
        sim,
        sc.others,
        [a.pod for a in sc.arrivals],
        admission=sc.admission,
        fair_sharing=sc.fair_sharing,
        kueue=sc.kueue,
        warn=False,  # the scenario's parse warned once already
    )
    last_arrival = sc.arrivals[-1].at if sc.arrivals else 0.0
    end = max(sc.duration, last_arrival) + sc.drain
    sim.start_volumes(sc.provisioning, end)
    lifetimes: dict[str, float] = {}
    startups: dict[str, float] = {}

    def arrive(a: scenario.Arrival) -> Callable[[], None]:
        pod = a.pod

        def create() -> None:
            if a.lifetime is not None:
                lifetimes[pod.key] = a.lifetime
            startups[pod.key] = a.startup
            sim.api.create_pod(jobs.prepare(pod))

        return create

    def on_bound(pod: api.Pod) -> None:
        origin = jobs.origin(pod.key)  # a recreated Pod runs its own lifetime
        sim.loop.call_later(startups.get(origin, 0.0), lambda: sim.api.pod_ready(pod))
        life = lifetimes.get(origin)
        if life is not None:
            sim.loop.call_later(life, lambda: sim.api.delete_pod(pod, "Completed", grace=0))

    sim.api.on_bound.append(on_bound)
    if setup is not None:
        setup(sim)
    for a in sc.arrivals:
        sim.loop.call_at(a.at, arrive(a))
    wall0 = time.perf_counter()
    tl = timeline.Timeline(sim, interval=sample_interval, pace=pace)
    stats = sim.api.stats

    def where(now: float) -> Progress:
        made = sum(sim.scheduler.attempts.values())
        wall = time.perf_counter() - wall0
        bound, created = len(stats.bound_at), len(stats.created_at)
        return Progress(now, end, bound, created, len(sc.arrivals), made, wall)

    def report() -> None:
        if progress is not None:
            progress(where(min(sim.loop.now, end)))

    tl.on_sample = report
    tl.start(until=end)
    drills = faults.install(
        sim, sc.faults, seed=sc.seed, until=end, interval=sample_interval, jobs=jobs
    )
    sim.run(until=end)
    sim.scheduler.sync_metrics()
    wall = time.perf_counter() - wall0
    if progress is not None:
        progress(where(end))
    out = summarize(sc, sim, wall, end, tl, jobs)
    out["retryWaited"] = governance.waited(
        sim.scheduler.pod_attempts, stats.created_at, stats.bound_at, releases.times
    )
    if drills is not None:  # per drill: Pods affected, recovery; and the invariants faults test
        out["faults"], extra = drills.report(out)
        out["invariants"].update(extra)
    held = storagecheck.storage_invariants(sim.api.objects, sim.api.pods.values(), sim.api.nodes)
    if held is not None:  # a run with storage: its four invariants (none without)
        out["invariants"].update(held)
    parallel = factory.summary(sim.scheduler)
    if parallel is not None:
        out["parallel"] = parallel
    return out


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return float(np.percentile(np.asarray(values), q))


MOST_RETRIED = 5
"""How many Pods the summary names as causing the most unschedulable attempts."""


def most_retried(
    attempts: Mapping[str, int], bound_at: Mapping[str, float]
) -> list[dict[str, Any]]:
    """The Pods with the most failed attempts (every attempt of a Pod still Pending, all but
    the last of a bound one), most first: a low success ratio is often a handful of Pods
    retried on every cluster event (``retryGovernance`` answers that)."""
    failed = ((k, n - (1 if k in bound_at else 0)) for k, n in attempts.items())
    top = sorted((kv for kv in failed if kv[1] > 0), key=lambda kv: (-kv[1], kv[0]))
    return [{"pod": k, "failedAttempts": n, "bound": k in bound_at} for k, n in top[:MOST_RETRIED]]


def summarize(
    sc: Scenario,
    sim: SimCluster,
    wall: float,
    end: float,
    tl: timeline.Timeline | None = None,
    jobs: JobLayer | None = None,
) -> dict[str, Any]:
    """The dashboard numbers and invariant checks of a finished run, with what the HTML
    report plots (:func:`observations`)."""
    s = sim.scheduler
    stats = sim.api.stats
    submitted = [  # a Pending Pod for another scheduler is not ours to place, as upstream
        a.pod.key for a in sc.arrivals if a.pod.node_name or s.responsible_for(a.pod)
    ]
    bound = [k for k in submitted if k in stats.bound_at]
    waits = [stats.bound_at[k] - stats.created_at[k] for k in bound if k in stats.created_at]
    pending = s.queue.pending_pods()
    attempts = {r: int(s.attempts.get(r, 0)) for r in ("scheduled", "unschedulable", "error")}
    span = max((stats.bound_at[k] for k in bound), default=0.0) - min(
        (stats.created_at[k] for k in bound), default=0.0
    )
    still_pending = [k for k in submitted if k in sim.api.pods and not sim.api.pods[k].node_name]
    gated = {  # gated, or held until its PodGroup is observed
        qp.pod.key
        for qp in s.queue.pending_pod_infos()
        if qp.gated or s.queue.queue_of(qp.pod.key) == "incomplete"
    }
    no_reason = [k for k in still_pending if k not in s.failures and k not in gated]
    current = jobs.current if jobs is not None else str  # an evicted Pod's replacement
    lost = [  # a preemption victim is accounted for, bound or not (deleted by design)
        k
        for k in submitted
        if k not in stats.bound_at
        and current(k) not in stats.bound_at
        and current(k) not in sim.api.pods
        and current(k) not in stats.preempted
    ]
    held = jobs.held_past_timeout() if jobs is not None else None
    out = {
        "scenario": sc.name,
        "seed": sc.seed,
        "kubernetesVersion": sc.gates.version,
        "nodes": len(sim.api.nodes),
        "podsSubmitted": len(submitted),
        "podsForOtherSchedulers": len(sc.arrivals) - len(submitted),
        "mostRetried": most_retried(s.pod_attempts, stats.bound_at),
        "podsScheduled": len(bound),
        "podsPending": len(still_pending),
        "attempts": attempts,
        "successRatio": round(attempts["scheduled"] / max(1, sum(attempts.values())), 4),
        "virtualSeconds": round(end, 3),
        "scheduledPodsPerVirtualSecond": round(len(bound) / span, 2) if span > 0 else None,
        "wallSeconds": round(wall, 3),
        "schedulerWallSeconds": round(sim.wall_seconds, 3),
        "attemptsPerWallSecond": round(sum(attempts.values()) / max(sim.wall_seconds, 1e-9), 1),
        "queueingSeconds": {
            "p50": _round(_percentile(waits, 50)),
            "p99": _round(_percentile(waits, 99)),
        },
        "queueingSecondsAllSubmitted": _censored(waits, still_pending, stats.created_at, end),
        "preemptionLatencySeconds": stats.preemption_latency(),
        "podStartupSeconds": startup.segments(
            startup.Timestamps(
                stats.created_at, stats.ungated_at, sim.scheduled_at, stats.bound_at, stats.ready_at
            )
        ),
        "pendingPods": pending,
        "utilization": utilization(sim),
        "invariants": {
            "overcommittedNodes": sim.api.overcommitted(),
            "boundTwice": sim.api.bound_twice(),
            "lostPods": lost,
            "pendingWithoutReason": no_reason,
            "cacheOvercommitted": s.cluster.overcommitted_nodes(),
        },
        **observations(sc, sim, end, submitted, tl),
        **(jobs.report(a.pod for a in sc.arrivals) if jobs is not None else {}),
    }
    if held is not None:  # a run with a gang plugin: no partial gang past its timeout
        out["invariants"]["gangsHeldIncompletePastTimeout"] = held
    return out


def observations(
    sc: Scenario, sim: SimCluster, end: float, submitted: list[str], tl: timeline.Timeline | None
) -> dict[str, Any]:
    """What the report needs beyond the dashboard numbers: the run's configuration, the
    Pods still waiting, latency histograms read back from the metrics, the time series."""
    s = sim.scheduler
    m = s.metrics
    cfg = s.config
    return {
        "config": {
            "profiles": [p.scheduler_name for p in cfg.profiles],
            "percentageOfNodesToScore": cfg.percentage_of_nodes_to_score,
            "parallelism": cfg.parallelism,
            "podInitialBackoffSeconds": cfg.pod_initial_backoff_seconds,
            "podMaxBackoffSeconds": cfg.pod_max_backoff_seconds,
            "retryGovernance": governance.governed(cfg),
            "durationSeconds": sc.duration,
            "drainSeconds": sc.drain,
            "cycleSeconds": sc.timing.cycle_seconds,
            "costModel": "constant" if sc.timing.cost_model is None else "upstream",
            "clientQPS": sc.timing.client_qps,
            "bindLatencySeconds": sc.timing.bind_latency,
            "watchDelaySeconds": sc.timing.watch_delay,
        },
        "waiting": timeline.waiting_pods(sim, submitted, end),
        "latency": {
            "attemptSeconds": m.histogram(
                "scheduler_scheduling_attempt_duration_seconds", by="result"
            ),
            "extensionPointSeconds": m.histogram(
                "scheduler_framework_extension_point_duration_seconds", by="extension_point"
            ),
            "pluginSeconds": m.histogram(
                "scheduler_plugin_execution_duration_seconds", by="plugin"
            ),
            "sliSeconds": m.histogram("scheduler_pod_scheduling_sli_duration_seconds", by=""),
        },
        "timeline": tl.to_dict() if tl is not None else None,
    }


def _censored(
    waits: list[float], pending: list[str], created_at: dict[str, float], end: float
) -> dict[str, Any]:
    """Queueing time over every submitted Pod, a Pod still Pending counted at its age when
    the run ended (a lower bound): the same denominator whatever a variant left Pending."""
    ages = waits + [end - created_at[k] for k in pending if k in created_at]
    return {
        "pods": len(ages),
        "p50": _round(_percentile(ages, 50)),
        "p99": _round(_percentile(ages, 99)),
    }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def utilization(sim: SimCluster) -> dict[str, float]:
    """Requested / allocatable per resource over all nodes at the end of the run (percent)."""
    t = sim.scheduler.cluster.nodes
    rows = np.flatnonzero(t.alive)
    out: dict[str, float] = {}
    for name in (api.CPU, api.MEMORY, "nvidia.com/gpu"):
        alloc, used = t.resource_values(name, rows)
        if int(alloc.sum()):
            out[name] = round(100.0 * int(used.sum()) / int(alloc.sum()), 2)
    return out


def invariants_hold(summary: dict[str, Any]) -> bool:
    """Whether every invariant list in the summary is empty."""
    return not any(summary["invariants"].values())
