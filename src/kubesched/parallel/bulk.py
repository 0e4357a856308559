"""The binder's bulk fast path: a shard's fast-path proposals committed as one batch.

When binds complete at once (the benchmark's in-memory API server: the client is a
:class:`~kubesched.parallel.host.BulkBinds` whose ``bulk_binds`` is true), the proposals of
one shard message that pass the fast check (:mod:`~kubesched.parallel.fastpath`) are
committed together instead of one binding cycle each:

1. every proposal of the run is checked against the generations as they were *before* the
   run -- correct because one shard's proposals of one message were decided in order on a
   replica that already held the earlier ones (assumed), so each saw the node with its
   predecessors on it, which is what the authoritative node will hold;
2. one ``bind_many`` call binds them all in the API server, whose watcher hears them in one
   ``on_pods_bound`` call: the coordinator's cache counts each Pod as bound (it skips the
   assume / confirm pair, which is only observable while a bind is in flight, and an
   in-memory bind never is) and streams one ``Bound`` entry each, as before;
3. per Pod, the metrics the serial binding cycle records (attempt result and duration,
   scheduling SLI, the ``Bind`` extension point) and the queue's ``done``.

A proposal that needs the **full check** (a spread Pod, say) joins the run too once the
check passed (:meth:`BulkCommitter.add_checked`): it is assumed in the cache at once, so the
next check -- and the kept PreFilter results, which hear every assume -- counts it, and it is
bound with the run (the API server's notification confirms the assumed Pod).  The run's
fast-path proposals, which the cache does not hold until they are bound, are flushed before
each full check (:meth:`BulkCommitter.settle`), so every check sees every earlier commit.

Only profiles whose commit is exactly that take this path: the fast path's conditions (no
Reserve / Permit / PreBind plugins, node-local Filters) plus no PostBind plugin, the
DefaultBinder as the only Bind plugin, and no extenders; nor do Pods with resource claims.
A bind that fails (the Pod was deleted meanwhile) fails the Pod as the serial binding cycle
does (a full-checked Pod is forgotten first).  Anything else (gangs, failures) goes through
the binder one by one, after the run so far is flushed, so results are still handled in the
shard's order.
"""

from __future__ import annotations

import time

from kubesched.config import names
from kubesched.framework.interface import SUCCESS, Code, Status
from kubesched.framework.runtime import Framework
from kubesched.parallel import protocol as p
from kubesched.parallel.dispatcher import InFlight
from kubesched.parallel.host import BinderCore, BulkBinds

DEFAULT_BINDER = names.DEFAULT_BINDER

Item = tuple[p.Propose, InFlight, Framework, int, str, bool]
"""A proposal of the run: its result tuple, dispatcher record, profile, node row, the node
it is bound to, and whether it was full-checked -- then that node is the one the check
passed (the proposed one or an alternative), where the Pod is assumed already
(:meth:`BulkCommitter.add_checked`); else it is a fast-path proposal of its own node."""


class BulkCommitter:
    """Collects a shard's fast-path proposals and commits them together (module doc)."""

    def __init__(self, binder: BinderCore) -> None:
        self.binder = binder
        self.run: list[Item] = []
        self.fast_items = 0
        """Of the run, fast-path proposals (not in the cache until the bind)."""
        self.shard = -1
        self._ok: dict[str, bool] = {}
        self._client: tuple[object, BulkBinds | None] = (None, None)
        """The API client last seen, and it as a :class:`BulkBinds` (None: it is not one)."""

    def enabled(self) -> bool:
        """Whether the API client binds at once (so a batch may be bound in one call)."""
        return self._bulk_client() is not None

    def _bulk_client(self) -> BulkBinds | None:
        """The API client, if it is a :class:`BulkBinds` whose binds complete at once now.
        Whether it is one is asked once per client object (a runtime Protocol check costs
        tens of microseconds; this runs once per shard message)."""
        api = self.binder.hub.api
        seen, bulk = self._client
        if api is not seen:
            bulk = api if isinstance(api, BulkBinds) else None
            self._client = (api, bulk)
        return bulk if bulk is not None and bulk.bulk_binds else None

    def profile_ok(self, fwk: Framework) -> bool:
        """Whether the profile's commit is only the DefaultBinder's bind."""
        ok = self._ok.get(fwk.profile_name)
        if ok is None:
            plugins = fwk.plugins
            ok = (
                self.binder.fast_ok(fwk)
                and not plugins["post_bind"]
                and [pl.name for pl in plugins["bind"]] == [DEFAULT_BINDER]
                and self.binder.hub.extenders is None
            )
            self._ok[fwk.profile_name] = ok
        return ok

    def offer(self, shard: int, res: p.Propose, rec: InFlight, fwk: Framework) -> bool:
        """Take the proposal into the run if it may be committed in bulk."""
        binder = self.binder
        row = binder.hub.cluster.nodes.row_of.get(res.node)
        if (
            row is None
            or not self.profile_ok(fwk)
            or not binder.fast.check(binder.fast.allowed(fwk, res.local), shard, row, res.version)
        ):
            return False
        self.shard = shard
        self.run.append((res, rec, fwk, row, res.node, False))
        self.fast_items += 1
        return True

    def settle(self) -> None:
        """Before a full check: the run's fast-path proposals go into the cache (bound), so
        the check sees them; the run's full-checked Pods are assumed there already."""
        if self.fast_items:
            self.flush()

    def add_checked(
        self, shard: int, res: p.Propose, rec: InFlight, fwk: Framework, node: str
    ) -> bool:
        """Take a proposal the full check passed on ``node`` into the run, assumed in the
        cache at once (the next check, and the kept PreFilter results, count it), if its
        profile's commit is only the bind (:meth:`profile_ok`) and it claims nothing."""
        if not self.profile_ok(fwk) or rec.qp.pod.has_claims:
            return False
        binder = self.binder
        hub = binder.hub
        pod = rec.qp.pod
        row = hub.cluster.nodes.row_of[node]
        base = binder.fast.base(shard, row)
        hub.committer.assume(pod, node)
        if node == res.node:  # the shard's replica holds it there: its chain goes on
            binder.fast.committed(shard, row, base)
        self.shard = shard
        self.run.append((res, rec, fwk, row, node, True))
        return True

    def flush(self) -> None:
        """Commit the run collected so far (see the module docstring)."""
        run, self.run = self.run, []
        self.fast_items = 0
        if not run:
            return
        binder, shard = self.binder, self.shard
        hub = binder.hub
        t0 = time.perf_counter()
        bases: dict[int, int] = {}
        for res, rec, _, row, _, checked in run:
            if not checked and row not in bases:
                bases[row] = binder.fast.base(shard, row)
            hub.committing(res.key, shard, rec.sent)
        api = self._bulk_client()
        assert api is not None  # a run is collected only while enabled()
        t1 = time.perf_counter()
        errors = api.bind_many([(item[1].qp.pod, item[4]) for item in run])
        share = (time.perf_counter() - t1) / len(run)
        now = hub.clock()
        stats, pm, metrics = binder.stats, hub.parallel_metrics, hub.metrics
        for (res, rec, fwk, _, node, checked), err in zip(run, errors, strict=True):
            qp = rec.qp
            if err is not None:  # the proposer's replica must forget its assumed copy
                hub.forget_proposal(res.key)
                status = Status(Code.ERROR, (str(err),))
                if checked and hub.cluster.is_assumed(res.key):
                    hub.committer.forget(qp.pod.bound_to(node), status)
                binder.refused[shard].append((res.key, "bind_failed"))
                hub.failing.fail(fwk, qp, status, rec.cycle, rec.start)
                pm.result(shard, "error")
                continue
            if not checked:  # a full-checked Pod was counted when it was checked
                stats.committed["fast"] += 1
                pm.result(shard, "committed")
                binder.settled(res.key)
            fwk._timed("Bind", time.perf_counter() - share, SUCCESS)
            hub.failing.record("scheduled", fwk, rec.start)
            first = qp.initial_attempt_timestamp
            metrics.record_scheduled(qp.attempts, now - (first if first is not None else now))
            hub.failing.clear(res.key)
            hub.queue.done(qp.pod)
        for row, base in bases.items():
            binder.fast.committed(shard, row, base)
        dt = time.perf_counter() - t0
        stats.seconds += dt
        for item in run:  # a full-checked Pod's time was observed when it was checked
            if not item[5]:
                pm.binder_seconds("fast", dt / len(run))
