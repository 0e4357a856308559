"""Fault drills: things breaking during a simulated run, declared in the scenario.

``spec.faults`` is a list; every entry has ``kind``, ``atSeconds`` (virtual time it starts),
optional ``durationSeconds`` (for windows) and ``name``, plus the kind's own fields:

=================  ==========================================================================
kind               fields (defaults)
=================  ==========================================================================
bindFailures       ``rate`` (0.2): share of binds the API server fails with 500 in the window
apiStorm           ``code`` (429 or 500, default 429), ``rate`` (1.0): binds fail with
                   ``code`` and status updates (``PodScheduled=False``) are dropped
latencySpike       ``bindLatencySeconds`` (0.5), ``watchDelaySeconds`` (unchanged): the API
                   path is that slow during the window
nodeLoss           ``nodes`` (names) or ``count`` (1, a seeded pick), ``recreatePods`` (true),
                   ``restoreAfterSeconds`` (never): nodes deleted with their Pods
nodeReregister     ``nodes`` or ``count`` (1), a window: the Node objects are deleted while
                   their Pods keep running, and created again under the same names when the
                   window ends (a kubelet re-registering): the Pods count there again
zoneLoss           ``zone``, ``recreatePods``, ``restoreAfterSeconds``: every node of the zone
leaderFailover     ``takeoverSeconds`` (15, the lease duration): the scheduler dies; a standby
                   starts with an empty cache, lists and watches the API server
shardCrash         ``shard`` (0): a shard process of the parallel scheduler dies
bulkRelease        ``fraction`` (0.5) or ``count``, ``selector`` (labels): bound Pods
                   deleted at once (whole gangs together), freeing their resources
=================  ==========================================================================

Lost Pods are recreated by "their controller" at once (``recreatePods``): same spec, name
``<name>-r<k>``, unbound; replacements run until the end.  The dead leader's binding requests
already sent still reach the API server, which refuses a second bind of the same Pod (409):
the standby may try to place a Pod the old leader had assumed, and must not bind it twice.

:func:`install` arms the drills on a :class:`~kubesched.sim.driver.SimCluster` before it
runs; :meth:`Drills.report` gives per drill the Pods affected, the recovery time
(:mod:`kubesched.sim.recovery`) and what it saw, and the invariant lists to merge into the
run's.  Faults wrap the API server's ``bind`` and ``pod_scheduling_failed`` on the instance.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.admission import gang
from kubesched.api import objects as api
from kubesched.parallel import factory
from kubesched.sim import recovery
from kubesched.sim.apiserver import ApiError
from kubesched.sim.driver import SimCluster
from kubesched.sim.faultspec import Fault
from kubesched.sim.jobs import JobLayer, gang_plugin_timeout

ZONE_LABEL = "topology.kubernetes.io/zone"


@dataclass(slots=True)
class Drill:
    """One armed fault: what it touched and what it saw."""

    fault: Fault
    affected: set[str] = field(default_factory=set)
    notes: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None
    end: float = 0.0
    """When the disturbance itself is over (the start for instant faults)."""

    def active(self, now: float) -> bool:
        """Whether ``now`` is inside the fault's window."""
        return self.fault.at <= now < self.fault.at + self.fault.duration


BindWatcher = Callable[[api.Pod, str, ApiError | None], None]


class _ApiTap:
    """Wraps the API server's ``bind`` and ``pod_scheduling_failed`` on the instance."""

    def __init__(self, sim: SimCluster, seed: int) -> None:
        self.sim = sim
        self.rng = np.random.default_rng([seed, 7])
        self.storms: list[Drill] = []
        self.watchers: list[BindWatcher] = []
        self.inner_bind = sim.api.bind
        self.inner_status = sim.api.pod_scheduling_failed
        setattr(sim.api, "bind", self.bind)  # noqa: B010 - the instance's own method, wrapped
        setattr(sim.api, "pod_scheduling_failed", self.status)  # noqa: B010

    def _storm(self) -> Drill | None:
        now = self.sim.loop.now
        return next((d for d in self.storms if d.active(now)), None)

    def bind(self, pod: api.Pod, node_name: str) -> None:
        storm = self._storm()
        if storm is not None and self.rng.random() < float(storm.fault.params["rate"]):
            storm.affected.add(pod.key)
            storm.notes["failedBinds"] = storm.notes.get("failedBinds", 0) + 1
            code = int(storm.fault.params["code"])
            raise ApiError(code, "Too Many Requests" if code == 429 else "Internal Server Error")
        try:
            self.inner_bind(pod, node_name)
        except ApiError as e:
            for w in self.watchers:
                w(pod, node_name, e)
            raise
        for w in self.watchers:
            w(pod, node_name, None)

    def status(self, pod: api.Pod, reason: str, message: str) -> None:
        storm = self._storm()
        if storm is not None and self.rng.random() < float(storm.fault.params["rate"]):
            storm.notes["droppedStatusUpdates"] = storm.notes.get("droppedStatusUpdates", 0) + 1
            return  # the scheduler logs a failed status patch and goes on (upstream)
        self.inner_status(pod, reason, message)


class Drills:
    """Every drill of a run, armed on ``sim`` (see :func:`install`)."""

    def __init__(
        self,
        sim: SimCluster,
        faults: list[Fault],
        *,
        seed: int,
        until: float,
        interval: float = 1.0,
        jobs: JobLayer | None = None,
    ) -> None:
        self.sim = sim
        self.jobs = jobs
        self.rng = np.random.default_rng([seed, 11])
        self.tap = _ApiTap(sim, seed)
        self.sampler = recovery.Sampler(sim, interval)
        self.sampler.start(until)
        self.replacements: set[str] = set()
        self._tallies: list[Callable[[], None]] = []
        self.drills = [Drill(f, end=f.at + f.duration) for f in faults]
        for d in self.drills:
            sim.loop.call_at(d.fault.at, self._starter(d), priority=-2)

    def _starter(self, d: Drill) -> Callable[[], None]:
        return lambda: getattr(self, "_" + d.fault.kind)(d)

    # ------------------------------------------------------------------ the drills
    def _bindFailures(self, d: Drill) -> None:
        api_server = self.sim.api
        before = api_server.bind_failure_rate
        api_server.bind_failure_rate = float(d.fault.params["rate"])

        def watch(pod: api.Pod, node: str, err: ApiError | None) -> None:
            if err is not None and err.code == 500 and d.active(self.sim.loop.now):
                d.affected.add(pod.key)

        def stop() -> None:
            api_server.bind_failure_rate = before
            d.notes["failedBinds"] = api_server.stats.bind_errors - errors0

        errors0 = api_server.stats.bind_errors
        self.tap.watchers.append(watch)
        self.sim.loop.call_at(d.end, stop, priority=-2)

    def _apiStorm(self, d: Drill) -> None:
        self.tap.storms.append(d)

    def _latencySpike(self, d: Drill) -> None:
        sim, prm = self.sim, d.fault.params
        timing, delay = sim.timing, sim.api.watch_delay
        spike = float(prm["bindLatencySeconds"])
        sim.timing = dataclasses.replace(timing, bind_latency=spike)
        if prm["watchDelaySeconds"] is not None:
            sim.api.watch_delay = float(prm["watchDelaySeconds"])

        def watch(pod: api.Pod, node: str, err: ApiError | None) -> None:
            if d.fault.at + spike <= self.sim.loop.now <= d.end + spike:
                d.affected.add(pod.key)

        def stop() -> None:
            sim.timing = dataclasses.replace(sim.timing, bind_latency=timing.bind_latency)
            sim.api.watch_delay = delay

        self.tap.watchers.append(watch)
        sim.loop.call_at(d.end, stop, priority=-2)

    def _pick(self, prm: Mapping[str, Any]) -> list[str]:
        """The nodes a drill names, or ``count`` of them drawn with the drills' seed."""
        names = prm["nodes"]
        if names is None:
            pool = sorted(self.sim.api.nodes)
            k = min(int(prm["count"]), len(pool))
            names = [pool[int(i)] for i in sorted(self.rng.choice(len(pool), k, replace=False))]
        return [n for n in names if n in self.sim.api.nodes]

    def _nodeLoss(self, d: Drill) -> None:
        self._lose(d, self._pick(d.fault.params))

    def _nodeReregister(self, d: Drill) -> None:
        api_server = self.sim.api
        gone = [api_server.nodes[n] for n in self._pick(d.fault.params)]
        kept = 0
        for node in gone:
            kept += len(api_server.delete_node(node.name, keep_pods=True))
        d.notes.update(nodesReregistered=len(gone), podsKept=kept)

        def back() -> None:
            for node in gone:
                if node.name not in api_server.nodes:
                    api_server.create_node(node)

        self.sim.loop.call_at(d.fault.at + d.fault.duration, back, priority=-2)

    def _zoneLoss(self, d: Drill) -> None:
        zone = d.fault.params["zone"]
        nodes = self.sim.api.nodes
        self._lose(d, sorted(n for n, node in nodes.items() if node.labels.get(ZONE_LABEL) == zone))

    def _lose(self, d: Drill, names: list[str]) -> None:
        api_server, prm = self.sim.api, d.fault.params
        lost = [api_server.nodes[n] for n in names]
        victims: list[api.Pod] = []
        for n in names:
            victims += api_server.delete_node(n)
        d.affected.update(p.key for p in victims)
        d.notes.update(nodesLost=len(names), podsLost=len(victims))
        if prm["recreatePods"]:
            self._recreate(d, victims)
        restore = prm["restoreAfterSeconds"]
        if restore is not None:

            def back() -> None:
                for node in lost:
                    if node.name not in api_server.nodes:
                        api_server.create_node(node)

            self.sim.loop.call_at(d.fault.at + float(restore), back, priority=-2)

    def _recreate(self, d: Drill, victims: list[api.Pod]) -> None:
        """The controllers' answer: an unbound copy of every lost Pod."""
        keys = []
        for p in victims:
            k = 1
            while f"{p.namespace}/{p.name}-r{k}" in self.sim.api.stats.created_at:
                k += 1
            name = f"{p.name}-r{k}"
            fresh = dataclasses.replace(
                p,
                name=name,
                uid=f"{p.uid or p.key}-r{k}",
                labels=dict(p.labels),
                node_name="",
                phase="Pending",
                nominated_node_name="",
                start_time=None,
                creation_timestamp=self.sim.loop.now,
            )
            self.sim.api.create_pod(fresh)
            keys.append(fresh.key)
        self.replacements.update(keys)
        d.notes["replacements"] = d.notes.get("replacements", 0) + len(keys)

    def _leaderFailover(self, d: Drill) -> None:
        sim = self.sim
        d.end = d.fault.at + float(d.fault.params["takeoverSeconds"])
        old = sim.scheduler
        in_flight = sorted(k for k, r in old.cluster.pods.items() if r.assumed)
        pending = sorted(k for k, p in sim.api.pods.items() if not p.node_name)
        d.affected.update(in_flight, pending)
        d.notes.update(assumedInFlight=len(in_flight), pendingAtKill=len(pending))
        sim.kill_scheduler()
        landed, refused = [0], [0]

        def watch(pod: api.Pod, node: str, err: ApiError | None) -> None:
            if err is None and pod.key in in_flight:
                landed[0] += 1
            elif err is not None and err.code == 409:
                refused[0] += 1

        def takeover() -> None:
            sim.start_standby()
            if self.jobs is not None:  # gang bookkeeping follows the new leader's cache
                self.jobs.holds.assigned.clear()
                sim.scheduler.cluster.observe(self.jobs.holds)

        def tally() -> None:
            d.notes.update(inFlightBindsLanded=landed[0], secondBindsRefused=refused[0])

        self.tap.watchers.append(watch)
        sim.loop.call_at(d.end, takeover, priority=-2)
        self._tallies.append(tally)

    def _shardCrash(self, d: Drill) -> None:
        s = self.sim.scheduler
        shard = int(d.fault.params["shard"])
        held = factory.held_by(s, shard)
        if not factory.crash_shard(s, shard):
            d.skipped = "the run uses the serial scheduler (or has no such shard): set shards >= 2"
            return
        d.affected.update(held)
        d.notes["heldByShard"] = len(held)

    def _bulkRelease(self, d: Drill) -> None:
        api_server, prm = self.sim.api, d.fault.params
        selector = prm["selector"]
        bound = sorted(
            k
            for k, p in api_server.pods.items()
            if p.node_name and all(p.labels.get(a) == b for a, b in selector.items())
        )
        if prm["count"] is not None:
            n = min(int(prm["count"]), len(bound))
        else:
            n = round(len(bound) * (0.5 if prm["fraction"] is None else float(prm["fraction"])))
        picked = [bound[int(i)] for i in sorted(self.rng.choice(len(bound), n, replace=False))]
        groups = {gang.group_key(api_server.pods[k]) for k in picked} - {""}
        whole = {
            k for k, p in api_server.pods.items() if p.node_name and gang.group_key(p) in groups
        }
        for key in sorted(set(picked) | whole):
            pod = api_server.pods.get(key)
            if pod is not None:
                api_server.delete_pod(pod, "Released", grace=0)
                d.affected.add(key)
        d.notes["released"] = len(d.affected)

    # ------------------------------------------------------------------ results
    def report(self, summary: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Per drill: kind, window, Pods affected, recovery, notes; and the invariant lists
        (:func:`kubesched.sim.recovery.invariants`) to merge into the run's."""
        for tally in self._tallies:
            tally()
        rows = []
        for d in self.drills:
            row: dict[str, Any] = {
                "name": d.fault.name,
                "kind": d.fault.kind,
                "atSeconds": d.fault.at,
                "endSeconds": round(d.end, 6),
                "podsAffected": len(d.affected),
                **d.notes,
            }
            if d.skipped is not None:
                row["skipped"] = d.skipped
            else:
                row.update(recovery.recovery(self.sampler, d.fault.at, d.end))
            rows.append(row)
        inv = recovery.invariants(
            summary, sorted(self.replacements), self.sim, gang_plugin_timeout(self.sim)
        )
        return rows, inv


def install(
    sim: SimCluster,
    faults: list[Fault],
    *,
    seed: int,
    until: float,
    interval: float = 1.0,
    jobs: JobLayer | None = None,
) -> Drills | None:
    """Arm ``faults`` on ``sim`` (None when there are none); call before the run starts."""
    if not faults:
        return None
    return Drills(sim, faults, seed=seed, until=until, interval=interval, jobs=jobs)
