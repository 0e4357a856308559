"""Pod startup in four segments, live: from each Pod's own timestamps and conditions.

The same split as the simulator's (:mod:`kubesched.sim.startup`), for the Pods this
scheduler schedules (``spec.schedulerName`` one of its profiles), exported as
``kubesched_pod_startup_segment_duration_seconds{segment}`` and created-to-Ready as
``kubesched_pod_startup_duration_seconds`` (:mod:`kubesched.metrics.catalog`):

=============  ==========================================================================
segment        from -> to
=============  ==========================================================================
admission      ``metadata.creationTimestamp`` -> the first Pod update seen without
               ``spec.schedulingGates`` (the creation, when it had none)
scheduling     -> this replica's scheduling cycle handed the Pod to its binding cycle
binding        -> this replica's Binding call was accepted (PreBind, Bind, the API)
node           -> the ``Ready=True`` condition's ``lastTransitionTime`` (the kubelet)
=============  ==========================================================================

When the binding was not this replica's (another replica bound it before a failover), the
``PodScheduled=True`` condition's ``lastTransitionTime`` (written by the API server on
bind) ends ``scheduling`` and no ``binding`` is observed; so too when the bind happened
outside an inline binding cycle (the sharded coordinator's binder): there the bind ends
``scheduling``.  Shards observe nothing (their Pods are the coordinator's).  Only Pods
first seen Pending and unbound are followed (a restart's initial list of running Pods
observes nothing), each once, until Ready or deleted.

``bound`` runs on a binding worker thread, so the Pod's Ready event may reach
:meth:`StartupTracker.observe` before the worker reports the bind.  A Pod seen Ready while
binding cycles of ours are in flight is therefore held until either it is reported bound
(its four segments, ``binding`` included) or every cycle in flight at that moment has ended
without binding it (then bound by someone else: ``PodScheduled`` ends ``scheduling``); the
segments are the same whichever of the two events comes first.  Timestamps in Pod status have
whole-second precision, so a segment that mixes one with this replica's own clock is
clamped at 0.

Which segments the scheduler can influence is documented in ``docs/tuning.md``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kubesched.api.errors import InputError
from kubesched.api.pods import parse_timestamp
from kubesched.live.informer import ADDED, DELETED, Delta
from kubesched.metrics import SchedulerMetrics

log = logging.getLogger(__name__)

Obj = dict[str, Any]


@dataclass(slots=True)
class _Track:
    created: float
    ungated: float | None
    scheduled: float | None = None
    bound: float | None = None
    ready: float | None = None
    """Set while the Pod, seen Ready, waits for the binding cycles in :attr:`waits_for`."""
    waits_for: set[int] | None = None
    reported: bool = False
    """:meth:`StartupTracker.bound` was called for it."""


class StartupTracker:
    """Follows Pod deltas on the scheduling thread; ``now`` is the wall clock (epoch s)."""

    def __init__(
        self,
        scheduler_names: Iterable[str],
        metrics: SchedulerMetrics | None = None,
        *,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.metrics = metrics
        """Where Ready Pods are recorded (None: nothing is recorded)."""
        self.names = frozenset(scheduler_names)
        self.now = now
        self.pods: dict[str, _Track] = {}
        """Pod UID -> what is known so far, for Pods not Ready yet."""
        self._cycle = threading.local()
        """Per thread, while a binding cycle runs on it: ``since``, when its scheduling
        cycle handed it over."""
        self._lock = threading.Lock()
        """Guards :attr:`pods` and the cycles in flight (workers report binds)."""
        self._next_cycle = 0
        self._in_flight: set[int] = set()
        """Binding cycles handed over and not ended yet."""
        self._waiting: set[str] = set()
        """UIDs of the Pods seen Ready that wait for binding cycles in flight."""

    # ------------------------------------------------------------------ the binding cycle
    def binding_cycle(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Wrap a binding cycle as the scheduling cycle hands it over (the end of the
        ``scheduling`` segment); the wrapper may run later, on any thread."""
        since = self.now()
        with self._lock:
            cycle = self._next_cycle
            self._next_cycle += 1
            self._in_flight.add(cycle)

        def run() -> None:
            self._cycle.since = since
            try:
                fn()
            finally:
                self._cycle.since = None
                self._ended(cycle)

        return run

    def _ended(self, cycle: int) -> None:
        """Binding cycle ``cycle`` ended: record the Ready Pods that waited only for it."""
        with self._lock:
            self._in_flight.discard(cycle)
            done = []
            for uid in self._waiting:
                waits_for = self.pods[uid].waits_for
                assert waits_for is not None
                waits_for.discard(cycle)
                if not waits_for:
                    done.append(uid)
            self._waiting.difference_update(done)
            tracks = [self.pods.pop(uid) for uid in done]
        for t in tracks:
            assert t.ready is not None
            self._record(t, t.ready)

    def bound(self, uid: str) -> None:
        """This replica's Binding call for Pod ``uid`` was accepted."""
        with self._lock:
            t = self.pods.get(uid)
            if t is None:
                return
            # None: bound outside a binding cycle of ours
            t.scheduled = getattr(self._cycle, "since", None)
            t.bound = self.now()
            t.reported = True
            if t.ready is None:
                return
            del self.pods[uid]  # Ready was seen first
            self._waiting.discard(uid)
        self._record(t, t.ready)

    # ------------------------------------------------------------------ informer deltas
    def observe(self, delta: Delta) -> None:
        """One Pod delta (other kinds are ignored)."""
        if delta.kind == "Pod":
            self._follow(delta.type, (delta.new,))

    def observe_listed(self, kind: str, objs: Iterable[Obj]) -> None:
        """A list's objects, each as its ``ADDED`` delta (other kinds are ignored)."""
        if kind == "Pod":
            self._follow(ADDED, objs)

    def _follow(self, kind: str, objs: Iterable[Obj]) -> None:
        done = []
        with self._lock:
            for obj in objs:
                meta = obj.get("metadata") or {}
                spec = obj.get("spec") or {}
                status = obj.get("status") or {}
                if not (
                    isinstance(meta, dict) and isinstance(spec, dict) and isinstance(status, dict)
                ):
                    continue  # a manifest the dispatcher skips as well
                uid = str(meta.get("uid") or "")
                if kind == ADDED and spec.get("nodeName") and uid not in self.pods:
                    continue  # bound before it was seen: not followed (most of a first list)
                try:
                    t = self._observe(kind, uid, meta, spec, status)
                except Exception:  # one odd manifest must not keep the others from it
                    log.exception("failed to follow the startup of Pod %s", meta.get("name"))
                    continue
                if t is not None and t.ready is not None:
                    done.append(t)
        for t in done:
            assert t.ready is not None
            self._record(t, t.ready)

    def _observe(self, kind: str, uid: str, meta: Obj, spec: Obj, status: Obj) -> _Track | None:
        """Apply one Pod delta under the lock; the track to record now, if any."""
        if kind == DELETED:
            self.pods.pop(uid, None)
            self._waiting.discard(uid)
            return None
        t = self.pods.get(uid)
        if status.get("phase") in ("Succeeded", "Failed"):
            self.pods.pop(uid, None)  # finished without being seen Ready
            self._waiting.discard(uid)
            return None
        if t is None:
            if spec.get("nodeName") or spec.get("schedulerName", "default-scheduler") not in (
                self.names
            ):
                return None
            created = _time(meta.get("creationTimestamp"))
            if created is None:
                return None
            gated = bool(spec.get("schedulingGates"))
            self.pods[uid] = _Track(created, None if gated else created)
            return None
        if t.ready is not None:
            return None  # Ready already, waiting for the binding cycles in flight
        if t.ungated is None and not spec.get("schedulingGates"):
            t.ungated = self.now()
        conditions = status.get("conditions") or []
        if not isinstance(conditions, list):
            return None
        if t.bound is None and spec.get("nodeName"):
            t.bound = _condition_time(conditions, "PodScheduled")
        t.ready = _condition_time(conditions, "Ready") if spec.get("nodeName") else None
        if t.ready is None:
            return None
        if self._in_flight and not t.reported:
            t.waits_for = set(self._in_flight)  # one of them may be binding it
            self._waiting.add(uid)
            return None
        del self.pods[uid]
        return t

    def _record(self, t: _Track, ready: float) -> None:
        if self.metrics is None:
            return
        ungated = t.ungated if t.ungated is not None else t.created
        bound = t.bound if t.bound is not None else ready
        segments = {"admission": ungated - t.created}
        if t.scheduled is not None:
            segments["scheduling"] = t.scheduled - ungated
            segments["binding"] = bound - t.scheduled
        else:  # bound by another replica or outside a binding cycle: bound ends scheduling
            segments["scheduling"] = bound - ungated
        segments["node"] = ready - bound
        self.metrics.record_startup(segments, ready - t.created)


def _time(value: Any) -> float | None:
    try:
        return parse_timestamp(value, "")
    except InputError:
        return None


def _condition_time(conditions: list[Obj], kind: str) -> float | None:
    """``lastTransitionTime`` of condition ``kind`` when its status is True, else None."""
    for c in conditions:
        if isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True":
            return _time(c.get("lastTransitionTime"))
    return None
