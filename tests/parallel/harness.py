"""A small world for parallel-scheduler tests: the benchmark's in-memory API server, a
virtual clock, and a loop that steps the scheduler until nothing can change; plus the
invariant checks every test shares (docs/design.md section 7)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.api import objects as api
from kubesched.bench.api import SchedulerClient
from kubesched.config.load import load_config
from kubesched.framework.interface import PluginFactory
from kubesched.parallel import protocol
from kubesched.parallel.coordinator import ParallelScheduler
from kubesched.parallel.router import Router
from kubesched.plugins.registry import in_tree_registry, known_plugin_names
from kubesched.scheduler import Scheduler, SchedulerOptions
from kubesched.sim.apiserver import SimApiServer
from kubesched.sim.engine import WallClock
from kubesched.testing import make_pod

GANG_CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "multiPoint": {
                    "enabled": [{"name": "Coscheduling"}],
                    "disabled": [{"name": "PrioritySort"}],
                }
            },
            "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 5}}],
        }
    ],
}


ZONE = "topology.kubernetes.io/zone"


def spread_pod(name: str, cpu: str) -> api.Pod:
    """A Pod of ``ns`` labelled ``app=spread`` with a hard zone spread constraint (maxSkew 1)
    over the Pods so labelled: every proposal of it needs the binder's full check."""
    b = make_pod(name, "ns").req(cpu=cpu).labels(app="spread")
    b.pod.topology_spread_constraints = (
        api.TopologySpreadConstraint(
            1, ZONE, "DoNotSchedule", api.LabelSelector(match_labels=(("app", "spread"),))
        ),
    )
    return b.obj()


def pod_group(name: str, namespace: str, min_member: int) -> dict[str, Any]:
    """A PodGroup object."""
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": min_member},
    }


class ScriptedRouter(Router):
    """Routes Pods by a script (True: the coordinator's own cycle), cycling through it."""

    def __init__(self, shards: int, script: list[bool]) -> None:
        super().__init__(shards, cores=2)
        self.script = script or [False]
        self.turn = 0

    def serial(self, key: object) -> bool:
        choice = self.script[self.turn % len(self.script)]
        self.turn += 1
        self.routed["serial" if choice else "shards"] += 1
        return choice


class World:
    """API server, client, scheduler (serial for ``shards=1``) and a virtual clock."""

    def __init__(
        self,
        nodes: Iterable[api.Node],
        *,
        shards: int = 2,
        kind: str = "inline",
        config: Mapping[str, Any] | None = None,
        seed: int = 0,
        round_size: int = 4,
        objects: Iterable[dict[str, Any]] = (),
        registry: Mapping[str, PluginFactory] | None = None,
        router: Router | None = None,
    ) -> None:
        self.now = 0.0
        self.router = router
        self.registry = {**in_tree_registry(), **registry} if registry else None
        # in-tree plugins plus the test's own (None: the schedulers' default registry)
        self.cfg = load_config(config, known_plugins=known_plugin_names(registry))
        self.api = SimApiServer(WallClock(lambda: self.now), lifecycle=False)
        self.client = SchedulerClient(self.api, lambda: self.now)
        self.binds: Counter[str] = Counter()
        self.api.on_bound.append(lambda pod: self.binds.update([pod.key]))
        self.shards = shards
        self.sched: Scheduler = self._scheduler(shards, kind, seed, round_size)
        for obj in objects:
            self.api.create_object(obj)
        for node in nodes:
            self.api.create_node(node)

    def _scheduler(self, shards: int, kind: str, seed: int, round_size: int) -> Scheduler:
        options = SchedulerOptions(
            seed=seed, registry=self.registry, shards=shards, round_size=round_size
        )
        common: dict[str, Any] = {
            "clock": lambda: self.now,
            "api_client": self.client,
            "submit_binding": self.client.submit_binding,
            "options": options,
        }
        s: Scheduler
        if shards == 1:
            s = Scheduler(self.cfg, **common)
        else:
            s = ParallelScheduler(self.cfg, transport_kind=kind, router=self.router, **common)
        self.api.watch(s)
        return s

    @property
    def parallel(self) -> ParallelScheduler:
        assert isinstance(self.sched, ParallelScheduler)
        return self.sched

    def add(self, pods: Iterable[api.Pod]) -> None:
        for pod in pods:
            self.api.create_pod(pod)

    def step(self) -> bool:
        """One scheduler step; when idle, jump the clock to the next queue timer."""
        if self.sched.schedule_one():
            self.now += 0.001
            return True
        nxt = self.sched.queue.next_wakeup()
        permit = self.sched.next_waiting_deadline()
        times = [t for t in (nxt, permit) if t is not None]
        if not times:
            return False
        self.now = max(self.now + 0.001, min(times))
        self.sched.queue.flush_backoff_completed()
        self.sched.queue.flush_unschedulable_left_over()
        return True

    def run(self, max_steps: int = 5000, crash: Mapping[int, int] | None = None) -> int:
        """Step until idle; ``crash`` maps a step number to a shard to kill before it."""
        steps = 0
        idle = 0
        while steps < max_steps:
            if crash and steps in crash:
                self.parallel.crash_shard(crash[steps])
            steps += 1
            if not self.step():
                break
            if not self.sched.queue.pending_pods().get("active") and not self.busy():
                idle += 1
                if idle > 50:
                    break
            else:
                idle = 0
        return steps

    def busy(self) -> bool:
        return bool(self.sched.in_flight_bindings)

    def close(self) -> None:
        if isinstance(self.sched, ParallelScheduler):
            self.sched.close()

    def sync_shards(self) -> None:
        """Send every shard one more message and read its answers, so each replica has
        heard every commit (a replica otherwise lags until its shard has work)."""
        hub = self.parallel
        for i in range(hub.shard_count):
            if not hub.outstanding[i]:
                hub._send(i, self.now)
            while hub.outstanding[i]:
                hub._receive(i)

    def generation(self, node: str) -> int:
        """The coordinator's generation of ``node`` (what a shard quotes as its version)."""
        table = self.sched.cluster.nodes
        return int(table.generation[table.row_of[node]])

    def propose(
        self,
        pod: api.Pod,
        node: str,
        version: int,
        alts: tuple[tuple[str, int], ...] = (),
        local: int = protocol.NOT_LOCAL,
    ) -> None:
        """Submit ``pod``, hand it out, and have its shard propose ``node`` at ``version``
        (``local``: what the shard says of its cross-node Filters) to the binder."""
        self.add([pod])
        self.parallel.dispatcher.fill(self.sched.queue)
        shard = self.parallel.dispatcher.in_flight[pod.key].shard
        res = protocol.Propose(pod.key, node, version, alts, local, "")
        self.parallel.binder.process(shard, [res])

    def placements(self) -> dict[str, str]:
        """Pod key to node, from the API server."""
        return {k: p.node_name for k, p in sorted(self.api.pods.items()) if p.node_name}

    # ------------------------------------------------------------------ invariants
    def check(self, submitted: Iterable[api.Pod]) -> None:
        """No overcommit (API accounting and cache), none bound twice, none lost."""
        used: dict[str, Counter[str]] = {}
        for pod in self.api.pods.values():
            if pod.node_name:
                c = used.setdefault(pod.node_name, Counter())
                c.update(pod.requests)
                c[api.PODS] += 1
        for name, c in used.items():
            node = self.api.nodes[name]
            for res, amount in c.items():
                assert amount <= node.allocatable.get(res, 0), (name, res, amount)
        assert not self.sched.cluster.overcommitted_nodes()
        assert all(n == 1 for n in self.binds.values()), self.binds.most_common(3)
        for pod in submitted:
            live = self.api.pods.get(pod.key)
            assert live is not None, f"{pod.key} lost"
            if not live.node_name:
                assert self.sched.queue.queue_of(pod.key) is not None or self.busy(), (
                    f"{pod.key} pending but neither queued nor in flight"
                )

    def check_gangs(self, min_member: Mapping[str, int]) -> None:
        """Every gang has 0 or at least minMember members bound."""
        bound: Counter[str] = Counter()
        for pod in self.api.pods.values():
            group = protocol.group_of(pod)
            if group and pod.node_name:
                bound[group] += 1
        for group, need in min_member.items():
            assert bound[group] in (0,) or bound[group] >= need, (group, bound[group], need)
