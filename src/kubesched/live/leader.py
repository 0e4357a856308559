"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's ``leaderelection``.

Every replica tries to acquire the Lease every ``retryPeriod`` (with up to 20 % jitter); the
holder renews it every ``retryPeriod``.  A Lease held by another identity is taken only once
its record has not changed for ``leaseDurationSeconds`` *as observed locally* (no clock
comparison across machines, as upstream).  Writes use the Lease's resourceVersion, so two
replicas racing for it cannot both win: one gets 409 Conflict.

The leader steps down when it has not renewed for ``renewDeadline`` (upstream: the renew loop
gives up after ``renewDeadline``); :meth:`LeaderElector.leading` turns false at that moment
from the scheduling thread's own clock reading, even if the election thread is stuck in a
slow request.  Because ``renewDeadline`` < ``leaseDuration``, the old leader stops before any
other replica may take over.  Like kube-scheduler (``OnStoppedLeading`` exits), a replica
that lost the Lease does not campaign again: the process ends and a restart starts afresh.
On a graceful shutdown the Lease is released (holder cleared, duration 1 s) so a standby
takes over without waiting out the lease (upstream ``ReleaseOnCancel``).

With a :class:`~kubesched.metrics.LeaderElectionMetrics`, ``leader_election_master_status``
is 0 from the elector's creation, 1 once it acquires the Lease and 0 again when it loses or
releases it (upstream ``leaderOff`` / ``leaderOn``), labelled with the Lease's name.

Defaults (``config.leader_election``): leaseDuration 15 s, renewDeadline 10 s, retryPeriod 2 s.
"""

from __future__ import annotations

import datetime
import logging
import math
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from kubesched.config.types import LeaderElection
from kubesched.live.client import ApiError, KubeClient
from kubesched.metrics import LeaderElectionMetrics

log = logging.getLogger(__name__)

JITTER = 0.2
"""Upstream ``JitterFactor`` 1.2 on the acquire retry period."""


def micro_time(ts: float | None = None) -> str:
    """A ``MicroTime`` (RFC 3339 with microseconds, UTC)."""
    t = datetime.datetime.fromtimestamp(time.time() if ts is None else ts, datetime.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Campaigns for one Lease on its own thread (:meth:`run`)."""

    def __init__(
        self,
        client: KubeClient,
        settings: LeaderElection,
        identity: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        metrics: LeaderElectionMetrics | None = None,
    ) -> None:
        self.client = client
        self.metrics = metrics
        self.settings = settings
        self.identity = identity
        self.clock = clock
        self.path = (
            f"/apis/coordination.k8s.io/v1/namespaces/{settings.resource_namespace}"
            f"/leases/{settings.resource_name}"
        )
        self.acquired = threading.Event()
        self.lost = threading.Event()
        self.renewed_at = -math.inf
        """Clock reading of the last successful acquire or renew."""
        self._observed: dict[str, Any] | None = None
        self._observed_at = -math.inf
        self._timeout = max(0.2, min(settings.renew_deadline_seconds, 10.0))
        self._status(False)

    # ------------------------------------------------------------------ queries
    def leading(self) -> bool:
        """Holds the Lease now: acquired, not lost, and renewed within the renew deadline."""
        if not self.acquired.is_set() or self.lost.is_set():
            return False
        return self.clock() - self.renewed_at < self.settings.renew_deadline_seconds

    def healthy(self) -> bool:
        """Upstream's leader-election health check: a leader that has not renewed for longer
        than the lease duration (plus a small grace) is unhealthy."""
        if not self.acquired.is_set():
            return True
        return self.clock() - self.renewed_at < self.settings.lease_duration_seconds + 20.0

    # ------------------------------------------------------------------ the thread
    def run(self, stop: threading.Event) -> None:
        """Acquire, then renew until the Lease is lost or ``stop`` is set (then release)."""
        retry = self.settings.retry_period_seconds
        while not stop.is_set():
            if self.try_acquire_or_renew():
                break
            stop.wait(retry * (1 + JITTER * random.random()))
        if stop.is_set():
            return
        log.info("%s became the leader (Lease %s)", self.identity, self.path)
        self.acquired.set()
        self._status(True)
        while not stop.wait(retry):
            if self.try_acquire_or_renew():
                continue
            if self.clock() - self.renewed_at >= self.settings.renew_deadline_seconds:
                log.error("leader election lost: no renewal within the renew deadline")
                self.lost.set()
                self._status(False)
                return
        self.release()

    def try_acquire_or_renew(self) -> bool:
        """Upstream ``tryAcquireOrRenew``: True when this replica holds the Lease now."""
        now = self.clock()
        try:
            lease = self.client.request("GET", self.path, timeout=self._timeout)
        except ApiError as e:
            if e.code != 404:
                log.info("cannot read the Lease: %s", e)
                return False
            return self._create(now)
        spec = lease.get("spec") or {}
        if spec != self._observed:
            self._observed, self._observed_at = spec, now
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or 0)
        if holder and holder != self.identity and self._observed_at + duration > now:
            return False
        mine = holder == self.identity
        stamp = micro_time()
        new_spec = {
            **spec,
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self._duration(),
            "renewTime": stamp,
            "acquireTime": spec.get("acquireTime") if mine else stamp,
            "leaseTransitions": int(spec.get("leaseTransitions") or 0) + (0 if mine else 1),
        }
        body = {**lease, "spec": new_spec}
        try:
            self.client.request("PUT", self.path, body=body, timeout=self._timeout)
        except ApiError as e:
            log.info("cannot update the Lease: %s", e)
            return False
        self._observed, self._observed_at, self.renewed_at = new_spec, now, now
        return True

    def release(self) -> None:
        """Give the Lease up if held (best effort)."""
        if not self.leading():
            self._status(False)
            return
        try:
            lease = self.client.request("GET", self.path, timeout=self._timeout)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            stamp = micro_time()
            spec = {
                "leaseDurationSeconds": 1,
                "renewTime": stamp,
                "acquireTime": stamp,
                "leaseTransitions": spec.get("leaseTransitions", 0),
            }
            self.client.request(
                "PUT", self.path, body={**lease, "spec": spec}, timeout=self._timeout
            )
            log.info("released the Lease %s", self.path)
        except ApiError as e:
            log.warning("could not release the Lease: %s", e)
        finally:
            self.lost.set()
            self._status(False)

    # ------------------------------------------------------------------ helpers
    def _status(self, leading: bool) -> None:
        if self.metrics is not None:
            name = self.settings.resource_name
            (self.metrics.on if leading else self.metrics.off)(name)

    def _duration(self) -> int:
        return max(1, math.ceil(self.settings.lease_duration_seconds))

    def _create(self, now: float) -> bool:
        stamp = micro_time()
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self._duration(),
            "acquireTime": stamp,
            "renewTime": stamp,
            "leaseTransitions": 0,
        }
        ns, name = self.settings.resource_namespace, self.settings.resource_name
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": ns},
            "spec": spec,
        }
        collection = self.path.rsplit("/", 1)[0]
        try:
            self.client.request("POST", collection, body=body, timeout=self._timeout)
        except ApiError as e:
            log.info("cannot create the Lease: %s", e)
            return False
        self._observed, self._observed_at, self.renewed_at = spec, now, now
        return True
