"""What one scheduling attempt produces: the chosen node, or why no node fits.

``Diagnosis.message`` is upstream's ``FitError.Error()``, byte for byte."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from kubesched.api import objects
from kubesched.config import names
from kubesched.framework.interface import (
    Status,
)
from kubesched.framework.runtime import FilterOutcome
from kubesched.scheduler.batch import BatchEntry

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
POD_REASON_UNSCHEDULABLE = "Unschedulable"
POD_REASON_SCHEDULER_ERROR = "SchedulerError"
NOTE_LENGTH_LIMIT = 1024
PREEMPTION_PLUGIN = names.DEFAULT_PREEMPTION
"""PostFilter plugin whose calls count in ``scheduler_preemption_attempts_total``."""


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """Upstream ``numFeasibleNodesToFind``: adaptive ``max(5, 50 - n/125)``%, at least 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num = num_all_nodes * pct // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(slots=True)
class Diagnosis:
    """Why a Pod fits nowhere (upstream ``framework.Diagnosis``)."""

    num_all_nodes: int
    reason_counts: Counter[str]
    unschedulable_plugins: set[str]
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    outcome: FilterOutcome | None = None
    absent: Status | None = None
    """Status of the nodes ``outcome`` does not cover (None: UnschedulableAndUnresolvable)."""
    reasons: str | None = None
    """:func:`reasons_text` of ``reason_counts`` when the search had it made already (the
    same counts given again for an unchanged failing pass); None: made when asked."""

    def message(self) -> str:
        """Upstream ``FitError.Error()``: ``0/N nodes are available: 2 Insufficient cpu.``."""
        msg = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter_msg:
            msg += f" {self.pre_filter_msg}."
        else:
            text = self.reasons
            if text is None:
                text = reasons_text(self.reason_counts)
            if text:
                msg += " " + text + "."
        if self.post_filter_msg:  # v1.34 appends " %v": no second period
            msg += f" {self.post_filter_msg}"
        return msg


def reasons_text(counts: Counter[str]) -> str:
    """The reason counts as the FitError message lists them: ``2 Insufficient cpu, ...``
    in sorted order ("" for none)."""
    return ", ".join(sorted(f"{c} {r}" for r, c in counts.items()))


def rejected_on_node(status: Status) -> Diagnosis | Status:
    """A Reserve or Permit rejection (also one while waiting at Permit) as upstream reports
    it: a ``FitError`` over one node whose status is ``status``, so the Pod's message is
    ``0/1 nodes are available: 1 PodGroup not found.``; other statuses unchanged."""
    if not status.is_rejected():
        return status
    plugins = {status.plugin} if status.plugin else set()
    return Diagnosis(1, Counter(status.reasons), plugins)


class FitError(Exception):
    """No node fits; carries the diagnosis."""

    def __init__(self, diagnosis: Diagnosis) -> None:
        super().__init__(diagnosis)  # args as the constructor's (a copy rebuilds it)
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        """The diagnosis's message as it reads now (made when asked: the failure handling
        makes it once, after PostFilter has added its part)."""
        return self.diagnosis.message()


@dataclass(slots=True)
class ScheduleResult:
    """The chosen node and how many nodes were evaluated / feasible (a reused result: those
    of the full cycle it reuses, or of the window a sampled reuse walked: what upstream's
    search would have covered); ``entry`` is
    what result reuse keeps for the next equivalent Pod (None when nothing can be reused)."""

    node: str
    evaluated: int
    feasible: int
    entry: BatchEntry | None = None


@dataclass(frozen=True, slots=True)
class AttemptWork:
    """What one scheduling attempt did, as a cost model of upstream's speed counts it
    (:mod:`kubesched.sim.costmodel`): nodes in the search, nodes filtered, nodes scored (0
    when at most one passed), the costly plugins with work for the Pod (its own inter-pod
    (anti-)affinity terms or hard topology spread constraints), whether PostFilter ran
    DefaultPreemption and whether the attempt found a node (a bind follows)."""

    nodes: int
    filtered: int
    scored: int
    plugins: frozenset[str]
    preempted: bool = False
    bound: bool = False


def costly_plugins(pod: objects.Pod) -> frozenset[str]:
    """``InterPodAffinity`` and/or ``PodTopologySpread`` when ``pod`` gives them work."""
    out = set()
    if pod.pod_affinity is not None or pod.pod_anti_affinity is not None:
        out.add(names.INTER_POD_AFFINITY)
    if any(c.when_unsatisfiable == "DoNotSchedule" for c in pod.topology_spread_constraints):
        out.add(names.POD_TOPOLOGY_SPREAD)
    return frozenset(out)


def truncate_message(message: str) -> str:
    """Upstream ``truncateMessage``: cap at the Event note length."""
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    return message[: NOTE_LENGTH_LIMIT - 4] + " ..."


class NoNodesError(Exception):
    """The cluster has no nodes (upstream ``ErrNoNodesAvailable``)."""
