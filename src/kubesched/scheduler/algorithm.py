"""The scheduling algorithm: find the node for one Pod (upstream ``schedulePod``).

PreFilter, the nominated node first, Filter over the round-robin window of
``percentageOfNodesToScore``, filter extenders, PreScore/Score and extenders'
priorities, then ``select_host``; or reuse of the previous equivalent Pod's results
(:mod:`kubesched.framework.batch`); a Pod every node rejects for static reasons takes its
kept Filter outcome (:mod:`kubesched.framework.verdicts`)."""

from __future__ import annotations

import logging
import time
from collections import Counter

import numpy as np

from kubesched.api import objects as api
from kubesched.framework import batch
from kubesched.framework.batch import BatchEntry
from kubesched.framework.extender import ExtenderError
from kubesched.framework.extenders import EXTENDER_NAME
from kubesched.framework.interface import (
    Code,
    CycleState,
    IntArray,
    Status,
)
from kubesched.framework.runtime import FilterOutcome, Framework, PluginError, ScoreOutcome
from kubesched.framework.verdicts import StaticFailure
from kubesched.scheduler.base import SchedulerBase
from kubesched.scheduler.types import (
    NO_NODES_AVAILABLE,
    Diagnosis,
    FitError,
    NoNodesError,
    ScheduleResult,
    num_feasible_nodes_to_find,
)

log = logging.getLogger("kubesched.scheduler")


class AlgorithmMixin(SchedulerBase):
    """Part of :class:`kubesched.scheduler.Scheduler`; see the module docstring."""

    # ------------------------------------------------------------------ algorithm
    def candidate_rows(self) -> IntArray:
        """Rows the search walks (every live node; a parallel shard narrows this to its
        partition first, see :mod:`kubesched.parallel.shard`)."""
        return self.cluster.nodes.order()

    def schedule_pod(self, fwk: Framework, state: CycleState, pod: api.Pod) -> ScheduleResult:
        """Find the node for ``pod`` (upstream ``schedulePod``); raises :class:`FitError`."""
        table = self.cluster.nodes
        order = self.candidate_rows()
        n = int(order.size)
        self.last_search_nodes = n
        if n == 0:
            raise NoNodesError(NO_NODES_AVAILABLE)
        nominator = self.queue.nominator
        # A nominated Pod tries its nominated node first (below), so it never reuses results.
        nominated = pod.nominated_node_name or nominator.node_of(pod.key)
        signature = None
        if self.batch.enabled and not nominated:
            cycle = self.queue.scheduling_cycle
            signature = self._sign(fwk, pod)
            entry = self.batch.lookup(
                fwk.profile_name, signature, cycle, self.cluster, nominator.version
            )
            if entry is not None:
                reused = self._schedule_from_entry(fwk, state, pod, entry)
                if reused is not None:
                    return reused
                state.clear()
                state.skip_filter.clear()
                state.skip_score.clear()
        pre, status, rejectors = fwk.run_pre_filter(state, pod)
        if not status.is_success():
            if not status.is_rejected():
                raise PluginError(status.plugin, status.message())
            raise FitError(
                Diagnosis(n, Counter(), rejectors, pre_filter_msg=status.message(), absent=status)
            )
        static_key = None  # kept outcomes cover every node (not a shard's partition)
        if not (len(nominator) or nominated or self.extenders is not None) and (
            self.static_failures.enabled
            and (pre is None or pre.node_names is None)
            and n == len(table)
        ):
            static_key = signature if signature is not None else fwk.sign(pod)
        if static_key is not None:
            kept = self.static_failures.lookup(fwk.profile_name, static_key, self.cluster)
            if kept is not None:
                raise FitError(self._static_diagnosis(fwk, kept, n))
        if nominated and nominated in table.row_of:
            # Upstream evaluateNominatedNode: the node preemption made room on is tried first.
            one = np.asarray([table.row_of[nominated]], dtype=np.int64)
            fits = fwk.run_filter_with_nominated(state, pod, one).feasible
            if fits.size and self._nominated_passes_extenders(pod, fits):
                return ScheduleResult(nominated, 1, 1)
        candidates = order
        absent: Status | None = None
        if pre is not None and pre.node_names is not None:
            rows = [table.row_of[nm] for nm in sorted(pre.node_names) if nm in table.row_of]
            candidates = np.asarray(rows, dtype=np.int64)
            absent = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                (f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(rejectors))}]",),
            )
        m = int(candidates.size)
        to_find = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, m)
        if not fwk.has_score_plugins() and not self._extenders_filter_or_score():
            to_find = min(to_find, 1)
        start = self.next_start_node_index % max(m, 1)
        rotated = np.concatenate([candidates[start:], candidates[:start]]) if start else candidates
        # Filter extenders may reject every feasible node: then all nodes' reasons are wanted.
        narrow = self.extenders is None
        before = dict(fwk.evaluations) if static_key is not None else {}
        outcome = fwk.find_nodes_that_pass_filters(state, pod, rotated, to_find, narrow=narrow)
        self.next_start_node_index = (self.next_start_node_index + outcome.processed) % n
        if static_key is not None and outcome.feasible.size == 0 and absent is None:
            added = {k: c - before.get(k, 0) for k, c in fwk.evaluations.items()}
            evaluated = {k: c for k, c in added.items() if c}
            self.static_failures.store(fwk, state, pod, static_key, outcome, evaluated)
        feasible = outcome.feasible
        removed = False
        if self.extenders is not None and feasible.size:
            outcome, removed = self._filter_by_extenders(pod, outcome)
            feasible = outcome.feasible
        if feasible.size == 0:
            counts = outcome.reason_counts()
            if absent is not None and n > outcome.failed.size:
                counts[absent.reasons[0]] += n - int(outcome.failed.size)
            plugins = rejectors | outcome.rejecting_plugins()
            if removed:
                plugins.add(EXTENDER_NAME)
            raise FitError(Diagnosis(n, counts, plugins, outcome=outcome, absent=absent))
        if feasible.size == 1:  # upstream scores nothing then; reuse keeps the one node
            entry = None
            if self.batch.enabled and signature is not None:
                looked_at = rotated[: outcome.processed]
                alone = ScoreOutcome(np.zeros(1, dtype=np.int64))
                entry = batch.build_entry(fwk, state, signature, feasible, alone, 0, looked_at)
            return ScheduleResult(table.names[int(feasible[0])], outcome.processed, 1, entry)
        pre_status = fwk.run_pre_score(state, pod, feasible)
        if not pre_status.is_success():
            raise PluginError(pre_status.plugin, pre_status.message())
        if not fwk.has_score_plugins() and self.extenders is None:
            return ScheduleResult(
                table.names[int(feasible[0])], outcome.processed, int(feasible.size)
            )
        scored = fwk.run_score(state, pod, feasible)
        if self.extenders is not None:  # upstream prioritizeNodes: extender scores added
            scored.total = scored.total + self.extenders.prioritize(pod, table, feasible).total
        pick = self.select_host(scored.total, feasible)
        entry = None
        if self.batch.enabled and signature is not None:
            looked_at = rotated[: outcome.processed]
            entry = batch.build_entry(fwk, state, signature, feasible, scored, pick, looked_at)
        return ScheduleResult(
            table.names[int(feasible[pick])], outcome.processed, int(feasible.size), entry
        )

    def _static_diagnosis(self, fwk: Framework, kept: StaticFailure, n: int) -> Diagnosis:
        """The Filter pass of a static failure, from the kept outcome (see
        :mod:`kubesched.framework.verdicts`): the same diagnosis, round-robin index and
        evaluation counts as the full pass."""
        start = time.perf_counter()
        ev = fwk.evaluations
        for key, count in kept.evaluations.items():
            ev[key] = ev.get(key, 0) + count
        self.next_start_node_index = (self.next_start_node_index + kept.outcome.processed) % n
        fwk.record_filter_duration(start)
        counts = Counter(kept.reason_counts)
        return Diagnosis(n, counts, set(kept.plugins), outcome=kept.outcome)

    # ------------------------------------------------------------------ extenders
    def _sign(self, fwk: Framework, pod: api.Pod) -> tuple[object, ...] | None:
        """The Pod's result-reuse signature; None (unsignable) when an extender is
        interested in it, since an extender's answers are not known to be reusable."""
        if self.extenders is not None and self.extenders.interested(pod):
            return None
        return fwk.sign(pod)

    def _extenders_filter_or_score(self) -> bool:
        """Upstream ``hasExtenderFilters || hasScoring`` (the extender part)."""
        e = self.extenders
        return e is not None and (e.has_filters() or e.has_prioritizers())

    def _nominated_passes_extenders(self, pod: api.Pod, rows: IntArray) -> bool:
        """Upstream ``evaluateNominatedNode``: the nominated node must pass the filter
        extenders too; an extender error only skips the shortcut (upstream logs it)."""
        if self.extenders is None:
            return True
        try:
            return bool(self.extenders.filter(pod, self.cluster.nodes, rows).feasible.size)
        except ExtenderError as e:
            log.warning("evaluating nominated node of %s: %s", pod.key, e)
            return False

    def _filter_by_extenders(
        self, pod: api.Pod, outcome: FilterOutcome
    ) -> tuple[FilterOutcome, bool]:
        """Run the filter extenders over the feasible nodes (upstream
        ``findNodesThatPassExtenders``); their rejections join the outcome's failures.
        Also whether extenders removed any node.  Raises :class:`ExtenderError`."""
        assert self.extenders is not None
        ext = self.extenders.filter(pod, self.cluster.nodes, outcome.feasible)
        if not ext.removed and ext.failed.size == 0:
            return outcome, False
        statuses = list(outcome.statuses)
        ids = {st: i for i, st in enumerate(statuses)}
        sid = [ids.setdefault(st, len(ids)) for st in ext.statuses]
        statuses.extend(list(ids)[len(statuses) :])
        merged = FilterOutcome(
            feasible=ext.feasible,
            failed=np.concatenate([outcome.failed, ext.failed]),
            failed_status=np.concatenate([outcome.failed_status, np.asarray(sid, np.int64)]),
            statuses=statuses,
            processed=outcome.processed,
        )
        return merged, ext.removed

    def _schedule_from_entry(
        self, fwk: Framework, state: CycleState, pod: api.Pod, entry: BatchEntry
    ) -> ScheduleResult | None:
        """Reuse the previous equivalent Pod's results (see :mod:`kubesched.framework.batch`);
        None when the entry cannot serve, and the full path runs instead."""
        reason = batch.reuse(fwk, state, pod, entry)
        if reason:
            self.batch.invalidate(reason)
            return None
        pick = self.select_host(entry.total, entry.rows, ties=entry.tied())
        entry.chosen = pick
        entry.uses += 1
        n = max(len(self.cluster.nodes), 1)
        self.next_start_node_index = (self.next_start_node_index + entry.processed) % n
        return ScheduleResult(
            self.cluster.nodes.names[int(entry.rows[pick])],
            entry.processed,
            int(entry.rows.size),
            entry,
        )

    def select_host(
        self,
        total: IntArray | None,
        rows: IntArray,
        order: IntArray | None = None,
        ties: IntArray | list[int] | None = None,
    ) -> int:
        """Index into ``rows`` of the highest total score.

        Ties are broken uniformly at random by the seeded generator, over the tied nodes in
        row order, so the pick does not depend on where the round-robin search started.
        ``order`` (int64, ``argsort(rows)``), when the caller keeps it, saves sorting the
        ties; ``ties``, when the caller keeps them (a reuse entry's
        :meth:`~kubesched.framework.batch.BatchEntry.tied`), saves finding them.
        """
        if total is None:
            return 0
        if ties is not None:
            if len(ties) == 1:
                return int(ties[0])
            return int(ties[int(self.rng.integers(len(ties)))])
        top = total.max()
        if order is None:
            best = np.flatnonzero(total == top)
            if best.size == 1:
                return int(best[0])
            best = best[np.argsort(rows[best], kind="stable")]
        else:
            best = order[total[order] == top]
            if best.size == 1:
                return int(best[0])
        return int(best[int(self.rng.integers(best.size))])
