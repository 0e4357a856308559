"""What a fault drill measures: the API server's view sampled over time, recovery against the
pre-fault level, and the invariants that must hold through any fault.

:class:`Sampler` records, every ``interval`` simulated seconds, Pods created and bound so far
(cumulative, the API server's accounting) and Pods pending (unbound in the API server): the
operator's view, independent of which scheduler -- leader or standby -- runs at the time.

:func:`recovery` compares the series after a fault with the ``baseline`` seconds before it:

- the pre-fault level is the successful throughput ``r0`` (Pods bound per second) and the
  mean pending count ``q0`` over the baseline window;
- the run has recovered at the first sample ``t`` at or after the fault's end where pending
  Pods are back to ``q0 * (1 + tolerance) + 1`` and the throughput over the last ``window``
  seconds is at least ``(1 - tolerance) * min(r0, arrivals in that window per second)``
  (when arrivals slow down after the fault, the scheduler is not asked to beat them);
- ``recoverySeconds`` is ``t`` minus the fault's start; None when it never recovered.

:func:`invariants` adds to docs/design.md section 7's checks what faults can break: gangs bound
partially (some but fewer than ``minMember`` members bound when the run ends, for a gang that
never completed and lost no member to preemption), quota over its limit, and replacement
Pods (recreated by a drill) lost (a preemption victim is not lost: preemption deletes it by
design, bound or not).  Gangs held incomplete past their timeout are every run's invariant
(:meth:`kubesched.sim.jobs.JobLayer.held_past_timeout`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.admission import gang
from kubesched.sim.driver import SimCluster


@dataclass(slots=True)
class Sampler:
    """Cumulative created / bound and current pending Pods, every ``interval`` seconds."""

    sim: SimCluster
    interval: float = 1.0
    t: list[float] = field(default_factory=list)
    created: list[int] = field(default_factory=list)
    bound: list[int] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)
    _until: float = 0.0

    def start(self, until: float) -> None:
        """Sample at 0, ``interval``, ... up to ``until``."""
        self._until = until
        self.sim.loop.call_at(0.0, self._tick, priority=3)

    def _tick(self) -> None:
        self.sample()
        nxt = self.sim.loop.now + self.interval
        if nxt <= self._until + 1e-9:
            self.sim.loop.call_at(nxt, self._tick, priority=3)

    def sample(self) -> None:
        """Record one point now."""
        api_server = self.sim.api
        self.t.append(self.sim.loop.now)
        self.created.append(len(api_server.stats.created_at))
        self.bound.append(len(api_server.stats.bound_at))
        self.pending.append(sum(1 for p in api_server.pods.values() if not p.node_name))

    def at(self, when: float) -> int:
        """Index of the last sample at or before ``when`` (0 when none)."""
        return max(0, int(np.searchsorted(np.asarray(self.t), when + 1e-9, side="right")) - 1)


def _rate(series: list[int], t: list[float], i: int, j: int) -> float:
    """Per-second increase of a cumulative ``series`` between samples ``i`` < ``j``."""
    span = t[j] - t[i]
    return (series[j] - series[i]) / span if span > 0 else 0.0


def recovery(
    s: Sampler,
    start: float,
    end: float,
    *,
    baseline: float = 10.0,
    window: float = 3.0,
    tolerance: float = 0.1,
) -> dict[str, Any]:
    """Pre-fault level and recovery time of a fault from ``start`` to ``end`` (see module)."""
    if len(s.t) < 2:
        return {"recovered": False, "recoverySeconds": None, "why": "no samples"}
    i0, i1 = s.at(max(0.0, start - baseline)), s.at(start)
    r0 = _rate(s.bound, s.t, i0, i1) if i1 > i0 else 0.0
    q0 = float(np.mean(s.pending[i0 : i1 + 1])) if i1 >= i0 else 0.0
    steps = max(1, round(window / s.interval))
    out: dict[str, Any] = {
        "preFaultPodsPerSecond": round(r0, 3),
        "preFaultPending": round(q0, 3),
        "peakPending": max(s.pending[i1:], default=0),
        "recovered": False,
        "recoverySeconds": None,
    }
    first = s.at(end)
    if s.t[first] < end - 1e-9:
        first += 1
    for k in range(max(first, 1), len(s.t)):
        back = max(0, k - steps)
        demand = min(r0, _rate(s.created, s.t, back, k))
        rate_ok = _rate(s.bound, s.t, back, k) >= (1.0 - tolerance) * demand - 1e-9
        queue_ok = s.pending[k] <= q0 * (1.0 + tolerance) + 1.0
        if rate_ok and queue_ok:
            out["recovered"] = True
            out["recoverySeconds"] = round(s.t[k] - start, 3)
            break
    return out


def invariants(
    summary: Mapping[str, Any],
    replacements: Iterable[str],
    sim: SimCluster,
    gang_timeout: float | None,
) -> dict[str, list[str]]:
    """The fault-specific invariant lists (empty when they hold); see the module docstring.
    (Gangs held incomplete past their timeout are every run's invariant:
    :meth:`kubesched.sim.jobs.JobLayer.held_past_timeout`.)

    ``gang_timeout`` is the gang plugin's default timeout, None when no gang plugin runs
    (then nothing promises gangs whole and they are not checked).
    """
    partial: list[str] = []
    gangs = (summary.get("gangs") or {}) if gang_timeout is not None else {}
    # preemption is not gang-aware (upstream's neither): a gang that lost members to it is
    # broken by design, as one a drill released
    broken = {gang.group_key(p) for p in sim.api.stats.preempted.values()}
    for key, g in gangs.items():
        incomplete = g.get("completeAt") is None and 0 < g.get("running", 0) < g.get("minMember", 0)
        if incomplete and key not in broken:
            partial.append(key)
    over = []
    for name, q in (summary.get("quotas") or {}).items():
        for res, cell in (q.get("resources") or {}).items():
            limit = cell.get("max")
            peak = cell.get("peak", cell.get("used", 0))
            if limit is not None and peak is not None and peak > limit:
                over.append(f"{name}/{res}")
    for name, cq in (summary.get("clusterQueues") or {}).items():
        for res, cell in (cq.get("resources") or {}).items():
            if (cell.get("available") or 0) < 0:
                over.append(f"{name}/{res}")
    api_server = sim.api
    st = api_server.stats
    lost = sorted(
        k
        for k in replacements
        if k not in st.bound_at and k not in api_server.pods and k not in st.preempted
    )
    return {
        "gangsPartiallyBound": sorted(partial),
        "quotaExceeded": sorted(over),
        "replacementPodsLost": lost,
    }
