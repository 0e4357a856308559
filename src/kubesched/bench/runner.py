"""Run scheduler_perf workloads against the real scheduler in wall-clock time.

:func:`run_config` loads a config, picks workloads (case, workload, labels), resolves their
params (every selected workload before running any), and runs each with a fresh scheduler,
API server and client; :func:`run_workload` runs one.  The ops follow upstream's
``executor.go``:

- ``createNodes`` names nodes ``generateName`` + 5 random characters (seeded) and applies
  ``labelNodePrepareStrategy`` round-robin over the op's nodes in name order;
- ``createPods`` writes to ``namespace-<op index>`` unless the op names a namespace; with
  ``collectMetrics`` it is a measured phase; it waits until as many Pods of the namespace are
  bound as it creates (any of them, as upstream counts), or records them for a later
  ``barrier`` with ``skipWaitToCompletion``; ``steadyState`` deletes each bound Pod and
  creates a new one (the template's Pod 0 of 1, as upstream) until ``duration`` has passed;
- ``barrier`` waits until the recorded Pods of its namespaces are Scheduled (or Attempted);
- the resourceclaim controller runs beside the scheduler (a claim per Pod and template
  entry, released when the Pod goes: :mod:`kubesched.sim.resourceclaims`); no driver
  prepares devices (upstream's integration cluster has no kubelet);
- ``churn``, and ``deletePods`` with ``skipWaitToCompletion``, run in the background until
  the workload ends;
- a measured phase starts with the setup's objects frozen out of the garbage collector and
  the collector's thresholds of a shard process
  (:data:`~kubesched.parallel.shardmain.GC_THRESHOLDS`; the caller's are restored when the
  workload ends): its young collections then walk each new Pod once, instead of the middle
  and full ones walking every Pod placed since the phase began again and again.

``featureGates`` (the test case's, then the workload's, on top of ``--feature-gates``) are
checked against the run's Kubernetes version as upstream's runner sets them
(:func:`workload_gates`): an unknown gate, a locked one set away from its default, a
dependency disabled, is refused before any workload runs, as upstream's test fails; the
accepted gates are the scheduler's (its configuration is loaded under them, so the default
profile is that version's under those gates).  :func:`scheduler_options` is the one place
that turns gates and options into ``Scheduler`` arguments (``OpportunisticBatching`` ->
``batching``, the hook for result reuse across equivalent Pods).
"""

from __future__ import annotations

import cProfile
import gc
import logging
import resource
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.errors import InputError
from kubesched.bench import background, collect, declaredfeatures, objects
from kubesched.bench import params as p
from kubesched.bench.api import SchedulerClient
from kubesched.bench.config import TestCase, Workload, load_test_cases
from kubesched.bench.loop import Loop, Phase, WorkloadError
from kubesched.bench.ops import Ops
from kubesched.bench.results import API, ATTEMPT_METRIC, MEMORY, ApiModel, WorkloadResult
from kubesched.config import featuregates
from kubesched.config.featuregates import FeatureGates
from kubesched.config.load import load_config
from kubesched.config.versions import SUPPORTED_VERSIONS
from kubesched.metrics import SchedulerMetrics
from kubesched.parallel import factory
from kubesched.parallel.shardmain import GC_THRESHOLDS
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim.apiserver import SimApiServer
from kubesched.sim.engine import WallClock
from kubesched.sim.resourceclaims import ResourceClaimController

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 600.0
"""Seconds an op may wait (upstream: 10 minutes for Pods to be scheduled)."""
GATES_HONOURED = {"OpportunisticBatching": "batching"}
"""Feature gates set explicitly that kubesched maps onto a ``Scheduler`` argument (every
gate reaches the plugins through ``Handle.feature_gates``)."""
EMULATED_WHEN_OFF = {
    "1.34": ("SchedulerQueueingHints", "1.33"),
    "1.35": ("SchedulerQueueingHints", "1.33"),
    "1.36": ("SchedulerQueueingHints", "1.33"),
    "1.37": ("NodeDeclaredFeatures", "1.36"),
}
"""Upstream's runner (``test/integration/scheduler_perf``) emulates an older release when a
workload turns this locked gate off, so that the setting is allowed: per version, the gate
and the release emulated."""

ProgressFactory = Callable[[str, int], Callable[[int], None]]
"""``factory(label, total)`` returns ``update(done)`` for one workload's progress bar."""


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How to run workloads."""

    binding: str = MEMORY
    """``memory`` (binds apply at once) or ``api`` (modelled API server)."""
    api_latency: float = 0.0
    """Seconds each API call takes in ``api`` mode."""
    client_qps: float | None = None
    """Client rate limit in ``api`` mode; None: the scheduler config's (default 50)."""
    client_burst: int | None = None
    """Client burst in ``api`` mode; None: the scheduler config's (default 100)."""
    timeout: float = DEFAULT_TIMEOUT
    seed: int = 0
    batching: bool | None = None
    """Result reuse across equivalent Pods; None: the gate if set, else the default."""
    profiler: cProfile.Profile | None = None
    """Enabled during every measured phase."""
    progress: ProgressFactory | None = None
    shards: int = 1
    """1: the serial scheduler; N >= 2: dispatcher, binder and N shard processes
    (:mod:`kubesched.parallel`)."""
    routing: str = "all"
    """With shards: ``auto`` (cheap Pods scheduled by the coordinator) or ``all``."""
    metrics: SchedulerMetrics | None = None
    """Registry every workload's scheduler records into, its gauges synced every second
    (``--metrics-port`` / ``--metrics-file``); None: a private one per workload, no syncing."""
    gates: FeatureGates = field(default_factory=FeatureGates)
    """The Kubernetes version and ``--feature-gates`` (each workload's ``featureGates`` go on
    top: :func:`workload_gates`)."""


def workload_gates(base: FeatureGates, settings: Mapping[str, bool], path: str) -> FeatureGates:
    """The gates a workload runs under: ``base`` (the run's version and ``--feature-gates``)
    with ``settings`` on top, checked at that version as upstream's runner sets them; a
    refusal is an :class:`InputError` at ``path`` with upstream's message.

    Where the runner emulates an older release (:data:`EMULATED_WHEN_OFF`), the gates are
    those of that release when kubesched has it (checked without gate dependencies: the newer
    binary checks its own dependency table, which kubesched does not keep), else (v1.33) the
    locked gate's setting is allowed and the rest checked at the run's version."""
    merged = {**dict(base.settings), **settings}
    version = base.version
    locked, emulated = EMULATED_WHEN_OFF.get(version, ("", ""))
    if merged.get(locked) is False:
        if emulated in SUPPORTED_VERSIONS:
            return featuregates.with_settings(emulated, merged, path=path, dependencies=False)
        else:
            rest = {k: v for k, v in merged.items() if k != locked}
            checked = featuregates.with_settings(version, rest, path=path)
            return FeatureGates(
                version, tuple(sorted({**dict(checked.settings), locked: False}.items()))
            )
    return featuregates.with_settings(version, merged, path=path)


def scheduler_options(gates: FeatureGates, options: RunOptions) -> dict[str, Any]:
    """``Scheduler`` keyword arguments for a workload's gates and options."""
    kwargs: dict[str, Any] = {}
    for gate, value in gates.settings:
        if gate in GATES_HONOURED:
            kwargs[GATES_HONOURED[gate]] = value
    if options.batching is not None:
        kwargs["batching"] = options.batching
    return kwargs


def run_config(
    path: str,
    *,
    case: str | None = None,
    workload: str | None = None,
    labels: tuple[str, ...] = (),
    options: RunOptions = RunOptions(),
    on_result: Callable[[WorkloadResult], None] | None = None,
) -> list[WorkloadResult]:
    """Run the selected workloads of the config at ``path`` (``both`` runs each twice)."""
    cases = load_test_cases(path)
    chosen = p.select(cases, case=case, workload=workload, labels=labels)
    if not chosen:
        err = p.nothing_selected(cases, case=case, workload=workload, labels=labels)
        raise err.with_file(path)
    plans = [(tc, w, p.resolve(tc, w)) for tc, w in chosen]
    for tc, w in chosen:  # refused before anything runs, as upstream's test would fail
        check = {**tc.feature_gates, **w.feature_gates}
        try:
            workload_gates(options.gates, check, f"{tc.name}/{w.name}.featureGates")
        except InputError as err:
            raise err.with_file(path) from None
    modes = (MEMORY, API) if options.binding == "both" else (options.binding,)
    results = []
    for tc, w, steps in plans:
        for mode in modes:
            opts = RunOptions(**{**_as_dict(options), "binding": mode})
            result = run_workload(tc, w, steps, opts)
            results.append(result)
            if on_result is not None:
                on_result(result)
    return results


def _as_dict(options: RunOptions) -> dict[str, Any]:
    return {name: getattr(options, name) for name in RunOptions.__slots__}


def run_workload(
    case: TestCase, workload: Workload, steps: list[p.Step], options: RunOptions
) -> WorkloadResult:
    """Run one workload from a fresh cluster; never raises for a workload failure."""
    run = _WorkloadRun(case, workload, steps, options)
    try:
        run.run()
    except WorkloadError as err:
        run.result.error = str(err)
    finally:
        run.finish()
    return run.result


class _WorkloadRun(Ops):
    """The state of one workload while its steps run."""

    def __init__(
        self, case: TestCase, workload: Workload, steps: list[p.Step], options: RunOptions
    ) -> None:
        self.case, self.workload, self.steps, self.options = case, workload, steps, options
        gates = workload_gates(
            options.gates,
            {**case.feature_gates, **workload.feature_gates},
            f"{case.name}/{workload.name}.featureGates",
        )
        self.gates = gates
        cfg = load_config(
            case.scheduler_config_path, known_plugins=known_plugin_names(), gates=gates
        )
        clock = time.perf_counter
        wall = WallClock(clock)  # no kubelet, no controllers: upstream's integration cluster
        self.api = SimApiServer(wall, seed=options.seed, lifecycle=False, record=False)
        cc = cfg.client_connection
        qps = options.client_qps if options.client_qps is not None else cc.qps
        burst = options.client_burst if options.client_burst is not None else cc.burst
        modelled = options.binding == API
        self.client = SchedulerClient(
            self.api, clock, modelled=modelled, latency=options.api_latency, qps=qps, burst=burst
        )
        self.mock = declaredfeatures.mock_features(workload)
        if self.mock is not None:
            extra: dict[str, Any] = {"registry": self.mock.registry(gates.version)}
        else:
            extra = {}
        self.scheduler = factory.make_scheduler(
            cfg,
            shards=options.shards,
            routing=options.routing,
            clock=clock,
            api_client=self.client,
            seed=options.seed,
            submit_binding=self.client.submit_binding,
            metrics=options.metrics,
            **scheduler_options(gates, options),
            **extra,
        )
        # the scheduler first, then the controllers (upstream's informers are independent;
        # the scheduler hearing a Pod before its claim exists is the common interleaving)
        self.api.watch(self.scheduler)
        group_claims = gates.enabled("DRAWorkloadResourceClaims")
        self.api.watch(  # no kubelet
            ResourceClaimController(self.api, driver=False, group_claims=group_claims)
        )
        self.total = sum(
            s.count for s in steps if isinstance(s, p.CreatePods) and not s.steady_state
        )
        self._update: Callable[[int], None] | None = None
        if options.progress is not None:
            self._update = options.progress(f"{case.name}/{workload.name}", self.total)
        self.loop = Loop(
            self.scheduler,
            self.api,
            self.client,
            wall,
            self._tick_progress,
            sync_metrics=options.metrics is not None,
        )
        self.names = objects.Names(options.seed)
        self.writer = background.Writer(self.api, self.names)
        self.known: dict[str, int] = {}
        """Upstream ``numPodsScheduledPerNamespace``: Pods a barrier waits for, by namespace."""
        self.measured = sum(1 for s in steps if isinstance(s, p.StopCollecting)) + sum(
            1 for s in steps if isinstance(s, p.CreatePods) and s.collect_metrics
        )
        mode = ApiModel(API, options.api_latency, qps, burst) if modelled else ApiModel()
        self.result = WorkloadResult(case.name, workload.name, mode, threshold=workload.threshold)
        self.result.settings = {
            "params": dict(workload.params),
            "featureGates": {**case.feature_gates, **workload.feature_gates},
            "kubernetesVersion": gates.version,
            "schedulerConfig": case.scheduler_config_path or "(default)",
            "seed": options.seed,
            "timeout": options.timeout,
            "shards": options.shards,
            "shardRouting": options.routing,
            "batching": options.batching,
        }
        self._gc_thresholds: tuple[int, int, int] | None = None
        """The collector's thresholds before the first measured phase raised them."""
        self.start = clock()

    def _tick_progress(self) -> None:
        if self._update is not None:
            self._update(min(self.api.stats.binds, self.total))

    # ------------------------------------------------------------------ the steps
    def run(self) -> None:
        for step in self.steps:
            try:
                getattr(self, "_" + type(step).__name__)(step)
            except WorkloadError as err:
                raise WorkloadError(f"op {step.index}: {err}") from None

    def finish(self) -> None:
        if self.loop.phase is not None:
            self._stop()
        self.loop.background.clear()
        gc.unfreeze()
        if self._gc_thresholds is not None:
            gc.set_threshold(*self._gc_thresholds)
            self._gc_thresholds = None
        r = self.result
        r.pods_bound = self.api.stats.binds
        r.pods_created = self.api.stats.creates
        r.pods_unbound = sum(1 for pod in self.api.pods.values() if not pod.node_name)
        r.wall_seconds = time.perf_counter() - self.start
        r.attempts = {k: int(v) for k, v in self.scheduler.attempts.items()}
        r.api.calls, r.api.max_wait = self.client.calls, self.client.max_wait
        r.api.throttled_calls = self.client.throttled_calls
        r.peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        r.parallel = factory.summary(self.scheduler)
        if self.options.metrics is not None:
            self.scheduler.sync_metrics()
        factory.close(self.scheduler)
        self._tick_progress()

    # ------------------------------------------------------------------ measured phases
    def _start(
        self, name: str, namespaces: tuple[str, ...], selector: Mapping[str, str] | None
    ) -> None:
        if self.loop.phase is not None:
            raise WorkloadError("metrics collection is overlapping")
        gc.collect()
        gc.freeze()  # setup objects stay out of the collector's way while measuring
        if self._gc_thresholds is None:  # as a shard process: fewer passes over survivors
            self._gc_thresholds = gc.get_threshold()
            gc.set_threshold(*GC_THRESHOLDS)
        label = f"{self.case.name}/{self.workload.name}"
        if self.measured > 1:
            label += f"/{name}"
        now = time.perf_counter()
        before = collect.snapshot(self.scheduler.metrics, [h[0] for h in collect.HISTOGRAMS])
        self.loop.phase = Phase(
            label, collect.ThroughputCollector(namespaces, selector, now), before, now
        )
        if self.options.profiler is not None:
            self.options.profiler.enable()

    def _stop(self) -> None:
        phase = self.loop.phase
        assert phase is not None
        if self.options.profiler is not None:
            self.options.profiler.disable()
        self.loop.phase = None
        phase.end = time.perf_counter()
        items = []
        data, short = phase.collector.summary()
        if data is not None:
            items.append(collect.throughput_item(data, phase.name))
        c = phase.collector
        self.result.throughput_samples[phase.name] = list(
            zip(c.sample_times, c.samples, strict=True)
        )
        self.result.short_run = self.result.short_run or short
        if phase.attempts:
            items.append(collect.duration_item(phase.attempts, ATTEMPT_METRIC, phase.name))
        after = collect.snapshot(self.scheduler.metrics, [h[0] for h in collect.HISTOGRAMS])
        items.extend(collect.histogram_items(phase.before, after, phase.name))
        w = self.workload
        self.result.failures.extend(collect.apply_threshold(items, w.threshold, w.selector))
        self.result.items.extend(items)
