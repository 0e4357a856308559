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
observes nothing), each once, until Ready or deleted.  Timestamps in Pod status have
whole-second precision, so a segment that mixes one with this replica's own clock is
clamped at 0.

Which segments the scheduler can influence is documented in ``docs/tuning.md``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kubesched.api.errors import InputError
from kubesched.api.pods import parse_timestamp
from kubesched.live.informer import DELETED, Delta
from kubesched.metrics import SchedulerMetrics

Obj = dict[str, Any]


@dataclass(slots=True)
class _Track:
    created: float
    ungated: float | None
    scheduled: float | None = None
    bound: float | None = None


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

    # ------------------------------------------------------------------ the binding cycle
    def binding_cycle(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Wrap a binding cycle as the scheduling cycle hands it over (the end of the
        ``scheduling`` segment); the wrapper may run later, on any thread."""
        since = self.now()

        def run() -> None:
            self._cycle.since = since
            try:
                fn()
            finally:
                self._cycle.since = None

        return run

    def bound(self, uid: str) -> None:
        """This replica's Binding call for Pod ``uid`` was accepted."""
        t = self.pods.get(uid)
        if t is None:
            return
        # None: bound outside a binding cycle of ours
        t.scheduled = getattr(self._cycle, "since", None)
        t.bound = self.now()

    # ------------------------------------------------------------------ informer deltas
    def observe(self, delta: Delta) -> None:
        """One Pod delta (other kinds are ignored)."""
        if delta.kind != "Pod":
            return
        obj = delta.new
        meta, spec, status = (obj.get(k) or {} for k in ("metadata", "spec", "status"))
        if not all(isinstance(part, dict) for part in (meta, spec, status)):
            return  # a manifest the dispatcher skips as well
        uid = str(meta.get("uid") or "")
        if delta.type == DELETED:
            self.pods.pop(uid, None)
            return
        t = self.pods.get(uid)
        if status.get("phase") in ("Succeeded", "Failed"):
            self.pods.pop(uid, None)  # finished without being seen Ready
            return
        if t is None:
            if spec.get("nodeName") or spec.get("schedulerName", "default-scheduler") not in (
                self.names
            ):
                return
            created = _time(meta.get("creationTimestamp"))
            if created is None:
                return
            gated = bool(spec.get("schedulingGates"))
            t = self.pods[uid] = _Track(created, None if gated else created)
            return
        if t.ungated is None and not spec.get("schedulingGates"):
            t.ungated = self.now()
        conditions = status.get("conditions") or []
        if not isinstance(conditions, list):
            return
        if t.bound is None and spec.get("nodeName"):
            t.bound = _condition_time(conditions, "PodScheduled")
        ready = _condition_time(conditions, "Ready")
        if ready is not None and spec.get("nodeName"):
            del self.pods[uid]
            self._record(t, ready)

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
