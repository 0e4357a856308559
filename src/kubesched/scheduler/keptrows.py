"""Failed passes kept per node: a Pod every node rejects, for reasons that depend on each
node's own Pods, answered for the next equivalent Pod by filtering only the nodes that changed.

A preemptor fails Filter on every node (each is full) and then preempts on one of them; the
next preemptor like it fails on every node again, and the only nodes whose verdict can have
moved are those whose Pods, Node object or nominated Pods changed in between.  When every
Filter plugin that runs is row-local or node-only (the framework's ``row_local_key``: the
verdict for a node depends on the Pod, that node and the Pods on it and nominated to it), the
verdict of each node is kept with the node's ``generation`` (bumped when a Pod or the Node
changes there); the nominator's journal names the nodes whose nominations changed.  A Pod
with the same key re-filters those nodes only, in one Filter call: when all of them still
fail, its outcome is the full pass's (every node failed, each with the status the full pass
gives it; ``processed`` every node, so the round-robin index does not move); when one passes,
the full pass runs as usual.

Only a pass over every node (no PreFilter narrowing, no extenders) by a Pod that is not
nominated is kept or answered.  The nodes answered from the kept verdicts evaluate no Filter
plugin (``scheduler_plugin_evaluation_total``), as Pods reusing results do.

Arrays: ``rows`` int64 ``(n,)`` node-table rows; per-row columns have the table's capacity.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from kubesched.api import objects as api
from kubesched.framework.interface import CycleState, IntArray, Status
from kubesched.framework.outcomes import FilterOutcome
from kubesched.framework.runtime import Framework
from kubesched.queue.nominator import Nominator
from kubesched.state.nodes import NodeTable


@dataclass(slots=True)
class KeptFailure:
    """The verdict of every node for one key."""

    key: Hashable
    table_version: int
    nominations: int
    """The nominator's version the verdicts hold for."""
    generation: IntArray
    """int64 ``(capacity,)``: each row's generation when its verdict was found; -1 for a
    row without a verdict (generations are never negative, so such a row always compares
    as changed)."""
    status: IntArray
    """int64 ``(capacity,)``: index into :attr:`statuses` of each row's verdict (-1: none)."""
    statuses: list[Status]
    ids: dict[Status, int]


class KeptFailures:
    """One scheduler's kept failed pass (the last key that failed everywhere)."""

    def __init__(self) -> None:
        self.enabled = True
        self.kept: KeptFailure | None = None
        self.last: tuple[IntArray, FilterOutcome] | None = None
        """The rows and the outcome the last answer gave: given again (the same object)
        while no verdict changed, so what is derived from it is kept too (the preemption
        plugin's per-row codes, the diagnosis's counts)."""
        self.hits = 0
        """Passes answered from kept verdicts."""

    def outcome(
        self,
        fwk: Framework,
        state: CycleState,
        pod_key: Hashable,
        pod: api.Pod,
        rows: IntArray,
        table: NodeTable,
        nominator: Nominator,
    ) -> FilterOutcome | None:
        """The full pass's outcome over ``rows`` (every live row, in walk order) for a Pod
        of ``pod_key``, or None when nothing is kept for it or a changed node now passes."""
        kept = self.kept
        if (
            kept is None
            or kept.key != pod_key
            or kept.table_version != table.version
            or kept.generation.shape != table.generation.shape
        ):
            return None
        names = nominator.changed_since(kept.nominations)
        if names is None:
            self.kept = None
            return None
        # stale rows marked over the whole table (the columns compared as they are), then
        # read in ``rows``' order: fewer index operations than comparing ``rows``' entries;
        # a row without a verdict has generation -1 (:attr:`KeptFailure.generation`)
        mark = table.generation != kept.generation
        if names:
            row_of = table.row_of
            moved = [row_of[n] for n in names if n in row_of]
            if moved:
                mark[moved] = True
        again = rows[mark[rows]]
        same = True
        if again.size:
            out = fwk.run_filter_with_nominated(state, pod, again)
            if out.feasible.size:
                self.kept = None
                return None
            if again.shape[0] == 1:  # the usual one changed node: ints, no index arrays
                row = int(again[0])
                sid = self._intern(kept, out.statuses[int(out.failed_status[0])])
                same = int(kept.status[row]) == sid
                kept.status[row] = sid
                kept.generation[row] = table.generation[row]
            else:
                ids = [self._intern(kept, st) for st in out.statuses]
                now = np.asarray(ids, dtype=np.int64)[out.failed_status]
                same = bool((kept.status[out.failed] == now).all())
                kept.status[out.failed] = now
                kept.generation[again] = table.generation[again]
        kept.nominations = nominator.version
        self.hits += 1
        last = self.last
        if (
            same
            and last is not None
            and (
                last[0] is rows  # the search's read-only rotation, given again
                or (last[0].shape == rows.shape and bool((last[0] == rows).all()))
            )
        ):
            return last[1]
        outcome = FilterOutcome(
            feasible=np.zeros(0, dtype=np.int64),
            failed=rows,
            failed_status=kept.status[rows],
            statuses=list(kept.statuses),
            processed=int(rows.size),
        )
        # rows nobody can change are kept as they are (then compared by identity)
        self.last = (rows if not rows.flags.writeable else rows.copy(), outcome)
        return outcome

    @staticmethod
    def _intern(kept: KeptFailure, status: Status) -> int:
        sid = kept.ids.get(status)
        if sid is None:
            sid = kept.ids[status] = len(kept.statuses)
            kept.statuses.append(status)
        return sid

    def store(
        self,
        pod_key: Hashable,
        outcome: FilterOutcome,
        rows: IntArray,
        table: NodeTable,
        nominator: Nominator,
    ) -> None:
        """Keep a full pass's ``outcome`` over ``rows`` (every live row) if every node
        failed; otherwise forget what was kept."""
        self.last = None
        if outcome.feasible.size or outcome.failed.size != rows.size:
            self.kept = None
            return
        status = np.full(table.capacity, -1, dtype=np.int64)
        status[outcome.failed] = outcome.failed_status
        generation = table.generation.copy()
        generation[status < 0] = -1  # no verdict: always stale
        statuses = list(outcome.statuses)
        self.kept = KeptFailure(
            key=pod_key,
            table_version=table.version,
            nominations=nominator.version,
            generation=generation,
            status=status,
            statuses=statuses,
            ids={st: i for i, st in enumerate(statuses)},
        )
