"""The coordinator replica of the sharded architecture (``kubesched run --role coordinator``).

:class:`LiveCoordinator` is a ``kubesched run`` replica -- its own Lease, informers, relist
on taking the lead, health server, graceful shutdown -- whose scheduler is the
:class:`~kubesched.live.coordinator.CoordinatorScheduler` and which also watches the Leases
of its leader-election namespace to know which shards are alive
(:class:`~kubesched.live.sharding.Membership`).  The shard replica is
:class:`kubesched.live.shard.LiveShard`; ``make_replica`` builds the replica of a role.
"""

from __future__ import annotations

from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.live import sharding as sh
from kubesched.live.client import KubeClient
from kubesched.live.coordinator import DISPATCH_TIMEOUT, WINDOW, CoordinatorScheduler
from kubesched.live.dispatch import Dispatcher
from kubesched.live.informer import DELETED, SCHEDULER_KINDS, Delta, Kind, Timing
from kubesched.live.runner import LiveScheduler
from kubesched.live.shard import LiveShard
from kubesched.live.turns import BindingPool
from kubesched.metrics import SchedulerMetrics
from kubesched.scheduler import Scheduler

SERIAL, COORDINATOR, SHARD = "serial", "coordinator", "shard"
ROLES = (SERIAL, COORDINATOR, SHARD)


def lease_kind(namespace: str) -> Kind:
    """The Leases of ``namespace`` (where shards hold their membership Leases)."""
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    return Kind("Lease", "coordination.k8s.io/v1", path)


class CoordinatorDispatch(Dispatcher):
    """Deltas for the coordinator: Leases to the membership, the rest as usual."""

    def __init__(self, scheduler: Scheduler, membership: sh.Membership) -> None:
        super().__init__(scheduler)
        self.membership = membership

    def apply(self, delta: Delta) -> None:
        if delta.kind == "Lease":
            self.membership.observe(delta.new, deleted=delta.type == DELETED)
        else:
            super().apply(delta)


class LiveCoordinator(LiveScheduler):
    """The coordinator replica (see the module docstring)."""

    def __init__(
        self,
        config: KubeSchedulerConfiguration,
        client: KubeClient,
        *,
        shards: int,
        identity: str,
        metrics: SchedulerMetrics | None = None,
        timing: Timing | None = None,
        resync_seconds: float = 0.0,
        election_client: KubeClient | None = None,
        window: int = WINDOW,
        dispatch_timeout: float = DISPATCH_TIMEOUT,
    ) -> None:
        self.shards = shards
        self.window = window
        self.dispatch_timeout = dispatch_timeout
        self.membership = sh.Membership(shards)
        namespace = config.leader_election.resource_namespace
        super().__init__(
            config,
            client,
            identity=identity,
            metrics=metrics,
            timing=timing,
            resync_seconds=resync_seconds,
            kinds=(lease_kind(namespace), *SCHEDULER_KINDS),
            election_client=election_client,
        )

    def make_scheduler(self, metrics: SchedulerMetrics | None) -> Scheduler:
        self.binding_pool = BindingPool(self.turns)  # binds off the loop, as the serial role
        self.api.io = self.turns.released
        self.coordinator = CoordinatorScheduler(
            self.config,
            clock=self.membership.clock,
            api_client=self.api,
            client=self.client,
            shards=self.shards,
            membership=self.membership,
            metrics=metrics,
            guard=self.leading,
            window=self.window,
            dispatch_timeout=self.dispatch_timeout,
            submit_binding=self.binding_pool.submit,
        )
        return self.coordinator

    def make_dispatch(self) -> Dispatcher:
        return CoordinatorDispatch(self.scheduler, self.membership)

    def step(self) -> bool:
        return self.coordinator.step()


def make_replica(
    role: str,
    config: KubeSchedulerConfiguration,
    client: KubeClient,
    *,
    identity: str,
    shards: int = 1,
    shard_index: int = 0,
    metrics: SchedulerMetrics | None = None,
    timing: Timing | None = None,
    resync_seconds: float = 0.0,
    election_client: KubeClient | None = None,
) -> LiveScheduler:
    """The replica of ``role`` (:data:`ROLES`)."""
    if role == COORDINATOR:
        return LiveCoordinator(
            config,
            client,
            shards=shards,
            identity=identity,
            metrics=metrics,
            timing=timing,
            resync_seconds=resync_seconds,
            election_client=election_client,
        )
    if role == SHARD:
        return LiveShard(
            config,
            client,
            index=shard_index,
            shards=shards,
            identity=identity,
            metrics=metrics,
            timing=timing,
            resync_seconds=resync_seconds,
            election_client=election_client,
        )
    return LiveScheduler(
        config,
        client,
        identity=identity,
        metrics=metrics,
        timing=timing,
        resync_seconds=resync_seconds,
        election_client=election_client,
    )
