"""The scheduler's API client in the benchmark, in one of two binding modes.

The API server is the simulator's (:class:`~kubesched.sim.apiserver.SimApiServer` on a
:class:`~kubesched.sim.engine.WallClock`, without kubelets or controllers, as upstream's
integration cluster).  :class:`SchedulerClient` is the scheduler's client to it.
*In-memory*: binds and status updates apply at once (pure scheduler throughput), and a
parallel binder's batch goes through one ``bind_many`` (:class:`SchedulerClient` is a
:class:`kubesched.parallel.host.BulkBinds`, and its ``bulk_binds`` is true then).  *Modelled*: every
call (bind, ``PodScheduled`` status update, preemption delete) takes a token from a
client-side token bucket (client-go's ``--kube-api-qps`` / ``--kube-api-burst``, 50 / 100 by
default) and then ``latency`` seconds; calls overlap like client-go's goroutines, the
scheduling loop does not wait for them, and the runner applies each when it is due.  When
the rate limit is the ceiling, ``throttled_calls`` grows and the measured throughput sits at
the QPS.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

from kubesched.api import objects as api
from kubesched.sim.apiserver import ApiError, SimApiServer


class TokenBucket:
    """client-go's token bucket (``flowcontrol.NewTokenBucketRateLimiter``): ``qps`` tokens a
    second, at most ``burst`` saved; :meth:`reserve` books the next token, maybe in the future."""

    def __init__(self, qps: float, burst: int, now: float) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self.tokens = float(self.burst)
        self.last = now

    def reserve(self, now: float) -> float:
        """The time at which a call made at ``now`` may start."""
        if now > self.last:
            self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.qps)
            self.last = now
        self.tokens -= 1.0
        if self.tokens >= 0:
            return now
        return now + (-self.tokens) / self.qps


class SchedulerClient:
    """The scheduler's API client: in-memory (``modelled=False``) or latency + rate limit."""

    def __init__(
        self,
        api_server: SimApiServer,
        clock: Callable[[], float],
        *,
        modelled: bool = False,
        latency: float = 0.0,
        qps: float = 50.0,
        burst: int = 100,
    ) -> None:
        self.api = api_server
        self.clock = clock
        self.modelled = modelled
        self.latency = latency
        self.qps = qps
        self.burst = burst
        self.limiter = TokenBucket(qps, burst, clock()) if modelled and qps > 0 else None
        self.victims: list[api.Pod] = []
        """The Pods :meth:`delete_pod` deleted (the preemption victims), in order."""
        self._due: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self.calls = 0
        self.throttled_calls = 0
        """Calls that had to wait for a token: the rate limit was the ceiling for them."""
        self.max_wait = 0.0

    # ------------------------------------------------------------------ the client's calls
    def submit_binding(self, fn: Callable[[], None]) -> None:
        """Run a binding cycle: now (in-memory) or when its bind call completes (modelled)."""
        if not self.modelled:
            fn()
            return
        self._later(fn)

    def bind(self, pod: api.Pod, node_name: str) -> None:
        """The bind call (its cost was charged when the binding cycle was submitted)."""
        if not self.modelled:
            self.calls += 1
        self.api.bind(pod, node_name)

    @property
    def bulk_binds(self) -> bool:
        """Whether :meth:`bind_many` may be used: binds complete at once (in-memory)."""
        return not self.modelled

    def bind_many(self, pairs: list[tuple[api.Pod, str]]) -> list[ApiError | None]:
        """Many bind calls at once (in-memory mode only, see :attr:`bulk_binds`)."""
        if self.modelled:
            raise RuntimeError("bind_many needs in-memory binds")
        self.calls += len(pairs)
        return self.api.bind_many(pairs)

    def update_object(self, obj: dict[str, Any]) -> None:
        """Write an object (DynamicResources' claim status at PreBind and PostFilter)."""
        self._call(lambda: self.api.update_object(obj))

    def delete_pod(self, pod: api.Pod, reason: str) -> None:
        """Delete a Pod (preemption victims)."""
        self.victims.append(pod)
        self._call(lambda: self.api.delete_pod(pod, reason))

    def pod_scheduling_failed(self, pod: api.Pod, reason: str, message: str) -> None:
        """Write the ``PodScheduled=False`` condition."""
        self._call(lambda: self.api.pod_scheduling_failed(pod, reason, message))

    def _call(self, fn: Callable[[], None]) -> None:
        if self.modelled:
            self._later(fn)
        else:
            self.calls += 1
            fn()

    def _later(self, fn: Callable[[], None]) -> None:
        now = self.clock()
        start = self.limiter.reserve(now) if self.limiter is not None else now
        if start > now:
            self.throttled_calls += 1
            self.max_wait = max(self.max_wait, start - now)
        self.calls += 1
        heapq.heappush(self._due, (start + self.latency, next(self._seq), fn))

    # ------------------------------------------------------------------ the runner's side
    @property
    def pending(self) -> int:
        """Calls made and not yet completed."""
        return len(self._due)

    def next_due(self) -> float | None:
        """When the next pending call completes."""
        return self._due[0][0] if self._due else None

    def run_due(self, now: float) -> int:
        """Complete every call due by ``now``; how many ran."""
        ran = 0
        while self._due and self._due[0][0] <= now:
            _, _, fn = heapq.heappop(self._due)
            fn()
            ran += 1
        return ran
