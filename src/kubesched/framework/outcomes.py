"""What running Filter and Score over arrays of nodes produces, and the merging of the
chunks the round-robin search evaluates (kept apart from the runtime that produces them)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from kubesched.api import objects as api
from kubesched.framework.interface import (
    IntArray,
    Status,
)


@dataclass(slots=True)
class FilterOutcome:
    """What running the Filter plugins over a set of nodes found.

    ``feasible`` : int64 rows that passed every plugin, in evaluation order.
    ``failed`` : int64 rows that some plugin rejected; ``failed_status[i]`` indexes
    ``statuses`` (each Status names the plugin that rejected the node first).
    ``processed`` : how many candidate nodes were looked at.
    """

    feasible: IntArray
    failed: IntArray
    failed_status: IntArray
    statuses: list[Status]
    processed: int

    def reason_counts(self) -> Counter[str]:
        """Each reason string with the number of nodes it was given for."""
        counts: Counter[str] = Counter()
        if self.failed.size == 0:
            return counts
        per_status = np.bincount(self.failed_status, minlength=len(self.statuses)).tolist()
        for sid, c in enumerate(per_status):
            if c:
                for reason in self.statuses[sid].reasons:
                    counts[reason] += c
        return counts

    def rejecting_plugins(self) -> set[str]:
        """Plugins that rejected at least one node."""
        if self.failed.size == 0:
            return set()
        per_status = np.bincount(self.failed_status, minlength=len(self.statuses))
        return {self.statuses[i].plugin for i in np.flatnonzero(per_status).tolist()}

    def status_of(self, i: int) -> Status:
        """Status of the ``i``-th failed node."""
        return self.statuses[int(self.failed_status[i])]


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """Upstream ``PostFilterResult``: nominate the Pod to ``nominated_node_name``
    (``""`` clears its nomination); ``victims`` are the Pods preempted to make room."""

    nominated_node_name: str
    victims: tuple[api.Pod, ...] = ()


@dataclass(slots=True)
class ScoreOutcome:
    """Weighted totals, each plugin's normalized (pre-weight) scores and its raw scores
    (before NormalizeScore), each of shape ``(n,)``."""

    total: IntArray
    by_plugin: dict[str, IntArray] = field(default_factory=dict)
    raw: dict[str, IntArray] = field(default_factory=dict)


class PluginError(Exception):
    """A plugin fault (Error status or invalid output): the attempt ends as an error."""

    def __init__(self, plugin: str, message: str, *, point: str = "") -> None:
        # Upstream's wording where we know the extension point (``running "X" filter
        # plugin: ...`` from ``RunFilterPlugins``, ``running Score plugins: plugin "X"
        # failed with: ...`` from ``RunScorePlugins``).
        if point == "score":
            text = f'running Score plugins: plugin "{plugin}" failed with: {message}'
        elif point == "pre_score":  # ``RunPreScorePlugins``' whole text is the message
            text = message
        elif point:
            text = f'running "{plugin}" {point} plugin: {message}'
        else:
            text = f"running plugin {plugin!r}: {message}"
        super().__init__(text)
        self.plugin = plugin


def merge_outcomes(parts: list[FilterOutcome], statuses: list[Status]) -> FilterOutcome:
    """The chunks ``parts`` as one outcome, in order; no chunk at all (the PreFilterResult
    named no node of the snapshot) is an outcome with no node."""
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return FilterOutcome(empty, empty.copy(), empty.copy(), statuses, 0)
    if len(parts) == 1:
        parts[0].statuses = statuses
        return parts[0]
    cat = np.concatenate
    return FilterOutcome(
        cat([p.feasible for p in parts]),
        cat([p.failed for p in parts]),
        cat([p.failed_status for p in parts]),
        statuses,
        sum(p.processed for p in parts),
    )


def with_nominated_failure(
    outcome: FilterOutcome, nominated: FilterOutcome, looked_at: IntArray
) -> FilterOutcome:
    """``outcome`` (a Filter pass over the rows ``looked_at[:outcome.processed]``) with the
    failure of ``nominated``, the pass over the Pod's nominated node alone, when that pass
    did not look at the node (PreFilter left it out, or the pass stopped before it).

    Upstream ``findNodesThatFitPod``: ``evaluateNominatedNode`` writes the node's status into
    the diagnosis the main pass goes on filling, so a FitError counts the node with its
    Filter reason (not as left out by PreFilter), preemption may consider it, and the node
    counts as processed (``len(feasible) + NodeToStatus.Len()``).  An ``outcome`` already
    holding the node, or a nominated node that passed, is returned unchanged.
    """
    if (
        nominated.failed.size == 0
        or np.isin(nominated.failed, looked_at[: outcome.processed]).all()
    ):
        return outcome
    statuses = list(outcome.statuses)
    ids = {st: i for i, st in enumerate(statuses)}
    sid = [ids.setdefault(nominated.status_of(i), len(ids)) for i in range(nominated.failed.size)]
    statuses.extend(list(ids)[len(statuses) :])
    return FilterOutcome(
        feasible=outcome.feasible,
        failed=np.concatenate([outcome.failed, nominated.failed]),
        failed_status=np.concatenate([outcome.failed_status, np.asarray(sid, np.int64)]),
        statuses=statuses,
        processed=outcome.processed + int(nominated.failed.size),
    )


def truncate_outcome(outcome: FilterOutcome, ordered: IntArray, k: int) -> FilterOutcome:
    """Keep the first ``k`` feasible nodes and the failures evaluated before the last of them.

    ``outcome.feasible`` is already in ``ordered`` order (chunks run in order and every
    plugin keeps the order of the rows it passes), so no sort is needed; its rows are all
    among ``ordered[:outcome.processed]``, the rows filtered, so only those are read.
    """
    kept = outcome.feasible[:k]
    looked = ordered[: outcome.processed]
    cutoff = int((looked == kept[-1]).argmax())  # the first (only) position of that row
    if outcome.failed.shape[0] == 0:
        return FilterOutcome(
            kept, outcome.failed, outcome.failed_status, outcome.statuses, cutoff + 1
        )
    seen = np.zeros(int(np.maximum.reduce(looked)) + 1, dtype=np.bool_)
    seen[looked[: cutoff + 1]] = True
    keep_failed = seen[outcome.failed]
    return FilterOutcome(
        kept,
        outcome.failed[keep_failed],
        outcome.failed_status[keep_failed],
        outcome.statuses,
        cutoff + 1,
    )
