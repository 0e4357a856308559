"""Auto routing: which Pods the coordinator schedules itself and which go to the shards.

The pipeline (dispatcher, shards, binder) pays for itself only where the search it
parallelises costs more than the bookkeeping it adds per Pod (docs/parallel.md §4): with
result reuse a SchedulingBasic Pod's search is ~30 µs of a ~70 µs serial cycle and two
shards lose to the serial scheduler; a Pod with inter-pod anti-affinity searches for
~400 µs and two shards win 1.5×.  So with routing on (``bench --shard-routing auto``,
``routing="auto"`` in :func:`~kubesched.parallel.factory.make_scheduler`) the coordinator
decides per Pod *signature* (the profile and result reuse's signature,
``Framework.sign``: Pods every plugin treats alike) whether to run the Pod's cycle itself --
the serial scheduler's cycle on the authoritative cache, its bind streamed to the shards
like any other -- or to hand it to a shard.

The decision applies the throughput model of docs/parallel.md §5 to what this run measured
(exponentially weighted moving averages of per-batch figures, CPU seconds per Pod, see
:class:`Batch` and :mod:`~kubesched.parallel.routing`):

- per signature, the search (``schedule_pod``) in the coordinator (``S_c``) and on the
  shards (``S_s``, reported per Pod with each answer);
- per signature too, the rest of its serial cycle (``r``: pop, assume, bind, the
  confirming event, the stream entry -- or failure handling and preemption);
- for the pipeline, the coordinator's time per Pod it hands out and commits (``c_h``:
  dispatch, messages, the binder; blocked receives and serial cycles excluded, pickling the
  stream counted per entry), a shard's time per Pod besides the search (``o_s``) and a
  shard's time applying one stream entry (``c_f``).

With N shards on C usable cores (at most N + 1: the coordinator and the shards)::

    serial   t_1 = S_c + r
    pipeline t_N = max(c_h, (S_s + o_s + N c_f) / N, (c_h + S_s + o_s + N c_f) / C) * (1 + f)

(``f``: the share of the signature's answers the binder refused -- each refusal is one more
pass) and a signature goes to the shards while ``MARGIN · t_N < t_1`` (see :data:`MARGIN`).
Both routes are measured by running them: a new signature runs :data:`PROBE_SERIAL` Pods
serially, then :data:`PROBE_SHARDS` on the shards, then (once the shards' answers are in)
takes the better route for :data:`FIRST_STRETCH` Pods, the stretch doubling (up to
:data:`LAST_STRETCH`) while the decision stands.  After a stretch the other route is probed
again only while the verdict is close (:data:`CLEAR`), and a stretch whose own figures
clearly turn the verdict ends early (:data:`RECHECK`).  A signature is never probed on the
shards when that cannot pay: the model with the pipeline's figures (once measured) clearly
keeps it serial, or, before them, its search is below a floor (:meth:`Router._keep_serial`).  Gang
members always go to the shards (the dispatcher keeps a gang on one shard).  The router
only decides *where* a Pod is scheduled: the binder still checks every proposal, so a wrong
guess costs time, never correctness.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

MARGIN = 1.2
"""The pipeline must win by this factor once both routes are measured: the model's
realisation scatters both ways (85-99 % on free cores for SchedulingBasic with result reuse
off; 118 % for anti-affinity, whose pipeline ran at 1.6x serial where the model said
1.29x: at 1.3 that signature stayed serial); a wrong turn to the pipeline is what makes a
run slower than serial (docs/parallel.md §3.1)."""
PROBE_MARGIN = 1.3
"""The margin of the floor below which a signature is never probed
(:meth:`Router._keep_serial`): a probe also drags the shards' catch-up along."""
CLEAR = 1.25
"""A verdict is *clear* when the losing route is slower by this factor beyond
:data:`MARGIN`: then no probe of the other route is sent (a probe to the shards drags the
whole stream since their last message along, ~10-14 µs per entry in every shard)."""
PROBE_SERIAL = 128
PROBE_SHARDS = 128
FIRST_STRETCH = 1024
LAST_STRETCH = 131072
RECHECK = 128
"""Within a stretch on the shards, the verdict is looked at again every this many Pods: a
stretch whose own figures clearly turn it (say, the binder refusing the signature's
proposals again and again) ends early.  A serial stretch runs to its end: a wrong turn to
the pipeline is the costly one, and under load the serial figures scatter most."""
SAMPLE_EVERY = 8
"""Past the first :data:`MIN_BATCH` Pods of a serial stretch, one serial cycle in this many
is timed for the router (its search and the rest; the others cost nothing)."""
ALPHA = 0.02
"""EWMA weight of one Pod's measurement (~50 Pods of memory)."""
MIN_BATCH = 32
"""Pipeline figures are folded in per at least this many Pods (steps are lumpy)."""
HUB_FLOOR = 2.0
"""The coordinator's CPU per Pod handed to the shards, in units of the Pod's serial rest
``r``, assumed before the pipeline was measured (:meth:`Router._keep_serial`): it
dispatches the Pod, pickles it and its commit, checks and commits the proposal (the
commit alone is about ``r``); measured 2.1-3.3 ``r`` (TopologySpreading 3.1: 291 against
95 µs)."""


@dataclass(slots=True)
class Ewma:
    """An exponentially weighted moving average of per-Pod figures (None: no sample)."""

    value: float | None = None

    def add(self, per_pod: float, pods: int = 1) -> None:
        """Fold in ``pods`` Pods that cost ``per_pod`` each."""
        if self.value is None:
            self.value = per_pod
        else:
            self.value += (1.0 - (1.0 - ALPHA) ** pods) * (per_pod - self.value)


@dataclass(slots=True)
class Batch:
    """Figures gathered until there are :data:`MIN_BATCH` Pods, then folded into an
    :class:`Ewma`: per-Pod samples (:meth:`one`) by their mean without the batch's largest
    (one garbage collection inside a cycle, or a signature's first search without result
    reuse, does not decide a batch), per-step totals (:meth:`add`) by seconds over Pods."""

    avg: Ewma = field(default_factory=Ewma)
    seconds: float = 0.0
    pods: int = 0
    samples: list[float] = field(default_factory=list)

    def add(self, seconds: float, pods: int) -> None:
        self.seconds += seconds
        self.pods += pods
        if self.pods >= MIN_BATCH:
            self.avg.add(self.seconds / self.pods, self.pods)
            self.seconds, self.pods = 0.0, 0

    def one(self, seconds: float) -> None:
        self.samples.append(seconds)
        if len(self.samples) >= MIN_BATCH:
            trimmed = sum(self.samples) - max(self.samples)
            self.avg.add(trimmed / (len(self.samples) - 1), len(self.samples))
            self.samples.clear()


@dataclass(slots=True)
class Signature:
    """One signature's figures and where its Pods go now."""

    serial_search: Batch = field(default_factory=Batch)
    serial_rest: Batch = field(default_factory=Batch)
    """The rest of this signature's serial cycle (a Pod that fails or preempts costs far
    more than one that binds, and must not tilt the others' figures)."""
    shard_search: Batch = field(default_factory=Batch)
    serial: bool = True
    """The current route: True for the coordinator's own cycle."""
    left: int = PROBE_SERIAL
    """Pods still to route this way before the next decision."""
    probing: bool = True
    stretch: int = FIRST_STRETCH
    best: bool | None = None
    """The route the model chose last (None: not decided yet)."""
    seen: int = 0
    """Pods routed."""
    tried: bool = False
    """Whether Pods of this signature were sent to the shards to measure them."""
    run: int = 0
    """Pods routed since the last decision (for :attr:`Router.timing`)."""
    answers: int = 0
    refusals: int = 0
    """The shards' answers for this signature, and how many of them the binder refused
    (each refusal is one more pass through the pipeline: contested victims of preemptors,
    the last free slots)."""


def usable_cores(shards: int) -> int:
    """Cores the coordinator and ``shards`` shard processes can use at once."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, shards + 1))


class Router:
    """Per-signature routing for a coordinator with ``shards`` shards (module docstring)."""

    def __init__(self, shards: int, cores: int | None = None) -> None:
        self.shards = shards
        self.cores = cores or usable_cores(shards)
        self.sigs: dict[Hashable, Signature] = {}
        self.serial_rest = Batch()
        self.hub = Batch()
        self.shard_rest = Batch()
        self.apply = Batch()
        self.encode = Batch()
        self.routed: Counter[str] = Counter()
        self.flips = 0
        self._key: Hashable = None
        self._sig = Signature()
        """The last key :meth:`serial` was asked about, and its figures."""
        self.timing = False
        """Whether the serial cycle of the Pod :meth:`serial` just routed is to be measured
        (chosen for it, or run here anyway: a nominated Pod): every one while probing or
        early in a stretch, then one in :data:`SAMPLE_EVERY`."""

    # ------------------------------------------------------------------ deciding
    def serial(self, key: Hashable) -> bool:
        """Route one Pod of signature ``key``: True for the coordinator's own cycle."""
        if key is self._key:  # the same key object as the last Pod's: no hash
            sig = self._sig
        else:
            got = self.sigs.get(key)
            sig = self.sigs[key] = Signature() if got is None else got
            self._key, self._sig = key, sig
        if (
            not (sig.serial or sig.probing)
            and sig.run % RECHECK == RECHECK - 1
            and self._turned(sig)  # the shards' own figures turned the verdict
        ):
            sig.left = 0
        if sig.left <= 0:
            self._next(sig)
        sig.left -= 1
        sig.seen += 1
        run = sig.run = sig.run + 1
        self.timing = sig.probing or run <= MIN_BATCH or run % SAMPLE_EVERY == 0
        if sig.serial:
            self.routed["serial"] += 1
            return True
        self.routed["shards"] += 1
        return False

    def _route(self, sig: Signature, serial: bool, left: int) -> None:
        sig.serial, sig.left, sig.run = serial, left, 0
        sig.tried = sig.tried or not serial

    def _next(self, sig: Signature) -> None:
        if not sig.probing:  # a stretch ended: probe the other route unless clear
            if sig.tried:
                stay = self._clear(sig) and self.prefers_serial(sig) == sig.serial
            else:  # a serial stretch of a signature never sent to the shards
                stay = self._keep_serial(sig)
            if stay:
                sig.stretch = min(2 * sig.stretch, LAST_STRETCH)
                self._route(sig, sig.serial, sig.stretch)
                return
            sig.probing = True
            self._route(sig, not sig.serial, PROBE_SERIAL if not sig.serial else PROBE_SHARDS)
            return
        if sig.serial_search.avg.value is None and sig.seen < 4 * PROBE_SERIAL:
            # not measured yet (only steps without messages in flight count): once more
            self._route(sig, True, PROBE_SERIAL)
            return
        if not sig.tried and self._keep_serial(sig):
            best = True  # no probe: the pipeline cannot pay for this signature
        elif sig.shard_search.avg.value is None or not self.piped():
            # the shards not tried yet: try them; else their answers are on the way
            self._route(sig, sig.tried, PROBE_SERIAL if sig.tried else PROBE_SHARDS)
            return
        else:
            best = self.prefers_serial(sig)
        if best == sig.best:
            sig.stretch = min(2 * sig.stretch, LAST_STRETCH)
        else:
            sig.stretch = FIRST_STRETCH
            self.flips += sig.best is not None
        sig.best, sig.probing = best, False
        self._route(sig, best, sig.stretch)

    def _keep_serial(self, sig: Signature) -> bool:
        """Whether a signature never sent to the shards stays serial without a probe: the
        pipeline, as measured for other signatures, loses clearly; or, before any such
        figures, even a pipeline costing the coordinator :data:`HUB_FLOOR` times this
        signature's serial rest ``r`` per Pod and a shard ``r`` besides the search (no
        stream upkeep) would lose -- the floor below which a probe cannot pay (with 2
        shards on 2 cores, a search under ~2.7 ``r``: TopologySpreading's ~1.9 ``r`` stays
        serial, anti-affinity's ~6 ``r`` is probed)."""
        if self.piped():
            return self._clear(sig) and self.prefers_serial(sig)
        s = sig.serial_search.avg.value
        r = sig.serial_rest.avg.value
        if s is None or r is None:
            return False
        n, cores, hub = self.shards, self.cores, HUB_FLOOR * r
        return PROBE_MARGIN * max(hub, (s + r) / n, (hub + s + r) / cores) >= s + r

    def piped(self) -> bool:
        """Whether the pipeline's own figures (coordinator and shard per Pod) are in."""
        return self.hub.avg.value is not None and self.shard_rest.avg.value is not None

    def prefers_serial(self, sig: Signature) -> bool:
        """The model's verdict for ``sig`` (module docstring)."""
        serial, pipeline = self.predict(sig)
        return MARGIN * pipeline >= serial

    def _turned(self, sig: Signature) -> bool:
        """Whether the model now clearly prefers the route ``sig`` is not on."""
        return self._clear(sig) and self.prefers_serial(sig) != sig.serial

    def _clear(self, sig: Signature) -> bool:
        """Whether the model's verdict for ``sig`` is clear (:data:`CLEAR`)."""
        serial, pipeline = self.predict(sig)
        return MARGIN * pipeline >= CLEAR * serial or CLEAR * MARGIN * pipeline < serial

    def predict(self, sig: Signature) -> tuple[float, float]:
        """Seconds per Pod ``(t_1, t_N)`` for ``sig`` by the model (module docstring)."""
        s_c = sig.serial_search.avg.value
        s_s = sig.shard_search.avg.value
        s_c = s_c if s_c is not None else (s_s or 0.0)
        s_s = s_s if s_s is not None else s_c
        n, cores = self.shards, self.cores
        c_h = (self.hub.avg.value or 0.0) + (self.encode.avg.value or 0.0)
        o_s = self.shard_rest.avg.value or 0.0
        c_f = self.apply.avg.value or 0.0
        shard = s_s + o_s + n * c_f
        rest = sig.serial_rest.avg.value
        serial = s_c + (rest if rest is not None else (self.serial_rest.avg.value or 0.0))
        passes = 1.0 + sig.refusals / sig.answers if sig.answers else 1.0
        return serial, passes * max(c_h, shard / n, (c_h + shard) / cores)

    # ------------------------------------------------------------------ measuring
    def served_serially(self, key: Hashable, seconds: float, search: float) -> None:
        """The coordinator ran a Pod's cycle itself: ``seconds`` in all, ``search`` of it."""
        sig = self.sigs.get(key)
        rest = max(0.0, seconds - search)
        if sig is not None:
            sig.serial_search.one(search)
            sig.serial_rest.one(rest)
        self.serial_rest.one(rest)

    def answered(self, key: Hashable, refused: bool = False) -> None:
        """A shard answered for a Pod of ``key`` (``refused``: the binder refused it)."""
        sig = self.sigs.get(key)
        if sig is not None:
            sig.answers += not refused
            sig.refusals += refused

    def searched_on_shard(self, key: Hashable, seconds: float) -> None:
        """A shard's search for a Pod of ``key`` took ``seconds``."""
        sig = self.sigs.get(key)
        if sig is not None:
            sig.shard_search.one(seconds)

    def shard_message(self, rest: float, apply: float, entries: int, pods: int) -> None:
        """A shard answered ``pods`` Pods spending ``rest`` seconds besides their searches
        and ``apply`` seconds on ``entries`` stream entries."""
        if pods:
            self.shard_rest.add(rest, pods)
        if entries:
            self.apply.add(apply, entries)

    def coordinator_step(self, seconds: float, pods: int) -> None:
        """The coordinator spent ``seconds`` of a step on the pipeline for ``pods`` answers
        (the step's serial cycles, blocked receives and stream pickling excluded)."""
        if pods or seconds:
            self.hub.add(seconds, pods)

    def encoded(self, seconds: float, entries: int) -> None:
        """Pickling ``entries`` stream entries took ``seconds`` (counted per Pod as one
        entry: the commit that streams it)."""
        if entries:
            self.encode.add(seconds, entries)

    def summary(self) -> dict[str, Any]:
        """What the router did and the figures it went by (µs per Pod), JSON-ready."""

        def us(v: float | None) -> float | None:
            return None if v is None else round(1e6 * v, 1)

        busiest = sorted(self.sigs.values(), key=lambda g: -g.seen)[:4]
        return {
            "pods": dict(self.routed),
            "busiest": [
                {
                    "pods": g.seen,
                    "serialSearchUs": us(g.serial_search.avg.value),
                    "serialRestUs": us(g.serial_rest.avg.value),
                    "shardSearchUs": us(g.shard_search.avg.value),
                    "predictedUs": [us(t) for t in self.predict(g)],
                    "serial": g.best,
                }
                for g in busiest
            ],
            "signatures": len(self.sigs),
            "flips": self.flips,
            "cores": self.cores,
            "serialRestUs": us(self.serial_rest.avg.value),
            "coordinatorUs": us(self.hub.avg.value),
            "encodeUsPerEntry": us(self.encode.avg.value),
            "shardRestUs": us(self.shard_rest.avg.value),
            "applyUsPerEntry": us(self.apply.avg.value),
        }
