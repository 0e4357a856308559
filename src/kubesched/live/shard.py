"""``kubesched run --role shard --shard-index I --shards N``: one scheduler shard, live.

A shard is a ``kubesched run`` replica (informers, its membership Lease
``kubesched-shard-<I>`` held with leader election's mechanics, health server) whose scheduler
is :class:`kubesched.parallel.shard.ShardScheduler`: the normal framework, every plugin,
searching its own partition of the nodes first.  Its replica of the cluster *is* its
informer cache: bound Pods, Nodes and the other objects reach it as for any replica.

Pending Pods reach it only when the coordinator annotates them for index ``I``
(:mod:`kubesched.live.sharding`); :class:`ShardDispatch` keeps every other pending Pod out
of it.  Each step hands the newly owned Pods (and refusals, which make the shard send
alternatives for a while) to :meth:`ShardScheduler.process` and writes each answer as the
``kubesched.io/proposal`` annotation: a conditional merge patch on the Pod's
``resourceVersion``; on 409 the Pod is read again and the write retried only while the
Pod is still this shard's for the same attempt.  A proposed Pod stays assumed in the
replica until the watch shows it bound (confirmed, or moved to an alternative), handed
elsewhere or refused (dropped), or deleted.

The Lease is the shard's membership: without it the shard proposes nothing (a standby keeps
its cache warm), and a shard that loses it exits 1 like any replica; the coordinator then
hands its Pods to the others.
"""

from __future__ import annotations

import dataclasses
import logging
import time

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.api.parse import parse_pod
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.live import sharding as sh
from kubesched.live.client import ApiError, KubeClient
from kubesched.live.dispatch import TERMINAL_PHASES, Dispatcher
from kubesched.live.informer import DELETED, Delta, Timing, object_key
from kubesched.live.runner import LiveScheduler
from kubesched.metrics import SchedulerMetrics
from kubesched.parallel import protocol as p
from kubesched.parallel.shard import ShardScheduler
from kubesched.scheduler import Scheduler, SchedulerOptions

log = logging.getLogger(__name__)

WRITE_TRIES = 3


def shard_config(config: KubeSchedulerConfiguration, index: int) -> KubeSchedulerConfiguration:
    """The configuration with shard ``index``'s membership Lease (always elected: the Lease
    is how the coordinator knows the shard is alive)."""
    le = dataclasses.replace(
        config.leader_election, leader_elect=True, resource_name=sh.lease_name(index)
    )
    return dataclasses.replace(config, leader_election=le)


class ShardDispatch(Dispatcher):
    """Informer deltas for a shard: pending Pods by ownership, everything else as usual."""

    def __init__(self, live: LiveShard) -> None:
        super().__init__(live.shard)
        self.live = live

    def _pod(self, delta: Delta) -> None:
        obj = delta.new
        key = object_key(obj)
        bound = bool((obj.get("spec") or {}).get("nodeName"))
        if delta.type != DELETED and not bound:
            self._pending(key, obj)
            return
        if key in self.live.owned:
            self._release(key, confirm=bound and delta.type != DELETED)
        super()._pod(delta)

    def _pending(self, key: str, obj: sh.Obj) -> None:
        live = self.live
        meta = obj.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        shard, attempt = sh.owner(annotations)
        mine = shard == live.index
        have = live.owned.get(key)
        if mine and have == attempt:
            live.versions[key] = str(meta.get("resourceVersion", ""))
            return
        if have is not None:
            self._release(key)
            refused = annotations.get(sh.REFUSED)
            if refused and shard < 0:
                live.refusals.append((key, str(refused)))
        if not mine or (obj.get("status") or {}).get("phase") in TERMINAL_PHASES:
            return
        try:
            pod = parse_pod(obj)
        except InputError as e:
            self.skipped += 1
            log.warning("skipping Pod %s: %s", key, e)
            return
        if not live.shard.responsible_for(pod):
            return
        live.owned[key] = attempt
        live.versions[key] = str(meta.get("resourceVersion", ""))
        live.work[key] = pod

    def _release(self, key: str, *, confirm: bool = False) -> None:
        """Drop a Pod this shard held (handed elsewhere, refused, deleted or bound)."""
        live = self.live
        live.owned.pop(key, None)
        live.work.pop(key, None)
        live.versions.pop(key, None)
        pod = live.handed.pop(key, None)
        if pod is None:
            return
        s = live.shard
        if confirm:  # the watch's bound Pod confirms (or moves) the assumed copy
            if s.handle.reject_waiting_pod(key):
                s.committer.drain_waiting()
            return
        s.on_pod_delete(pod)


class LiveShard(LiveScheduler):
    """One shard replica (see the module docstring)."""

    tracks_startup = False  # its Pods' startup is the coordinator's to export

    def __init__(
        self,
        config: KubeSchedulerConfiguration,
        client: KubeClient,
        *,
        index: int,
        shards: int,
        identity: str,
        metrics: SchedulerMetrics | None = None,
        timing: Timing | None = None,
        resync_seconds: float = 0.0,
        election_client: KubeClient | None = None,
    ) -> None:
        self.index = index
        self.shards = shards
        self.owned: dict[str, int] = {}
        """Pod key to the attempt this shard took."""
        self.work: dict[str, api.Pod] = {}
        """Owned Pods not yet given to the shard scheduler."""
        self.handed: dict[str, api.Pod] = {}
        """Owned Pods given to it (queued, waiting at Permit, or proposed and assumed)."""
        self.versions: dict[str, str] = {}
        """Pod key to the latest resourceVersion seen (the proposal's precondition)."""
        self.refusals: list[tuple[str, str]] = []
        self.proposed = 0
        self.reported = 0
        self.write_errors = 0
        self.activations = 0
        """Pods this shard asked the coordinator to activate."""
        self._deadline: float | None = None
        super().__init__(
            shard_config(config, index),
            client,
            identity=identity,
            metrics=metrics,
            timing=timing,
            resync_seconds=resync_seconds,
            election_client=election_client,
        )

    def make_scheduler(self, metrics: SchedulerMetrics | None) -> Scheduler:
        del metrics  # a shard's attempts are the coordinator's to export
        self.shard = ShardScheduler(
            self.config, SchedulerOptions(shards=self.shards), index=self.index
        )
        return self.shard

    def make_dispatch(self) -> Dispatcher:
        return ShardDispatch(self)

    # ------------------------------------------------------------------ one step
    def step(self) -> bool:
        """Schedule the newly owned Pods; write every answer.  False when idle."""
        now = time.monotonic()
        due = self._deadline is not None and now >= self._deadline
        if not self.work and not self.refusals and not due:
            return False
        for key, pod in self.work.items():
            self.handed[key] = pod
        msg = p.ToShard(now, private=self.refusals, pods=list(self.work.values()))
        self.work, self.refusals = {}, []
        reply = self.shard.process(msg)
        self._deadline = reply.deadline
        for res in reply.results:
            self._answer(res)
        for key in reply.activate:
            self._activate(key)
        return True

    def _activate(self, key: str) -> None:
        """Ask the coordinator to activate Pod ``key`` (``kubesched.io/activate``)."""
        self.activations += 1
        ns, name = key.split("/", 1)
        mark = f"{self.index}/{self.activations}"
        try:
            sh.annotate(self.client, ns, name, {sh.ACTIVATE: mark})
        except ApiError as e:
            if e.code != 404:
                log.warning("shard %d: could not ask to activate %s: %s", self.index, key, e)

    def _answer(self, res: p.Result) -> None:
        key = res.key
        attempt = self.owned.get(key)
        if attempt is None:
            return  # handed elsewhere meanwhile
        prop = sh.Proposal.of(res, self.index, attempt, self._node_rv)
        if self._write(key, prop):
            if prop.failed:
                self.reported += 1
                self.handed.pop(key, None)  # the shard dropped it from its queue
            else:
                self.proposed += 1

    def _node_rv(self, name: str) -> str:
        node = self.dispatch.nodes.get(name)
        meta = node.raw.get("metadata") if node is not None else None
        return str(meta.get("resourceVersion", "")) if isinstance(meta, dict) else ""

    def _write(self, key: str, prop: sh.Proposal) -> bool:
        ns, name = key.split("/", 1)
        for _ in range(WRITE_TRIES):
            if not self.leading():
                return False
            try:
                out = sh.annotate(
                    self.client, ns, name, {sh.PROPOSAL: prop.encode()}, self.versions.get(key, "")
                )
            except ApiError as e:
                if e.code == 404:
                    return False
                if e.code != 409 and not e.retryable:
                    break
                if not self._still_mine(key, ns, name, prop.attempt):
                    return False
                continue
            self.versions[key] = str((out.get("metadata") or {}).get("resourceVersion", ""))
            return True
        self.write_errors += 1
        log.warning("shard %d: could not write the proposal for %s", self.index, key)
        return False

    def _still_mine(self, key: str, ns: str, name: str, attempt: int) -> bool:
        """Read the Pod again; True (with its new resourceVersion) while it is still ours."""
        try:
            pod = self.client.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
        except ApiError:
            return True  # try the write again; it will say
        meta = pod.get("metadata") or {}
        if (pod.get("spec") or {}).get("nodeName"):
            return False
        if sh.owner(meta.get("annotations") or {}) != (self.index, attempt):
            return False
        self.versions[key] = str(meta.get("resourceVersion", ""))
        return True
